"""Import a server's legacy memory index file (`memory_index_path`) into `RedisIndex`.

Before the memory index moved to Redis, each process serving a store on a Chroma server
kept it in a SQLite file of its own (`DocMirror` with `docs=False`). `import_memory_index`
brings one such file into the shared index, once:

- memory rows, per namespace in the file's write order (at the file's positions when
  past the namespace's last), with the keyword texts the file holds. A memory the index
  already holds (from a file imported before, or written since) keeps its row;
- access counts add up (each process counted its own searches), the last access is the
  latest;
- history events, skipping those the index holds (same namespace, key, time, event and
  content hash), each memory's events in time order; tombstones likewise;
- triples go to the graph store, as a union with what it holds for each memory (read,
  then replaced: a replica changing the same memory's triples in between loses that
  change). Without a graph store they are left out with a warning, and the file is not
  marked imported, so opening with one imports them;
- keys of interrupted writes (the file's intent log) are recorded as intents, so the
  tier's `recover` repairs them from Chroma (their rows are not to be trusted).

The file is read from a copy and never changed. Its fingerprint (a hash of its memory
rows and history of the prefix, not its path) goes to the Redis set
`P:lt:meta:imported`, so the same file is imported once even by replicas opening at the
same time (they take the Redis lock `P:lt:meta:import-lock`); another replica's file can
be imported after it. An interrupted import can run again: rows, history and triples are
idempotent, and the counts of each namespace are added once (`RedisIndex.add_access`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import MemoryTriples, Namespace, Triple
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex
from langgraph_tiered_memory.store.tiers.sqlite_graph import ns_of_key
from langgraph_tiered_memory.store.tiers.sqlite_history import TOMBSTONE, HistoryRow
from langgraph_tiered_memory.store.tiers.sqlite_stats import MemoryRow

__all__ = ["ImportReport", "import_memory_index"]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.index_import")

LOCK_LEASE = 600.0
"""Seconds the import lock is held at most (a killed importer frees it after this)."""

_MEM = "key, seq, mtype, importance, occurred, created, access_count, last_accessed"
_HISTORY = "nsid, ns, key, at, event, actor, reason, previous_hash, content_hash, content, subjects"


@dataclass
class ImportReport:
    """What `import_memory_index` did."""

    fingerprint: str
    """The file's fingerprint (sha256 of its memory rows and history of the prefix)."""
    before: bool = False
    """The file had been imported before: nothing was done."""
    memories: int = 0
    """Memory rows in the file (those the index held already were kept)."""
    events: int = 0
    """History events added (events the index held already are not counted)."""
    triples: int = 0
    """(triple, supporting memory) pairs given to the graph store (or left out: see
    `triples_skipped`)."""
    triples_skipped: bool = False
    """The file holds triples but no graph store was given: they were left out, and the
    file is not marked imported (the next import with a graph store brings them)."""
    pending: dict[str, list[str]] = field(default_factory=dict)
    """Keys of interrupted writes per namespace id, recorded as intents for `recover`."""
    keys: dict[str, list[str]] = field(default_factory=dict)
    """Keys of the file's memory rows per namespace id (the caller drops those Chroma no
    longer holds: the file may be older than deletes made since)."""


def import_memory_index(
    path: str | Path, *, index: RedisIndex, graph: GraphStore | None
) -> ImportReport:
    """Import the legacy memory index file `path` into `index`, once (module docstring).

    Call it when the tier opens, before anything reads the index and before
    `index.recover`, which then repairs the file's interrupted writes from Chroma.

    Args:
        path: The `memory_index_path` file of one process (read only).
        index: The shared index; the file's rows of `index.prefix` are imported.
        graph: The store's graph store, for the file's triples (None: they are left out,
            with a warning).

    Returns:
        What was imported.

    Raises:
        ConfigurationError: `path` is missing or not a SQLite file.
        redis.exceptions.LockError: another replica held the import lock for
            `LOCK_LEASE` seconds.
    """
    source = Path(path)
    prefix = index.prefix
    with tempfile.TemporaryDirectory(prefix="tiered-memory-import-") as tmp:
        copy = Path(tmp) / "index.sqlite3"
        _copy(source, copy)
        DocMirror(copy).close()  # brings an older keyword layout to the current one
        conn = sqlite3.connect(copy)
        try:
            report = ImportReport(_fingerprint(conn, prefix))
            r = index.client
            done = f"{prefix}:lt:meta:imported"
            with r.lock(f"{prefix}:lt:meta:import-lock", timeout=LOCK_LEASE,
                        blocking_timeout=LOCK_LEASE):  # fmt: skip
                if r.sismember(done, report.fingerprint):
                    report.before = True
                    return report
                _import(conn, index, graph, report)
                if not report.triples_skipped:
                    pipe = r.pipeline(transaction=True)
                    pipe.sadd(done, report.fingerprint)
                    pipe.delete(f"{done}:{report.fingerprint}")
                    pipe.execute()
        finally:
            conn.close()
    logger.info(
        "memory index file %s imported into Redis (prefix %r: %d memories, %d history"
        " events added, %d triples, %d interrupted writes to repair)%s",
        source,
        prefix,
        report.memories,
        report.events,
        report.triples,
        sum(map(len, report.pending.values())),
        "" if report.triples_skipped else "; it is no longer read and can be removed",
    )
    return report


