"""`AsyncTieredMemoryStore`: the asyncio `BaseStore` (built on `AsyncBatchedBaseStore`)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import IndexConfig, Op, PutOp, Result, TTLConfig
from langgraph.store.base.batch import AsyncBatchedBaseStore

from langgraph_tiered_memory._redis_client import DEFAULT_REDIS_TIMEOUT, redis_call
from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierPolicy
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking import RetrievalMode
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
    `allow_non_finite_filters=False` is the same opt-in strict mode as for
    `TieredMemoryStore`: NaN or infinite numbers in a filter raise
    `InvalidFilterError`; by default they compare with IEEE semantics.

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
        allow_non_finite_filters: bool = True,
        memory_index_path: str | None = None,
        redis_timeout: float = DEFAULT_REDIS_TIMEOUT,
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
            redis_timeout=redis_timeout,
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
        with redis_call():  # the batch's Redis round trips share one time budget
            return await self._arun_batch(ops)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch synchronously (from a thread other than the event loop's)."""
        with redis_call():  # the batch's Redis round trips share one time budget
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
        self._check_search_text(namespace_prefix, query, filter, user_id)
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
        reinforced = await asyncio.to_thread(_reinforced, self, namespace, key, delta)
        if reinforced is None:
            return None
        value, importance, item = reinforced
        ns = tuple(namespace)
        with redis_call():
            await self._arun_batch([PutOp(ns, key, value)], keep={(ns, key): item})
        return importance
