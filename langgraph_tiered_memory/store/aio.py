"""`AsyncTieredMemoryStore`: the asyncio `BaseStore` (built on `AsyncBatchedBaseStore`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base.batch import AsyncBatchedBaseStore

from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking.scoring import RetrievalMode
from langgraph_tiered_memory.store.base import MemoryHit
from langgraph_tiered_memory.store.sync import _TieredStore

__all__ = ["AsyncTieredMemoryStore"]


class AsyncTieredMemoryStore(_TieredStore, AsyncBatchedBaseStore):
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
        import tempfile

        from langgraph_tiered_memory import AsyncTieredMemoryStore

        async def main(folder: str) -> None:
            async with AsyncTieredMemoryStore.from_conn_string(
                chroma_path=folder, tiers={"default": "long"}
            ) as store:
                await store.aput(("users", "u1"), "m1", {"content": "likes tea"})
                item = await store.aget(("users", "u1"), "m1")
                assert item is not None and item.value["content"] == "likes tea"

        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(main(folder))
        ```
    """

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
