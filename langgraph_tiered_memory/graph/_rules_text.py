"""Text helpers of the rule-based triple extractor: entity names, named entities, queries.

Pure functions, no I/O. `entity_name` is how the extractor turns a phrase into a stored
entity name, and `query_entities` produces the candidates a search query mentions, so
both sides normalise the same way:

- `normalize_entity` (NFKC, case-folded, single spaces, edge punctuation dropped);
- typographic apostrophes become `'`; leading articles and determiners are dropped
  ("a nurse" -> "nurse", "the Louvre" -> "louvre");
- the last word of a common-noun phrase (lower case in the text) is made singular
  ("dogs" -> "dog", "hobbies" -> "hobby"); names keep their spelling ("Paris").

A query cannot tell a common noun from a lower-cased name, so `query_entities` offers
both spellings ("dogs" and "dog"); an extra candidate only costs an index look-up.
"""

from __future__ import annotations

import re
from itertools import groupby

from langgraph_tiered_memory.graph.types import normalize_entity

APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})

_DETERMINERS = re.compile(
    r"^(?:(?:(?i:a|an|the|some|any|this|that|these|those|my|our|your|his|her|their|its"
    r"|another)|one|two|three|four|five|several|many|few|lots of|a lot of|a few"
    r"|a couple of|new|own)\s+)+",
)
"""Dropped from the start of an entity; numbers and "new"/"own" only in lower case
("two dogs" -> "dog", but "New York" stays)."""

MONTHS = frozenset(
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
WEEKDAYS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday tues thurs thu fri".split()
)

FUNCTION_WORDS = (
    frozenset(
        """
    a an the and or but nor so yet if then than that this these those there here
    i me my mine we us our ours you your yours he him his she her hers it its they them
    their theirs who whom whose which what where when why how whatever whoever
    am is are was were be been being do does did done doing have has had having
    will would shall should can could may might must ought
    not no never nothing none nobody also too very really just only even still already
    of in on at to from by for with about into onto over under after before during since
    until through between among against without within along across around near
    as like unlike per via up down out off away back again ever
    some any all each every both either neither many much more most few less least
    other another such own same one two three
    yes yeah ok okay oh hey hi hello thanks thank please well wow sure
    said says say tell told ask asked know knew think thought feel felt
    get got go goes going went gone come came make made take took see saw
    want wanted need needed let lets s t d ll ve re m
    today yesterday tomorrow tonight now soon later recently lately last next ago week
    weeks month months year years day days time times
    something anything everything someone anyone everyone thing things lot lots
    kind sort way ways
    live lives lived living work works worked working
    """.split()
    )
    | MONTHS
    | WEEKDAYS
)
"""Words that never start, end or stand as an entity candidate."""

_NOT_NAMES = FUNCTION_WORDS | {"i", "mr", "mrs", "ms", "dr"}
_NOT_NAME_ENDS = _NOT_NAMES | {"of", "de", "la", "le", "van", "von", "der", "del", "da", "du"}
"""Words a name does not end with: those it cannot start with, and connectors ("Bank of")."""

_TOKEN = re.compile(r"[^\W_](?:[\w&'.-]*[^\W_])?")

_KEEP_PLURAL = frozenset(
    """
    news series species means glasses jeans pants shorts clothes scissors lens
    sales physics mathematics economics politics athletics gymnastics aerobics
    chess christmas diabetes measles mumps tennis gas bus plus yes this
    """.split()
)
_IRREGULAR = {
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "kids": "kid",
    "wives": "wife",
    "knives": "knife",
    "lives": "life",
    "leaves": "leaf",
    "wolves": "wolf",
    "shelves": "shelf",
}
_IES_TO_S = frozenset(
    "movies cookies zombies selfies smoothies brownies calories pies ties lies genies"
    " rookies hippies boogies prairies".split()
)
_OES = frozenset("potatoes tomatoes heroes echoes volcanoes mosquitoes torpedoes".split())


