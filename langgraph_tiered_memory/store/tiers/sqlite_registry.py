"""Namespace registry: the namespaces of each key prefix, and which prefixes were filled.

`namespaces` lists every encoded namespace with a flag telling whether it has held TTL
items; a prefix range of the encoding finds the namespaces under a prefix. `filled`
marks one-off jobs done for a prefix (copied from Chroma, memories indexed, keyword
tables renamed).
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile

__all__ = ["NamespaceRegistry"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS filled (prefix TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS namespaces (
    prefix TEXT NOT NULL, ns TEXT NOT NULL, has_ttl INTEGER NOT NULL,
    PRIMARY KEY (prefix, ns)
) WITHOUT ROWID;
"""


class NamespaceRegistry:
    """The `namespaces` and `filled` tables. Methods run with the file's lock held."""

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._c = db.conn

    def register(self, prefix: str, ns: str, ttl: bool) -> None:
        """Record namespace `ns` (encoded); `ttl` marks that it has held TTL items."""
        self._c.execute(
            "INSERT INTO namespaces VALUES (?, ?, ?) ON CONFLICT (prefix, ns)"
            " DO UPDATE SET has_ttl = max(has_ttl, excluded.has_ttl)",
            (prefix, ns, int(ttl)),
        )

    def unregister(self, prefix: str, ns: str) -> None:
        """Forget namespace `ns` (encoded)."""
        self._c.execute("DELETE FROM namespaces WHERE prefix=? AND ns=?", (prefix, ns))

    def registered(self, prefix: str, under: str) -> list[tuple[str, bool]]:
        """Encoded namespaces starting with the encoded prefix `under`, with their TTL flag."""
        rows = self._c.execute(
            "SELECT ns, has_ttl FROM namespaces WHERE prefix=? AND ns >= ? AND ns < ?",
            (prefix, under, under + "\U0010ffff"),
        ).fetchall()
        return [(ns, bool(t)) for ns, t in rows]

    def replace(self, prefix: str, rows: Iterable[tuple[str, bool]]) -> None:
        """Make the registry of `prefix` equal to `rows` (inside the caller's transaction)."""
        self._c.execute("DELETE FROM namespaces WHERE prefix=?", (prefix,))
        self._c.executemany(
            "INSERT INTO namespaces VALUES (?, ?, ?)", [(prefix, n, int(t)) for n, t in rows]
        )

    def is_filled(self, marker: str) -> bool:
        """Whether the job named `marker` has been recorded as done."""
        return (
            self._c.execute("SELECT 1 FROM filled WHERE prefix=?", (marker,)).fetchone() is not None
        )

    def mark_filled(self, marker: str) -> None:
        """Record that the job named `marker` is done."""
        self._c.execute("INSERT OR IGNORE INTO filled VALUES (?)", (marker,))
