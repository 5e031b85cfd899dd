"""`TieredMemoryStore`: the synchronous `BaseStore`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from langgraph.store.base import BaseStore, IndexConfig, Item, Op, PutOp, Result, TTLConfig

from langgraph_tiered_memory._redis_client import DEFAULT_REDIS_TIMEOUT, redis_call
from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierPolicy
from langgraph_tiered_memory.forgetting import ForgettingPolicy
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking import RetrievalMode
from langgraph_tiered_memory.store import maintenance
from langgraph_tiered_memory.store.base import (
    DEFAULT_KEY_PREFIX,
    MemoryHit,
    TieredStoreCore,
    _reinforced,
)

__all__ = ["TieredMemoryStore"]


class TieredMemoryStore(TieredStoreCore, BaseStore):
    """A LangGraph `BaseStore` over two tiers: Redis (short-term) and Chroma (long-term).

    Namespaces are routed by a `TierPolicy`: by default those whose first label is
    `"short_term"` live in Redis, everything else in Chroma. Every `BaseStore`
    operation works on both tiers, with the same results as LangGraph's
    `InMemoryStore`.

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
            string or `"local"` (offline all-MiniLM-L6-v2, 384 dims).
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
        memory_index_path: SQLite file of the memory index (keyword index and access
            statistics) when `chroma_client` is not an embedded `PersistentClient`
            (for example an `HttpClient`). With an embedded Chroma the index lives in
            its directory; with an in-memory client and no path it is in memory.
        redis_timeout: The most one store call waits on Redis, in seconds (default 15),
            when the store creates the client from `redis_url`: a frozen or unreachable
            server then raises `BackendUnavailableError` within this bound. Connection
            errors are retried within it, timeouts never. With `redis_client=` the
            client's own timeouts apply.

    Example:
        ```python
        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.embedded import EmbeddedRedis

        with EmbeddedRedis() as redis_server, TieredMemoryStore.from_conn_string(
            redis_server.url, chroma_path="./chroma-db"
        ) as store:
            store.put(("users", "u1", "memories"), "m1", {"content": "likes tea"})
            assert store.get(("users", "u1", "memories"), "m1").value["content"] == "likes tea"
            store.put(("short_term", "s1"), "turn", {"content": "hello"}, ttl=5)
            assert store.tier_for(("short_term", "s1")) == "short"
        ```
    """

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
    ) -> None:
        self._configure(
            redis_client=redis_client,
            redis_url=redis_url,
            chroma_client=chroma_client,
            chroma_path=chroma_path,
            chroma_hnsw=chroma_hnsw,
            index=index,
            ttl=ttl,
            scoring=scoring,
            tiers=tiers,
            key_prefix=key_prefix,
            clock=clock,
            allow_non_finite_filters=allow_non_finite_filters,
            memory_index_path=memory_index_path,
            redis_timeout=redis_timeout,
        )

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

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch of operations; results come back in op order."""
        with redis_call():  # the batch's Redis round trips share one time budget
            return self._run_batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch without blocking the event loop (I/O runs in a thread)."""
        with redis_call():  # the batch's Redis round trips share one time budget
            return await self._arun_batch(ops)

    # ------------------------------------------------------------------ memories
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
        reinforced = _reinforced(self, namespace, key, delta)
        if reinforced is None:
            return None
        value, importance, item = reinforced
        ns = tuple(namespace)
        with redis_call():
            self._run_batch([PutOp(ns, key, value)], keep={(ns, key): item})
        return importance

    def garbage_collect(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        dry_run: bool = True,
        policy: ForgettingPolicy | None = None,
        page_size: int = 1000,
        progress: Callable[[int], None] | None = None,
        now: float | None = None,
    ) -> dict[str, Any]:
        """Forget long-term memories the forgetting policy flags.

        Memories are streamed in pages from the memory index (statistics only), so
        memory use stays bounded; values are read only for flagged memories. A memory
        whose value has `"pinned": True` is never forgotten. Deletes go through the
        normal batch path: vectors, keyword rows and statistics all go.

        Args:
            namespace_prefix: Only namespaces under this prefix (default: all).
            dry_run: Report only, delete nothing (the default).
            policy: Overrides of `DEFAULT_FORGETTING_POLICY`, e.g. `GARBAGE_COLLECT_POLICY`.
            page_size: Memories read per page.
            progress: Called with the number of memories scanned after each page.
            now: The time to judge at, in epoch seconds (default: the store's clock).

        Returns:
            `{"forgotten_count": N, "details": [{"id", "namespace", "content_preview",
            "reason"}, ...], "scanned": M, "dry_run": bool}`.
        """
        return maintenance.garbage_collect(
            self,
            tuple(namespace_prefix),
            dry_run=dry_run,
            policy=policy,
            page_size=page_size,
            progress=progress,
            now=now,
        )

    def forget(
        self,
        namespace: tuple[str, ...],
        keys: Collection[str],
        *,
        policy: ForgettingPolicy | None = None,
        now: float | None = None,
    ) -> list[dict[str, Any]]:
        """Delete those of `keys` that the forgetting policy still flags.

        Each memory is judged again on its current statistics and value, so one used
        or pinned since a dry run is kept. Missing keys are ignored.

        Args:
            namespace: The memories' namespace (long-term tier).
            keys: Candidate keys, e.g. the ids of a `garbage_collect` dry run.
            policy: Overrides of `DEFAULT_FORGETTING_POLICY`.
            now: The time to judge at, in epoch seconds (default: the store's clock).

        Returns:
            The report rows (`id`, `namespace`, `content_preview`, `reason`) of the
            deleted memories.
        """
        return maintenance.forget(self, tuple(namespace), keys, policy=policy, now=now)

    def consolidate(
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
        """Merge related memories of one namespace into consolidated memories.

        Without `query`, every cluster of near-duplicates (own-text cosine similarity
        of at least `threshold` to the cluster's first memory) becomes one memory.
        With `query`, the memories about that theme (cosine similarity of at least
        `min_similarity` to the query, at most `max_sources`) become one memory.

        The merged memory keeps the first source's fields, takes the sources' highest
        importance and records `consolidated_from` (keys of the original memories; a
        merged source stands for its own sources) and `source_count`.
        It is stored before the originals are deleted or down-weighted, so a crash in
        between loses nothing; its key is derived from the sources' keys and contents,
        so reused keys with new content never collide and a rerun (after a crash too)
        writes the same memory again instead of a duplicate.

        Never merged: pinned memories (`"pinned": True`: they stay exactly as they
        are), memories without a text `content`, down-weighted originals whose merged
        memory still exists, and memories of different visibility: shared types
        (`shared_types` of the scoring config, `fact` and `skill` by default) are
        only merged with each other, never with private ones. The merged memory takes
        the most restrictive memory type of its sources.

        Args:
            namespace: The namespace (long-term tier; the store needs an index).
            query: A theme to consolidate, such as `"food preferences"`.
            threshold: Cosine similarity that makes two memories near-duplicates.
            min_similarity: Cosine similarity to `query` that puts a memory in the theme.
            max_sources: Most memories merged for a theme.
            model: Chat model (or `init_chat_model` string) merging the contents with
                `consolidation.CONSOLIDATION_PROMPT`; None joins their texts, the
                longest first, leaving out a text already contained in the others.
            originals: `"delete"` the sources after the merged memory is stored, or
                `"downweight"` them (importance halved, `consolidated_into` set).
            dry_run: Only report the groups; write nothing.
            limit: Most memories of the namespace considered: the newest `limit`.
            exclude: Keys left out (e.g. memories about to be forgotten).
            now: The time of the pass, in epoch seconds (default: the store's clock).

        Returns:
            One record per merged memory: `{"key", "namespace", "sources", "content",
            "importance"}`.
        """
        return maintenance.consolidate(
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

    def promote(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        predicate: Callable[[Item], bool] | None = None,
        target: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None,
        delete: bool = False,
        page_size: int = 500,
    ) -> maintenance.Promoted:
        """Copy short-term items that deserve it to long-term memory before they expire.

        Every item is read, mapped and validated before the first write, and each copy
        is stored before the optional delete of the short-term item. An item that is
        not a valid memory (e.g. `importance` 7) is skipped, logged and reported in
        `.skipped`; it stays in the short-term tier. A copy never replaces another
        long-term memory: when its key holds different content, it is stored as
        `promoted-<digest>` (of source namespace, key and content); a copy whose
        content is already stored there is not written again, so reruns add nothing.

        Args:
            namespace_prefix: Short-term namespaces to scan (e.g. `("short_term",)`),
                taken literally (a `"*"` label is a label, not a wildcard).
            predicate: Which items to promote. Default: `importance >= 0.7` or
                `mentions >= 2` in the value.
            target: Long-term namespace of a short-term one. Default: the same user's
                namespace, `("short_term", "u1", ...)` -> `("users", "u1", "memories",
                ...)` (the scoring config's `user_label`), so contextual search never
                shows it to another user; a namespace without a user is skipped.
            delete: Delete the short-term item once its copy is stored.
            page_size: Items read per page.

        Returns:
            The (long-term namespace, key) of each promoted item (a list); its
            `skipped` attribute lists `{"namespace", "key", "reason"}` of the items
            the predicate accepted but that could not be promoted.
        """
        return maintenance.promote(
            self,
            tuple(namespace_prefix),
            predicate=predicate,
            target=target,
            delete=delete,
            page_size=page_size,
        )
