"""The rule-based triple extractor: patterns, negation, speakers, normalisation, queries."""

from __future__ import annotations

import pytest

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph._rules_text import entity_name, singular
from langgraph_tiered_memory.graph.extract import (
    ModelExtractor,
    RuleExtractor,
    TripleExtractor,
    query_entities,
    resolve_extractor,
)
from langgraph_tiered_memory.graph.types import Triple
from tests.fake_models import RecordedChatModel

U = "user"


def triples(text: str, speaker: str | None = None) -> set[tuple[str, str, str]]:
    [found] = RuleExtractor().extract([text], speakers=[speaker])
    return {tuple(t) for t in found}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Berlin.", {(U, "lives_in", "berlin")}),
        ("I work at Acme.", {(U, "works_at", "acme")}),
        ("I love hiking.", {(U, "likes", "hiking")}),
        ("I love hiking and swimming.", {(U, "likes", "hiking"), (U, "likes", "swimming")}),
        ("I moved to Lisbon.", {(U, "moved_to", "lisbon")}),
        ("I'm from Portugal.", {(U, "from", "portugal")}),
        ("I work as a data analyst.", {(U, "is_a", "data analyst")}),
        ("Rust is a systems language.", {("rust", "is_a", "systems language")}),
        ("Anna married Tom.", {("anna", "married", "tom")}),
        ("Anna has a PhD.", {("anna", "has", "phd")}),
        ("Anna visited Rome.", {("anna", "visited", "rome")}),
        ("Anna likes jazz.", {("anna", "likes", "jazz")}),
        ("Anna lives in Oslo.", {("anna", "lives_in", "oslo")}),
        ("Anna works at Google.", {("anna", "works_at", "google")}),
        ("I am 32 years old.", {(U, "age", "32")}),
        ("Paris is the capital of France.", {("paris", "capital_of", "france")}),
        ("Hamlet was written by Shakespeare.", {("shakespeare", "wrote", "hamlet")}),
        ("Linux was written in C.", {("linux", "written_in", "c")}),
        ("My favourite food is sushi.", {(U, "likes", "sushi")}),
        ("I'm allergic to peanuts.", {(U, "allergic_to", "peanut")}),
        ("I play the guitar and the piano.", {(U, "plays", "guitar"), (U, "plays", "piano")}),
    ],
)
def test_each_pattern_gives_its_triple(text: str, expected: set[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


def test_relatives_named_and_unnamed() -> None:
    assert triples("My sister is a nurse.") == {
        (U, "has_sister", "user's sister"),
        ("user's sister", "is_a", "nurse"),
    }
    assert triples("My sister Anna moved to Boston.") == {
        (U, "has_sister", "anna"),
        ("anna", "moved_to", "boston"),
    }
    assert triples("Anna is my sister.") == {(U, "has_sister", "anna")}
    assert triples("I have a dog named Max.") == {(U, "has_dog", "max")}
    assert triples("My parents live in Chennai.", "Priya") == {
        ("priya", "has_parent", "priya's parent"),
        ("priya's parent", "lives_in", "chennai"),
    }


def test_dates_and_places_are_adjuncts_of_the_event() -> None:
    assert triples("We visited Rome on 8 May 2023 with Tom.") == {
        (U, "visited", "rome"),
        ("rome", "date", "8 may 2023"),
        (U, "with", "tom"),
    }
    assert triples("Last week, I went to the Louvre in Paris.") == {
        (U, "visited", "louvre"),
        ("louvre", "date", "last week"),
        ("louvre", "located_in", "paris"),
    }
    assert triples("We adopted a cat named Luna two weeks ago.") == {
        (U, "has_cat", "luna"),
        ("luna", "date", "two weeks ago"),
    }
    # a class is about the subject, so its place is too
    assert ("nopa", "located_in", "san francisco") in triples(
        "Nopa is a restaurant in San Francisco."
    )


@pytest.mark.parametrize(
    "text",
    [
        "I never visited Japan.",
        "I don't live in Paris anymore.",
        "I no longer work at Deloitte.",
        "Jenny doesn't eat meat.",
        "I haven't smoked since 2018.",
    ],
)
def test_negated_statements_give_no_triple(text: str) -> None:
    assert triples(text) == set()


def test_dont_like_is_a_dislike_never_a_like() -> None:
    assert triples("I don't like coffee.") == {(U, "dislikes", "coffee")}
    assert triples("I'm not a fan of horror movies.") == {(U, "dislikes", "horror movie")}
    assert triples("I can't stand cilantro.") == {(U, "dislikes", "cilantro")}


@pytest.mark.parametrize(
    "text", ["Do you like jazz?", "Where do you live?", "Is Lisbon the capital of Portugal?"]
)
def test_questions_give_no_triple(text: str) -> None:
    assert triples(text) == set()


def test_pronouns_follow_the_last_person_and_are_dropped_without_one() -> None:
    assert triples("Omar lives in Cairo. He teaches history.") == {
        ("omar", "lives_in", "cairo"),
        ("omar", "teaches", "history"),
    }
    assert triples("She is my best friend.") == set()
    assert triples("His father was a fisherman.") == set()
    # an object pronoun is no entity
    assert triples('Leo said, "My sister Mia moved to Seattle. She loves it."') == {
        ("leo", "has_sister", "mia"),
        ("mia", "moved_to", "seattle"),
    }


def test_first_person_maps_to_the_speaker() -> None:
    extractor = RuleExtractor()
    found = extractor.extract(["I live in Berlin."] * 2, speakers=["Caroline", None])
    assert found == [[Triple("caroline", "lives_in", "berlin")], [Triple(U, "lives_in", "berlin")]]


def test_quoted_memory_texts_take_the_quoted_speaker() -> None:
    text = 'Caroline said, "I went to a LGBTQ support group yesterday and it was powerful."'
    assert triples(text) == {
        ("caroline", "visited", "lgbtq support group"),
        ("lgbtq support group", "date", "yesterday"),
    }
    # with a caption of a shared image, as the LoCoMo bench stores image turns
    shared = 'Melanie said, "I painted a sunrise last week." and shared a photo of a lake'
    assert triples(shared) == {("melanie", "painted", "sunrise"), ("sunrise", "date", "last week")}
    # an explicit speaker wins over the quoted one
    assert triples('Caroline said, "I live in Denver."', "Bob") == {("bob", "lives_in", "denver")}


def test_entity_names_drop_articles_and_singularise_common_nouns() -> None:
    assert entity_name("the Louvre") == "louvre"
    assert entity_name("two dogs") == "dog"
    assert entity_name("Hobbies") == "hobbies"  # a capitalised word is kept as written
    assert entity_name("hobbies") == "hobby"
    assert entity_name("  New   York\u2019s ") == "new york's"
    assert [singular(w) for w in ("paris", "glasses", "boxes", "movies", "children", "bus")] == [
        "paris",
        "glasses",
        "box",
        "movie",
        "child",
        "bus",
    ]


def test_query_entities_match_what_the_extractor_stores() -> None:
    found = query_entities("Where does Caroline's sister live?")
    assert {"caroline's sister", "caroline", "sister"} <= set(found)
    assert "where" not in found and "live" not in found
    # longest first, no duplicates
    assert found == sorted(found, key=lambda n: (-len(n.split()), -len(n)))
    assert len(found) == len(set(found))
    stored = RuleExtractor().extract(['Caroline said, "My sister lives in Denver."'])[0]
    assert {"caroline", "caroline's sister"} <= {e for t in stored for e in (t.subject, t.object)}
    assert "caroline's sister" in found


def test_plural_nouns_match_between_memories_and_queries() -> None:
    [stored] = RuleExtractor().extract(["I love dogs and board games."])
    assert stored == [Triple(U, "likes", "dog"), Triple(U, "likes", "board game")]
    found = query_entities("Who loves dogs and board games?")
    assert {"dog", "board game"} <= set(found)


def test_query_entities_offer_singular_and_plural_and_names_whole() -> None:
    found = query_entities("Which dogs did Melanie adopt at the Museum of Modern Art?")
    assert "dog" in found and "dogs" in found
    assert "museum of modern art" in found and "melanie" in found
    assert query_entities("") == []
    assert query_entities("what is it?") == []


def test_resolve_extractor() -> None:
    assert isinstance(resolve_extractor(None), RuleExtractor)
    assert isinstance(resolve_extractor("rules"), RuleExtractor)
    model = RecordedChatModel()
    resolved = resolve_extractor(model)
    assert isinstance(resolved, ModelExtractor) and resolved.model is model
    custom = RuleExtractor()
    assert resolve_extractor(custom) is custom
    assert isinstance(custom, TripleExtractor)
    with pytest.raises(ConfigurationError, match="extractor"):
        resolve_extractor(42)
    with pytest.raises(ConfigurationError, match="nosuchprovider"):
        resolve_extractor("nosuchprovider:some-model")


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="sequence"):
        RuleExtractor().extract("I live in Berlin.")
    with pytest.raises(ValueError, match="2 speakers for 1 texts"):
        RuleExtractor().extract(["I live in Berlin."], speakers=["a", "b"])


async def test_aextract_matches_extract() -> None:
    texts = ["I live in Berlin.", "My sister Anna likes jazz."]
    extractor = RuleExtractor()
    assert await extractor.aextract(texts) == extractor.extract(texts)


@pytest.mark.parametrize(
    "text",
    [
        "Sounds like you had a great day!",
        "Looks like everyone was having a blast.",
        "I had a quiet weekend.",
        "I have been looking at different places.",
        "Here's a pic from last night.",
        "I love how you use it to tell stories.",
        "I ran into a group of hikers.",
    ],
)
def test_chat_phrases_give_no_triple(text: str) -> None:
    found = triples(f'Caroline said, "{text}"')
    assert {t for t in found if t[1] != "date"} == set()


def test_a_place_name_followed_by_a_noun_is_a_modifier() -> None:
    assert triples("I joined a group in the LGBTQ community.") == {(U, "joined", "group")}
    assert triples("I joined a group in Denver.") == {
        (U, "joined", "group"),
        ("group", "located_in", "denver"),
    }


def test_mentions_link_the_speaker_to_named_entities_no_triple_names() -> None:
    text = 'Melanie said, "Thanks, Caroline! We saw the Perseid meteor shower near Rome."'
    plain = RuleExtractor().extract([text])[0]
    assert not any(t.relation == "mentions" for t in plain)
    found = set(RuleExtractor(mentions=True).extract([text])[0])
    assert Triple("melanie", "mentions", "perseid") in found
    assert Triple("melanie", "mentions", "rome") in found
    # the person addressed ("Thanks, Caroline!") and the speaker are no mentions
    assert {t.object for t in found if t.relation == "mentions"} == {"perseid", "rome"}
    # an entity a triple already names is not mentioned again
    [lives] = RuleExtractor(mentions=True).extract(["Anna lives in Oslo."])
    assert lives == [Triple("anna", "lives_in", "oslo")]
    # questions mention nothing
    assert RuleExtractor(mentions=True).extract(["Did you go to Rome?"]) == [[]]


def test_had_and_got_name_relatives_only() -> None:
    assert triples("We had a baby named Mia.") == {(U, "has_baby", "mia")}
    assert triples("I got a puppy called Rex.") == {(U, "has_puppy", "rex")}
    assert triples("I had a great time.") == set()
    assert triples("I got the idea from a magazine.") == set()
