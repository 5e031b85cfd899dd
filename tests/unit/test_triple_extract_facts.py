"""The rule extractor on fact-style phrasings: jobs, moves, appositives, organisations.

Each test names a phrasing the rules got wrong before (a place instead of an employer,
a missed relation, an object running past "over"); the sentences are not in the
labelled set.
"""

from __future__ import annotations

import pytest

from langgraph_tiered_memory.graph.extract import RuleExtractor

U = "user"


def triples(text: str, speaker: str | None = None) -> set[tuple[str, str, str]]:
    [found] = RuleExtractor().extract([text], speakers=[speaker])
    return {tuple(t) for t in found}


def test_a_job_at_a_named_organisation_is_where_someone_works() -> None:
    assert triples("Kofi is a data engineer at Unilever.") == {
        ("kofi", "is_a", "data engineer"),
        ("kofi", "works_at", "unilever"),
    }
    assert triples("Greta works as a pharmacist for Boots.") == {
        ("greta", "is_a", "pharmacist"),
        ("greta", "works_at", "boots"),
    }
    assert triples("I'm a student at Yale.") == {(U, "is_a", "student"), (U, "studied_at", "yale")}
    # a place after the organisation is the organisation's
    assert triples("Ilse is a chemist at BASF in Ludwigshafen.") == {
        ("ilse", "is_a", "chemist"),
        ("ilse", "works_at", "basf"),
        ("basf", "located_in", "ludwigshafen"),
    }
    # not a job: the place reading stays; no named organisation: nothing about work
    assert triples("Ana is a regular at Blue Bottle.") == {
        ("ana", "is_a", "regular"),
        ("ana", "located_in", "blue bottle"),
    }
    assert triples("Tom is a teacher at heart.") == {("tom", "is_a", "teacher")}


def test_moved_from_one_place_to_another() -> None:
    assert triples("Ingrid moved from Oslo to Lima in 2018.") == {
        ("ingrid", "moved_from", "oslo"),
        ("ingrid", "moved_to", "lima"),
        ("lima", "date", "2018"),
    }
    assert triples("We relocated from Leeds to Cork.") == {
        (U, "moved_from", "leeds"),
        (U, "moved_to", "cork"),
    }


@pytest.mark.parametrize(
    "text",
    [
        "Bo prefers trains over planes.",
        "Bo prefers trains rather than planes.",
        "Bo likes trains instead of planes.",
    ],
)
def test_a_preference_names_only_what_is_preferred(text: str) -> None:
    assert triples(text) == {("bo", "likes", "train")}


def test_an_appositive_after_a_name_is_a_fact_about_it() -> None:
    assert triples("Ruth, the CTO of Arcadia, lives in Leeds.") == {
        ("ruth", "cto_of", "arcadia"),
        ("ruth", "lives_in", "leeds"),
    }
    assert triples("Sam, a nurse at Mercy General, moved to Bath.") == {
        ("sam", "is_a", "nurse"),
        ("sam", "works_at", "mercy general"),
        ("sam", "moved_to", "bath"),
    }
    assert triples("Karl, my cousin, is a baker.") == {
        (U, "has_cousin", "karl"),
        ("karl", "is_a", "baker"),
    }


def test_n_of_takes_an_article_and_hyphenated_nouns() -> None:
    assert triples("Ida is a member of the Chess Guild.") == {("ida", "member_of", "chess guild")}
    assert triples("Ola is a co-founder of Vipps.") == {("ola", "co_founder_of", "vipps")}


def test_lives_with() -> None:
    assert triples("Nils lives with Petra in Bergen.") == {
        ("nils", "lives_with", "petra"),
        ("nils", "located_in", "bergen"),
    }
    assert triples("I live with my aunt.") == {
        (U, "has_aunt", "user's aunt"),
        (U, "lives_with", "user's aunt"),
    }


def test_an_employer_employs() -> None:
    assert triples("Maersk employs Henrik and Sofie.") == {
        ("henrik", "works_at", "maersk"),
        ("sofie", "works_at", "maersk"),
    }
    assert triples("The museum employs twelve guides.") == set()


@pytest.mark.parametrize(
    ("text", "org"),
    [
        ("Pia teaches at Uppsala University.", "uppsala university"),
        ("Pia lectured at Trinity College.", "trinity college"),
    ],
)
def test_teaching_at_is_working_at(text: str, org: str) -> None:
    assert triples(text) == {("pia", "works_at", org)}


def test_friends_with() -> None:
    assert triples("Jon is close friends with Ahmed.") == {("jon", "has_friend", "ahmed")}
    assert triples("I became friends with Lotte.") == {(U, "has_friend", "lotte")}


@pytest.mark.parametrize(
    "text",
    [
        "The headquarters of Klarna is in Stockholm.",
        "Klarna's headquarters are in Stockholm.",
        "The head office of Klarna is located in Stockholm.",
    ],
)
def test_headquarters_are_where_an_organisation_is(text: str) -> None:
    assert triples(text) == {("klarna", "located_in", "stockholm")}


def test_a_second_verb_after_and_shares_the_subject() -> None:
    assert triples("Lea was born in Graz and later moved to Vienna.") == {
        ("lea", "born_in", "graz"),
        ("lea", "moved_to", "vienna"),
    }
    assert triples("Max works at Bosch and lives in Stuttgart.") == {
        ("max", "works_at", "bosch"),
        ("max", "lives_in", "stuttgart"),
    }
    # a noun after "and" is still a coordinated object, not a new clause
    assert triples("I like walks and runs.") == {(U, "likes", "walk"), (U, "likes", "run")}
