"""Chroma's own files after an erasure: its log, its SQLite file and its HNSW files.

Deleting records through Chroma's API leaves traces Chroma itself keeps (measured with
Chroma 1.5.9):

- its write-ahead log (`embeddings_queue` in `chroma.sqlite3`) keeps each collection's
  writes (ids, vectors, metadata, which holds our documents) until `sync_threshold`
  (1,000) more were applied; `flush_log` pushes them out through the API (a server's
  log too), `scrub_chroma_file` blanks what an embedded Chroma still holds;
- `chroma.sqlite3` keeps deleted rows in its free pages until `VACUUM`;
- a deleted collection's HNSW directory stays on disk (`drop_orphan_segments`);
- HNSW files keep deleted records' vectors, and may hold uninitialised heap memory of the
  process in their unused capacity, and, for an index that does not normalise its
  vectors (any space but cosine, such as the registry's l2), in every entry of
  `length.bin` (`scrub_hnsw_files`).

The functions work on an embedded Chroma's directory while its client is open (the
tier's erase calls them) and on a stopped server's directory (`scrub_chroma_dir`).
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import re
import shutil
import sqlite3
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_tiered_memory.errors import ChromaDirectoryInUseError, ConfigurationError
from langgraph_tiered_memory.store.tiers._dirlock import LOCK_FILE, lock_directory
from langgraph_tiered_memory.store.tiers.chroma_layout import MIN_BUCKET_NEIGHBORS

__all__ = [
    "CHROMA_FILE",
    "drop_orphan_segments",
    "flush_log",
    "processes_holding",
    "scrub_chroma_dir",
    "scrub_chroma_file",
    "scrub_hnsw_files",
    "segment_spaces",
]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.chroma_scrub")

CHROMA_FILE = "chroma.sqlite3"
"""Embedded Chroma's database, inside its persist directory."""

_WRITES = (0, 1, 2)  # Chroma log operations that carry data: add, update, upsert
_CHUNK = 500
_UUID = re.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SYNC_THRESHOLD = 1000  # Chroma's default `hnsw.sync_threshold`
_DELETE_MARK = 0x01  # hnswlib: bit of the third byte of an element's level-0 link list
_PLACEHOLDERS = 100  # records a log flush rewrites (kept in each flushed collection)


def scrub_chroma_file(directory: str | Path, topics: Mapping[str, Iterable[str]]) -> int:
    """Blank the log entries of erased records in an embedded Chroma, then vacuum the file.

    Chroma keeps the recent writes of each collection in `embeddings_queue` (id,
    vector and metadata, which holds our documents) until its HNSW index is persisted.
    For each record of `topics` (collection id -> record ids; an id ending in ``:``
    stands for every id starting with it) the entries that carry data keep their place
    in the log, for Chroma to replay in order, but lose their metadata and get a neutral
    vector. `VACUUM` then rewrites the file, so deleted rows (documents, collection
    metadata naming the namespace) leave no bytes in its free pages.

    Returns:
        How many log entries were blanked.
    """
    path = Path(directory) / CHROMA_FILE
    if not path.exists():
        return 0
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        blanked = 0
        if "embeddings_queue" in tables and "collections" in tables:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for collection, ids in topics.items():
                    blanked += _blank_log(conn, collection, ids)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        conn.execute("VACUUM")
    finally:
        conn.close()
    return blanked


def scrub_hnsw_files(directory: str | Path) -> int:
    """Zero what the HNSW files of an embedded Chroma keep of no live record.

    Two things (the header, `header.bin`, gives the hnswlib layout):

    - unused capacity: Chroma 1.5 may write an index's whole capacity to
      `data_level0.bin` (one slot per element) and `length.bin` (4 bytes per element),
      and the entries past the element count hold whatever the process's heap held
      when the buffer was allocated: strings such as collection metadata or records
      of any user, erased ones included. Those bytes are set to zero;
    - deleted elements: a deleted record keeps its slot, vector included, until the
      index is rebuilt. Its vector is set to zero (distance 1 to every query, so it
      still only serves as a waypoint of the graph, as before);
    - `length.bin` of an index that does not normalise (a space other than cosine, read
      from `chroma.sqlite3`): Chroma keeps each vector's norm there only when it
      normalises, and otherwise writes the buffer uninitialised, heap bytes in every
      entry. Nothing reads it back, so the whole file is zeroed.

    Files of another layout are left alone (logged). Also for the data directory of a
    *stopped* Chroma server (`scrub_chroma_dir`): a client cannot reach a server's files.

    Returns:
        How many files were changed.
    """
    changed = 0
    spaces = segment_spaces(directory)
    for header in sorted(Path(directory).glob("*/header.bin")):
        raw = header.read_bytes()
        if len(raw) < 52:
            continue
        level0, capacity, count, slot, label_at, data_at = struct.unpack_from("<6Q", raw, 4)
        layout_ok = 0 <= level0 < data_at < label_at < slot and count <= capacity
        for name, width in (("data_level0.bin", slot), ("length.bin", 4)):
            path = header.parent / name
            if not path.exists():
                continue
            size = path.stat().st_size
            # Only the first `count` entries are ever read back; whatever follows them
            # (the whole capacity, or a size from before a resize) is scrubbed.
            if not layout_ok or size < count * width:
                logger.warning("HNSW file %s has an unknown layout: not scrubbed", path)
                continue
            space = spaces.get(header.parent.name)
            used = 0 if name == "length.bin" and space not in (None, "cosine") else count * width
            done = _zero_tail(path, used) if size > used else 0
            if name == "data_level0.bin" and count:
                done |= _zero_deleted(path, count, slot, level0, data_at, label_at)
            changed += done
    return changed


