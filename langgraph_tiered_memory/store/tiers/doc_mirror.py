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
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["DocMirror", "MIRROR_FILE"]

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
CREATE TABLE IF NOT EXISTS namespaces (
    prefix TEXT NOT NULL, ns TEXT NOT NULL, has_ttl INTEGER NOT NULL,
    PRIMARY KEY (prefix, ns)
) WITHOUT ROWID;
"""


class DocMirror:
    """Primary-record metadata of every long-term item, keyed by (prefix, namespace id, key)."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / MIRROR_FILE
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

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
                out.update((k, json.loads(m)) for k, m in rows)
        return out

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
    ) -> None:
        """Apply what Chroma now holds and clear the pending keys, in one transaction."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)",
                    [(prefix, nsid, k, json.dumps(m)) for k, m in (upserts or {}).items()],
                )
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
        self, prefix: str, read: Callable[[str, list[str]], dict[str, dict[str, Any]]]
    ) -> int:
        """Replay interrupted writes of `prefix` by copying their records from Chroma.

        Args:
            prefix: The store's key prefix.
            read: Returns Chroma's current primary metadata for (namespace id, keys).

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
            self.commit(
                prefix,
                nsid,
                upserts=current,
                deletes=[k for k in keys if k not in current],
                done=keys,
            )
        return len(rows)

    def is_filled(self, prefix: str) -> bool:
        """Whether the mirror has been filled from Chroma for `prefix`."""
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
