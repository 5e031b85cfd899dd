"""Memory history: the `m_history` table of the long tier's SQLite file.

One row per event of a long-term memory (see `langgraph_tiered_memory.privacy.history`). Rows
are appended by `DocMirror.commit`, in the transaction that applies the memory's own
change, so a memory and its history never disagree: a write that does not reach the
file leaves no event, and no committed write lacks one.

An erasure turns a memory's rows into tombstones: the namespace id becomes empty, the
labels, actor, reason, content and hashes are cleared, the event becomes ``"erased"``
and the key becomes a hash of namespace labels and key (`erasure.id_hash`, given by the
caller), so `memory_history` of the same (namespace, key) still finds them while the
file names neither.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, marks

__all__ = [
    "TOMBSTONE",
    "HistoryRow",
    "HistoryTable",
    "RecoveredHistory",
    "Selection",
    "StoredEvent",
]

TOMBSTONE = ""
"""The namespace id of tombstones (no namespace is named so)."""

_CHUNK = 500
"""Most namespace ids bound in one `IN (...)` list."""


class HistoryRow(NamedTuple):
    """One event to append (its position, `seq`, is given by the table)."""

    key: str
    at: float
    event: str
    actor: str | None
    reason: str | None
    previous_hash: str | None
    content_hash: str | None
    content: str | None
    subjects: str | None = None
    """Hashes of the users and sessions the content came from (its provenance), space
    separated, so an erasure finds a shared memory's history after it is gone."""


RecoveredHistory = Callable[
    [str, list[str], dict[str, dict[str, Any]], dict[str, dict[str, Any]]],
    "tuple[Namespace, Sequence[HistoryRow]] | None",
]
"""Plans the events of keys repaired after an interrupted write: (namespace id, keys,
Chroma's primary records, the document copy's records before) -> (namespace, events)."""


class Selection(NamedTuple):
    """Which memories' events: whole namespaces, single memories, provenance subjects."""

    nsids: Sequence[str] = ()
    pairs: Sequence[tuple[str, str]] = ()
    """(namespace id, key) of single memories."""
    subjects: Sequence[str] = ()
    """Every memory with an event whose `subjects` holds one of these."""


