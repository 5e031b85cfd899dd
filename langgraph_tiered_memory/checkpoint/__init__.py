"""LangGraph checkpointers (short-term session memory) backed by Redis."""

from langgraph_tiered_memory.checkpoint.saver import (
    AsyncRedisSessionSaver,
    AsyncShallowRedisSessionSaver,
    RedisSessionSaver,
    ShallowRedisSessionSaver,
)

__all__ = [
    "AsyncRedisSessionSaver",
    "AsyncShallowRedisSessionSaver",
    "RedisSessionSaver",
    "ShallowRedisSessionSaver",
]
