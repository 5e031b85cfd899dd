"""The stores' user-profile methods: thin wrappers over `langgraph_tiered_memory.agent.profile`.

A profile reads every memory of a user. Through `search`, each read would count as an
access of every one of them (refreshing their `last_accessed` and `access_count`), so
an agent reading the profile every turn would keep all its user's memories from ever
decaying. The store's methods therefore list the memories with the search option
`"$count_access": False` (and without refreshing TTLs); the cache itself is
read and written with `get`/`put`. `get_user_profile(store, ...)` on any other store
lists with `store.search`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import cast

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, SearchItem
from typing_extensions import TypedDict, Unpack

from langgraph_tiered_memory.agent.profile import (
    UserProfile,
    aget_user_profile,
    get_user_profile,
)

_UNCOUNTED = {"$count_access": False}


class ProfileOptions(TypedDict, total=False):
    """The options of the stores' profile methods (see `profile.get_user_profile`).

    Attributes:
        model: A chat model or `init_chat_model` string; None (default) for no model call.
        namespace: The user's memory namespace, with a `{user_id}` placeholder
            (default `("memories", "{user_id}")`).
        refresh: Rebuild (and re-cache) even if the cached profile is current.
        max_per_type: Most memories of each type in the profile and in the prompt
            (default 20).
    """

    model: str | BaseChatModel | None
    namespace: Sequence[str]
    refresh: bool
    max_per_type: int


def _filter(store: BaseStore) -> dict[str, bool] | None:
    """Only memory ranking counts accesses (and takes `$` options)."""
    return _UNCOUNTED if getattr(store, "memory_mode", False) else None


def _uncounted_page(
    store: BaseStore, namespace: tuple[str, ...], limit: int, offset: int
) -> list[SearchItem]:
    """One page of a listing search of `namespace`: no access counted, no TTL refreshed."""
    return store.search(
        namespace, filter=_filter(store), limit=limit, offset=offset, refresh_ttl=False
    )


async def _auncounted_page(
    store: BaseStore, namespace: tuple[str, ...], limit: int, offset: int
) -> list[SearchItem]:
    return await store.asearch(
        namespace, filter=_filter(store), limit=limit, offset=offset, refresh_ttl=False
    )


class ProfileMethods:
    """`get_user_profile` and `aget_user_profile` (both stores)."""

    def get_user_profile(self, user_id: str, **options: Unpack[ProfileOptions]) -> UserProfile:
        """The profile of `user_id`, cached until the user's memories change.

        `langgraph_tiered_memory.agent.profile.get_user_profile` on this store; listing the
        user's memories for it does not count as accessing them.

        Args:
            user_id: The user's id; it fills `{user_id}` in `namespace`.
            **options: `model`, `namespace`, `refresh`, `max_per_type` (see
                `ProfileOptions`).
        """
        store = cast(BaseStore, self)
        lister = functools.partial(_uncounted_page, store)
        return get_user_profile(store, user_id, lister=lister, **options)

    async def aget_user_profile(
        self, user_id: str, **options: Unpack[ProfileOptions]
    ) -> UserProfile:
        """Async `get_user_profile`: the store's I/O runs in worker threads."""
        store = cast(BaseStore, self)
        lister = functools.partial(_auncounted_page, store)
        return await aget_user_profile(store, user_id, lister=lister, **options)
