"""Detectors of the default redactor (`redaction.PatternRedactor`): regexes and checksums.

Each detector returns the (start, end) spans it finds in a text. Candidates are found by
a regex that can only start where a token starts (so a long text is scanned once), then
checked; a run of groups ("4111 1111 1111 1111 2024") is also tried group by group,
longest first, so a number glued to its neighbours is still found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["DETECTORS", "iban_valid", "luhn_valid"]


def luhn_valid(digits: str) -> bool:
    """Whether a string of ASCII digits passes the Luhn check of payment card numbers."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(compact: str) -> bool:
    """Whether an IBAN without spaces (upper case) passes its ISO 13616 mod-97 check."""
    if not 15 <= len(compact) <= 34 or compact[2:4] in ("00", "01", "99"):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


_Span = tuple[int, int]

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,63}"
)


def _emails(text: str) -> list[_Span]:
    return [m.span() for m in _EMAIL.finditer(text)]


_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}")
_IBAN_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _ibans(text: str) -> list[_Span]:
    spans: list[_Span] = []
    pos = 0
    while (m := _IBAN_START.search(text, pos)) is not None:
        start = i = m.start()
        chars: list[str] = []
        ends: list[tuple[int, str]] = []  # (end, compact) at each token boundary
        while i < len(text) and len(chars) < 34:
            ch = text[i]
            if ch in _IBAN_CHAR:
                chars.append(ch)
                i += 1
                if i == len(text) or not text[i].isalnum():
                    ends.append((i, "".join(chars)))
            elif ch == " " and chars and i + 1 < len(text) and text[i + 1] in _IBAN_CHAR:
                i += 1
            else:
                break
        found = next((end for end, compact in reversed(ends) if iban_valid(compact)), None)
        if found is None:
            pos = m.end()
        else:
            spans.append((start, found))
            pos = found
    return spans


class _Group(NamedTuple):
    start: int
    end: int


def _groups(run: str, offset: int) -> list[_Group]:
    return [_Group(offset + m.start(), offset + m.end()) for m in re.finditer(r"[0-9]+", run)]


# A run of digit groups joined by one space or dash; not part of a decimal number nor
# of an international phone number (+4915112345678).
_CARD_RUN = re.compile(r"(?<![0-9+])(?<![0-9][.,])[0-9](?:[ \-]?[0-9])*(?![.,]?[0-9])")


def _card_layout(sizes: Sequence[int]) -> bool:
    """How card numbers are written: in one piece, in fours, or 4-6-5 / 4-6-4."""
    if len(sizes) == 1 or sizes in ([4, 6, 5], [4, 6, 4]):
        return True
    return all(n == 4 for n in sizes[:-1]) and 1 <= sizes[-1] <= 4


def _cards(text: str) -> list[_Span]:
    spans: list[_Span] = []
    for m in _CARD_RUN.finditer(text):
        groups = _groups(m.group(), m.start())
        sizes = [g.end - g.start for g in groups]
        i = 0
        while i < len(groups):
            hit, last, size = None, i, 0
            while last < len(groups) and size + sizes[last] <= 19:
                size += sizes[last]
                last += 1
            for j in range(last - 1, i - 1, -1):
                if size >= 13 and _card_layout(sizes[i : j + 1]):
                    digits = "".join(text[g.start : g.end] for g in groups[i : j + 1])
                    if luhn_valid(digits):
                        hit = j
                        break
                size -= sizes[j]
            if hit is None:
                i += 1
            else:
                spans.append((groups[i].start, groups[hit].end))
                i = hit + 1
    return spans


# Digit groups joined by short separators (space . - / and parentheses), maybe after
# a "+"; not glued to a word or to a decimal number.
_PHONE_RUN = re.compile(
    r"(?<![\w+])(?<![0-9][.,])\+?\(?[0-9]+(?:[ .\-/()]{1,3}[0-9]+)*\)?(?![.,]?[0-9])"
)
_PHONE_SEP = re.compile(r"\)?[ .\-/]?\(?")
_MAX_PHONE_GROUPS = 8


