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

The planning (ids, namespaces, grouping, fingerprint, prompt, cache records) is the pure
functions of `_profile_plan`; the sync and async entry points only run the store and
model calls.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, SearchItem

from langgraph_tiered_memory._models import resolve_model
from langgraph_tiered_memory._profile_plan import (
    DEFAULT_MAX_PER_TYPE,
    DEFAULT_PROFILE_NAMESPACE,
    LIST_PAGE_SIZE,
    PROFILE_CACHE_LABEL,
    AsyncItemLister,
    ItemLister,
    MalformedOutput,
    ProfileFields,
    ProfileSource,
    UserProfile,
    cache_value,
    cached_profile,
    check_user_id,
    fingerprint,
    memories_profile,
    model_profile,
    own_items,
    plan_profile,
    profile_prompt,
)

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

logger = logging.getLogger("langgraph_tiered_memory.profile")

# ------------------------------------------------------------------------------- I/O


def _searcher(store: BaseStore) -> ItemLister:
    def list_page(ns: tuple[str, ...], limit: int, offset: int) -> Sequence[SearchItem]:
        return store.search(ns, limit=limit, offset=offset, refresh_ttl=False)

    return list_page


def _asearcher(store: BaseStore) -> AsyncItemLister:
    async def list_page(ns: tuple[str, ...], limit: int, offset: int) -> Sequence[SearchItem]:
        return await store.asearch(ns, limit=limit, offset=offset, refresh_ttl=False)

    return list_page


def _source(model: BaseChatModel | None) -> ProfileSource:
    return "memories" if model is None else "model"


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
        The `UserProfile`; its `source` says whether a model wrote it.

    Raises:
        InvalidNamespaceError: `user_id` cannot name a namespace (see `check_user_id`).
        ConfigurationError: `namespace` or `max_per_type` is unusable.

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.profile import get_user_profile

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
    list_page = lister or _searcher(store)
    items: list[SearchItem] = []
    while True:
        page = list_page(plan.namespace, LIST_PAGE_SIZE, len(items))
        items.extend(page)
        if len(page) < LIST_PAGE_SIZE:
            break
    items = own_items(plan, items)
    fp = fingerprint(items)
    source = _source(chat)
    if not refresh:
        hit = cached_profile(
            plan, store.get(plan.cache_namespace, plan.cache_key(source)), fp, source
        )
        if hit is not None:
            logger.debug("Profile of user %r: cache hit (%s).", plan.user_id, source)
            return hit
    profile = memories_profile(plan, items)
    if chat is not None:
        structured = chat.with_structured_output(ProfileFields)
        try:
            output: Any = structured.invoke(profile_prompt(profile))
        except ValueError as e:  # OutputParserException and pydantic's ValidationError
            output = MalformedOutput(e)
        profile = model_profile(profile, output) or profile
    store.put(
        plan.cache_namespace,
        plan.cache_key(profile.source),
        cache_value(plan, profile, fp),
        index=False,
    )
    return profile


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
    list_page = lister or _asearcher(store)
    items: list[SearchItem] = []
    while True:
        page = await list_page(plan.namespace, LIST_PAGE_SIZE, len(items))
        items.extend(page)
        if len(page) < LIST_PAGE_SIZE:
            break
    items = own_items(plan, items)
    fp = fingerprint(items)
    source = _source(chat)
    if not refresh:
        cached = await store.aget(plan.cache_namespace, plan.cache_key(source))
        hit = cached_profile(plan, cached, fp, source)
        if hit is not None:
            logger.debug("Profile of user %r: cache hit (%s).", plan.user_id, source)
            return hit
    profile = memories_profile(plan, items)
    if chat is not None:
        structured = chat.with_structured_output(ProfileFields)
        try:
            output: Any = await structured.ainvoke(profile_prompt(profile))
        except ValueError as e:  # OutputParserException and pydantic's ValidationError
            output = MalformedOutput(e)
        profile = model_profile(profile, output) or profile
    await store.aput(
        plan.cache_namespace,
        plan.cache_key(profile.source),
        cache_value(plan, profile, fp),
        index=False,
    )
    return profile
