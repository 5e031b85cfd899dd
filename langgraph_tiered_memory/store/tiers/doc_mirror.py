"""The SQLite file beside an embedded Chroma: every role of it, in one class.

The file is `MIRROR_FILE` in the Chroma directory, or `":memory:"` with an in-memory
Chroma; Chroma stays the source of truth. Tables, keyed by the store's key prefix and
the namespace id:

- `docs`, the document copy: each item's primary-record metadata (`_d`: the document,
  `_e`: the expiry), answering `get` in microseconds where Chroma takes a millisecond;
- `pending`, the intent log: keys whose Chroma records are changing;
- `reg`, the namespace registry, holding what a Chroma server's Redis registry holds:
  encoded namespace `ns`, bucket `b` (NULL: own collection), bucket `m` an unfinished
  move left records in, `ttl`, embedding size `d` in a bucket; read and written as dicts
  with those keys (a NULL column is no key). `reg_layout`: each prefix's bucket count;
  `filled`: one-off jobs done;
- `mem`, the memory statistics: ranking fields, access counts and `seq`, the memory's
  position in its namespace's write order (kept when it is rewritten);
- `kw`, `kw_t`, `kw_ns`, the keyword index (below);
- the knowledge graph (`sqlite_graph`) and the memory history (`sqlite_history`).

A write (1) records the keys about to change (and the triples it gives them) and commits
(`begin`), (2) writes Chroma, (3) updates the copy, the statistics, the keyword index,
the graph and the history and clears the keys in one transaction (`commit`). Opening the
tier replays what is still pending by copying those records from Chroma (`recover`).

The keyword index is one FTS5 table, `kw`, for every namespace: each memory's own text,
the text of the memory written before it (its contextual key) and its event time in
words; `kw_t` holds the terms FTS5 makes of them (`toks`: each term padded with spaces,
columns parted by `|`) and their number (`n`). Each namespace has a number in `kw_ns`,
beside its row and token counts; its entries have rowids `num << 32 | seq`, so a
namespace is one rowid range, in write order. When a memory is deleted, its successor's
context column is rewritten from its new predecessor, so the deleted text leaves the
index. BM25 must use the statistics of the namespace alone while FTS5's `bm25()` uses
those of the whole table, so FTS5 only finds the matches within the namespace's range
and counts its rows holding each term; `ranking.bm25.rank` scores them from their stored
terms, exactly as FTS5 ranks a table holding the namespace alone. Files written before
kept small namespaces' entries in `kw_docs` and an FTS5 table per large namespace
(`kw_own`, `kw_retired`; older ones a table per namespace): opening such a file copies
their entries into `kw` and drops them, in one transaction (`_convert`).

A legacy file of a server's memory index (`memory_index_path`, read by `index_import`)
has no document copy.
"""

from __future__ import annotations

import json
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
from langgraph_tiered_memory.ranking.bm25 import ceiling, kept_terms, query_stems, rank
from langgraph_tiered_memory.ranking.terms import FTS_TOKENIZE, fts_terms_many
from langgraph_tiered_memory.store.tiers._items import loads
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.sqlite_db import (
    MIRROR_FILE,
    SqliteFile,
    ident,
    marks,
    select_keys,
)
from langgraph_tiered_memory.store.tiers.sqlite_graph import GraphTables, PendingGraph
from langgraph_tiered_memory.store.tiers.sqlite_history import (
    HistoryRow,
    HistoryTable,
    RecoveredHistory,
)
from langgraph_tiered_memory.store.tiers.sqlite_stats import ContextInputs, MemoryRow, MemoryStats

