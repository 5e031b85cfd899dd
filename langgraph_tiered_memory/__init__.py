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
from langgraph_tiered_memory.forgetting import (
    DEFAULT_FORGETTING_POLICY,
    GARBAGE_COLLECT_POLICY,
    ForgettingPolicy,
    calculate_decay,
    should_forget,
)
from langgraph_tiered_memory.forgetting_graph import create_forgetting_graph
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking import ScoreBreakdown
from langgraph_tiered_memory.store import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.store._reports import (
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
    GCReport,
    PromotionSkip,
)
from langgraph_tiered_memory.store.base import MemoryHit
from langgraph_tiered_memory.summarizer import (
    SummarizationNode,
    asummarize_messages,
    create_summarizer_graph,
    summarize_messages,
    trim_working_memory,
)

__all__ = [
    "AsyncRedisSessionSaver",
    "AsyncTieredMemoryStore",
    "BackendUnavailableError",
    "ChromaHnswConfig",
    "ConfigurationError",
    "ConsolidationRecord",
    "DEFAULT_CHROMA_HNSW",
    "DEFAULT_FORGETTING_POLICY",
    "DEFAULT_TIER_POLICY",
    "ForgettingPolicy",
    "ForgettingReport",
    "ForgottenRow",
    "GARBAGE_COLLECT_POLICY",
    "GCReport",
    "InvalidFilterError",
    "InvalidItemError",
    "MemoryEntry",
    "MemoryHit",
    "PromotionSkip",
    "RedisSessionSaver",
    "ScoreBreakdown",
    "ScoringConfig",
    "SessionMeta",
    "SummarizationNode",
    "TierPolicy",
    "TieredMemoryError",
    "TieredMemoryStore",
    "asummarize_messages",
    "calculate_decay",
    "create_forgetting_graph",
    "create_summarizer_graph",
    "should_forget",
    "summarize_messages",
    "trim_working_memory",
]
