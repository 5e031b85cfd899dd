"""The SQLite file beside an embedded Chroma, behind one facade.

When the Chroma client is an embedded `PersistentClient`, the long-term tier keeps
`tiered-memory-docs.sqlite3` beside the Chroma database. Chroma stays the source of
truth. The file plays six roles, each in its own module and tables:

- document copy (`sqlite_docs`): each item's primary-record metadata, answering `get`;
- intent log (`sqlite_intents`): keys whose Chroma records are changing;
- namespace registry (`sqlite_registry`): each prefix's namespaces and where they live
  (buckets, own collections, moves), one-off jobs done;
- memory statistics (`sqlite_stats`): ranking fields, write order, access counts;
- keyword index (`sqlite_keywords`): one FTS5 table for every namespace, ranked per
  namespace;
- knowledge graph (`sqlite_graph`): triples per namespace and the memories supporting them.

They share one connection and lock (`sqlite_db`). Writes follow the intent log so the
file never disagrees with Chroma after a crash: (1) the keys about to change (and the
triples the write gives them) are recorded and committed (`begin`), (2) Chroma is
written, (3) the copy, the statistics, the keyword index and the graph are updated and
the keys leave the log in one transaction (`commit`). Opening the mirror replays
whatever is still pending by copying those records from Chroma (`recover`).

With an in-memory Chroma the file is in memory (`":memory:"`). A legacy file of a
server's memory index (`memory_index_path`, read by `index_import`) has no document copy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Namespace,
    Neighbor,
    Triple,
    TripleRecord,
)
from langgraph_tiered_memory.store._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.sqlite_db import MIRROR_FILE, SqliteFile
from langgraph_tiered_memory.store.tiers.sqlite_docs import DocCopy
from langgraph_tiered_memory.store.tiers.sqlite_graph import GraphTables, PendingGraph
from langgraph_tiered_memory.store.tiers.sqlite_history import (
    HistoryRow,
    HistoryTable,
    RecoveredHistory,
)
from langgraph_tiered_memory.store.tiers.sqlite_intents import IntentLog
from langgraph_tiered_memory.store.tiers.sqlite_keywords import KeywordIndex
from langgraph_tiered_memory.store.tiers.sqlite_registry import NamespaceRegistry
from langgraph_tiered_memory.store.tiers.sqlite_stats import (
    ContextInputs,
    MemoryRow,
    MemoryStats,
    MemoryTable,
)

__all__ = [
    "DocMirror",
    "MIRROR_FILE",
    "MemoryRow",
    "MemoryStats",
    "PendingGraph",
]


logger = logging.getLogger("langgraph_tiered_memory.store.tiers.doc_mirror")


class DocMirror:
    """Every role of the SQLite file, keyed by (prefix, namespace id, key).

    Args:
        location: The Chroma persist directory (the file is `MIRROR_FILE` in it), a
            file path, or `":memory:"`.
    """

    def __init__(self, location: str | Path) -> None:
        self._db = SqliteFile(location)
        self.path = self._db.path
        self._docs = DocCopy(self._db)
        self._intents = IntentLog(self._db)
        self._registry = NamespaceRegistry(self._db)
        self._memories = MemoryTable(self._db)
        self._keywords = KeywordIndex(self._db, self._memories)
        self._graph = GraphTables(self._db)
        self.history = HistoryTable(self._db)
        """Memory history (`m_history`), appended to by `commit`."""

    def close(self) -> None:
        """Close the SQLite connection."""
        self._db.close()

    # ------------------------------------------------------------- document copy
    def get(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored metadata of the given keys that exist."""
        with self._db.locked():
            return self._docs.get(prefix, nsid, keys)

    def has_docs(self, prefix: str, nsid: str, *, live_at: float | None = None) -> bool:
        """Whether the namespace still holds any item (with `live_at`: a live one then)."""
        with self._db.locked():
            return self._docs.has_docs(prefix, nsid, live_at)

    # ------------------------------------------------------------- intent log
    def begin(
        self,
        prefix: str,
        nsid: str,
        keys: Iterable[str],
        graph: Sequence[PendingGraph] = (),
        entry: Mapping[str, Any] | None = None,
    ) -> None:
        """Record (and commit) that these keys are about to change in Chroma.

        `graph` holds the triples the write gives some of them, with the write id of
        each one's new document (see `recover`). `entry`: the namespace's registry
        entry, written in the same transaction (its first write, or first TTL item).
        """
        with self._db.transaction():
            self._intents.record(prefix, nsid, keys)
            if graph:
                self._graph.record(prefix, nsid, graph)
            if entry is not None:
                self._registry.put(prefix, {nsid: entry})

    def commit(
        self,
        prefix: str,
        nsid: str,
        *,
        upserts: Mapping[str, Mapping[str, Any]] | None = None,
        deletes: Iterable[str] = (),
        expiries: Mapping[str, float] | None = None,
        done: Iterable[str] = (),
        memories: Mapping[str, MemoryRow] | None = None,
        forget: Iterable[str] = (),
        docs: bool = True,
        graph: Sequence[MemoryTriples] | None = None,
        history: tuple[Namespace, Sequence[HistoryRow]] | None = None,
    ) -> None:
        """Apply what Chroma now holds and clear the pending keys, in one transaction.

        Args:
            prefix: The store's key prefix.
            nsid: Namespace id.
            upserts: Primary metadata of written items (copied when `docs`).
            deletes: Keys deleted (documents, memory rows and keyword entries).
            expiries: New expiry times of refreshed items.
            done: Keys to clear from `pending`.
            memories: Memory rows (keyword text and ranking fields) of written items;
                their access statistics are kept.
            forget: Keys that leave the memory index only (rewritten as non-memories).
            docs: Whether this file keeps the document copy.
            graph: The triples each written memory now supports (all of this
                namespace); None when the batch changes no triples. Deleted and
                forgotten keys lose theirs either way (unless `graph` gives a
                forgotten key some). Not None also clears the triples `begin`
                recorded for `done`.
            history: (namespace, events) of the batch's memories, appended to the
                memory history in the same transaction.
        """
        deletes = list(deletes)
        forget = list(forget)
        dropped = deletes + forget
        done = list(done)
        gone = set(deletes)
        changes = [m for m in graph or () if m.key not in gone]
        given = {m.key for m in changes}
        with self._db.transaction():
            if docs:
                self._docs.put(prefix, nsid, upserts or {})
            if memories or dropped:
                self._keywords.write(prefix, nsid, memories or {}, dropped)
            if changes or dropped:
                drops = [k for k in forget if k not in given] if given else forget
                self._graph.apply(prefix, nsid, changes, deletes + drops)
            self._docs.delete(prefix, nsid, deletes)
            self._docs.set_expiries(prefix, nsid, expiries or {})
            self._intents.clear(prefix, nsid, done)
            if graph is not None:
                self._graph.clear(prefix, nsid, done)
            if history is not None:
                self.history.append(prefix, nsid, *history)

    def recover(
        self,
        prefix: str,
        read: Callable[[str, list[str]], dict[str, dict[str, Any]]],
        describe: Callable[[dict[str, Any]], MemoryRow | None] | None = None,
        *,
        docs: bool = True,
        write_id: Callable[[dict[str, Any]], str] | None = None,
        history: RecoveredHistory | None = None,
    ) -> int:
        """Replay interrupted writes of `prefix` by copying their records from Chroma.

        Keys gone from Chroma lose their triples. A key whose write recorded triples
        (`begin`) gets them if Chroma holds that write's document, and keeps its
        previous triples if Chroma still holds the previous one. Keys that are not
        memories in Chroma (when `describe` is given) leave the memory index.

        Args:
            prefix: The store's key prefix.
            read: Returns Chroma's current primary metadata for (namespace id, keys).
            describe: Builds the memory row of a primary record (None: no memory index).
            docs: Whether this file keeps the document copy.
            write_id: The write id of a primary record's document. Without it, a key
                whose write recorded triples loses its triples (logged).
            history: Plans the memory history events of the repaired keys from
                (namespace id, keys, Chroma's records, the copy's records before).

        Returns:
            How many keys were repaired.
        """
        with self._db.locked():
            pending = self._intents.pending(prefix)
        for nsid, keys in pending.items():
            current = read(nsid, keys)
            rows = {} if describe is None else {k: describe(m) for k, m in current.items()}
            with self._db.locked():
                recorded = self._graph.pending(prefix, nsid, keys)
            graph = [
                p.change
                for k, p in recorded.items()
                if k in current and write_id is not None and write_id(current[k]) == p.write_id
            ]
            unknown = [k for k in recorded if k in current and write_id is None]
            graph += [recorded[k].change._replace(triples=()) for k in unknown]
            if recorded:
                logger.info(
                    "graph of prefix %r, namespace %s: triples of %d interrupted writes"
                    " recovered (%d applied, %d keys left without triples, the rest kept)",
                    prefix,
                    nsid,
                    len(recorded),
                    len(graph) - len(unknown),
                    len(unknown),
                )
            events = None
            if history is not None:
                with self._db.locked():
                    before = self._docs.get(prefix, nsid, keys) if docs else {}
                events = history(nsid, keys, current, before)
            self.commit(
                prefix,
                nsid,
                upserts=current,
                deletes=[k for k in keys if k not in current],
                done=keys,
                memories={k: row for k, row in rows.items() if row is not None},
                forget=[k for k, row in rows.items() if row is None],
                docs=docs,
                graph=graph,
                history=events,
            )
            if docs:  # registered by a write that died before Chroma got anything
                with self._db.locked():
                    self._registry.drop(prefix, nsid, unless_held=True)
        return sum(map(len, pending.values()))

    # ------------------------------------------------------------- namespace registry
    def is_filled(self, prefix: str) -> bool:
        """Whether the mirror has been filled from Chroma for `prefix` (or `prefix` + "/mem")."""
        with self._db.locked():
            return self._registry.is_filled(prefix)

    def mark_filled(self, prefix: str) -> None:
        """Record that `prefix` has been copied from Chroma."""
        with self._db.locked():
            self._registry.mark_filled(prefix)

    def registered(self, prefix: str, under: str) -> list[tuple[str, bool]]:
        """Encoded namespaces starting with the encoded prefix `under`, with their TTL flag."""
        with self._db.locked():
            return [(m["ns"], m["ttl"]) for _, m in self._registry.under(prefix, under)]

    def registry(
        self,
        prefix: str,
        *,
        nsids: Sequence[str] | None = None,
        under: str = "",
        moving: bool = False,
    ) -> list[tuple[str, dict[str, Any]]]:
        """(namespace id, entry) of the given namespace ids, else of those under `under`.

        `moving`: only namespaces whose move left records in a bucket.
        """
        with self._db.locked():
            if nsids is not None:
                return self._registry.get(prefix, nsids)
            return self._registry.under(prefix, under, moving=moving)

    def registry_put(self, prefix: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Write whole registry entries (namespace id -> entry)."""
        with self._db.locked():
            self._registry.put(prefix, entries)

    def registry_drop(self, prefix: str, nsid: str) -> None:
        """Remove a namespace's registry entry."""
        with self._db.locked():
            self._registry.drop(prefix, nsid)

    def registry_buckets(self, prefix: str) -> int | None:
        """The prefix's bucket count (None: its registry is not set up yet)."""
        with self._db.locked():
            return self._registry.buckets(prefix)

    def set_up_registry(
        self, prefix: str, buckets: int, entries: Iterable[tuple[str, Mapping[str, Any]]] = ()
    ) -> None:
        """Record the prefix's bucket count and first entries, in one transaction."""
        with self._db.transaction():
            self._registry.set_up(prefix, buckets, entries)

    # ------------------------------------------------------------- memory statistics
    def memory_stats(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, MemoryStats]:
        """Ranking fields and access statistics of the given keys that are memories."""
        with self._db.locked():
            return self._memories.stats(prefix, nsid, keys)

    def memory_page(
        self, prefix: str, nsid: str, after: int, limit: int
    ) -> list[tuple[int, str, MemoryStats]]:
        """One page of a namespace's memories in write order: (rid, key, stats).

        Args:
            prefix: The store's key prefix.
            nsid: Namespace id.
            after: Return rows with rid above this (0 for the first page).
            limit: Page size.
        """
        with self._db.locked():
            return self._memories.page(prefix, nsid, after, limit)

    def touch(self, prefix: str, hits: Sequence[tuple[str, str]], now: float) -> None:
        """Count one access of each (namespace id, key) at time `now`, atomically.

        The increment happens inside SQLite (`access_count = access_count + 1`), so
        concurrent searches, in this process or another one, never lose an increment.
        """
        if not hits:
            return
        with self._db.transaction(immediate=True):
            self._memories.touch(prefix, hits, now)

    # ------------------------------------------------------------- keyword index
    def keyword_search(
        self, prefix: str, nsid: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 search of one namespace's keyword index for any of `terms`.

        Scores use the statistics of the namespace alone (its row count, average
        length and document frequencies), as FTS5's `bm25()` over a table of its own.

        In a namespace of 1,000 memories or more, terms found in at least half of
        them are dropped first: BM25 gives them no weight (FTS5 clamps their IDF to
        about 0), yet matching them would score nearly every row.

        Args:
            prefix: The store's key prefix.
            nsid: Namespace id.
            terms: Lower-cased query words (not stemmed).
            limit: Most results to return.

        Returns:
            (key, BM25 score) pairs, best first; higher scores are better.
        """
        with self._db.locked():
            return self._keywords.search(prefix, nsid, terms, limit)

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """The memories written right after `keys` that carry a context key made with one.

        When `keys` are deleted, these are the memories whose context key names a deleted
        memory. Memories in `keys` or `skip` (rewritten in the same batch) are left out.
        """
        with self._db.locked():
            return self._keywords.context_successors(prefix, nsid, keys, skip)

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` in its namespace.

        For a key not stored yet, that is the namespace's last memory. None when
        there is no earlier memory.
        """
        with self._db.locked():
            return self._keywords.previous_text(prefix, nsid, key)

    def context_inputs(self, prefix: str, nsid: str, keys: Sequence[str]) -> ContextInputs:
        """Which of `keys` are memories, and the text before each (one read for a batch)."""
        with self._db.locked():
            memories = frozenset(self._memories.stats(prefix, nsid, keys))
            previous = {k: self._keywords.previous_text(prefix, nsid, k) for k in keys}
        return ContextInputs(memories, previous)

    # ------------------------------------------------------------- erasure
    def namespace_keys(self, prefix: str, nsid: str) -> set[str]:
        """Keys the file holds anything of in a namespace (documents, memories, intents)."""
        with self._db.locked() as conn:
            rows = conn.execute(
                "SELECT key FROM docs WHERE prefix=?1 AND nsid=?2 UNION SELECT key FROM mem"
                " WHERE prefix=?1 AND nsid=?2 UNION SELECT key FROM pending WHERE prefix=?1"
                " AND nsid=?2",
                (prefix, nsid),
            ).fetchall()
        return {str(k) for (k,) in rows}

    def erase_namespace(self, prefix: str, nsid: str, ns: str) -> None:
        """Remove a namespace from every role but the graph, in one transaction, and scrub.

        Documents, intents, memory statistics, keyword entries and the registry entry
        go; see `scrub`.
        """
        with self._db.transaction():
            self._docs.erase(prefix, nsid)
            self._intents.erase(prefix, nsid)
            self._keywords.erase(prefix, nsid)
            self._registry.drop(prefix, nsid)
        self.scrub()

    def vacuum(self) -> None:
        """Rebuild the file from its live rows (`VACUUM`), then empty the WAL."""
        self._db.vacuum()

    def scrub(self) -> None:
        """Leave no trace of deleted rows: FTS5 'optimize' of the keyword index, WAL truncated.

        Deleted FTS5 rows stay in the index segments until they merge; 'optimize'
        merges them (it rewrites the index of every namespace). The connection deletes
        with `secure_delete` (freed space is zeroed), and the checkpoint empties the WAL
        of the old page images.
        """
        with self._db.transaction():
            self._keywords.optimize()
        self._db.checkpoint()

    # ------------------------------------------------------------- knowledge graph
    def graph_replace(self, prefix: str, changes: Sequence[MemoryTriples]) -> None:
        """Make each memory of `changes` support exactly its triples, in one transaction."""
        by_ns: dict[Namespace, list[MemoryTriples]] = {}
        for m in changes:
            by_ns.setdefault(tuple(m.namespace), []).append(m)
        with self._db.transaction():
            for ns, group in by_ns.items():
                self._graph.apply(prefix, namespace_id(ns), group)

    def graph_repoint(
        self, prefix: str, namespace: Namespace, sources: Sequence[str], target: str
    ) -> None:
        """Move the support of the memories `sources` to `target`, in one transaction."""
        with self._db.transaction():
            self._graph.repoint(prefix, namespace_id(namespace), sources, target)

    def graph_erase(
        self,
        prefix: str,
        owns: Callable[[Namespace], bool],
        *,
        user_id: str | None,
        mentions: Sequence[str],
        shared: Callable[[Namespace], bool] | None,
        dry_run: bool,
    ) -> Any:
        """Erase a user's graph rows in one transaction (`sqlite_graph_erase`).

        Then the WAL is checkpointed: its old page images held the rows.
        """
        from langgraph_tiered_memory.store.tiers.sqlite_graph_erase import erase_graph_rows

        with self._db.locked() if dry_run else self._db.transaction() as c:
            found = erase_graph_rows(
                c,
                prefix,
                owns,
                user_id=user_id,
                mentions=mentions,
                shared=shared,
                dry_run=dry_run,
            )
        if not dry_run and found.total:
            self._db.checkpoint()
        return found

    def graph_memory_triples(
        self, prefix: str, namespace: Namespace, keys: Sequence[str]
    ) -> dict[str, tuple[Triple, ...]]:
        """The triples each of `keys` supports (keys supporting none are absent)."""
        with self._db.locked():
            return self._graph.memory_triples(prefix, namespace_id(namespace), keys)

    def graph_triples(
        self,
        prefix: str,
        under: Namespace,
        *,
        subject: str | None = None,
        relation: str | None = None,
        object_: str | None = None,
        limit: int = 100,
    ) -> list[TripleRecord]:
        """Triples of the namespaces under `under` matching the given normalised parts."""
        with self._db.locked():
            return self._graph.triples(prefix, under, subject, relation, object_, limit)

    def graph_neighbors(
        self,
        prefix: str,
        under: Namespace,
        entity: str,
        *,
        hops: int = 1,
        relation: str | None = None,
        limit: int = 50,
    ) -> list[Neighbor]:
        """Entities within `hops` of the normalised `entity`, per scope, nearest first."""
        with self._db.locked():
            return self._graph.neighbors(prefix, under, entity, hops, relation, limit)

    def graph_memories(
        self,
        prefix: str,
        under: Namespace,
        entities: Sequence[str],
        *,
        hops: int = 1,
        limit: int = 200,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[GraphHit]:
        """Memories supporting triples that touch the normalised `entities` (or one hop on).

        `namespace_filter` runs after the lock is released (it may call back into the
        store).
        """
        with self._db.locked():
            hits = self._graph.memories(
                prefix, under, entities, hops, limit if namespace_filter is None else None
            )
        if namespace_filter is None:
            return hits
        allowed: dict[Namespace, bool] = {}
        out = []
        for hit in hits:
            ok = allowed.get(hit.namespace)
            if ok is None:
                ok = allowed[hit.namespace] = bool(namespace_filter(hit.namespace))
            if ok:
                out.append(hit)
                if len(out) >= limit:
                    break
        return out
