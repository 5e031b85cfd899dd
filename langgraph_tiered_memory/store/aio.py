"""`AsyncTieredMemoryStore`: the asyncio `BaseStore` (built on `AsyncBatchedBaseStore`)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from contextlib import asynccontextmanager
from typing import Any, Literal

from langgraph.store.base import IndexConfig, Item, Op, Result, TTLConfig
from langgraph.store.base.batch import AsyncBatchedBaseStore

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

__all__ = ["AsyncTieredMemoryStore"]


class AsyncTieredMemoryStore(TieredStoreCore, AsyncBatchedBaseStore):
    """The asyncio twin of `TieredMemoryStore`; same options, same behaviour.

    Concurrent `aget`/`aput`/`asearch` calls are gathered into batches by
    `AsyncBatchedBaseStore`. Embeddings use the model's async methods and every
    Redis or Chroma call runs in a worker thread, so the event loop never blocks
    (as `langgraph dev` requires). Create it inside a running event loop.

    Example:
        ```python
        import asyncio
        from langgraph_tiered_memory import AsyncTieredMemoryStore

        async def main() -> None:
            async with AsyncTieredMemoryStore.from_conn_string(
                chroma_path="./chroma-db", tiers={"default": "long"}
            ) as store:
                await store.aput(("users", "u1"), "m1", {"content": "likes tea"})
                item = await store.aget(("users", "u1"), "m1")
                assert item is not None and item.value["content"] == "likes tea"

        asyncio.run(main())
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
        allow_non_finite_filters: bool = False,
        memory_index_path: str | None = None,
    ) -> None:
        AsyncBatchedBaseStore.__init__(self)
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
        )

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, redis_url: str | None = None, **kwargs: Any
    ) -> AsyncIterator[AsyncTieredMemoryStore]:
        """Open a store, run `asetup()`, and close the clients it created on exit.

        Args:
            redis_url: Redis URL; defaults to `REDIS_URL`.
            **kwargs: Any other constructor option.
        """
        store = cls(redis_url=redis_url, **kwargs)
        try:
            await store.asetup()
            yield store
        finally:
            await asyncio.to_thread(store.close)

    async def asetup(self) -> None:
        """Async `setup()`: check the backends and create what the tiers need."""
        await asyncio.to_thread(self.setup)

    async def asweep_ttl(self) -> int:
        """Async `sweep_ttl()`."""
        return await asyncio.to_thread(self.sweep_ttl)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch: embed with the async API, then run the I/O in a thread."""
        return await self._arun_batch(ops)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch synchronously (from a thread other than the event loop's)."""
        return self._run_batch(ops)

    # ------------------------------------------------------------------ memories
    async def aget_memory(self, namespace: tuple[str, ...], key: str) -> MemoryEntry | None:
        """A long-term memory with its statistics, or None (see `TieredMemoryStore.get_memory`).

        Args:
            namespace: The memory's namespace (routed to the long-term tier).
            key: The memory's key.
        """
        return await asyncio.to_thread(self._get_memory, namespace, key)

    async def asearch_memories(
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
        """Search memories and explain each score (see `TieredMemoryStore.search_memories`).

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
        qv = None
        if self.embeddings is not None and retrieval != "keyword":
            qv = await self.embeddings.aembed_query(query)
            self._check_vectors([qv], "search queries")
        return await asyncio.to_thread(
            functools.partial(
                self._search_memories,
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
        )

    async def aupdate_importance(
        self, namespace: tuple[str, ...], key: str, delta: float
    ) -> float | None:
        """Add `delta` to a memory's importance, clamped to [0, 1] (see the sync store).

        Args:
            namespace: The memory's namespace (long-term tier).
            key: The memory's key.
            delta: Change of importance.

        Returns:
            The new importance, or None when the memory does not exist.
        """
        entry = await self.aget_memory(namespace, key)
        if entry is None:
            return None
        value, importance = await asyncio.to_thread(_reinforced, self, namespace, key, delta)
        await self.aput(namespace, key, value)
        return importance

    # ------------------------------------------------------------- maintenance
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
        """Forget the memories the forgetting policy flags (see the sync store).

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
        """Delete those of `keys` that the policy still flags (see the sync store)."""
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
        """Merge related memories of one namespace (see the sync store's `consolidate`)."""
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
    ) -> list[tuple[tuple[str, ...], str]]:
        """Copy worthy short-term items to long-term memory (see the sync store)."""
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
