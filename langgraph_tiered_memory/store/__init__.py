"""The tiered `BaseStore` implementations."""

from langgraph_tiered_memory.store.aio import AsyncTieredMemoryStore
from langgraph_tiered_memory.store.sync import TieredMemoryStore

__all__ = ["TieredMemoryStore", "AsyncTieredMemoryStore"]
