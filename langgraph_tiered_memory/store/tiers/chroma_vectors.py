"""Where exact search in a bucketed namespace gets the namespace's vectors.

Two sources, chosen once when the tier opens its client:

- `VectorCopy`: beside an embedded Chroma, a derived float32 copy of every bucket record
  in a SQLite file of its own. Chroma stays the source of truth: the copy is written
  after Chroma and before the document copy clears its intent log, so an interrupted
  write is repaired from Chroma with the documents, and a missing file is rebuilt from
  the buckets. Reading it needs no Chroma call, so the first search of a namespace in a
  fresh process loads no HNSW index (a bucket's takes 40-160 ms to load cold).
- `ChromaVectors`: with a Chroma server, one `get` scoped to the namespace on its bucket.

Namespaces with their own HNSW collection are not copied: their records, key vectors
(`x:` records such as the context key) included, are read from Chroma, embedded or on a
server. Earlier versions kept those key vectors beside an embedded Chroma only in this
file (table `keyvec`); `legacy_keys` reads them once so the tier can move them into
Chroma, and `drop_legacy_keys` deletes them.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "VECTORS_FILE",
    "ChromaVectors",
    "Pairs",
    "Puts",
    "Records",
    "VectorCopy",
    "VectorSource",
    "key_of",
    "write_id_of",
]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.chroma_vectors")

VECTORS_FILE = "tiered-memory-vectors.sqlite3"
"""File name of the vector copy, inside the Chroma persist directory."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vec (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL, rid TEXT NOT NULL,
    v BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS vec_rid ON vec (prefix, nsid, rid);
CREATE INDEX IF NOT EXISTS vec_key ON vec (prefix, nsid, key);
CREATE TABLE IF NOT EXISTS filled (prefix TEXT PRIMARY KEY) WITHOUT ROWID;
"""


class Records(NamedTuple):
    """Every record of one namespace: ids, vectors as rows, and primary metadata if read."""

    ids: list[str]
    matrix: np.ndarray
    metas: dict[str, dict[str, Any]] | None


def key_of(rid: str) -> str:
    """The item key of a record id (`p:<key>` or `x:<i>:<write id>:<key>`)."""
    return rid[2:] if rid.startswith("p:") else rid.split(":", 3)[3]


def write_id_of(rid: str) -> str | None:
    """The write id of an extra record id (None for a primary record)."""
    return None if rid.startswith("p:") else rid.split(":", 3)[2]


Puts = Iterable[tuple[str, str, "Sequence[float] | np.ndarray"]]
"""(namespace id, record id, vector) records to write."""

Pairs = Iterable[tuple[str, str]]
"""(namespace id, record id or key) pairs."""


class VectorSource(ABC):
    """The vectors of bucketed namespaces (`view`: a namespace's records in its bucket).

    The defaults fit a source that is the bucket itself: nothing to follow or repair.
    """

    @abstractmethod
    def records(self, prefix: str, nsid: str, view: Any, dims: int) -> Records:
        """Every record of the namespace."""

    def keys(self, prefix: str, nsid: str) -> list[str] | None:
        """Keys of the namespace's items in write order (None: page the bucket instead)."""
        return None

    def count(self, prefix: str, nsid: str, view: Any = None) -> int:
        """Records of the namespace, counted in the bucket."""
        return int(view.count())

    def write(self, prefix: str, puts: Puts, deletes: Pairs = (), drop_keys: Pairs = ()) -> None:
        """Follow a write to the buckets: deleted records, dropped keys, new records."""
        return None

    def drop_namespace(self, prefix: str, nsid: str) -> None:
        """Forget a namespace that left its bucket."""
        return None

    def refresh(self, prefix: str, nsid: str, keys: Sequence[str], view: Any) -> None:
        """Copy the current Chroma records of `keys` (repair after an interrupted write)."""
        return None


class ChromaVectors(VectorSource):
    """Vectors read from the bucket itself (Chroma server: no local copy)."""

    def records(self, prefix: str, nsid: str, view: Any, dims: int) -> Records:
        """One `get` of the namespace's records, with their documents."""
        got = view.get(include=["embeddings", "metadatas"])
        ids = list(got["ids"])
        matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), dims + 1)
        metas = {
            rid[2:]: meta
            for rid, meta in zip(ids, got["metadatas"], strict=True)
            if rid.startswith("p:")
        }
        return Records(ids, matrix, metas)


