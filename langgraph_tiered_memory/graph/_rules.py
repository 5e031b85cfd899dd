"""The rule-based triple extractor's engine: one text in, normalised triples out.

See `langgraph_tiered_memory.graph.extract` for what it recognises. Pure functions,
no I/O. A text is split into sentences (questions are skipped), sentences into clauses
(at "and"/"but"/";" before a new subject), and each clause is read as subject, verb
group and object, followed by adjuncts (dates, places, "with <Name>"). A verb pattern
(`VERBS`, the first that matches wins) is matched right after the subject and any
adverbs; its object is the phrase that follows, up to an adjunct boundary (a
preposition, a date, a comma).

Fact-style phrasings are read so that chains of them join in the graph ("Dave is an
engineer at Google." + "Google is headquartered in Mountain View."): an appositive
after a name is a clause of its own, "the headquarters of Y is in Z" reads as "Y is
headquartered in Z", and "is a(n) <job> at/for <Name>" names an employer, not a place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from langgraph_tiered_memory.graph._rules_text import (
    FUNCTION_WORDS,
    entity_name,
    is_name,
    named_entities,
)
from langgraph_tiered_memory.graph.types import Triple, normalize_entity, normalize_relation

DEFAULT_SPEAKER = "user"
"""Who "I" and "my" are when a text has no speaker."""

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
    american mexican cuban welsh french german dutch swiss greek czech slovak icelandic thai
    filipino pakistani bangladeshi iraqi israeli moroccan kenyan african kiwi latino latina
    hispanic arab muslim catholic protestant buddhist hindu sikh atheist vegan
    """.split()
)
DEMONYM_ENDINGS = ("ese", "ish", "ian", "ean")
"""Capitalised words after "my sister is" that describe, not name, the person: those in
`DEMONYMS` and those with these endings ("Chinese", "Kurdish", "Italian", "Korean")."""

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


