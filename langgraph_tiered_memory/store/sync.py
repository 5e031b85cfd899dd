"""`TieredMemoryStore`: the synchronous `BaseStore`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, cast

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    NotProvided,
    Op,
    PutOp,
    Result,
)

from langgraph_tiered_memory._redis_client import redis_call
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.privacy.history import acting, current_actor
from langgraph_tiered_memory.ranking.scoring import RetrievalMode
from langgraph_tiered_memory.store import maintenance
from langgraph_tiered_memory.store.base import MemoryHit, TieredStoreCore
from langgraph_tiered_memory.store.tiers._history_events import in_event

if TYPE_CHECKING:
    from langgraph_tiered_memory.retriever import MemoryRetriever

__all__ = ["TieredMemoryStore"]


class _TieredStore(TieredStoreCore):
    """What both stores share: batch entry points, retriever, overrides.

    Also `aupdate_importance` and the attributed `aput`/`adelete`. The constructor is
    `TieredStoreCore`'s; its options are documented on `TieredMemoryStore`.
    """

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch of operations; results come back in op order.

        On the async store, call it from a thread other than the event loop's.
        """
        with redis_call():  # the batch's Redis round trips share one time budget
            return self._run_batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch without blocking the event loop.

        Embeddings use the model's async API; the Redis and Chroma I/O runs in a thread.
        """
        with redis_call():  # the batch's Redis round trips share one time budget
            return await self._arun_batch(ops)

    def as_retriever(
        self,
        namespace: Sequence[str],
        *,
        user_id: str | None = None,
        k: int = 4,
        retrieval: RetrievalMode | None = None,
        min_score: float | None = None,
    ) -> MemoryRetriever:
        """A LangChain `BaseRetriever` returning this store's memories as `Document`s.

        Each `Document` has the memory's text as `page_content` and `namespace`,
        `key`, `memory_type`, `importance`, `score` and `score_breakdown` in its
        metadata. Searches count as accesses, as `search_memories` does.

        Args:
            namespace: Namespace prefix to search; labels may hold `{name}`
                placeholders such as `("users", "{user_id}")`.
            user_id: The user the retriever serves: fills `{user_id}` and limits the
                search to that user's memories (plus shared facts and skills outside
                any user's namespace). None: read from each run's
                `config["configurable"]["user_id"]`, when there is one.
            k: Most memories per query (default 4).
            retrieval: Retrieval mode of its searches (default: the store's).
            min_score: Drop memories scoring below this (default: the store's).

        Raises:
            ConfigurationError: the namespace template, `k` or `user_id` is invalid,
                the store does not rank memories, or the namespace belongs to another
                user.
        """
        from langgraph_tiered_memory.retriever import MemoryRetriever

        return MemoryRetriever(
            store=self,
            namespace=tuple(namespace),
            user_id=user_id,
            k=k,
            retrieval=retrieval,
            min_score=min_score,
        )

    def _search_memories_sync(
        self,
        namespace_prefix: tuple[str, ...],
        query: str,
        *,
        limit: int,
        retrieval: RetrievalMode | None,
        user_id: str | None,
        min_score: float | None,
    ) -> list[MemoryHit]:
        """`search_memories` for the async store's sync callers (not on the event loop)."""
        core: Any = self
        core._check_search_text(namespace_prefix, query, None, user_id)
        qv = None
        if core.embeddings is not None and retrieval != "keyword":
            qv = core.embeddings.embed_query(query)
            core._check_vectors([qv], "search queries")
        with redis_call():
            hits: list[MemoryHit] = core._search_memories(
                tuple(namespace_prefix),
                query,
                qv,
                filter=None,
                limit=limit,
                offset=0,
                retrieval=retrieval,
                user_id=user_id,
                min_score=min_score,
            )
        return hits

    async def aupdate_importance(
        self, namespace: tuple[str, ...], key: str, delta: float
    ) -> float | None:
        """Async `update_importance` (same arguments and result).

        Read and rewrite run together in a worker thread, under the long tier's writer
        lock like `update_importance` (a lock cannot be held across an `await`).
        """
        return await asyncio.to_thread(maintenance.update_importance, self, namespace, key, delta)

    # ------------------------------------------------------------------ async attribution
    # The async store gathers `aput`/`adelete` calls into batches run by a background
    # task, outside the caller's context: a write made inside `acting(...)` would lose
    # its actor, and the task would keep the actor of whoever started it. Attributed
    # writes therefore run as their own batch in the caller's context, and the task is
    # started in the default context.
    def _ensure_task(self) -> None:
        start = cast(Callable[[], None], getattr(super(), "_ensure_task"))  # noqa: B009
        with acting("user"):
            start()

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """Store or update an item (see `BaseStore.aput`)."""
        parent = cast(Any, super())
        if current_actor() == ("user", None) and not in_event():
            await parent.aput(namespace, key, value, index, ttl=ttl)
            return
        if ttl is NOT_PROVIDED:
            ttl = (getattr(self, "ttl_config", None) or {}).get("default_ttl")
        op = PutOp(tuple(namespace), key, dict(value), index, ttl=cast(Any, ttl))
        await cast(Any, self).abatch([op])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item (see `BaseStore.adelete`)."""
        if current_actor() == ("user", None) and not in_event():
            await cast(Any, super()).adelete(namespace, key)
            return
        await cast(Any, self).abatch([PutOp(tuple(namespace), key, None)])


class TieredMemoryStore(_TieredStore, BaseStore):
    """A LangGraph `BaseStore` over two tiers: Redis (short-term) and Chroma (long-term).

    Namespaces are routed by a `TierPolicy`: by default those whose first label is
    `"short_term"` live in Redis, everything else in Chroma. Every `BaseStore`
    operation works on both tiers, with the same results as LangGraph's
    `InMemoryStore`.

    Beyond `BaseStore`, the store's own methods are its memory methods
    (`search_memories`, `get_memory`, `update_importance`) and `as_retriever`, which
    stays a method as LangChain's vector stores have it. Every other capability is a
    function taking the store: `privacy.erase_user(store, user_id)`,
    `privacy.export_user`, `privacy.memory_history`, `graph.graph_triples(store, ...)`,
    `graph.graph_neighbors`, `graph.rebuild_graph`, `store.maintenance.garbage_collect`,
    `forget`, `consolidate`, `promote`, and `agent.profile.get_user_profile`.

    Args:
        redis_url: URL of the Redis used by the short-term tier. Defaults to the
            `REDIS_URL` environment variable. Any Redis, Valkey or managed Redis works;
            no modules are needed.
        redis_client: An existing `redis.Redis` client instead of `redis_url`.
        chroma_client: An existing Chroma client (`PersistentClient`, `HttpClient`, ...).
            The store takes no lock on its directory and does not close it.
        chroma_path: Directory of the embedded Chroma database, created if missing.
            Defaults to `TIERED_MEMORY_CHROMA_PATH` or `./.tiered-memory/chroma`. The
            store locks it against other processes from first use until `close()`
            (`ChromaDirectoryInUseError`); to share one between processes, serve it with
            `chroma run` and pass `chroma_client=chromadb.HttpClient(...)`.
        chroma_hnsw: `ChromaHnswConfig` for the HNSW index of new namespaces.
        index: LangGraph `IndexConfig` (`dims`, `embed`, `fields`) enabling semantic
            search. `embed` may be an `Embeddings`, a function, a `"provider:model"`
            string, `"local"` (offline multilingual-e5-small, 384 dims) or `"local:minilm"`
            (offline all-MiniLM-L6-v2, 384 dims, the `minilm` extra).
        ttl: LangGraph `TTLConfig` (`default_ttl` in minutes, `refresh_on_read`,
            `sweep_interval_minutes` to sweep expired Chroma items in the background).
        scoring: `ScoringConfig`. The default `{"mode": "memory"}` ranks long-term
            items as memories (hybrid relevance, importance, recency, access count);
            `{"mode": "similarity"}` reports plain cosine similarity.
        tiers: `TierPolicy` routing namespaces to tiers.
        key_prefix: Prefix of every Redis key and Chroma collection of this store, so
            several stores can share one Redis server and one Chroma client.
            Case-sensitive: `"tm"` and `"TM"` are two stores.
        clock: Function returning the current time in epoch seconds (for tests).
        allow_non_finite_filters: Accept NaN and infinite numbers in search filters
            and compare them with IEEE semantics, as LangGraph's own stores do (the
            default): `{"$lt": float("inf")}` is no upper bound, and NaN matches
            nothing except under `$ne`. `False` is a strict mode that raises
            `InvalidFilterError` for them instead, before anything of the batch runs.
        memory_index_path: With a Chroma server only (whose long tier keeps its index
            in Redis, `redis_url`): a legacy file (where earlier versions kept that
            index per process) to import into Redis once, when the long tier opens
            (its triples go to `graph`). Once imported it is no longer read: it may be
            removed, with this option. Without a Chroma server it raises
            `ConfigurationError`: an embedded Chroma keeps the index in its directory,
            an in-memory Chroma in memory.
        redis_timeout: The most one store call waits on Redis, in seconds (default 15),
            when the store creates the client from `redis_url`: a frozen or unreachable
            server then raises `BackendUnavailableError` within this bound. Connection
            errors are retried within it, timeouts never. With `redis_client=` the
            client's own timeouts apply.
        redactor: Redact personal data from every value before it is stored, on both
            tiers: None (default) stores values as given; True uses `PatternRedactor()`
            (emails, phone numbers, card numbers, IBANs); or any `Redactor`, such as
            `PresidioRedactor`. Every string in the value is redacted (field names,
            keys and namespaces are kept), and a value where something was found gains
            `"redactions": {"email": 1, ...}` (in `MemoryEntry.metadata` on the long
            tier). Search queries are not redacted: they are not stored.
        graph: Keep a knowledge graph of (subject, relation, object) triples extracted
            from long-term memories (needs memory scoring and the long tier). None or
            False (default): no graph. True: the default graph with the rule extractor,
            SQLite beside an embedded Chroma; with a Chroma server FalkorDB on the
            store's own Redis (which needs the FalkorDB module; replicas share it).
            `"sqlite"`: tables in the long tier's SQLite index, written in each memory's
            own transaction. A `GraphConfig` dict chooses the backend (`"sqlite"`, or
            `"falkordb"` with `url` and optional `graph_name`; extra `graph`) and the
            `extractor` (`"rules"`, a chat model or `init_chat_model` string). Or a
            `GraphStore` instance (the caller closes it). Query it with
            `langgraph_tiered_memory.graph.graph_triples(store, ...)` and
            `graph_neighbors`; `rebuild_graph` re-extracts.
        history: Record every change to a long-term memory (True, default): its
            time, actor, reason and content hashes, in the long tier's SQLite file in
            the memory's own transaction; read them with
            `privacy.memory_history(store, ...)`. False: nothing is recorded and
            `memory_history` raises `ConfigurationError`.
        short: A tier instance for the short tier instead of Redis: any object with
            the methods of the `Tier` protocol (`store.tiers.base.Tier`), so a new
            backend needs no change to the store. Not with `redis_url`/`redis_client`.
            The store calls its `setup()` and `close()`.
        long: Likewise for the long tier instead of Chroma (not with `chroma_client`,
            `chroma_path` or `memory_index_path`); it must be a `MemoryTier`
            (`store.tiers.base.MemoryTier`), whose further methods the memory
            ranking, maintenance and history use.

    Example:
        ```python
        import tempfile

        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.embedded.redis import EmbeddedRedis

        with (
            tempfile.TemporaryDirectory() as folder,
            EmbeddedRedis() as redis_server,
            TieredMemoryStore.from_conn_string(redis_server.url, chroma_path=folder) as store,
        ):
            store.put(("users", "u1", "memories"), "m1", {"content": "likes tea"})
            assert store.get(("users", "u1", "memories"), "m1").value["content"] == "likes tea"
            store.put(("short_term", "s1"), "turn", {"content": "hello"}, ttl=5)
            assert store.tier_for(("short_term", "s1")) == "short"
        ```
    """

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, redis_url: str | None = None, **kwargs: Any
    ) -> Iterator[TieredMemoryStore]:
        """Open a store on `redis_url` (and `chroma_path`), set it up, close it on exit.

        The clients created here are owned by the store and closed when the block ends.

        Args:
            redis_url: Redis URL; defaults to `REDIS_URL`.
            **kwargs: Any other constructor option.
        """
        store = cls(redis_url=redis_url, **kwargs)
        try:
            store.setup()
            yield store
        finally:
            store.close()

    def __enter__(self) -> TieredMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ memories
    def update_importance(self, namespace: tuple[str, ...], key: str, delta: float) -> float | None:
        """Reinforce (or weaken) a memory: add `delta` to its importance, clamped to [0, 1].

        The value is written back with its statistics, TTL and expiry kept.

        Args:
            namespace: The memory's namespace (long-term tier).
            key: The memory's key.
            delta: Change of importance, e.g. 0.1 when an agent used the memory.

        Returns:
            The new importance, or None when the memory does not exist.
        """
        return maintenance.update_importance(self, namespace, key, delta)

    def get_memory(self, namespace: tuple[str, ...], key: str) -> MemoryEntry | None:
        """A long-term memory with its statistics, or None. Does not count as an access.

        Args:
            namespace: The memory's namespace (routed to the long-term tier).
            key: The memory's key.
        """
        return self._get_memory(namespace, key)

    def search_memories(
        self,
        namespace_prefix: tuple[str, ...],
        query: str,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        retrieval: RetrievalMode | None = None,
        user_id: str | None = None,
        min_score: float | None = None,
    ) -> list[MemoryHit]:
        """Search long-term memories and explain each score.

        Same ranking as `search`, but each hit carries the `MemoryEntry` (with
        its access statistics) and a `ScoreBreakdown` by factor. Returned memories
        count as accessed.

        Args:
            namespace_prefix: Namespace prefix to search.
            query: Natural-language query.
            filter: Value filter (as for `search`).
            limit: Most hits to return.
            offset: Hits to skip.
            retrieval: Override the store's retrieval mode for this call.
            user_id: The caller's user, for `"contextual"` retrieval.
            min_score: Drop hits scoring below this.
        """
        self._check_search_text(namespace_prefix, query, filter, user_id)
        qv = None
        if self.embeddings is not None and retrieval != "keyword":
            qv = self.embeddings.embed_query(query)
            self._check_vectors([qv], "search queries")
        return self._search_memories(
            tuple(namespace_prefix),
            query,
            qv,
            filter=filter,
            limit=limit,
            offset=offset,
            retrieval=retrieval,
            user_id=user_id,
            min_score=min_score,
        )
