"""`MemoryRetriever`: a store's long-term memories as a LangChain `BaseRetriever`.

`store.as_retriever(("users", "{user_id}"), user_id="u1")` returns one. Each call runs
the store's memory search (`search_memories`; `asearch_memories` on the async path of
the async store) and returns the hits as `Document`s: the memory's text as
`page_content`, and its namespace, key, memory type, importance, score and score
breakdown in `metadata`. LCEL chains (`retriever | format_docs`) and LangChain agents
then read the same memories as a LangGraph memory agent.

One user's retriever never returns another user's memories:

- `{name}` placeholders of the namespace are filled from `user_id` (for `{user_id}`)
  and from the run's `config["configurable"]` (for every placeholder `user_id` does
  not fix), like the memory tools' namespaces.
- A search on behalf of a user carries the store's user scope (`$user`): memories in
  another user's namespace (`(..., "users", "u2", ...)`) are never candidates, and of
  namespaces outside any user only shared types (`fact`, `skill`) are seen. When the
  namespace is the user's by its `{user_id}` placeholder alone (`("memories",
  "{user_id}")`), everything under it is the user's, so only memories nested under
  another user's label are dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, PrivateAttr

from langgraph_tiered_memory.agent.tools import NamespaceTemplate
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy.ownership import namespace_owner
from langgraph_tiered_memory.ranking.scoring import RetrievalMode, UserScope

__all__ = ["MemoryRetriever", "memory_document"]

_log = logging.getLogger("langgraph_tiered_memory.retriever")

_NAMESPACE_KWARG = "_memory_namespace"
_USER_KWARG = "_memory_user"


def memory_document(hit: Any) -> Document:
    """A `search_memories` hit (`MemoryHit`) as a LangChain `Document`.

    `metadata` holds `namespace` (a list of labels), `key`, `memory_type`,
    `importance`, `score` and `score_breakdown` (the `ScoreBreakdown` as a dict).
    """
    entry = hit.entry
    return Document(
        page_content=entry.content,
        metadata={
            "namespace": list(entry.namespace),
            "key": entry.id,
            "memory_type": entry.memory_type,
            "importance": entry.importance,
            "score": hit.score,
            "score_breakdown": dataclasses.asdict(hit.breakdown),
        },
    )


def _checked(data: dict[str, Any]) -> NamespaceTemplate:
    """The namespace template of a retriever's options, after checking them all."""
    template = NamespaceTemplate(data.get("namespace") or ())
    k, user_id, store = data.get("k", 4), data.get("user_id"), data.get("store")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"k must be a positive integer, got {k!r}.")
    if user_id is not None and (not isinstance(user_id, str) or not user_id):
        raise ConfigurationError(
            f"user_id must be a non-empty string, got {user_id!r}; convert it with str() first."
        )
    if not callable(getattr(store, "asearch_memories", None)) and not callable(
        getattr(store, "search_memories", None)
    ):
        raise ConfigurationError(
            f"{type(store).__name__} has no memory search: use a TieredMemoryStore or"
            " AsyncTieredMemoryStore."
        )
    if not getattr(store, "memory_mode", False):
        raise ConfigurationError(
            "as_retriever needs a store with scoring={'mode': 'memory'} (the default)."
        )
    return template