_SAID = re.compile(
    r'^\s*(?P<speaker>[^\s",:][^",:\n]{0,60}?)\s+(?:said|says|wrote|asked|replied),?\s*'
    r'["\u201c](?P<quote>.*?)["\u201d]\s*(?:and\s+shared\b.*)?$',
    re.DOTALL,
)
_CONTRACTIONS = (
    (re.compile(r"\b(I)'m\b", re.IGNORECASE), r"\1 am"),
    (re.compile(r"\b(can)'t\b", re.IGNORECASE), r"\1 not"),
    (re.compile(r"\b(w)on't\b", re.IGNORECASE), r"\1ill not"),
    (re.compile(r"\b(\w+)n't\b", re.IGNORECASE), r"\1 not"),
    (re.compile(r"\b(I|we|you|they|he|she)'ve\b", re.IGNORECASE), r"\1 have"),
    (re.compile(r"\b(I|we|you|they|he|she)'ll\b", re.IGNORECASE), r"\1 will"),
    (re.compile(r"\b(I|we|you|they|he|she)'d\b", re.IGNORECASE), r"\1 would"),
    (re.compile(r"\b(we|you|they)'re\b", re.IGNORECASE), r"\1 are"),
    (re.compile(r"\b(he|she|it|that|there|what|who|here)'s\b", re.IGNORECASE), r"\1 is"),
    (re.compile(r"\b(let)'s\b", re.IGNORECASE), r"\1 us"),
)
_SENTENCE = re.compile(r"(?<=[.!?])[\"\u201d)]?\s+|\n+")
_CONTINUED_VERBS = (
    r"(?:(?:now|later|then|also|currently|still|eventually|recently|subsequently)\s+)?"
    r"(?:lives|lived|works|worked|moved|relocated|joined|studied|graduated|teaches|taught"
    r"|lectures|founded|co-founded|cofounded|married|owns|owned|grew\s+up|was\s+born"
    r"|is\s+based|became)\b"
)
_CONTINUED = re.compile("^" + _CONTINUED_VERBS, re.IGNORECASE)
"""A clause that starts with one of these verbs (after "and") shares the clause's
subject before it: "Samir was born in Cairo and now lives in Dubai"."""
_CLAUSE = re.compile(
    r"\s*;\s*|,?\s+(?:and|but|so|because|since|while|although|though|then|and then"
    r"|when|after|before|where)\s+(?=(?:I|we|my|our|he|she|they|his|her|their)\b)"
    r"|\s+(?:said|says|thinks|think|told\s+me|knows|know)\s+(?:that\s+)?(?=(?:I|we|my|our)\b)"
    r"|,?\s+(?=who\s)"
    r"|,?\s+and\s+(?=" + _CONTINUED_VERBS + r")",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:(?:also|actually|btw|by the way|oh|well|so|and|but|anyway|hey|hi|yeah|yes|no|ok"
    r"|okay|honestly|guess what|fun fact|plus|wow|haha|lol|um|hmm|now|then|later|recently"
    r"|finally|luckily|sadly|unfortunately|fortunately|in fact|of course)\b[,!:.]?\s*)+",
    re.IGNORECASE,
)
_NAME_RUN = (
    r"[A-Z][\w'&.\u2024-]*(?:\s+(?:(?:of|de|la|van|von|der|del|da|du)\s+(?:the\s+)?)?"
    r"[A-Z][\w'&.\u2024-]*)*"
)
_USER = r"(?i:(?:the\s+)?user)"
"""How a memory written about the user names them ("The user lives in ...")."""
_OWNER = r"(?P<poss>(?i:my|our|his|her|their)|(?P<owner>" + _USER + "|" + _NAME_RUN + r")'s)\s+"
"""Whose relative follows: "my", "the user's", "<Name>'s"."""
_KIN_ADJECTIVE = r"(?:older|younger|little|big|best|elder|baby|new|late)"
_ROLE = re.compile(r"^\s*(?P<role>user|human|assistant|ai|system)\s*:\s*", re.IGNORECASE)
"""A transcript line's role prefix ("User: ...", "Assistant: ...")."""
_USER_ROLES = frozenset({"user", "human"})
_VERBISH = (
    r"(?:\w+s|\w+ed|is|are|was|were|has|have|had|and|or|just|also|really|still|never|not"
    r"|do|does|did|will|would|can|could|got|went|ran|met|took|made|left|began|became)\b"
)
_SUBJECT = re.compile(
    r"^(?:"
    r"(?P<i>I|(?i:we)|" + _USER + r")\b"
    r"|" + _OWNER + r"(?P<noun>(?:(?:" + _KIN_ADJECTIVE + r"|step|favou?rite)\s+)?"
    r"[a-z]+(?:\s+(?!" + _VERBISH + r")[a-z]+)?)(?:,?\s+(?P<kname>" + _NAME_RUN + r"))?,?"
    r"|(?P<pron>(?i:he|she|they)|who)\b"
    r"|(?P<name>" + _NAME_RUN + r")"
    r")(?:\s+|$)",
)
_RELATIVE = re.compile(
    _OWNER + r"(?:" + _KIN_ADJECTIVE + r"\s+)?(?P<noun>[a-z]+)"
    r"(?:,?\s+(?P<kname>" + _NAME_RUN + r"))?"
)
_HAVE_KIN = re.compile(
    r"(?:a|an|one|two|three|\d+|her|his|my|new|little|baby|younger|older|big)\s+"
    r"(?:(?:little|baby|younger|older|big|new)\s+)?"
    r"(?P<kin>" + "|".join(sorted(KIN_FORMS, key=len, reverse=True)) + r")"
    r"(?:\s+(?:boy|girl))?\b(?:,?\s+(?:named|called)?\s*(?P<kname>" + _NAME_RUN + r"))?"
)
_WITH_RELATIVE = re.compile(
    r"\bwith\s+(?P<who>" + _OWNER + r"(?:" + _KIN_ADJECTIVE + r"\s+)?[a-z]+)"
)
_NOT_AN_OBJECT = re.compile(
    r"(?:how|what|when|where|why|whether|if|that|who|you|i|we|they|he|she|it|there"
    r"|been|got|had|was|were|is|are|went|made|took|did|done|put|found|gave|said"
    r"|(?-i:(?!(?:bed|need|seed|feed|speed|breed|red|shed|sled)\b)[a-z]+ed))\b",
    re.IGNORECASE,
)
"""The first word of a clause or verb phrase, not of an object ("love how you ...",
"met investors and got advice"); a capitalised word in -ed is a name ("Ahmed")."""
_NOT_SUBJECT_WORDS = frozenset(
    """
    looks look sounds sound seems seem feels feel feeling started starting been gotta
    thanks thank check guess hope glad love congrats congratulations wish let lets here
    sorry nice great cool awesome wow yay woohoo omg anyway bet sure totally definitely
    enjoy keep take make have try go come stay remember imagine say tell ask
    """.split()
)
"""Capitalised at the start of a sentence, these are not names."""
_MODIFIER = re.compile(r"\s+(?!(?:" + "|".join(sorted(FUNCTION_WORDS)) + r")\b)[a-z]")
_PRONOUN_OBJECTS = frozenset(
    "it them this that these those him her me you us one something everything anything"
    " nothing someone it's there here".split()
)
_PLACE = re.compile(r"\b(?P<prep>in|at|from|with)\s+(?:the\s+)?(?P<name>" + _NAME_RUN + r")")
_SPLIT_LIST = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|as well as)\s+")
_IS_NAMED = re.compile(
    r"(?:is|was)\s+(?P<called>(?:called|named)\s+)?(?P<name>" + _NAME_RUN + r")\s*",
    re.IGNORECASE,
)
"""The rest of "my sister is Anna" / "my dog is called Rex": the relative's name."""
_MAX_OBJECT_WORDS = 6
_SUBJECT_ANCHORED = frozenset("is_a age from lives_in lives_with speaks studies".split())
"""Relations whose dates and places qualify the subject, not the object."""
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|Mt|vs|etc|e\.g|i\.e)\.", re.IGNORECASE)