class VectorCopy(VectorSource):
    """A float32 copy of the bucket records, keyed by (prefix, namespace id, record id)."""

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / VECTORS_FILE
        self._conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=30.0
        )
        # A vector (1.5 KB at 384 dims) fits twice in a 4 KB page and wastes a quarter of
        # it; 8 KB pages hold five (measured: 2.2 KB per record on disk at 4 KB pages).
        self._conn.execute("PRAGMA page_size=8192")
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        # Searches read hundreds of scattered rows (key vectors at 100k memories):
        # memory-mapped reads take ~40% off their cost.
        self._conn.execute("PRAGMA mmap_size=268435456")
        self._conn.execute("PRAGMA secure_delete=ON")  # erased vectors leave no bytes
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._conn.close()

    def records(self, prefix: str, nsid: str, view: Any, dims: int) -> Records:
        """Every record of the namespace, in write order (documents not included)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT rid, v FROM vec WHERE prefix=? AND nsid=? ORDER BY rowid", (prefix, nsid)
            ).fetchall()
        ids = [r for r, _ in rows]
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32)
        return Records(ids, matrix.reshape(len(ids), dims + 1), None)

    def keys(self, prefix: str, nsid: str) -> list[str] | None:
        """Keys of the namespace's items, in write order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key FROM vec WHERE prefix=? AND nsid=? AND rid >= 'p:' AND rid < 'p;'"
                " ORDER BY rowid",
                (prefix, nsid),
            ).fetchall()
        return [k for (k,) in rows]

    def count(self, prefix: str, nsid: str, view: Any = None) -> int:
        """Records of the namespace."""
        with self._lock:
            (n,) = self._conn.execute(
                "SELECT count(*) FROM vec WHERE prefix=? AND nsid=?", (prefix, nsid)
            ).fetchone()
        return int(n)

    def write(self, prefix: str, puts: Puts, deletes: Pairs = (), drop_keys: Pairs = ()) -> None:
        """Change the copy in one transaction.

        Deletes the (nsid, record id) `deletes` and every record of the (nsid, key)
        `drop_keys`, then writes the (nsid, record id, vector) `puts`.
        """
        rows = [
            (prefix, nsid, key_of(rid), rid, np.asarray(vec, dtype=np.float32).tobytes())
            for nsid, rid, vec in puts
        ]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "DELETE FROM vec WHERE prefix=? AND nsid=? AND key=?",
                    [(prefix, n, k) for n, k in drop_keys],
                )
                self._conn.executemany(
                    "DELETE FROM vec WHERE prefix=? AND nsid=? AND rid=?",
                    [(prefix, n, r) for n, r in deletes],
                )
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vec (prefix, nsid, key, rid, v) VALUES (?,?,?,?,?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def drop_namespace(self, prefix: str, nsid: str) -> None:
        """Forget every record of a namespace (it left its bucket)."""
        with self._lock:
            self._conn.execute("DELETE FROM vec WHERE prefix=? AND nsid=?", (prefix, nsid))

    def refresh(self, prefix: str, nsid: str, keys: Sequence[str], view: Any) -> None:
        """Copy the current Chroma records of `keys` (repair after an interrupted write)."""
        puts: list[tuple[str, str, Any]] = []
        for start in range(0, len(keys), 100):
            chunk = list(keys[start : start + 100])
            got = view.get(where={"_k": {"$in": chunk}}, include=["embeddings"])
            puts.extend((nsid, r, v) for r, v in zip(got["ids"], got["embeddings"], strict=True))
            got = view.get(ids=[f"p:{k}" for k in chunk], include=["embeddings"])
            puts.extend((nsid, r, v) for r, v in zip(got["ids"], got["embeddings"], strict=True))
        self.write(prefix, puts, drop_keys=[(nsid, k) for k in keys])

    def is_filled(self, marker: str) -> bool:
        """Whether the buckets named by `marker` (prefix and size) were copied."""
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM filled WHERE prefix=?", (marker,)).fetchone()
        return row is not None

    def fill(
        self, prefix: str, marker: str, buckets: Iterable[tuple[int, Any]], bucketed: set[str]
    ) -> None:
        """Copy every record of the bucketed namespaces from the buckets (first use)."""
        copied = 0
        for _, col in buckets:
            offset = 0
            while True:
                page = col.get(include=["embeddings", "metadatas"], limit=500, offset=offset)
                puts = [
                    (m["_ns"], rid[33:], v)
                    for rid, m, v in zip(
                        page["ids"], page["metadatas"], page["embeddings"], strict=True
                    )
                    if m.get("_ns") in bucketed
                ]
                self.write(prefix, puts)
                copied += len(puts)
                if len(page["ids"]) < 500:
                    break
                offset += 500
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO filled VALUES (?)", (marker,))
        logger.info("vector copy of %s filled from Chroma: %d records", prefix, copied)

    def erase(self, prefix: str, nsid: str) -> set[str]:
        """Drop every record of a namespace; the keys they held."""
        args = (prefix, nsid)
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                keys = {
                    str(k)
                    for (k,) in self._conn.execute(
                        "SELECT DISTINCT key FROM vec WHERE prefix=? AND nsid=?", args
                    )
                }
                self._conn.execute("DELETE FROM vec WHERE prefix=? AND nsid=?", args)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return keys

    def namespace_keys(self, prefix: str, nsid: str) -> set[str]:
        """Keys of a namespace's records held here."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT key FROM vec WHERE prefix=? AND nsid=?", (prefix, nsid)
            ).fetchall()
        return {str(k) for (k,) in rows}

    # ------------------------------------------- key vectors of earlier versions
    def _has_legacy_keys(self) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='keyvec'"
        ).fetchone()
        return row is not None

    def legacy_keys(self, prefix: str) -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
        """(namespace id, [(record id, float32 vector)]) pages of the old `keyvec` rows."""
        with self._lock:
            if not self._has_legacy_keys():
                return
            nsids = [
                n
                for (n,) in self._conn.execute(
                    "SELECT DISTINCT nsid FROM keyvec WHERE prefix=? ORDER BY nsid", (prefix,)
                )
            ]
        for nsid in nsids:
            after = 0
            while True:
                with self._lock:
                    rows = self._conn.execute(
                        "SELECT rowid, rid, v FROM keyvec WHERE prefix=? AND nsid=? AND rowid>?"
                        " ORDER BY rowid LIMIT 500",
                        (prefix, nsid, after),
                    ).fetchall()
                if not rows:
                    break
                after = rows[-1][0]
                yield nsid, [(rid, v) for _, rid, v in rows]

    def drop_legacy_keys(self, prefix: str) -> None:
        """Delete the prefix's old key vectors; the old tables once no prefix has rows."""
        with self._lock:
            if not self._has_legacy_keys():
                return
            self._conn.execute("BEGIN")
            try:
                self._conn.execute("DELETE FROM keyvec WHERE prefix=?", (prefix,))
                self._conn.execute("DELETE FROM keys_due WHERE prefix=?", (prefix,))
                if self._conn.execute("SELECT 1 FROM keyvec LIMIT 1").fetchone() is None:
                    self._conn.execute("DROP TABLE keyvec")
                    self._conn.execute("DROP TABLE keys_due")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def vacuum(self) -> None:
        """Rebuild the file from its live rows (`VACUUM`), then empty the WAL."""
        with self._lock:
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def checkpoint(self) -> None:
        """Copy the WAL into the file and truncate it."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
