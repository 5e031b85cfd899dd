"""Extraction: turn a conversation into long-term memories that update instead of pile up.

`extract_memories(store, namespace, messages)` (and its async twin `aextract_memories`)
finds the memories worth keeping in `messages`, compares each with the similar memories
already stored in `namespace`, and adds, updates, deletes or leaves them, so a fact
stated twice is stored once and a changed fact or preference replaces the old one.

With a model (any `BaseChatModel` that supports `with_structured_output`, or an
`init_chat_model` string):

1. the model extracts candidates (`ExtractedMemory`: content, memory_type, importance)
   with `EXTRACTION_PROMPT`;
2. each candidate is compared with the stored memories of `namespace` that are most
   similar to it, that have its exact text, or that fill the same slot (see below);
3. a candidate whose text (case, spacing and punctuation aside) is already stored is a
   NOOP without asking; one with nothing similar stored is added without asking;
   otherwise the model decides (`MemoryDecision`, with `DECISION_PROMPT`): ADD, UPDATE
   a memory with merged content, DELETE a contradicted memory (the candidate takes its
   place) or NOOP.

A decision naming a memory that was not offered to the model is refused (logged,
reported in `ExtractionResult.rejected`) and the heuristic decides instead: extraction
never touches another key or namespace. A malformed answer (unparseable, or not the
schema) is logged as a warning and the heuristic path takes over: for the whole run
when it is the extraction call's, for that candidate when it is a decision's.

Without a model (the heuristic path), the first-person facts and preferences of the
user's messages become memories: "I live in ...", "I moved to ...", "I am ...",
"I'm from ...", "I work as/at ...", "my X is Y", "I like/love/enjoy/prefer ...",
"I hate/don't like ...", and anything after "remember that ...". Facts are `fact`,
likes and favourites `preference`. Importance is 0.5, +0.1 for who the user is
(residence, origin, work, name, age), +0.3 when the user says "remember" or
"important". Each candidate is then decided:

- the same text is stored: NOOP;
- a memory fills the same *slot* (residence, employer, `my favourite colour`, the
  liking of one thing, ...): NOOP when the value is the same, else DELETE it and
  add the candidate ("I moved to Lisbon" replaces "I live in Berlin"; "I don't like
  coffee" replaces "I love coffee");
- a memory is at least `similarity_threshold` similar: UPDATE it to the new wording.
  Similarity is the cosine of the store's embeddings (`store.embeddings`, set by its
  `index` config), or, for a store without an index, difflib's ratio of the
  normalised texts;
- else ADD.

Every write of a run goes through one `store.batch` (or `abatch`) of `PutOp`s, so it
works with any `BaseStore` and, on the tiered stores, is all or nothing. New memories
get a uuid4 hex key. Values carry `content`, `memory_type`, `importance` and
`"source": "extraction"`, plus `slot` when the text fills one (the same-slot search
filters on it) and `redactions` when a redactor removed something. An UPDATE keeps the
memory's key and other fields (its `consolidated_from` too), takes the higher
importance and appends to `replaced` what it replaced: `{"key", "content_sha256",
"updated_at", "replaced_at", "action"}` (the newest 20). A DELETE's replacement
memory carries the deleted memory's `replaced` history plus an entry for it. Written
outside the user's own namespaces, values also record `provenance` (the user and
session ids, see `langgraph_tiered_memory.privacy.provenance`), an UPDATE adding to it. Pinned
memories (`"pinned": True`) are never updated or deleted: the candidate is added
beside them. Only hashes are kept of replaced texts, so forgetting a memory forgets
its text.

A run's searches of a tiered store count no access (`"$count_access": False`): comparing
is not a use. On a tiered store whose retrieval is `"contextual"`, they use `"hybrid"`
(they read one namespace, so they need no `$user`). Both entry points share one plan
(`_plan`), which makes every decision and no I/O; they only make its model, store and
embedding calls, blocking or awaited (`_drive.drive` / `adrive`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple, TypeVar, cast

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore, PutOp, SearchItem, SearchOp
from pydantic import BaseModel, Field

from langgraph_tiered_memory._drive import Call, adrive, drive
from langgraph_tiered_memory._models import MODEL_OUTPUT_ERRORS, describe_model_error, resolve_model
from langgraph_tiered_memory.embeddings import threshold_vectors
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.memory import MemoryType
from langgraph_tiered_memory.privacy.history import acting
from langgraph_tiered_memory.privacy.provenance import stamp
from langgraph_tiered_memory.privacy.redaction import (
    REDACTIONS_FIELD,
    Redactor,
    RedactorSpec,
    redact_text,
    resolve_redactor,
)
from langgraph_tiered_memory.ranking.forgetting import PINNED_FIELD
from langgraph_tiered_memory.ranking.modes import mode_spec
from langgraph_tiered_memory.store.base import TieredStoreCore

__all__ = [
    "DECISION_PROMPT",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "EXTRACTION_PROMPT",
    "ExtractedMemories",
    "ExtractedMemory",
    "ExtractionResult",
    "MemoryDecision",
    "aextract_memories",
    "extract_memories",
]

_log = logging.getLogger("langgraph_tiered_memory.agent.extraction")

EXTRACTION_REASON = "extracted from a conversation"
"""The memory history's reason of the writes an extraction run makes."""

