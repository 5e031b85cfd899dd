"""The patterns of the rule-based triple extractor: subjects, verbs and adjuncts.

Data and compiled regular expressions only; `_rules.py` applies them. A verb pattern
is matched right after the subject (and any adverbs) of a clause; its object is the
phrase that follows, up to an adjunct boundary (a preposition, a date, a comma).
"""

from __future__ import annotations

import re
from typing import NamedTuple

KIN = frozenset(
    """
    sister brother mother father mom mum dad mommy daddy parent parents wife husband
    partner spouse fiance fiancee boyfriend girlfriend son daughter child kid baby
    cousin aunt uncle niece nephew grandmother grandfather grandma grandpa grandparent
    friend roommate flatmate neighbor neighbour boss manager colleague coworker mentor
    teacher coach doctor therapist dog cat puppy kitten pet horse parrot rabbit hamster
    stepmother stepfather stepson stepdaughter twin
    """.split()
)
"""Nouns of people and pets `my X` introduces: "my sister Anna" -> (user, has_sister, anna)."""

DEMONYMS = frozenset(
    """
    american canadian mexican brazilian argentinian chilean peruvian colombian cuban
    british english scottish welsh irish french german dutch belgian swiss austrian
    italian spanish portuguese greek turkish polish czech slovak hungarian romanian
    bulgarian serbian croatian ukrainian russian swedish norwegian danish finnish
    icelandic estonian latvian lithuanian chinese japanese korean vietnamese thai
    filipino indonesian malaysian indian pakistani bangladeshi nepalese iranian iraqi
    israeli lebanese syrian egyptian moroccan nigerian kenyan ethiopian ghanaian
    african european asian australian kiwi latino latina hispanic arab jewish muslim
    christian catholic protestant buddhist hindu sikh atheist vegan vegetarian
    """.split()
)
"""Capitalised words after "my sister is" that describe, not name, the person."""
DEMONYM_ENDINGS = ("ese", "ish", "ian", "ean")
"""Endings of nationality words not in `DEMONYMS` ("Maltese", "Kurdish", "Tunisian")."""

KIN_FORMS = (
    {w: w for w in KIN} | {w + "s": w for w in KIN} | {"children": "child", "parents": "parent"}
)

ADVERBS = (
    r"(?:(?:really|also|absolutely|truly|still|now|currently|just|recently|finally|actually"
    r"|already|often|usually|always|sometimes|totally|definitely|especially|mostly|so|very"
    r"|then|once|happily|eventually|originally|even|both|all|first|later)\s+)*"
)

NEGATION = re.compile(
    r"^(?:(?:do|does|did|am|is|are|was|were|have|has|had|will|would|can|could|should)\s+)?"
    r"(?:not|never|no longer|hardly|barely)\b",
    re.IGNORECASE,
)
"""A verb group that is negated: no triple comes from it."""

ADJUNCT_BOUNDARY = re.compile(
    r"\s+(?=(?:on|in|at|from|with|during|since|for|because|when|while|after|before"
    r"|(?:last|next|this|past)\s+(?:week|weekend|month|year|summer|winter|spring|fall|autumn"
    r"|night|evening|morning|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|yesterday|today|tonight|tomorrow|every|ago|until|but|so|which|who|where"
    r"|that|as|if|than|though|although|together|again|back|and then|right now|these days"
    r"|a lot|so much|very much|too|as well|anymore|any more|now|lately|recently"
    r"|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|\d+)"
    r"\s+(?:days?|weeks?|months?|years?|decades?)\s+ago|once|twice|around|about|circa"
    r"|there|here|(?:one|two|three|four|five|\d+)\s+times|like|such\s+as|including"
    r"|over|rather\s+than|instead\s+of"
    r"|to\s+(?!the\b|a\b|an\b)[a-z]+|(?:you|we|they|he|she|i)\s)\b)"
    r"|\s+(?=(?-i:[a-z]{2,}ly)\b(?<!family)(?<!italy)(?<!only)(?<!early)(?<!daily)(?<!holy))"
    r"|\s*[,;:()!?\"]|\s+-\s+|\.(?=\s|$)",
    re.IGNORECASE,
)

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
DATE = re.compile(
    r"\b(?:(?:on|in|since|by|during|until|from)\s+)?(?P<date>"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?(?!\d)"
    rf"|{_MONTH}\s+(?:of\s+)?\d{{4}}"
    r"|\d{4}-\d{2}-\d{2}"
    rf"|(?:last|next|this|past)\s+(?:week|weekend|month|year|summer|winter|spring|fall"
    rf"|autumn|night|evening|morning|{_WEEKDAY})"
    r"|(?:a|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|\d+)\s+"
    r"(?:days?|weeks?|months?|years?|decades?)\s+ago"
    r"|yesterday|today|tonight|tomorrow"
    rf"|(?<!every ){_WEEKDAY}"
    r"|\d{1,4}\s+(?:BC|BCE|AD|CE)"
    r"|(?<=around )(?:1[0-9]{3}|20[0-9]{2})|(?<=circa )(?:1[0-9]{3}|20[0-9]{2})"
    rf"|(?<=in ){_MONTH}|(?<=in early ){_MONTH}|(?<=in late ){_MONTH}"
    r"|(?<=in )(?:1[0-9]{3}|20[0-9]{2})(?:s)?"
    r"|(?<=since )(?:1[0-9]{3}|20[0-9]{2})"
    r"|(?<=by )(?:1[0-9]{3}|20[0-9]{2})"
    r")\b",
    re.IGNORECASE,
)
"""A date or time expression, kept as text ("8 May 2023", "last week", "2019")."""


