"""The knowledge graph in the store's write path: which writes carry triples, and which.

With `graph=`, every long-term memory write says what the memory supports afterwards
(`ItemWrite.triples`): the triples extracted from its own text (already redacted by
planning), plus those a caller adds (consolidation: what the merged sources
supported). A delete supports nothing. An internal rewrite that keeps the memory's
content (the `keep=` rewrites of reinforcement and maintenance) carries no change
(`None`), so no extractor runs for it. Writes routed to the short tier never carry
triples.

`plan_graph` decides this for a planned batch; the sync store runs the extractor in
`_prepare`, the async one awaits it before its thread hop, and both hand the result
to `apply_extracted`. A backend that writes in the tier's transaction (SQLite) gets
the triples with each write; any other (FalkorDB) is updated by `GraphSyncedTier`
right after the long tier's write, under the same namespace locks, for the store's
batches and the tier's own deletes (TTL sweeps) alike.

`repair` re-extracts the memories under a prefix and replaces their triples (the
`rebuild_graph` function); `repair_due` (the store's `setup()`) does the same for the
memories a store on a Chroma server lists as due (`GraphDue`). Both replace a
memory's triples under the namespace's write lock, and only while the memory is as it
was read, so a concurrent write's triples are never undone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from langgraph_tiered_memory.config import TierName
from langgraph_tiered_memory.errors import BackendUnavailableError, ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple
from langgraph_tiered_memory.privacy._redact import mask_urls_in
from langgraph_tiered_memory.ranking.scoring import user_scope
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace, StoredItem
from langgraph_tiered_memory.store.tiers._namespaces import has_prefix, namespace_id

_log = logging.getLogger("langgraph_tiered_memory.store.graph")

Support = Mapping[tuple[Namespace, str], Iterable[Triple]]
"""Triples a write's memory supports besides those extracted from its text."""


class GraphSyncError(BackendUnavailableError):
    """The memories were written, but the knowledge graph could not be updated.

    The message names the `rebuild_graph` call that repairs it.
    """


def memory_text(value: Mapping[str, Any], keyword_text: str | None = None) -> str:
    """The text triples are extracted from: the memory's `content`, else its indexed text."""
    content = value.get("content")
    if isinstance(content, str) and content.strip():
        return content
    return keyword_text or ""


def memory_speaker(value: Mapping[str, Any]) -> str | None:
    """Who said the memory (`speaker`), for first-person statements; None if unknown."""
    speaker = value.get("speaker")
    return speaker if isinstance(speaker, str) and speaker.strip() else None


@dataclass(slots=True)
class GraphJobs:
    """The writes of a batch whose text is extracted, with those texts and speakers."""

    writes: list[ItemWrite] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    speakers: list[str | None] = field(default_factory=list)
    done: bool = False
    """The extractor ran (the async store runs it before `_prepare`)."""


def plan_graph(
    writes: Sequence[ItemWrite],
    *,
    tier_for: Callable[[Namespace], TierName],
    user_label: str,
    keep: Mapping[tuple[Namespace, str], Any] | None = None,
    support: Support | None = None,
) -> GraphJobs:
    """Set `triples` and `user_id` of a batch's long-term writes; the texts to extract.

    Deletes support nothing. Rewrites listed in `keep` (content kept) carry no change
    unless `support` lists them too. Every other memory write supports what its text
    yields (filled in by `apply_extracted`) plus its `support`.
    """
    jobs = GraphJobs()
    for w in writes:
        if tier_for(w.namespace) != "long":
            continue
        w.user_id = user_scope(w.namespace, user_label)
        if w.value is None:
            w.triples = ()
            continue
        if w.memory is None:
            continue  # not a memory: only memory-mode stores keep a graph
        at = (w.namespace, w.key)
        extra = None if support is None else support.get(at)
        if keep is not None and at in keep and extra is None:
            continue  # a rewrite that keeps the content keeps its triples
        w.triples = tuple(dict.fromkeys(extra or ()))
        text = memory_text(w.value, w.keyword_text)
        if text.strip():
            jobs.writes.append(w)
            jobs.texts.append(text)
            jobs.speakers.append(memory_speaker(w.value))
    if not jobs.writes:
        jobs.done = True
    return jobs


def check_triples(found: Any, count: int, extractor: Any) -> list[tuple[Triple, ...]]:
    """The extractor's answer for `count` texts, each triple normalised.

    Raises:
        ConfigurationError: not one list of (subject, relation, object) per text.
    """
    name = type(extractor).__name__
    if not isinstance(found, Sequence) or len(found) != count:
        got = len(found) if isinstance(found, Sequence) else type(found).__name__
        raise ConfigurationError(
            f"The triple extractor {name} must return one list of triples per text:"
            f" {count} texts, got {got}."
        )
    out: list[tuple[Triple, ...]] = []
    for triples in found:
        kept: dict[Triple, None] = {}
        for t in triples:
            if (
                not isinstance(t, tuple)
                or len(t) != 3
                or not all(isinstance(part, str) for part in t)
            ):
                raise ConfigurationError(
                    f"The triple extractor {name} returned {t!r}; each triple must be a"
                    " (subject, relation, object) of strings (graph.types.Triple)."
                )
            triple = Triple.of(*t)
            if all(triple):
                kept[triple] = None
        out.append(tuple(kept))
    return out


