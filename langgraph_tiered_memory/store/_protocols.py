"""What the maintenance passes and the search path use of a store core (typing only).

`TieredStoreCore` satisfies `StoreCore`; modules that work on a core type their
argument with this protocol instead of importing the core, so they never import the
module that imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from langgraph.store.base import Op, Result

from langgraph_tiered_memory.config import TierName
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import Triple
from langgraph_tiered_memory.ranking.scoring import Scoring
from langgraph_tiered_memory.store.planning import Plan
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers.base import MemoryTier, Tier
from langgraph_tiered_memory.store.tiers.sqlite_history import HistoryTable


class StoreCore(Protocol):
    """A store core (`TieredStoreCore`): its configuration, its tiers and its batch path."""

    clock: Callable[[], float]
    """The store's clock (epoch seconds)."""
    scoring: Scoring
    embeddings: Any
    """The index's embeddings (LangChain `Embeddings`), or None without an index."""
    allow_non_finite_filters: bool
    _router: TierRouter
    graph: GraphStore | None
    """The knowledge graph (`graph=`), or None when the store keeps none."""
    graph_extractor: Any
    key_prefix: str
    """The prefix of the store's Redis keys and Chroma collections."""
    history_enabled: bool

    @property
    def memory_mode(self) -> bool: ...

    def tier_for(self, namespace: Namespace) -> TierName: ...

    def _tier(self, name: TierName) -> Tier: ...

    def _memory_text(self, value: Mapping[str, Any]) -> str: ...

    def _long(self) -> MemoryTier: ...

    def _plan(self, ops: Iterable[Op]) -> Plan: ...

    def _run_batch(
        self,
        ops: Iterable[Op],
        *,
        keep: Mapping[tuple[Namespace, str], Any] | None = None,
        support: Mapping[tuple[Namespace, str], Sequence[Triple]] | None = None,
    ) -> list[Result]: ...

    def _check_memory_namespace(self, namespace: Namespace) -> None: ...

    def _history_table(self) -> HistoryTable: ...

    def _history_file(self) -> HistoryTable | None: ...

    def _check_vectors(self, vectors: Sequence[Sequence[float]], what: str) -> None: ...
