"""One SQLite connection and its lock: the base of `DocMirror`, shared by its graph and history.

The graph tables (`sqlite_graph`) and the memory history (`sqlite_history`) run their SQL
on this connection with its lock held, inside the transactions `DocMirror` opens, so one
commit spans every table of the file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["MIRROR_FILE", "SqliteFile", "ident", "marks", "select_keys"]

MIRROR_FILE = "tiered-memory-docs.sqlite3"
"""File name of the mirror, inside the Chroma persist directory."""

_CHUNK = 500
"""Most keys bound in one `IN (...)` list."""


def ident(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def marks(n: int) -> str:
    """`n` comma-separated parameter marks."""
    return ",".join("?" * n)


def select_keys(
    conn: sqlite3.Connection, select: str, prefix: str, nsid: str, keys: Sequence[str]
) -> list[Any]:
    """Rows of `select` (`SELECT ... FROM <table>`) for the given keys of one namespace.

    The table has `prefix`, `nsid` and `key` columns; keys are bound in slices small
    enough for one `IN (...)` list.
    """
    out: list[Any] = []
    for start in range(0, len(keys), _CHUNK):
        chunk = list(keys[start : start + _CHUNK])
        out.extend(
            conn.execute(
                f"{select} WHERE prefix=? AND nsid=? AND key IN ({marks(len(chunk))})",
                (prefix, nsid, *chunk),
            ).fetchall()
        )
    return out


class SqliteFile:
    """One SQLite connection (WAL, autocommit unless a transaction is open) and its lock.

    Args:
        location: A file, a directory (the file is `MIRROR_FILE` inside it) or
            `":memory:"`.
    """

    def __init__(self, location: str | Path) -> None:
        if str(location) == ":memory:":
            self.path: Path | None = None
        else:
            self.path = Path(location)
            if self.path.is_dir():
                self.path = self.path / MIRROR_FILE
        self.conn = sqlite3.connect(
            ":memory:" if self.path is None else self.path,
            check_same_thread=False,
            isolation_level=None,
            timeout=30.0,
        )
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        # Temporary tables and sorts stay off disk.
        self.conn.execute("PRAGMA temp_store=MEMORY")
        # Deleted rows and freed pages are overwritten with zeros, so an erased user's
        # text does not linger in the file's free space (`erase_user`).
        self.conn.execute("PRAGMA secure_delete=ON")
        self.lock = threading.Lock()

    def create(self, schema: str) -> None:
        """Create a role's tables (statements with `IF NOT EXISTS`)."""
        with self.lock:
            self.conn.executescript(schema)

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection, with the lock held (each statement commits by itself)."""
        with self.lock:
            yield self.conn

    @contextmanager
    def transaction(self, *, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection inside one transaction, with the lock held.

        Commits when the block ends; rolls back when it raises, or when the commit
        itself fails.

        Args:
            immediate: Take SQLite's write lock at once (`BEGIN IMMEDIATE`), for
                read-modify-write blocks that other processes may run too.
        """
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    def checkpoint(self) -> None:
        """Copy the WAL into the file and truncate it (no old page images stay there)."""
        with self.lock:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def vacuum(self) -> None:
        """Rebuild the file from its live rows (`VACUUM`), then empty the WAL."""
        with self.lock:
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.conn.close()
