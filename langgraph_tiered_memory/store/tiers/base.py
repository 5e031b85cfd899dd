"""The interface every storage tier implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from langgraph_tiered_memory.store._common import ItemWrite, Namespace, StoredItem

__all__ = ["Tier", "ScoredItem"]

ScoredItem = tuple[StoredItem, float | None]


class Tier(Protocol):
    """One backend. All methods are synchronous; the async store runs them in a thread.

    Timestamps and `now` are epoch seconds from the store's clock.
    """

    name: str

    def setup(self) -> None:
        """Create what the tier needs; idempotent."""

    def get(
        self, namespace: Namespace, keys: Sequence[str], *, now: float
    ) -> dict[str, StoredItem]:
        """Live items of `namespace` with the given keys."""

    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        """Apply upserts and deletes (vectors, value and metadata together)."""

    def refresh(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Restart the TTL of items that have one."""

    def search(
        self,
        prefix: Namespace,
        *,
        query_vector: Sequence[float] | None,
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
    ) -> list[ScoredItem]:
        """Best `limit` live items under `prefix` matching `filter`.

        With a query vector, items come by descending cosine similarity, then the
        unindexed ones with score None. Without one, in storage order.
        """

    def namespaces(self, prefix: Namespace, *, now: float) -> list[Namespace]:
        """Namespaces under `prefix` holding at least one live item."""

    def sweep(self, *, now: float) -> int:
        """Delete expired items; return how many were removed."""

    def close(self) -> None:
        """Release clients the tier owns."""
