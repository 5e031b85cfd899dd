"""LangGraph checkpointers (short-term session memory) backed by Redis."""

from langgraph_tiered_memory.checkpoint.saver import AsyncRedisSessionSaver, RedisSessionSaver

__all__ = ["AsyncRedisSessionSaver", "RedisSessionSaver"]
