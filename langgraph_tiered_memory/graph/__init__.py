"""The knowledge graph beside the long-term tier: triples, their storage and queries.

The backends live in their own modules so that importing this package needs neither
SQLite tables nor the FalkorDB client: `langgraph_tiered_memory.graph.sqlite.SqliteGraph`
(embedded, the default) and `langgraph_tiered_memory.graph.falkordb.FalkorDBGraph`
(extra `graph`).
"""

from langgraph_tiered_memory.graph.erase import GraphErasure, erase_user_graph
from langgraph_tiered_memory.graph.extract import (
    ModelExtractor,
    RuleExtractor,
    TripleExtractionError,
    TripleExtractor,
    query_entities,
    resolve_extractor,
)
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.render import render_tree, to_mermaid
from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Neighbor,
    Triple,
    TripleRecord,
    normalize_entity,
    normalize_relation,
)

__all__ = [
    "GraphErasure",
    "GraphHit",
    "GraphStore",
    "MemoryTriples",
    "ModelExtractor",
    "Neighbor",
    "RuleExtractor",
    "Triple",
    "TripleExtractionError",
    "TripleExtractor",
    "TripleRecord",
    "erase_user_graph",
    "normalize_entity",
    "normalize_relation",
    "query_entities",
    "render_tree",
    "resolve_extractor",
    "to_mermaid",
]
