"""User profiles built from a user's long-term memories, cached in the long tier.

`get_user_profile(store, user_id)` (and its async twin `aget_user_profile`) works on
any LangGraph `BaseStore`, through its public API only:

- **Without a model** the profile lists the user's memories grouped by type
  (`memories_by_type`: preferences and facts first, then experiences and skills), each
  group ordered by importance, then by recency (newest update first), and capped at
  `max_per_type` memories (default `DEFAULT_MAX_PER_TYPE`, 20).
- **With a model** (a `BaseChatModel` or an `init_chat_model` string) the model also
  fills `basics`, `communication_preferences`, `special_needs` and
  `interaction_history` through `with_structured_output(ProfileFields)`, from the same
  capped memories. Malformed output is logged as a warning and the profile built
  without a model is returned (its `source` is then `"memories"`).

**Cache.** A built profile is stored in the namespace `("profiles", user_id)`, under a
key naming its source and the user's memory namespace. Beside it the cache keeps a
fingerprint of the user's memories: a SHA-256 over the namespace, key, `updated_at`
and value of every item under the user's namespace, read with one listing search (one
per 2,000 items). A read whose fingerprint matches returns the cached profile without
calling the model; any put, update or delete of the user's memories (forgetting
included) changes the fingerprint, so the next read rebuilds the profile. A cached
record is only returned after checking that it names the same user, the same memory
namespace and the same options. The cache namespace is outside the memory namespace,
so searches of the user's memories never see it, and it is stored with
`index=False` (never embedded).

**Known facts.** When the store has a knowledge graph (a tiered store opened with
`graph=`), the profile's `known_facts` lists the triples whose subject is the user
(their id, or `"user"`, the subject the extractors give "I" without a speaker) under
the user's namespace, as `"relation object"` texts (`"lives in porto"`), and the
model's prompt shows them. The triples read (with their supporting memories) are part
of the cache fingerprint, so a cached profile is rebuilt when they change. Without a
graph, `known_facts` is empty and nothing else differs.

The planning (ids, namespaces, grouping, fingerprint, prompt, cache records, and the
order of the reads) is `agent._profile_plan.build_profile`, a generator of I/O requests; the
sync and async entry points only serve them with the store and model calls.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, cast

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, SearchItem

from langgraph_tiered_memory._models import MODEL_OUTPUT_ERRORS, describe_model_error, resolve_model
from langgraph_tiered_memory.agent._plan_drive import adrive, drive
from langgraph_tiered_memory.agent._profile_plan import (
    DEFAULT_MAX_PER_TYPE,
    DEFAULT_PROFILE_NAMESPACE,
    PROFILE_CACHE_LABEL,
    AskProfile,
    AsyncItemLister,
    GetCached,
    ItemLister,
    ListPage,
    MalformedOutput,
    ProfileFields,
    ProfileRequest,
    ReadTriples,
    UserProfile,
    build_profile,
    check_user_id,
    plan_profile,
)
from langgraph_tiered_memory.graph.types import TripleRecord

__all__ = [
    "DEFAULT_MAX_PER_TYPE",
    "DEFAULT_PROFILE_NAMESPACE",
    "PROFILE_CACHE_LABEL",
    "ItemLister",
    "AsyncItemLister",
    "ProfileFields",
    "UserProfile",
    "aget_user_profile",
    "check_user_id",
    "get_user_profile",
]

logger = logging.getLogger("langgraph_tiered_memory.agent.profile")

# ------------------------------------------------------------------------------- I/O


class _GraphReader(Protocol):
    """The graph queries of a tiered store opened with `graph=`."""

    def graph_triples(
        self, namespace: tuple[str, ...], *, subject: str | None = None, limit: int = 100
    ) -> list[TripleRecord]: ...

    async def agraph_triples(
        self, namespace: tuple[str, ...], *, subject: str | None = None, limit: int = 100
    ) -> list[TripleRecord]: ...


def _has_graph(store: BaseStore) -> bool:
    """Whether `store` has a knowledge graph (a tiered store opened with `graph=`)."""
    return getattr(store, "graph", None) is not None


def _server(
    store: BaseStore, chat: BaseChatModel | None, lister: ItemLister | None
) -> Callable[[ProfileRequest], Any]:
    """Serves a profile read's requests with the sync store and model calls."""

    def list_page(ns: tuple[str, ...], limit: int, offset: int) -> Sequence[SearchItem]:
        return store.search(ns, limit=limit, offset=offset, refresh_ttl=False)

    page = lister or list_page

    def serve(request: ProfileRequest) -> Any:
        if isinstance(request, ListPage):
            return page(*request)
        if isinstance(request, ReadTriples):
            ns, subject, limit = request
            return cast(_GraphReader, store).graph_triples(ns, subject=subject, limit=limit)
        if isinstance(request, GetCached):
            return store.get(*request)
        if isinstance(request, AskProfile):
            assert chat is not None  # the plan asks only with a model
            structured = chat.with_structured_output(ProfileFields)
            try:
                return structured.invoke(request.messages)
            except MODEL_OUTPUT_ERRORS as e:
                return MalformedOutput(describe_model_error(e))
        return store.put(*request, index=False)

    return serve


