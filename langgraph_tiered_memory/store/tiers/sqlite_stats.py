"""Memory statistics: ranking fields, write order and access counts of each memory.

One row per memory in `mem`. Its `seq` is its position in its namespace's write order
(kept when the memory is rewritten), which the contextual key follows and which places
the memory's entry in the keyword index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, marks, select_keys

__all__ = ["ContextInputs", "MemoryRow", "MemoryStats", "MemoryTable"]


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


class ContextInputs(NamedTuple):
    """What a batch of memory writes to one namespace reads before embedding its context keys."""

    memories: frozenset[str]
    """Those of the asked keys that are memories already."""
    previous: Mapping[str, str | None]
    """Each asked key -> own text of the memory written just before it (for a key not
    stored yet, the namespace's last memory); None: no earlier memory."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS mem (
    rid INTEGER PRIMARY KEY, prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    mtype TEXT NOT NULL, importance REAL NOT NULL, occurred REAL, created REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0, last_accessed REAL,
    UNIQUE (prefix, nsid, key)
);
CREATE INDEX IF NOT EXISTS mem_seq ON mem (prefix, nsid, seq);
CREATE INDEX IF NOT EXISTS mem_ns ON mem (prefix, nsid);
"""

_STATS = "seq, mtype, importance, occurred, created, access_count, last_accessed"


class MemoryTable:
    """The `mem` table. Every method runs with the file's lock held by the caller."""

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._c = db.conn

    # ------------------------------------------------------------------ reads
    def stats(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, MemoryStats]:
        """Ranking fields and access statistics of the given keys that are memories."""
        rows = select_keys(self._c, f"SELECT key, {_STATS} FROM mem", prefix, nsid, keys)
        return {row[0]: MemoryStats(*row[1:]) for row in rows}

    def page(
        self, prefix: str, nsid: str, after: int, limit: int
    ) -> list[tuple[int, str, MemoryStats]]:
        """One page of a namespace's memories in rid order: (rid, key, stats)."""
        rows = self._c.execute(
            f"SELECT rid, key, {_STATS} FROM mem WHERE prefix=? AND nsid=? AND rid > ?"
            " ORDER BY rid LIMIT ?",
            (prefix, nsid, after, limit),
        ).fetchall()
        return [(r[0], r[1], MemoryStats(*r[2:])) for r in rows]

    def seqs(self, prefix: str, nsid: str, keys: Sequence[str]) -> list[int]:
        """Write positions of the given keys that are memories."""
        return [seq for (seq,) in select_keys(self._c, "SELECT seq FROM mem", prefix, nsid, keys)]

    def last_seq(self, prefix: str, nsid: str) -> int | None:
        """Highest write position in the namespace (an upper bound of its size), or None."""
        row = self._c.execute(
            "SELECT max(seq) FROM mem WHERE prefix=? AND nsid=?", (prefix, nsid)
        ).fetchone()
        return None if row[0] is None else int(row[0])

    def keys_at(self, prefix: str, nsid: str, seqs: Sequence[int]) -> dict[int, str]:
        """Keys of the memories at the given write positions."""
        found = self._c.execute(
            f"SELECT seq, key FROM mem WHERE prefix=? AND nsid=? AND seq IN ({marks(len(seqs))})",
            (prefix, nsid, *seqs),
        )
        return {int(seq): str(key) for seq, key in found}

    # ------------------------------------------------------------------ writes
    def upsert(self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow]) -> dict[str, int]:
        """Write memories' ranking fields, keeping positions and access counts; their positions.

        A new memory takes the next write position, in the order of `rows`; one statement
        runs for all of them (`executemany`), then one read gives the positions.
        """
        if not rows:
            return {}
        self._c.executemany(
            "INSERT INTO mem (prefix, nsid, key, seq, mtype, importance, occurred, created)"
            " VALUES (?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM mem WHERE prefix=?"
            " AND nsid=?), ?, ?, ?, ?) ON CONFLICT (prefix, nsid, key) DO UPDATE SET"
            " mtype=excluded.mtype, importance=excluded.importance,"
            " occurred=excluded.occurred, created=excluded.created",
            [
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
                )
                for key, row in rows.items()
            ],
        )
        found = select_keys(self._c, "SELECT key, seq FROM mem", prefix, nsid, list(rows))
        return {key: int(seq) for key, seq in found}

    def remove(self, prefix: str, nsid: str, keys: Sequence[str]) -> list[tuple[int, int]]:
        """Drop the rows of the given keys; (rid, seq) of those that existed."""
        found = select_keys(self._c, "SELECT rid, seq FROM mem", prefix, nsid, keys)
        self._c.executemany("DELETE FROM mem WHERE rid=?", [(rid,) for rid, _ in found])
        return [(rid, seq) for rid, seq in found]

    def touch(self, prefix: str, hits: Sequence[tuple[str, str]], now: float) -> None:
        """Count one access of each (namespace id, key) at time `now`.

        The increment happens inside SQLite (`access_count = access_count + 1`), so
        concurrent searches, in this process or another one, never lose one.
        """
        self._c.executemany(
            "UPDATE mem SET access_count = access_count + 1, last_accessed ="
            " max(coalesce(last_accessed, ?), ?) WHERE prefix=? AND nsid=? AND key=?",
            [(now, now, prefix, nsid, key) for nsid, key in hits],
        )
