"""Time questions: which queries ask about time and which memories answer them."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_tiered_memory import ConfigurationError
from langgraph_tiered_memory.ranking.dates import (
    TimeQuestion,
    states_time,
    time_match,
    time_question,
)
from langgraph_tiered_memory.ranking.scoring import MemoryCandidate, Scoring, rank_memories


def _at(y: int, m: int, d: int) -> float:
    return datetime(y, m, d, 12, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie paint a sunrise?",
        "when is the party",
        "Hey, when does the shop open?",
        "How long has Caroline had her current group of friends?",
        "How many years ago did Jon move?",
        "What year did Gina open her store?",
        "In which month did they meet?",
        "Since when has he been running?",
        "Around when did Joanna finish her script?",
        "Roughly when did they move?",
        "By when will the car be ready?",
    ],
)
def test_questions_that_ask_when(query: str) -> None:
    q = time_question(query)
    assert q is not None and q.asks_when


@pytest.mark.parametrize(
    "query",
    [
        "What does Jon like?",
        "What may Caroline do next?",  # "may" the verb names no month
        "Where did the team go for the whenua trip?",
        "Who gave the speech?",
        "how is the weather",
        "What did she say about when to water the plants?",  # "when" not asked first
    ],
)
def test_questions_that_say_nothing_of_time(query: str) -> None:
    assert time_question(query) is None


def test_a_question_names_months_and_years() -> None:
    q = time_question("What did she paint in july 2023 and in May?")
    assert q == TimeQuestion(
        asks_when=False, months=frozenset({"July", "May"}), years=frozenset({"2023"})
    )
    assert q.names_period


@pytest.mark.parametrize(
    "text",
    [
        "I went to a support group yesterday.",
        "We went camping two weekends ago.",
        "I've known them for 4 years.",
        "Last summer was great.",
        "See you next Friday!",
        "We met in May.",
        "Since 2016 I've been running.",
        "The concert is on Saturday.",
        "Seven years now, and I still paint.",
        "We'll post more in the next few months.",
        "I stayed there for a week.",
        "I saw her the other day.",
        "We've been friends for a couple of years.",
    ],
)
def test_texts_that_state_a_time(text: str) -> None:
    assert states_time(text)


@pytest.mark.parametrize(
    "text",
    [
        "I may go to the park.",
        "This book reminds me to pursue my dreams.",
        "I love painting.",
        "We go once or twice a year.",  # a frequency, not a time
        "Any other summer traditions?",
        "Have a great day!",
        "Call me at 5551234.",
    ],
)
def test_texts_that_state_no_time(text: str) -> None:
    assert not states_time(text)


def test_a_when_question_matches_memories_that_state_a_time() -> None:
    q = time_question("When did Melanie go camping?")
    assert time_match(q, "We went camping two weekends ago.", _at(2023, 7, 17))
    assert not time_match(q, "Camping is my favourite thing.", _at(2023, 7, 17))
    assert not time_match(None, "We went camping yesterday.", _at(2023, 7, 17))


def test_a_named_period_matches_the_memories_of_that_period() -> None:
    july = time_question("What did Melanie do in July?")
    assert july is not None and not july.asks_when
    assert time_match(july, "We went camping.", _at(2023, 7, 17))
    assert time_match(july, "We went camping.", _at(2021, 7, 2))  # a month alone: any year
    assert not time_match(july, "We went camping.", _at(2023, 8, 17))
    assert not time_match(july, "We went camping.", None)  # unknown event time
    year = time_question("What book did she read in 2022?")
    # "last year", said in 2023, happened in 2022: the time key resolves it.
    assert time_match(year, "This book I read last year is great.", _at(2023, 5, 8))
    assert not time_match(year, "This book is great.", _at(2023, 5, 8))
    both = time_question("What happened in July 2022?")
    assert time_match(both, "A trip.", _at(2022, 7, 1))
    assert not time_match(both, "A trip.", _at(2023, 7, 1))


@given(st.text(max_size=200))
def test_a_when_only_question_matches_exactly_what_states_a_time(text: str) -> None:
    q = TimeQuestion(asks_when=True)
    assert time_match(q, text, None) == states_time(text)
    assert time_match(q, text, _at(2023, 1, 1)) == states_time(text)


@given(st.text(max_size=200), st.sampled_from(["yesterday", "July", "2019", "last week"]))
def test_any_text_with_a_time_word_states_a_time(text: str, word: str) -> None:
    assert states_time(f"{text} {word} {text}")


def _cand(time_match: bool, **kw: object) -> MemoryCandidate:
    base = MemoryCandidate(
        semantic=0.5,
        keyword=2.0,
        importance=0.5,
        last_touched=0.0,
        access_count=0,
        own_semantic=0.5,
        context_semantic=0.5,
        time_match=time_match,
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.1, max_value=10.0),
)
def test_the_time_bonus_is_time_weight_and_nothing_else(
    weight: float, sem: float, kw: float
) -> None:
    scoring = Scoring(time_weight=weight)
    cands = [
        _cand(False, semantic=sem, own_semantic=sem, keyword=kw),
        _cand(True, semantic=sem, own_semantic=sem, keyword=kw),
    ]
    ranked = dict(rank_memories(cands, scoring=scoring, retrieval="hybrid", now=0.0))
    assert ranked[1].time == 1.0 and ranked[0].time == 0.0
    assert ranked[1].score - ranked[0].score == pytest.approx(weight)
    assert ranked[1].relevance == ranked[0].relevance


def test_time_weight_zero_switches_it_off_and_negative_is_refused() -> None:
    cands = [_cand(False), _cand(True)]
    ranked = dict(
        rank_memories(cands, scoring=Scoring(time_weight=0.0), retrieval="hybrid", now=0.0)
    )
    assert ranked[0].score == ranked[1].score
    assert Scoring.from_config({"time_weight": 0.3}).time_weight == 0.3
    with pytest.raises(ConfigurationError, match="time_weight"):
        Scoring.from_config({"time_weight": -0.1})
