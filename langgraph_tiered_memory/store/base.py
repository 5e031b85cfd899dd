"""Planning shared by the sync and async stores (no I/O here).

A batch is planned first: every op is validated, puts are de-duplicated (last write
wins), the texts to embed and the queries are collected. Only then does the store
embed (sync or async) and execute the plan against the tiers. A bad op therefore
fails the whole batch before anything is written.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, cast

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

from langgraph_tiered_memory._redact import mask_urls_in
from langgraph_tiered_memory._redis_client import DEFAULT_REDIS_TIMEOUT, check_redis_timeout
from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierName, TierPolicy
from langgraph_tiered_memory.embeddings import resolve_embeddings
from langgraph_tiered_memory.errors import ConfigurationError, InvalidFilterError, InvalidItemError
from langgraph_tiered_memory.forgetting import ForgettingPolicy
from langgraph_tiered_memory.memory import MemoryEntry, memory_fields
from langgraph_tiered_memory.memory_keys import context_text, sentence_chunks, time_words
from langgraph_tiered_memory.ranking import (
    MemoryCandidate,
    ScoreBreakdown,
    Scoring,
    UserScope,
    keyword_terms,
    rank_memories,
    split_search_options,
)
from langgraph_tiered_memory.store import maintenance
from langgraph_tiered_memory.store._common import (
    SURROGATE_FIX,
    ItemWrite,
    StoredItem,
    check_labels,
    check_search_text,
    check_value,
    encode_value,
    find_bad_text,
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
from langgraph_tiered_memory.store.tiers.base import Tier

__all__ = ["TieredStoreCore", "DEFAULT_CHROMA_PATH", "DEFAULT_KEY_PREFIX", "MemoryHit"]

DEFAULT_CHROMA_PATH = os.path.join(".tiered-memory", "chroma")
"""Where the embedded Chroma database lives when neither `chroma_client` nor
`chroma_path` is given (relative to the working directory); the environment variable
`TIERED_MEMORY_CHROMA_PATH` overrides it."""

_log = logging.getLogger("langgraph_tiered_memory.store")

DEFAULT_KEY_PREFIX = "tm"
"""Default prefix of every Redis key and Chroma collection the store creates."""

_KEY_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{1,47}$")


class MemoryHit(NamedTuple):
    """One result of `search_memories`: the memory, its score and how it was made."""

    entry: MemoryEntry
    score: float
    breakdown: ScoreBreakdown


class _Ranked(NamedTuple):
    item: StoredItem
    score: float | None
    breakdown: ScoreBreakdown | None
    stats: Any


class _Plan(NamedTuple):
    size: int
    gets: list[tuple[int, GetOp]]
    searches: list[tuple[int, SearchOp, dict[str, Any], dict[str, Any] | None]]
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
        memory_index_path: str | None = None,
        redis_timeout: float = DEFAULT_REDIS_TIMEOUT,
    ) -> None:
        from langgraph_tiered_memory.store._backends import build_tiers

        self._router = TierRouter(tiers)
        self.key_prefix = check_key_prefix(key_prefix)
        self.ttl_config = _check_ttl_config(ttl)
        self.scoring: Scoring = Scoring.from_config(scoring)
        self.clock: Callable[[], float] = time.time if clock is None else _checked_clock(clock)
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
            describe=self._describe if self.memory_mode else None,
            memory_index_path=memory_index_path,
            redis_timeout=check_redis_timeout(redis_timeout),
        )
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        interval = (self.ttl_config or {}).get("sweep_interval_minutes")
        if interval:
            self._start_sweeper(float(interval) * 60)

    def _start_sweeper(self, every_seconds: float) -> None:
        def run() -> None:
            failures = 0
            while not self._sweeper_stop.wait(every_seconds):
                try:
                    self.sweep_ttl()
                except Exception as e:  # background work logs and carries on
                    failures += 1
                    if failures == 1:  # once per streak of failures
                        _log.warning(
                            "TTL sweep failed, retrying every %g s: %s",
                            every_seconds,
                            mask_urls_in(str(e)),
                            exc_info=True,
                        )
                    continue
                if failures:
                    _log.info("TTL sweep succeeded again after %d failed attempts", failures)
                    failures = 0

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
    def memory_mode(self) -> bool:
        """Whether long-term items are memories ranked by `"memory"` scoring."""
        return self.scoring.mode == "memory"

    def _keyword_text(self, value: Mapping[str, Any], index: list[str] | None) -> str:
        if self.index_config is not None:
            return "\n".join(self._texts(value, index))
        content = value.get("content")
        return content if isinstance(content, str) else ""

    def _describe(self, value: dict[str, Any]) -> tuple[str, str, Any]:
        """Keyword text, time key and memory fields of a stored value (to rebuild the index)."""
        fields = memory_fields(value)
        text = self._keyword_text(value, None)
        time_text = time_words(text, fields.occurred_at) if self.scoring.time_keys else ""
        return text, time_text, fields

    def _add_memory_keys(self, plan: _Plan) -> None:
        """Give long-term memory writes their context, sentence and time keys.

        Reads the memory written before each one in its namespace (I/O), so it runs
        after planning and before embedding.
        """
        if not self.memory_mode or not plan.writes:
            return
        cfg = self.scoring
        tier: Any = self._tiers.get("long")
        index = {t: i for i, t in enumerate(plan.texts)}
        stored: dict[tuple[str, ...], set[str]] = {}
        last_new: dict[tuple[str, ...], str] = {}
        for w, slot in zip(plan.writes, plan.slots, strict=True):
            if w.memory is None or tier is None:
                continue
            own = w.keyword_text or ""
            if cfg.time_keys:
                w.time_text = time_words(own, w.memory.occurred_at)
            if not own:
                continue
            if cfg.context_keys:
                ns = w.namespace
                if ns not in stored:
                    keys = [x.key for x in plan.writes if x.namespace == ns]
                    stored[ns] = set(tier.memory_stats(ns, keys))
                if w.key in stored[ns] or ns not in last_new:
                    w.context_text = tier.previous_text(ns, w.key)
                else:
                    w.context_text = last_new[ns]
                if w.key not in stored[ns]:
                    last_new[ns] = own
            if not slot:
                continue  # not embedded: keyword keys only
            extra = sentence_chunks(own, cfg.sentence_keys)
            ctx = context_text(w.context_text, own) if cfg.context_keys else None
            if ctx is not None:
                extra.append(ctx)
            w.key_vectors = len(extra)
            for text in extra:
                if text not in index:
                    index[text] = len(plan.texts)
                    plan.texts.append(text)
                slot.append(index[text])

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
    def _run_batch(
        self, ops: Iterable[Op], *, keep: Mapping[tuple[tuple[str, ...], str], Any] | None = None
    ) -> list[Result]:
        """Run a batch of operations.

        `keep` maps the (namespace, key) of rewritten items to the stored items whose
        TTL and expiry the rewrite keeps (internal rewrites only).
        """
        plan = self._plan(ops)
        _keep_expiries(plan, keep)
        self._prepare(plan)
        vectors: list[list[float]] = []
        queries: dict[str, Any] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = self.embeddings.embed_documents(plan.texts)
            queries = {q: self.embeddings.embed_query(q) for q in plan.queries}
        return self._execute(plan, vectors, queries)

    async def _arun_batch(
        self, ops: Iterable[Op], *, keep: Mapping[tuple[tuple[str, ...], str], Any] | None = None
    ) -> list[Result]:
        plan = self._plan(ops)
        _keep_expiries(plan, keep)
        if plan.writes:
            await asyncio.to_thread(self._prepare, plan)
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

    def _prepare(self, plan: _Plan) -> None:
        """Checks and reads a planned batch needs before embedding and writing (I/O).

        Every tier checks that it can take the writes to its target namespaces (on
        the long tier: their stored embedding size), so a batch that would fail on
        one of them fails before its first write. Then memory writes get their keys.
        """
        if not plan.writes:
            return
        targets: dict[TierName, dict[tuple[str, ...], None]] = {}
        for w in plan.writes:
            targets.setdefault(self._router.tier_for(w.namespace), {})[w.namespace] = None
        for tier_name, namespaces in targets.items():
            self._tier(tier_name).check_writes(list(namespaces))
        self._add_memory_keys(plan)

    @staticmethod
    def _check_search_text(
        prefix: Sequence[str], query: Any, filter: Any, user_id: Any = None
    ) -> None:
        """Refuse text no backend or model can take, before a search embeds its query.

        Raises:
            InvalidNamespaceError: a prefix label is not UTF-8 encodable.
            InvalidFilterError: the query, filter or user id is not UTF-8 encodable.
        """
        check_labels(prefix, "Namespace prefix")
        check_search_text(query, filter)
        if user_id is not None:
            check_search_text(None, {"$user": user_id})

    # ----------------------------------------------------------------- planning
    def _plan(self, ops: Iterable[Op]) -> _Plan:
        gets: list[tuple[int, GetOp]] = []
        searches: list[tuple[int, SearchOp, dict[str, Any], dict[str, Any] | None]] = []
        lists: list[tuple[int, ListNamespacesOp]] = []
        puts: dict[tuple[tuple[str, ...], str], tuple[PutOp, str | None, Any]] = {}
        size = 0
        for i, op in enumerate(ops):
            size += 1
            if isinstance(op, GetOp):
                check_labels(op.namespace)
                validate_key(op.key)
                gets.append((i, op))
            elif isinstance(op, SearchOp):
                self._check_search_text(op.namespace_prefix, op.query, op.filter)
                options, value_filter = split_search_options(op.filter)
                validate_filter(value_filter, allow_non_finite=self.allow_non_finite_filters)
                if options and not self.memory_mode:
                    raise InvalidFilterError(
                        f"Search options {sorted(options)} need scoring={{'mode': 'memory'}};"
                        " this store scores by similarity. Remove them from the filter."
                    )
                if op.limit < 0 or op.offset < 0:
                    raise ValueError(
                        f"search limit and offset must be >= 0, got limit={op.limit},"
                        f" offset={op.offset}."
                    )
                searches.append((i, op, options, value_filter))
            elif isinstance(op, ListNamespacesOp):
                for cond in op.match_conditions or ():
                    check_labels(cond.path, f"Namespace {cond.match_type}")
                lists.append((i, op))
            elif isinstance(op, PutOp):
                ns = validate_namespace(op.namespace)
                key = validate_key(op.key)
                # Depth and text first: later steps recurse into the value.
                if op.value is not None:
                    check_value(ns, key, op.value)
                fields = None
                if (
                    isinstance(op.value, Mapping)
                    and self.memory_mode
                    and self._router.tier_for(ns) == "long"
                ):
                    fields = memory_fields(dict(op.value), key=key)  # before encoding
                encoded = (
                    None if op.value is None else encode_value(ns, key, op.value, checked=True)
                )
                validate_ttl(op.ttl)
                if op.index not in (None, False) and not (
                    isinstance(op.index, list) and all(isinstance(p, str) for p in op.index)
                ):
                    raise InvalidItemError(
                        f"index for item {key!r} must be False, None or a list of field paths,"
                        f" got {op.index!r}."
                    )
                bad_path = (
                    find_bad_text(op.index, max_depth=1, str_keys=False) if op.index else None
                )
                if bad_path is not None:
                    raise InvalidItemError(
                        f"index of item {key!r} in {ns} cannot be used: {bad_path[1]} cannot"
                        f" be encoded as UTF-8. {SURROGATE_FIX}"
                    )
                puts.pop((ns, key), None)  # keep the position of the last write
                puts[(ns, key)] = (op, encoded, fields)
            else:
                raise ValueError(
                    f"Unknown operation type {type(op).__name__}; expected GetOp, PutOp,"
                    " SearchOp or ListNamespacesOp."
                )
        writes: list[ItemWrite] = []
        texts: dict[str, int] = {}
        slots: list[list[int]] = []
        for (ns, key), (op, encoded, fields) in puts.items():
            write = ItemWrite(
                namespace=ns,
                key=key,
                value=None if op.value is None else dict(op.value),
                encoded=encoded,
                ttl=op.ttl,
            )
            if fields is not None and op.value is not None:
                write.memory = fields
                write.keyword_text = (
                    "" if op.index is False else self._keyword_text(op.value, op.index)
                )
            writes.append(write)
            slot: list[int] = []
            if op.value is not None and self.index_config is not None and op.index is not False:
                for text in self._texts(op.value, op.index):
                    slot.append(texts.setdefault(text, len(texts)))
            slots.append(slot)
        queries = (
            list(dict.fromkeys(op.query for _, op, _, _ in searches if op.query))
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

        to_touch: list[StoredItem] = []
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
                if tier_name == "long" and self.memory_mode:
                    to_touch.append(item)

        for i, sop, options, value_filter in plan.searches:
            prefix = tuple(sop.namespace_prefix)
            qv = query_vectors.get(sop.query) if sop.query else None
            merged = self._search_tiers(
                prefix, sop.query, qv, value_filter, options, sop.offset + sop.limit, now
            )
            page = merged[sop.offset : sop.offset + sop.limit]
            results[i] = [
                SearchItem(
                    namespace=r.item.namespace,
                    key=r.item.key,
                    value=r.item.value,
                    created_at=to_datetime(r.item.created_at),
                    updated_at=to_datetime(r.item.updated_at),
                    score=r.score,
                )
                for _, r in page
            ]
            for tier_name, r in page:
                if tier_name == "long" and self.memory_mode:
                    to_touch.append(r.item)
                if sop.refresh_ttl and r.item.ttl is not None:
                    to_refresh.setdefault(tier_name, []).append(r.item)

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
        if to_touch:
            self._long().touch(to_touch, now=now)

        if plan.writes:
            by_tier: dict[TierName, list[ItemWrite]] = {}
            for w, slot in zip(plan.writes, plan.slots, strict=True):
                if slot:
                    w.vectors = [list(text_vectors[j]) for j in slot]
                by_tier.setdefault(self._router.tier_for(w.namespace), []).append(w)
            for tier_name, writes in by_tier.items():
                self._tier(tier_name).write(writes, now=now)
        return results

    def _long(self) -> Any:
        return self._tiers["long"]

    def _user_scope(self, options: dict[str, Any]) -> UserScope | None:
        """The caller's scope from `$user` (any retrieval mode), or None.

        Raises:
            InvalidFilterError: contextual retrieval without a `$user`.
        """
        cfg = self.scoring
        user = options.get("$user")
        if user is None:
            if self.memory_mode and options.get("$retrieval", cfg.retrieval) == "contextual":
                raise InvalidFilterError(
                    "Contextual retrieval needs the caller's user id: pass filter={'$user':"
                    " '<user id>'} (or search_memories(..., user_id=...)), or use 'hybrid'."
                )
            return None
        return UserScope(user, cfg.user_label, cfg.shared_types)

    def _finds_nothing(self, query: str, options: dict[str, Any]) -> bool:
        """Whether a query can match nothing: keyword-only retrieval and no word in it."""
        retrieval = options.get("$retrieval", self.scoring.retrieval)
        keyword_only = retrieval == "keyword" or (
            retrieval == "contextual" and self.embeddings is None
        )
        return keyword_only and not keyword_terms(query)

    def _search_tiers(
        self,
        prefix: tuple[str, ...],
        query: str | None,
        qv: Sequence[float] | None,
        value_filter: dict[str, Any] | None,
        options: dict[str, Any],
        limit: int,
        now: float,
        *,
        long_only: bool = False,
    ) -> list[tuple[TierName, _Ranked]]:
        scope = self._user_scope(options) if self.memory_mode else None
        if self.memory_mode and query and self._finds_nothing(query, options):
            return []
        merged: list[tuple[TierName, _Ranked]] = []
        for tier_name in self._router.tiers_for_prefix(prefix):
            if long_only and tier_name != "long":
                continue
            if tier_name == "long" and self.memory_mode and query:
                ranked = self._memory_ranked(prefix, query, qv, value_filter, options, limit, now)
                if ranked is not None:
                    merged.extend(("long", r) for r in ranked)
                    continue
            hits = self._scoped_search(tier_name, prefix, qv, value_filter, limit, now, scope)
            merged.extend((tier_name, _Ranked(item, sc, None, None)) for item, sc in hits)
        if query and len(self._router.tiers_for_prefix(prefix)) > 1:
            scored = sorted(
                (m for m in merged if m[1].score is not None),
                key=lambda m: rank_key((m[1].item, m[1].score)),
            )
            merged = scored + [m for m in merged if m[1].score is None]
        return merged

    def _scoped_search(
        self,
        tier_name: TierName,
        prefix: tuple[str, ...],
        qv: Sequence[float] | None,
        value_filter: dict[str, Any] | None,
        limit: int,
        now: float,
        scope: UserScope | None,
    ) -> list[tuple[StoredItem, float | None]]:
        """`Tier.search` limited to what `scope` may see, before the page is cut.

        The tier skips namespaces of other users; when hidden items of shared
        namespaces (experiences, preferences) still fill the tier's `n` best, `n`
        grows until `limit` visible items are found or the tier has no more.
        """
        tier = self._tier(tier_name)
        keep = scope.may_hold if scope is not None else None
        n = limit
        while True:
            hits = tier.search(
                prefix,
                query_vector=qv,
                filter=value_filter,
                limit=n,
                now=now,
                namespace_filter=keep,
            )
            if scope is None:
                return hits
            # The memory index records the same `memory_type` the value holds (it is
            # read from the value at write time), so the value decides on every tier.
            seen = [(it, sc) for it, sc in hits if scope.allows(it.namespace, it.value)]
            if len(seen) >= limit or len(hits) < n:
                return seen[:limit]
            n *= 4

    def _memory_ranked(
        self,
        prefix: tuple[str, ...],
        query: str,
        qv: Sequence[float] | None,
        value_filter: dict[str, Any] | None,
        options: dict[str, Any],
        limit: int,
        now: float,
    ) -> list[_Ranked] | None:
        """Memory-ranked long-term results, or None when the query cannot rank.

        None (plain listing, LangGraph's contract) only for hybrid or semantic
        retrieval on a store without an index; a query without words under keyword
        retrieval finds nothing. The caller's scope (`$user`) filters candidates
        before they are ranked.
        """
        cfg = self.scoring
        retrieval = options.get("$retrieval", cfg.retrieval)
        min_score = options.get("$min_score", cfg.min_score)
        scope = self._user_scope(options)
        if self.embeddings is None and retrieval in ("hybrid", "semantic"):
            # Like LangGraph's stores: without an index a query does not rank (ask for
            # "keyword" or "contextual" retrieval explicitly to search the keyword index).
            return None
        use_dense = qv is not None and retrieval != "keyword"
        match = keyword_terms(query) if retrieval != "semantic" else None
        if not use_dense and not match:
            return []  # no word to look up and no vector: nothing matches
        base = max(cfg.candidates, limit) * (2 if retrieval == "contextual" else 1)
        pool = base
        while True:
            found = self._long().retrieve(
                prefix,
                query_vector=qv if use_dense else None,
                match=match,
                filter=value_filter,
                limit=pool,
                now=now,
                namespace_filter=scope.may_hold if scope is not None else None,
            )
            if scope is None:
                kept = list(found)
                break
            kept = [
                c
                for c in found
                if scope.allows(
                    c.item.namespace,
                    c.item.value,
                    c.stats.memory_type if c.stats is not None else None,
                )
            ]
            # A channel that returned a full pool may hold more visible candidates
            # behind hidden ones: fetch a larger pool until each channel has `base`.
            if not any(
                sum(getattr(c, ch) is not None for c in found) >= pool
                and sum(getattr(c, ch) is not None for c in kept) < base
                for ch in ("semantic", "own", "keyword")
            ):
                break
            pool *= 4
        # Contextual retrieval also boosts the caller's own memories (user_weight).
        owns = scope.owns if retrieval == "contextual" and scope is not None else None
        cands = [
            MemoryCandidate(
                semantic=c.semantic,
                keyword=c.keyword,
                importance=c.stats.importance if c.stats is not None else 0.5,
                last_touched=_recency_origin(c.stats, c.item.created_at, cfg.recency_from),
                access_count=c.stats.access_count if c.stats is not None else 0,
                own=owns is not None and owns(c.item.namespace),
                own_semantic=c.own,
                context_semantic=c.context,
                namespace=c.item.namespace,
                seq=c.stats.seq if c.stats is not None else None,
            )
            for c in kept
        ]
        ranked = rank_memories(
            cands,
            scoring=cfg,
            retrieval="hybrid" if retrieval == "contextual" else retrieval,
            now=now,
            min_score=min_score,
        )
        ranked.sort(key=lambda p: (-p[1].score, kept[p[0]].item.namespace, kept[p[0]].item.key))
        return [_Ranked(kept[j].item, b.score, b, kept[j].stats) for j, b in ranked[:limit]]

    # ----------------------------------------------------------------- memory API
    def _memory_entry(self, item: StoredItem, stats: Any) -> MemoryEntry:
        return MemoryEntry.from_value(
            key=item.key,
            namespace=item.namespace,
            value=item.value,
            created_at=item.created_at,
            updated_at=item.updated_at,
            last_accessed=stats.last_accessed if stats is not None else None,
            access_count=stats.access_count if stats is not None else 0,
        )

    def _check_memory_namespace(self, namespace: tuple[str, ...]) -> None:
        check_labels(namespace)
        if not self.memory_mode:
            raise ConfigurationError(
                "Memory records need scoring={'mode': 'memory'} (the default); this store"
                " was created with scoring mode 'similarity'."
            )
        if self._router.tier_for(namespace) != "long":
            raise ConfigurationError(
                f"Namespace {namespace} is routed to the short-term tier; memories and their"
                " statistics live on the long-term tier. Route it with tiers={...}."
            )

    def _get_memory(self, namespace: tuple[str, ...], key: str) -> MemoryEntry | None:
        namespace = tuple(namespace)
        self._check_memory_namespace(namespace)
        validate_key(key)
        tier = self._long()
        item = tier.get(namespace, [key], now=self.clock()).get(key)
        if item is None:
            return None
        stats = tier.memory_stats(namespace, [key]).get(key)
        return self._memory_entry(item, stats)

    def _search_memories(
        self,
        prefix: tuple[str, ...],
        query: str,
        qv: Sequence[float] | None,
        *,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        retrieval: str | None,
        user_id: str | None,
        min_score: float | None,
    ) -> list[MemoryHit]:
        if not self.memory_mode:
            raise ConfigurationError(
                "search_memories needs scoring={'mode': 'memory'} (the default); this store"
                " was created with scoring mode 'similarity'."
            )
        if not isinstance(query, str) or not query.strip():
            raise ValueError("search_memories needs a non-empty query string.")
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}.")
        raw = dict(filter or {})
        for name, val in (("$retrieval", retrieval), ("$user", user_id), ("$min_score", min_score)):
            if val is not None:
                raw[name] = val
        options, value_filter = split_search_options(raw)
        validate_filter(value_filter, allow_non_finite=self.allow_non_finite_filters)
        now = self.clock()
        ranked = self._memory_ranked(
            tuple(prefix), query, qv, value_filter, options, offset + limit, now
        )
        page = (ranked or [])[offset : offset + limit]
        self._long().touch([r.item for r in page], now=now)
        return [
            MemoryHit(self._memory_entry(r.item, r.stats), r.score, r.breakdown)  # type: ignore[arg-type]
            for r in page
        ]

    # ------------------------------------------ maintenance (async twins of both stores)
    async def agarbage_collect(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        dry_run: bool = True,
        policy: ForgettingPolicy | None = None,
        page_size: int = 1000,
        progress: Callable[[int], None] | None = None,
        now: float | None = None,
    ) -> dict[str, Any]:
        """Async `TieredMemoryStore.garbage_collect` (same options).

        The pass runs in a worker thread; `progress` is called from that thread.
        """
        return await asyncio.to_thread(
            maintenance.garbage_collect,
            self,
            tuple(namespace_prefix),
            dry_run=dry_run,
            policy=policy,
            page_size=page_size,
            progress=progress,
            now=now,
        )

    async def aforget(
        self,
        namespace: tuple[str, ...],
        keys: Collection[str],
        *,
        policy: ForgettingPolicy | None = None,
        now: float | None = None,
    ) -> list[dict[str, Any]]:
        """Async `TieredMemoryStore.forget`: delete those of `keys` the policy still flags."""
        return await asyncio.to_thread(
            maintenance.forget, self, tuple(namespace), keys, policy=policy, now=now
        )

    async def aconsolidate(
        self,
        namespace: tuple[str, ...],
        *,
        query: str | None = None,
        threshold: float = 0.9,
        min_similarity: float = 0.5,
        max_sources: int = 20,
        model: Any = None,
        originals: Literal["delete", "downweight"] = "delete",
        dry_run: bool = False,
        limit: int = 10_000,
        exclude: Collection[str] = (),
        now: float | None = None,
    ) -> list[dict[str, Any]]:
        """Async `TieredMemoryStore.consolidate`: merge related memories of one namespace."""
        return await asyncio.to_thread(
            functools.partial(
                maintenance.consolidate,
                self,
                tuple(namespace),
                query=query,
                threshold=threshold,
                min_similarity=min_similarity,
                max_sources=max_sources,
                model=model,
                originals=originals,
                dry_run=dry_run,
                limit=limit,
                exclude=exclude,
                now=now,
            )
        )

    async def apromote(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        predicate: Callable[[Item], bool] | None = None,
        target: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None,
        delete: bool = False,
        page_size: int = 500,
    ) -> maintenance.Promoted:
        """Async `TieredMemoryStore.promote`: copy worthy short-term items to long-term."""
        return await asyncio.to_thread(
            functools.partial(
                maintenance.promote,
                self,
                tuple(namespace_prefix),
                predicate=predicate,
                target=target,
                delete=delete,
                page_size=page_size,
            )
        )


def _keep_expiries(plan: _Plan, keep: Mapping[tuple[tuple[str, ...], str], Any] | None) -> None:
    """Give rewrites of stored items the TTL and expiry those items have now.

    Maintenance and reinforcement rewrite memories; a rewrite is not a new write, so a
    TTL memory keeps its expiry (and a memory without a TTL keeps none).
    """
    if not keep:
        return
    for w in plan.writes:
        item = keep.get((w.namespace, w.key))
        if item is not None and w.value is not None:
            w.ttl, w.expires_at = item.ttl, item.expires_at


def _reinforced(
    core: TieredStoreCore, namespace: tuple[str, ...], key: str, delta: float
) -> tuple[dict[str, Any], float, StoredItem] | None:
    """The reinforced value, its new importance and the stored item, or None.

    `importance` moves by `delta` and is clamped to [0, 1].
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta):
        raise ValueError(f"delta must be a finite number, got {delta!r}.")
    namespace = tuple(namespace)
    core._check_memory_namespace(namespace)
    validate_key(key)
    item = core._long().get(namespace, [key], now=core.clock()).get(key)  # not an access
    if item is None:
        return None
    value = dict(item.value)
    current = memory_fields(value, key=key).importance
    value["importance"] = min(1.0, max(0.0, current + float(delta)))
    return value, float(value["importance"]), item


def _checked_clock(clock: Callable[[], float]) -> Callable[[], float]:
    """`clock` returning a plain finite float (numpy or Decimal times are stored as JSON)."""
    if not callable(clock):
        raise ConfigurationError(
            f"clock must be a function returning epoch seconds, got {clock!r}."
        )

    def now() -> float:
        value = clock()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)
            except (TypeError, ValueError) as e:
                raise ConfigurationError(
                    f"clock() must return epoch seconds as a number, got {value!r}."
                ) from e
        value = float(value)
        if not math.isfinite(value):
            raise ConfigurationError(f"clock() must return a finite number, got {value!r}.")
        return value

    return now


def _recency_origin(stats: Any, created_at: float, origin: str) -> float:
    """The time recency decays from: the event time, or the last access."""
    if stats is None:
        return created_at
    if origin == "occurred_at":
        return float(stats.occurred_at if stats.occurred_at is not None else stats.created_at)
    return float(stats.last_accessed if stats.last_accessed is not None else stats.created_at)


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