class MemoryRetriever(BaseRetriever):
    """A LangChain retriever over a tiered store's long-term memories.

    Build it with `store.as_retriever(...)` (same arguments, minus `store`).

    Attributes:
        store: A `TieredMemoryStore` or `AsyncTieredMemoryStore` in memory mode.
        namespace: Namespace prefix (template) to search; labels may hold `{name}`
            placeholders.
        user_id: The user the retriever searches for. It fills `{user_id}` and scopes
            the search to that user. None: taken from `config["configurable"]
            ["user_id"]` of each run, if there is one.
        k: How many memories a query returns at most.
        retrieval: Retrieval mode for these searches (default: the store's).
        min_score: Drop memories scoring below this (default: the store's).

    Example:
        ```python
        import tempfile

        from langgraph_tiered_memory import TieredMemoryStore

        with tempfile.TemporaryDirectory() as folder, TieredMemoryStore.from_conn_string(
            chroma_path=folder, tiers={"default": "long"}
        ) as store:
            store.put(("users", "u1"), "tea", {"content": "Ana drinks green tea"})
            retriever = store.as_retriever(
                ("users", "{user_id}"), user_id="u1", k=2, retrieval="keyword"
            )
            docs = retriever.invoke("green tea")
            assert docs[0].metadata["key"] == "tea"
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    namespace: tuple[str, ...]
    user_id: str | None = None
    k: int = 4
    retrieval: RetrievalMode | None = None
    min_score: float | None = None

    _template: NamespaceTemplate = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        """Check the options (raising `ConfigurationError`, not pydantic's error)."""
        template = _checked(data)
        super().__init__(**data)
        self._template = template
        if set(template.placeholders) <= {"user_id"} and (
            self.user_id is not None or not template.placeholders
        ):
            self._resolve(None)  # a fixed namespace: refuse a bad one now

    # ------------------------------------------------------------------ scoping
    def _resolve(self, config: RunnableConfig | None) -> tuple[tuple[str, ...], str | None]:
        """The namespace prefix and the user of one call."""
        configurable = dict((config or {}).get("configurable") or {})
        if self.user_id is not None:
            configurable["user_id"] = self.user_id
        user = configurable.get("user_id")
        user = user if isinstance(user, str) and user else None
        namespace = self._template.fill({"configurable": configurable})
        if self.store.tier_for(namespace) != "long":
            raise ConfigurationError(
                f"Namespace {namespace} is routed to the short-term tier; memories live on"
                " the long-term tier. Retrieve from a long-term namespace."
            )
        owner = namespace_owner(namespace, self.store.scoring.user_label)
        if user is not None and owner is not None and owner != user:
            raise ConfigurationError(
                f"Namespace {namespace} belongs to user {owner!r}, not to {user!r}:"
                f" a retriever for {user!r} cannot search it."
            )
        if user is None and self._template.placeholders:
            _log.debug("retriever on %s runs without a user scope", namespace)
        return namespace, user

    def _scope(self, namespace: tuple[str, ...], user: str | None) -> str | None:
        """The `$user` of the search, or None.

        A namespace that is the user's only through a `{user_id}` label of a layout the
        store does not know as a user's (`ownership.namespace_owner`) would hide its own
        non-shared memories under `$user`; there the results are filtered by `_visible`
        instead.
        """
        if user is None:
            return None
        owned_by_template = "user_id" in self._template.placeholders
        if owned_by_template and namespace_owner(namespace, self.store.scoring.user_label) is None:
            return None
        return user

    def _visible(self, hits: Sequence[Any], user: str | None) -> list[Any]:
        """Drop hits in another user's namespaces (the store's `$user` rule)."""
        if user is None:
            return list(hits)
        scope = UserScope(user, self.store.scoring.user_label)
        return [hit for hit in hits if scope.may_hold(hit.entry.namespace)]

    def _options(self, namespace: tuple[str, ...], user: str | None) -> dict[str, Any]:
        scope = self._scope(namespace, user)
        retrieval = self.retrieval
        if scope is None and user is not None:
            # The namespace is the user's already: contextual retrieval (hybrid within
            # the user's scope) is hybrid retrieval of this namespace.
            mode = retrieval or self.store.scoring.retrieval
            retrieval = "hybrid" if mode == "contextual" else retrieval
        return {
            "limit": self.k,
            "retrieval": retrieval,
            "min_score": self.min_score,
            "user_id": scope,
        }

    # ------------------------------------------------------------------ running
    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Retrieve the memories for `input` (the namespace is filled from `config`)."""
        namespace, user = self._resolve(config)
        kwargs[_NAMESPACE_KWARG], kwargs[_USER_KWARG] = namespace, user
        return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async `invoke`: the async store's `asearch_memories`, else a worker thread."""
        namespace, user = self._resolve(config)
        kwargs[_NAMESPACE_KWARG], kwargs[_USER_KWARG] = namespace, user
        return await super().ainvoke(input, config, **kwargs)

    def _call_args(self, kwargs: dict[str, Any]) -> tuple[tuple[str, ...], str | None]:
        if _NAMESPACE_KWARG in kwargs:
            return kwargs[_NAMESPACE_KWARG], kwargs[_USER_KWARG]
        return self._resolve(None)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        namespace, user = self._call_args(kwargs)
        search = getattr(self.store, "search_memories", None)
        if search is not None:
            hits = search(namespace, query, **self._options(namespace, user))
        else:
            hits = self.store._search_memories_sync(
                namespace, query, **self._options(namespace, user)
            )
        return [memory_document(h) for h in self._visible(hits, user)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        namespace, user = self._call_args(kwargs)
        options = self._options(namespace, user)
        asearch = getattr(self.store, "asearch_memories", None)
        if asearch is not None:
            hits = await asearch(namespace, query, **options)
        else:
            search = functools.partial(self.store.search_memories, namespace, query, **options)
            hits = await asyncio.to_thread(search)
        return [memory_document(h) for h in self._visible(hits, user)]
