"""Keyword index: one FTS5 table per namespace over each memory's three texts.

The columns are the memory's own text, the text of the memory written before it (its
contextual key) and its event time in words. A row's rowid is the memory's `rid` in the
statistics table, whose write order (`seq`) tells which memory came before which: when
a memory is deleted, its successor's context column is rewritten from its new
predecessor, so the deleted text leaves the index.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import Stemmer

from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, ident, marks
from langgraph_tiered_memory.store.tiers.sqlite_stats import MemoryRow, MemoryTable

__all__ = [
    "FTS_TOKENIZE",
    "FTS_WEIGHTS",
    "KeywordIndex",
    "case_safe",
    "fts_table",
    "legacy_fts_table",
]

FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
"""FTS5 tokenizer of the keyword index: Unicode words, folded, Porter-stemmed."""

FTS_WEIGHTS = (1.0, 0.5, 1.0)
"""BM25 weights of the keyword index's columns: the memory's own text, the text of the
memory before it, its time in words."""

_STEMMER = Stemmer.Stemmer("porter")  # the algorithm of FTS5's porter tokenizer

_PRUNE_FROM = 1000

_UPPER = re.compile("[A-Z]")


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


def legacy_fts_table(prefix: str, nsid: str) -> str:
    """The name `fts_table` gave before it became case-safe (case-insensitive in SQLite)."""
    return f"fts_{prefix}_{nsid}"


class KeywordIndex:
    """The FTS5 tables of every namespace. Methods run with the file's lock held.

    Args:
        db: The shared file.
        memories: The statistics table whose rows the index entries belong to.
        naming: Table name of (prefix, namespace id).
    """

    def __init__(
        self,
        db: SqliteFile,
        memories: MemoryTable,
        naming: Callable[[str, str], str] = fts_table,
    ) -> None:
        self._c = db.conn
        self._mem = memories
        self._naming = naming
        self._known: set[str] = set()
        db.on_rollback(self._known.clear)  # tables made in a rolled-back transaction are gone

    def _table(self, prefix: str, nsid: str, *, create: bool) -> str | None:
        name = self._naming(prefix, nsid)
        if name in self._known:
            return name
        row = self._c.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        if row is None:
            if not create:
                return None
            self._c.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {ident(name)} USING fts5(text, context, time,"
                f" tokenize='{FTS_TOKENIZE}')"
            )
        self._known.add(name)
        return name

    # ------------------------------------------------------------------ writes
    def write(
        self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow], deletes: Sequence[str]
    ) -> None:
        """Upsert memories (statistics rows and entries), drop `deletes` not among them."""
        fts = self._table(prefix, nsid, create=bool(rows))
        gone = self._mem.remove(prefix, nsid, [k for k in deletes if k not in rows])
        if fts is not None and gone:
            self._c.executemany(
                f"DELETE FROM {ident(fts)} WHERE rowid=?", [(rid,) for rid, _ in gone]
            )
            self._rekey_successors(prefix, nsid, fts, [seq for _, seq in gone])
        if not rows:
            return
        assert fts is not None  # created above, as there are rows
        rids = self._mem.upsert(prefix, nsid, rows)
        self._c.executemany(
            f"DELETE FROM {ident(fts)} WHERE rowid=?", [(rids[key],) for key in rows]
        )
        self._c.executemany(
            f"INSERT INTO {ident(fts)} (rowid, text, context, time) VALUES (?, ?, ?, ?)",
            [(rids[key], row.text, row.context, row.time_text) for key, row in rows.items()],
        )

    def _rekey_successors(self, prefix: str, nsid: str, fts: str, seqs: list[int]) -> None:
        """Give each deleted memory's successor the context of its new predecessor."""
        successors = set()
        for seq in seqs:
            nxt = self._next_after(prefix, nsid, fts, seq)
            if nxt is not None and nxt[3]:  # only a memory written with a context key
                successors.add((nxt[0], nxt[1]))
        for rid, seq in successors:
            before = self._text_before(prefix, nsid, fts, seq)
            self._c.execute(f"UPDATE {ident(fts)} SET context=? WHERE rowid=?", (before or "", rid))

    def move_legacy(self, prefix: str) -> None:
        """Move the entries of `prefix` out of tables named by `legacy_fts_table`.

        Those tables are shared by every prefix spelled the same but for case; only the
        rows whose rowid is one of `prefix`'s memories move. Runs inside the caller's
        (immediate) transaction.
        """
        for nsid in self._mem.nsids(prefix):
            legacy = self._c.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name=? COLLATE NOCASE",
                (legacy_fts_table(prefix, nsid),),
            ).fetchone()
            if legacy is None:
                continue
            old = ident(legacy[0])
            new = ident(str(self._table(prefix, nsid, create=True)))
            owned = "SELECT rid FROM mem WHERE prefix=? AND nsid=?"
            self._c.execute(
                f"INSERT INTO {new} (rowid, text, context, time)"
                f" SELECT rowid, text, context, time FROM {old} WHERE rowid IN ({owned})"
                f" AND rowid NOT IN (SELECT rowid FROM {new})",
                (prefix, nsid),
            )
            self._c.execute(f"DELETE FROM {old} WHERE rowid IN ({owned})", (prefix, nsid))

    # ------------------------------------------------------------------ reads
    def search(
        self, prefix: str, nsid: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 search of one namespace for any of `terms` (see `DocMirror.keyword_search`)."""
        if limit <= 0 or not terms:
            return []
        stems = _STEMMER.stemWords(list(terms))
        fts = self._table(prefix, nsid, create=False)
        if fts is None:
            return []
        vocab = f"{fts}_vocab"
        if vocab not in self._known:
            self._c.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {ident(vocab)}"
                f" USING fts5vocab({ident(fts)}, row)"
            )
            self._known.add(vocab)
        df = dict(
            self._c.execute(
                f"SELECT term, doc FROM {ident(vocab)} WHERE term IN ({marks(len(stems))})", stems
            ).fetchall()
        )
        total = self._mem.last_seq(prefix, nsid)
        keep = [
            t
            for t, st in zip(terms, stems, strict=True)
            if st in df and (total is None or total < _PRUNE_FROM or df[st] * 2 < total)
        ]
        if not keep:
            return []
        match = " OR ".join(f'"{t}"' for t in dict.fromkeys(keep))
        weights = ", ".join(map(str, FTS_WEIGHTS))
        table = ident(fts)
        rows = self._c.execute(
            f"SELECT m.key, -f.score FROM (SELECT rowid, bm25({table}, {weights}) AS score"
            f" FROM {table} WHERE {table} MATCH ? ORDER BY score LIMIT ?) AS f"
            " JOIN mem AS m ON m.rid = f.rowid WHERE m.prefix=? AND m.nsid=?"
            " ORDER BY f.score",
            (match, limit, prefix, nsid),
        ).fetchall()
        return [(k, float(sc)) for k, sc in rows]

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """Memories right after `keys` that carry a context key, less `keys` and `skip`."""
        fts = self._table(prefix, nsid, create=False)
        if fts is None:
            return []
        gone = {*keys, *skip}
        out: dict[str, None] = {}
        for seq in self._mem.seqs(prefix, nsid, keys):
            nxt = self._next_after(prefix, nsid, fts, seq)
            if nxt is not None and nxt[2] not in gone and nxt[3]:
                out[nxt[2]] = None
        return list(out)

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` (or the last one, when new)."""
        fts = self._table(prefix, nsid, create=False)
        if fts is None:
            return None
        seqs = self._mem.seqs(prefix, nsid, [key])
        return self._text_before(prefix, nsid, fts, seqs[0] if seqs else 1 << 62)

    def _next_after(
        self, prefix: str, nsid: str, fts: str, seq: int
    ) -> tuple[int, int, str, str] | None:
        """(rid, seq, key, context) of the memory written right after `seq`."""
        row = self._c.execute(
            f"SELECT m.rid, m.seq, m.key, f.context FROM mem AS m JOIN {ident(fts)} AS f"
            " ON f.rowid = m.rid WHERE m.prefix=? AND m.nsid=? AND m.seq > ?"
            " ORDER BY m.seq LIMIT 1",
            (prefix, nsid, seq),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def _text_before(self, prefix: str, nsid: str, fts: str, seq: int) -> str | None:
        """Own text of the memory written right before `seq`."""
        row = self._c.execute(
            f"SELECT f.text FROM mem AS m JOIN {ident(fts)} AS f ON f.rowid = m.rid"
            " WHERE m.prefix=? AND m.nsid=? AND m.seq < ? ORDER BY m.seq DESC LIMIT 1",
            (prefix, nsid, seq),
        ).fetchone()
        return None if row is None else str(row[0])
