"""The stores' user-profile methods: thin wrappers over `langgraph_tiered_memory.profile`.

A profile reads every memory of a user. Through `search`, each read would count as an
access of every one of them (refreshing their `last_accessed` and `access_count`), so
an agent reading the profile every turn would keep all its user's memories from ever
decaying. The store's methods therefore list the memories on the store's read path
without counting accesses (as the maintenance passes read them); the cache itself is
read and written with `get`/`put`. `get_user_profile(store, ...)` on any other store
lists with `store.search`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import cast

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, SearchItem

from langgraph_tiered_memory._redis_client import redis_call
from langgraph_tiered_memory.profile import (
    DEFAULT_MAX_PER_TYPE,
    DEFAULT_PROFILE_NAMESPACE,
    UserProfile,
    aget_user_profile,
    get_user_profile,
)
from langgraph_tiered_memory.store._common import check_labels
from langgraph_tiered_memory.store._items import to_datetime
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store.search import SearchRequest, search_tiers

__all__ = ["ProfileMethods"]


def _uncounted_page(
    core: StoreCore, namespace: tuple[str, ...], limit: int, offset: int
) -> list[SearchItem]:
    """One page of a listing search of `namespace`, not counted as accesses."""
    check_labels(namespace)
    with redis_call():
        merged = search_tiers(
            core,
            SearchRequest(tuple(namespace), None, None, None, {}, offset + limit, core.clock()),
        )
    return [
        SearchItem(
            namespace=r.item.namespace,
            key=r.item.key,
            value=r.item.value,
            created_at=to_datetime(r.item.created_at),
            updated_at=to_datetime(r.item.updated_at),
            score=None,
        )
        for _, r in merged[offset : offset + limit]
    ]


async def _auncounted_page(
    core: StoreCore, namespace: tuple[str, ...], limit: int, offset: int
) -> list[SearchItem]:
    return await asyncio.to_thread(_uncounted_page, core, namespace, limit, offset)


class ProfileMethods:
    """`get_user_profile` and `aget_user_profile` (both stores)."""

    def get_user_profile(
        self,
        user_id: str,
        *,
        model: str | BaseChatModel | None = None,
        namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
        refresh: bool = False,
        max_per_type: int = DEFAULT_MAX_PER_TYPE,
    ) -> UserProfile:
        """The profile of `user_id`, cached until the user's memories change.

        `langgraph_tiered_memory.profile.get_user_profile` on this store; listing the
        user's memories for it does not count as accessing them.

        Args:
            user_id: The user's id; it fills `{user_id}` in `namespace`.
            model: A chat model or `init_chat_model` string; None for no model call.
            namespace: The user's memory namespace, with a `{user_id}` placeholder.
            refresh: Rebuild (and re-cache) even if the cached profile is current.
            max_per_type: Most memories of each type in the profile and in the prompt.
        """
        return get_user_profile(
            cast(BaseStore, self),
            user_id,
            model=model,
            namespace=namespace,
            refresh=refresh,
            max_per_type=max_per_type,
            lister=functools.partial(_uncounted_page, cast(StoreCore, self)),
        )

    async def aget_user_profile(
        self,
        user_id: str,
        *,
        model: str | BaseChatModel | None = None,
        namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
        refresh: bool = False,
        max_per_type: int = DEFAULT_MAX_PER_TYPE,
    ) -> UserProfile:
        """Async `get_user_profile`: the store's I/O runs in worker threads.

        Args:
            user_id: The user's id; it fills `{user_id}` in `namespace`.
            model: A chat model or `init_chat_model` string; None for no model call.
            namespace: The user's memory namespace, with a `{user_id}` placeholder.
            refresh: Rebuild (and re-cache) even if the cached profile is current.
            max_per_type: Most memories of each type in the profile and in the prompt.
        """
        return await aget_user_profile(
            cast(BaseStore, self),
            user_id,
            model=model,
            namespace=namespace,
            refresh=refresh,
            max_per_type=max_per_type,
            lister=functools.partial(_auncounted_page, cast(StoreCore, self)),
        )