DEFAULT_SIMILARITY_THRESHOLD = 0.9
"""Similarity from which the heuristic path updates a stored memory instead of adding."""

MAX_REPLACED = 20
"""Most provenance entries a memory's `replaced` list keeps (the newest)."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

T = TypeVar("T")
Plan = Generator[Call, Any, T]

EXTRACTION_PROMPT = (
    "You pick out what is worth remembering about the user from a conversation, for"
    " later conversations. Write each memory as one short, self-contained statement in"
    " the third person (\"The user lives in Berlin\"). memory_type: 'fact' for stable"
    " facts (where they live or work, family, health), 'preference' for likes, dislikes"
    " and wishes, 'experience' for things that happened, 'skill' for what they can do."
    " importance: 0 (trivial) to 1 (essential); 0.8 or more when the user asks you to"
    " remember it or calls it important. Leave out greetings, questions, small talk and"
    " anything only the assistant said. Return an empty list when nothing is worth"
    " keeping."
)
"""System prompt of the extraction call (structured output: `ExtractedMemories`)."""

DECISION_PROMPT = (
    "You keep a user's long-term memories up to date. Compare the new memory with the"
    " existing memories listed and choose one action:\n"
    "- ADD: it is new information.\n"
    "- UPDATE: it adds to or refines an existing memory about the same thing: set"
    " memory_id to that memory and content to one statement merging both.\n"
    "- DELETE: it contradicts an existing memory that is now outdated (the user moved,"
    " changed their mind, ...): set memory_id to the outdated memory; the new memory"
    " takes its place.\n"
    "- NOOP: an existing memory already says the same: set memory_id to it.\n"
    "Use only the ids of the existing memories listed."
)
"""System prompt of a decision call (structured output: `MemoryDecision`)."""


class ExtractedMemory(BaseModel):
    """One memory found in a conversation."""

    content: str = Field(
        min_length=1,
        description="One self-contained statement about the user, e.g. 'The user lives in Berlin'.",
    )
    memory_type: MemoryType = Field(
        description="'fact', 'preference', 'experience' or 'skill'.",
    )
    importance: float = Field(
        ge=0.0, le=1.0, description="0 (trivial) to 1 (essential); 0.5 when unsure."
    )


class ExtractedMemories(BaseModel):
    """The memories found in a conversation (the extraction call's answer)."""

    memories: list[ExtractedMemory] = Field(
        default_factory=list, description="Memories worth keeping; empty when none."
    )


class MemoryDecision(BaseModel):
    """What to do with one extracted memory, given similar stored memories."""

    action: Literal["ADD", "UPDATE", "DELETE", "NOOP"] = Field(
        description="ADD a new memory, UPDATE (merge into) memory_id, DELETE the"
        " contradicted memory_id (the new memory replaces it), or NOOP (already known)."
    )
    memory_id: str | None = Field(
        default=None,
        description="The id of the existing memory the action is about (UPDATE, DELETE,"
        " NOOP); one of the ids listed.",
    )
    content: str | None = Field(default=None, description="For UPDATE: the merged statement.")


@dataclass
class ExtractionResult:
    """What one extraction run did, by memory key.

    Attributes:
        added: Keys of the memories written new (a contradicted memory's replacement
            too).
        updated: Keys of stored memories rewritten with merged content.
        deleted: Keys of stored memories removed because a new statement contradicts
            them.
        unchanged: Keys of stored memories a candidate only repeated (NOOP).
        candidates: The memories found in the messages, in order.
        decisions: The decision applied to each candidate (same order).
        rejected: Model decisions refused (naming a key that was not offered, or an
            action without its memory_id); the heuristic decided instead.
        method: `"model"` when the model's candidates were used, `"heuristic"` when the
            heuristic path found them (no model, or a malformed model answer).
        redactions: Findings the redactor removed from the input, by kind.
    """

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    candidates: list[ExtractedMemory] = field(default_factory=list)
    decisions: list[MemoryDecision] = field(default_factory=list)
    rejected: list[MemoryDecision] = field(default_factory=list)
    method: Literal["model", "heuristic"] = "heuristic"
    redactions: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------ the heuristic reading
# A *statement* is a first-person fact or preference found in a user's message. A *slot*
# is what a statement is about together with its value: "I live in Berlin" and "I moved
# to Lisbon" fill the slot `residence` with two values, so the newer one replaces the
# older; "I love coffee" and "I hate coffee" fill `pref:coffee` with `+` and `-`. The
# same patterns read the third-person phrasing a model tends to write ("The user lives
# in Berlin"), so the slots of model-extracted memories are found too.

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


# ------------------------------------------------------------------ the plan


@dataclass
class _Candidate:
    memory: ExtractedMemory
    slot: Slot | None
    redactions: dict[str, int] = field(default_factory=dict)


@dataclass
class _Known:
    """A memory as this run sees it: stored before the run, or written by it."""

    key: str
    value: dict[str, Any]
    updated_at: str | None
    stored: bool
    changed: bool = False
    deleted: bool = False
    stored_value: dict[str, Any] = field(default_factory=dict)
    """The value as stored before this run (empty for a memory the run adds)."""

    @property
    def content(self) -> str:
        content = self.value.get("content")
        return content if isinstance(content, str) else ""

    @property
    def pinned(self) -> bool:
        return self.value.get(PINNED_FIELD) is True


@dataclass
class _Run:
    """One run: what it was asked (validated by `_start`), and what it has seen and decided."""

    namespace: tuple[str, ...]
    model: BaseChatModel | None
    embeddings: Embeddings | None
    """The store's embeddings (cosine similarity), or None (text similarity)."""
    threshold: float
    limit: int
    """Most stored memories a candidate is compared with."""
    now: datetime
    redactor: Redactor | None
    search_options: dict[str, Any]
    """Reserved filter keys added to every search (e.g. `{"$retrieval": "hybrid"}`)."""
    user_id: str | None
    session_id: str | None
    """Who the conversation is with, and its session: recorded in the `provenance` of
    memories written outside the user's own namespaces."""
    known: dict[str, _Known] = field(default_factory=dict)
    near: list[list[str]] = field(default_factory=list)
    """Per candidate: the stored keys its searches returned."""
    touched: dict[str, None] = field(default_factory=dict)
    """Keys written by this run so far, in order."""
    repeated: list[str] = field(default_factory=list)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    redactions: Counter[str] = field(default_factory=Counter)
    bound: dict[type[BaseModel], Runnable[Any, Any]] = field(default_factory=dict)

    def ask(self, schema: type[BaseModel], messages: list[BaseMessage]) -> Plan[Any]:
        """The model's `schema` answer (structured output), or why it is malformed (a str)."""
        if schema not in self.bound:
            try:
                self.bound[schema] = cast(BaseChatModel, self.model).with_structured_output(schema)
            except NotImplementedError as e:
                raise ConfigurationError(
                    f"{type(self.model).__name__} does not support structured output"
                    " (with_structured_output), which extraction needs. Pass a model with"
                    " tool calling or JSON mode, or model=None for the heuristic path."
                ) from e
        try:
            reply = yield Call(self.bound[schema], "invoke", (messages,))
        except MODEL_OUTPUT_ERRORS as e:
            return describe_model_error(e)
        if isinstance(reply, schema):
            return reply
        return f"expected {schema.__name__}, got {type(reply).__name__}"

    # ------------------------------------------------------------------ input
    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        if self.redactor is None or not text:
            return text, {}
        found = redact_text(text, self.redactor)
        return found.text, found.counts

    def transcript(self, messages: Sequence[BaseMessage]) -> str:
        lines = []
        for m in messages:
            if m.type not in ("human", "ai") or not m.text.strip():
                continue
            text, counts = self.redact(m.text)
            self.redactions.update(counts)
            lines.append(f"{'user' if m.type == 'human' else 'assistant'}: {text}")
        return "\n".join(lines)

    def heuristic_candidates(self, messages: Sequence[BaseMessage]) -> list[_Candidate]:
        out: list[_Candidate] = []
        for m in messages:
            if m.type != "human":
                continue
            for st in find_statements(m.text):
                content, counts = self.redact(st.content)
                memory = ExtractedMemory(
                    content=content, memory_type=st.memory_type, importance=st.importance
                )
                self.redactions.update(counts)
                slot = st.slot if not counts else slot_of(content)  # no slot of redacted text
                out.append(_Candidate(memory, slot, counts))
        return out

    def model_candidates(self, memories: Sequence[ExtractedMemory]) -> list[_Candidate]:
        out: list[_Candidate] = []
        for memory in memories:
            content, counts = self.redact(memory.content.strip())
            if not content:
                continue
            self.redactions.update(counts)
            memory = memory.model_copy(update={"content": content})
            out.append(_Candidate(memory, slot_of(content), counts))
        return out

    # ------------------------------------------------------------------ reads
    def read_ops(self, candidates: Sequence[_Candidate]) -> list[SearchOp]:
        """Per candidate: its exact text, its nearest memories, and its slot if it has one."""
        ns, limit, extra = self.namespace, self.limit, self.search_options
        ops: list[SearchOp] = []
        for c in candidates:
            content = c.memory.content
            ops.append(SearchOp(ns, {**extra, "content": content}, 1, 0, None))
            ops.append(SearchOp(ns, dict(extra) or None, limit, 0, content))
            if c.slot is not None:
                ops.append(SearchOp(ns, {**extra, "slot": c.slot.name}, limit, 0, None))
        return ops

    def load(self, candidates: Sequence[_Candidate], results: Sequence[Any]) -> None:
        """Keep the memories of this namespace that each candidate's searches found."""
        at = 0
        for c in candidates:
            n = 2 if c.slot is None else 3
            keys: list[str] = []
            for hit in (hit for hits in results[at : at + n] for hit in hits or ()):
                if not isinstance(hit, SearchItem) or tuple(hit.namespace) != self.namespace:
                    continue  # a search covers a prefix: only this namespace counts
                if not isinstance(hit.value.get("content"), str):
                    continue
                if hit.key not in self.known:
                    value = dict(hit.value)
                    self.known[hit.key] = _Known(
                        hit.key, value, hit.updated_at.isoformat(), True, stored_value=value
                    )
                keys.append(hit.key)
            self.near.append(list(dict.fromkeys(keys)))
            at += n

    def pool(self, i: int) -> list[_Known]:
        keys = dict.fromkeys([*self.near[i], *self.touched])
        return [self.known[k] for k in keys if not self.known[k].deleted and self.known[k].content]

    def missing_vectors(self, texts: Sequence[str]) -> list[str]:
        if self.embeddings is None:
            return []
        return [t for t in dict.fromkeys(texts) if t not in self.vectors]

    def similarity(self, a: str, b: str) -> float:
        if self.embeddings is not None:
            return cosine(self.vectors[a], self.vectors[b])
        return text_similarity(a, b)

    def offer(self, c: _Candidate, pool: Sequence[_Known]) -> list[tuple[_Known, float]]:
        """The stored memories shown for `c`: same slot or same text first, then by similarity."""
        scored = [(k, self.similarity(c.memory.content, k.content)) for k in pool]

        def rank(pair: tuple[_Known, float]) -> tuple[int, float]:
            k, sim = pair
            first = normalize(k.content) == normalize(c.memory.content) or _same_slot(c, k)
            return (0 if first else 1, -sim)

        return sorted(scored, key=rank)[: self.limit]

    # ------------------------------------------------------------------ decisions
    def check(
        self, reply: MemoryDecision | str, offered: Sequence[tuple[_Known, float]]
    ) -> tuple[MemoryDecision | None, MemoryDecision | None]:
        """The model's decision if usable, else (None, the refused decision or None)."""
        if isinstance(reply, str):
            _log.warning(
                "The extraction model's decision is malformed (%s); deciding by heuristic",
                reply,
            )
            return None, None
        ids = {k.key for k, _ in offered}
        # UPDATE and DELETE must name an offered memory; NOOP may name one.
        named = reply.action in ("UPDATE", "DELETE") or reply.memory_id is not None
        if reply.action != "ADD" and named and reply.memory_id not in ids:
            _log.warning(  # not the model's memory_id: any text the model wrote
                "Refused the extraction model's decision %s: its memory_id is not one of the"
                " memories offered (%s); deciding by heuristic",
                reply.action,
                sorted(ids),
            )
            return None, reply
        return reply, None

    def heuristic(self, c: _Candidate, offered: Sequence[tuple[_Known, float]]) -> MemoryDecision:
        """The heuristic decision for `c` (no memory offered has its text: the plan checks).

        Same slot: NOOP (same value) or DELETE (changed value); similar enough
        (`threshold`): UPDATE; else ADD.
        """
        for k, _ in offered:
            other = _same_slot(c, k)
            if other is not None:
                return MemoryDecision(
                    action="NOOP" if other == c.slot else "DELETE", memory_id=k.key
                )
        for k, sim in offered:
            other = slot_of(k.content)
            if sim >= self.threshold and not (c.slot and other and other.name != c.slot.name):
                return MemoryDecision(action="UPDATE", memory_id=k.key)
        return MemoryDecision(action="ADD")

    def apply(self, c: _Candidate, d: MemoryDecision) -> MemoryDecision:
        """Apply `d` to this run's view of the namespace; returns the decision as applied."""
        target = self.known.get(d.memory_id) if d.memory_id else None
        if d.action in ("UPDATE", "DELETE") and target is not None and target.pinned:
            _log.info("Memory %r is pinned: adding the new memory beside it", target.key)
            d = MemoryDecision(action="ADD")
            target = None
        if d.action == "NOOP":
            if target is not None and target.stored and not target.changed:
                self.repeated.append(target.key)
            return d
        if d.action == "UPDATE" and target is not None:
            merged = (d.content or "").strip()
            content, counts = self.redact(merged) if merged else (c.memory.content, c.redactions)
            fields = self._fields(c, content, counts)
            value = self._stamp({**target.value, **fields})
            value["importance"] = max(c.memory.importance, _importance(target.value))
            if "slot" not in fields:
                value.pop("slot", None)  # the merged text fills no slot any more
            if target.stored and not target.changed:  # one entry for what was stored
                value["replaced"] = self._replaced(target, "UPDATE")
            target.value, target.changed = value, True
            self.touched[target.key] = None
            return d
        if d.action == "DELETE" and target is not None:
            target.deleted = True
            replaced = self._replaced(target, "DELETE") if target.stored else []
            self._add(c, replaced)
            return d
        self._add(c, [])
        return MemoryDecision(action="ADD")

    def _fields(self, c: _Candidate, content: str, counts: dict[str, int]) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "content": content,
            "memory_type": c.memory.memory_type,
            "importance": c.memory.importance,
            "source": "extraction",
        }
        slot = slot_of(content)
        if slot is not None:
            fields["slot"] = slot.name
        if counts:
            fields[REDACTIONS_FIELD] = dict(counts)
        return fields

    def _stamp(self, value: dict[str, Any]) -> dict[str, Any]:
        """`value` recording where its content came from (see `provenance.stamp`)."""
        return stamp(value, self.namespace, self.user_id, self.session_id)

    def _replaced(self, target: _Known, action: str) -> list[dict[str, Any]]:
        """The stored memory's provenance list plus an entry for its stored version."""
        earlier = target.stored_value.get("replaced")
        history = [e for e in earlier if isinstance(e, dict)] if isinstance(earlier, list) else []
        content = target.stored_value.get("content")
        text = content if isinstance(content, str) else ""
        entry = {
            "key": target.key,
            "content_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()[:16],
            "updated_at": target.updated_at,
            "replaced_at": self.now.isoformat(),
            "action": action,
        }
        return [*history, entry][-MAX_REPLACED:]

    def _add(self, c: _Candidate, replaced: list[dict[str, Any]]) -> None:
        key = uuid.uuid4().hex
        value = self._stamp(self._fields(c, c.memory.content, c.redactions))
        if replaced:
            value["replaced"] = replaced
        self.known[key] = _Known(key, value, None, stored=False, changed=True)
        self.touched[key] = None

    # ------------------------------------------------------------------ output
    def write_ops(self) -> list[PutOp]:
        ops = [
            PutOp(self.namespace, k.key, k.value)
            for k in self.known.values()
            if k.changed and not k.deleted
        ]
        ops.extend(
            PutOp(self.namespace, k.key, None)
            for k in self.known.values()
            if k.deleted and k.stored
        )
        return ops

    def result(self, result: ExtractionResult) -> ExtractionResult:
        for k in self.known.values():
            if k.changed and not k.deleted:
                (result.updated if k.stored else result.added).append(k.key)
            elif k.deleted and k.stored:
                result.deleted.append(k.key)
        written = set(result.updated) | set(result.deleted)
        result.unchanged = [k for k in dict.fromkeys(self.repeated) if k not in written]
        result.redactions = dict(self.redactions)
        return result


