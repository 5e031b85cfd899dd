"""Keyword index: BM25 over each memory's three texts, ranked within its namespace.

The columns are the memory's own text, the text of the memory written before it (its
contextual key) and its event time in words. An entry's rowid is the memory's `rid` in
the statistics table, whose write order (`seq`) tells which memory came before which:
when a memory is deleted, its successor's context column is rewritten from its new
predecessor, so the deleted text leaves the index.

Layout. BM25 must use the statistics of the memory's own namespace (row count, average
length, document frequency of each term), while FTS5's `bm25()` uses those of the whole
table it runs on. Hence two homes for a namespace's entries:

- up to `SHARED_MAX` memories: plain rows of `kw_docs`, one table shared by every prefix
  and namespace (the namespace comes from `mem`). A search copies the namespace's rows
  into a contentless FTS5 table in the connection's temp schema and ranks them there:
  the same statistics, hence the same scores, as a table of its own, for a few
  microseconds per row and no table per namespace on disk;
- past `SHARED_MAX`: an FTS5 table of its own (`fts_table`, listed in `kw_own`), made
  in the transaction that crosses the threshold. It stays its home.

So the number of tables grows with the number of large namespaces only. Files written
when every namespace had an FTS5 table of its own are converted by `migrate`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import Stemmer

from langgraph_tiered_memory.ranking_bm25 import FTS_WEIGHTS
from langgraph_tiered_memory.ranking_terms import FTS_TOKENIZE
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, ident, marks
from langgraph_tiered_memory.store.tiers.sqlite_stats import MemoryRow, MemoryTable

__all__ = [
    "FTS_TOKENIZE",
    "FTS_WEIGHTS",
    "SHARED_MAX",
    "KeywordIndex",
    "case_safe",
    "fts_table",
    "legacy_fts_table",
]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.sqlite_keywords")

"""FTS5 tokenizer of the keyword index: Unicode words, folded, Porter-stemmed."""

SHARED_MAX = 256
"""Most memories a namespace keeps in the shared `kw_docs` table; past it, the namespace
gets an FTS5 table of its own. A search of a shared namespace indexes its rows on the fly
(about 5 µs per row), so this bounds that cost."""

_STEMMER = Stemmer.Stemmer("porter")  # the algorithm of FTS5's porter tokenizer

_PRUNE_FROM = 1000

_UPPER = re.compile("[A-Z]")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kw_docs (rid INTEGER PRIMARY KEY, text, context, time);
CREATE TABLE IF NOT EXISTS kw_own (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kw_retired (name TEXT PRIMARY KEY COLLATE NOCASE) WITHOUT ROWID;
"""

_SHARED = "kw_docs"
_SCRATCH = "kw_scratch"  # in the temp schema: the searched shared namespace, indexed
_OWNED = "SELECT rid FROM mem WHERE prefix=? AND nsid=?"
_NSID = "[0-9a-f]{32}"


def case_safe(prefix: str) -> str:
    """`prefix` spelled so that names differing only by case stay different in SQLite.

    SQLite compares table names without regard to case, while key prefixes are
    case-sensitive. Each uppercase letter becomes `-` and its lowercase form (`-`
    never occurs in a key prefix), so all-lowercase prefixes keep their spelling.
    """
    return _UPPER.sub(lambda m: "-" + m[0].lower(), prefix)


def fts_table(prefix: str, nsid: str) -> str:
    """Name of the FTS5 table of a namespace that has one (past `SHARED_MAX` memories)."""
    return f"fts_{case_safe(prefix)}_{nsid}"


def legacy_fts_table(prefix: str, nsid: str) -> str:
    """The name `fts_table` gave before it became case-safe (case-insensitive in SQLite)."""
    return f"fts_{prefix}_{nsid}"


def _create_fts(name: str, *, schema: str = "main", contentless: bool = False) -> str:
    content = ", content=''" if contentless else ""
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.{ident(name)} USING fts5(text, context,"
        f" time, tokenize='{FTS_TOKENIZE}'{content})"
    )


