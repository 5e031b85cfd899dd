"""Intent log: the keys whose Chroma records are changing, so a crash can be repaired.

A write (1) records its keys here and commits, (2) writes Chroma, (3) updates the copy
and clears its keys in one transaction. Keys still recorded when the file is opened
belong to writes interrupted between (1) and (3); `DocMirror.recover` copies their
records from Chroma again.
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile

__all__ = ["IntentLog"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
"""


class IntentLog:
    """The `pending` table. Every method runs with the file's lock held by the caller."""

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._c = db.conn

    def record(self, prefix: str, nsid: str, keys: Iterable[str]) -> None:
        """Record that these keys are about to change in Chroma."""
        self._c.executemany(
            "INSERT OR IGNORE INTO pending VALUES (?, ?, ?)", [(prefix, nsid, k) for k in keys]
        )

    def clear(self, prefix: str, nsid: str, keys: Iterable[str]) -> None:
        """Forget keys whose change has reached the copy."""
        self._c.executemany(
            "DELETE FROM pending WHERE prefix=? AND nsid=? AND key=?",
            [(prefix, nsid, k) for k in keys],
        )

    def pending(self, prefix: str) -> dict[str, list[str]]:
        """Keys of `prefix` still recorded, by namespace id."""
        by_ns: dict[str, list[str]] = {}
        for nsid, key in self._c.execute(
            "SELECT nsid, key FROM pending WHERE prefix=?", (prefix,)
        ).fetchall():
            by_ns.setdefault(nsid, []).append(key)
        return by_ns

    def erase(self, prefix: str, nsid: str) -> list[str]:
        """Forget every pending key of a namespace; those keys."""
        keys = [
            str(k)
            for (k,) in self._c.execute(
                "SELECT key FROM pending WHERE prefix=? AND nsid=?", (prefix, nsid)
            )
        ]
        self._c.execute("DELETE FROM pending WHERE prefix=? AND nsid=?", (prefix, nsid))
        return keys
