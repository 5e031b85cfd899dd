"""The tiered `BaseStore` implementations and the records their maintenance returns.

`TieredMemoryStore` and `AsyncTieredMemoryStore` are also exported by the package root;
the reports of `gc`, `forget`, `consolidate` and `promote` and the graph-sync error live here.
"""

from langgraph_tiered_memory.store._graph_write import GraphSyncError
from langgraph_tiered_memory.store._reports import (
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
    GCReport,
    PromotionSkip,
)
from langgraph_tiered_memory.store.aio import AsyncTieredMemoryStore
from langgraph_tiered_memory.store.sync import TieredMemoryStore

__all__ = [
    "AsyncTieredMemoryStore",
    "ConsolidationRecord",
    "ForgettingReport",
    "ForgottenRow",
    "GCReport",
    "GraphSyncError",
    "PromotionSkip",
    "TieredMemoryStore",
]
