"""Namespace registry beside an embedded Chroma, and which one-off jobs were done.

`reg` holds one entry per namespace of a key prefix, with what the Redis registry of a
Chroma server's tier holds: the encoded namespace (a prefix range of the encoding finds
the namespaces under a prefix), its bucket (NULL: its own collection), the bucket an
unfinished move to its own collection left records in (`m`), whether it has held TTL
items and, in a bucket, its embedding size. Entries are read and written as dicts with
the keys of the registry collection's metadata (`ns`, `b`, `m`, `ttl`, `d`; a NULL
column is no key), which `chroma_layout.Collections` reads. `reg_layout` records each
prefix's bucket count, and so that the registry was set up for the prefix (copied once
from an earlier version's registry collection). `filled` marks other one-off jobs done
for a prefix (memories indexed, keyword tables renamed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, marks

__all__ = ["NamespaceRegistry"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS filled (prefix TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reg (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, ns TEXT NOT NULL, b INTEGER, m INTEGER,
    ttl INTEGER NOT NULL, d INTEGER, PRIMARY KEY (prefix, nsid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reg_layout (prefix TEXT PRIMARY KEY, buckets INTEGER NOT NULL)
    WITHOUT ROWID;
DROP TABLE IF EXISTS namespaces;
"""
# `namespaces` was a copy of the registry collection, made again at every open.

_COLUMNS = ("ns", "b", "m", "ttl", "d")
_SELECT = "SELECT nsid, ns, b, m, ttl, d FROM reg WHERE prefix=?"


def _entry(row: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    nsid, *values = row
    meta = {k: v for k, v in zip(_COLUMNS, values, strict=True) if v is not None}
    meta["ttl"] = bool(meta["ttl"])
    return str(nsid), meta


class NamespaceRegistry:
    """The `reg`, `reg_layout` and `filled` tables. Methods run with the file's lock held."""

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._c = db.conn

    def put(self, prefix: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Write whole entries (namespace id -> registry collection metadata)."""
        self._c.executemany(
            "INSERT OR REPLACE INTO reg VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (prefix, nsid, m["ns"], m.get("b"), m.get("m"), int(bool(m.get("ttl"))), m.get("d"))
                for nsid, m in entries.items()
            ],
        )

    def drop(self, prefix: str, nsid: str, *, unless_held: bool = False) -> None:
        """Remove a namespace's entry (`unless_held`: only when the copy holds no item of it)."""
        held = " AND NOT EXISTS (SELECT 1 FROM docs WHERE prefix=?1 AND nsid=?2)"
        self._c.execute(
            "DELETE FROM reg WHERE prefix=?1 AND nsid=?2" + (held if unless_held else ""),
            (prefix, nsid),
        )

    def get(self, prefix: str, nsids: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        """(namespace id, entry) of the given namespace ids that are registered."""
        out: list[tuple[str, dict[str, Any]]] = []
        for at in range(0, len(nsids), 500):
            chunk = list(nsids[at : at + 500])
            rows = self._c.execute(
                f"{_SELECT} AND nsid IN ({marks(len(chunk))})", (prefix, *chunk)
            ).fetchall()
            out.extend(map(_entry, rows))
        return out

    def under(
        self, prefix: str, under: str, *, moving: bool = False
    ) -> list[tuple[str, dict[str, Any]]]:
        """(namespace id, entry) of the namespaces whose encoding starts with `under`.

        `moving`: only those whose move left records in a bucket.
        """
        where = " AND m IS NOT NULL" if moving else ""
        rows = self._c.execute(
            f"{_SELECT} AND ns >= ? AND ns < ?{where} ORDER BY ns",
            (prefix, under, under + "\U0010ffff"),
        ).fetchall()
        return list(map(_entry, rows))

    def buckets(self, prefix: str) -> int | None:
        """The prefix's bucket count (None: its registry is not set up yet)."""
        row = self._c.execute("SELECT buckets FROM reg_layout WHERE prefix=?", (prefix,)).fetchone()
        return None if row is None else int(row[0])

    def set_up(
        self, prefix: str, buckets: int, entries: Iterable[tuple[str, Mapping[str, Any]]]
    ) -> None:
        """Record the prefix's bucket count and first entries (in the caller's transaction)."""
        self.put(prefix, dict(entries))
        self._c.execute("INSERT OR REPLACE INTO reg_layout VALUES (?, ?)", (prefix, buckets))

    def is_filled(self, marker: str) -> bool:
        """Whether the job named `marker` has been recorded as done."""
        return (
            self._c.execute("SELECT 1 FROM filled WHERE prefix=?", (marker,)).fetchone() is not None
        )

    def mark_filled(self, marker: str) -> None:
        """Record that the job named `marker` is done."""
        self._c.execute("INSERT OR IGNORE INTO filled VALUES (?)", (marker,))
