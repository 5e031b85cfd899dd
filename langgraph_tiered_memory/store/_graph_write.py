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
"""

from __future__ import annotations

import asyncio
import json
import logging
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
from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace, StoredItem
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id

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


def _common_prefix(namespaces: Iterable[Namespace]) -> Namespace:
    out: Namespace | None = None
    for ns in namespaces:
        if out is None:
            out = ns
            continue
        n = 0
        while n < min(len(out), len(ns)) and out[n] == ns[n]:
            n += 1
        out = out[:n]
    return out or ()


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
    prefix = _common_prefix(namespaces)
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
