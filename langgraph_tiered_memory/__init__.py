"""langgraph-tiered-memory: three tiers of memory for LangGraph agents."""

from langgraph_tiered_memory.config import DEFAULT_TIER_POLICY, ScoringConfig, TierPolicy
from langgraph_tiered_memory.errors import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidFilterError,
    InvalidItemError,
    TieredMemoryError,
)
from langgraph_tiered_memory.store import AsyncTieredMemoryStore, TieredMemoryStore

__all__ = [
    "AsyncTieredMemoryStore",
    "BackendUnavailableError",
    "ConfigurationError",
    "DEFAULT_TIER_POLICY",
    "InvalidFilterError",
    "InvalidItemError",
    "ScoringConfig",
    "TierPolicy",
    "TieredMemoryError",
    "TieredMemoryStore",
]