def singular(word: str) -> str:
    """`word` (lower case) made singular by spelling rules; unknown shapes unchanged."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word in _KEEP_PLURAL or not word.isalpha():
        return word
    if word.endswith(("ss", "us", "is", "ous", "ics", "'s")):
        return word
    if word.endswith("ies"):
        return word[:-1] if word in _IES_TO_S else word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if word.endswith("oes"):
        return word[:-2] if word in _OES else word[:-1]
    if word.endswith("s"):
        return word[:-1]
    return word


def _clean(phrase: str) -> str:
    return phrase.translate(APOSTROPHES).strip()


def entity_name(phrase: str) -> str:
    """The entity name the rule extractor stores for `phrase` ("" when nothing is left).

    Determiners go, then `normalize_entity`; a phrase written in lower case has its
    last word made singular.
    """
    text = _DETERMINERS.sub("", _clean(phrase)).strip()
    name = normalize_entity(text)
    if not name or text[:1].isupper() or text.split()[-1][:1].isupper():
        return name
    words = name.split(" ")
    words[-1] = singular(words[-1])
    return " ".join(words)


def is_name(word: str) -> bool:
    """Whether `word` looks like part of a name: capitalised, not a function word."""
    return bool(word) and word[:1].isupper() and word.casefold() not in _NOT_NAMES


_NAME = re.compile(
    r"(?<![\w'])(?:[A-Z][\w'&.-]*|[0-9]+[A-Za-z]+)"
    r"(?:\s+(?:(?:of|de|la|le|van|von|der|del|da|du)\s+(?:the\s+)?)?"
    r"(?:[A-Z][\w'&.-]*|[0-9]+))*"
)


def named_entities(text: str) -> list[str]:
    """Capitalised word sequences of `text`, as written, in order.

    A sequence loses leading and trailing function words ("Yesterday", "The", "I"),
    month and weekday names, and a possessive `'s`; "University of Texas" stays whole.
    """
    found: list[str] = []
    for match in _NAME.finditer(_clean(text)):
        words = match.group(0).split()
        while words and words[0].casefold() in _NOT_NAMES:
            words.pop(0)
        while words and words[-1].casefold() in _NOT_NAME_ENDS:
            words.pop()
        if not words:
            continue
        name = " ".join(words)
        name = re.sub(r"'s$|'$", "", name).rstrip(".")
        if name and name.casefold() not in _NOT_NAMES:
            found.append(name)
    return found


def _bare(word: str) -> str:
    """`word` without a possessive `'s` or a trailing `'`."""
    return word[:-2] if word.endswith("'s") else word.rstrip("'")


def _content(word: str) -> bool:
    """Whether `word` (lower case) may be part of a query's content n-gram."""
    base = _bare(word)
    return not (
        base in FUNCTION_WORDS
        or not base
        or base.endswith("n't")
        or (base.isdigit() and len(base) < 3)
    )


def query_entities(text: str) -> list[str]:
    """Normalised entity names `text` (a search query) may mention, longest first.

    Named entities (capitalised sequences) and the content-word n-grams (1-3 words,
    runs of words between stopwords), each also with its last word made singular, and
    possessive phrases both whole ("caroline's sister") and split ("caroline",
    "sister"). Deduplicated; longest (most words, then characters) first.
    """
    out: dict[str, None] = {}

    def add(phrase: str) -> None:
        name = normalize_entity(phrase)
        if not name or name in _NOT_NAMES:
            return
        out[name] = None
        words = name.split(" ")
        if words[-1].isalpha():
            words[-1] = singular(words[-1])
            out[" ".join(words)] = None

    for name in named_entities(text):
        add(name)
    words = [m.group(0).casefold() for m in _TOKEN.finditer(_clean(text))]
    for content, group in groupby(words, key=_content):
        if not content:
            continue
        run = list(group)
        bare = [_bare(w) for w in run]
        for size in (3, 2, 1):
            for start in range(len(run) - size + 1):
                # a possessive may only end the first word of a phrase or the last
                head = run[start : start + size - 1]
                if any(w.endswith("'s") for w in head[1:]):
                    continue
                add(" ".join([*head, bare[start + size - 1]]))
                add(" ".join(bare[start : start + size]))
    return sorted(out, key=lambda n: (-len(n.split(" ")), -len(n)))