__all__ = ["DocMirror", "MIRROR_FILE", "MemoryRow", "MemoryStats", "PendingGraph"]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.doc_mirror")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS docs (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL, meta TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS filled (prefix TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reg (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, ns TEXT NOT NULL, b INTEGER, m INTEGER,
    ttl INTEGER NOT NULL, d INTEGER, PRIMARY KEY (prefix, nsid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reg_layout (prefix TEXT PRIMARY KEY, buckets INTEGER NOT NULL)
    WITHOUT ROWID;
DROP TABLE IF EXISTS namespaces;
CREATE TABLE IF NOT EXISTS mem (
    rid INTEGER PRIMARY KEY, prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    mtype TEXT NOT NULL, importance REAL NOT NULL, occurred REAL, created REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0, last_accessed REAL,
    UNIQUE (prefix, nsid, key)
);
CREATE INDEX IF NOT EXISTS mem_seq ON mem (prefix, nsid, seq);
CREATE INDEX IF NOT EXISTS mem_ns ON mem (prefix, nsid);
CREATE TABLE IF NOT EXISTS kw_ns (
    num INTEGER PRIMARY KEY, prefix TEXT NOT NULL, nsid TEXT NOT NULL,
    rows INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0,
    UNIQUE (prefix, nsid)
);
CREATE VIRTUAL TABLE IF NOT EXISTS kw USING fts5(text, context, time, tokenize='{FTS_TOKENIZE}');
CREATE TABLE IF NOT EXISTS kw_t (rowid INTEGER PRIMARY KEY, toks TEXT NOT NULL, n INTEGER NOT NULL);
"""
# `namespaces` was a copy of the registry collection, made again at every open.

_REG = ("ns", "b", "m", "ttl", "d")
_SELECT_REG = "SELECT nsid, ns, b, m, ttl, d FROM reg WHERE prefix=?"
_STATS = "seq, mtype, importance, occurred, created, access_count, last_accessed"

_SPAN = 1 << 32
"""Rowids of one namespace's keyword entries: `num * _SPAN + seq`."""
_SEP = "|"  # between the columns' terms in `toks`: a separator, so never inside a term
_NONE = (0, 0, 0)  # a phrase's counts in the three columns of a row not holding it
_OLD = (
    "SELECT name, sql FROM sqlite_master WHERE type='table' AND (name IN ('kw_docs',"
    " 'kw_own', 'kw_retired') OR (name LIKE 'fts\\_%' ESCAPE '\\' AND sql LIKE 'CREATE"
    " VIRTUAL TABLE%'))"
)
"""Keyword tables of the earlier layouts (FTS5 ones, not their shadow tables)."""


def _entry(row: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    nsid, *values = row
    meta = {k: v for k, v in zip(_REG, values, strict=True) if v is not None}
    meta["ttl"] = bool(meta["ttl"])
    return str(nsid), meta


class DocMirror(SqliteFile):
    """Every role of the SQLite file, keyed by (prefix, namespace id, key).

    Private methods run with the lock held by their caller.

    Args:
        location: The Chroma persist directory (the file is `MIRROR_FILE` in it), a
            file path, or `":memory:"`.
    """

    def __init__(self, location: str | Path) -> None:
        super().__init__(location)
        self.create(_SCHEMA)
        if self.conn.execute(_OLD).fetchone() is not None:
            with self.transaction(immediate=True):
                self._convert()
        self._graph = GraphTables(self)
        self.history = HistoryTable(self)
        """Memory history (`m_history`), appended to by `commit`."""

    # ------------------------------------------------------------- document copy
    def get(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored metadata of the given keys that exist."""
        with self.locked() as c:
            rows = select_keys(c, "SELECT key, meta FROM docs", prefix, nsid, keys)
        return {k: loads(m) for k, m in rows}

    def has_docs(self, prefix: str, nsid: str, *, live_at: float | None = None) -> bool:
        """Whether the namespace still holds any item (with `live_at`: a live one then)."""
        sql = "SELECT 1 FROM docs WHERE prefix=? AND nsid=?"
        args: tuple[Any, ...] = (prefix, nsid)
        if live_at is not None:
            sql += " AND coalesce(json_extract(meta, '$._e') > ?, 1)"
            args = (*args, live_at)
        with self.locked() as c:
            return c.execute(sql + " LIMIT 1", args).fetchone() is not None

    # ------------------------------------------------------------- writes
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
        with self.transaction() as c:
            rows = [(prefix, nsid, k) for k in keys]
            c.executemany("INSERT OR IGNORE INTO pending VALUES (?, ?, ?)", rows)
            if graph:
                self._graph.record(prefix, nsid, graph)
            if entry is not None:
                self._register(prefix, {nsid: entry})

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
        with self.transaction() as c:
            if docs:
                c.executemany(
                    "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)",
                    [(prefix, nsid, k, json.dumps(m)) for k, m in (upserts or {}).items()],
                )
            if memories or dropped:
                self._write_memories(prefix, nsid, memories or {}, dropped)
            if changes or dropped:
                drops = [k for k in forget if k not in given] if given else forget
                self._graph.apply(prefix, nsid, changes, deletes + drops)
            where = "WHERE prefix=? AND nsid=? AND key=?"
            c.executemany(f"DELETE FROM docs {where}", [(prefix, nsid, k) for k in deletes])
            c.executemany(
                f"UPDATE docs SET meta=json_set(meta, '$._e', ?) {where}",
                [(e, prefix, nsid, k) for k, e in (expiries or {}).items()],
            )
            c.executemany(f"DELETE FROM pending {where}", [(prefix, nsid, k) for k in done])
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
        pending: dict[str, list[str]] = {}
        with self.locked() as c:
            for nsid, key in c.execute(
                "SELECT nsid, key FROM pending WHERE prefix=?", (prefix,)
            ).fetchall():
                pending.setdefault(nsid, []).append(key)
        for nsid, keys in pending.items():
            current = read(nsid, keys)
            rows = {} if describe is None else {k: describe(m) for k, m in current.items()}
            with self.locked():
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
                events = history(nsid, keys, current, self.get(prefix, nsid, keys) if docs else {})
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
                with self.locked():
                    self._unregister(prefix, nsid, unless_held=True)
        return sum(map(len, pending.values()))

    # ------------------------------------------------------------- namespace registry
    def is_filled(self, prefix: str) -> bool:
        """Whether the one-off job named `prefix` (a prefix, or prefix + "/mem") is done."""
        with self.locked() as c:
            return (
                c.execute("SELECT 1 FROM filled WHERE prefix=?", (prefix,)).fetchone() is not None
            )

    def mark_filled(self, prefix: str) -> None:
        """Record that the one-off job named `prefix` is done."""
        with self.locked() as c:
            c.execute("INSERT OR IGNORE INTO filled VALUES (?)", (prefix,))

    def registered(self, prefix: str, under: str) -> list[tuple[str, bool]]:
        """Encoded namespaces starting with the encoded prefix `under`, with their TTL flag."""
        return [(m["ns"], m["ttl"]) for _, m in self.registry(prefix, under=under)]

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
        with self.locked() as c:
            if nsids is None:
                where = " AND m IS NOT NULL" if moving else ""
                sql = f"{_SELECT_REG} AND ns >= ? AND ns < ?{where} ORDER BY ns"
                rows = c.execute(sql, (prefix, under, under + "\U0010ffff")).fetchall()
            else:
                rows = []
                for at in range(0, len(nsids), 500):
                    chunk = list(nsids[at : at + 500])
                    sql = f"{_SELECT_REG} AND nsid IN ({marks(len(chunk))})"
                    rows += c.execute(sql, (prefix, *chunk)).fetchall()
        return list(map(_entry, rows))

    def registry_put(self, prefix: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Write whole registry entries (namespace id -> entry)."""
        with self.locked():
            self._register(prefix, entries)

    def registry_drop(self, prefix: str, nsid: str) -> None:
        """Remove a namespace's registry entry."""
        with self.locked():
            self._unregister(prefix, nsid)

    def registry_buckets(self, prefix: str) -> int | None:
        """The prefix's bucket count (None: its registry is not set up yet)."""
        with self.locked() as c:
            row = c.execute("SELECT buckets FROM reg_layout WHERE prefix=?", (prefix,)).fetchone()
        return None if row is None else int(row[0])

    def set_up_registry(
        self, prefix: str, buckets: int, entries: Iterable[tuple[str, Mapping[str, Any]]] = ()
    ) -> None:
        """Record the prefix's bucket count and first entries, in one transaction."""
        with self.transaction() as c:
            self._register(prefix, dict(entries))
            c.execute("INSERT OR REPLACE INTO reg_layout VALUES (?, ?)", (prefix, buckets))

    def _register(self, prefix: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO reg VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (prefix, nsid, m["ns"], m.get("b"), m.get("m"), int(bool(m.get("ttl"))), m.get("d"))
                for nsid, m in entries.items()
            ],
        )

    def _unregister(self, prefix: str, nsid: str, *, unless_held: bool = False) -> None:
        """Remove a namespace's entry (`unless_held`: only when the copy holds no item of it)."""
        held = " AND NOT EXISTS (SELECT 1 FROM docs WHERE prefix=?1 AND nsid=?2)"
        self.conn.execute(
            "DELETE FROM reg WHERE prefix=?1 AND nsid=?2" + (held if unless_held else ""),
            (prefix, nsid),
        )

    # ------------------------------------------------------------- memory statistics
    def memory_stats(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, MemoryStats]:
        """Ranking fields and access statistics of the given keys that are memories."""
        with self.locked() as c:
            rows = select_keys(c, f"SELECT key, {_STATS} FROM mem", prefix, nsid, keys)
        return {row[0]: MemoryStats(*row[1:]) for row in rows}

    def memory_page(
        self, prefix: str, nsid: str, after: int, limit: int
    ) -> list[tuple[int, str, MemoryStats]]:
        """One page of a namespace's memories in write order: (rid, key, stats).

        `after`: return rows with rid above this (0 for the first page).
        """
        with self.locked() as c:
            rows = c.execute(
                f"SELECT rid, key, {_STATS} FROM mem WHERE prefix=? AND nsid=? AND rid > ?"
                " ORDER BY rid LIMIT ?",
                (prefix, nsid, after, limit),
            ).fetchall()
        return [(r[0], r[1], MemoryStats(*r[2:])) for r in rows]

    def touch(self, prefix: str, hits: Sequence[tuple[str, str]], now: float) -> None:
        """Count one access of each (namespace id, key) at time `now`, atomically.

        The increment happens inside SQLite (`access_count = access_count + 1`), so
        concurrent searches, in this process or another one, never lose an increment.
        """
        if not hits:
            return
        with self.transaction(immediate=True) as c:
            c.executemany(
                "UPDATE mem SET access_count = access_count + 1, last_accessed ="
                " max(coalesce(last_accessed, ?), ?) WHERE prefix=? AND nsid=? AND key=?",
                [(now, now, prefix, nsid, key) for nsid, key in hits],
            )

    def _seqs(self, prefix: str, nsid: str, keys: Sequence[str]) -> list[int]:
        """Write positions of the given keys that are memories."""
        return [s for (s,) in select_keys(self.conn, "SELECT seq FROM mem", prefix, nsid, keys)]

    def _keys_at(self, prefix: str, nsid: str, seqs: Sequence[int]) -> dict[int, str]:
        """Keys of the memories at the given write positions."""
        found = self.conn.execute(
            f"SELECT seq, key FROM mem WHERE prefix=? AND nsid=? AND seq IN ({marks(len(seqs))})",
            (prefix, nsid, *seqs),
        )
        return {int(seq): str(key) for seq, key in found}

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
        with self.locked() as c:
            found = self._ns(prefix, nsid)
            if limit <= 0 or not terms or found is None or not found[1]:
                return []
            base, n_rows, n_tokens = found
            span = (base, base + _SPAN - 1)
            terms = list(dict.fromkeys(terms))
            firsts = fts_terms_many(terms)
            df: dict[str, int] = {}  # rows of the namespace holding each term
            count = "SELECT count(*) FROM kw WHERE kw MATCH ? AND rowid BETWEEN ? AND ?"
            for term, first in zip(terms, firsts, strict=True):
                if first and first[0] not in df:
                    df[first[0]] = c.execute(count, (f'"{term}"', *span)).fetchone()[0]
            for stem in query_stems(terms):  # `kept_terms` looks counts up by these
                if stem and stem not in df:  # one FTS5 would stem otherwise (rare): scan
                    df[stem] = c.execute(
                        "SELECT count(*) FROM kw_t WHERE rowid BETWEEN ? AND ? AND instr(toks, ?)",
                        (*span, f" {stem} "),
                    ).fetchone()[0]
            size = c.execute(  # the highest write position, an upper bound of its size
                "SELECT max(seq) FROM mem WHERE prefix=? AND nsid=?", (prefix, nsid)
            ).fetchone()[0]
            keep = set(kept_terms(terms, df, None if size is None else int(size)))
            kept = [(t, f[0]) for t, f in zip(terms, firsts, strict=True) if t in keep and f]
            if not kept:
                return []
            phrases = [p for _, p in kept]
            padded = [f" {p} " for p in phrases]
            # Rarest phrases first; the rows not fetched yet hold only the phrases left,
            # so once those cannot lift a row to the limit-th score, the ranking is final.
            kept.sort(key=lambda tp: df[tp[1]])
            ceilings = [ceiling(n_rows, df[p]) for _, p in kept]
            rows: dict[int, tuple[str, int, int, list[int]]] = {}
            for i, (term, _) in enumerate(kept):
                if len(rows) >= limit:
                    top = rank(rows.values(), phrases, n_rows, n_tokens, df, limit)
                    if top[-1][1] >= sum(ceilings[i:]):
                        break
                for rowid, toks, n in c.execute(
                    "SELECT t.rowid, t.toks, t.n FROM kw JOIN kw_t AS t ON t.rowid = kw.rowid"
                    " WHERE kw MATCH ? AND kw.rowid BETWEEN ? AND ?",
                    (f'"{term}"', *span),
                ):
                    if rowid not in rows:
                        columns = toks.split(_SEP)
                        counts = [  # as `phrase_counts`
                            k
                            for p in padded
                            for k in ([col.count(p) for col in columns] if p in toks else _NONE)
                        ]
                        rows[rowid] = (str(rowid), rowid, n, counts)
            top = rank(rows.values(), phrases, n_rows, n_tokens, df, limit)
            keys = self._keys_at(prefix, nsid, [int(r) - base for r, _ in top])
        return [(keys[int(r) - base], score) for r, score in top if int(r) - base in keys]

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """The memories written right after `keys` that carry a context key made with one.

        When `keys` are deleted, these are the memories whose context key names a deleted
        memory. Memories in `keys` or `skip` (rewritten in the same batch) are left out.
        """
        with self.locked():
            found = self._ns(prefix, nsid)
            if found is None:
                return []
            base = found[0]
            nxt = [self._next_after(base, seq) for seq in self._seqs(prefix, nsid, keys)]
            seqs = [n[0] - base for n in nxt if n is not None and n[2]]
            by_seq = self._keys_at(prefix, nsid, seqs)
        gone = {*keys, *skip}
        return list(dict.fromkeys(by_seq[s] for s in seqs if s in by_seq and by_seq[s] not in gone))

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` in its namespace.

        For a key not stored yet, that is the namespace's last memory. None when
        there is no earlier memory.
        """
        with self.locked():
            return self._previous(prefix, nsid, key)

    def context_inputs(self, prefix: str, nsid: str, keys: Sequence[str]) -> ContextInputs:
        """Which of `keys` are memories, and the text before each (one read for a batch)."""
        with self.locked() as c:
            memories = frozenset(
                k for (k,) in select_keys(c, "SELECT key FROM mem", prefix, nsid, keys)
            )
            previous = {k: self._previous(prefix, nsid, k) for k in keys}
        return ContextInputs(memories, previous)

    def _previous(self, prefix: str, nsid: str, key: str) -> str | None:
        found = self._ns(prefix, nsid)
        if found is None:
            return None
        seqs = self._seqs(prefix, nsid, [key])
        return self._text_before(found[0], seqs[0] if seqs else _SPAN)

    def _ns(self, prefix: str, nsid: str) -> tuple[int, int, int] | None:
        """(first rowid, rows, tokens) of a namespace that has had keyword entries."""
        row = self.conn.execute(
            "SELECT num, rows, tokens FROM kw_ns WHERE prefix=? AND nsid=?", (prefix, nsid)
        ).fetchone()
        return None if row is None else (int(row[0]) * _SPAN, int(row[1]), int(row[2]))

    def _base(self, prefix: str, nsid: str) -> int:
        """First rowid of the namespace (numbered now if it has none)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO kw_ns (prefix, nsid) VALUES (?, ?)", (prefix, nsid)
        )
        return self._ns(prefix, nsid)[0]  # type: ignore[index]

    def _next_after(self, base: int, seq: int) -> Any:
        """(rowid, text, context, time) of the entry written right after `seq`, or None."""
        return self.conn.execute(
            "SELECT rowid, text, context, time FROM kw WHERE rowid > ? AND rowid < ?"
            " ORDER BY rowid LIMIT 1",
            (base + seq, base + _SPAN),
        ).fetchone()

    def _text_before(self, base: int, seq: int) -> str | None:
        """Own text of the entry written right before `seq`."""
        row = self.conn.execute(
            "SELECT text FROM kw WHERE rowid >= ? AND rowid < ? ORDER BY rowid DESC LIMIT 1",
            (base, base + seq),
        ).fetchone()
        return None if row is None else str(row[0])

    def _write_memories(
        self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow], deletes: Sequence[str]
    ) -> None:
        """Upsert memories (statistics rows and entries), drop `deletes` not among them.

        A new memory takes the next write position, in the order of `rows`; a rewritten
        one keeps its position and access counts.
        """
        c = self.conn
        gone = select_keys(c, "SELECT rid, seq FROM mem", prefix, nsid,
                           [k for k in deletes if k not in rows])  # fmt: skip
        c.executemany("DELETE FROM mem WHERE rid=?", [(rid,) for rid, _ in gone])
        if gone:  # each successor written with a context gets its new predecessor's text
            base = self._base(prefix, nsid)
            self._drop([base + seq for _, seq in gone])
            nexts = {n[0]: n for n in (self._next_after(base, s) for _, s in gone) if n and n[2]}
            for rowid, text, _, time in nexts.values():
                self._put([(rowid, text, self._text_before(base, rowid - base) or "", time)])
        if rows:
            c.executemany(
                "INSERT INTO mem (prefix, nsid, key, seq, mtype, importance, occurred, created)"
                " VALUES (?1, ?2, ?3, (SELECT coalesce(max(seq), 0) + 1 FROM mem WHERE"
                " prefix=?1 AND nsid=?2), ?4, ?5, ?6, ?7) ON CONFLICT (prefix, nsid, key) DO"
                " UPDATE SET mtype=excluded.mtype, importance=excluded.importance,"
                " occurred=excluded.occurred, created=excluded.created",
                [(prefix, nsid, key, r.memory_type, r.importance, r.occurred_at, r.created_at)
                 for key, r in rows.items()],
            )  # fmt: skip
            seqs = dict(select_keys(c, "SELECT key, seq FROM mem", prefix, nsid, list(rows)))
            base = self._base(prefix, nsid)
            self._put([(base + seqs[k], r.text, r.context, r.time_text) for k, r in rows.items()])

    def _put(self, entries: Sequence[tuple[int, str, str, str]]) -> None:
        """Write (rowid, text, context, time) entries, replacing those with their rowids."""
        self._drop([e[0] for e in entries])
        terms = fts_terms_many([text for e in entries for text in e[1:]])
        rows = []
        for i, entry in enumerate(entries):
            cols = terms[3 * i : 3 * i + 3]
            toks = _SEP.join("".join(f" {t} " for t in c) for c in cols)
            rows.append((entry[0], toks, sum(map(len, cols))))
        self.conn.executemany("INSERT INTO kw (rowid, text, context, time) VALUES (?, ?, ?, ?)",
                              entries)  # fmt: skip
        self.conn.executemany("INSERT INTO kw_t (rowid, toks, n) VALUES (?, ?, ?)", rows)
        self._count([(r[0], 1, r[-1]) for r in rows])

    def _drop(self, rowids: Sequence[int]) -> None:
        if len(rowids) > 500:  # bound the `IN (...)` list
            self._drop(rowids[500:])
            rowids = rowids[:500]
        sizes = self.conn.execute(
            f"SELECT rowid, n FROM kw_t WHERE rowid IN ({marks(len(rowids))})", rowids
        ).fetchall()
        for table in ("kw", "kw_t"):
            self.conn.executemany(f"DELETE FROM {table} WHERE rowid=?", [(r,) for r, _ in sizes])
        self._count([(r, -1, -n) for r, n in sizes])

    def _count(self, changes: Iterable[tuple[int, int, int]]) -> None:
        """Add each (rowid, rows, tokens) to the counts of the entry's namespace."""
        self.conn.executemany("UPDATE kw_ns SET rows = rows + ?, tokens = tokens + ? WHERE num=?",
                              [(n, t, r // _SPAN) for r, n, t in changes])  # fmt: skip

    def _convert(self) -> None:
        """Copy the entries of the earlier layouts' tables into `kw`, then drop those tables.

        In the caller's transaction: a crash leaves the old tables whole, to convert at
        the next open. A memory's entry comes from its home (`kw_docs`, a table of
        `kw_own`), else from another FTS5 table holding its rowid (of a prefix 9e8229f
        did not move yet); retired tables are only dropped.
        """
        c = self.conn
        old = dict(c.execute(_OLD).fetchall())
        if not old:  # another process converted the file meanwhile
            return
        lower = {name.lower(): name for name in old}

        def listed(table: str) -> list[str]:
            names = c.execute(f"SELECT name FROM {table}") if table in old else []
            return [lower[str(n).lower()] for (n,) in names if str(n).lower() in lower]

        skip = set(listed("kw_retired"))
        fts = sorted(n for n, sql in old.items() if "fts5(" in sql.lower() and n not in skip)
        sources = (["kw_docs"] if "kw_docs" in old else []) + listed("kw_own") + fts
        done: set[int] = set()
        bases: dict[tuple[str, str], int] = {}
        for source in dict.fromkeys(sources):
            entries = []
            for rid, prefix, nsid, seq, *texts in c.execute(
                "SELECT m.rid, m.prefix, m.nsid, m.seq, s.text, s.context, s.time"
                f" FROM {ident(source)} AS s JOIN mem AS m ON m.rid = s.rowid"
            ).fetchall():
                if rid in done:
                    continue
                done.add(rid)
                if (prefix, nsid) not in bases:
                    bases[(prefix, nsid)] = self._base(prefix, nsid)
                entries.append((bases[(prefix, nsid)] + seq, *(t or "" for t in texts)))
            for at in range(0, len(entries), 500):
                self._put(entries[at : at + 500])
        for name in sorted(old, key=lambda n: "fts5vocab" not in old[n].lower()):
            c.execute(f"DROP TABLE IF EXISTS {ident(name)}")
        logger.info("keyword index converted to one table: %d entries of %d namespaces, %d old"
                    " tables dropped", len(done), len(bases), len(old))  # fmt: skip

    # ------------------------------------------------------------- erasure
    def namespace_keys(self, prefix: str, nsid: str) -> set[str]:
        """Keys the file holds anything of in a namespace (documents, memories, intents)."""
        with self.locked() as c:
            rows = c.execute(
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
        with self.transaction() as c:
            for table in ("docs", "pending"):
                c.execute(f"DELETE FROM {table} WHERE prefix=? AND nsid=?", (prefix, nsid))
            found = self._ns(prefix, nsid)
            if found is not None:
                base = found[0]
                for table in ("kw", "kw_t"):
                    c.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?",
                              (base, base + _SPAN - 1))  # fmt: skip
                c.execute("DELETE FROM kw_ns WHERE num=?", (base // _SPAN,))
            c.execute("DELETE FROM mem WHERE prefix=? AND nsid=?", (prefix, nsid))
            self._unregister(prefix, nsid)
        self.scrub()

    def scrub(self) -> None:
        """Leave no trace of deleted rows: FTS5 'optimize' of the keyword index, WAL truncated.

        Deleted FTS5 rows stay in the index segments until they merge; 'optimize'
        merges them (it rewrites the index of every namespace). The connection deletes
        with `secure_delete` (freed space is zeroed), and the checkpoint empties the WAL
        of the old page images.
        """
        with self.transaction() as c:
            c.execute("INSERT INTO kw (kw) VALUES ('optimize')")
        self.checkpoint()

    # ------------------------------------------------------------- knowledge graph
    def graph_replace(self, prefix: str, changes: Sequence[MemoryTriples]) -> None:
        """Make each memory of `changes` support exactly its triples, in one transaction."""
        by_ns: dict[Namespace, list[MemoryTriples]] = {}
        for m in changes:
            by_ns.setdefault(tuple(m.namespace), []).append(m)
        with self.transaction():
            for ns, group in by_ns.items():
                self._graph.apply(prefix, namespace_id(ns), group)

    def graph_repoint(
        self, prefix: str, namespace: Namespace, sources: Sequence[str], target: str
    ) -> None:
        """Move the support of the memories `sources` to `target`, in one transaction."""
        with self.transaction():
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

        with self.locked() if dry_run else self.transaction() as c:
            found = erase_graph_rows(
                c, prefix, owns, user_id=user_id, mentions=mentions, shared=shared, dry_run=dry_run
            )
        if not dry_run and found.total:
            self.checkpoint()
        return found

    def graph_memory_triples(
        self, prefix: str, namespace: Namespace, keys: Sequence[str]
    ) -> dict[str, tuple[Triple, ...]]:
        """The triples each of `keys` supports (keys supporting none are absent)."""
        with self.locked():
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
        with self.locked():
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
        with self.locked():
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
        with self.locked():
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
