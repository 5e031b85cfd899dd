import langgraph_tiered_memory


def test_public_names_are_pinned() -> None:
    assert sorted(langgraph_tiered_memory.__all__) == sorted(
        [
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
    )
    for name in langgraph_tiered_memory.__all__:
        assert getattr(langgraph_tiered_memory, name) is not None


def test_stores_are_langgraph_base_stores() -> None:
    from langgraph.store.base import BaseStore
    from langgraph.store.base.batch import AsyncBatchedBaseStore

    assert issubclass(langgraph_tiered_memory.TieredMemoryStore, BaseStore)
    assert issubclass(langgraph_tiered_memory.AsyncTieredMemoryStore, AsyncBatchedBaseStore)
    assert langgraph_tiered_memory.TieredMemoryStore.supports_ttl is True