_APPOSITIVE = re.compile(
    r"^(?P<name>" + _NAME_RUN + r"),\s+(?P<app>(?i:the|a|an|my|our|his|her|their)\s+[^,]{1,60}?),"
    r"\s+(?P<rest>[a-z].*)$",
    re.DOTALL,
)
"""`Marcus, the CEO of Helix Labs, lives in Austin`: a name, a noun phrase, a verb."""
_OFFICE = r"(?i:headquarters|head\s+office|main\s+office|hq|head\s+quarters)"
_IS_IN = r"\s+(?i:is|are|was|were)\s+(?i:(?:located|based|situated)\s+)?in\s+(?P<rest>.+)$"
_HQ_OF = re.compile(
    r"^(?i:the\s+)?" + _OFFICE + r"\s+of\s+(?:the\s+)?(?P<y>" + _NAME_RUN + r")" + _IS_IN,
    re.DOTALL,
)
_HQ_POSS = re.compile(
    r"^(?:(?i:the)\s+)?(?P<y>" + _NAME_RUN + r")'s?\s+" + _OFFICE + _IS_IN, re.DOTALL
)
_ROLES = frozenset(
    """
    nurse chef cook pilot ceo cto cfo coo cmo vp president intern analyst developer programmer
    teacher professor lecturer tutor instructor doctor surgeon vet paramedic lawyer attorney
    solicitor barrister accountant consultant manager director designer architect editor writer
    reporter researcher barista cashier clerk waiter waitress bartender mechanic officer
    executive head chair founder co-founder cofounder owner partner associate employee staffer
    secretary assistant coordinator administrator coach trainer librarian curator producer agent
    representative rep apprentice trainee worker postdoc fellow resident firefighter plumber
    carpenter photographer actor actress dancer singer driver guard janitor
    """.split()
)
"""Nouns of jobs (besides those in -ist, -ician, -eer): "a <job> at <Name>" is where
someone works."""
_STUDENTS = frozenset({"student", "pupil", "undergraduate", "undergrad"})
_AT_ORG = re.compile(r"^\s+(?:at|for)\s+(?:the\s+)?(?P<org>" + _NAME_RUN + r")")


@dataclass
class _State:
    speaker: str
    last_person: str | None = None
    subject: str | None = None
    """The subject of the sentence's last clause ("... and now lives in X" shares it)."""
    out: dict[Triple, None] = field(default_factory=dict)

    def add(self, subject: str, relation: str, obj: str) -> None:
        if not subject or not obj or not relation or subject == obj:
            return
        triple = Triple(
            normalize_entity(subject), normalize_relation(relation), normalize_entity(obj)
        )
        if triple.subject and triple.relation and triple.object:
            self.out[triple] = None