class KeywordIndex:
    """The keyword entries of every namespace. Methods run with the file's lock held.

    Args:
        db: The shared file.
        memories: The statistics table whose rows the index entries belong to.
        naming: Name of the own table of (prefix, namespace id).
        shared_max: Most memories of a namespace in the shared table (default:
            `SHARED_MAX`, read at each write).
    """

    def __init__(
        self,
        db: SqliteFile,
        memories: MemoryTable,
        naming: Callable[[str, str], str] = fts_table,
        *,
        shared_max: int | None = None,
    ) -> None:
        db.create(_SCHEMA)
        self._c = db.conn
        self._mem = memories
        self._naming = naming
        self._shared_max = shared_max
        self._own: dict[tuple[str, str], str] = {}  # never shrinks but by rollback
        self._temp: set[str] = set()  # tables made in the temp schema
        self._loaded: tuple[str, str, int] | None = None  # scratch: namespace, data_version
        db.on_rollback(self._forget)

    def _forget(self) -> None:
        # What a rolled-back transaction made is gone.
        self._own.clear()
        self._temp.clear()
        self._loaded = None

    def _limit(self) -> int:
        return SHARED_MAX if self._shared_max is None else self._shared_max

    def own_table(self, prefix: str, nsid: str) -> str | None:
        """The FTS5 table of the namespace, or None while it lives in the shared table."""
        name = self._own.get((prefix, nsid))
        if name is None:
            row = self._c.execute(
                "SELECT name FROM kw_own WHERE prefix=? AND nsid=?", (prefix, nsid)
            ).fetchone()
            if row is None:
                return None
            name = self._own[(prefix, nsid)] = str(row[0])
        return name

    def _home(self, prefix: str, nsid: str) -> str:
        return self.own_table(prefix, nsid) or _SHARED

    # ------------------------------------------------------------------ writes
    def write(
        self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow], deletes: Sequence[str]
    ) -> None:
        """Upsert memories (statistics rows and entries), drop `deletes` not among them."""
        self._loaded = None
        home = self._home(prefix, nsid)
        table = ident(home)
        gone = self._mem.remove(prefix, nsid, [k for k in deletes if k not in rows])
        if gone:
            self._c.executemany(f"DELETE FROM {table} WHERE rowid=?", [(rid,) for rid, _ in gone])
            self._rekey_successors(prefix, nsid, home, [seq for _, seq in gone])
        if not rows:
            return
        rids = self._mem.upsert(prefix, nsid, rows)
        entries = [(rids[key], row.text, row.context, row.time_text) for key, row in rows.items()]
        if home == _SHARED:
            self._c.executemany(
                "INSERT OR REPLACE INTO kw_docs (rid, text, context, time) VALUES (?, ?, ?, ?)",
                entries,
            )
            self._move_out_if_large(prefix, nsid)
            return
        self._c.executemany(f"DELETE FROM {table} WHERE rowid=?", [(e[0],) for e in entries])
        self._c.executemany(
            f"INSERT INTO {table} (rowid, text, context, time) VALUES (?, ?, ?, ?)", entries
        )

    def _move_out_if_large(self, prefix: str, nsid: str) -> None:
        """Give a shared namespace grown past the limit an FTS5 table of its own."""
        limit = self._limit()
        last = self._mem.last_seq(prefix, nsid)  # an upper bound of the size, from an index
        if last is None or last <= limit or self._mem.count(prefix, nsid) <= limit:
            return
        name = self._naming(prefix, nsid)
        self._drop_if_retired(name)
        self._c.execute(_create_fts(name))
        self._c.execute(
            f"INSERT INTO {ident(name)} (rowid, text, context, time) SELECT rid, text,"
            f" context, time FROM kw_docs WHERE rid IN ({_OWNED}) ORDER BY rid",
            (prefix, nsid),
        )
        self._c.execute(f"DELETE FROM kw_docs WHERE rid IN ({_OWNED})", (prefix, nsid))
        self._c.execute("INSERT INTO kw_own VALUES (?, ?, ?)", (prefix, nsid, name))
        self._own[(prefix, nsid)] = name

    def _drop_if_retired(self, name: str) -> None:
        if self._c.execute("SELECT 1 FROM kw_retired WHERE name=?", (name,)).fetchone():
            self._c.execute(f"DROP TABLE IF EXISTS {ident(name)}")
            self._c.execute("DELETE FROM kw_retired WHERE name=?", (name,))

    def _rekey_successors(self, prefix: str, nsid: str, home: str, seqs: list[int]) -> None:
        """Give each deleted memory's successor the context of its new predecessor."""
        successors = set()
        for seq in seqs:
            nxt = self._next_after(prefix, nsid, home, seq)
            if nxt is not None and nxt[3]:  # only a memory written with a context key
                successors.add((nxt[0], nxt[1]))
        for rid, seq in successors:
            before = self._text_before(prefix, nsid, home, seq)
            self._c.execute(
                f"UPDATE {ident(home)} SET context=? WHERE rowid=?", (before or "", rid)
            )

    # ------------------------------------------------------------------ erasure
    def erase(self, prefix: str, nsid: str) -> tuple[list[str], list[str]]:
        """Drop a namespace's entries, statistics rows and own table (inside a transaction).

        Tables of the older layouts that still hold its entries (retired ones waiting
        to be dropped) lose them too: a retired table is dropped, any other has the
        rows deleted.

        Returns:
            (keys of the memories removed, names of tables whose rows were deleted and
            that need an FTS5 'optimize' for the deleted terms to leave the index)
        """
        self._loaded = None
        keys = [
            str(k)
            for (k,) in self._c.execute(
                "SELECT key FROM mem WHERE prefix=? AND nsid=? ORDER BY rid", (prefix, nsid)
            )
        ]
        self._c.execute(f"DELETE FROM kw_docs WHERE rid IN ({_OWNED})", (prefix, nsid))
        own = self.own_table(prefix, nsid)
        if own is not None:
            self._c.execute(f"DROP TABLE IF EXISTS {ident(own)}")
            self._c.execute("DELETE FROM kw_own WHERE prefix=? AND nsid=?", (prefix, nsid))
            self._own.pop((prefix, nsid), None)
        touched: list[str] = []
        for name in dict.fromkeys((self._naming(prefix, nsid), legacy_fts_table(prefix, nsid))):
            row = self._c.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND lower(name)=lower(?)",
                (name,),
            ).fetchone()
            if row is None:
                continue
            found = str(row[0])
            if self._c.execute("SELECT 1 FROM kw_retired WHERE name=?", (found,)).fetchone():
                self._c.execute(f"DROP TABLE IF EXISTS {ident(found)}")
                self._c.execute("DELETE FROM kw_retired WHERE name=?", (found,))
            else:
                self._c.execute(
                    f"DELETE FROM {ident(found)} WHERE rowid IN ({_OWNED})", (prefix, nsid)
                )
                touched.append(found)
        self._c.execute("DELETE FROM mem WHERE prefix=? AND nsid=?", (prefix, nsid))
        return keys, touched

    def optimize(self, tables: Iterable[str]) -> None:
        """Merge the index segments of FTS5 `tables`, so deleted terms leave them.

        Also empties the in-memory scratch table a search of a shared namespace filled.
        """
        for name in dict.fromkeys(tables):
            exists = self._c.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
            ).fetchone()
            if exists:
                self._c.execute(f"INSERT INTO {ident(name)} ({ident(name)}) VALUES ('optimize')")
        if _SCRATCH in self._temp:
            self._c.execute(f"INSERT INTO temp.{_SCRATCH} ({_SCRATCH}) VALUES ('delete-all')")
        self._loaded = None

    # ------------------------------------------------------------------ migration
    def migrate(self, prefix: str) -> tuple[int, int]:
        """Move the entries of `prefix` out of the tables of the one-table-per-namespace layout.

        Each namespace's entries go to their home: the shared table, or (past the limit)
        the namespace's own table, which is the old table itself when its name is already
        right. Old tables may also hold entries of prefixes spelled the same but for case
        (before names were case-safe); only `prefix`'s entries (rowids among its memory
        rows) move. A table left with no other entries, an empty table of `prefix` and a
        vocabulary table of a retired one are listed in `kw_retired`, to be dropped by
        `drop_retired` (each drop costs a scan of the schema, so they are dropped in
        steps). Runs inside the caller's immediate transaction; running it again moves
        nothing.

        Returns:
            (namespaces moved, tables retired)
        """
        self._loaded = None
        tables = dict(
            self._c.execute(
                "SELECT lower(name), name FROM sqlite_master WHERE type='table'"
                " AND name LIKE 'fts\\_%' ESCAPE '\\'"
            ).fetchall()
        )
        if not tables:
            return 0, 0
        owned = {str(n).lower() for (n,) in self._c.execute("SELECT name FROM kw_own")}
        retired = {str(n).lower() for (n,) in self._c.execute("SELECT name FROM kw_retired")}
        limit = self._limit()
        moved = 0
        for nsid, count in self._mem.counts(prefix):
            spellings = (self._naming(prefix, nsid), legacy_fts_table(prefix, nsid))
            for old in dict.fromkeys(tables.get(s.lower()) for s in spellings):
                if old is None or old.lower() in retired:
                    continue
                home = self.own_table(prefix, nsid)
                if home is None and count > limit:
                    home = self._naming(prefix, nsid)
                if home is not None and home.lower() == old.lower():
                    self._own_register(prefix, nsid, old, owned)
                    continue
                moved += 1
                self._copy_entries(prefix, nsid, old, home, owned, retired)
                others = self._c.execute(
                    f"SELECT 1 FROM {ident(old)} WHERE rowid NOT IN ({_OWNED}) LIMIT 1",
                    (prefix, nsid),
                ).fetchone()
                if others is not None or old.lower() in owned:
                    self._c.execute(
                        f"DELETE FROM {ident(old)} WHERE rowid IN ({_OWNED})", (prefix, nsid)
                    )
                else:
                    retired.add(old.lower())
                    self._c.execute("INSERT OR IGNORE INTO kw_retired VALUES (?)", (old,))
        # Empty tables of the prefix (namespaces whose memories are all gone) and the
        # vocabulary tables searches made beside each table (now made in temp).
        patterns = {re.escape(s.lower()) for s in (case_safe(prefix), prefix)}
        mine = re.compile(f"fts_(?:{'|'.join(patterns)})_{_NSID}")
        vocab = re.compile(f"fts_.*_{_NSID}_vocab")
        for low, name in tables.items():
            if low in retired or low in owned:
                continue
            if vocab.fullmatch(low) or (
                mine.fullmatch(low)
                and self._c.execute(f"SELECT 1 FROM {ident(name)} LIMIT 1").fetchone() is None
            ):
                retired.add(low)
                self._c.execute("INSERT OR IGNORE INTO kw_retired VALUES (?)", (name,))
        return moved, len(retired)

    def _own_register(self, prefix: str, nsid: str, name: str, owned: set[str]) -> None:
        self._c.execute("INSERT OR IGNORE INTO kw_own VALUES (?, ?, ?)", (prefix, nsid, name))
        self._own[(prefix, nsid)] = name
        owned.add(name.lower())

    def _copy_entries(
        self, prefix: str, nsid: str, old: str, home: str | None, owned: set[str], retired: set[str]
    ) -> None:
        """Copy `prefix`'s entries of one namespace from `old` to `home` (None: shared).

        Entries already at home are kept (they are newer).
        """
        select = f"SELECT rowid, text, context, time FROM {ident(old)} WHERE rowid IN ({_OWNED})"
        if home is None:
            self._c.execute(
                f"INSERT OR IGNORE INTO kw_docs (rid, text, context, time) {select}",
                (prefix, nsid),
            )
            return
        if home.lower() in retired:
            self._drop_if_retired(home)
            retired.discard(home.lower())
        self._c.execute(_create_fts(home))
        self._c.execute(
            f"INSERT INTO {ident(home)} (rowid, text, context, time) {select}"
            f" AND rowid NOT IN (SELECT rowid FROM {ident(home)})",
            (prefix, nsid),
        )
        self._own_register(prefix, nsid, home, owned)

    def retired(self) -> int:
        """How many retired tables are still to be dropped."""
        return int(self._c.execute("SELECT count(*) FROM kw_retired").fetchone()[0])

    def drop_retired(self, limit: int) -> int:
        """Drop up to `limit` retired tables (inside the caller's transaction); how many."""
        names = [n for (n,) in self._c.execute("SELECT name FROM kw_retired LIMIT ?", (limit,))]
        for name in names:
            self._c.execute(f"DROP TABLE IF EXISTS {ident(name)}")
            self._c.execute("DELETE FROM kw_retired WHERE name=?", (name,))
        return len(names)

    # ------------------------------------------------------------------ reads
    def search(
        self, prefix: str, nsid: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 search of one namespace for any of `terms` (see `DocMirror.keyword_search`)."""
        if limit <= 0 or not terms:
            return []
        own = self.own_table(prefix, nsid)
        if own is not None:
            return self._rank(prefix, nsid, "main", own, terms, limit)
        if not self._load_scratch(prefix, nsid):
            return []
        return self._rank(prefix, nsid, "temp", _SCRATCH, terms, limit)

    def _load_scratch(self, prefix: str, nsid: str) -> bool:
        """Index a shared namespace's entries in the temp table (kept while unchanged).

        Returns whether the namespace has any entry.
        """
        if _SCRATCH not in self._temp:
            self._c.execute(_create_fts(_SCRATCH, schema="temp", contentless=True))
            self._temp.add(_SCRATCH)
        # data_version changes when another connection commits; this one's writes reset
        # `_loaded` themselves.
        version = int(self._c.execute("PRAGMA data_version").fetchone()[0])
        if self._loaded is not None and self._loaded == (prefix, nsid, version):
            return True
        self._loaded = None
        self._c.execute("SAVEPOINT kw_scratch")
        try:
            self._c.execute(f"INSERT INTO temp.{_SCRATCH} ({_SCRATCH}) VALUES ('delete-all')")
            rows = self._c.execute(
                "SELECT k.rid, k.text, k.context, k.time FROM mem AS m JOIN kw_docs AS k"
                " ON k.rid = m.rid WHERE m.prefix=? AND m.nsid=?",
                (prefix, nsid),
            ).fetchall()
            self._c.executemany(
                f"INSERT INTO temp.{_SCRATCH} (rowid, text, context, time) VALUES (?, ?, ?, ?)",
                rows,
            )
        except BaseException:
            self._c.execute("ROLLBACK TO kw_scratch")
            self._c.execute("RELEASE kw_scratch")
            raise
        self._c.execute("RELEASE kw_scratch")
        if not rows:
            return False
        self._loaded = (prefix, nsid, version)
        return True

    def _rank(
        self, prefix: str, nsid: str, schema: str, fts: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 ranking of `schema.fts`, which holds exactly the namespace's entries."""
        stems = _STEMMER.stemWords(list(terms))
        vocab = f"{fts}_vocab"
        if vocab not in self._temp:
            self._c.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{ident(vocab)}"
                f" USING fts5vocab({schema}, {ident(fts)}, row)"
            )
            self._temp.add(vocab)
        df = dict(
            self._c.execute(
                f"SELECT term, doc FROM temp.{ident(vocab)} WHERE term IN ({marks(len(stems))})",
                stems,
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
            f" FROM {schema}.{table} WHERE {table} MATCH ? ORDER BY score LIMIT ?) AS f"
            " JOIN mem AS m ON m.rid = f.rowid WHERE m.prefix=? AND m.nsid=?"
            " ORDER BY f.score",
            (match, limit, prefix, nsid),
        ).fetchall()
        return [(k, float(sc)) for k, sc in rows]

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """Memories right after `keys` that carry a context key, less `keys` and `skip`."""
        home = self._home(prefix, nsid)
        gone = {*keys, *skip}
        out: dict[str, None] = {}
        for seq in self._mem.seqs(prefix, nsid, keys):
            nxt = self._next_after(prefix, nsid, home, seq)
            if nxt is not None and nxt[2] not in gone and nxt[3]:
                out[nxt[2]] = None
        return list(out)

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` (or the last one, when new)."""
        seqs = self._mem.seqs(prefix, nsid, [key])
        return self._text_before(
            prefix, nsid, self._home(prefix, nsid), seqs[0] if seqs else 1 << 62
        )

    def _next_after(
        self, prefix: str, nsid: str, home: str, seq: int
    ) -> tuple[int, int, str, str] | None:
        """(rid, seq, key, context) of the memory written right after `seq`."""
        row = self._c.execute(
            f"SELECT m.rid, m.seq, m.key, f.context FROM mem AS m JOIN {ident(home)} AS f"
            " ON f.rowid = m.rid WHERE m.prefix=? AND m.nsid=? AND m.seq > ?"
            " ORDER BY m.seq LIMIT 1",
            (prefix, nsid, seq),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def _text_before(self, prefix: str, nsid: str, home: str, seq: int) -> str | None:
        """Own text of the memory written right before `seq`."""
        row = self._c.execute(
            f"SELECT f.text FROM mem AS m JOIN {ident(home)} AS f ON f.rowid = m.rid"
            " WHERE m.prefix=? AND m.nsid=? AND m.seq < ? ORDER BY m.seq DESC LIMIT 1",
            (prefix, nsid, seq),
        ).fetchone()
        return None if row is None else str(row[0])
