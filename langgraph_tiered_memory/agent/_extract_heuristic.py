"""The no-model side of extraction: statements, slots, importance and text similarity.

Pure functions, no I/O. A *statement* is a first-person fact or preference found in a
user's message ("I live in Berlin", "my favourite colour is green", "I don't like
coffee", "remember that ..."). A *slot* is what a statement is about together with its
value: "I live in Berlin" and "I moved to Lisbon" fill the slot `residence` with two
values, so the newer one replaces the older; "I love coffee" and "I hate coffee" fill
`pref:coffee` with `+` and `-`. The same patterns read the third-person phrasing a
model tends to write ("The user lives in Berlin"), so the slots of model-extracted
memories are found too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from langgraph_tiered_memory.memory import MemoryType

BASE_IMPORTANCE = 0.5
"""Importance of a statement with nothing that raises it."""
IDENTITY_BONUS = 0.1
"""Added for statements about who the user is (residence, work, name, age, origin)."""
EXPLICIT_BONUS = 0.3
"""Added when the user asks to remember it or calls it important."""
IDENTITY_SLOTS = frozenset({"residence", "origin", "occupation", "employer", "age", "my:name"})

_CONTRACTIONS = (
    (re.compile(r"\bi'm\b"), "i am"),
    (re.compile(r"\bi've\b"), "i have"),
    (re.compile(r"\bi'd\b"), "i would"),
    (re.compile(r"\b(do|does|did|is|are|was|were)n't\b"), r"\1 not"),
    (re.compile(r"\bcan't\b"), "cannot"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\buser's\b"), "user s"),
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；;])\s*|\n+")
_CLAUSE = re.compile(r",?\s+(?:and|but|also)\s+(?=(?:i|my)\b)", re.IGNORECASE)
_FILLER = re.compile(
    r"^(?:also|actually|btw|by the way|oh|well|so|and|but|fyi|anyway|hey|hi|hello|ok|okay"
    r"|just so you know|for the record|for your information)\b[,:!]?\s*",
    re.IGNORECASE,
)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget|never forget)"
    r"(?:\s+that)?\s*[,:]?\s+(?!(?:when|how|what|who|where|why|if|the time)\b)"
    r"|^(?:(?:this|that|it)\s+is\s+|it's\s+)?(?:very\s+)?important\s*[:,!-]\s*"
    r"|^(?:请)?记住[,，:：]?\s*|^重要[:：,，]\s*",
    re.IGNORECASE,
)
_EXPLICIT = re.compile(r"\b(?:remember|important)\b|记住|重要", re.IGNORECASE)
_TRAILING = re.compile(
    r"(?:\s+(?:now|anymore|any more|these days|nowadays|a lot|very much|so much|too|as well"
    r"|again|actually))+$"
)
_FAVOURITE = re.compile(r"favou?rite|最喜欢|最爱")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+")
_WORDS = re.compile(r"[^\w]+")

_S1 = r"(?:i|(?:the\s+)?user)"  # subject: "I", "user", "the user"
_BE = r"(?:i\s+am|(?:the\s+)?user\s+is)"
_ADV = r"(?:(?:really|also|absolutely|truly|still|now|currently|just|recently|so|very)\s+)*"
_NOT_FACT = (  # not "I am sure", "I am going to", "I am still working on it"
    r"(?!(?:sure|sorry|glad|happy|here|back|fine|ok|okay|good|well|just|not sure|afraid"
    r"|curious|done|ready|able|unable|about|going to|trying|wondering|thinking|looking)\b)"
    rf"(?!{_ADV}\w+ing\b)"
)


class Slot(NamedTuple):
    """What a statement is about (`name`) and what it says about it (`value`)."""

    name: str
    value: str


class _Pattern(NamedTuple):
    regex: re.Pattern[str]
    memory_type: MemoryType
    slot: str | None
    """Slot name; `{k}` is filled from the `k` group, `pref` slots use the object."""
    polarity: str = ""


def _p(pattern: str, memory_type: MemoryType, slot: str | None, polarity: str = "") -> _Pattern:
    return _Pattern(re.compile(pattern, re.IGNORECASE), memory_type, slot, polarity)


# Order matters: the first match wins ("I am living in X" is a residence, not "I am X").
_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        rf"^{_S1}\s+{_ADV}(?:(?:am|is)\s+{_ADV}living|live|lives|reside|resides)\s+in\s+(?P<v>.+)$",
        "fact",
        "residence",
    ),
    _p(
        rf"^{_S1}\s+(?:have\s+|has\s+)?{_ADV}(?:moved|relocated)\s+(?:to|into)\s+(?P<v>.+)$",
        "fact",
        "residence",
    ),
    _p(rf"^{_S1}\s+{_ADV}works?\s+as\s+(?P<v>.+)$", "fact", "occupation"),
    _p(rf"^{_S1}\s+{_ADV}works?\s+(?:at|for)\s+(?P<v>.+)$", "fact", "employer"),
    _p(rf"^{_BE}\s+(?:originally\s+)?from\s+(?P<v>.+)$", "fact", "origin"),
    _p(rf"^{_BE}\s+(?P<v>\d{{1,3}})\s+years?\s+old$", "fact", "age"),
    _p(
        r"^(?:my|(?:the\s+)?user\s+s)\s+(?P<k>[^\W\d_][\w' -]{0,40}?)\s+(?:is|are)\s+(?P<v>.+)$",
        "fact",
        "my:{k}",
    ),
    _p(
        rf"^{_S1}\s+{_ADV}(?:hate|hates|dislike|dislikes|detest|detests|cannot stand"
        r"|can not stand|do not like|does not like|do not enjoy|does not enjoy"
        r"|no longer likes?|no longer enjoys?|no longer loves?)\s+(?P<v>.+)$",
        "preference",
        "pref",
        "-",
    ),
    _p(
        rf"^{_S1}\s+{_ADV}(?:like|likes|love|loves|enjoy|enjoys|prefer|prefers|adore|adores)"
        r"\s+(?P<v>.+)$",
        "preference",
        "pref",
        "+",
    ),
    _p(rf"^{_BE}\s+{_NOT_FACT}(?P<v>.+)$", "fact", None),
    _p(r"^我(?:现在)?住在(?P<v>.+)$", "fact", "residence"),
    _p(r"^我(?:已经|刚)?搬(?:到|去)了?(?P<v>.+)$", "fact", "residence"),
    _p(r"^我在(?P<v>.+?)工作$", "fact", "employer"),
    _p(r"^我(?:不喜欢|讨厌|不爱)(?P<v>.+)$", "preference", "pref", "-"),
    _p(r"^我(?:很|非常|也|最)?(?:喜欢|爱|偏爱)(?P<v>.+)$", "preference", "pref", "+"),
    _p(r"^我的(?P<k>.{1,10}?)是(?P<v>.+)$", "fact", "my:{k}"),
    _p(r"^我是(?P<v>.+)$", "fact", None),
)


@dataclass(frozen=True, slots=True)
class Statement:
    """A memory found in a user's message without a model."""

    content: str
    memory_type: MemoryType
    importance: float
    slot: Slot | None


