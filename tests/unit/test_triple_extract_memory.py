"""The rule extractor on the texts the memory agent and memory extraction store.

The memory agent stores a turn as "User: ...\\nAssistant: ..."; memory extraction writes
first-person statements or, with a model, third-person ones ("The user's sister Anna
lives in Porto."). All of them must give triples about the same subject first-person
statements map to (the speaker, else "user").
"""

from __future__ import annotations

import pytest

from langgraph_tiered_memory.graph._rules import user_lines
from langgraph_tiered_memory.graph.extract import RuleExtractor

U = "user"


def triples(text: str, speaker: str | None = None) -> set[tuple[str, str, str]]:
    [found] = RuleExtractor().extract([text], speakers=[speaker])
    return {tuple(t) for t in found}


# ------------------------------------------------------------------ transcripts
def test_a_stored_turn_gives_the_users_facts() -> None:
    text = "User: I live in Berlin.\nAssistant: Berlin is a great city!"
    assert triples(text) == {(U, "lives_in", "berlin")}


def test_a_turn_maps_the_first_person_to_the_given_speaker() -> None:
    text = "User: My sister Anna moved to Porto.\nAssistant: Porto is lovely."
    assert triples(text, "ana") == {("ana", "has_sister", "anna"), ("anna", "moved_to", "porto")}


def test_human_and_ai_prefixes_are_read_like_user_and_assistant() -> None:
    text = "Human: I work as a teacher.\nAI: I love teaching too. I live in the cloud."
    assert triples(text) == {(U, "is_a", "teacher")}


def test_the_assistants_words_give_no_triple() -> None:
    # without the prefix rule, "Rex is a great name" would give (rex, is_a, great name)
    assert triples("User: I have a dog named Rex.\nAssistant: Rex is a great name.") == {
        (U, "has_dog", "rex")
    }
    assert triples("Assistant: Anna lives in Madrid.") == set()
    assert triples("User: Thanks!\nAssistant: Anna works at Google.") == set()


def test_every_line_and_sentence_of_the_user_is_read() -> None:
    text = (
        "User: I moved to Oslo. My wife is Norwegian.\n"
        "and I work at Equinor\n"
        "Assistant: Nice!\n"
        "Tom works at Statoil."  # continues the assistant's turn
    )
    assert triples(text) == {
        (U, "moved_to", "oslo"),
        (U, "has_wife", "user's wife"),
        (U, "works_at", "equinor"),
    }


def test_user_lines_keeps_texts_without_roles_unchanged() -> None:
    assert user_lines("I live in Rome.\nAnna lives in Oslo.") == (
        "I live in Rome.\nAnna lives in Oslo."
    )
    assert user_lines("Intro\nUSER: hi\nassistant: hello\nUser:bye") == "Intro\nhi\nbye"


def test_questions_and_negations_of_a_turn_stay_skipped() -> None:
    text = "User: Do you live in Oslo? I live in Bergen.\nAssistant: No.\nAnna lives in Oslo."
    assert triples(text) == {(U, "lives_in", "bergen")}
    text = "User: I don't live in Paris. I live in Lyon.\nAssistant: Noted.\nI love Lyon."
    assert triples(text) == {(U, "lives_in", "lyon")}


# ---------------------------------------------------- third-person user statements
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The user's sister Anna lives in Porto.",
            {(U, "has_sister", "anna"), ("anna", "lives_in", "porto")},
        ),
        ("The user's sister is Anna.", {(U, "has_sister", "anna")}),
        ("The user\u2019s dog is named Biscuit.", {(U, "has_dog", "biscuit")}),
        (
            "The user's mother is a retired teacher.",
            {(U, "has_mother", "user's mother"), ("user's mother", "is_a", "retired teacher")},
        ),
        ("Anna is the user's sister.", {(U, "has_sister", "anna")}),
        ("The user's favourite band is Radiohead.", {(U, "likes", "radiohead")}),
    ],
)
def test_the_users_relatives_and_things(text: str, expected: set[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The user lives in Berlin", {("ana", "lives_in", "berlin")}),
        ("User likes hiking", {("ana", "likes", "hiking")}),
        ("The user's sister is Anna.", {("ana", "has_sister", "anna")}),
        (
            "The user's sister Anna lives in Porto.",
            {("ana", "has_sister", "anna"), ("anna", "lives_in", "porto")},
        ),
        ("User's dog Max is old.", {("ana", "has_dog", "max")}),
    ],
)
def test_the_user_is_who_i_is(text: str, expected: set[tuple[str, str, str]]) -> None:
    """With a speaker, "the user" maps where "I" maps, so their facts meet in the graph."""
    assert triples(text, "ana") == expected
    first_person = triples("I live in Berlin", "ana")
    assert {s for s, _, _ in first_person} == {"ana"}


def test_first_and_third_person_give_the_same_triples() -> None:
    pairs = [
        ("My sister Anna lives in Porto.", "The user's sister Anna lives in Porto."),
        ("My sister is Anna.", "The user's sister is Anna."),
        ("I live in Berlin.", "The user lives in Berlin."),
        ("I like hiking.", "User likes hiking."),
    ]
    for first, third in pairs:
        assert triples(first) == triples(third) != set(), (first, third)
        assert triples(first, "sam") == triples(third, "sam"), (first, third)


def test_a_nationality_names_no_relative() -> None:
    assert triples("My wife is Norwegian.") == {(U, "has_wife", "user's wife")}
    assert triples("The user's son is Italian-American.") == {(U, "has_son", "user's son")}
    assert triples("My dog is called Rex.") == {(U, "has_dog", "rex")}
    assert triples("My brother is Tom Smith.") == {(U, "has_brother", "tom smith")}


def test_an_adjective_in_ed_after_an_article_is_part_of_the_class() -> None:
    assert triples("My mother is a retired teacher.") == {
        (U, "has_mother", "user's mother"),
        ("user's mother", "is_a", "retired teacher"),
    }
    assert triples("I am a licensed pilot.") == {(U, "is_a", "licensed pilot")}
