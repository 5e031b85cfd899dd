"""The core shared by the sync and async stores: configuration, tiers, batch execution.

A batch is planned first (`planning`, pure): every op is validated, puts are
de-duplicated, the texts to embed and the queries are collected. Then the store
checks the tiers can take the writes, embeds (sync or async) and executes the plan
here. Searches go through `search`; option checks and defaults are in `_config`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from langgraph.store.base import (
    GetOp,
    IndexConfig,
    Item,
    Op,
    Result,
    SearchItem,
    TTLConfig,
)

from langgraph_tiered_memory._redis_client import DEFAULT_REDIS_TIMEOUT, check_redis_timeout
from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierName, TierPolicy
from langgraph_tiered_memory.embeddings import embedder_name
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import Triple
from langgraph_tiered_memory.memory import memory_fields
from langgraph_tiered_memory.privacy._redact import mask_urls_in
from langgraph_tiered_memory.privacy.redaction import Redactor, RedactorSpec, resolve_redactor
from langgraph_tiered_memory.ranking.keys import context_text, sentence_chunks, time_words
from langgraph_tiered_memory.ranking.scoring import Scoring
from langgraph_tiered_memory.store._backends import build_graph, build_tiers, chroma_is_server
from langgraph_tiered_memory.store._config import (
    DEFAULT_CHROMA_PATH,
    DEFAULT_KEY_PREFIX,
    GraphConfig,
    check_clock,
    check_graph,
    check_index,
    check_key_prefix,
    check_ttl_config,
)
from langgraph_tiered_memory.store._graph_write import (
    GraphJobs,
    GraphSyncedTier,
    GraphSyncError,
    aextract,
    extract,
    plan_graph,
    repair_due,
)
from langgraph_tiered_memory.store._history import check_history
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._validate import check_vectors
from langgraph_tiered_memory.store.planning import (
    Plan,
    PlanConfig,
    check_search_input,
    keep_expiries,
    keyword_text,
)
from langgraph_tiered_memory.store.planning import plan as plan_batch
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.search import (
    MemoryHit,
    SearchRequest,
    check_memory_namespace,
    get_memory,
    search_memories,
    search_tiers,
)
from langgraph_tiered_memory.store.tiers._items import ItemWrite, StoredItem, to_datetime
from langgraph_tiered_memory.store.tiers._namespaces import literal_prefix, select_namespaces
from langgraph_tiered_memory.store.tiers.base import ContextInputs, MemoryTier, Tier
from langgraph_tiered_memory.store.tiers.sqlite_history import HistoryTable

__all__ = ["TieredStoreCore", "DEFAULT_CHROMA_PATH", "DEFAULT_KEY_PREFIX", "MemoryHit"]

_log = logging.getLogger("langgraph_tiered_memory.store")


class TieredStoreCore:
    """Configuration, planning and execution shared by both stores.

    Subclasses provide the tiers and decide how embeddings are computed (sync or
    async); execution against the tiers is synchronous and thread-safe.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        *,
        redis_url: str | None = None,
        redis_client: Any = None,
        chroma_client: Any = None,
        chroma_path: str | None = None,
        chroma_hnsw: ChromaHnswConfig | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        scoring: ScoringConfig | None = None,
        tiers: TierPolicy | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        clock: Callable[[], float] | None = None,
        allow_non_finite_filters: bool = True,
        memory_index_path: str | None = None,
        redis_timeout: float = DEFAULT_REDIS_TIMEOUT,
        redactor: RedactorSpec = None,
        graph: bool | str | GraphConfig | GraphStore | None = None,
        history: bool = True,
        short: Tier | None = None,
        long: Tier | None = None,
    ) -> None:
        """The options are documented on `TieredMemoryStore`."""
        super().__init__()  # the async store's `AsyncBatchedBaseStore` starts its queue here
        recording = check_history(history)
        self._router = TierRouter(tiers)
        self.graph: GraphStore | None = None
        self.graph_extractor: Any = None
        """The `TripleExtractor` of memory writes when the store keeps a graph."""
        self._owns_graph = False
        self.redactor: Redactor | None = resolve_redactor(redactor)
        self.key_prefix = check_key_prefix(key_prefix)
        self.ttl_config = check_ttl_config(ttl)
        self.scoring: Scoring = Scoring.from_config(scoring)
        self.clock: Callable[[], float] = check_clock(clock)
        self.allow_non_finite_filters = bool(allow_non_finite_filters)
        self.index_config, self.embeddings, fields = check_index(index)
        self._plan_config = PlanConfig(
            tier_for=self._router.tier_for,
            memory_mode=self.memory_mode,
            indexed=self.index_config is not None,
            fields=fields,
            allow_non_finite_filters=self.allow_non_finite_filters,
            redactor=self.redactor,
        )
        graph_spec = check_graph(
            graph,
            memory_mode=self.memory_mode,
            has_long_tier="long" in self._router.used_tiers,
            key_prefix=self.key_prefix,
        )
        extractor = None
        if graph_spec is not None:
            from langgraph_tiered_memory.graph.extract import resolve_extractor

            extractor = resolve_extractor(graph_spec.extractor)
        self._tiers: dict[TierName, Tier] = build_tiers(
            router=self._router,
            key_prefix=self.key_prefix,
            dims=self.dims,
            embedder=embedder_name(self.embeddings),
            redis_client=redis_client,
            redis_url=redis_url,
            chroma_client=chroma_client,
            chroma_path=chroma_path,
            chroma_hnsw=chroma_hnsw,
            describe=self._describe if self.memory_mode else None,
            memory_index_path=memory_index_path,
            redis_timeout=check_redis_timeout(redis_timeout),
            import_graph=lambda: self.graph,  # made below; the long tier opens later
            short=short,
            long=long,
        )
        if graph_spec is not None:
            try:  # the graph beside the long tier (nothing connects yet)
                long_tier = self._long()
                short_client = getattr(self._tiers.get("short"), "client", None)
                self.graph, self._owns_graph = build_graph(
                    graph_spec,
                    long_tier,
                    chroma_server=chroma_is_server(chroma_client, chroma_path),
                    redis_client=short_client or getattr(long_tier, "redis", None),
                )
                self.graph_extractor = extractor
                if not self.graph.in_tier_transaction:
                    # The tier's own deletes (TTL sweeps) must reach a graph it does not write.
                    synced = GraphSyncedTier(long_tier, self.graph, self.scoring.user_label)
                    self._tiers["long"] = cast(Tier, synced)
            except BaseException:
                for tier in self._tiers.values():
                    tier.close()
                raise
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        interval = (self.ttl_config or {}).get("sweep_interval_minutes")
        if interval:
            self._start_sweeper(float(interval) * 60)
        self.history_enabled = recording
        recorder: Any = self._tiers.get("long")
        if recorder is not None:
            inner = getattr(recorder, "_synced_tier", recorder)  # a `GraphSyncedTier` wraps it
            inner.record_history = recording

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
        try:
            for tier in self._tiers.values():
                tier.close()
        finally:
            if self.graph is not None and self._owns_graph:
                self.graph.close()

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

    def _memory_text(self, value: Mapping[str, Any]) -> str:
        """The indexed text of a stored value (its index fields, joined)."""
        return keyword_text(self._plan_config, value, None)

    def _describe(self, value: dict[str, Any]) -> tuple[str, str, Any]:
        """Keyword text, time key and memory fields of a stored value (to rebuild the index)."""
        fields = memory_fields(value)
        text = self._memory_text(value)
        time_text = time_words(text, fields.occurred_at) if self.scoring.time_keys else ""
        return text, time_text, fields

    def _add_memory_keys(self, plan: Plan) -> None:
        """Give long-term memory writes their context, sentence and time keys.

        Reads the memory written before each one in its namespace (I/O), so it runs
        after planning and before embedding.
        """
        if not self.memory_mode or not plan.writes:
            return
        cfg = self.scoring
        tier = self._long() if "long" in self._tiers else None
        index = {t: i for i, t in enumerate(plan.texts)}
        inputs: dict[tuple[str, ...], ContextInputs] = {}
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
                if ns not in inputs:  # one read per namespace of the batch
                    keys = [
                        x.key
                        for x in plan.writes
                        if x.namespace == ns and x.memory is not None and x.keyword_text
                    ]
                    inputs[ns] = tier.context_inputs(ns, keys)
                stored = w.key in inputs[ns].memories
                if stored or ns not in last_new:
                    w.context_text = inputs[ns].previous.get(w.key)
                else:
                    w.context_text = last_new[ns]
                if not stored:
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
        """Check the backends answer and create what the tiers need. Idempotent.

        On a Chroma server with `memory_index_path`, the long tier imports that legacy
        file into its Redis index here (or on its first call), the triples into `graph`.

        With a graph on a Chroma server, the memories whose graph update a writer left
        due (it died, or the graph failed) get their triples re-extracted.
        """
        for tier in self._tiers.values():
            tier.setup()
        if self.graph is not None:
            self.graph.setup()
            repair_due(cast(StoreCore, self))

    def sweep_ttl(self) -> int:
        """Delete expired items now (Redis expires its own; Chroma needs this).

        Returns:
            The number of items removed.
        """
        now = self.clock()
        return sum(tier.sweep(now=now) for tier in self._tiers.values())

    # ----------------------------------------------------------------- running
    def _run_batch(
        self,
        ops: Iterable[Op],
        *,
        keep: Mapping[tuple[tuple[str, ...], str], Any] | None = None,
        support: Mapping[tuple[tuple[str, ...], str], Sequence[Triple]] | None = None,
    ) -> list[Result]:
        """Run a batch of operations.

        `keep` maps the (namespace, key) of rewritten items to the stored items whose
        TTL and expiry the rewrite keeps (internal rewrites only: their content is
        kept, so their triples are too). `support` maps (namespace, key) of memory
        writes to triples they support besides those of their text (consolidation).
        """
        plan = self._plan(ops)
        keep_expiries(plan, keep)
        self._prepare(plan, self._graph_jobs(plan, keep, support))
        vectors: list[list[float]] = []
        queries: dict[str, Any] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = self.embeddings.embed_documents(plan.texts)
            queries = {q: self.embeddings.embed_query(q) for q in plan.queries}
        return self._execute(plan, vectors, queries)

    async def _arun_batch(self, ops: Iterable[Op]) -> list[Result]:
        """`_run_batch` for the async store (whose internal rewrites run sync)."""
        plan = self._plan(ops)
        jobs = self._graph_jobs(plan, None, None)
        if jobs is not None and not jobs.done:
            await aextract(self.graph_extractor, jobs)  # before the thread hop
        if plan.writes:
            await asyncio.to_thread(self._prepare, plan, jobs)
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

    def _graph_jobs(
        self,
        plan: Plan,
        keep: Mapping[tuple[tuple[str, ...], str], Any] | None,
        support: Mapping[tuple[tuple[str, ...], str], Sequence[Triple]] | None,
    ) -> GraphJobs | None:
        """The triples of a planned batch's memory writes (None: the store keeps no graph)."""
        if self.graph is None or not plan.writes:
            return None
        return plan_graph(
            plan.writes,
            tier_for=self._router.tier_for,
            user_label=self.scoring.user_label,
            keep=keep,
            support=support,
        )

    def _prepare(self, plan: Plan, jobs: GraphJobs | None = None) -> None:
        """Checks and reads a planned batch needs before embedding and writing (I/O).

        Every tier checks that it can take the writes to its target namespaces (on
        the long tier: their stored embedding size), so a batch that would fail on
        one of them fails before its first write. Then the triples of memory writes
        are extracted (sync store; the async one has awaited its extractor already)
        and memory writes get their keys.
        """
        if not plan.writes:
            return
        targets: dict[TierName, dict[tuple[str, ...], None]] = {}
        for w in plan.writes:
            targets.setdefault(self._router.tier_for(w.namespace), {})[w.namespace] = None
        for tier_name, namespaces in targets.items():
            self._tier(tier_name).check_writes(list(namespaces))
        if jobs is not None:
            extract(self.graph_extractor, jobs)
        self._add_memory_keys(plan)

    _check_search_text = staticmethod(check_search_input)

    # ----------------------------------------------------------------- planning
    def _plan(self, ops: Iterable[Op]) -> Plan:
        return plan_batch(ops, self._plan_config)

    def _check_vectors(
        self, vectors: Sequence[Sequence[float]], what: str, *, count: int | None = None
    ) -> None:
        """`_validate.check_vectors` at the store's `dims`: ConfigurationError on bad output."""
        check_vectors(vectors, dims=self.dims, what=what, count=count)

    # ----------------------------------------------------------------- execution
    def _execute(
        self,
        plan: Plan,
        text_vectors: Sequence[Sequence[float]],
        query_vectors: dict[str, Sequence[float]],
    ) -> list[Result]:
        self._check_vectors(text_vectors, "stored items", count=len(plan.texts))
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
            qv = query_vectors.get(sop.query) if sop.query else None
            req = SearchRequest(
                tuple(sop.namespace_prefix),
                sop.query,
                qv,
                value_filter,
                options,
                sop.offset + sop.limit,
                now,
            )
            merged = search_tiers(self, req)
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
            count = options.get("$count_access", True)
            for tier_name, r in page:
                if tier_name == "long" and self.memory_mode and count:
                    to_touch.append(r.item)
                if sop.refresh_ttl and r.item.ttl is not None:
                    to_refresh.setdefault(tier_name, []).append(r.item)

        for i, lop in plan.lists:
            lp = literal_prefix(lop.match_conditions)
            found_ns: dict[tuple[str, ...], None] = {}
            tiers = self._router.tiers_for_prefix(lp)
            for tier_name in tiers:
                listed = self._tier(tier_name).namespaces(lp, now=now)
                if len(tiers) > 1:  # with one tier, everything under lp is routed to it
                    listed = [ns for ns in listed if self._router.tier_for(ns) == tier_name]
                found_ns.update(dict.fromkeys(listed))
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
            behind: GraphSyncError | None = None
            for tier_name, writes in by_tier.items():
                try:
                    self._tier(tier_name).write(writes, now=now)
                except GraphSyncError as e:  # stored, graph behind: the other tiers still write
                    behind = e
            if behind is not None:
                raise behind
        return results

    # ------------------------------------------------------------------ history
    history_enabled: bool = False
    """Whether the store records memory history (the `history` option)."""

    def _history_table(self) -> HistoryTable:
        """The history table of the long tier's index (its SQLite file, or Redis).

        Raises:
            ConfigurationError: history is off, or the store has no long tier.
        """
        if not self.history_enabled:
            raise ConfigurationError(
                "This store was created with history=False: no memory history is recorded."
                " Create it with history=True (the default) to record one."
            )
        table = self._history_file()
        if table is None:
            raise ConfigurationError(
                "Memory history lives in the long tier's index (its SQLite file, or Redis"
                " with a Chroma server); this store has no long tier (its tiers= policy"
                " routes nothing to 'long')."
            )
        return table

    def _history_file(self) -> HistoryTable | None:
        tier: Any = self._tiers.get("long")
        if tier is None:
            return None
        return cast("HistoryTable | None", tier.history_table())

    def _long(self) -> MemoryTier:
        # `build_tiers` makes the long tier a `MemoryTier` (checked by mypy there).
        return cast(MemoryTier, self._tiers["long"])

    # ----------------------------------------------------------------- memory API
    _check_memory_namespace = check_memory_namespace
    _get_memory = get_memory
    _search_memories = search_memories