_NAME = r"(?-i:[A-Z][\w'&.\u2024-]*(?:\s+[A-Z][\w'&.\u2024-]*)*)"
"""A capitalised name ("New York"), whatever the verb pattern's case flag."""


class Verb(NamedTuple):
    """A verb pattern: `regex` matches the verb group, `relation` names the triple."""

    regex: re.Pattern[str]
    relation: str
    kind: str = "object"
    """"object": the phrase after the verb; "list": coordinated objects ("X and Y");
    "kin": "a sister (named) Anna"; "passive": "by Y" names the subject; "poss": the
    subject is someone's relative ("Anna is my sister"); "of": "the N of Y" -> n_of;
    "inverse": the object is the triple's subject ("Y employs X" -> (x, works_at, y))."""


def _v(pattern: str, relation: str, kind: str = "object") -> Verb:
    return Verb(re.compile(rf"^(?:{pattern})(?:\s+|(?<=\s)|$)", re.IGNORECASE), relation, kind)


def _forms(*bases: str) -> str:
    """Present, third person, past and -ing forms of regular verbs, as one alternation."""
    out: list[str] = []
    for base in bases:
        stem = base[:-1] if base.endswith("e") else base
        out += [base, base + "s", stem + "ed", stem + "ing"]
    return "|".join(out)


_PARTICLE = (
    r"(?:to|that|about|it|this|them|into|out|off|up|down|away|over|back|through|across|on"
    r"|in|around|with|for|by|of|at|from|how|what|when|where|why|if|whether|sure|home)"
)
"""Right after a generic verb: a phrasal verb or a clause follows, not an object."""

_BE = r"(?:am|is|are|was|were|have been|has been|had been|will be|became|become|becomes)"
_PROG = r"(?:(?:am|is|are|was|were)\s+)?"

# Generic transitive verbs: surface forms -> relation (the verb's past tense).
_EVENT_VERBS: dict[str, str] = {
    "founds|founded|co-founded|cofounded": "founded",
    "write|writes|wrote|writing": "wrote",
    "invent|invents|invented": "invented",
    "discover|discovers|discovered": "discovered",
    "paint|paints|painted|painting": "painted",
    "build|builds|built|building": "built",
    "direct|directs|directed": "directed",
    "compose|composes|composed": "composed",
    "create|creates|created|creating": "created",
    "design|designs|designed": "designed",
    "develop|develops|developed|developing": "developed",
    "win|wins|won": "won",
    "adopt|adopts|adopted": "adopted",
    "buy|buys|bought": "bought",
    "join|joins|joined": "joined",
    "attend|attends|attended|attending": "attended",
    "start|starts|started": "started",
    "launch|launches|launched": "launched",
    "release|releases|released": "released",
    "acquire|acquires|acquired": "acquired",
    "meet|meets|met": "met",
    "watch|watches|watched|watching": "watched",
    "read|reads|reading": "read",
    "cook|cooks|cooked|cooking": "cooked",
    "make|makes|made|making": "made",
    "bake|bakes|baked|baking": "baked",
    "maintain|maintains|maintained": "maintained",
    "recommend|recommends|recommended": "recommended",
    "give|gives|gave": "gave",
    "run|runs|ran|running": "ran",
    "finish|finishes|finished|complete|completes|completed": "completed",
    "learn|learns|learned|learnt|learning": "learned",
    "teach|teaches|taught|teaching": "teaches",
    "use|uses|used|using": "uses",
    "lead|leads|led": "led",
    "own|owns|owned": "owns",
    "sell|sells|sold": "sold",
    "eat|eats|ate|eating": "eats",
    "drink|drinks|drank|drinking": "drinks",
    "take|takes|took|taking": "takes",
    "rule|rules|ruled": "ruled",
    "defeat|defeats|defeated": "defeated",
    "replace|replaces|replaced": "replaced",
    "support|supports|supported": "supports",
    "manage|manages|managed|managing": "manages",
    "treat|treats|treated": "treated",
    "diagnose|diagnosed": "diagnosed",
    "volunteer at|volunteers at|volunteered at|volunteering at": "volunteers_at",
}

