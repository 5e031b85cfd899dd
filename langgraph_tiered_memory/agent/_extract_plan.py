"""The planning layer of extraction, shared by the sync and async entry points.

`plan_extraction` is a generator that does no I/O: it yields its model, store and
embedding calls (`_drive.Call`) and receives their answers, so `extract_memories` and
`aextract_memories` only make them blocking or awaited (`_drive.drive`, `adrive`).
Every decision (which candidates, which stored memories they are compared with, what
is added, updated, deleted or left alone, how provenance is kept) is made here, once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, TypeVar, cast

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore, PutOp, SearchItem, SearchOp
from pydantic import BaseModel

from langgraph_tiered_memory._drive import Call
from langgraph_tiered_memory._models import MODEL_OUTPUT_ERRORS, describe_model_error
from langgraph_tiered_memory.agent._extract_heuristic import (
    Slot,
    cosine,
    find_statements,
    normalize,
    slot_of,
    text_similarity,
)
from langgraph_tiered_memory.agent._extract_types import (
    DECISION_PROMPT,
    EXTRACTION_PROMPT,
    ExtractedMemories,
    ExtractedMemory,
    ExtractionResult,
    MemoryDecision,
)
from langgraph_tiered_memory.embeddings import threshold_vectors
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy.provenance import stamp
from langgraph_tiered_memory.privacy.redaction import REDACTIONS_FIELD
from langgraph_tiered_memory.ranking.forgetting import PINNED_FIELD

_log = logging.getLogger("langgraph_tiered_memory.agent.extraction")

MAX_REPLACED = 20
"""Most provenance entries a memory's `replaced` list keeps (the newest)."""

Redact = Callable[[str], tuple[str, dict[str, int]]]
T = TypeVar("T")
Plan = Generator[Call, Any, T]


class Malformed(NamedTuple):
    """The model's answer could not be parsed into the schema asked for."""

    error: str


@dataclass(frozen=True)
class Settings:
    """What a run was asked to do (validated by the caller)."""

    namespace: tuple[str, ...]
    model: BaseChatModel | None
    embeddings: Embeddings | None
    """The store's embeddings (cosine similarity), or None (text similarity)."""
    threshold: float
    limit: int
    """Most stored memories a candidate is compared with."""
    now: datetime
    new_key: Callable[[], str]
    redact: Redact | None = None
    search_options: dict[str, Any] = field(default_factory=dict)
    """Reserved filter keys added to every search (e.g. `{"$retrieval": "hybrid"}`)."""
    user_id: str | None = None
    session_id: str | None = None
    """Who the conversation is with, and its session: recorded in the `provenance` of
    memories written outside the user's own namespaces."""


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


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n


