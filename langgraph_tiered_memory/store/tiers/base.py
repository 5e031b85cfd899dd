"""The interface every storage tier implements."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

import numpy as np

from langgraph_tiered_memory.ranking.select import ChannelHits, MemoryStatsView
from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace, StoredItem
from langgraph_tiered_memory.store.tiers.sqlite_stats import ContextInputs

__all__ = [
    "Candidate",
    "ChannelHits",
    "ContextInputs",
    "Tier",
    "MemoryTier",
    "MemoryStatsView",
    "RetrievalHits",
    "ScoredItem",
]

ScoredItem = tuple[StoredItem, float | None]

RetrievalHits = ChannelHits[StoredItem]
"""Raw candidate lists per channel of `MemoryTier.retrieve`."""


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

    def check_writes(self, namespaces: Sequence[Namespace]) -> None:
        """Raise now if a write to one of `namespaces` would be refused; write nothing.

        The store calls it for every batch after planning and before embedding and
        writing, so a batch that one of its tiers cannot take fails before its first
        write on any tier. It may read (and cache) what it checks, but never creates.

        Raises:
            ConfigurationError: a namespace was stored with a setting this store does
                not share (on the long tier: another embedding size).
        """

    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        """Apply upserts and deletes (vectors, value and metadata together).

        Everything a write can refuse is checked before: values by the store's
        planning, namespaces by `check_writes`.
        """

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
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[ScoredItem]:
        """Best `limit` live items under `prefix` matching `filter`.

        With a query vector, items come by descending cosine similarity, then the
        unindexed ones with score None. Without one, in storage order. With
        `namespace_filter`, only the namespaces it accepts are searched.
        """

    def namespaces(self, prefix: Namespace, *, now: float) -> list[Namespace]:
        """Namespaces under `prefix` holding at least one live item."""

    def sweep(self, *, now: float) -> int:
        """Delete expired items; return how many were removed."""

    def close(self) -> None:
        """Release clients the tier owns."""


class Candidate(NamedTuple):
    """One memory-search candidate: what each channel found of an item, and its stats."""

    item: StoredItem
    semantic: float | None
    """Best similarity of any of its vectors, or None when the dense cut dropped it."""
    keyword: float | None
    """BM25 score, or None when the keyword cut dropped it."""
    stats: MemoryStatsView | None
    own: float | None = None
    """Best similarity among the item's own (field) vectors, when dense retrieval saw one."""
    context: float | None = None
    """Best similarity among its key vectors (contextual, sentence), when seen."""
    graph: float | None = None
    """Graph-channel score, when the knowledge graph reached the memory."""


class ConditionalDeletes(Tier, Protocol):
    """A tier that deletes an item only while it is the version read (the short tier)."""

    def delete_unchanged(self, items: Sequence[StoredItem]) -> list[bool]:
        """Per item, delete it if unchanged since it was read; whether it was deleted."""


class MemoryTier(Tier, Protocol):
    """The long-term tier as the memory path uses it: a `Tier` plus memory statistics.

    The statistics methods return nothing (empty) on a store without memory scoring.
    """

    def namespaces(self, prefix: Namespace, *, now: float | None) -> list[Namespace]:
        """Namespaces under `prefix` with a live item at `now` (None: every registered one)."""

    def exclusive(self, namespace: Namespace | None = None) -> AbstractContextManager[Any]:
        """A lock held across a read and the rewrite built from it.

        Without `namespace`, it keeps this process's writers out; with it, also the
        other processes' writers of that namespace (a long tier on a Chroma server).
        """

    def retrieve(
        self,
        prefix: Namespace,
        *,
        query_vector: Sequence[float] | None,
        match: Sequence[str] | None,
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> RetrievalHits:
        """Raw live candidates of each channel (dense, keyword) under `prefix`, uncut.

        Each namespace contributes about `limit` hits per channel; the caller cuts
        the pooled lists (`ranking.select.cut_channels`) and reads `memory_stats`.
        """

    def memory_stats(
        self, namespace: Namespace, keys: Sequence[str]
    ) -> Mapping[str, MemoryStatsView]:
        """Statistics of those of `keys` that are memories."""

    def context_inputs(self, namespace: Namespace, keys: Sequence[str]) -> ContextInputs:
        """Which of `keys` are memories, and the own text of the memory before each.

        For a key not stored yet, that is the namespace's last memory; one read.
        """

    def iter_memory_stats(
        self, namespace: Namespace, page_size: int = 1000
    ) -> Iterator[Sequence[tuple[str, MemoryStatsView]]]:
        """Pages of (key, statistics) of a namespace's memories."""

    def primary_vectors(
        self, namespace: Namespace, keys: Sequence[str]
    ) -> tuple[list[str], np.ndarray]:
        """The keys with an own-text vector, and those vectors as rows."""

    def touch(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Count one access of each item."""

    def expired(
        self, namespace: Namespace, *, now: float, delete: bool, keys: Sequence[str] | None = None
    ) -> list[StoredItem]:
        """Items of `namespace` (or of its `keys`) whose TTL ran out; swept with `delete`."""

    def user_namespaces(self, rule: Callable[[Namespace], bool]) -> list[Namespace]:
        """Every registered namespace `rule` owns, live or holding only expired items."""

    def erase_namespaces(
        self, namespaces: Sequence[Namespace], *, dry_run: bool = False
    ) -> dict[str, list[tuple[str, ...]]]:
        """Remove everything held for `namespaces`; receipt place -> ids (labels + key)."""

    def erase_keys(
        self, items: Mapping[Namespace, Sequence[str]], *, dry_run: bool = False
    ) -> dict[str, list[tuple[str, ...]]]:
        """Remove single items as thoroughly; receipt place -> ids (labels + key)."""
