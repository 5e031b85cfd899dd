"""Rebuilding the triples of a tiered store's memories (`langgraph_tiered_memory.graph.queries`).

`repair` re-extracts the memories under a prefix and replaces their triples (the
`rebuild_graph` function); `repair_due` (the store's `setup()`) does the same for the
memories a store on a Chroma server lists as due (`GraphDue`). Both replace a
memory's triples under the namespace's write lock, and only while the memory is as it
was read, so a concurrent write's triples are never undone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import (
    MemoryTriples,
    Namespace,
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
from langgraph_tiered_memory.store.tiers._namespaces import has_prefix

_log = logging.getLogger("langgraph_tiered_memory.store.graph")

_EXTRACT_BATCH = 64
"""Memories per extractor call of a rebuild."""
_READ_PAGE = 500
_ALL = 2**31 - 1
"""A `limit` no graph reaches: every triple under a prefix (FalkorDB takes 32-bit limits)."""

MemoryText = tuple[Namespace, str, str, str | None, str | None]
"""(namespace, key, text, speaker, user) of a memory to extract."""


def require_graph(store: StoreCore, method: str) -> GraphStore:
    """The store's knowledge graph; `ConfigurationError` naming `method` without one."""
    graph = store.graph
    if graph is None:
        raise ConfigurationError(
            f"{method} needs a knowledge graph: create the store with graph=True (see"
            " docs/graph.md) or graph={'backend': 'falkordb', 'url': ...}."
        )
    return graph


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
        stale = _stale(require_graph(core, "rebuild_graph"), prefix, live)
        listed = {at: None for at in {**stale, **listed} if at not in live}
    found, deleted = _gone(core, listed)
    return memories + found + deleted, len(memories) + len(found)


def repair(core: StoreCore, prefix: Namespace = (), *, everything: bool = False) -> int:
    """Re-extract memories and replace their triples, in write order (sync).

    Without `everything`, only the memories the due record lists (the store's setup).

    Returns:
        The number of live memories re-extracted (those deleted are not counted).
    """
    graph = require_graph(core, "rebuild_graph")
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
    graph = require_graph(core, "arebuild_graph")
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
