"""Detectors of the default redactor (`redaction.PatternRedactor`): regexes and checksums.

A text is first folded (`fold`): each character is NFKC-normalised together with the
combining marks that follow it, every Unicode decimal digit becomes its ASCII digit,
every space separator a space, every dash a `-`, and combining marks and invisible
format characters are dropped. So `４１１１`, `٤١١١` and `4111` read the same, and
`４１１１ １１１１` (no-break space) is grouped like `4111 1111`. Detectors scan the folded
text; `Folded.origin` maps what they find back to the characters of the original text.

Each detector returns the (start, end) spans it finds in a folded text. Candidates are
found by a regex that can only start where a token starts (so a long text is scanned
once), then checked; a run of groups ("4111 1111 1111 1111 2024") is also tried group by
group, longest first, so a number glued to its neighbours is still found.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import NamedTuple


class _Piece(NamedTuple):
    """A piece of a folded text: where it starts, and the original characters it is."""

    start: int
    origin_start: int
    origin_end: int
    one_for_one: bool  # each character folded to one: positions map linearly


class Folded:
    """A folded text (`text`) and the map back to the original."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._pieces: list[_Piece] = []
        self._starts: list[int] = []
        self._length = 0
        self.text = ""

    def add(self, folded: str, origin_start: int, origin_end: int, one_for_one: bool) -> None:
        """Append what `original[origin_start:origin_end]` folds to."""
        if not folded:
            return
        self._parts.append(folded)
        last = self._pieces[-1] if self._pieces else None
        if (
            one_for_one
            and last is not None
            and last.one_for_one
            and last.origin_end == origin_start
        ):
            self._pieces[-1] = last._replace(origin_end=origin_end)  # one linear stretch
        else:
            self._pieces.append(_Piece(self._length, origin_start, origin_end, one_for_one))
            self._starts.append(self._length)
        self._length += len(folded)

    def done(self) -> Folded:
        """Join the pieces into `text`."""
        self.text = "".join(self._parts)
        return self

    def origin(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that `text[start:end]` (not empty) came from."""
        first = self._pieces[bisect.bisect_right(self._starts, start) - 1]
        last = self._pieces[bisect.bisect_right(self._starts, end - 1) - 1]
        return (
            first.origin_start + (start - first.start if first.one_for_one else 0),
            last.origin_start + end - last.start if last.one_for_one else last.origin_end,
        )


def _fold_char(ch: str) -> str:
    """One NFKC-normalised character as the detectors read it ("" to drop it)."""
    category = unicodedata.category(ch)
    if category == "Nd":
        return str(unicodedata.decimal(ch))
    if category == "Zs":
        return " "
    if category == "Pd" or ch == "\u2212":  # dashes and the minus sign
        return "-"
    if category[0] == "M" or category == "Cf":  # marks left uncomposed, zero-width characters
        return ""
    return ch


class _CharTable(dict[int, str]):
    """`str.translate` table of `_fold_char`, filled as characters are met."""

    def __missing__(self, code: int) -> str:
        self[code] = folded = _fold_char(chr(code))
        return folded


_TABLE = _CharTable()
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold_run(run: str, offset: int, into: Folded) -> None:
    """Fold `run`, found at `offset` in the original text, into `into`."""
    if unicodedata.is_normalized("NFKC", run):
        folded = run.translate(_TABLE)
        if len(folded) == len(run):  # most text: nothing dropped, nothing composed
            into.add(folded, offset, offset + len(run), True)
            return
    i = 0
    while i < len(run):
        j = i + 1
        while j < len(run) and unicodedata.category(run[j])[0] == "M":
            j += 1  # a character and its marks are normalised together
        folded = unicodedata.normalize("NFKC", run[i:j]).translate(_TABLE)
        into.add(folded, offset + i, offset + j, j - i == len(folded) == 1)
        i = j


def fold(text: str) -> Folded:
    """`text` as the detectors read it, with the map back to the original (see above)."""
    into = Folded()
    done = 0
    for m in _NON_ASCII.finditer(text):  # ASCII is folded already
        i = max(m.start() - 1, done)  # from the character before: marks may follow it
        into.add(text[done:i], done, i, True)
        _fold_run(text[i : m.end()], i, into)
        done = m.end()
    into.add(text[done:], done, len(text), True)
    return into.done()


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

# Letters of any script (folded: no fullwidth forms); an address in text without spaces
# ("メールはann@example.comです") is cut where the script changes (`_emails`).
_EMAIL = re.compile(r"(?<![\w.%+\-])[\w.%+\-]+@[\w\-]+(?:\.[\w\-]+)*\.[^\W\d_]{2,63}")


def _uncased(ch: str) -> bool:
    """A letter of a script without case (CJK, kana, Thai, Arabic, ...)."""
    return unicodedata.category(ch) in ("Lo", "Lm")


def _emails(text: str) -> list[_Span]:
    spans: list[_Span] = []
    for m in _EMAIL.finditer(text):
        start, end = m.span()
        local = text[start : text.index("@", start)]
        start += next((i for i, c in enumerate(local) if not _uncased(c)), 0)
        tld = text[text.rindex(".", start, end) + 1 : end]
        glued = next((i for i, c in enumerate(reversed(tld)) if not _uncased(c)), 0)
        end -= min(glued, len(tld) - 2)
        spans.append((start, end))
    return spans


_IBAN_START = re.compile(r"(?<![^\W_])[A-Za-z]{2}[0-9]{2}")
_IBAN_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_SEPARATOR = frozenset(" -")


def _iban_like(compact: str) -> bool:
    """A valid IBAN; one not in upper case also needs a mostly numeric account part.

    Every country's account part is mostly digits; the extra test keeps lower-case words
    after a token such as "ab12" from passing the 1-in-97 checksum by chance.
    """
    if not compact.isupper():
        bban = compact[4:]
        if 2 * sum(c.isdigit() for c in bban) < len(bban):
            return False
    return iban_valid(compact.upper())


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
                continue
            j = i
            while j < len(text) and text[j] in _SEPARATOR:
                j += 1  # groups joined by spaces or dashes
            if j == i or not chars or j == len(text) or text[j] not in _IBAN_CHAR:
                break
            i = j
        found = next((end for end, compact in reversed(ends) if _iban_like(compact)), None)
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


# A run of digit groups joined by spaces or dashes; not part of a decimal number nor of
# an international phone number (+4915112345678).
_CARD_RUN = re.compile(r"(?<![0-9+])(?<![0-9][.,])[0-9](?:[ \-]*[0-9])*(?![.,]?[0-9])")


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
    if plus:  # +CC ...: E.164 allows 15 digits, one more for a "(0)" trunk prefix;
        # no date starts with a "+", so +44-20-7946-0958 is a number whatever its dashes
        return digits[0] != "0" and 8 <= len(digits) <= 16
    for k in range(len(groups) - 2):
        if _is_date(sizes[k : k + 3], seps[k : k + 2]):
            return False
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