def apply_extracted(jobs: GraphJobs, found: Any, extractor: Any) -> None:
    """Add the extracted triples to the writes of `jobs` (after what they already hold)."""
    for w, triples in zip(
        jobs.writes, check_triples(found, len(jobs.writes), extractor), strict=True
    ):
        w.triples = tuple(dict.fromkeys((*triples, *(w.triples or ()))))
    jobs.done = True


def extract(extractor: Any, jobs: GraphJobs) -> None:
    """Run the extractor on the jobs' texts (sync) and apply the result."""
    if jobs.done:
        return
    apply_extracted(jobs, extractor.extract(jobs.texts, speakers=jobs.speakers), extractor)


async def arun_extractor(
    extractor: Any, texts: Sequence[str], speakers: Sequence[str | None]
) -> Any:
    """The extractor's answer for `texts`: its `aextract`, or its `extract` in a thread."""
    run = getattr(extractor, "aextract", None)
    if run is not None:
        return await run(texts, speakers=speakers)
    return await asyncio.to_thread(extractor.extract, texts, speakers=speakers)


async def aextract(extractor: Any, jobs: GraphJobs) -> None:
    """Async `extract`: the extractor's `aextract`, or its `extract` in a worker thread."""
    if jobs.done:
        return
    apply_extracted(jobs, await arun_extractor(extractor, jobs.texts, jobs.speakers), extractor)


def sync_error(
    graph: GraphStore,
    namespaces: Iterable[Namespace],
    what: str,
    e: Exception,
    *,
    listed: bool = False,
) -> GraphSyncError:
    """The error of a graph update that failed after the tier's write succeeded.

    With `listed`, the memories are in the store's `GraphDue` record, which its next
    `setup()` repairs.
    """
    # `commonprefix` compares any sequences element-wise, so it works on label tuples.
    prefix = tuple(os.path.commonprefix(list(namespaces)))
    when = "the store's next setup() repairs them or " if listed else ""
    return GraphSyncError(
        f"The memories were {what}, but the knowledge graph ({graph.name}) could not be"
        f" updated: {type(e).__name__}: {mask_urls_in(str(e))}. Their triples stay out of"
        f" date until {when}you run rebuild_graph(store, namespace_prefix={prefix!r})"
        " (or arebuild_graph, from langgraph_tiered_memory.graph), which re-extracts the"
        " memories under the prefix and replaces their triples."
    )


def detach_triples(writes: Sequence[ItemWrite]) -> list[MemoryTriples]:
    """Take the graph changes off `writes`, for a graph the tier does not write.

    The tier then writes no triples of its own (its SQLite file keeps none), and the
    changes go to the graph after the tier wrote (`GraphSyncedTier.write`).
    """
    changes = [
        MemoryTriples(w.namespace, w.key, w.triples, w.user_id)
        for w in writes
        if w.triples is not None
    ]
    for w in writes:
        w.triples = None
    return changes


class GraphDue:
    """Memories whose graph update is due: a Redis SET per store prefix, `P:lt:graph_due`.

    `GraphSyncedTier` lists a batch's memories before the tier writes them and removes
    them once the graph holds their triples, all under the namespaces' locks. A member
    left behind (a process that died between the two, a graph that failed) is
    re-extracted from the memory's current value by the store's next `setup()` or by
    `rebuild_graph`. A member is the JSON `[namespace labels, key]`.
    """

    def __init__(self, client: Any, prefix: str) -> None:
        self._client = client
        self.key = f"{prefix}:lt:graph_due"

    @staticmethod
    def _member(namespace: Namespace, key: str) -> str:
        return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))

    def add(self, changes: Sequence[MemoryTriples]) -> None:
        """List the memories of `changes` as due."""
        if changes:
            self._client.sadd(self.key, *{self._member(c.namespace, c.key) for c in changes})

    def done(self, changes: Sequence[MemoryTriples]) -> None:
        """The graph holds the triples of `changes`: they are no longer due."""
        if changes:
            self._client.srem(self.key, *{self._member(c.namespace, c.key) for c in changes})

    def listed(self) -> list[tuple[Namespace, str]]:
        """Every due memory, as (namespace, key)."""
        out = []
        for raw in self._client.sscan_iter(self.key, count=1000):
            labels, key = json.loads(raw)
            out.append((tuple(labels), key))
        return out


