"""Time in questions: what a query asks about time, and which memories answer that (pure).

Two things a query can say about time, and the memories that answer each:

- **It asks when** ("When did ...", "How long ...", "What year ...", "Since when ...").
  Its answer is a memory that *states* a time: a date, a month, a weekday, a year, or
  a relative expression ("yesterday", "last weekend", "two weeks ago", "for three
  years"). Most memories state none (on conversations, about one in six turns does),
  so this singles out the few that can say when.
- **It names a period**, by name ("... camping in July", "... in 2022", "... in May
  2023") or relative to when it is asked ("What did I eat yesterday?", "... last week",
  "... two months ago": past periods only, resolved against the store's clock,
  `relative_windows`).
  Its answer is a memory that happened in that period: for a named month or year, the
  words appear in the memory's time key (`memory_keys.time_words`: the event date in
  words and the relative dates of its text resolved against it, so "last year"
  written in 2023 counts for 2022); for a relative period, its event time falls in it.

`time_match` is what ranking uses: a memory that answers the query's time question
gets `time_weight` (`ScoringConfig`, default 0.2) added to its score, the same for
every such memory, so among memories of close relevance (within `time_weight` of each
other) the one that can answer "when" comes first; relevance still decides the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from langgraph_tiered_memory.ranking.keys import MONTHS, time_words
from langgraph_tiered_memory.ranking.windows import relative_windows

__all__ = ["TimeQuestion", "states_time", "time_match", "time_question"]

_WORD = re.compile(r"[A-Za-z]+|\d+")
_UNITS = frozenset(
    f"{u}{plural}"
    for u in (
        "day night week weekend fortnight month year decade summer winter spring fall"
        " autumn morning afternoon evening semester term season"
    ).split()
    for plural in ("", "s")
)
_WEEKDAYS = frozenset(
    f"{d}{plural}"
    for d in "monday tuesday wednesday thursday friday saturday sunday".split()
    for plural in ("", "s")
)
# Words that state a time alone ("May" only capitalised: "may" is a verb).
_ALONE = (
    frozenset("yesterday today tonight tomorrow recently lately ago since".split())
    | frozenset(m.lower() for m in MONTHS if m != "May")
    | _WEEKDAYS
)
# Words before a unit that make it a time: "last summer", "two weeks", "a few days".
_BEFORE_UNIT = frozenset(
    (
        "last this next past coming previous every one two three four five six"
        " seven eight nine ten eleven twelve few couple several many"
    ).split()
)
# "a week" is a time after these ("for a week", "in a month"), not in "twice a year".
_BEFORE_A = frozenset("for in over after within about almost nearly".split())
_ASKS_WHEN = re.compile(
    r"^\W*(?:\w+,\s*)?(?:"
    r"(?:(?:a?round|about|roughly|approximately|since|until|by|from) )?when\b"
    r"|how long\b|how soon\b"
    r"|how many (?:days|weeks|months|years)\b"
    r"|(?:in |on |during )?(?:what|which) (?:year|month|date|day|week|weekend|season|time)\b"
    r"|what is the date\b"
    r")",
    re.IGNORECASE,
)
_MONTH_NAMES = {m.lower(): m for m in MONTHS if m != "May"}


@dataclass(frozen=True, slots=True)
class TimeQuestion:
    """What a query asks about time.

    Attributes:
        asks_when: The query asks when something happened or how long it lasted.
        months: Month names the query names ("July"), capitalised as in time keys.
        years: Years the query names ("2022").
        windows: Periods the query names relative to the time it is asked ("yesterday",
            "last week", "two months ago"), as [start, end) epoch seconds (UTC days).
    """

    asks_when: bool = False
    months: frozenset[str] = frozenset()
    years: frozenset[str] = frozenset()
    windows: tuple[tuple[float, float], ...] = ()

    @property
    def names_period(self) -> bool:
        """Whether the query names a month or a year."""
        return bool(self.months or self.years)


def _is_year(word: str) -> bool:
    return len(word) == 4 and word.isdigit() and 1800 <= int(word) <= 2099


def time_question(query: str, now: float | None = None) -> TimeQuestion | None:
    """What `query` asks about time, or None when it says nothing of time.

    Args:
        query: The search query.
        now: When it is asked (epoch seconds); relative periods ("yesterday", "last
            month", "three weeks ago") resolve against it. None resolves none.
    """
    asks = bool(_ASKS_WHEN.search(query))
    words = _WORD.findall(query)
    months = frozenset(
        "May" if w == "May" else _MONTH_NAMES[w.lower()]
        for w in words
        if w == "May" or w.lower() in _MONTH_NAMES
    )
    years = frozenset(w for w in words if _is_year(w))
    windows = relative_windows([w.lower() for w in words], now) if now is not None else ()
    if not (asks or months or years or windows):
        return None
    return TimeQuestion(asks_when=asks, months=months, years=years, windows=windows)


def states_time(text: str) -> bool:
    """Whether `text` states a time: a date, month, weekday, year or relative time."""
    words = _WORD.findall(text)
    lower = [w.lower() for w in words]
    for i, w in enumerate(lower):
        if w in _ALONE or words[i] == "May":
            return True
        if w.isdigit():
            if _is_year(w):
                return True
            continue
        if w in _UNITS and i > 0:
            before = lower[i - 1]
            if before in _BEFORE_UNIT or before.isdigit():
                return True
            earlier = lower[i - 2] if i > 1 else ""
            if (before, earlier) in (("of", "couple"), ("other", "the")):
                return True
            if before in ("a", "an") and earlier in _BEFORE_A:
                return True
    return False


def time_match(question: TimeQuestion | None, text: str, event_at: float | None) -> bool:
    """Whether a memory answers the query's time question.

    Args:
        question: `time_question(query)`; None matches nothing.
        text: The memory's indexed text.
        event_at: When the memory happened (epoch seconds), or None when unknown.

    Returns:
        True when the query asks when and the text states a time, when the memory
        happened in a period the query names relative to its time, or when the query
        names a month or year and the memory's time key holds every one it names.
    """
    if question is None:
        return False
    if event_at is not None and any(lo <= event_at < hi for lo, hi in question.windows):
        return True
    if not (question.asks_when or question.names_period):
        return False  # a relative period only: the word scan cannot change the answer
    stated = states_time(text)
    if question.asks_when and stated:
        return True
    if not question.names_period or event_at is None:
        return False
    # Relative dates only come from texts that state a time: the others' time key is
    # their event date alone.
    words = set(time_words(text if stated else "", event_at).split())
    return question.months <= words and question.years <= words
