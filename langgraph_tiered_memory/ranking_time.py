"""Time in questions: what a query asks about time, and which memories answer that (pure).

Two things a query can say about time, and the memories that answer each:

- **It asks when** ("When did ...", "How long ...", "What year ...", "Since when ...").
  Its answer is a memory that *states* a time: a date, a month, a weekday, a year, or
  a relative expression ("yesterday", "last weekend", "two weeks ago", "for three
  years"). Most memories state none (on conversations, about one in six turns does),
  so this singles out the few that can say when.
- **It names a period** ("... camping in July", "... in 2022", "... in May 2023").
  Its answer is a memory that happened in that period: the period's month and year
  words appear in the memory's time key (`memory_keys.time_words`: the event date in
  words and the relative dates of its text resolved against it, so "last year"
  written in 2023 counts for 2022).

`time_match` is what ranking uses: a memory that answers the query's time question
gets `time_weight` (`ScoringConfig`, default 0.1) added to its score, the same for
every such memory, so among memories of close relevance the one that can answer
"when" comes first, and an irrelevant memory is never lifted over a relevant one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from langgraph_tiered_memory.memory_keys import MONTHS, time_words

__all__ = ["TimeQuestion", "states_time", "time_match", "time_question"]

_UNIT = (
    r"(?:day|night|week|weekend|fortnight|month|year|decade|summer|winter|spring|fall|autumn"
    r"|morning|afternoon|evening|semester|term|season)s?"
)
_COUNT = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a few|a couple(?: of)?|several|many|some)"
)
# "May" is a month only when capitalised ("may" is a verb); the other names in any case.
_MONTH = "(?:" + "|".join(m.lower() for m in MONTHS if m != "May") + "|(?-i:May))"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_STATES_TIME = re.compile(
    r"\b(?:"
    r"yesterday|today|tonight|tomorrow|recently|lately|the other day"
    rf"|(?:last|this|next|past|coming|previous) {_UNIT}"
    rf"|(?:last|this|next|on) {_WEEKDAY}"
    rf"|{_COUNT} {_UNIT} (?:ago|back|later|before|earlier|from now)"
    rf"|(?:for|in|over|after) (?:the (?:last|past) )?{_COUNT} {_UNIT}"
    rf"|ago|since|{_MONTH}|{_WEEKDAY}|(?:1[89]|20)\d\d"
    r")\b",
    re.IGNORECASE,
)
_ASKS_WHEN = re.compile(
    r"^\W*(?:\w+,\s*)?(?:"
    r"when\b|since when\b|until when\b|how long\b|how soon\b"
    r"|how many (?:days|weeks|months|years)\b"
    r"|(?:in |on |during )?(?:what|which) (?:year|month|date|day|week|weekend|season|time)\b"
    r"|what is the date\b"
    r")",
    re.IGNORECASE,
)
_PERIOD_MONTH = re.compile(rf"\b({_MONTH})\b", re.IGNORECASE)
_PERIOD_YEAR = re.compile(r"\b((?:1[89]|20)\d\d)\b")


@dataclass(frozen=True, slots=True)
class TimeQuestion:
    """What a query asks about time.

    Attributes:
        asks_when: The query asks when something happened or how long it lasted.
        months: Month names the query names ("July"), capitalised as in time keys.
        years: Years the query names ("2022").
    """

    asks_when: bool = False
    months: frozenset[str] = frozenset()
    years: frozenset[str] = frozenset()

    @property
    def names_period(self) -> bool:
        """Whether the query names a month or a year."""
        return bool(self.months or self.years)


def time_question(query: str) -> TimeQuestion | None:
    """What `query` asks about time, or None when it says nothing of time."""
    asks = bool(_ASKS_WHEN.search(query))
    months = frozenset(m.capitalize() for m in _PERIOD_MONTH.findall(query))
    years = frozenset(_PERIOD_YEAR.findall(query))
    if not (asks or months or years):
        return None
    return TimeQuestion(asks_when=asks, months=months, years=years)


def states_time(text: str) -> bool:
    """Whether `text` states a time: a date, month, weekday, year or relative time."""
    return bool(_STATES_TIME.search(text))


def time_match(question: TimeQuestion | None, text: str, event_at: float | None) -> bool:
    """Whether a memory answers the query's time question.

    Args:
        question: `time_question(query)`; None matches nothing.
        text: The memory's indexed text.
        event_at: When the memory happened (epoch seconds), or None when unknown.

    Returns:
        True when the query asks when and the text states a time, or when the query
        names a period and the memory's time key holds every month and year it names.
    """
    if question is None:
        return False
    if question.asks_when and states_time(text):
        return True
    if not question.names_period or event_at is None:
        return False
    words = set(time_words(text, event_at).split())
    return question.months <= words and question.years <= words
