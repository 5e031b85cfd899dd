"""After `erase_user`, the long tier's SQLite files are rebuilt from their live rows.

`secure_delete` zeroes freed space, but SQLite can keep the first bytes of a deleted
cell (namespace id and key) in a live page; `VACUUM` rewrites every page, leaving no
free page and no freed cell. The test reads the files' free-page counts after erasing
a user who held most of their rows.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy import erase_user
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from tests.fakes import HashingEmbeddings


def _free_pages(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    finally:
        conn.close()


def test_erase_rebuilds_the_sqlite_files(tmp_path: Path) -> None:
    index = {"dims": 64, "embed": HashingEmbeddings(64), "fields": ["content"]}
    mine = ("users", "cmp-ana", "notes")
    with TieredMemoryStore(
        chroma_path=str(tmp_path), tiers={"default": "long"}, index=index
    ) as store:
        for i in range(150):
            store.put(mine, f"k{i}", {"content": f"note {i} about the harbour " * 8})
        store.put(("users", "cmp-bo"), "k", {"content": "stays"})
        erase_user(store, "cmp-ana")
        files = sorted(tmp_path.glob("tiered-memory-*.sqlite3"))
        assert files  # the document copy and the vector copy
        assert {f.name: _free_pages(f) for f in files} == {f.name: 0 for f in files}
        assert store.get(("users", "cmp-bo"), "k") is not None
    for f in files:
        assert namespace_id(mine).encode() not in f.read_bytes()
