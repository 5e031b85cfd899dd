"""The knowledge graph beside the long-term tier: triples, their storage and queries.

The backends live in their own modules so that importing this package needs neither
SQLite tables nor the FalkorDB client: `langgraph_tiered_memory.graph.sqlite.SqliteGraph`
(embedded, the default) and `langgraph_tiered_memory.graph.falkordb.FalkorDBGraph`
(extra `graph`). The queries of a tiered store's graph are functions of the store:
`graph_triples(store, ...)`, `graph_neighbors(store, ...)`, `rebuild_graph(store, ...)`.
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
from langgraph_tiered_memory.graph.queries import (
    agraph_neighbors,
    agraph_triples,
    arebuild_graph,
    graph_neighbors,
    graph_triples,
    rebuild_graph,
)
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
    "agraph_neighbors",
    "agraph_triples",
    "arebuild_graph",
    "erase_user_graph",
    "graph_neighbors",
    "graph_triples",
    "normalize_entity",
    "normalize_relation",
    "query_entities",
    "rebuild_graph",
    "render_tree",
    "resolve_extractor",
    "to_mermaid",
]
