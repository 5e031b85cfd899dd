"""Extra index keys of a memory: context, sentences and time (pure functions).

A memory is indexed under more than its own text, so a query can find it by what
surrounds it:

- **Contextual key.** The memory written just before it in the same namespace is
  part of its context (in a conversation, the question a turn answers). The store
  embeds the previous text and its own, joined by a newline, as an extra vector and keyword-indexes
  the previous text in a separate, lower-weighted column.
- **Sentence keys.** A memory of several sentences also gets vectors for its first
  sentence and for the rest, so a query about one detail is not diluted by the
  others (dense relevance is the best of the memory's vectors).
- **Time key.** `occurred_at` in words ("Monday 8 May 2023"), plus relative dates
  of the text ("yesterday", "last week", ...) resolved against it, so "in May 2023"
  finds memories of that month.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = ["MONTHS", "time_words", "sentence_chunks", "context_text"]

MONTHS = (
    "January February March April May June July August September October November December"
).split()
"""Month names as time keys spell them."""
_WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()

# Relative time expressions and their offset in days from the event time.
_RELATIVE: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), days)
    for p, days in (
        (r"\byesterday\b|\blast night\b", -1),
        (r"\btoday\b|\btonight\b|\bthis morning\b", 0),
        (r"\blast week(end)?\b|\ba week ago\b", -7),
        (r"\blast month\b|\ba month ago\b", -30),
        (r"\blast year\b|\ba year ago\b", -365),
        (r"\btomorrow\b", 1),
        (r"\bnext week(end)?\b", 7),
        (r"\bnext month\b", 30),
        (r"\bnext year\b", 365),
    )
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _day_words(dt: datetime) -> str:
    return f"{_WEEKDAYS[dt.weekday()]} {dt.day} {MONTHS[dt.month - 1]} {dt.year}"


def time_words(text: str, occurred_at: float | None) -> str:
    """The time key of a memory: its event date in words and resolved relative dates.

    Offsets of four weeks or more resolve to month and year only.

    Args:
        text: The memory's text.
        occurred_at: Event time in epoch seconds, or None (then the key is empty).
    """
    if occurred_at is None:
        return ""
    when = datetime.fromtimestamp(occurred_at, tz=timezone.utc)
    out = [_day_words(when)]
    for pattern, days in _RELATIVE:
        if pattern.search(text):
            d = when + timedelta(days=days)
            out.append(f"{MONTHS[d.month - 1]} {d.year}" if abs(days) >= 28 else _day_words(d))
    return " ".join(out)


def sentence_chunks(text: str, max_chunks: int) -> list[str]:
    """Split `text` into at most `max_chunks` pieces: the first sentences, then the rest.

    Returns:
        An empty list when the text has a single sentence or `max_chunks` < 2.
    """
    if max_chunks < 2:
        return []
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    if len(parts) < 2:
        return []
    return [*parts[: max_chunks - 1], " ".join(parts[max_chunks - 1 :])]


def context_text(previous: str | None, own: str) -> str | None:
    """The text of the contextual vector, or None when there is no previous memory."""
    if not previous or not own:
        return None
    return f"{previous}\n{own}"