class _State:
    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.known: dict[str, _Known] = {}
        self.near: list[list[str]] = []
        """Per candidate: the stored keys its searches returned."""
        self.touched: list[str] = []
        """Keys written by this run so far, in order."""
        self.repeated: list[str] = []
        self.vectors: dict[str, list[float]] = {}
        self.redactions: dict[str, int] = {}
        self.bound: dict[type[BaseModel], Runnable[Any, Any]] = {}

    def ask(self, schema: type[BaseModel], messages: list[BaseMessage]) -> Plan[Any]:
        """The model's `schema` answer (structured output), or `Malformed`."""
        if schema not in self.bound:
            try:
                self.bound[schema] = cast(BaseChatModel, self.s.model).with_structured_output(
                    schema
                )
            except NotImplementedError as e:
                raise ConfigurationError(
                    f"{type(self.s.model).__name__} does not support structured output"
                    " (with_structured_output), which extraction needs. Pass a model with"
                    " tool calling or JSON mode, or model=None for the heuristic path."
                ) from e
        try:
            reply = yield Call(self.bound[schema], "invoke", (messages,))
        except MODEL_OUTPUT_ERRORS as e:
            return Malformed(describe_model_error(e))
        if isinstance(reply, schema):
            return reply
        return Malformed(f"expected {schema.__name__}, got {type(reply).__name__}")

    # ------------------------------------------------------------------ input
    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        if self.s.redact is None or not text:
            return text, {}
        return self.s.redact(text)

    def transcript(self, messages: Sequence[BaseMessage]) -> str:
        lines = []
        for m in messages:
            if m.type not in ("human", "ai") or not m.text.strip():
                continue
            text, counts = self.redact(m.text)
            _add_counts(self.redactions, counts)
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
                _add_counts(self.redactions, counts)
                slot = st.slot if not counts else slot_of(content)  # no slot of redacted text
                out.append(_Candidate(memory, slot, counts))
        return out

    def model_candidates(self, memories: Sequence[ExtractedMemory]) -> list[_Candidate]:
        out: list[_Candidate] = []
        for memory in memories:
            content, counts = self.redact(memory.content.strip())
            if not content:
                continue
            _add_counts(self.redactions, counts)
            memory = memory.model_copy(update={"content": content})
            out.append(_Candidate(memory, slot_of(content), counts))
        return out

    # ------------------------------------------------------------------ reads
    def read_ops(self, candidates: Sequence[_Candidate]) -> list[SearchOp]:
        """Per candidate: its exact text, its nearest memories, and its slot if it has one."""
        ns, limit, extra = self.s.namespace, self.s.limit, self.s.search_options
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
                if not isinstance(hit, SearchItem) or tuple(hit.namespace) != self.s.namespace:
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
        if self.s.embeddings is None:
            return []
        return [t for t in dict.fromkeys(texts) if t not in self.vectors]

    def similarity(self, a: str, b: str) -> float:
        if self.s.embeddings is not None:
            return cosine(self.vectors[a], self.vectors[b])
        return text_similarity(a, b)

    def offer(self, c: _Candidate, pool: Sequence[_Known]) -> list[tuple[_Known, float]]:
        """The stored memories shown for `c`: same slot or same text first, then by similarity."""
        scored = [(k, self.similarity(c.memory.content, k.content)) for k in pool]

        def rank(pair: tuple[_Known, float]) -> tuple[int, float]:
            k, sim = pair
            first = normalize(k.content) == normalize(c.memory.content) or _same_slot(c, k)
            return (0 if first else 1, -sim)

        return sorted(scored, key=rank)[: self.s.limit]

    # ------------------------------------------------------------------ decisions
    def check(
        self, reply: Any, offered: Sequence[tuple[_Known, float]]
    ) -> tuple[MemoryDecision | None, MemoryDecision | None]:
        """The model's decision if usable, else (None, the refused decision or None)."""
        if isinstance(reply, Malformed) or not isinstance(reply, MemoryDecision):
            error = reply.error if isinstance(reply, Malformed) else type(reply).__name__
            _log.warning(
                "The extraction model's decision is malformed (%s); deciding by heuristic",
                error,
            )
            return None, None
        ids = {k.key for k, _ in offered}
        needs_id = reply.action in ("UPDATE", "DELETE")
        if (needs_id and reply.memory_id not in ids) or (
            reply.action == "NOOP" and reply.memory_id is not None and reply.memory_id not in ids
        ):
            _log.warning(  # not the model's memory_id: any text the model wrote
                "Refused the extraction model's decision %s: its memory_id is not one of the"
                " memories offered (%s); deciding by heuristic",
                reply.action,
                sorted(ids),
            )
            return None, reply
        return reply, None

    def heuristic(self, c: _Candidate, offered: Sequence[tuple[_Known, float]]) -> MemoryDecision:
        """The heuristic decision for `c`.

        Same text: NOOP; same slot: NOOP (same value) or DELETE (changed value);
        similar enough (`threshold`): UPDATE; else ADD.
        """
        norm = normalize(c.memory.content)
        for k, _ in offered:
            if normalize(k.content) == norm:
                return MemoryDecision(action="NOOP", memory_id=k.key)
        for k, _ in offered:
            if _same_slot(c, k):
                other = slot_of(k.content)
                if c.slot is not None and other is not None and other.value == c.slot.value:
                    return MemoryDecision(action="NOOP", memory_id=k.key)
                return MemoryDecision(action="DELETE", memory_id=k.key)
        for k, sim in offered:
            other = slot_of(k.content)
            if sim >= self.s.threshold and not (c.slot and other and other.name != c.slot.name):
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
            self._touch(target.key)
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
        return stamp(value, self.s.namespace, self.s.user_id, self.s.session_id)

    def _replaced(self, target: _Known, action: str) -> list[dict[str, Any]]:
        """The stored memory's provenance list plus an entry for its stored version."""
        earlier = target.stored_value.get("replaced")
        history = [e for e in earlier if isinstance(e, dict)] if isinstance(earlier, list) else []
        content = target.stored_value.get("content")
        entry = {
            "key": target.key,
            "content_sha256": _sha(content if isinstance(content, str) else ""),
            "updated_at": target.updated_at,
            "replaced_at": self.s.now.isoformat(),
            "action": action,
        }
        return [*history, entry][-MAX_REPLACED:]

    def _add(self, c: _Candidate, replaced: list[dict[str, Any]]) -> None:
        key = self.s.new_key()
        value = self._stamp(self._fields(c, c.memory.content, c.redactions))
        if replaced:
            value["replaced"] = replaced
        self.known[key] = _Known(key, value, None, stored=False, changed=True)
        self._touch(key)

    def _touch(self, key: str) -> None:
        if key not in self.touched:
            self.touched.append(key)

    # ------------------------------------------------------------------ output
    def write_ops(self) -> list[PutOp]:
        ops = [
            PutOp(self.s.namespace, k.key, k.value)
            for k in self.known.values()
            if k.changed and not k.deleted
        ]
        ops.extend(
            PutOp(self.s.namespace, k.key, None)
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


def _same_slot(c: _Candidate, k: _Known) -> bool:
    if c.slot is None:
        return False
    other = slot_of(k.content)
    return other is not None and other.name == c.slot.name


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


def plan_extraction(
    store: BaseStore, messages: Sequence[BaseMessage], settings: Settings
) -> Plan[ExtractionResult]:
    """Plan one extraction run; yields its store, model and embedding calls, returns what it did.

    Args:
        store: The store the memories are read from and written to.
        messages: The conversation (converted `BaseMessage`s).
        settings: The run's options.

    Returns:
        The run's `ExtractionResult`.
    """
    state = _State(settings)
    result = ExtractionResult()
    candidates: list[_Candidate] | None = None
    if settings.model is not None:
        transcript = state.transcript(messages)
        if transcript:
            reply = yield from state.ask(
                ExtractedMemories,
                [SystemMessage(content=EXTRACTION_PROMPT), HumanMessage(content=transcript)],
            )
            if isinstance(reply, ExtractedMemories):
                candidates = state.model_candidates(reply.memories)
                result.method = "model"
            else:
                error = reply.error if isinstance(reply, Malformed) else type(reply).__name__
                _log.warning(
                    "The extraction model's answer is malformed (%s); using the heuristic"
                    " extraction instead",
                    error,
                )
    if candidates is None:
        state.redactions.clear()  # counted again, clause by clause
        candidates = state.heuristic_candidates(messages)
    result.candidates = [c.memory for c in candidates]
    if not candidates:
        return state.result(result)
    hits = yield Call(store, "batch", (state.read_ops(candidates),))
    state.load(candidates, hits)
    for i, c in enumerate(candidates):
        pool = state.pool(i)
        missing = state.missing_vectors([c.memory.content, *(k.content for k in pool)])
        if missing:
            vectors = yield Call(settings.embeddings, "embed_documents", (missing,))
            # The threshold compares vectors in the embedder's threshold space.
            comparable = threshold_vectors(settings.embeddings, vectors).tolist()
            state.vectors.update(zip(missing, comparable, strict=True))
        offered = state.offer(c, pool)
        decision: MemoryDecision | None = None
        same = normalize(c.memory.content)
        exact = next((k for k, _ in offered if normalize(k.content) == same), None)
        if exact is not None:
            decision = MemoryDecision(action="NOOP", memory_id=exact.key)
        elif result.method == "model" and not offered:
            decision = MemoryDecision(action="ADD")
        elif result.method == "model":
            reply = yield from state.ask(MemoryDecision, _decision_messages(c, offered))
            decision, refused = state.check(reply, offered)
            if refused is not None:
                result.rejected.append(refused)
        if decision is None:
            decision = state.heuristic(c, offered)
        result.decisions.append(state.apply(c, decision))
    ops = state.write_ops()
    if ops:
        yield Call(store, "batch", (ops,))
    return state.result(result)