def user_lines(text: str) -> str:
    """What the user says in `text`: a transcript keeps its user's lines only.

    In a text with role prefixes ("User: ..."/"Human: ...", "Assistant: ..."/"AI: ...",
    "System: ..."), a line belongs to the role it starts with, or to the role of the line
    before it; the user's lines are kept (without the prefix), the others dropped (what
    the assistant says is no fact the user stated). Lines before the first prefix stay.
    A text without role prefixes is returned as it is.
    """
    lines = text.splitlines()
    if not any(_ROLE.match(line) for line in lines):
        return text
    kept: list[str] = []
    keep = True
    for line in lines:
        role = _ROLE.match(line)
        if role is not None:
            keep = role.group("role").casefold() in _USER_ROLES
            line = line[role.end() :]
        if keep:
            kept.append(line)
    return "\n".join(kept)


def split_quoted(text: str) -> tuple[str | None, str]:
    """(speaker, quote) of `Name said, "..."`, else (None, text)."""
    match = _SAID.match(text)
    if match is None:
        return None, text
    return match.group("speaker").strip(), match.group("quote")


def _expand(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = _ABBREVIATION.sub(lambda m: m.group(1) + "\u2024", text)
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return text


def _rewrite(clause: str) -> list[str]:
    """The clauses `clause` reads as: itself, or its headquarters and appositive forms."""
    hq = _HQ_OF.match(clause) or _HQ_POSS.match(clause)
    if hq is not None and is_name(hq.group("y").split()[0]):
        return [f"{hq.group('y')} is headquartered in {hq.group('rest')}"]
    app = _APPOSITIVE.match(clause)
    if app is not None and is_name(app.group("name").split()[0]):
        name = app.group("name")
        return [f"{name} is {app.group('app')}", f"{name} {app.group('rest')}"]
    return [clause]


def _employer(obj: str, tail: str) -> tuple[str, str, str] | None:
    """(works_at or studied_at, organisation, rest of `tail`) for "a <job> at <Name> ..."."""
    words = obj.split()
    head = words[-1] if words else ""
    if head in _STUDENTS:
        relation = "studied_at"
    elif head in _ROLES or head.endswith(("ist", "ician", "eer")):
        relation = "works_at"
    else:
        return None
    match = _AT_ORG.match(tail)
    if match is None or not is_name(match.group("org").split()[0]):
        return None
    org = entity_name(match.group("org"))
    return (relation, org, tail[match.end() :]) if org else None


def _kin(noun: str) -> str | None:
    """The relative `noun` ends with ("older sister" -> sister), if any."""
    words = noun.casefold().split()
    return KIN_FORMS.get(words[-1]) if words else None


def _owner(poss: str, named: str | None, state: _State) -> str | None:
    """Whose relative `poss` (a possessive, or `named`'s) is; None: an unknown "his"."""
    if named:
        entity = entity_name(named)
        return state.speaker if entity == DEFAULT_SPEAKER else entity  # "the user's"
    return state.speaker if poss.casefold() in ("my", "our") else state.last_person


def _names_person(match: re.Match[str]) -> bool:
    """Whether "is <Name>" names the relative, not a nationality ("is Norwegian")."""
    if match.group("called"):
        return True
    name = match.group("name")
    first = name.split()[0]
    if not is_name(first) or DATE.fullmatch(name):
        return False
    return len(name.split()) > 1 or not any(
        part in DEMONYMS or part.endswith(DEMONYM_ENDINGS)
        for part in first.casefold().split("-")  # "Italian-American"
    )


def _subject(clause: str, state: _State) -> tuple[str | None, str]:
    """The clause's subject entity (None when it has none) and the rest of the clause."""
    match = _SUBJECT.match(clause)
    if match is None:
        return None, clause
    rest = clause[match.end() :]
    if match.group("i"):  # "I", "we", "the user"
        return state.speaker, rest
    if match.group("pron"):
        return state.last_person, rest
    if match.group("name") is not None:
        words = match.group("name").split()
        if words[0] == "The" and len(words) > 1:
            words = words[1:]
        first = words[0].casefold()
        if (
            first in _NOT_SUBJECT_WORDS
            or "'" in first
            or (len(words) == 1 and first.endswith("ing"))
            or not is_name(words[0])
            or match.group("name").casefold() in FUNCTION_WORDS
        ):
            return None, clause
        name = entity_name(" ".join(words))
        state.last_person = name
        return name, rest
    owner = _owner(match.group("poss"), match.group("owner"), state)
    if owner is None:
        return None, rest
    noun = match.group("noun")
    kin = _kin(noun)
    kname = match.group("kname")
    words = noun.split()
    if kin is None and len(words) == 2 and not kname and _kin(words[0]):
        # "my parents live ...": the second word is the verb
        noun, rest = words[0], words[1] + " " + rest
        kin = _kin(noun)
    if kin is None:
        if kname:
            return None, rest
        if not re.match(r"(?:is|are|was|were)\s", rest, re.IGNORECASE):
            # "our team uses X": the owner's thing does something
            return f"{owner}'s {entity_name(noun)}", rest
        # "my favourite food is X", "my birthday is ...": the noun names the relation
        if re.match(r"favou?rite\s+(.+)", noun):
            return owner, "@likes " + rest
        return owner, "@" + normalize_relation(noun) + " " + rest
    named = _IS_NAMED.fullmatch(rest) if not kname else None
    if named is not None and _names_person(named):
        # "my sister is Anna", "the user's dog is named Biscuit"
        kname, rest = named.group("name"), ""
    if kname and is_name(kname.split()[0]):
        person = entity_name(kname)
    else:
        if kname:
            rest = kname + " " + rest
        person = f"{owner}'s {kin}"
    state.add(owner, f"has_{kin}", person)
    state.last_person = person
    return person, rest


def _object_phrase(text: str) -> tuple[str, str]:
    """The object phrase at the start of `text` and what follows it."""
    match = ADJUNCT_BOUNDARY.search(text)
    if match is None:
        return text.strip(), ""
    return text[: match.start()].strip(), text[match.start() :]


def _relative(phrase: str, state: _State) -> str | None:
    """`my sister (Anna)` as an object: the person, with its has_<kin> triple added."""
    match = _RELATIVE.fullmatch(phrase)
    if match is None:
        return None
    kin = _kin(match.group("noun"))
    if kin is None:
        return None
    owner = _owner(match.group("poss"), match.group("owner"), state)
    if owner is None:
        return None
    kname = match.group("kname")
    person = entity_name(kname) if kname else f"{owner}'s {kin}"
    state.add(owner, f"has_{kin}", person)
    return person


def _objects(phrase: str, kind: str, state: _State, *, article: bool = False) -> list[str]:
    """The object entities of `phrase`.

    `article`: the phrase followed "a"/"an" ("is a retired teacher"), so a first word
    in -ed is an adjective, not a verb.
    """
    parts = _SPLIT_LIST.split(phrase) if kind == "list" else [phrase]
    names: list[str] = []
    for part in parts:
        part = re.sub(
            r"^(?:going\s+to|going|to|(?:me|us|him|her|them)(?=\s+\w+\s+\w))\s+",
            "",
            part.strip(),
            flags=re.IGNORECASE,
        )
        if not part or part.casefold() in _PRONOUN_OBJECTS:
            continue
        person = _relative(part, state)
        if person is not None:
            names.append(person)
            continue
        if len(part.split()) > _MAX_OBJECT_WORDS:
            continue
        not_object = _NOT_AN_OBJECT.match(part)
        if not_object and not (
            article and len(part.split()) > 1 and part.endswith("ed", 0, not_object.end())
        ):
            continue
        name = entity_name(part)
        if name and name not in FUNCTION_WORDS:
            names.append(name)
    return names


def _adjuncts(anchor: str, subject: str, text: str, state: _State) -> None:
    for match in DATE.finditer(text):
        state.add(anchor, "date", normalize_entity(match.group("date")))
    for match in _PLACE.finditer(text):
        name = match.group("name")
        if not is_name(name.split()[0]) or DATE.fullmatch(name):
            continue
        if _MODIFIER.match(text, match.end()):  # "in the LGBTQ community": not a name
            continue
        prep = match.group("prep").casefold()
        entity = entity_name(name)
        if prep == "with":
            state.add(subject, "with", entity)
            state.last_person = entity
        else:
            state.add(anchor, "located_in" if prep in ("in", "at") else "from", entity)
    for match in _WITH_RELATIVE.finditer(text):
        person = _relative(match.group("who"), state)
        if person is not None:
            state.add(subject, "with", person)


def _verb(subject: str, rest: str, verb: Verb, match: re.Match[str], state: _State) -> list[str]:
    """Add the verb's triples; the entities a leading adjunct qualifies."""
    after = rest[match.end() :]
    phrase, tail = _object_phrase(after)
    relation = verb.relation
    groups = match.groupdict()
    if groups.get("src"):  # "moved from X to Y"
        state.add(subject, "moved_from", entity_name(groups["src"]))
    if verb.kind in ("passive", "inverse"):  # "X was written by Y", "Y employs X"
        if verb.kind == "passive":
            relation = PASSIVE_RELATION[groups["passive"].casefold()]
        for obj in _objects(phrase, "list", state):
            state.add(obj, relation, subject)
        _adjuncts(subject, subject, tail, state)
        return [subject]
    if groups.get("age"):
        state.add(subject, "age", groups["age"])
        _adjuncts(subject, subject, after, state)
        return [subject]
    if verb.kind == "poss":  # "Anna is my sister": the subject is someone's relative
        owner_match = re.match(r"(my|our|your|his|her|their|(.+?)'s)\s+(.+)", phrase)
        if owner_match is None:
            return [subject]
        owner = _owner(owner_match.group(1), owner_match.group(2), state)
        noun = owner_match.group(3)
        kin = _kin(noun)
        if owner and kin:
            state.add(owner, f"has_{kin}", subject)
        elif owner and len(noun.split()) <= 2:
            state.add(owner, normalize_relation(noun), subject)
        _adjuncts(subject, subject, tail, state)
        return [subject]
    if verb.kind == "of":
        of = re.match(r"(?P<n>[\w-]+(?:\s+[\w-]+)?)\s+of\s+(?P<y>.+)", phrase)
        if of is None:
            return [subject]
        noun = re.sub(
            r"^(?:an?\s+(?!(?:kind|sort|type|lot|bit|couple|piece)\b))?"
            r"(?:(?:\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|last|current|former)\s+)?",
            "",
            of.group("n"),
            flags=re.IGNORECASE,
        )
        relation = normalize_relation(noun) + "_of"
        phrase = of.group("y")
    if verb.kind == "kin":
        kin_match = _HAVE_KIN.match(phrase)
        if kin_match:  # its `kin` group is a key of KIN_FORMS
            kin = KIN_FORMS[kin_match.group("kin")]
            kname = kin_match.group("kname")
            if kname and is_name(kname.split()[0]):
                person = entity_name(kname)
                state.add(subject, f"has_{kin}", person)
                state.last_person = person
            else:
                person = kin
                state.add(subject, "has", kin)
            _adjuncts(person, subject, tail, state)
            return [person]
        have = match.group("have").casefold()
        if have in ("had", "got"):  # "had a great time", "got the idea": no possession
            _adjuncts(subject, subject, tail, state)
            return [subject]
        relation = "adopted" if have.startswith("adopt") else "has"
    article = relation == "is_a" and bool(re.search(r"\b(?:a|an)\s*$", match.group(0), re.I))
    objects = _objects(phrase, verb.kind, state, article=article)
    for obj in objects:
        state.add(subject, relation, obj)
    works = _employer(objects[-1], tail) if relation == "is_a" and objects else None
    if works is not None:  # "is an engineer at Google": where, not a place
        state.add(subject, works[0], works[1])
        _adjuncts(works[1], subject, works[2], state)
        return [subject]
    # a date or place qualifies the event's object; a class ("is_a nurse in Leeds"),
    # a bare attribute or an objectless verb leaves it to the subject
    anchors = objects if objects and relation not in _SUBJECT_ANCHORED else [subject]
    for anchor in anchors:
        _adjuncts(anchor, subject, tail, state)
    return anchors


def _clause(clause: str, state: _State) -> None:
    clause = _FILLER.sub("", clause.strip())
    # a leading date or place adjunct ("Last week, I ...", "In 2019 we ...")
    lead = re.match(r"^(?P<adj>[^,]{1,40}),\s+(?=(?:I|we|my|[A-Z]))", clause)
    leading = ""
    if lead and DATE.search(lead.group("adj")):
        leading, clause = lead.group("adj"), clause[lead.end() :]
    else:
        date = DATE.match(clause)
        if date is not None:
            leading, clause = date.group(0), clause[date.end() :].lstrip(", ")
            clause = _FILLER.sub("", clause)
    subject, rest = _subject(clause, state)
    if subject is None and state.subject and _CONTINUED.match(clause):
        subject, rest = state.subject, clause  # "... and now lives in Dubai"
    if subject is None:
        return
    state.subject = subject
    from_name = bool(re.match(r"(?:The\s+)?[A-Z]", clause)) and not re.match(
        r"(?:I|We|My|Our|His|Her|Their|He|She|They|(?i:(?:the\s+)?user))\b", clause
    )
    rest = re.sub(r"^" + ADVERBS, "", rest, flags=re.IGNORECASE)
    if rest.startswith("@"):  # "my <noun> is ..."
        relation, _, rest = rest[1:].partition(" ")
        be = re.match(r"(?:is|are|was|were)\s+(?:on\s+)?", rest, re.IGNORECASE)
        if be is None or NEGATION.match(rest[be.end() :]):
            return
        phrase, tail = _object_phrase(rest[be.end() :])
        for obj in _objects(phrase, "list", state):
            state.add(subject, relation, obj)
        _adjuncts(subject, subject, tail, state)
        return
    if NEGATION.match(rest) and not re.match(
        r"(?:do|does|did)\s+not\s+(?:like|love|enjoy)|(?:am|is|are)\s+not\s+(?:a\s+)?"
        r"(?:big\s+)?fan|can\s*not\s+stand",
        rest,
        re.IGNORECASE,
    ):
        return
    if from_name and re.match(r"like\s", rest):  # "Moments like this ...": no verb
        return
    for verb in VERBS:
        match = verb.regex.match(rest)
        if match is not None:
            anchors = _verb(subject, rest, verb, match, state)
            for anchor in anchors if leading else ():
                _adjuncts(anchor, subject, leading, state)
            return
    _adjuncts(subject, subject, leading + " " + rest, state)


def _mentioned(sentence: str, name: str) -> bool:
    """Whether `name` is mentioned, not just capitalised first or called by (vocative)."""
    at = sentence.find(name)
    if at <= 0 or DATE.fullmatch(name):
        return False
    before = sentence[:at].rstrip()
    after = sentence[at + len(name) :].lstrip()
    if before[-1:] in ",:;-" and (after[:1] in ",!.?" or not after):
        return False  # "Thanks, Mel!"
    return not _FILLER.fullmatch(before + " ")


def extract_text(text: str, speaker: str | None, *, mentions: bool = False) -> list[Triple]:
    """The triples of one text; "I"/"my" are `speaker` (else the quoted one, else "user").

    With `mentions`, every named entity of a statement (not a question) that no
    triple names yet adds (speaker, mentions, entity).
    """
    quoted, body = split_quoted(text)
    who = speaker if speaker is not None else quoted
    state = _State(speaker=entity_name(who or "") or DEFAULT_SPEAKER)
    for sentence in _SENTENCE.split(_expand(user_lines(body))):
        sentence = sentence.strip().strip('"\u201c\u201d')
        if not sentence or sentence.endswith("?"):
            continue
        state.subject = None
        for clause in _CLAUSE.split(sentence.rstrip(".!")):
            if clause and clause.strip():
                for part in _rewrite(_FILLER.sub("", clause.strip())):
                    _clause(part, state)
        if mentions:
            named = {e for t in state.out for e in (t.subject, t.object)}
            for name in named_entities(sentence):
                entity = entity_name(name)
                if (
                    entity
                    and not entity[:1].isdigit()
                    and entity not in named
                    and _mentioned(sentence, name)
                ):
                    state.add(state.speaker, "mentions", entity)
    return list(state.out)
