"""Where exact search in a bucketed namespace gets the namespace's vectors.

Two sources, chosen once when the tier opens its client:

- `VectorCopy`: beside an embedded Chroma, a derived float32 copy of every bucket record
  in a SQLite file of its own. Chroma stays the source of truth: the copy is written
  after Chroma and before the document copy clears its intent log, so an interrupted
  write is repaired from Chroma with the documents, and a missing file is rebuilt from
  the buckets. Reading it needs no Chroma call, so the first search of a namespace in a
  fresh process loads no HNSW index (a bucket's takes 40-160 ms to load cold).
- `ChromaVectors`: with a Chroma server, one `get` scoped to the namespace on its bucket.

The source also decides where a memory's key vectors (`x:` records that are index keys,
such as the context key made with the previous memory's text) live once its namespace
has its own HNSW collection. An HNSW insert costs ~250-300 µs per record, and memory
mode wrote two per memory, which capped puts below 2,000/s at 100k memories. Beside an
embedded Chroma, `VectorCopy` therefore keeps them in its `keyvec` table, and retrieval
scores them exactly over the neighbourhood of the HNSW hits (`key_scores`): the hits'
own key vectors, and the key vectors made with a hit's text. Each row records 64-bit
tags (`text_tag`) of its memory's own text and of the context text it was made with,
so one indexed query finds both. With a
server there is no local copy, and `ChromaVectors` keeps them in Chroma, as before.
Key vectors cannot be rebuilt from Chroma (it holds the texts, not these vectors): they
are written to the copy before Chroma, stale ones are removed after it, and a copy file
made anew marks the own-collection namespaces whose key vectors must be re-made
(`keys_due`, see `ChromaReads.restore_key_vectors`).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "VECTORS_FILE",
    "ChromaVectors",
    "KeyPuts",
    "Pairs",
    "Puts",
    "Record",
    "Records",
    "Tags",
    "VectorCopy",
    "VectorSource",
    "key_of",
    "text_tag",
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
CREATE TABLE IF NOT EXISTS keyvec (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL, rid TEXT NOT NULL,
    own INTEGER, ctx INTEGER, v BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS keyvec_rid ON keyvec (prefix, nsid, rid);
CREATE INDEX IF NOT EXISTS keyvec_key ON keyvec (prefix, nsid, key);
CREATE INDEX IF NOT EXISTS keyvec_ctx ON keyvec (prefix, nsid, ctx);
CREATE TABLE IF NOT EXISTS keys_due (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, PRIMARY KEY (prefix, nsid)
) WITHOUT ROWID;
"""


class Records(NamedTuple):
    """Every record of one namespace: ids, vectors as rows, and primary metadata if read."""

    ids: list[str]
    matrix: np.ndarray
    metas: dict[str, dict[str, Any]] | None


def key_of(rid: str) -> str:
    """The item key of a record id (`p:<key>` or `x:<i>:<write id>:<key>`)."""
    return rid[2:] if rid.startswith("p:") else rid.split(":", 3)[3]


Tags = tuple["int | None", "int | None"]
"""`text_tag`s of a memory's own text and of the context text its key was made with."""


def text_tag(text: str | None) -> int | None:
    """A 64-bit tag of a memory's text (None: no text), to find the keys made with it."""
    if not text:
        return None
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def write_id_of(rid: str) -> str | None:
    """The write id of an extra record id (None for a primary record)."""
    return None if rid.startswith("p:") else rid.split(":", 3)[2]


Puts = Iterable[tuple[str, str, "Sequence[float] | np.ndarray"]]
"""(namespace id, record id, vector) records to write."""

Pairs = Iterable[tuple[str, str]]
"""(namespace id, record id or key) pairs."""

Record = tuple[str, "Sequence[float] | np.ndarray"]
"""(record id, vector) of one namespace."""