def segment_spaces(directory: str | Path) -> dict[str, str]:
    """The vector space of each HNSW segment of an embedded Chroma, by segment id.

    Read from `chroma.sqlite3` (read-only): the collection's schema, else its legacy
    `hnsw:space` metadata, else Chroma's default, l2. Empty when the file is missing or
    has another layout (then no segment counts as unnormalised).
    """
    path = Path(directory) / CHROMA_FILE
    if not path.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as e:
        logger.warning("cannot read %s for the HNSW spaces: %s", path, e)
        return {}
    try:
        rows = conn.execute(
            "SELECT s.id, c.schema_str, (SELECT str_value FROM collection_metadata m"
            " WHERE m.collection_id = c.id AND m.key = 'hnsw:space')"
            " FROM segments s JOIN collections c ON s.collection = c.id"
            " WHERE s.scope = 'VECTOR'"
        ).fetchall()
    except sqlite3.Error as e:
        logger.warning("%s has an unknown layout (%s): HNSW spaces not read", path, e)
        return {}
    finally:
        conn.close()
    return {str(seg): _space(schema, legacy) for seg, schema, legacy in rows}


def _space(schema: str | None, legacy: str | None) -> str:
    """A collection's vector space from its schema JSON, else its legacy metadata."""
    try:
        keys = json.loads(schema or "{}").get("keys", {})
        space = keys["#embedding"]["float_list"]["vector_index"]["config"]["space"]
        if isinstance(space, str):
            return space
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    return legacy or "l2"


