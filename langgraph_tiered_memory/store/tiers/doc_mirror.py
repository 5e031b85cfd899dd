"""A SQLite copy of the long-term tier's item documents, for fast `get`.

Chroma's lookup by id costs about a millisecond on a 100k-record collection; a SQLite
primary-key lookup costs a few microseconds. When the Chroma client is an embedded
`PersistentClient`, the long-term tier keeps a copy of each item's primary-record
metadata (document and expiry) in `tiered-memory-docs.sqlite3` beside the Chroma
database and answers `get` from it. Chroma stays the source of truth.

Writes follow a small intent log so the copy never disagrees with Chroma after a
crash: (1) the keys about to change are recorded in `pending` and committed, (2)
Chroma is written, (3) the copy is updated and the keys leave `pending` in one
transaction. Opening the mirror replays whatever is still pending by copying those
records from Chroma.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import Stemmer

from langgraph_tiered_memory.store._common import loads

__all__ = ["DocMirror", "MIRROR_FILE", "MemoryRow", "MemoryStats", "case_safe", "fts_table"]


class MemoryRow(NamedTuple):
    """What the memory index keeps of one memory besides its statistics."""

    text: str
    """Keyword-indexed text of the memory itself."""
    context: str
    """Text of the memory written just before it in the namespace (contextual key)."""
    time_text: str
    """Its event time in words, with relative dates resolved (time key)."""
    memory_type: str
    importance: float
    occurred_at: float | None
    created_at: float


class MemoryStats(NamedTuple):
    """Ranking fields and access statistics of one memory."""

    seq: int
    """Position of the memory in its namespace's write order (first write)."""
    memory_type: str
    importance: float
    occurred_at: float | None
    created_at: float
    access_count: int
    last_accessed: float | None


def case_safe(prefix: str) -> str:
    """`prefix` spelled so that names differing only by case stay different in SQLite.

    SQLite compares table names without regard to case, while key prefixes are
    case-sensitive. Each uppercase letter becomes `-` and its lowercase form (`-`
    never occurs in a key prefix), so all-lowercase prefixes keep their spelling.
    """
    return _UPPER.sub(lambda m: "-" + m[0].lower(), prefix)


def fts_table(prefix: str, nsid: str) -> str:
    """Name of the FTS5 table holding the keyword index of one namespace."""
    return f"fts_{case_safe(prefix)}_{nsid}"


def _legacy_fts_table(prefix: str, nsid: str) -> str:
    """The name `fts_table` gave before it became case-safe (case-insensitive in SQLite)."""
    return f"fts_{prefix}_{nsid}"


