"""langgraph-tiered-memory: three tiers of memory for LangGraph agents."""

from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.checkpoint.registry import SessionMeta
from langgraph_tiered_memory.config import (
    DEFAULT_CHROMA_HNSW,
    DEFAULT_TIER_POLICY,
    ChromaHnswConfig,
    ScoringConfig,
    TierPolicy,
)
from langgraph_tiered_memory.errors import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidFilterError,
    InvalidItemError,
    TieredMemoryError,
)
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking import ScoreBreakdown
from langgraph_tiered_memory.store import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.store.base import MemoryHit

__all__ = [
    "AsyncRedisSessionSaver",
    "AsyncTieredMemoryStore",
    "BackendUnavailableError",
    "ChromaHnswConfig",
    "ConfigurationError",
    "DEFAULT_CHROMA_HNSW",
    "DEFAULT_TIER_POLICY",
    "InvalidFilterError",
    "InvalidItemError",
    "MemoryEntry",
    "MemoryHit",
    "RedisSessionSaver",
    "ScoreBreakdown",
    "ScoringConfig",
    "SessionMeta",
    "TierPolicy",
    "TieredMemoryError",
    "TieredMemoryStore",
]