KeyPuts = Iterable[tuple[str, str, "Sequence[float] | np.ndarray", "Tags"]]
"""(namespace id, record id, vector, tags) key vectors."""


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

    # ------------------------------------------------- key vectors of own collections
    # The defaults keep them in the own collection (HNSW), beside the item's records.
    def split_keys(self, records: list[Record]) -> tuple[list[Record], list[Record]]:
        """(records for Chroma, records for this source) of an own collection's keys."""
        return records, []

    def write_keys(self, prefix: str, puts: KeyPuts = (), deletes: Pairs = ()) -> None:
        """Add key vectors; remove (nsid, record id) ones."""
        return None

    def hnsw_share(self, prefix: str, nsid: str, n: int) -> int:
        """Records of `n` a memory retrieval asks an own collection's HNSW index for.

        The rest are key vectors of the neighbourhood, from `key_scores`.
        """
        return n

    def key_scores(
        self,
        prefix: str,
        nsid: str,
        keys: Sequence[str],
        query: np.ndarray,
    ) -> list[tuple[str, float]]:
        """Exact similarities of the key vectors held here for a neighbourhood.

        The neighbourhood is the memories `keys` (the HNSW hits) and the memories whose
        context key was made with one of their texts.
        """
        return []

    def adopt_keys(
        self, prefix: str, nsid: str, pick: Callable[[list[str]], dict[str, Tags | None]]
    ) -> set[str]:
        """On a move to an own collection: take the bucket's key records (their ids).

        `pick` maps the extra record ids that stay out of the new HNSW index to the
        tags of the key vectors among them (None: a stale vector, dropped).
        """
        return set()

    def refresh_keys(
        self, prefix: str, nsid: str, keys: Sequence[str], write_ids: dict[str, str]
    ) -> None:
        """Drop key vectors of `keys` that Chroma's documents (`write_ids`) no longer name."""
        return None

    def key_rids(self, prefix: str, nsid: str, keys: Sequence[str]) -> set[str]:
        """Ids of the key vectors held here for `keys`."""
        return set()

    def mark_keys_due(self, prefix: str, nsids: Sequence[str]) -> None:
        """Record that these namespaces' key vectors must be re-made (copy made anew)."""
        return None

    def keys_due(self, prefix: str) -> list[str]:
        """Namespace ids whose key vectors must be re-made."""
        return []

    def keys_done(self, prefix: str, nsid: str) -> None:
        """Clear `mark_keys_due` for a namespace."""
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

    # ------------------------------------------------- key vectors of own collections
    def split_keys(self, records: list[Record]) -> tuple[list[Record], list[Record]]:
        """Every key record of an own collection stays here, none goes to Chroma."""
        return [], records

    def write_keys(self, prefix: str, puts: KeyPuts = (), deletes: Pairs = ()) -> None:
        """Add and remove key vectors in one transaction."""
        rows = [
            (prefix, nsid, key_of(rid), rid, *tags, np.asarray(vec, dtype=np.float32).tobytes())
            for nsid, rid, vec, tags in puts
        ]
        gone = [(prefix, n, r) for n, r in deletes]
        if not rows and not gone:
            return
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "DELETE FROM keyvec WHERE prefix=? AND nsid=? AND rid=?", gone
                )
                self._conn.executemany(
                    "INSERT OR REPLACE INTO keyvec (prefix, nsid, key, rid, own, ctx, v)"
                    " VALUES (?,?,?,?,?,?,?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _key_rows(self, prefix: str, nsid: str, keys: Sequence[str]) -> list[tuple[str, bytes]]:
        """(record id, vector) of the key vectors of `keys`."""
        out: list[tuple[str, bytes]] = []
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                out.extend(
                    self._conn.execute(
                        "SELECT rid, v FROM keyvec WHERE prefix=? AND nsid=? AND key IN"
                        f" ({','.join('?' * len(chunk))})",
                        (prefix, nsid, *chunk),
                    ).fetchall()
                )
        return out

    def hnsw_share(self, prefix: str, nsid: str, n: int) -> int:
        """Half when the copy holds key vectors of the namespace, else all.

        With key vectors here, the index holds own vectors only; without any (say,
        `context_keys` off), it gets the whole pool as before.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM keyvec WHERE prefix=? AND nsid=? LIMIT 1", (prefix, nsid)
            ).fetchone()
        return n if row is None else max(1, n // 2)

    def key_scores(
        self,
        prefix: str,
        nsid: str,
        keys: Sequence[str],
        query: np.ndarray,
    ) -> list[tuple[str, float]]:
        """Cosine similarity of each key vector of the neighbourhood.

        A hit's text is known by the `own` tag of its key vectors, so the memory written
        first (no context key) does not lead to its successor; that one counts only as
        a hit of its own.
        """
        if not keys:
            return []
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                hit = self._conn.execute(
                    "SELECT rid, v, own FROM keyvec WHERE prefix=? AND nsid=? AND key IN"
                    f" ({','.join('?' * len(chunk))})",
                    (prefix, nsid, *chunk),
                ).fetchall()
                found.update((rid, v) for rid, v, _ in hit)
                owns = list({own for _, _, own in hit if own is not None})
                if owns:
                    found.update(
                        self._conn.execute(
                            "SELECT rid, v FROM keyvec WHERE prefix=? AND nsid=? AND ctx IN"
                            f" ({','.join('?' * len(owns))})",
                            (prefix, nsid, *owns),
                        ).fetchall()
                    )
        rows = list(found.items())
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), -1).astype(np.float64)
        q = np.asarray(query, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(q))
        sims = np.divide(matrix @ q, norms, out=np.zeros(len(norms)), where=norms > 0)
        return [(rid, float(s)) for (rid, _), s in zip(rows, sims, strict=True)]

    def adopt_keys(
        self, prefix: str, nsid: str, pick: Callable[[list[str]], dict[str, Tags | None]]
    ) -> set[str]:
        """Copy the namespace's key records from its bucket records into `keyvec`.

        Runs before the registry names the own collection; key vectors left by an
        interrupted earlier move are replaced.
        """
        with self._lock:
            rows = self._conn.execute(
                "SELECT rid, v FROM vec WHERE prefix=? AND nsid=? AND rid >= 'x:' AND rid < 'x;'",
                (prefix, nsid),
            ).fetchall()
        tags = pick([rid for rid, _ in rows])  # may read this copy: unlocked
        kept = [(rid, *tag, v) for rid, v in rows if (tag := tags.get(rid)) is not None]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.execute("DELETE FROM keyvec WHERE prefix=? AND nsid=?", (prefix, nsid))
                self._conn.executemany(
                    "INSERT OR REPLACE INTO keyvec (prefix, nsid, key, rid, own, ctx, v)"
                    " VALUES (?,?,?,?,?,?,?)",
                    [(prefix, nsid, key_of(rid), rid, own, ctx, v) for rid, own, ctx, v in kept],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return set(tags)

    def refresh_keys(
        self, prefix: str, nsid: str, keys: Sequence[str], write_ids: dict[str, str]
    ) -> None:
        """Drop key vectors of `keys` whose write is not Chroma's current one."""
        stale = [
            (nsid, rid)
            for rid, _ in self._key_rows(prefix, nsid, keys)
            if write_ids.get(key_of(rid)) != write_id_of(rid)
        ]
        self.write_keys(prefix, deletes=stale)

    def key_rids(self, prefix: str, nsid: str, keys: Sequence[str]) -> set[str]:
        """Ids of the key vectors held for `keys`."""
        return {rid for rid, _ in self._key_rows(prefix, nsid, keys)}

    def mark_keys_due(self, prefix: str, nsids: Sequence[str]) -> None:
        """Record namespaces whose key vectors must be re-made."""
        with self._lock:
            self._conn.executemany(
                "INSERT OR IGNORE INTO keys_due VALUES (?, ?)", [(prefix, n) for n in nsids]
            )

    def keys_due(self, prefix: str) -> list[str]:
        """Namespace ids whose key vectors must be re-made."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT nsid FROM keys_due WHERE prefix=? ORDER BY nsid", (prefix,)
            ).fetchall()
        return [n for (n,) in rows]

    def keys_done(self, prefix: str, nsid: str) -> None:
        """Clear the re-make mark of a namespace."""
        with self._lock:
            self._conn.execute("DELETE FROM keys_due WHERE prefix=? AND nsid=?", (prefix, nsid))

    def erase(self, prefix: str, nsid: str) -> set[str]:
        """Drop every record, key vector and mark of a namespace; the keys they held."""
        args = (prefix, nsid)
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                keys = {
                    str(k)
                    for (k,) in self._conn.execute(
                        "SELECT key FROM vec WHERE prefix=?1 AND nsid=?2 UNION"
                        " SELECT key FROM keyvec WHERE prefix=?1 AND nsid=?2",
                        args,
                    )
                }
                for table in ("vec", "keyvec", "keys_due"):
                    self._conn.execute(f"DELETE FROM {table} WHERE prefix=? AND nsid=?", args)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return keys

    def namespace_keys(self, prefix: str, nsid: str) -> set[str]:
        """Keys of a namespace's records and key vectors held here."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key FROM vec WHERE prefix=?1 AND nsid=?2 UNION"
                " SELECT key FROM keyvec WHERE prefix=?1 AND nsid=?2",
                (prefix, nsid),
            ).fetchall()
        return {str(k) for (k,) in rows}

    def vacuum(self) -> None:
        """Rebuild the file from its live rows (`VACUUM`), then empty the WAL."""
        with self._lock:
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def checkpoint(self) -> None:
        """Copy the WAL into the file and truncate it."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
