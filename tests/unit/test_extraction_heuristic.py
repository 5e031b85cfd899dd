"""The heuristic reading of user messages: statements, types, slots and importance."""

from __future__ import annotations

import pytest

from langgraph_tiered_memory.agent.extraction import (
    Slot,
    find_statements,
    normalize,
    slot_of,
    text_similarity,
)


@pytest.mark.parametrize(
    ("text", "content", "memory_type", "slot", "importance"),
    [
        ("I live in Berlin.", "I live in Berlin", "fact", ("residence", "berlin"), 0.6),
        (
            "Actually I moved to Lisbon now!",
            "I moved to Lisbon now",
            "fact",
            ("residence", "lisbon"),
            0.6,
        ),
        (
            "I'm still living in Berlin!",
            "I'm still living in Berlin",
            "fact",
            ("residence", "berlin"),
            0.6,
        ),
        ("I'm 34 years old", "I'm 34 years old", "fact", ("age", "34"), 0.6),
        ("I work as a nurse", "I work as a nurse", "fact", ("occupation", "nurse"), 0.6),
        ("I work for ACME", "I work for ACME", "fact", ("employer", "acme"), 0.6),
        ("I am from Porto", "I am from Porto", "fact", ("origin", "porto"), 0.6),
        ("My name is Ana", "My name is Ana", "fact", ("my:name", "ana"), 0.6),
        (
            "My favourite colour is green",
            "My favourite colour is green",
            "preference",
            ("my:favourite colour", "green"),
            0.5,
        ),
        ("I really love coffee", "I really love coffee", "preference", ("pref:coffee", "+"), 0.5),
        (
            "I prefer window seats",
            "I prefer window seats",
            "preference",
            ("pref:window seats", "+"),
            0.5,
        ),
        (
            "I don't like coffee anymore",
            "I don't like coffee anymore",
            "preference",
            ("pref:coffee", "-"),
            0.5,
        ),
        ("I hate mornings", "I hate mornings", "preference", ("pref:mornings", "-"), 0.5),
        ("I'm vegetarian", "I'm vegetarian", "fact", None, 0.5),
        ("Remember that the meeting is at 5pm", "The meeting is at 5pm", "fact", None, 0.8),
        ("This is important: I am diabetic", "I am diabetic", "fact", None, 0.8),
        ("记住我住在柏林", "我住在柏林", "fact", ("residence", "柏林"), 0.9),
        ("我喜欢绿茶", "我喜欢绿茶", "preference", ("pref:绿茶", "+"), 0.5),
    ],
)
def test_first_person_statements_become_memories(
    text: str, content: str, memory_type: str, slot: tuple[str, str] | None, importance: float
) -> None:
    (st,) = find_statements(text)
    assert (st.content, st.memory_type, st.importance) == (content, memory_type, importance)
    assert st.slot == (Slot(*slot) if slot else None)


@pytest.mark.parametrize(
    "text",
    [
        "Where do I live?",
        "I am going to the shop",
        "I am still working on it",
        "I'm not sure",
        "Hello there",
        "I think so",
        "You live in Berlin",
        "If I lived in Berlin I would cycle",
    ],
)
def test_questions_chat_and_other_people_are_not_memories(text: str) -> None:
    assert find_statements(text) == []


def test_one_message_can_hold_several_statements() -> None:
    found = find_statements("I live in Berlin and I work at Siemens. Do you?  I like jazz")
    assert [s.content for s in found] == ["I live in Berlin", "I work at Siemens", "I like jazz"]


def test_third_person_phrasing_of_a_model_fills_the_same_slots() -> None:
    assert slot_of("The user lives in Berlin") == slot_of("I live in Berlin")
    assert slot_of("User moved to Lisbon") == Slot("residence", "lisbon")
    assert slot_of("The user's favourite colour is blue") == Slot("my:favourite colour", "blue")
    assert slot_of("The user does not like coffee") == Slot("pref:coffee", "-")
    assert slot_of("The user is kind") is None


def test_normalised_text_ignores_case_spacing_punctuation_and_contractions() -> None:
    assert normalize("I'm  vegetarian.") == normalize("i am vegetarian") == "i am vegetarian"
    assert text_similarity("I'm vegetarian!", "I am vegetarian") == 1.0
    assert text_similarity("I like tea", "My car is red") < 0.5