def _same_slot(c: _Candidate, k: _Known) -> Slot | None:
    """The slot `k`'s text fills when it is `c`'s slot (its value may differ), else None."""
    if c.slot is None:
        return None
    other = slot_of(k.content)
    return other if other is not None and other.name == c.slot.name else None


def _importance(value: dict[str, Any]) -> float:
    importance = value.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)):
        return 0.5
    return float(importance)


def _decision_messages(c: _Candidate, offered: Sequence[tuple[_Known, float]]) -> list[Any]:
    new = c.memory.model_dump()
    existing = [
        {"id": k.key, "content": k.content, "memory_type": k.value.get("memory_type")}
        for k, _ in offered
    ]
    return [
        SystemMessage(content=DECISION_PROMPT),
        HumanMessage(
            content="New memory:\n"
            + json.dumps(new, ensure_ascii=False)
            + "\n\nExisting memories:\n"
            + json.dumps(existing, ensure_ascii=False, indent=1)
        ),
    ]


def _plan(run: _Run, store: BaseStore, messages: Sequence[BaseMessage]) -> Plan[ExtractionResult]:
    """One extraction run; yields its store, model and embedding calls, returns what it did."""
    result = ExtractionResult()
    candidates: list[_Candidate] | None = None
    if run.model is not None:
        transcript = run.transcript(messages)
        if transcript:
            reply = yield from run.ask(
                ExtractedMemories,
                [SystemMessage(content=EXTRACTION_PROMPT), HumanMessage(content=transcript)],
            )
            if isinstance(reply, ExtractedMemories):
                candidates = run.model_candidates(reply.memories)
                result.method = "model"
            else:
                _log.warning(
                    "The extraction model's answer is malformed (%s); using the heuristic"
                    " extraction instead",
                    reply,
                )
    if candidates is None:
        run.redactions.clear()  # counted again, clause by clause
        candidates = run.heuristic_candidates(messages)
    result.candidates = [c.memory for c in candidates]
    if not candidates:
        return run.result(result)
    hits = yield Call(store, "batch", (run.read_ops(candidates),))
    run.load(candidates, hits)
    for i, c in enumerate(candidates):
        pool = run.pool(i)
        missing = run.missing_vectors([c.memory.content, *(k.content for k in pool)])
        if missing:
            vectors = yield Call(run.embeddings, "embed_documents", (missing,))
            # The threshold compares vectors in the embedder's threshold space.
            comparable = threshold_vectors(run.embeddings, vectors).tolist()
            run.vectors.update(zip(missing, comparable, strict=True))
        offered = run.offer(c, pool)
        decision: MemoryDecision | None = None
        same = normalize(c.memory.content)
        exact = next((k for k, _ in offered if normalize(k.content) == same), None)
        if exact is not None:
            decision = MemoryDecision(action="NOOP", memory_id=exact.key)
        elif result.method == "model" and not offered:
            decision = MemoryDecision(action="ADD")
        elif result.method == "model":
            reply = yield from run.ask(MemoryDecision, _decision_messages(c, offered))
            decision, refused = run.check(reply, offered)
            if refused is not None:
                result.rejected.append(refused)
        if decision is None:
            decision = run.heuristic(c, offered)
        result.decisions.append(run.apply(c, decision))
    ops = run.write_ops()
    if ops:
        yield Call(store, "batch", (ops,))
    return run.result(result)


