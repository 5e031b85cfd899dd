"""The stores' `as_retriever`: a LangChain retriever over their memories.

The retriever itself is `langgraph_tiered_memory.retriever.MemoryRetriever`; this
mixin builds it, and gives the async store a synchronous memory search for the
retriever's sync path (`invoke` outside the event loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph_tiered_memory._redis_client import redis_call
from langgraph_tiered_memory.ranking.scoring import RetrievalMode

if TYPE_CHECKING:
    from langgraph_tiered_memory.retriever import MemoryRetriever
    from langgraph_tiered_memory.store.search import MemoryHit


class RetrieverMethods:
    """`as_retriever` (both stores)."""

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
