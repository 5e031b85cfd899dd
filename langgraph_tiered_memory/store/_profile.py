"""The stores' user-profile methods: the plan of `langgraph_tiered_memory.agent.profile`.

A profile reads every memory of a user. Through `search`, each read would count as an
access of every one of them (refreshing their `last_accessed` and `access_count`), so
an agent reading the profile every turn would keep all its user's memories from ever
decaying. A profile read therefore lists the memories of a store in memory ranking with
the search option `"$count_access": False` (and, on every store, without refreshing
TTLs); the cache itself is read and written with `get`/`put`.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from typing_extensions import TypedDict, Unpack

from langgraph_tiered_memory._drive import adrive, drive
from langgraph_tiered_memory.agent._profile_plan import UserProfile, build_profile


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
        return drive(build_profile(self, user_id, **options))

    async def aget_user_profile(
        self, user_id: str, **options: Unpack[ProfileOptions]
    ) -> UserProfile:
        """Async `get_user_profile`: the store's I/O runs in worker threads."""
        return await adrive(build_profile(self, user_id, **options))