class GraphSyncedTier:
    """The long tier of a store whose graph is not written in the tier's transaction.

    Everything is the tier's, except its writes: a batch's memory writes and the TTL
    sweeps (`expired` with `delete=True`, `sweep`) update the graph right after the
    tier wrote, inside `tier.exclusive` of each namespace written (taken in namespace
    id order, as the tier takes them). Two writers of one memory, in one process or
    in replicas on a Chroma server, thus update the graph in the order they wrote the
    memory. On a Chroma server the memories are also listed in `GraphDue` from before
    the tier's write until the graph holds their triples.
    """

    def __init__(self, tier: Any, graph: GraphStore, user_label: str) -> None:
        self._synced_tier = tier
        self._synced_graph = graph
        self._user_label = user_label

    def __getattr__(self, name: str) -> Any:
        return getattr(self._synced_tier, name)

    @property
    def graph_due(self) -> GraphDue | None:
        """The due record of a tier that keeps its index in Redis (a Chroma server)."""
        client = getattr(self._synced_tier, "redis", None)
        return None if client is None else GraphDue(client, self._synced_tier.prefix)

    @contextmanager
    def holding(self, namespaces: Iterable[Namespace]) -> Iterator[None]:
        """Hold `tier.exclusive` of each namespace (reentrant), in namespace id order."""
        with ExitStack() as stack:
            for ns in sorted(set(namespaces), key=namespace_id):
                stack.enter_context(self._synced_tier.exclusive(ns))
            yield

    def _synced(self, due: GraphDue | None, changes: Sequence[MemoryTriples], what: str) -> None:
        """Give the graph `changes` after the tier wrote them.

        Raises:
            GraphSyncError: the graph failed (the memories stay listed in `due`).
        """
        try:
            self._synced_graph.replace(changes)
        except Exception as e:
            namespaces = [c.namespace for c in changes]
            raise sync_error(self._synced_graph, namespaces, what, e, listed=due is not None) from e

    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        """The tier's `write`; then the graph gets the writes' triples, under their locks.

        Raises:
            GraphSyncError: the memories were stored but the graph failed.
        """
        changes = detach_triples(writes)
        if not changes:
            self._synced_tier.write(writes, now=now)
            return
        due = self.graph_due
        with self.holding(w.namespace for w in writes):
            if due is not None:
                due.add(changes)  # before the write: a crash after it leaves the record
            self._synced_tier.write(writes, now=now)
            self._synced(due, changes, "stored")
            if due is not None:
                due.done(changes)

    def expired(
        self, namespace: Namespace, *, now: float, delete: bool, keys: Sequence[str] | None = None
    ) -> list[StoredItem]:
        """The tier's `expired`; swept items leave the graph too, under the namespace's lock.

        Raises:
            GraphSyncError: the items were deleted but the graph failed.
        """
        tier = self._synced_tier
        if not delete:
            return cast(list[StoredItem], tier.expired(namespace, now=now, delete=False, keys=keys))
        due = self.graph_due
        user = user_scope(namespace, self._user_label)
        with self.holding([namespace]):
            listed: list[MemoryTriples] = []
            if due is not None:  # list what the sweep deletes before it does
                found = tier.expired(namespace, now=now, delete=False, keys=keys)
                if not found:
                    return []
                keys = [it.key for it in found]
                listed = [MemoryTriples(namespace, k, (), user) for k in keys]
                due.add(listed)
            gone: list[StoredItem] = tier.expired(namespace, now=now, delete=True, keys=keys)
            if gone:
                changes = [MemoryTriples(namespace, it.key, (), user) for it in gone]
                self._synced(due, changes, "deleted (TTL expired)")
            if due is not None:
                due.done(listed)
            return gone

    def sweep(self, *, now: float) -> int:
        """Delete expired items namespace by namespace, so the graph learns which."""
        removed = 0
        for ns in self._synced_tier.namespaces((), now=None):
            removed += len(self.expired(ns, now=now, delete=True))
        return removed

    def __repr__(self) -> str:
        return f"GraphSyncedTier({self._synced_tier!r}, graph={self._synced_graph.name!r})"


# --------------------------------------------------------------------------- repair
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
    due = _due(core)
    due_now = due.listed() if due is not None else []
    listed = dict.fromkeys(at for at in due_now if has_prefix(at[0], prefix))
    memories: list[MemoryText] = []
    if everything:
        memories = _memories(core, prefix)
        live = {(m[0], m[1]) for m in memories}
        graph = require_graph(core, "rebuild_graph")
        credited = dict.fromkeys(
            (rec.namespace, key)
            for rec in graph.triples(prefix, limit=_ALL)
            for key in rec.memory_keys
        )
        # The gone memories the graph still credits, then the due ones.
        listed = {at: None for at in {**credited, **listed} if at not in live}
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
