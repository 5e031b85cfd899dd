"""Document copy: the primary-record metadata of long-term items, for fast `get`.

Chroma's lookup by id costs about a millisecond on a 100k-record collection; a SQLite
primary-key lookup costs a few microseconds. Each row holds the Chroma metadata of one
item's primary record (`_d`: the document, `_e`: the expiry when it has a TTL).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph_tiered_memory.store._common import loads
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, select_keys

__all__ = ["DocCopy"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL, meta TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
"""


class DocCopy:
    """The `docs` table, keyed by (prefix, namespace id, key).

    Every method runs with the file's lock held by the caller (`DocMirror`).
    """

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._c = db.conn

    def get(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored metadata of the given keys that exist."""
        rows = select_keys(self._c, "SELECT key, meta FROM docs", prefix, nsid, keys)
        return {k: loads(m) for k, m in rows}

    def has_docs(self, prefix: str, nsid: str, live_at: float | None) -> bool:
        """Whether the namespace holds any item (with `live_at`: one still live then)."""
        sql = "SELECT 1 FROM docs WHERE prefix=? AND nsid=?"
        args: tuple[Any, ...] = (prefix, nsid)
        if live_at is not None:
            sql += " AND coalesce(json_extract(meta, '$._e') > ?, 1)"
            args = (*args, live_at)
        return self._c.execute(sql + " LIMIT 1", args).fetchone() is not None

    def put(self, prefix: str, nsid: str, metas: Mapping[str, Mapping[str, Any]]) -> None:
        """Store (or replace) the metadata of written items."""
        self._c.executemany(
            "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)",
            [(prefix, nsid, k, json.dumps(m)) for k, m in metas.items()],
        )

    def delete(self, prefix: str, nsid: str, keys: Iterable[str]) -> None:
        """Drop the rows of deleted items."""
        self._c.executemany(
            "DELETE FROM docs WHERE prefix=? AND nsid=? AND key=?",
            [(prefix, nsid, k) for k in keys],
        )

    def set_expiries(self, prefix: str, nsid: str, expiries: Mapping[str, float]) -> None:
        """Record new expiry times (`_e`) of refreshed items."""
        self._c.executemany(
            "UPDATE docs SET meta=json_set(meta, '$._e', ?) WHERE prefix=? AND nsid=? AND key=?",
            [(e, prefix, nsid, k) for k, e in expiries.items()],
        )

    def erase(self, prefix: str, nsid: str) -> list[str]:
        """Drop every row of a namespace; the keys they held."""
        keys = [
            str(k)
            for (k,) in self._c.execute(
                "SELECT key FROM docs WHERE prefix=? AND nsid=?", (prefix, nsid)
            )
        ]
        self._c.execute("DELETE FROM docs WHERE prefix=? AND nsid=?", (prefix, nsid))
        return keys