def _is_date(sizes: Sequence[int], seps: Sequence[str]) -> bool:
    """Whether three groups joined by one repeated separator look like a date."""
    a, b, c = sizes
    return (
        seps[0] == seps[1]
        and seps[0] in "-./"
        and ((a, c) == (4, 2) or c == 4)
        and b <= 2
        and (a <= 2 or a == 4)
    )


def _phone_digits_ok(text: str, groups: Sequence[_Group], plus: bool) -> bool:
    digits = "".join(text[g.start : g.end] for g in groups)
    sizes = [g.end - g.start for g in groups]
    seps = [text[x.end : y.start] for x, y in zip(groups, groups[1:], strict=False)]
    for k in range(len(groups) - 2):
        if _is_date(sizes[k : k + 3], seps[k : k + 2]):
            return False
    if plus:  # +CC ...: E.164 allows 15 digits, one more for a "(0)" trunk prefix
        return digits[0] != "0" and 8 <= len(digits) <= 16
    if digits.startswith("00"):  # 00 CC ...: international prefix
        return sizes[0] >= 3 and digits[2] != "0" and 8 <= len(digits) - 2 <= 15
    if digits.startswith("0"):  # national number with a trunk prefix: 020 7946 0958
        return sizes[0] >= 2 and 9 <= len(digits) <= 12
    # North American numbers: (415) 555-2671, 415.555.2671, 1 415 555 2671, 4155552671
    rest = sizes[1:] if len(sizes) in (2, 4) and digits[0] == "1" and sizes[0] == 1 else sizes
    if rest == [10] or rest == [3, 3, 4]:
        nanp = digits[-10:]
        return nanp[0] in "23456789" and nanp[3] in "23456789"
    return False


def _phone_span(text: str, run: re.Match[str], groups: Sequence[_Group], i: int, j: int) -> _Span:
    start, end = groups[i].start, groups[j].end
    if i == 0:
        start = run.start()
    elif text[start - 1] == "(":
        start -= 1
    if end < run.end() and text[end] == ")":
        end += 1
    return start, end


def _phones(text: str) -> list[_Span]:
    spans: list[_Span] = []
    for run in _PHONE_RUN.finditer(text):
        groups = _groups(run.group(), run.start())
        seps = [text[x.end : y.start] for x, y in zip(groups, groups[1:], strict=False)]
        if any(_PHONE_SEP.fullmatch(s) is None for s in seps):
            continue  # "1 -- 2", ".. .": not how numbers are written
        # A number may start or end inside a run only where the run has a space.
        cut = [True] + [any(c.isspace() for c in s) for s in seps] + [True]
        plus = run.group().lstrip("(").startswith("+")
        total = [0]  # digits before each group
        for g in groups:
            total.append(total[-1] + g.end - g.start)
        i = 0
        while i < len(groups):
            hit = None
            if cut[i]:
                for j in range(min(len(groups), i + _MAX_PHONE_GROUPS) - 1, i - 1, -1):
                    if not cut[j + 1] or not 9 <= total[j + 1] - total[i] + 2 * plus <= 17:
                        continue
                    start, end = _phone_span(text, run, groups, i, j)
                    piece = text[start:end]
                    if piece.count("(") != piece.count(")"):
                        continue
                    if _phone_digits_ok(text, groups[i : j + 1], plus and i == 0):
                        hit = (j, start, end)
                        break
            if hit is None:
                i += 1
            else:
                spans.append((hit[1], hit[2]))
                i = hit[0] + 1
    return spans


DETECTORS: dict[str, Callable[[str], list[_Span]]] = {
    "email": _emails,
    "iban": _ibans,
    "card": _cards,
    "phone": _phones,
}
"""Every kind `PatternRedactor` knows, in priority order (an email wins over a phone
number inside it, an IBAN over the card-like digits in it)."""
