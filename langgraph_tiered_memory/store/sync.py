"""`TieredMemoryStore`: the synchronous `BaseStore`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, IndexConfig, Item, Op, PutOp, Result, TTLConfig

from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierPolicy
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.forgetting import ForgettingPolicy
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking import RetrievalMode
from langgraph_tiered_memory.store.base import (
    DEFAULT_KEY_PREFIX,
    MemoryHit,
    TieredStoreCore,
    _reinforced,
)

__all__ = ["TieredMemoryStore"]


def _worth_keeping(item: Item) -> bool:
    importance = item.value.get("importance", 0)
    mentions = item.value.get("mentions", 0)
    return (isinstance(importance, (int, float)) and importance >= 0.7) or (
        isinstance(mentions, int) and mentions >= 2
    )


def _long_term_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    if namespace and namespace[0] == "short_term":
        return ("memories", *namespace[1:])
    return ("memories", *namespace)


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
        scoring: `ScoringConfig`. The default `{"mode": "memory"}` ranks long-term
            items as memories (hybrid relevance, importance, recency, access count);
            `{"mode": "similarity"}` reports plain cosine similarity.
        tiers: `TierPolicy` routing namespaces to tiers.
        key_prefix: Prefix of every Redis key and Chroma collection of this store, so
            several stores can share one Redis server and one Chroma client.
        clock: Function returning the current time in epoch seconds (for tests).
        allow_non_finite_filters: Accept NaN and infinite numbers in search filters and
            compare them with IEEE semantics, instead of raising `InvalidFilterError`.
        memory_index_path: SQLite file of the memory index (keyword index and access
            statistics) when `chroma_client` is not an embedded `PersistentClient`
            (for example an `HttpClient`). With an embedded Chroma the index lives in
            its directory; with an in-memory client and no path it is in memory.

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
        memory_index_path: str | None = None,
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

        The value is written back with `put` (statistics are kept).

        Args:
            namespace: The memory's namespace (long-term tier).
            key: The memory's key.
            delta: Change of importance, e.g. 0.1 when an agent used the memory.

        Returns:
            The new importance, or None when the memory does not exist.
        """
        entry = self.get_memory(namespace, key)
        if entry is None:
            return None
        value, importance = _reinforced(self, namespace, key, delta)
        self.put(namespace, key, value)
        return importance

    def garbage_collect(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        dry_run: bool = True,
        policy: ForgettingPolicy | None = None,
        page_size: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> dict[str, Any]:
        """Forget long-term memories the forgetting policy flags.

        Memories are streamed in pages from the memory index, so memory use stays
        bounded. A memory whose value has `"pinned": True` is never forgotten.

        Args:
            namespace_prefix: Only namespaces under this prefix (default: all).
            dry_run: Report only, delete nothing (the default).
            policy: Overrides of `DEFAULT_FORGETTING_POLICY`, e.g. `GARBAGE_COLLECT_POLICY`.
            page_size: Memories read per page.
            progress: Called with the number of memories scanned after each page.

        Returns:
            `{"forgotten_count": N, "details": [{"id", "namespace", "content_preview",
            "reason"}, ...], "scanned": M, "dry_run": bool}`.
        """
        return self._garbage_collect(
            tuple(namespace_prefix),
            dry_run=dry_run,
            policy=policy,
            page_size=page_size,
            progress=progress,
        )

    def consolidate(
        self,
        namespace: tuple[str, ...],
        *,
        threshold: float = 0.9,
        model: Any = None,
        originals: str = "delete",
        dry_run: bool = False,
        limit: int = 10_000,
    ) -> list[dict[str, Any]]:
        """Merge near-duplicate memories of one namespace (see `consolidation`).

        Args:
            namespace: The namespace (long-term tier).
            threshold: Cosine similarity that makes two memories near-duplicates.
            model: Chat model (or `init_chat_model` string) merging the contents; None
                joins their distinct sentences.
            originals: `"delete"` the sources after the merged memory is stored, or
                `"downweight"` them (importance halved, `consolidated_into` set).
            dry_run: Only report the groups.
            limit: Most memories of the namespace considered.

        Returns:
            One record per group: `{"key", "sources", "content", "importance"}`.
        """
        from langgraph_tiered_memory.consolidation import (
            CONSOLIDATION_PROMPT,
            group_near_duplicates,
            merge_contents,
        )

        if originals not in ("delete", "downweight"):
            raise ValueError(f"originals must be 'delete' or 'downweight', got {originals!r}.")
        namespace = tuple(namespace)
        self._check_memory_namespace(namespace)
        tier: Any = self._long()
        keys = [k for page in tier.iter_memory_stats(namespace) for k, _ in page][:limit]
        vectors = tier.primary_vectors(namespace, keys)
        present = [k for k in keys if k in vectors]
        groups = group_near_duplicates(present, [vectors[k] for k in present], threshold)
        chat = None
        if model is not None:
            from langgraph_tiered_memory.summarizer import _resolve_model

            chat = _resolve_model(model)
        records = []
        now = self.clock()
        for group in groups:
            items = tier.get(namespace, group, now=now)
            group = [k for k in group if k in items]
            values = [items[k].value for k in group]
            if len(values) < 2:
                continue
            contents = [str(v.get("content") or "") for v in values]
            if chat is None:
                content = merge_contents(contents)
            else:
                from langchain_core.messages import HumanMessage, SystemMessage

                reply = chat.invoke(
                    [
                        SystemMessage(content=CONSOLIDATION_PROMPT),
                        HumanMessage(content="\n".join(f"- {c}" for c in contents)),
                    ]
                )
                content = str(reply.content)
            importance = max(float(v.get("importance", 0.5)) for v in values)
            merged_key = "consolidated-" + group[0]
            record = {
                "key": merged_key,
                "sources": list(group),
                "content": content,
                "importance": importance,
            }
            records.append(record)
            if dry_run:
                continue
            base = values[0]
            merged = {
                **{k: v for k, v in base.items() if k not in ("content", "importance")},
                "content": content,
                "importance": importance,
                "consolidated_from": list(group),
                "source_count": len(group),
            }
            self.put(namespace, merged_key, merged)  # stored first: a crash loses nothing
            if originals == "delete":
                self.batch([PutOp(namespace, k, None) for k in group])
            else:
                self.batch(
                    [
                        PutOp(
                            namespace,
                            k,
                            {
                                **v,
                                "importance": float(v.get("importance", 0.5)) / 2,
                                "consolidated_into": merged_key,
                            },
                        )
                        for k, v in zip(group, values, strict=True)
                    ]
                )
        return records

    def promote(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        predicate: Callable[[Item], bool] | None = None,
        target: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None,
        delete: bool = False,
        page_size: int = 500,
    ) -> list[tuple[tuple[str, ...], str]]:
        """Copy short-term items that deserve it to long-term memory before they expire.

        Args:
            namespace_prefix: Short-term namespaces to scan (e.g. `("short_term",)`).
            predicate: Which items to promote. Default: `importance >= 0.7` or
                `mentions >= 2` in the value.
            target: Long-term namespace of a short-term one. Default: the first label
                `"short_term"` becomes `"memories"`.
            delete: Delete the short-term item once its copy is stored.
            page_size: Items read per page.

        Returns:
            The (long-term namespace, key) of each promoted item.
        """
        check = predicate or _worth_keeping
        move = target or _long_term_namespace
        promoted: list[tuple[tuple[str, ...], str]] = []
        for ns in self.list_namespaces(prefix=tuple(namespace_prefix), limit=100_000):
            if self.tier_for(ns) != "short":
                continue
            offset = 0
            while True:
                page = self.search(ns, limit=page_size, offset=offset, refresh_ttl=False)
                removed = 0
                for item in page:
                    if not check(item):
                        continue
                    dest = tuple(move(tuple(item.namespace)))
                    if self.tier_for(dest) != "long":
                        raise ConfigurationError(
                            f"Promotion target {dest} is routed to the short-term tier;"
                            " pass target= a function returning a long-term namespace."
                        )
                    self.put(dest, item.key, dict(item.value))  # stored first
                    promoted.append((dest, item.key))
                    if delete:
                        self.delete(tuple(item.namespace), item.key)
                        removed += 1
                if len(page) < page_size:
                    break
                offset += len(page) - removed  # deleted items no longer take a place
        return promoted
