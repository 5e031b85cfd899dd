"""The session layer on upstream's shallow savers, which keep one checkpoint per thread."""

from __future__ import annotations

from langgraph.checkpoint.redis.ashallow import AsyncShallowRedisSaver
from langgraph.checkpoint.redis.shallow import ShallowRedisSaver

from langgraph_tiered_memory.checkpoint._outage import translate_outages
from langgraph_tiered_memory.checkpoint._session import _AsyncSessionLayer, _SyncSessionLayer
from langgraph_tiered_memory.checkpoint.erase import AsyncSessionErase, SessionErase

__all__ = ["AsyncShallowRedisSessionSaver", "ShallowRedisSessionSaver"]


@translate_outages
class AsyncShallowRedisSessionSaver(AsyncSessionErase, _AsyncSessionLayer, AsyncShallowRedisSaver):  # type: ignore[misc]
    """`AsyncRedisSessionSaver`'s session layer on upstream's shallow saver.

    Keeps only the latest checkpoint of each thread (upstream `AsyncShallowRedisSaver`),
    with the same TTL, session registry, module check and outage errors. Listing and
    pruning are upstream's; the conformance fixes apply to the full savers.
    """


@translate_outages
class ShallowRedisSessionSaver(SessionErase, _SyncSessionLayer, ShallowRedisSaver):  # type: ignore[misc]
    """`RedisSessionSaver`'s session layer on upstream's shallow saver.

    Keeps only the latest checkpoint of each thread (upstream `ShallowRedisSaver`), with
    the same TTL, session registry, module check and outage errors. Listing and pruning
    are upstream's; the conformance fixes apply to the full savers.
    """