class StoredEvent(NamedTuple):
    """One event as stored: its memory, its position and the event itself."""

    namespace: Namespace | None
    """None on a tombstone."""
    key: str
    """The memory's key (on a tombstone: the hash of namespace labels and key)."""
    seq: int
    at: float
    event: str
    actor: str | None
    reason: str | None
    previous_hash: str | None
    content_hash: str | None
    content: str | None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS m_history (
    hid INTEGER PRIMARY KEY,
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, ns TEXT, key TEXT NOT NULL,
    seq INTEGER NOT NULL, at REAL NOT NULL, event TEXT NOT NULL,
    actor TEXT, reason TEXT, previous_hash TEXT, content_hash TEXT, content TEXT,
    subjects TEXT
);
CREATE INDEX IF NOT EXISTS m_history_key ON m_history (prefix, nsid, key, seq);
"""

_COLUMNS = "ns, key, seq, at, event, actor, reason, previous_hash, content_hash, content"


def _event(row: Sequence[object]) -> StoredEvent:
    ns = None if row[0] is None else tuple(json.loads(str(row[0])))
    return StoredEvent(ns, *row[1:])  # type: ignore[arg-type]


class HistoryTable:
    """The `m_history` table.

    `append` runs inside the caller's transaction (`DocMirror.commit` holds the lock);
    the other methods take the file's lock themselves.
    """

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._db = db

    # ------------------------------------------------------------------ writes
    def append(self, prefix: str, nsid: str, ns: Namespace, rows: Sequence[HistoryRow]) -> None:
        """Append events of one namespace's memories, each numbered after its key's last.

        One statement for the whole batch (`executemany`); the position is computed by
        SQLite from the key's rows (indexed), so nothing is read back first.
        """
        if not rows:
            return
        labels = json.dumps(list(ns), ensure_ascii=False)
        self._db.conn.executemany(
            "INSERT INTO m_history (prefix, nsid, ns, key, seq, at, event, actor, reason,"
            " previous_hash, content_hash, content, subjects) VALUES (?, ?, ?, ?, (SELECT"
            " coalesce(max(seq), 0) + 1 FROM m_history WHERE prefix=? AND nsid=? AND key=?),"
            " ?, ?, ?, ?, ?, ?, ?, ?)",
            [(prefix, nsid, labels, r.key, prefix, nsid, r.key, *r[1:]) for r in rows],
        )

    def tombstone(
        self,
        prefix: str,
        selection: Selection,
        hashed: Callable[[Namespace, str], str],
        *,
        dry_run: bool = False,
    ) -> list[tuple[Namespace, str]]:
        """Make every selected event content-free; the (namespace, key) of each.

        `hashed` gives the tombstone key of a (namespace, key). One transaction: a crash
        leaves either every row or none rewritten, and a rerun finds nothing left
        (tombstones have no namespace id).
        """
        with self._db.transaction(immediate=not dry_run) as conn:
            found = self._find(conn, prefix, selection)
            if not dry_run:
                conn.executemany(
                    "UPDATE m_history SET nsid=?, ns=NULL, key=?, event='erased', actor=NULL,"
                    " reason=NULL, previous_hash=NULL, content_hash=NULL, content=NULL,"
                    " subjects=NULL WHERE hid=?",
                    [(TOMBSTONE, hashed(ns, key), hid) for hid, ns, key in found],
                )
        if found and not dry_run:
            # The WAL still holds the pages as they were; freed space is zeroed
            # (`secure_delete`), and the checkpoint empties the WAL.
            self._db.checkpoint()
        return [(ns, key) for _, ns, key in found]

    @staticmethod
    def _find(
        conn: sqlite3.Connection, prefix: str, selection: Selection
    ) -> list[tuple[int, Namespace, str]]:
        """(row id, namespace, key) of the selected events, in row order (lock held)."""
        pairs = dict.fromkeys(selection.pairs)
        for subject in dict.fromkeys(selection.subjects):
            for nsid, key in conn.execute(
                "SELECT DISTINCT nsid, key FROM m_history WHERE prefix=? AND nsid<>? AND"
                " instr(subjects, ?) > 0",
                (prefix, TOMBSTONE, subject),
            ).fetchall():
                pairs[(str(nsid), str(key))] = None
        rows: list[Any] = []
        nsids = [n for n in dict.fromkeys(selection.nsids) if n != TOMBSTONE]
        for start in range(0, len(nsids), _CHUNK):
            chunk = nsids[start : start + _CHUNK]
            rows += conn.execute(
                f"SELECT hid, ns, key FROM m_history WHERE prefix=? AND nsid IN"
                f" ({marks(len(chunk))})",
                (prefix, *chunk),
            ).fetchall()
        for nsid, key in pairs:
            if nsid != TOMBSTONE:
                rows += conn.execute(
                    "SELECT hid, ns, key FROM m_history WHERE prefix=? AND nsid=? AND key=?",
                    (prefix, nsid, key),
                ).fetchall()
        found = {int(hid): (tuple(json.loads(ns)), str(key)) for hid, ns, key in rows}
        return [(hid, *found[hid]) for hid in sorted(found)]

    # ------------------------------------------------------------------ reads
    def events(self, prefix: str, nsid: str, key: str, tombstone: str) -> list[StoredEvent]:
        """Events of one memory: its tombstones (key `tombstone`) first, then its own."""
        with self._db.locked() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM m_history WHERE prefix=? AND nsid=? AND key=?"
                " ORDER BY seq",
                (prefix, TOMBSTONE, tombstone),
            ).fetchall()
            rows += conn.execute(
                f"SELECT {_COLUMNS} FROM m_history WHERE prefix=? AND nsid=? AND key=?"
                " ORDER BY seq",
                (prefix, nsid, key),
            ).fetchall()
        return [_event(r) for r in rows]

    def select(self, prefix: str, selection: Selection) -> list[StoredEvent]:
        """The selected events, by namespace id, key and position."""
        with self._db.locked() as conn:
            hids = [hid for hid, _, _ in self._find(conn, prefix, selection)]
            rows: list[Any] = []
            for start in range(0, len(hids), _CHUNK):
                chunk = hids[start : start + _CHUNK]
                rows += conn.execute(
                    f"SELECT nsid, {_COLUMNS} FROM m_history WHERE hid IN ({marks(len(chunk))})",
                    chunk,
                ).fetchall()
        rows.sort(key=lambda r: (r[0], r[2], r[3]))
        return [_event(r[1:]) for r in rows]

    def last(
        self, prefix: str, nsid: str, keys: Sequence[str]
    ) -> dict[str, tuple[str, str | None]]:
        """(event, content hash) of the last event of each of `keys` that has one."""
        out: dict[str, tuple[str, str | None]] = {}
        with self._db.locked() as conn:
            for key in keys:
                row = conn.execute(
                    "SELECT event, content_hash FROM m_history WHERE prefix=? AND nsid=? AND"
                    " key=? ORDER BY seq DESC LIMIT 1",
                    (prefix, nsid, key),
                ).fetchone()
                if row is not None:
                    out[key] = (str(row[0]), row[1])
        return out

    def namespace_of(self, prefix: str, nsid: str) -> Namespace | None:
        """The namespace of a namespace id that has events (None: it has none)."""
        with self._db.locked() as conn:
            row = conn.execute(
                "SELECT ns FROM m_history WHERE prefix=? AND nsid=? LIMIT 1", (prefix, nsid)
            ).fetchone()
        return None if row is None else tuple(json.loads(row[0]))

    def namespaces(self, prefix: str) -> list[Namespace]:
        """Every namespace with events of `prefix` (memories deleted since included)."""
        with self._db.locked() as conn:
            rows = conn.execute(
                "SELECT DISTINCT ns FROM m_history WHERE prefix=? AND nsid<>?",
                (prefix, TOMBSTONE),
            ).fetchall()
        return sorted(tuple(json.loads(ns)) for (ns,) in rows)
