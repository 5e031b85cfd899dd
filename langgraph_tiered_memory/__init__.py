"""langgraph-tiered-memory: three tiers of memory for LangGraph agents."""

from langgraph_tiered_memory.agent.builder import MemoryAgentState, create_memory_agent
from langgraph_tiered_memory.agent.extraction import aextract_memories, extract_memories
from langgraph_tiered_memory.agent.forgetting_graph import create_forgetting_graph
from langgraph_tiered_memory.agent.profile import UserProfile, aget_user_profile, get_user_profile
from langgraph_tiered_memory.agent.summarizer import (
    SummarizationNode,
    asummarize_messages,
    create_summarizer_graph,
    summarize_messages,
)
from langgraph_tiered_memory.agent.tools import create_manage_memory_tool, create_search_memory_tool
from langgraph_tiered_memory.agent.writer import MemoryWriteError, MemoryWriter, flush_memory_writes
from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.config import ChromaHnswConfig, ScoringConfig, TierPolicy
from langgraph_tiered_memory.errors import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidFilterError,
    InvalidItemError,
    NamespaceLockedError,
    TieredMemoryError,
)
from langgraph_tiered_memory.graph import GraphStore
from langgraph_tiered_memory.interop import import_langchain_chroma
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.privacy.erasure import ErasureReceipt
from langgraph_tiered_memory.privacy.history import MemoryEvent
from langgraph_tiered_memory.privacy.redaction import PatternRedactor
from langgraph_tiered_memory.ranking.forgetting import ForgettingPolicy
from langgraph_tiered_memory.ranking.scoring import ScoreBreakdown
from langgraph_tiered_memory.store import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.store._config import GraphConfig
from langgraph_tiered_memory.store.base import MemoryHit

__all__ = [
    "AsyncRedisSessionSaver",
    "AsyncTieredMemoryStore",
    "BackendUnavailableError",
    "ChromaHnswConfig",
    "ConfigurationError",
    "ErasureReceipt",
    "ForgettingPolicy",
    "GraphConfig",
    "GraphStore",
    "InvalidFilterError",
    "InvalidItemError",
    "MemoryAgentState",
    "MemoryEntry",
    "MemoryEvent",
    "MemoryHit",
    "MemoryWriteError",
    "MemoryWriter",
    "NamespaceLockedError",
    "PatternRedactor",
    "RedisSessionSaver",
    "ScoreBreakdown",
    "ScoringConfig",
    "SummarizationNode",
    "TierPolicy",
    "TieredMemoryError",
    "TieredMemoryStore",
    "UserProfile",
    "aextract_memories",
    "aget_user_profile",
    "asummarize_messages",
    "create_forgetting_graph",
    "create_manage_memory_tool",
    "create_memory_agent",
    "create_search_memory_tool",
    "create_summarizer_graph",
    "extract_memories",
    "flush_memory_writes",
    "get_user_profile",
    "import_langchain_chroma",
    "summarize_messages",
]
