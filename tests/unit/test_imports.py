import importlib
import re
from pathlib import Path

import pytest

import langgraph_tiered_memory


def test_public_names_are_pinned() -> None:
    """The root holds the names users start from, at most 40 of them."""
    assert sorted(langgraph_tiered_memory.__all__) == sorted(
        [
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
    )
    assert len(langgraph_tiered_memory.__all__) <= 40
    for name in langgraph_tiered_memory.__all__:
        assert getattr(langgraph_tiered_memory, name) is not None


# The other public names, each exported by the public module of its capability.
HOMES = {
    "langgraph_tiered_memory.agent.builder": ["DEFAULT_MEMORY_PROMPT", "ImportanceRules"],
    "langgraph_tiered_memory.agent.extraction": [
        "ExtractedMemories",
        "ExtractedMemory",
        "ExtractionResult",
        "MemoryDecision",
    ],
    "langgraph_tiered_memory.agent.summarizer": ["trim_working_memory"],
    "langgraph_tiered_memory.agent.tools": ["MemoryToolError"],
    "langgraph_tiered_memory.checkpoint.registry": ["SessionMeta"],
    "langgraph_tiered_memory.config": ["DEFAULT_CHROMA_HNSW", "DEFAULT_TIER_POLICY"],
    "langgraph_tiered_memory.embeddings": [
        "LOCAL_EMBEDDING_DIMS",
        "LocalE5Embeddings",
        "LocalMiniLMEmbeddings",
        "embedder_name",
        "local_embedder_installed",
        "resolve_embeddings",
        "threshold_vectors",
    ],
    "langgraph_tiered_memory.graph": [
        "ModelExtractor",
        "Neighbor",
        "RuleExtractor",
        "Triple",
        "TripleExtractionError",
        "TripleExtractor",
        "TripleRecord",
        "agraph_neighbors",
        "agraph_triples",
        "arebuild_graph",
        "graph_neighbors",
        "graph_triples",
        "rebuild_graph",
    ],
    "langgraph_tiered_memory.interop": ["ImportCounts"],
    "langgraph_tiered_memory.privacy": [
        "aerase_user",
        "aexport_user",
        "amemory_history",
        "erase_user",
        "export_user",
        "history_export",
        "history_namespaces",
        "memory_history",
        "tombstone_history",
    ],
    "langgraph_tiered_memory.privacy.erasure": ["UserNamespaces"],
    "langgraph_tiered_memory.privacy.history": ["acting"],
    "langgraph_tiered_memory.privacy.redaction": [
        "Finding",
        "PresidioRedactor",
        "RedactionResult",
        "Redactor",
        "RedactorSpec",
        "redact_value",
        "resolve_redactor",
    ],
    "langgraph_tiered_memory.ranking.forgetting": [
        "DEFAULT_FORGETTING_POLICY",
        "GARBAGE_COLLECT_POLICY",
        "calculate_decay",
        "should_forget",
    ],
    "langgraph_tiered_memory.retriever": ["MemoryRetriever"],
    "langgraph_tiered_memory.store": [
        "ConsolidationRecord",
        "ForgettingReport",
        "ForgottenRow",
        "GCReport",
        "GraphSyncError",
        "PromotionSkip",
    ],
    "langgraph_tiered_memory.store.maintenance": [
        "THEME_SIMILARITY",
        "Promoted",
        "aconsolidate",
        "aforget",
        "agarbage_collect",
        "apromote",
        "consolidate",
        "forget",
        "garbage_collect",
        "promote",
    ],
}


@pytest.mark.parametrize("module", sorted(HOMES))
def test_other_public_names_live_in_public_modules(module: str) -> None:
    mod = importlib.import_module(module)
    assert not any(part.startswith("_") for part in module.split("."))
    for name in HOMES[module]:
        assert name in mod.__all__, (module, name)
        assert getattr(mod, name) is not None
        assert name not in langgraph_tiered_memory.__all__


def test_stores_are_langgraph_base_stores() -> None:
    from langgraph.store.base import BaseStore
    from langgraph.store.base.batch import AsyncBatchedBaseStore

    assert issubclass(langgraph_tiered_memory.TieredMemoryStore, BaseStore)
    assert issubclass(langgraph_tiered_memory.AsyncTieredMemoryStore, AsyncBatchedBaseStore)
    assert langgraph_tiered_memory.TieredMemoryStore.supports_ttl is True


def _api_sections() -> dict[str, str]:
    """docs/api.md split by heading: the root section, then one per capability module."""
    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    root, _, rest = text.partition("## By capability")
    sections = {"langgraph_tiered_memory": root}
    for part in rest.split("\n### `")[1:]:
        module, _, body = part.partition("`")
        sections[module] = body
    return sections


def test_every_public_name_is_in_the_api_reference_under_its_module() -> None:
    sections = _api_sections()
    expected = {"langgraph_tiered_memory": list(langgraph_tiered_memory.__all__), **HOMES}
    assert sorted(sections) == sorted(expected)
    for module, names in expected.items():
        listed = re.findall(r"^\| `([A-Za-z0-9_]+)` \|", sections[module], flags=re.M)
        assert sorted(listed) == sorted(names), module