# ------------------------------------------------------------------ entry points


def _namespace(namespace: Sequence[str], user_id: str | None) -> tuple[str, ...]:
    if isinstance(namespace, str) or not namespace:
        raise ValueError(
            f"namespace must be a non-empty tuple of labels such as ('memories', 'u1'),"
            f" got {namespace!r}."
        )
    out: list[str] = []
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise ValueError(f"namespace labels must be non-empty strings, got {label!r}.")
        names = set(_PLACEHOLDER.findall(label))
        if names - {"user_id"}:
            raise ValueError(
                f"namespace label {label!r} has a placeholder other than {{user_id}}; fill"
                " it before calling extraction."
            )
        if names:
            if not user_id:
                raise ValueError(
                    f"namespace {tuple(namespace)!r} has a {{user_id}} placeholder: pass"
                    " user_id=..."
                )
            label = label.replace("{user_id}", user_id)
        out.append(label)
    return tuple(out)


def _search_options(store: BaseStore) -> dict[str, Any]:
    """Reserved filter keys every search of a run carries (tiered memory stores only).

    Comparing candidates with stored memories is not a use of them, so the searches do
    not count accesses (`$count_access`). A store whose default retrieval is user-scoped
    (`"contextual"`) needs the caller's user for every search; a run reads one namespace
    only, so plain hybrid retrieval finds the same memories without one.
    """
    if not (isinstance(store, TieredStoreCore) and store.memory_mode):
        return {}
    options: dict[str, Any] = {"$count_access": False}
    if mode_spec(store.scoring.retrieval).user_scoped:
        options["$retrieval"] = "hybrid"
    return options