def _zero_deleted(
    path: Path, count: int, slot: int, level0: int, data_at: int, label_at: int
) -> int:
    """Zero the vectors of deleted elements (hnswlib's delete mark); 1 if any changed."""
    blank = bytes(label_at - data_at)
    changed = 0
    with path.open("r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        for i in range(count):
            at = i * slot
            if m[at + level0 + 2] & _DELETE_MARK and m[at + data_at : at + label_at] != blank:
                m[at + data_at : at + label_at] = blank
                changed = 1
        if changed:
            m.flush()
    return changed


def drop_orphan_segments(directory: str | Path) -> int:
    """Delete the HNSW directories of collections Chroma no longer has.

    Chroma 1.5 deletes a collection's rows but leaves its segment directory (its HNSW
    files, vectors included) on disk. A directory named by a UUID that holds
    `header.bin` and is no segment of `chroma.sqlite3` is such a leftover.

    Returns:
        How many directories were deleted.
    """
    root = Path(directory)
    path = root / CHROMA_FILE
    if not path.exists():
        return 0
    conn = sqlite3.connect(path, timeout=30.0)
    try:
        live = {str(i) for (i,) in conn.execute("SELECT id FROM segments")}
    finally:
        conn.close()
    dropped = 0
    for header in root.glob("*/header.bin"):
        seg = header.parent
        if seg.name in live or not _UUID.fullmatch(seg.name):
            continue
        conn = sqlite3.connect(path, timeout=30.0)
        try:  # made since the first read (a collection created meanwhile)?
            made = conn.execute("SELECT 1 FROM segments WHERE id=?", (seg.name,)).fetchone()
        finally:
            conn.close()
        if made is not None:
            continue
        shutil.rmtree(seg)
        dropped += 1
    return dropped


def processes_holding(directory: str | Path) -> list[int] | None:
    """Ids of the processes that have a file of `directory` open, sorted.

    Read from ``/proc`` (Linux): a running Chroma server or embedded client keeps
    `chroma.sqlite3` open. Processes this user may not inspect are not seen. None
    where there is no ``/proc`` (the check cannot be made).
    """
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    root = os.path.realpath(directory)
    inside = root.rstrip(os.sep) + os.sep
    holders = []
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            fds = list((pid_dir / "fd").iterdir())
        except OSError:  # another user's process, or one that just ended
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target == root or target.startswith(inside):
                holders.append(int(pid_dir.name))
                break
    return sorted(holders)


def scrub_chroma_dir(directory: str | Path) -> dict[str, int]:
    """Scrub the data directory of a Chroma no process has open, after erasures.

    For a Chroma server, whose files its clients cannot reach: stop it, run this on
    its `--path` (or ``tiered-memory scrub-chroma --path DIR``), start it again. The
    erasure already purged the erased records from the server's log (through the
    API); this vacuums `chroma.sqlite3` (deleted rows leave its free pages), deletes
    the HNSW files of deleted collections, and zeroes the unused capacity of the
    others and the vectors of their deleted records.

    Returns:
        ``{"orphan_segments": n, "hnsw_files": n}``: HNSW directories deleted and HNSW
        files changed.

    Raises:
        ConfigurationError: `directory` does not exist or holds no `chroma.sqlite3`.
        ChromaDirectoryInUseError: A process has a file of it open (a running server
            or store; see `processes_holding`), or a store's lock on it is held.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigurationError(f"{str(root)!r} is not a directory: give a Chroma --path.")
    if not (root / CHROMA_FILE).is_file():
        raise ConfigurationError(
            f"{str(root)!r} holds no {CHROMA_FILE}: not a Chroma data directory (give the"
            " directory a Chroma server was started with, `chroma run --path DIR`)."
        )
    holders = processes_holding(root)
    if holders:
        raise ChromaDirectoryInUseError(
            f"The Chroma directory {str(root)!r} is open in process(es)"
            f" {', '.join(map(str, holders))}: stop the Chroma server (or close the store)"
            " first; scrubbing files a running Chroma holds would corrupt them."
        )
    lock = lock_directory(str(root)) if (root / LOCK_FILE).exists() else None
    try:
        scrub_chroma_file(root, {})
        dropped = drop_orphan_segments(root)
        changed = scrub_hnsw_files(root)
    finally:
        if lock is not None:
            lock.release()
    logger.info(
        "scrubbed Chroma directory: %d orphan HNSW directories deleted, %d HNSW files changed",
        dropped,
        changed,
    )
    return {"orphan_segments": dropped, "hnsw_files": changed}


def _zero_tail(path: Path, used: int) -> int:
    """Set every byte of `path` past `used` to zero; 1 if that changed the file."""
    with path.open("r+b") as f:
        f.seek(used)
        tail = f.read()
        if tail.count(0) == len(tail):
            return 0
        f.seek(used)
        f.write(bytes(len(tail)))
    return 1


def _blank_log(conn: sqlite3.Connection, collection: str, ids: Iterable[str]) -> int:
    """Blank the data-carrying log entries of `ids` in the collection's topic."""
    topic = f"%/{collection}"
    exact = [i for i in ids if not i.endswith(":")]
    prefixes = sorted({i for i in ids if i.endswith(":")})
    blank = (
        "UPDATE embeddings_queue SET metadata=NULL, vector=CASE WHEN vector IS NULL OR"
        " length(vector) < 4 OR encoding IS NOT 'FLOAT32' THEN vector ELSE"
        " zeroblob(length(vector) - 4) || x'0000803f' END WHERE topic LIKE ? AND operation IN"
        f" ({','.join(map(str, _WRITES))})"
    )
    n = 0
    for start in range(0, len(exact), _CHUNK):
        chunk = exact[start : start + _CHUNK]
        n += conn.execute(
            f"{blank} AND id IN ({','.join('?' * len(chunk))})", (topic, *chunk)
        ).rowcount
    for prefix in prefixes:
        n += conn.execute(
            f"{blank} AND id >= ? AND id < ?", (topic, prefix, prefix[:-1] + ";")
        ).rowcount
    return n


def flush_log(col: Any, width: int, step: int) -> None:
    """Make Chroma persist a collection's HNSW index and purge its log.

    Chroma keeps a collection's writes in its log until `sync_threshold` more have
    been applied, then persists the index and purges the log up to there. Rewriting
    `_PLACEHOLDERS` placeholder records often enough pushes the erased records'
    entries, ids included, out of the log (~0.4 s for 1,000 writes embedded). The
    placeholders stay, so each flush reuses their HNSW slots instead of adding
    deleted ones; they carry a neutral vector and metadata `tm_flush` only, which
    every reader of buckets and registry skips. Skipped for buckets whose HNSW graph
    is small enough to crash Chroma (`MIN_BUCKET_NEIGHBORS`).
    """
    hnsw = (getattr(col, "configuration", None) or {}).get("hnsw") or {}
    neighbors = hnsw.get("max_neighbors")
    if isinstance(neighbors, int) and neighbors < MIN_BUCKET_NEIGHBORS:
        logger.warning(
            "log of %s not flushed: its HNSW graph (max_neighbors=%d) risks a Chroma crash",
            col.name,
            neighbors,
        )
        return
    threshold = int(hnsw.get("sync_threshold") or _SYNC_THRESHOLD)
    n = min(_PLACEHOLDERS, step)
    ids = [f"tm-flush-{i}" for i in range(n)]
    vectors = np.zeros((n, width), dtype=np.float32)
    vectors[:, -1] = 1.0
    col.upsert(ids=ids, embeddings=vectors, metadatas=[{"tm_flush": 1}] * n)
    for _ in range(-(-threshold // n)):
        col.update(ids=ids, embeddings=vectors)
