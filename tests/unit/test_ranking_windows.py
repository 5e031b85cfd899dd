"""Relative periods in queries, resolved against the time they are asked."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_tiered_memory.ranking.dates import time_match, time_question
from langgraph_tiered_memory.ranking.windows import relative_windows

UTC = timezone.utc
NOW = datetime(2024, 5, 15, 12, 30, tzinfo=UTC)  # a Wednesday


def _day(m: int, d: int, y: int = 2024) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def _windows(query: str, now: datetime = NOW) -> list[tuple[datetime, datetime]]:
    words = re.findall(r"[a-z]+|\d+", query.lower())
    return [
        (datetime.fromtimestamp(a, tz=UTC), datetime.fromtimestamp(b, tz=UTC))
        for a, b in relative_windows(words, now.timestamp())
    ]


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I eat yesterday", _day(5, 14), _day(5, 15)),
        ("where was I last night", _day(5, 14), _day(5, 15)),
        ("what did we do last week", _day(5, 6), _day(5, 13)),
        ("what did I do last weekend", _day(5, 11), _day(5, 13)),
        ("books I read last month", _day(4, 1), _day(5, 1)),
        ("trips last year", _day(1, 1, 2023), _day(1, 1, 2024)),
        ("who called last Friday", _day(5, 10), _day(5, 11)),
        ("who called last Wednesday", _day(5, 8), _day(5, 9)),  # today is a Wednesday
        ("what did I buy 3 days ago", _day(5, 11), _day(5, 14)),
        ("the film two weeks ago", _day(4, 24), _day(5, 9)),
        ("a couple of weeks ago", _day(4, 24), _day(5, 9)),
        ("a few months ago", _day(1, 15), _day(3, 16)),  # three, give or take one
        ("in the past 2 months", _day(3, 15), _day(5, 16)),
        ("over the last few days", _day(5, 12), _day(5, 16)),
    ],
)
def test_relative_periods(query: str, start: datetime, end: datetime) -> None:
    assert _windows(query) == [(start, end)]


@pytest.mark.parametrize(
    "query",
    [
        "what do I like",
        "how long ago was it",
        "the last one",
        "last of the days",
        "",
        # Now and later: today's memories are not the answer to these.
        "What should I cook tonight?",
        "what happened today",
        "plans for next week",
        "this weekend",
    ],
)
def test_queries_without_a_relative_period(query: str) -> None:
    assert _windows(query) == []


@given(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1)))
def test_calendar_periods_are_whole_and_in_the_past(naive: datetime) -> None:
    now = naive.replace(tzinfo=UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    ((ys, ye),) = _windows("yesterday", now)
    assert ye == today and ye - ys == timedelta(days=1)
    ((ws, we),) = _windows("last week", now)
    assert ws.weekday() == 0 and we - ws == timedelta(days=7) and ws < today <= we + timedelta(7)
    ((ms, me),) = _windows("last month", now)
    assert ms.day == me.day == 1 and me <= today and me.month == today.month
    ((ds, de),) = _windows("5 days ago", now)
    assert ds < today - timedelta(days=5) < de <= today


def test_a_relative_period_marks_the_memories_that_happened_in_it() -> None:
    q = time_question("What did I eat yesterday?", NOW.timestamp())
    assert q is not None and not q.asks_when and len(q.windows) == 1
    assert time_match(q, "Pasta with friends.", _day(5, 14).timestamp() + 3600)
    assert not time_match(q, "Pasta with friends.", _day(5, 13).timestamp())
    assert not time_match(q, "Pasta with friends.", None)
    # Without the time it is asked, a relative period resolves to nothing.
    assert time_question("What did I eat yesterday?") is None
