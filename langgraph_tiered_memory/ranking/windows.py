"""Past periods a query names relative to when it is asked ("yesterday", "last month").

`relative_windows` turns the words of a query into [start, end) windows of epoch
seconds, in whole UTC days:

- "yesterday", "last night": the day before today.
- "last week" (weeks start on Monday), "last weekend" (Saturday and Sunday), "last
  month", "last year": the calendar period before the current one.
- "last Friday": the latest Friday before today.
- "<n> days/weeks/months/years ago": that day, week, month or year, give or take one
  unit (people round: "two weeks ago" may be ten days).
- "in the last/past <n> days/weeks/months/years": from then until now.

Counts are digits or words ("a", "one" ... "twelve", "a couple", "a few"). Only the
past counts: "today", "tonight", "this week" and "next month" usually ask about now or
later ("What should I cook tonight?"), and the memories written today are not the
answer to that.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from dateutil.relativedelta import relativedelta

__all__ = ["relative_windows"]

_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "couple": 2,
    "three": 3,
    "few": 3,
    "four": 4,
    "several": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_STEP = {
    "day": relativedelta(days=1),
    "week": relativedelta(weeks=1),
    "month": relativedelta(months=1),
    "year": relativedelta(years=1),
}


def _unit(word: str) -> str | None:
    base = word[:-1] if word.endswith("s") else word
    return base if base in _STEP else None


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word) if 0 < len(word) <= 3 else None
    return _COUNTS.get(word)


def _previous(unit: str, today: datetime) -> tuple[datetime, datetime]:
    """The calendar `unit` (day, week, weekend, month, year) before the current one."""
    if unit == "day":
        start = today
    elif unit in ("week", "weekend"):
        start = today - timedelta(days=today.weekday())
    elif unit == "month":
        start = today.replace(day=1)
    else:
        start = today.replace(month=1, day=1)
    step = _STEP["week" if unit == "weekend" else unit]
    start -= step
    if unit == "weekend":
        return start + timedelta(days=5), start + timedelta(days=7)
    return start, start + step


def relative_windows(words: Sequence[str], now: float) -> tuple[tuple[float, float], ...]:
    """The periods `words` (lower-case words of a query) name relative to `now`.

    Returns:
        [start, end) windows in epoch seconds, in the order the query names them.
    """
    today = datetime.fromtimestamp(now, tz=timezone.utc).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    # "a couple of weeks" counts like "two weeks".
    words = [w for i, w in enumerate(words) if not (w == "of" and i and words[i - 1] == "couple")]
    out: list[tuple[datetime, datetime]] = []
    n = len(words)
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < n else ""
        if w == "yesterday" or (w == "last" and nxt == "night"):
            out.append(_previous("day", today))
        elif w == "last" and nxt in ("week", "weekend", "month", "year"):
            out.append(_previous(nxt, today))
        elif w == "last" and nxt in _WEEKDAYS:
            back = (today.weekday() - _WEEKDAYS.index(nxt) - 1) % 7 + 1
            day = today - timedelta(days=back)
            out.append((day, day + timedelta(days=1)))
        elif w == "ago" and i >= 2:
            unit, count = _unit(words[i - 1]), _count(words[i - 2])
            if unit is not None and count is not None:
                step = _STEP[unit]
                out.append((today - step * (count + 1), today - step * (count - 1) + _STEP["day"]))
        elif w in ("last", "past") and i + 2 < n:
            unit, count = _unit(words[i + 2]), _count(nxt)
            if unit is not None and count is not None:
                out.append((today - _STEP[unit] * count, today + _STEP["day"]))
    return tuple((a.timestamp(), b.timestamp()) for a, b in out)