def _copy(source: Path, copy: Path) -> None:
    """A consistent copy of the SQLite file (its WAL included), read without writing it."""
    if not source.is_file():
        raise ConfigurationError(
            f"No memory index file at {str(source)!r} to import: check memory_index_path."
        )
    try:
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
        try:
            dst = sqlite3.connect(copy)
            try:
                src.backup(dst)
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.DatabaseError as e:
        raise ConfigurationError(
            f"{str(source)!r} is not a readable memory index file ({e}): memory_index_path"
            " must name the SQLite file an earlier version kept."
        ) from e


def _rows(conn: sqlite3.Connection, sql: str, *args: Any) -> list[Any]:
    return conn.execute(sql, args).fetchall()


def _fingerprint(conn: sqlite3.Connection, prefix: str) -> str:
    """sha256 of the prefix's memory rows and history events, in a fixed order."""
    digest = hashlib.sha256(prefix.encode())
    queries = (
        f"SELECT nsid, {_MEM} FROM mem WHERE prefix=? ORDER BY nsid, key",
        f"SELECT {_HISTORY}, seq FROM m_history WHERE prefix=? ORDER BY hid",
    )
    for sql in queries:
        for row in conn.execute(sql, (prefix,)):
            digest.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()


def _import(
    conn: sqlite3.Connection,
    index: RedisIndex,
    graph: GraphStore | None,
    report: ImportReport,
) -> None:
    prefix = index.prefix
    once = f"{prefix}:lt:meta:imported:{report.fingerprint}"
    # Keyword entries: rowid = the namespace's number in kw_ns << 32 | seq (doc_mirror).
    for (nsid,) in _rows(conn, "SELECT DISTINCT nsid FROM mem WHERE prefix=?", prefix):
        found = _rows(
            conn,
            "SELECT m.key, m.seq, m.mtype, m.importance, m.occurred, m.created,"
            " m.access_count, m.last_accessed, coalesce(f.text, ''), coalesce(f.context, ''),"
            " coalesce(f.time, '') FROM mem AS m LEFT JOIN kw_ns AS n ON n.prefix=m.prefix"
            " AND n.nsid=m.nsid LEFT JOIN kw AS f ON f.rowid = n.num * 4294967296 + m.seq"
            " WHERE m.prefix=? AND m.nsid=? ORDER BY m.seq",
            prefix,
            nsid,
        )
        rows = {k: MemoryRow(tx, cx, tm, mt, imp, occ, cr) for k, _, mt, imp, occ, cr, _, _,
                tx, cx, tm in found}  # fmt: skip
        index.add_rows(prefix, nsid, rows, {f[0]: f[1] for f in found})
        index.add_access(prefix, nsid, {f[0]: (f[6], f[7]) for f in found}, once=once)
        report.memories += len(rows)
        report.keys[nsid] = list(rows)
    history: dict[str, tuple[Namespace | None, list[HistoryRow]]] = {}
    order = f"SELECT {_HISTORY} FROM m_history WHERE prefix=? ORDER BY nsid, key, seq"
    for nsid, ns, key, *event in _rows(conn, order, prefix):
        labels = None if ns is None else tuple(json.loads(ns))
        history.setdefault(nsid, (labels, []))[1].append(HistoryRow(key, *event))
    for nsid, (labels, events) in history.items():
        report.events += index.history.merge(nsid, None if nsid == TOMBSTONE else labels, events)
    _import_triples(conn, prefix, graph, report)
    for nsid, key in _rows(conn, "SELECT nsid, key FROM pending WHERE prefix=?", prefix):
        report.pending.setdefault(nsid, []).append(key)
    for nsid, keys in report.pending.items():
        index.begin(prefix, nsid, keys)
    (waiting,) = _rows(conn, "SELECT count(*) FROM g_pending WHERE prefix=?", prefix)[0]
    if waiting:
        logger.warning(
            "memory index file: %d interrupted writes had triples pending; they are not"
            " imported (the writes are repaired from Chroma without them)",
            waiting,
        )


def _import_triples(
    conn: sqlite3.Connection, prefix: str, graph: GraphStore | None, report: ImportReport
) -> None:
    """The file's triples, as a union with what the graph holds for each memory."""
    found: dict[Namespace, dict[str, tuple[str | None, set[Triple]]]] = {}
    for ns, key, user, *triple in _rows(
        conn,
        "SELECT t.ns, s.key, t.user, t.subject, t.relation, t.object FROM g_support AS s"
        " JOIN g_triple AS t ON t.tid = s.tid WHERE s.prefix=? ORDER BY t.ns, s.key",
        prefix,
    ):
        memory = found.setdefault(ns_of_key(ns), {}).setdefault(key, (user, set()))
        memory[1].add(Triple(*triple))
        report.triples += 1
    if found and graph is None:
        report.triples_skipped = True
        logger.warning(
            "memory index file: %d triples not imported: the store has no graph store;"
            " open it with graph={'backend': 'falkordb', ...} (the graph= option) and"
            " import again",
            report.triples,
        )
        return
    for ns, memories in found.items():
        assert graph is not None
        held = graph.memory_triples(ns, list(memories))
        graph.replace(
            [
                MemoryTriples(ns, key, tuple(sorted(triples | set(held.get(key, ())))), user)
                for key, (user, triples) in memories.items()
            ]
        )
