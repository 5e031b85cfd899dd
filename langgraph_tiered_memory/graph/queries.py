"""Queries of a tiered store's knowledge graph, and rebuilding it: functions of the store.

A prefix selects namespaces like a search's: a query under `("users", "u1")` never sees
another user's triples.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from langgraph_tiered_memory.graph.types import (
    Namespace,
    Neighbor,
    TripleRecord,
    normalize_entity,
    normalize_relation,
)
from langgraph_tiered_memory.store._graph_write import arepair, repair, require_graph
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._validate import check_labels

__all__ = [
    "agraph_neighbors",
    "agraph_triples",
    "arebuild_graph",
    "graph_neighbors",
    "graph_triples",
    "rebuild_graph",
]


def _check_prefix(namespace: Any, what: str) -> Namespace:
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)):
        raise ValueError(
            f"{what} must be a namespace prefix tuple such as ('users', 'u1'), got {namespace!r}."
        )
    if not all(isinstance(label, str) for label in namespace):
        raise ValueError(f"{what} labels must be strings, got {tuple(namespace)!r}.")
    check_labels(namespace, what)
    return tuple(namespace)


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"limit must be a positive int, got {limit!r}.")
    return limit


def _check_part(value: Any, name: str, *, relation: bool = False) -> str | None:
    """A pattern part, normalised like stored triples; None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string or None, got {value!r}.")
    check_labels([value], name)
    out = normalize_relation(value) if relation else normalize_entity(value)
    if not out:
        raise ValueError(f"{name} {value!r} is empty once normalised; pass a name or None.")
    return out


def _neighbors_query(
    store: StoreCore, namespace: Any, entity: Any, hops: Any, relation: Any, limit: Any
) -> Callable[[], list[Neighbor]]:
    """The checked `GraphStore.neighbors` call, for the sync and async functions to run."""
    graph = require_graph(store, "graph_neighbors")
    prefix = _check_prefix(namespace, "namespace")
    if entity is None:
        raise ValueError("entity must be an entity name such as 'alice', got None.")
    start = _check_part(entity, "entity")
    assert start is not None
    if isinstance(hops, bool) or hops not in (1, 2):
        raise ValueError(f"hops must be 1 or 2, got {hops!r}.")
    relation = _check_part(relation, "relation", relation=True)
    return functools.partial(
        graph.neighbors, prefix, start, hops=hops, relation=relation, limit=_check_limit(limit)
    )


def _triples_query(
    store: StoreCore, namespace: Any, subject: Any, relation: Any, obj: Any, limit: Any
) -> Callable[[], list[TripleRecord]]:
    """The checked `GraphStore.triples` call, for the sync and async functions to run."""
    graph = require_graph(store, "graph_triples")
    return functools.partial(
        graph.triples,
        _check_prefix(namespace, "namespace"),
        subject=_check_part(subject, "subject"),
        relation=_check_part(relation, "relation", relation=True),
        object=_check_part(obj, "object"),
        limit=_check_limit(limit),
    )


def graph_triples(
    store: StoreCore,
    namespace: tuple[str, ...],
    *,
    subject: str | None = None,
    relation: str | None = None,
    object: str | None = None,  # noqa: A002
    limit: int = 100,
) -> list[TripleRecord]:
    """Triples under a namespace prefix matching a pattern, with their source memories.

    Parts are normalised like stored triples (`"Alice"` matches `alice`,
    `"lives in"` matches `lives_in`); None matches anything.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace: Namespace prefix; `("users", "u1")` covers that user's namespaces.
        subject: Subject entity, or None.
        relation: Relation, or None.
        object: Object entity, or None.
        limit: Most triples returned (ordered by namespace, subject, relation, object).

    Raises:
        ConfigurationError: the store was created without `graph=`.
        ValueError: a bad argument.
    """
    return _triples_query(store, namespace, subject, relation, object, limit)()


def graph_neighbors(
    store: StoreCore,
    namespace: tuple[str, ...],
    entity: str,
    *,
    hops: int = 1,
    relation: str | None = None,
    limit: int = 50,
) -> list[Neighbor]:
    """Entities within 1 or 2 hops of `entity`, with the triples and memories on the way.

    Triples are followed either way; a 2-hop path stays within one user (or one
    namespace without a user). Nearest first, then by name.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace: Namespace prefix; `("users", "u1")` covers that user's namespaces.
        entity: Start entity (normalised: case and spaces do not matter).
        hops: 1 or 2.
        relation: Follow only this relation on every hop, or None for any.
        limit: Most neighbours returned.

    Raises:
        ConfigurationError: the store was created without `graph=`.
        ValueError: a bad argument.
    """
    return _neighbors_query(store, namespace, entity, hops, relation, limit)()


async def agraph_triples(
    store: StoreCore,
    namespace: tuple[str, ...],
    *,
    subject: str | None = None,
    relation: str | None = None,
    object: str | None = None,  # noqa: A002
    limit: int = 100,
) -> list[TripleRecord]:
    """Async `graph_triples` (the query runs in a worker thread); the same arguments."""
    query = _triples_query(store, namespace, subject, relation, object, limit)
    return await asyncio.to_thread(query)


async def agraph_neighbors(
    store: StoreCore,
    namespace: tuple[str, ...],
    entity: str,
    *,
    hops: int = 1,
    relation: str | None = None,
    limit: int = 50,
) -> list[Neighbor]:
    """Async `graph_neighbors` (the query runs in a worker thread); the same arguments."""
    query = _neighbors_query(store, namespace, entity, hops, relation, limit)
    return await asyncio.to_thread(query)


def rebuild_graph(store: StoreCore, namespace_prefix: tuple[str, ...] = ()) -> int:
    """Re-extract every long-term memory under a prefix and replace its triples.

    Repairs the graph after a `GraphSyncError` (memories stored, graph not
    updated), builds the graph of memories stored before the store had one, and
    re-extracts after changing the extractor. Triples credited to memories that
    no longer exist are dropped.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace_prefix: Namespace prefix; `()` (default) is every memory.

    Returns:
        The number of memories re-extracted.

    Raises:
        ConfigurationError: the store was created without `graph=`.
        GraphSyncError: the graph failed (run it again).
    """
    prefix = _check_prefix(namespace_prefix, "namespace_prefix")
    return repair(store, prefix, everything=True)


async def arebuild_graph(store: StoreCore, namespace_prefix: tuple[str, ...] = ()) -> int:
    """Async `rebuild_graph`: the extractor's async API, the I/O in worker threads."""
    prefix = _check_prefix(namespace_prefix, "namespace_prefix")
    return await arepair(store, prefix, everything=True)
