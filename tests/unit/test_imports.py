import langgraph_tiered_memory


def test_public_names_are_pinned() -> None:
    assert sorted(langgraph_tiered_memory.__all__) == sorted(
        [
            "ErasureReceipt",
            "UserNamespaces",
            "MemoryEvent",
            "acting",
            "GraphStore",
            "ModelExtractor",
            "NamespaceLockedError",
            "Neighbor",
            "RuleExtractor",
            "Triple",
            "TripleExtractionError",
            "TripleExtractor",
            "TripleRecord",
            "GraphConfig",
            "GraphSyncError",
            "ImportCounts",
            "import_langchain_chroma",
            "MemoryRetriever",
            "AsyncRedisSessionSaver",
            "AsyncTieredMemoryStore",
            "BackendUnavailableError",
            "ChromaHnswConfig",
            "ConfigurationError",
            "ConsolidationRecord",
            "DEFAULT_CHROMA_HNSW",
            "DEFAULT_FORGETTING_POLICY",
            "DEFAULT_MEMORY_PROMPT",
            "DEFAULT_TIER_POLICY",
            "ExtractedMemories",
            "ExtractedMemory",
            "ExtractionResult",
            "Finding",
            "ForgettingPolicy",
            "ForgettingReport",
            "ForgottenRow",
            "GARBAGE_COLLECT_POLICY",
            "GCReport",
            "ImportanceRules",
            "InvalidFilterError",
            "InvalidItemError",
            "MemoryAgentState",
            "MemoryDecision",
            "MemoryEntry",
            "MemoryHit",
            "MemoryToolError",
            "MemoryWriteError",
            "MemoryWriter",
            "PatternRedactor",
            "PresidioRedactor",
            "PromotionSkip",
            "RedactionResult",
            "Redactor",
            "RedactorSpec",
            "RedisSessionSaver",
            "ScoreBreakdown",
            "ScoringConfig",
            "SessionMeta",
            "SummarizationNode",
            "TierPolicy",
            "TieredMemoryError",
            "TieredMemoryStore",
            "UserProfile",
            "aextract_memories",
            "aget_user_profile",
            "asummarize_messages",
            "calculate_decay",
            "create_forgetting_graph",
            "create_manage_memory_tool",
            "create_memory_agent",
            "create_search_memory_tool",
            "create_summarizer_graph",
            "extract_memories",
            "flush_memory_writes",
            "get_user_profile",
            "redact_value",
            "resolve_redactor",
            "should_forget",
            "summarize_messages",
            "trim_working_memory",
        ]
    )
    for name in langgraph_tiered_memory.__all__:
        assert getattr(langgraph_tiered_memory, name) is not None


def test_stores_are_langgraph_base_stores() -> None:
    from langgraph.store.base import BaseStore
    from langgraph.store.base.batch import AsyncBatchedBaseStore

    assert issubclass(langgraph_tiered_memory.TieredMemoryStore, BaseStore)
    assert issubclass(langgraph_tiered_memory.AsyncTieredMemoryStore, AsyncBatchedBaseStore)
    assert langgraph_tiered_memory.TieredMemoryStore.supports_ttl is True
