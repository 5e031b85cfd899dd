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
order of the reads) is `agent._profile_plan.build_profile`, a generator of store and model
calls; the sync and async entry points make them blocking or awaited (`_drive`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore

from langgraph_tiered_memory._drive import adrive, drive
from langgraph_tiered_memory.agent._profile_plan import (
    DEFAULT_MAX_PER_TYPE,
    DEFAULT_PROFILE_NAMESPACE,
    PROFILE_CACHE_LABEL,
    AsyncItemLister,
    ItemLister,
    ProfileFields,
    UserProfile,
    build_profile,
    check_user_id,
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
        lister: How the memories are listed, one page at a time. Without one, the
            store is listed with `store.search` (on a tiered store, without counting
            accesses).

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
    return drive(
        build_profile(
            store,
            user_id,
            model=model,
            namespace=namespace,
            refresh=refresh,
            max_per_type=max_per_type,
            lister=lister,
        )
    )


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
        lister: Async page lister. Without one, the store is listed with
            `store.asearch` (on a tiered store, without counting accesses).
    """
    return await adrive(
        build_profile(
            store,
            user_id,
            model=model,
            namespace=namespace,
            refresh=refresh,
            max_per_type=max_per_type,
            lister=lister,
        )
    )