def _ident(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
"""FTS5 tokenizer of the keyword index: Unicode words, folded, Porter-stemmed."""

_STEMMER = Stemmer.Stemmer("porter")  # the algorithm of FTS5's porter tokenizer

_PRUNE_FROM = 1000

_UPPER = re.compile("[A-Z]")

FTS_WEIGHTS = (1.0, 0.5, 1.0)
"""BM25 weights of the keyword index's columns: the memory's own text, the text of the
memory before it, its time in words."""

MIRROR_FILE = "tiered-memory-docs.sqlite3"
"""File name of the mirror, inside the Chroma persist directory."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL, meta TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS filled (prefix TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mem (
    rid INTEGER PRIMARY KEY, prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    mtype TEXT NOT NULL, importance REAL NOT NULL, occurred REAL, created REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0, last_accessed REAL,
    UNIQUE (prefix, nsid, key)
);
CREATE INDEX IF NOT EXISTS mem_seq ON mem (prefix, nsid, seq);
CREATE INDEX IF NOT EXISTS mem_ns ON mem (prefix, nsid);
CREATE TABLE IF NOT EXISTS namespaces (
    prefix TEXT NOT NULL, ns TEXT NOT NULL, has_ttl INTEGER NOT NULL,
    PRIMARY KEY (prefix, ns)
) WITHOUT ROWID;
"""


class DocMirror:
    """Primary-record metadata of every long-term item, keyed by (prefix, namespace id, key)."""

    def __init__(self, location: str | Path) -> None:
        if str(location) == ":memory:":
            self.path: Path | None = None
        else:
            self.path = Path(location)
            if self.path.is_dir():
                self.path = self.path / MIRROR_FILE
        self._conn = sqlite3.connect(
            ":memory:" if self.path is None else self.path,
            check_same_thread=False,
            isolation_level=None,
            timeout=30.0,
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self._fts_known: set[str] = set()

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._conn.close()

    def get(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored metadata of the given keys that exist."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, meta FROM docs WHERE prefix=? AND nsid=? AND key IN ({marks})",
                    (prefix, nsid, *chunk),
                ).fetchall()
                out.update((k, loads(m)) for k, m in rows)
        return out

    def has_docs(self, prefix: str, nsid: str, *, live_at: float | None = None) -> bool:
        """Whether the namespace still holds any item (with `live_at`: a live one then)."""
        sql = "SELECT 1 FROM docs WHERE prefix=? AND nsid=?"
        args: tuple[Any, ...] = (prefix, nsid)
        if live_at is not None:
            sql += " AND coalesce(json_extract(meta, '$._e') > ?, 1)"
            args = (*args, live_at)
        with self._lock:
            row = self._conn.execute(sql + " LIMIT 1", args).fetchone()
        return row is not None

    def begin(self, prefix: str, nsid: str, keys: Iterable[str]) -> None:
        """Record (and commit) that these keys are about to change in Chroma."""
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "INSERT OR IGNORE INTO pending VALUES (?, ?, ?)",
                [(prefix, nsid, k) for k in keys],
            )
            self._conn.execute("COMMIT")

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
        """
        deletes = list(deletes)
        dropped = deletes + list(forget)
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                if docs:
                    self._conn.executemany(
                        "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)",
                        [(prefix, nsid, k, json.dumps(m)) for k, m in (upserts or {}).items()],
                    )
                if memories or dropped:
                    self._write_memories(prefix, nsid, memories or {}, dropped)
                self._conn.executemany(
                    "DELETE FROM docs WHERE prefix=? AND nsid=? AND key=?",
                    [(prefix, nsid, k) for k in deletes],
                )
                self._conn.executemany(
                    "UPDATE docs SET meta=json_set(meta, '$._e', ?) WHERE prefix=? AND nsid=?"
                    " AND key=?",
                    [(e, prefix, nsid, k) for k, e in (expiries or {}).items()],
                )
                self._conn.executemany(
                    "DELETE FROM pending WHERE prefix=? AND nsid=? AND key=?",
                    [(prefix, nsid, k) for k in done],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def recover(
        self,
        prefix: str,
        read: Callable[[str, list[str]], dict[str, dict[str, Any]]],
        describe: Callable[[dict[str, Any]], MemoryRow | None] | None = None,
        *,
        docs: bool = True,
    ) -> int:
        """Replay interrupted writes of `prefix` by copying their records from Chroma.

        Args:
            prefix: The store's key prefix.
            read: Returns Chroma's current primary metadata for (namespace id, keys).
            describe: Builds the memory row of a primary record (None: not kept).
            docs: Whether this file keeps the document copy.

        Returns:
            How many keys were repaired.
        """
        with self._lock:
            rows = self._conn.execute(
                "SELECT nsid, key FROM pending WHERE prefix=?", (prefix,)
            ).fetchall()
        by_ns: dict[str, list[str]] = {}
        for nsid, key in rows:
            by_ns.setdefault(nsid, []).append(key)
        for nsid, keys in by_ns.items():
            current = read(nsid, keys)
            mem_rows: dict[str, MemoryRow] = {}
            if describe is not None:
                for k, meta in current.items():
                    row = describe(meta)
                    if row is not None:
                        mem_rows[k] = row
            self.commit(
                prefix,
                nsid,
                upserts=current,
                deletes=[k for k in keys if k not in current],
                done=keys,
                memories=mem_rows,
                docs=docs,
            )
        return len(rows)

    def is_filled(self, prefix: str) -> bool:
        """Whether the mirror has been filled from Chroma for `prefix` (or `prefix` + "/mem")."""
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM filled WHERE prefix=?", (prefix,)).fetchone()
        return row is not None

    def mark_filled(self, prefix: str) -> None:
        """Record that `prefix` has been copied from Chroma."""
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO filled VALUES (?)", (prefix,))

    # ------------------------------------------------------------- namespace registry
    def register(self, prefix: str, ns: str, *, ttl: bool) -> None:
        """Record namespace `ns` (encoded); `ttl` marks that it has held TTL items."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO namespaces VALUES (?, ?, ?) ON CONFLICT (prefix, ns)"
                " DO UPDATE SET has_ttl = max(has_ttl, excluded.has_ttl)",
                (prefix, ns, int(ttl)),
            )

    def unregister(self, prefix: str, ns: str) -> None:
        """Forget namespace `ns` (encoded)."""
        with self._lock:
            self._conn.execute("DELETE FROM namespaces WHERE prefix=? AND ns=?", (prefix, ns))

    def registered(self, prefix: str, under: str) -> list[tuple[str, bool]]:
        """Encoded namespaces starting with the encoded prefix `under`, with their TTL flag."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT ns, has_ttl FROM namespaces WHERE prefix=? AND ns >= ? AND ns < ?",
                (prefix, under, under + "\U0010ffff"),
            ).fetchall()
        return [(ns, bool(t)) for ns, t in rows]

    def replace_namespaces(self, prefix: str, rows: Iterable[tuple[str, bool]]) -> None:
        """Make the registry of `prefix` equal to `rows` (used when opening the mirror)."""
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.execute("DELETE FROM namespaces WHERE prefix=?", (prefix,))
            self._conn.executemany(
                "INSERT INTO namespaces VALUES (?, ?, ?)", [(prefix, n, int(t)) for n, t in rows]
            )
            self._conn.execute("COMMIT")

    # ------------------------------------------------------------- memory index
    def _fts(self, prefix: str, nsid: str, *, create: bool) -> str | None:
        name = fts_table(prefix, nsid)
        if name in self._fts_known:
            return name
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        if row is None:
            if not create:
                return None
            self._conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_ident(name)} USING fts5(text, context, time,"
                f" tokenize='{FTS_TOKENIZE}')"
            )
        self._fts_known.add(name)
        return name

    def move_legacy_keyword_index(self, prefix: str) -> None:
        """Move the keyword entries of `prefix` out of tables named before names were case-safe.

        Until then a prefix with uppercase letters kept its keyword index in
        `fts_<prefix>_<namespace id>`, a table that SQLite also hands to every prefix
        spelled the same but for case. Its own rows (those whose rowid is one of its memory
        rows) move to the case-safe table; the rows of the other prefixes stay. Runs once
        per prefix and file; all-lowercase prefixes kept their table names.
        """
        if prefix == prefix.lower():
            return
        marker = f"{prefix}/fts-case-safe"
        if self.is_filled(marker):
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                nsids = self._conn.execute(
                    "SELECT DISTINCT nsid FROM mem WHERE prefix=?", (prefix,)
                ).fetchall()
                for (nsid,) in nsids:
                    legacy = self._conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table' AND name=?"
                        " COLLATE NOCASE",
                        (_legacy_fts_table(prefix, nsid),),
                    ).fetchone()
                    if legacy is None:
                        continue
                    old = _ident(legacy[0])
                    new = _ident(str(self._fts(prefix, nsid, create=True)))
                    owned = "SELECT rid FROM mem WHERE prefix=? AND nsid=?"
                    self._conn.execute(
                        f"INSERT INTO {new} (rowid, text, context, time)"
                        f" SELECT rowid, text, context, time FROM {old} WHERE rowid IN ({owned})"
                        f" AND rowid NOT IN (SELECT rowid FROM {new})",
                        (prefix, nsid),
                    )
                    self._conn.execute(
                        f"DELETE FROM {old} WHERE rowid IN ({owned})", (prefix, nsid)
                    )
                self._conn.execute("INSERT OR IGNORE INTO filled VALUES (?)", (marker,))
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._fts_known.clear()  # tables created in the transaction are gone
                raise
            self._conn.execute("COMMIT")

    def _write_memories(
        self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow], deletes: Sequence[str]
    ) -> None:
        """Upsert memory rows and their keyword entries; keep access statistics (locked)."""
        fts = self._fts(prefix, nsid, create=bool(rows))
        gone = [k for k in deletes if k not in rows]
        gone_seqs: list[int] = []
        for start in range(0, len(gone), 500):
            chunk = gone[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found = self._conn.execute(
                f"SELECT rid, seq FROM mem WHERE prefix=? AND nsid=? AND key IN ({marks})",
                (prefix, nsid, *chunk),
            ).fetchall()
            rids = [(r,) for r, _ in found]
            gone_seqs.extend(seq for _, seq in found)
            if fts is not None:
                self._conn.executemany(f"DELETE FROM {_ident(fts)} WHERE rowid=?", rids)
            self._conn.executemany("DELETE FROM mem WHERE rid=?", rids)
        if fts is not None and gone_seqs:
            self._rekey_successors(prefix, nsid, fts, gone_seqs)
        for key, row in rows.items():
            rid = self._conn.execute(
                "INSERT INTO mem (prefix, nsid, key, seq, mtype, importance, occurred, created)"
                " VALUES (?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM mem WHERE prefix=?"
                " AND nsid=?), ?, ?, ?, ?) ON CONFLICT (prefix, nsid, key) DO UPDATE SET"
                " mtype=excluded.mtype, importance=excluded.importance,"
                " occurred=excluded.occurred, created=excluded.created RETURNING rid",
                (
                    prefix,
                    nsid,
                    key,
                    prefix,
                    nsid,
                    row.memory_type,
                    row.importance,
                    row.occurred_at,
                    row.created_at,
                ),
            ).fetchone()[0]
            assert fts is not None  # created above, as there are rows
            self._conn.execute(f"DELETE FROM {_ident(fts)} WHERE rowid=?", (rid,))
            self._conn.execute(
                f"INSERT INTO {_ident(fts)} (rowid, text, context, time) VALUES (?, ?, ?, ?)",
                (rid, row.text, row.context, row.time_text),
            )

    def keyword_search(
        self, prefix: str, nsid: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 search of one namespace's keyword index for any of `terms`.

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
        if limit <= 0 or not terms:
            return []
        stems = _STEMMER.stemWords(list(terms))
        with self._lock:
            fts = self._fts(prefix, nsid, create=False)
            if fts is None:
                return []
            vocab = f"{fts}_vocab"
            if vocab not in self._fts_known:
                self._conn.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS {_ident(vocab)}"
                    f" USING fts5vocab({_ident(fts)}, row)"
                )
                self._fts_known.add(vocab)
            marks = ",".join("?" * len(stems))
            df = dict(
                self._conn.execute(
                    f"SELECT term, doc FROM {_ident(vocab)} WHERE term IN ({marks})", stems
                ).fetchall()
            )
            total = self._conn.execute(
                "SELECT max(seq) FROM mem WHERE prefix=? AND nsid=?", (prefix, nsid)
            ).fetchone()[0]
            keep = [
                t
                for t, st in zip(terms, stems, strict=True)
                if st in df and (total is None or total < _PRUNE_FROM or df[st] * 2 < total)
            ]
            if not keep:
                return []
            match = " OR ".join(f'"{t}"' for t in dict.fromkeys(keep))
            weights = ", ".join(map(str, FTS_WEIGHTS))
            table = _ident(fts)
            rows = self._conn.execute(
                f"SELECT m.key, -f.score FROM (SELECT rowid, bm25({table}, {weights}) AS score"
                f" FROM {table} WHERE {table} MATCH ? ORDER BY score LIMIT ?) AS f"
                " JOIN mem AS m ON m.rid = f.rowid WHERE m.prefix=? AND m.nsid=?"
                " ORDER BY f.score",
                (match, limit, prefix, nsid),
            ).fetchall()
        return [(k, float(sc)) for k, sc in rows]

    def memory_stats(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, MemoryStats]:
        """Ranking fields and access statistics of the given keys that are memories."""
        out: dict[str, MemoryStats] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for row in self._conn.execute(
                    "SELECT key, seq, mtype, importance, occurred, created, access_count,"
                    f" last_accessed FROM mem WHERE prefix=? AND nsid=? AND key IN ({marks})",
                    (prefix, nsid, *chunk),
                ):
                    out[row[0]] = MemoryStats(*row[1:])
        return out

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
        with self._lock:
            rows = self._conn.execute(
                "SELECT rid, key, seq, mtype, importance, occurred, created, access_count,"
                " last_accessed FROM mem WHERE prefix=? AND nsid=? AND rid > ?"
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
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "UPDATE mem SET access_count = access_count + 1, last_accessed ="
                    " max(coalesce(last_accessed, ?), ?) WHERE prefix=? AND nsid=? AND key=?",
                    [(now, now, prefix, nsid, key) for nsid, key in hits],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """The memories written right after `keys` that carry a context key made with one.

        When `keys` are deleted, these are the memories whose context key names a deleted
        memory. Memories in `keys` or `skip` (rewritten in the same batch) are left out.
        """
        gone = {*keys, *skip}
        out: dict[str, None] = {}
        with self._lock:
            fts = self._fts(prefix, nsid, create=False)
            if fts is None:
                return []
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                seqs = self._conn.execute(
                    f"SELECT seq FROM mem WHERE prefix=? AND nsid=? AND key IN ({marks})",
                    (prefix, nsid, *chunk),
                ).fetchall()
                for (seq,) in seqs:
                    nxt = self._next_after(prefix, nsid, fts, seq)
                    if nxt is not None and nxt[2] not in gone and nxt[3]:
                        out[nxt[2]] = None
        return list(out)

    def _next_after(
        self, prefix: str, nsid: str, fts: str, seq: int
    ) -> tuple[int, int, str, str] | None:
        """(rid, seq, key, context) of the memory written right after `seq` (locked)."""
        row = self._conn.execute(
            f"SELECT m.rid, m.seq, m.key, f.context FROM mem AS m JOIN {_ident(fts)} AS f"
            " ON f.rowid = m.rid WHERE m.prefix=? AND m.nsid=? AND m.seq > ?"
            " ORDER BY m.seq LIMIT 1",
            (prefix, nsid, seq),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def _text_before(self, prefix: str, nsid: str, fts: str, seq: int) -> str | None:
        """Own text of the memory written right before `seq` (locked)."""
        row = self._conn.execute(
            f"SELECT f.text FROM mem AS m JOIN {_ident(fts)} AS f ON f.rowid = m.rid"
            " WHERE m.prefix=? AND m.nsid=? AND m.seq < ? ORDER BY m.seq DESC LIMIT 1",
            (prefix, nsid, seq),
        ).fetchone()
        return None if row is None else str(row[0])

    def _rekey_successors(self, prefix: str, nsid: str, fts: str, seqs: list[int]) -> None:
        """Give each deleted memory's successor the context of its new predecessor.

        The successor's context column held the deleted memory's text; after this the
        text is gone from the keyword index (called with the lock held).
        """
        successors = set()
        for seq in seqs:
            nxt = self._next_after(prefix, nsid, fts, seq)
            if nxt is not None and nxt[3]:  # only a memory written with a context key
                successors.add((nxt[0], nxt[1]))
        for rid, seq in successors:
            before = self._text_before(prefix, nsid, fts, seq)
            self._conn.execute(
                f"UPDATE {_ident(fts)} SET context=? WHERE rowid=?", (before or "", rid)
            )

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` in its namespace.

        For a key not stored yet, that is the namespace's last memory. None when
        there is no earlier memory.
        """
        with self._lock:
            fts = self._fts(prefix, nsid, create=False)
            if fts is None:
                return None
            row = self._conn.execute(
                "SELECT seq FROM mem WHERE prefix=? AND nsid=? AND key=?", (prefix, nsid, key)
            ).fetchone()
            return self._text_before(prefix, nsid, fts, row[0] if row else 1 << 62)
