"""`TieredMemoryStore`: the synchronous `BaseStore`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, IndexConfig, Op, Result, TTLConfig

from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierPolicy
from langgraph_tiered_memory.store.base import DEFAULT_KEY_PREFIX, TieredStoreCore

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
        chroma_path: Directory of the embedded Chroma database, created if missing.
            Defaults to `TIERED_MEMORY_CHROMA_PATH` or `./.tiered-memory/chroma`.
        chroma_hnsw: `ChromaHnswConfig` for the HNSW index of new namespaces.
        index: LangGraph `IndexConfig` (`dims`, `embed`, `fields`) enabling semantic
            search. `embed` may be an `Embeddings`, a function, a `"provider:model"`
            string or `"local"` (offline all-MiniLM-L6-v2, 384 dims).
        ttl: LangGraph `TTLConfig` (`default_ttl` in minutes, `refresh_on_read`,
            `sweep_interval_minutes` to sweep expired Chroma items in the background).
        scoring: `ScoringConfig`; `{"mode": "similarity"}` (cosine similarity).
        tiers: `TierPolicy` routing namespaces to tiers.
        key_prefix: Prefix of every Redis key and Chroma collection of this store, so
            several stores can share one Redis server and one Chroma client.
        clock: Function returning the current time in epoch seconds (for tests).
        allow_non_finite_filters: Accept NaN and infinite numbers in search filters and
            compare them with IEEE semantics, instead of raising `InvalidFilterError`.

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
        allow_non_finite_filters: bool = False,
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
        return self._run_batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch without blocking the event loop (I/O runs in a thread)."""
        return await self._arun_batch(ops)
