"""The stores' knowledge-graph methods: queries, and rebuilding the triples of memories.

`graph_triples` and `graph_neighbors` (and their `a…` twins) query the graph the
store keeps with `graph=`; a prefix selects namespaces like a search's, so a query
under `("users", "u1")` never sees another user's triples. `rebuild_graph`
re-extracts the memories under a prefix and replaces their triples: it repairs a
graph a failed update left behind (`GraphSyncError`) and builds one for memories
stored before the store had a graph. `repair_due` (the store's `setup()`) does the
same for the memories a store on a Chroma server lists as due (`GraphDue`). Both
replace a memory's triples under the namespace's write lock, and only while the
memory is as it was read, so a concurrent write's triples are never undone.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, cast

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import (
    MemoryTriples,
    Namespace,
    Neighbor,
    TripleRecord,
    normalize_entity,
    normalize_relation,
)
from langgraph_tiered_memory.ranking.scoring import user_scope
from langgraph_tiered_memory.store._graph_write import (
    GraphDue,
    arun_extractor,
    check_triples,
    memory_speaker,
    memory_text,
    sync_error,
)
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._validate import check_labels
from langgraph_tiered_memory.store.tiers._namespaces import has_prefix

_log = logging.getLogger("langgraph_tiered_memory.store.graph")

_EXTRACT_BATCH = 64
"""Memories per extractor call of a rebuild."""
_READ_PAGE = 500
_ALL = 2**31 - 1
"""A `limit` no graph reaches: every triple under a prefix (FalkorDB takes 32-bit limits)."""

MemoryText = tuple[Namespace, str, str, str | None, str | None]
"""(namespace, key, text, speaker, user) of a memory to extract."""


def _require_graph(store: Any, method: str) -> GraphStore:
    graph = getattr(store, "graph", None)
    if graph is None:
        raise ConfigurationError(
            f"{method} needs a knowledge graph: create the store with graph=True (see"
            " docs/graph.md) or graph={'backend': 'falkordb', 'url': ...}."
        )
    return cast(GraphStore, graph)


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


def _neighbors_args(
    store: Any, namespace: Any, entity: Any, hops: Any, relation: Any, limit: Any
) -> tuple[GraphStore, Namespace, str, dict[str, Any]]:
    graph = _require_graph(store, "graph_neighbors")
    prefix = _check_prefix(namespace, "namespace")
    if entity is None:
        raise ValueError("entity must be an entity name such as 'alice', got None.")
    start = _check_part(entity, "entity")
    assert start is not None
    if isinstance(hops, bool) or hops not in (1, 2):
        raise ValueError(f"hops must be 1 or 2, got {hops!r}.")
    return (
        graph,
        prefix,
        start,
        {
            "hops": hops,
            "relation": _check_part(relation, "relation", relation=True),
            "limit": _check_limit(limit),
        },
    )


def _triples_args(
    store: Any, namespace: Any, subject: Any, relation: Any, obj: Any, limit: Any
) -> tuple[GraphStore, Namespace, dict[str, Any]]:
    graph = _require_graph(store, "graph_triples")
    return (
        graph,
        _check_prefix(namespace, "namespace"),
        {
            "subject": _check_part(subject, "subject"),
            "relation": _check_part(relation, "relation", relation=True),
            "object": _check_part(obj, "object"),
            "limit": _check_limit(limit),
        },
    )


# --------------------------------------------------------------------------- rebuild
def _read(core: StoreCore, ns: Namespace, keys: Sequence[str]) -> dict[str, MemoryText]:
    """What the live long-term memories among `keys` are extracted from (not an access)."""
    if core.tier_for(ns) != "long":
        return {}
    user = user_scope(ns, core.scoring.user_label)
    found = core._long().get(ns, keys, now=core.clock())
    return {
        key: (ns, key, memory_text(item.value), memory_speaker(item.value), user)
        for key, item in found.items()
    }


def _memories(core: StoreCore, prefix: Namespace) -> list[MemoryText]:
    """The live long-term memories under `prefix`."""
    tier = core._long()
    out: list[MemoryText] = []
    for ns in tier.namespaces(prefix, now=None):
        if core.tier_for(ns) == "long":
            for page in tier.iter_memory_stats(ns, _READ_PAGE):
                out.extend(_read(core, ns, [k for k, _ in page]).values())
    return out


def _due(core: StoreCore) -> GraphDue | None:
    """The record of memories whose graph update is due (a store on a Chroma server)."""
    due: GraphDue | None = getattr(core._long(), "graph_due", None)
    return due


def _listed(core: StoreCore, prefix: Namespace) -> dict[tuple[Namespace, str], None]:
    """The due memories under `prefix`."""
    due = _due(core)
    listed = due.listed() if due is not None else []
    return dict.fromkeys(at for at in listed if has_prefix(at[0], prefix))


def _stale(
    graph: GraphStore, prefix: Namespace, live: set[tuple[Namespace, str]]
) -> dict[tuple[Namespace, str], None]:
    """Memories the graph credits under `prefix` that are not in `live`."""
    credited = dict.fromkeys(
        (rec.namespace, key) for rec in graph.triples(prefix, limit=_ALL) for key in rec.memory_keys
    )
    return {at: None for at in credited if at not in live}


def _gone(
    core: StoreCore, missing: Iterable[tuple[Namespace, str]]
) -> tuple[list[MemoryText], list[MemoryText]]:
    """Of `missing`, those live after all (written since), and the deleted ones.

    A deleted memory is a `MemoryText` with no text: it supports nothing.
    """
    by_ns: dict[Namespace, list[str]] = {}
    for ns, key in missing:
        by_ns.setdefault(ns, []).append(key)
    live: list[MemoryText] = []
    deleted: list[MemoryText] = []
    for ns, keys in by_ns.items():
        found = _read(core, ns, keys)
        live.extend(found.values())
        deleted.extend((ns, key, "", None, None) for key in keys if key not in found)
    return live, deleted


def _changes(batch: list[MemoryText], found: Any, extractor: Any) -> list[MemoryTriples]:
    wanted = [i for i, m in enumerate(batch) if m[2].strip()]
    triples = check_triples(found, len(wanted), extractor) if wanted else []
    by_index = dict(zip(wanted, triples, strict=True))
    return [
        MemoryTriples(ns, key, by_index.get(i, ()), user)
        for i, (ns, key, _, _, user) in enumerate(batch)
    ]


def _texts(batch: list[MemoryText]) -> tuple[list[str], list[str | None]]:
    wanted = [m for m in batch if m[2].strip()]
    return [m[2] for m in wanted], [m[3] for m in wanted]


def _settle(core: StoreCore, graph: GraphStore, batch: list[MemoryText], found: Any) -> None:
    """Replace the triples of `batch` in write order, and clear them from the due record.

    Per namespace, under `exclusive(ns)` (the writers' lock): only memories still as
    read are replaced; a memory written since was given its triples by that write.

    Raises:
        GraphSyncError: the graph failed.
    """
    changes = _changes(batch, found, core.graph_extractor)
    read: dict[Namespace, dict[str, MemoryText | None]] = {}
    for m in batch:
        read.setdefault(m[0], {})[m[1]] = m if m[2].strip() else None
    due = _due(core)
    tier = core._long()
    for ns, seen in read.items():
        with tier.exclusive(ns):
            now = _read(core, ns, list(seen))
            kept = [c for c in changes if c.namespace == ns and _same(now.get(c.key), seen[c.key])]
            if kept:
                try:
                    graph.replace(kept)
                except Exception as e:
                    raise sync_error(graph, [ns], "kept", e, listed=due is not None) from e
                if due is not None:
                    due.done(kept)


def _same(now: MemoryText | None, read: MemoryText | None) -> bool:
    """Whether a memory is as read (an empty text counts as no memory)."""
    if now is not None and not now[2].strip():
        now = None
    return now == read


def _work(core: StoreCore, prefix: Namespace, *, everything: bool) -> tuple[list[MemoryText], int]:
    """The memories to re-extract, and how many of them are live.

    With `everything`, every memory under `prefix` and those the graph still credits
    that are gone; else the due ones only.
    """
    listed = _listed(core, prefix)
    memories: list[MemoryText] = []
    if everything:
        memories = _memories(core, prefix)
        live = {(m[0], m[1]) for m in memories}
        stale = _stale(_require_graph(core, "rebuild_graph"), prefix, live)
        listed = {at: None for at in {**stale, **listed} if at not in live}
    found, deleted = _gone(core, listed)
    return memories + found + deleted, len(memories) + len(found)


def repair(core: StoreCore, prefix: Namespace = (), *, everything: bool = False) -> int:
    """Re-extract memories and replace their triples, in write order (sync).

    Without `everything`, only the memories the due record lists (the store's setup).

    Returns:
        The number of live memories re-extracted (those deleted are not counted).
    """
    graph = _require_graph(core, "rebuild_graph")
    extractor = core.graph_extractor
    work, live = _work(core, prefix, everything=everything)
    for start in range(0, len(work), _EXTRACT_BATCH):
        batch = work[start : start + _EXTRACT_BATCH]
        texts, speakers = _texts(batch)
        found = extractor.extract(texts, speakers=speakers) if texts else []
        _settle(core, graph, batch, found)
    return live


async def arepair(core: StoreCore, prefix: Namespace = (), *, everything: bool = False) -> int:
    """Async `repair`: the extractor's `aextract`, the I/O in worker threads."""
    graph = _require_graph(core, "arebuild_graph")
    extractor = core.graph_extractor
    work, live = await asyncio.to_thread(_work, core, prefix, everything=everything)
    for start in range(0, len(work), _EXTRACT_BATCH):
        batch = work[start : start + _EXTRACT_BATCH]
        texts, speakers = _texts(batch)
        found = await arun_extractor(extractor, texts, speakers) if texts else []
        await asyncio.to_thread(_settle, core, graph, batch, found)
    return live


def repair_due(core: StoreCore) -> int:
    """Bring the graph in line with the memories the due record lists (store setup).

    Returns:
        The number of live memories re-extracted.
    """
    if core.graph is None or _due(core) is None:
        return 0
    count = repair(core)
    if count:
        _log.info("Re-extracted the graph triples of %d memories listed as due", count)
    return count


class GraphMethods:
    """Knowledge-graph queries and `rebuild_graph`, sync and async (both stores)."""

    def graph_triples(
        self,
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
            namespace: Namespace prefix; `("users", "u1")` covers that user's namespaces.
            subject: Subject entity, or None.
            relation: Relation, or None.
            object: Object entity, or None.
            limit: Most triples returned (ordered by namespace, subject, relation, object).

        Raises:
            ConfigurationError: the store was created without `graph=`.
            ValueError: a bad argument.
        """
        graph, prefix, kw = _triples_args(self, namespace, subject, relation, object, limit)
        return graph.triples(prefix, **kw)

    def graph_neighbors(
        self,
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
            namespace: Namespace prefix; `("users", "u1")` covers that user's namespaces.
            entity: Start entity (normalised: case and spaces do not matter).
            hops: 1 or 2.
            relation: Follow only this relation on every hop, or None for any.
            limit: Most neighbours returned.

        Raises:
            ConfigurationError: the store was created without `graph=`.
            ValueError: a bad argument.
        """
        graph, prefix, start, kw = _neighbors_args(self, namespace, entity, hops, relation, limit)
        return graph.neighbors(prefix, start, **kw)

    async def agraph_triples(
        self,
        namespace: tuple[str, ...],
        *,
        subject: str | None = None,
        relation: str | None = None,
        object: str | None = None,  # noqa: A002
        limit: int = 100,
    ) -> list[TripleRecord]:
        """Async `graph_triples` (the query runs in a worker thread).

        Args:
            namespace: Namespace prefix.
            subject: Subject entity, or None.
            relation: Relation, or None.
            object: Object entity, or None.
            limit: Most triples returned.
        """
        graph, prefix, kw = _triples_args(self, namespace, subject, relation, object, limit)
        return await asyncio.to_thread(functools.partial(graph.triples, prefix, **kw))

    async def agraph_neighbors(
        self,
        namespace: tuple[str, ...],
        entity: str,
        *,
        hops: int = 1,
        relation: str | None = None,
        limit: int = 50,
    ) -> list[Neighbor]:
        """Async `graph_neighbors` (the query runs in a worker thread).

        Args:
            namespace: Namespace prefix.
            entity: Start entity.
            hops: 1 or 2.
            relation: Follow only this relation, or None.
            limit: Most neighbours returned.
        """
        graph, prefix, start, kw = _neighbors_args(self, namespace, entity, hops, relation, limit)
        return await asyncio.to_thread(functools.partial(graph.neighbors, prefix, start, **kw))

    def rebuild_graph(self, namespace_prefix: tuple[str, ...] = ()) -> int:
        """Re-extract every long-term memory under a prefix and replace its triples.

        Repairs the graph after a `GraphSyncError` (memories stored, graph not
        updated), builds the graph of memories stored before the store had one, and
        re-extracts after changing the extractor. Triples credited to memories that
        no longer exist are dropped.

        Args:
            namespace_prefix: Namespace prefix; `()` (default) is every memory.

        Returns:
            The number of memories re-extracted.

        Raises:
            ConfigurationError: the store was created without `graph=`.
            GraphSyncError: the graph failed (run it again).
        """
        prefix = _check_prefix(namespace_prefix, "namespace_prefix")
        return repair(cast(StoreCore, self), prefix, everything=True)

    async def arebuild_graph(self, namespace_prefix: tuple[str, ...] = ()) -> int:
        """Async `rebuild_graph`: the extractor's async API, the I/O in worker threads.

        Args:
            namespace_prefix: Namespace prefix; `()` (default) is every memory.
        """
        prefix = _check_prefix(namespace_prefix, "namespace_prefix")
        return await arepair(cast(StoreCore, self), prefix, everything=True)