def _start(
    store: BaseStore,
    namespace: Sequence[str],
    messages: Any,
    model: str | BaseChatModel | None,
    similarity_threshold: float,
    redactor: RedactorSpec,
    user_id: str | None,
    limit: int,
    clock: Callable[[], float] | None,
    session_id: str | None,
) -> Plan[ExtractionResult]:
    """Validate the arguments and build the run's plan (shared by both entry points)."""
    if not isinstance(store, BaseStore):
        raise TypeError(f"store must be a langgraph BaseStore, got {type(store).__name__}.")
    if (
        isinstance(similarity_threshold, bool)
        or not isinstance(similarity_threshold, (int, float))
        or not 0.0 < similarity_threshold <= 1.0
    ):
        raise ValueError(
            f"similarity_threshold must be a number in (0, 1], got {similarity_threshold!r}."
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}.")
    chat = resolve_model(model)
    embeddings = getattr(store, "embeddings", None)
    if clock is None:  # the store's own clock (the tiered stores have one), else time.time
        own = getattr(store, "clock", None)
        clock = own if callable(own) else time.time
    run = _Run(
        namespace=_namespace(namespace, user_id),
        model=chat,
        embeddings=embeddings if isinstance(embeddings, Embeddings) else None,
        threshold=float(similarity_threshold),
        limit=limit,
        now=datetime.fromtimestamp(clock(), tz=timezone.utc),
        redactor=resolve_redactor(redactor),
        search_options=_search_options(store),
        user_id=user_id,
        session_id=session_id,
    )
    if isinstance(messages, (str, BaseMessage, dict, tuple)):
        messages = [messages]
    return _plan(run, store, convert_to_messages(messages))


