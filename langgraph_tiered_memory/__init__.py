"""langgraph-tiered-memory: three tiers of memory for LangGraph agents."""

from langgraph_tiered_memory.agent.builder import (
    DEFAULT_MEMORY_PROMPT,
    ImportanceRules,
    MemoryAgentState,
    create_memory_agent,
)
from langgraph_tiered_memory.agent.extraction import (
    ExtractedMemories,
    ExtractedMemory,
    ExtractionResult,
    MemoryDecision,
    aextract_memories,
    extract_memories,
)
from langgraph_tiered_memory.agent.forgetting_graph import create_forgetting_graph
from langgraph_tiered_memory.agent.profile import UserProfile, aget_user_profile, get_user_profile
from langgraph_tiered_memory.agent.summarizer import (
    SummarizationNode,
    asummarize_messages,
    create_summarizer_graph,
    summarize_messages,
    trim_working_memory,
)
from langgraph_tiered_memory.agent.tools import (
    MemoryToolError,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langgraph_tiered_memory.agent.writer import MemoryWriteError, MemoryWriter, flush_memory_writes
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
    NamespaceLockedError,
    TieredMemoryError,
)
from langgraph_tiered_memory.graph import (
    GraphStore,
    ModelExtractor,
    Neighbor,
    RuleExtractor,
    Triple,
    TripleExtractionError,
    TripleExtractor,
    TripleRecord,
)
from langgraph_tiered_memory.interop import ImportCounts, import_langchain_chroma
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.privacy.erasure import ErasureReceipt, UserNamespaces
from langgraph_tiered_memory.privacy.history import MemoryEvent, acting
from langgraph_tiered_memory.privacy.redaction import (
    Finding,
    PatternRedactor,
    PresidioRedactor,
    RedactionResult,
    Redactor,
    RedactorSpec,
    redact_value,
    resolve_redactor,
)
from langgraph_tiered_memory.ranking.forgetting import (
    DEFAULT_FORGETTING_POLICY,
    GARBAGE_COLLECT_POLICY,
    ForgettingPolicy,
    calculate_decay,
    should_forget,
)
from langgraph_tiered_memory.ranking.scoring import ScoreBreakdown
from langgraph_tiered_memory.retriever import MemoryRetriever
from langgraph_tiered_memory.store import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.store._config import GraphConfig
from langgraph_tiered_memory.store._graph_write import GraphSyncError
from langgraph_tiered_memory.store._reports import (
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
    GCReport,
    PromotionSkip,
)
from langgraph_tiered_memory.store.base import MemoryHit

__all__ = [
    "acting",
    "aextract_memories",
    "aget_user_profile",
    "asummarize_messages",
    "AsyncRedisSessionSaver",
    "AsyncTieredMemoryStore",
    "BackendUnavailableError",
    "calculate_decay",
    "ChromaHnswConfig",
    "ConfigurationError",
    "ConsolidationRecord",
    "create_forgetting_graph",
    "create_manage_memory_tool",
    "create_memory_agent",
    "create_search_memory_tool",
    "create_summarizer_graph",
    "DEFAULT_CHROMA_HNSW",
    "DEFAULT_FORGETTING_POLICY",
    "DEFAULT_MEMORY_PROMPT",
    "DEFAULT_TIER_POLICY",
    "ErasureReceipt",
    "extract_memories",
    "ExtractedMemories",
    "ExtractedMemory",
    "ExtractionResult",
    "Finding",
    "flush_memory_writes",
    "ForgettingPolicy",
    "ForgettingReport",
    "ForgottenRow",
    "GARBAGE_COLLECT_POLICY",
    "GCReport",
    "get_user_profile",
    "GraphConfig",
    "GraphStore",
    "GraphSyncError",
    "import_langchain_chroma",
    "ImportanceRules",
    "ImportCounts",
    "InvalidFilterError",
    "InvalidItemError",
    "MemoryAgentState",
    "MemoryDecision",
    "MemoryEntry",
    "MemoryEvent",
    "MemoryHit",
    "MemoryRetriever",
    "MemoryToolError",
    "MemoryWriteError",
    "MemoryWriter",
    "ModelExtractor",
    "NamespaceLockedError",
    "Neighbor",
    "PatternRedactor",
    "PresidioRedactor",
    "PromotionSkip",
    "redact_value",
    "RedactionResult",
    "Redactor",
    "RedactorSpec",
    "RedisSessionSaver",
    "resolve_redactor",
    "RuleExtractor",
    "ScoreBreakdown",
    "ScoringConfig",
    "SessionMeta",
    "should_forget",
    "SummarizationNode",
    "summarize_messages",
    "TieredMemoryError",
    "TieredMemoryStore",
    "TierPolicy",
    "trim_working_memory",
    "Triple",
    "TripleExtractionError",
    "TripleExtractor",
    "TripleRecord",
    "UserNamespaces",
    "UserProfile",
]