_PASSIVE = (
    "written|founded|invented|discovered|painted|built|directed|composed|created|designed"
    "|developed|acquired|led|ruled|defeated|replaced|treated|released|launched|maintained"
)
PASSIVE_RELATION = {p: p for p in _PASSIVE.split("|")} | {"written": "wrote"}
"""The relation of "<object> was <participle> by <agent>": (agent, relation, object)."""

VERBS: tuple[Verb, ...] = (
    _v(r"(?:was|were)\s+(?P<passive>" + _PASSIVE + r")\s+by", "", "passive"),
    _v(r"(?:was|were)\s+born\s+(?:and\s+raised\s+)?in", "born_in"),
    _v(r"(?:was|were)\s+born\s+on", "born_on"),
    _v(_PROG + r"(?:" + _forms("live", "reside") + r")\s+with", "lives_with", "list"),
    _v(_PROG + r"(?:" + _forms("live", "reside") + r")\s+in", "lives_in"),
    _v(_PROG + r"(?:stay|stays|stayed|staying)\s+(?:at|in|with)", "stayed_at"),
    _v(r"(?:got|get|gets|was|were|have\s+been|has\s+been|been)\s+promoted\s+to", "promoted_to"),
    _v(r"(?:was|were|got|have\s+been|has\s+been|been)\s+diagnosed\s+with", "diagnosed_with"),
    _v(r"(?:grew\s+up|(?:was|were)\s+raised)\s+in", "grew_up_in"),
    _v(
        r"(?:have\s+|has\s+|had\s+|just\s+)?(?:" + _forms("move", "relocate") + r")"
        r"\s+(?:here\s+|back\s+)?from\s+(?:the\s+)?(?P<src>" + _NAME + r")\s+(?:back\s+)?to",
        "moved_to",
    ),
    _v(
        r"(?:have\s+|has\s+|had\s+|just\s+)?(?:" + _forms("move", "relocate") + r")"
        r"\s+(?:back\s+)?(?:to|into)",
        "moved_to",
    ),
    _v(
        _PROG + r"(?:work|works|worked|working)\s+(?:at|for)"
        r"|(?:got|have|has|had|started|start|landed)\s+(?:a\s+|my\s+|her\s+|his\s+)?"
        r"(?:new\s+)?(?:job|position|role|internship)\s+(?:at|with)"
        r"|(?:was|were|got|am|is|are)\s+(?:hired|employed)\s+(?:at|by)"
        r"|(?:joined|join|joins)\s+(?=(?-i:[A-Z]))"
        r"|(?:teach|teaches|taught|teaching|" + _forms("lecture") + r")\s+at",
        "works_at",
    ),
    _v(r"(?:employ|employs|employed|employing)(?!\s+by\b)", "works_at", "inverse"),
    _v(
        r"(?:am|is|are|was|were|have\s+been|has\s+been|became|become|becomes)\s+"
        r"(?:good\s+|close\s+|best\s+|old\s+)?friends\s+with",
        "has_friend",
        "list",
    ),
    _v(_PROG + r"(?:work|works|worked|working)\s+as", "is_a"),
    _v(
        r"(?:am|is|are|was|were)\s+(?:originally\s+)?from|(?:come|comes|came)\s+from",
        "from",
    ),
    _v(
        r"(?:am|is|are|was|were)\s+(?:\w+\s+)?(?:based|located|headquartered|situated)\s+in",
        "located_in",
    ),
    _v(_BE + r"\s+(?P<age>\d{1,3})\s+(?:years?\s+old|year-old)", "age"),
    _v(
        r"(?:am|is|are|was|were|got|get|gets|getting)\s+(?:married|engaged)\s+to"
        r"|(?:married|marry|marries|wed)",
        "married",
    ),
    _v(
        r"(?:do|does|did)\s+not\s+(?:like|love|enjoy)"
        r"|(?:hate|hates|hated|dislike|dislikes|disliked|detest|detests|cannot\s+stand"
        r"|can\s+not\s+stand|(?:am|is|are)\s+not\s+(?:a\s+)?(?:big\s+)?fan\s+of)",
        "dislikes",
        "list",
    ),
    _v(r"(?:am|is|are|was|were)\s+(?:severely\s+|very\s+)?allergic\s+to", "allergic_to", "list"),
    _v(
        r"(?:like|likes|liked|love|loves|loved|enjoy|enjoys|enjoyed|adore|adores|adored"
        r"|prefer|prefers|preferred|(?:am|is|are|was|were)\s+(?:really\s+)?into"
        r"|(?:am|is|are|was|were)\s+(?:a\s+)?(?:big\s+|huge\s+)?fans?\s+of"
        r"|(?:am|is|are|was|were)\s+(?:passionate\s+about|obsessed\s+with|addicted\s+to"
        r"|crazy\s+about|in\s+love\s+with))",
        "likes",
        "list",
    ),
    _v(
        r"(?:(?:have|has|had)\s+been\s+to|(?:visited|visit|visits|visiting|toured|explored)"
        r"|(?:went|go|goes|going|traveled|travelled|flew|drove|headed|came)"
        r"\s+(?:back\s+)?(?:to|on\s+a\s+trip\s+to|on\s+vacation\s+to)"
        r"|(?:took|take|takes)\s+a\s+trip\s+to)",
        "visited",
        "list",
    ),
    _v(
        r"(?:(?:am|is|are)\s+(?:going|planning|hoping)\s+to|(?:will|plan\s+to|plans\s+to"
        r"|want\s+to|wants\s+to|hope\s+to|hopes\s+to|would\s+like\s+to))"
        r"\s+(?:visit|go\s+to|travel\s+to|fly\s+to|move\s+to)",
        "plans_to_visit",
    ),
    _v(
        r"(?:studied|study|studies|studying)\s+at|(?:graduated|graduate|graduates)\s+from"
        r"|(?:went|go|goes)\s+to\s+(?:school|college|university)\s+at",
        "studied_at",
    ),
    _v(
        _PROG + r"(?:studied|study|studies|studying|majored\s+in|major\s+in|majoring\s+in)",
        "studies",
    ),
    _v(_PROG + r"(?:play|plays|played|playing)", "plays", "list"),
    _v(r"(?:speak|speaks|spoke|speaking)", "speaks", "list"),
    _v(
        r"(?P<have>have\s+got|has\s+got|have|has|had|got|own|owns|adopted|adopt)\s+"
        r"(?!(?:been|got|had|done|to|into|off|out|up|fun|time|a\s+blast|the\s+chance|always"
        r"|never|just|already|ever|also|really|still|finally|recently|lately)\b)",
        "has",
        "kin",
    ),
    _v(r"(?:is|was|are|were)\s+(?:the\s+)?(?:new\s+)?(?=[\w-]+(?:\s+[\w-]+)?\s+of\s+)", "", "of"),
    _v(
        r"(?:is|was|are|were)\s+"
        r"(?=(?:my|our|your|his|her|their|(?:the\s+)?user's|(?-i:[A-Z])[\w'.-]*'s)\s+)",
        "",
        "poss",
    ),
    _v(
        r"(?:is|are|was|were)\s+(?:written|built|made|implemented|coded)\s+(?:in|with)",
        "written_in",
    ),
    _v(r"(?:runs?|ran)\s+on", "runs_on"),
    _v(
        _BE + r"\s+(?:a|an)(?!\s+(?:lot|bit|little|few|couple|great\s+time|good\s+time)\b)",
        "is_a",
    ),
    *(
        _v(_PROG + r"(?:" + surfaces + r")(?!\s+" + _PARTICLE + r"\b)", rel, "list")
        for surfaces, rel in _EVENT_VERBS.items()
    ),
)
"""Verb patterns in the order they are tried: the first that matches wins."""