def _aserver(
    store: BaseStore, chat: BaseChatModel | None, lister: AsyncItemLister | None
) -> Callable[[ProfileRequest], Awaitable[Any]]:
    """Serves a profile read's requests with the async store and model calls."""

    async def list_page(ns: tuple[str, ...], limit: int, offset: int) -> Sequence[SearchItem]:
        return await store.asearch(ns, limit=limit, offset=offset, refresh_ttl=False)

    page = lister or list_page

    async def serve(request: ProfileRequest) -> Any:
        if isinstance(request, ListPage):
            return await page(*request)
        if isinstance(request, ReadTriples):
            ns, subject, limit = request
            return await cast(_GraphReader, store).agraph_triples(ns, subject=subject, limit=limit)
        if isinstance(request, GetCached):
            return await store.aget(*request)
        if isinstance(request, AskProfile):
            assert chat is not None  # the plan asks only with a model
            structured = chat.with_structured_output(ProfileFields)
            try:
                return await structured.ainvoke(request.messages)
            except MODEL_OUTPUT_ERRORS as e:
                return MalformedOutput(describe_model_error(e))
        return await store.aput(*request, index=False)

    return serve


def get_user_profile(
    store: BaseStore,
    user_id: str,
    *,
    model: str | BaseChatModel | None = None,
    namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
    refresh: bool = False,
    max_per_type: int = DEFAULT_MAX_PER_TYPE,
    lister: ItemLister | None = None,
) -> UserProfile:
    """The profile of `user_id`, from the cache when the user's memories are unchanged.

    Args:
        store: Any LangGraph `BaseStore` (only its public API is used).
        user_id: The user's id; it fills `{user_id}` in `namespace`.
        model: A chat model (or `init_chat_model` string) that writes the structured
            fields; None builds the profile from the memories alone, with no model call.
        namespace: The user's memory namespace, with a `{user_id}` placeholder.
        refresh: Rebuild (and re-cache) even if the cached profile is current.
        max_per_type: Most memories of each type in the profile and in the prompt.
        lister: How the memories are listed, one page at a time. Without one, a
            store that has its own `get_user_profile` method (the tiered stores: they
            list without counting accesses) answers the call itself; any other store
            is listed with `store.search`.

    Returns:
        The `UserProfile`; its `source` says whether a model wrote it. On a store with
        a knowledge graph (`graph=`), its `known_facts` lists the user's triples.

    Raises:
        InvalidNamespaceError: `user_id` cannot name a namespace (see `check_user_id`).
        ConfigurationError: `namespace` or `max_per_type` is unusable.

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.agent.profile import get_user_profile

        store = InMemoryStore()
        store.put(("memories", "ana"), "m1", {"content": "Prefers short answers",
                                              "memory_type": "preference"})
        store.put(("memories", "ana"), "m2", {"content": "Lives in Lisbon",
                                              "memory_type": "fact", "importance": 0.9})
        profile = get_user_profile(store, "ana")
        assert profile.preferences == ["Prefers short answers"]
        assert profile.facts == ["Lives in Lisbon"] and profile.source == "memories"
        ```
    """
    own = getattr(store, "get_user_profile", None)
    if lister is None and callable(own):
        result: UserProfile = own(
            user_id, model=model, namespace=namespace, refresh=refresh, max_per_type=max_per_type
        )
        return result
    chat = resolve_model(model)
    plan = plan_profile(user_id, namespace, chat, max_per_type)
    run = build_profile(plan, use_model=chat is not None, refresh=refresh, graph=_has_graph(store))
    return drive(run, _server(store, chat, lister))


async def aget_user_profile(
    store: BaseStore,
    user_id: str,
    *,
    model: str | BaseChatModel | None = None,
    namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
    refresh: bool = False,
    max_per_type: int = DEFAULT_MAX_PER_TYPE,
    lister: AsyncItemLister | None = None,
) -> UserProfile:
    """Async `get_user_profile`: the same profile and cache, with the async APIs.

    Args:
        store: Any LangGraph `BaseStore` (only its public async API is used).
        user_id: The user's id; it fills `{user_id}` in `namespace`.
        model: A chat model or `init_chat_model` string; None for no model call.
        namespace: The user's memory namespace, with a `{user_id}` placeholder.
        refresh: Rebuild (and re-cache) even if the cached profile is current.
        max_per_type: Most memories of each type in the profile and in the prompt.
        lister: Async page lister. Without one, a store with its own
            `aget_user_profile` method answers the call; others are listed with
            `store.asearch`.
    """
    own = getattr(store, "aget_user_profile", None)
    if lister is None and callable(own):
        result: UserProfile = await own(
            user_id, model=model, namespace=namespace, refresh=refresh, max_per_type=max_per_type
        )
        return result
    chat = resolve_model(model)
    plan = plan_profile(user_id, namespace, chat, max_per_type)
    run = build_profile(plan, use_model=chat is not None, refresh=refresh, graph=_has_graph(store))
    return await adrive(run, _aserver(store, chat, lister))
