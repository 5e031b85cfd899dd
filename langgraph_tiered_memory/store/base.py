"""Planning shared by the sync and async stores (no I/O here).

A batch is planned first: every op is validated, puts are de-duplicated (last write
wins), the texts to embed and the queries are collected. Only then does the store
embed (sync or async) and execute the plan against the tiers. A bad op therefore
fails the whole batch before anything is written.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from langgraph.store.base import (
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)

from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierName, TierPolicy
from langgraph_tiered_memory.embeddings import resolve_embeddings
from langgraph_tiered_memory.errors import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.store._common import (
    ItemWrite,
    StoredItem,
    encode_value,
    literal_prefix,
    rank_key,
    select_namespaces,
    to_datetime,
    validate_filter,
    validate_key,
    validate_namespace,
    validate_ttl,
)
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.tiers.base import ScoredItem, Tier

__all__ = ["TieredStoreCore", "DEFAULT_CHROMA_PATH", "DEFAULT_KEY_PREFIX"]

DEFAULT_CHROMA_PATH = os.path.join(".tiered-memory", "chroma")
"""Where the embedded Chroma database lives when neither `chroma_client` nor
`chroma_path` is given (relative to the working directory); the environment variable
`TIERED_MEMORY_CHROMA_PATH` overrides it."""

DEFAULT_KEY_PREFIX = "tm"
"""Default prefix of every Redis key and Chroma collection the store creates."""

_KEY_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{1,47}$")


class _Plan(NamedTuple):
    size: int
    gets: list[tuple[int, GetOp]]
    searches: list[tuple[int, SearchOp]]
    lists: list[tuple[int, ListNamespacesOp]]
    writes: list[ItemWrite]
    texts: list[str]
    """Unique texts to embed for the writes."""
    slots: list[list[int]]
    """For each write, the indexes of its texts in `texts`."""
    queries: list[str]
    """Unique search queries to embed."""


class TieredStoreCore:
    """Configuration, planning and execution shared by both stores.

    Subclasses provide the tiers and decide how embeddings are computed (sync or
    async); execution against the tiers is synchronous and thread-safe.
    """

    supports_ttl: bool = True

    def _configure(
        self,
        *,
        redis_client: Any,
        redis_url: str | None,
        chroma_client: Any,
        chroma_path: str | None,
        chroma_hnsw: ChromaHnswConfig | None,
        index: IndexConfig | None,
        ttl: TTLConfig | None,
        scoring: ScoringConfig | None,
        tiers: TierPolicy | None,
        key_prefix: str,
        clock: Callable[[], float] | None,
        allow_non_finite_filters: bool,
    ) -> None:
        from langgraph_tiered_memory.store._backends import build_tiers

        self._router = TierRouter(tiers)
        self.key_prefix = check_key_prefix(key_prefix)
        self.ttl_config = _check_ttl_config(ttl)
        self.scoring: ScoringConfig = _check_scoring(scoring)
        self.clock: Callable[[], float] = clock or time.time
        self.allow_non_finite_filters = bool(allow_non_finite_filters)
        self.index_config, self.embeddings, self._fields = _check_index(index)
        self._tiers: dict[TierName, Tier] = build_tiers(
            router=self._router,
            key_prefix=self.key_prefix,
            dims=self.dims,
            redis_client=redis_client,
            redis_url=redis_url,
            chroma_client=chroma_client,
            chroma_path=chroma_path,
            chroma_hnsw=chroma_hnsw,
        )
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        interval = (self.ttl_config or {}).get("sweep_interval_minutes")
        if interval:
            self._start_sweeper(float(interval) * 60)

    def _start_sweeper(self, every_seconds: float) -> None:
        def run() -> None:
            while not self._sweeper_stop.wait(every_seconds):
                self.sweep_ttl()

        self._sweeper = threading.Thread(target=run, name="tiered-memory-ttl-sweeper", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        """Stop the TTL sweeper and close the clients the store created."""
        self._sweeper_stop.set()
        if self._sweeper is not None and self._sweeper is not threading.current_thread():
            self._sweeper.join(timeout=5)
        for tier in self._tiers.values():
            tier.close()

    @property
    def tiers(self) -> dict[TierName, Tier]:
        """The tiers this store routes to, by name (`"short"`, `"long"`)."""
        return dict(self._tiers)

    def tier_for(self, namespace: tuple[str, ...]) -> TierName:
        """Which tier stores `namespace` under the routing policy."""
        return self._router.tier_for(tuple(namespace))

    # ----------------------------------------------------------------- helpers
    @property
    def dims(self) -> int:
        """Embedding size, or 0 when the store has no index."""
        return int(self.index_config["dims"]) if self.index_config else 0

    def _tier(self, name: TierName) -> Tier:
        return self._tiers[name]

    def setup(self) -> None:
        """Check the backends answer and create what the tiers need. Idempotent."""
        for tier in self._tiers.values():
            tier.setup()

    def sweep_ttl(self) -> int:
        """Delete expired items now (Redis expires its own; Chroma needs this).

        Returns:
            The number of items removed.
        """
        now = self.clock()
        return sum(tier.sweep(now=now) for tier in self._tiers.values())

    # ----------------------------------------------------------------- running
    def _run_batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        vectors: list[list[float]] = []
        queries: dict[str, Any] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = self.embeddings.embed_documents(plan.texts)
            queries = {q: self.embeddings.embed_query(q) for q in plan.queries}
        return self._execute(plan, vectors, queries)

    async def _arun_batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        vectors: list[list[float]] = []
        queries: dict[str, Any] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = await self.embeddings.aembed_documents(plan.texts)
            if plan.queries:
                found = await asyncio.gather(
                    *(self.embeddings.aembed_query(q) for q in plan.queries)
                )
                queries = dict(zip(plan.queries, found, strict=True))
        return await asyncio.to_thread(self._execute, plan, vectors, queries)

    # ----------------------------------------------------------------- planning
    def _plan(self, ops: Iterable[Op]) -> _Plan:
        gets: list[tuple[int, GetOp]] = []
        searches: list[tuple[int, SearchOp]] = []
        lists: list[tuple[int, ListNamespacesOp]] = []
        puts: dict[tuple[tuple[str, ...], str], tuple[PutOp, str | None]] = {}
        size = 0
        for i, op in enumerate(ops):
            size += 1
            if isinstance(op, GetOp):
                validate_key(op.key)
                gets.append((i, op))
            elif isinstance(op, SearchOp):
                validate_filter(op.filter, allow_non_finite=self.allow_non_finite_filters)
                if op.limit < 0 or op.offset < 0:
                    raise ValueError(
                        f"search limit and offset must be >= 0, got limit={op.limit},"
                        f" offset={op.offset}."
                    )
                searches.append((i, op))
            elif isinstance(op, ListNamespacesOp):
                lists.append((i, op))
            elif isinstance(op, PutOp):
                ns = validate_namespace(op.namespace)
                key = validate_key(op.key)
                encoded = None if op.value is None else encode_value(ns, key, op.value)
                validate_ttl(op.ttl)
                if op.index not in (None, False) and not (
                    isinstance(op.index, list) and all(isinstance(p, str) for p in op.index)
                ):
                    raise InvalidItemError(
                        f"index for item {key!r} must be False, None or a list of field paths,"
                        f" got {op.index!r}."
                    )
                puts.pop((ns, key), None)  # keep the position of the last write
                puts[(ns, key)] = (op, encoded)
            else:
                raise ValueError(
                    f"Unknown operation type {type(op).__name__}; expected GetOp, PutOp,"
                    " SearchOp or ListNamespacesOp."
                )
        writes: list[ItemWrite] = []
        texts: dict[str, int] = {}
        slots: list[list[int]] = []
        for (ns, key), (op, encoded) in puts.items():
            writes.append(
                ItemWrite(
                    namespace=ns,
                    key=key,
                    value=None if op.value is None else dict(op.value),
                    encoded=encoded,
                    ttl=op.ttl,
                )
            )
            slot: list[int] = []
            if op.value is not None and self.index_config is not None and op.index is not False:
                for text in self._texts(op.value, op.index):
                    slot.append(texts.setdefault(text, len(texts)))
            slots.append(slot)
        queries = (
            list(dict.fromkeys(op.query for _, op in searches if op.query))
            if self.index_config is not None
            else []
        )
        return _Plan(size, gets, searches, lists, writes, list(texts), slots, queries)

    def _texts(self, value: Mapping[str, Any], index: list[str] | None) -> list[str]:
        paths = (
            self._fields
            if index is None
            else [(p, p if p == "$" else tokenize_path(p)) for p in index]
        )
        out: list[str] = []
        for _, field in paths:
            out.extend(get_text_at_path(value, field))
        return out

    def _check_vectors(self, vectors: Sequence[Sequence[float]], what: str) -> None:
        for v in vectors:
            if len(v) != self.dims:
                raise ConfigurationError(
                    f"The embedding model returned {len(v)}-dimensional vectors for {what},"
                    f" but index['dims'] is {self.dims}. Set dims to the model's output size."
                )

    # ----------------------------------------------------------------- execution
    def _execute(
        self,
        plan: _Plan,
        text_vectors: Sequence[Sequence[float]],
        query_vectors: dict[str, Sequence[float]],
    ) -> list[Result]:
        self._check_vectors(text_vectors, "stored items")
        self._check_vectors(list(query_vectors.values()), "search queries")
        now = self.clock()
        results: list[Result] = [None] * plan.size
        to_refresh: dict[TierName, list[StoredItem]] = {}

        # Reads see the state before this batch's writes, like LangGraph's InMemoryStore.
        by_ns: dict[tuple[str, ...], list[tuple[int, GetOp]]] = {}
        for i, gop in plan.gets:
            by_ns.setdefault(tuple(gop.namespace), []).append((i, gop))
        for ns, group in by_ns.items():
            tier_name = self._router.tier_for(ns)
            found = self._tier(tier_name).get(ns, [g.key for _, g in group], now=now)
            for i, gop in group:
                item = found.get(gop.key)
                if item is None:
                    continue
                results[i] = Item(
                    value=item.value,
                    key=item.key,
                    namespace=item.namespace,
                    created_at=to_datetime(item.created_at),
                    updated_at=to_datetime(item.updated_at),
                )
                if gop.refresh_ttl and item.ttl is not None:
                    to_refresh.setdefault(tier_name, []).append(item)

        for i, sop in plan.searches:
            prefix = tuple(sop.namespace_prefix)
            qv = query_vectors.get(sop.query) if sop.query else None
            merged: list[tuple[TierName, ScoredItem]] = []
            for tier_name in self._router.tiers_for_prefix(prefix):
                hits = self._tier(tier_name).search(
                    prefix,
                    query_vector=qv,
                    filter=sop.filter,
                    limit=sop.offset + sop.limit,
                    now=now,
                )
                merged.extend((tier_name, h) for h in hits)
            if qv is not None:
                ranked = sorted(
                    (m for m in merged if m[1][1] is not None), key=lambda m: rank_key(m[1])
                )
                merged = ranked + [m for m in merged if m[1][1] is None]
            page = merged[sop.offset : sop.offset + sop.limit]
            results[i] = [
                SearchItem(
                    namespace=item.namespace,
                    key=item.key,
                    value=item.value,
                    created_at=to_datetime(item.created_at),
                    updated_at=to_datetime(item.updated_at),
                    score=score,
                )
                for _, (item, score) in page
            ]
            if sop.refresh_ttl:
                for tier_name, (item, _) in page:
                    if item.ttl is not None:
                        to_refresh.setdefault(tier_name, []).append(item)

        for i, lop in plan.lists:
            lp = literal_prefix(lop.match_conditions)
            found_ns: set[tuple[str, ...]] = set()
            for tier_name in self._router.tiers_for_prefix(lp):
                found_ns.update(
                    ns
                    for ns in self._tier(tier_name).namespaces(lp, now=now)
                    if self._router.tier_for(ns) == tier_name
                )
            results[i] = select_namespaces(
                found_ns, lop.match_conditions, lop.max_depth, lop.limit, lop.offset
            )

        for tier_name, items in to_refresh.items():
            self._tier(tier_name).refresh(items, now=now)

        if plan.writes:
            by_tier: dict[TierName, list[ItemWrite]] = {}
            for w, slot in zip(plan.writes, plan.slots, strict=True):
                if slot:
                    w.vectors = [list(text_vectors[j]) for j in slot]
                by_tier.setdefault(self._router.tier_for(w.namespace), []).append(w)
            for tier_name, writes in by_tier.items():
                self._tier(tier_name).write(writes, now=now)
        return results


# --------------------------------------------------------------------------- config checks


def check_key_prefix(key_prefix: str) -> str:
    """Validate `key_prefix` (used in Redis keys and Chroma collection names)."""
    if not isinstance(key_prefix, str) or not _KEY_PREFIX.match(key_prefix):
        raise ConfigurationError(
            f"key_prefix {key_prefix!r} is invalid: use 2-48 letters, digits or underscores,"
            " starting with a letter or digit (it becomes part of Redis keys and Chroma"
            " collection names)."
        )
    return key_prefix


def _check_ttl_config(ttl: TTLConfig | None) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, dict):
        raise ConfigurationError(f"ttl must be a TTLConfig dict, got {ttl!r}.")
    unknown = set(ttl) - {
        "refresh_on_read",
        "default_ttl",
        "sweep_interval_minutes",
        "omit_expired",
    }
    if unknown:
        raise ConfigurationError(
            f"Unknown TTLConfig keys {sorted(unknown)}; use refresh_on_read, default_ttl,"
            " sweep_interval_minutes."
        )
    try:
        validate_ttl(ttl.get("default_ttl"))
    except InvalidItemError as e:
        raise ConfigurationError(f"ttl['default_ttl'] is invalid: {e}") from e
    interval = ttl.get("sweep_interval_minutes")
    if interval is not None and (
        isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0
    ):
        raise ConfigurationError(
            f"ttl['sweep_interval_minutes'] must be a positive number or None, got {interval!r}."
        )
    return dict(ttl)  # type: ignore[return-value]


def _check_scoring(scoring: ScoringConfig | None) -> ScoringConfig:
    scoring = scoring or {"mode": "similarity"}
    if not isinstance(scoring, dict):
        raise ConfigurationError("scoring must be a dict such as {'mode': 'similarity'}.")
    mode = scoring.get("mode", "similarity")
    if mode != "similarity":
        raise ConfigurationError(
            f"scoring mode {mode!r} is not available in this version; use"
            " {'mode': 'similarity'} (score = cosine similarity)."
        )
    return {"mode": "similarity"}


def _check_index(
    index: IndexConfig | None,
) -> tuple[IndexConfig | None, Any, list[tuple[str, Any]]]:
    if index is None:
        return None, None, []
    if not isinstance(index, dict):
        raise ConfigurationError(f"index must be an IndexConfig dict, got {index!r}.")
    dims = index.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
        raise ConfigurationError(
            f"index['dims'] must be a positive int (the embedding size), got {dims!r}."
        )
    cfg = cast(IndexConfig, dict(index))
    embeddings = resolve_embeddings(cfg.get("embed"))
    fields = cfg.get("fields") or ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise ConfigurationError(
            f"index['fields'] must be a list of field paths such as ['content'], got {fields!r}."
        )
    tokenized = [(p, p if p == "$" else tokenize_path(p)) for p in fields]
    return cfg, embeddings, tokenized