def extract_memories(
    store: BaseStore,
    namespace: Sequence[str],
    messages: Any,
    *,
    model: str | BaseChatModel | None = None,
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    redactor: RedactorSpec = None,
    user_id: str | None = None,
    limit: int = 5,
    clock: Callable[[], float] | None = None,
    session_id: str | None = None,
) -> ExtractionResult:
    """Extract memories from `messages` into `namespace`, updating instead of duplicating.

    See the module documentation for how candidates are found and decided.

    Args:
        store: Any LangGraph `BaseStore` (a `TieredMemoryStore`, `InMemoryStore`, ...).
            With an `index`, similarity is the cosine of its embeddings.
        namespace: Where the memories live, e.g. `("memories", "u1")`; a
            `"{user_id}"` placeholder is filled from `user_id`. Only memories of this
            exact namespace are read or written.
        messages: The conversation: `BaseMessage`s, dicts, `(role, text)` tuples or
            strings (user messages), or a single one of those.
        model: Chat model or `init_chat_model` string for the model path; None for the
            heuristic path.
        similarity_threshold: Similarity (0-1] from which the heuristic path updates a
            stored memory instead of adding one.
        redactor: Applied to the conversation before a model sees it and to every
            memory before it is stored: None, True/`"default"` (the default detector of
            `langgraph_tiered_memory.privacy.redaction`) or a `Redactor`.
        user_id: Fills `"{user_id}"` in `namespace`.
        limit: Most stored memories each candidate is compared with.
        clock: Returns the current time in epoch seconds, for provenance times
            (default: the store's `clock` if it has one, else `time.time`).
        session_id: The conversation's session (thread) id. With `user_id`, recorded
            in the `provenance` of memories written outside the user's own namespaces
            (`langgraph_tiered_memory.privacy.provenance`), so erasing the user finds them.

    Returns:
        An `ExtractionResult` with the keys added, updated, deleted and unchanged.

    Raises:
        ValueError: A bad namespace, threshold or limit.
        ConfigurationError: The model does not support structured output.

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.agent.extraction import extract_memories

        store = InMemoryStore()
        ns = ("memories", "u1")
        first = extract_memories(store, ns, [("user", "I live in Berlin.")])
        again = extract_memories(store, ns, [("user", "i live in Berlin")])
        moved = extract_memories(store, ns, [("user", "I moved to Lisbon!")])
        assert again.unchanged == first.added and moved.deleted == first.added
        assert [i.value["content"] for i in store.search(ns)] == ["I moved to Lisbon"]
        ```
    """
    run = _start(
        store,
        namespace,
        messages,
        model,
        similarity_threshold,
        redactor,
        user_id,
        limit,
        clock,
        session_id=session_id,
    )
    with acting("extraction", EXTRACTION_REASON):  # the memory history's actor of its writes
        return drive(run)


async def aextract_memories(
    store: BaseStore,
    namespace: Sequence[str],
    messages: Any,
    *,
    model: str | BaseChatModel | None = None,
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    redactor: RedactorSpec = None,
    user_id: str | None = None,
    limit: int = 5,
    clock: Callable[[], float] | None = None,
    session_id: str | None = None,
) -> ExtractionResult:
    """Async `extract_memories`: `ainvoke`, `aembed_documents` and `store.abatch`.

    Same arguments and result as `extract_memories`; works with
    `AsyncTieredMemoryStore` and any `BaseStore` implementing `abatch`.

    Example:
        ```python
        import asyncio
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.agent.extraction import aextract_memories

        store = InMemoryStore()
        result = asyncio.run(
            aextract_memories(store, ("memories", "u1"), "My favourite colour is green.")
        )
        assert store.get(("memories", "u1"), result.added[0]).value["memory_type"] == (
            "preference"
        )
        ```
    """
    run = _start(
        store,
        namespace,
        messages,
        model,
        similarity_threshold,
        redactor,
        user_id,
        limit,
        clock,
        session_id=session_id,
    )
    with acting("extraction", EXTRACTION_REASON):
        return await adrive(run)