def normalize(text: str) -> str:
    """Case-folded words of `text`, contractions expanded, punctuation dropped.

    `"I'm vegetarian."` and `"i am  vegetarian"` normalise alike.
    """
    text = text.replace("\u2019", "'").casefold()
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return " ".join(_WORDS.sub(" ", text).split())


def _clean_value(value: str) -> str:
    value = normalize(value)
    value = _TRAILING.sub("", value)
    return _ARTICLE.sub("", value).strip()


def _match(clause: str) -> tuple[_Pattern, Slot | None] | None:
    text = normalize(clause)
    if not text:
        return None
    for pattern in _PATTERNS:
        m = pattern.regex.match(text)
        if m is None:
            continue
        value = _clean_value(m.group("v"))
        if not value:
            return None
        if pattern.slot is None:
            return pattern, None
        if pattern.slot == "pref":
            return pattern, Slot(f"pref:{value}", pattern.polarity)
        name = pattern.slot.format(k=_clean_value(m.group("k"))) if "{k}" in pattern.slot else ""
        return pattern, Slot(name or pattern.slot, value)
    return None


def slot_of(content: str) -> Slot | None:
    """The slot a memory's text fills, or None (also for text matching no pattern)."""
    found = _match(_strip_lead(content)[0])
    return None if found is None else found[1]


def _strip_lead(clause: str) -> tuple[str, bool]:
    """The clause without filler words and a "remember that" lead-in; whether it had one."""
    remembered = False
    text = clause.strip()
    while True:
        m = _REMEMBER.match(text) or _FILLER.match(text)
        if m is None or not m.group(0):
            return text, remembered
        remembered = remembered or m.re is _REMEMBER
        text = text[m.end() :].strip()


def _clauses(text: str) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        out.extend(part.strip() for part in _CLAUSE.split(sentence) if part and part.strip())
    return out


def _tidy(clause: str) -> str:
    clause = clause.strip().rstrip(".!。！;；,，").strip()
    return clause[:1].upper() + clause[1:]


def find_statements(text: str) -> list[Statement]:
    """The first-person facts and preferences of one user message, in order.

    Each clause is matched against the patterns (first match wins); a clause that
    asks a question is skipped; a clause led by "remember that" (or "note that",
    "记住") is kept even when no pattern matches it. Importance starts at
    `BASE_IMPORTANCE`, gains `IDENTITY_BONUS` for who-the-user-is slots and
    `EXPLICIT_BONUS` when the clause says "remember" or "important".

    Args:
        text: One message's text.

    Returns:
        The statements; their content is the clause as written, without its lead-in.
    """
    found: list[Statement] = []
    for clause in _clauses(text):
        if clause.rstrip().endswith(("?", "？")):
            continue
        body, remembered = _strip_lead(clause)
        match = _match(body)
        if match is None and not remembered:
            continue
        content = _tidy(body)
        if not content:
            continue
        memory_type: MemoryType = "fact" if match is None else match[0].memory_type
        slot = None if match is None else match[1]
        if slot is not None and _FAVOURITE.search(slot.name):
            memory_type = "preference"
        importance = BASE_IMPORTANCE
        if slot is not None and slot.name in IDENTITY_SLOTS:
            importance += IDENTITY_BONUS
        if remembered or _EXPLICIT.search(clause):
            importance += EXPLICIT_BONUS
        found.append(Statement(content, memory_type, round(min(importance, 1.0), 2), slot))
    return found


def text_similarity(a: str, b: str) -> float:
    """Similarity of two texts from 0 to 1 after `normalize` (difflib's ratio)."""
    na, nb = normalize(a), normalize(b)
    if na == nb:
        return 1.0
    return difflib.SequenceMatcher(None, na, nb, autojunk=False).ratio()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / norm if norm else 0.0
