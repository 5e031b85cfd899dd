"""An erase that finds nothing left (a re-run after a crash) still scrubs the HNSW files.

A run that stops midway may have let Chroma persist its indexes, with whatever heap
bytes it writes into their unused capacity, after that run's last scrub; the re-run
then finds the user's namespaces already empty, and must scrub all the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy import erase_user
from langgraph_tiered_memory.privacy.erasure import UserNamespaces
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

JUNK = b"junk-left-in-the-heap"


def _store(path: Path) -> TieredMemoryStore:
    return TieredMemoryStore(
        chroma_path=str(path),
        key_prefix="rr",
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=Clock(),
    )


def _tails(path: Path) -> list[Path]:
    """Each HNSW file with junk appended past its elements (as Chroma may persist its
    capacity, or a size from before a resize, with heap bytes in the spare part)."""
    out = []
    for name in ("length.bin", "data_level0.bin"):
        for file in path.glob(f"*/{name}"):
            with file.open("ab") as f:
                f.write(JUNK)
            out.append(file)
    return out


@pytest.mark.parametrize("how", ["namespaces", "keys"])
def test_a_rerun_that_finds_nothing_still_scrubs_the_index_files(tmp_path: Path, how: str) -> None:
    store = _store(tmp_path)
    try:
        for i in range(12):
            store.put(("users", "u1", "notes"), f"k{i}", {"content": f"note {i} of u1"})
            store.put(("users", "u2", "notes"), f"k{i}", {"content": f"note {i} of u2"})
        erase_user(store, "u1")
    finally:
        store.close()
    tails = _tails(tmp_path)  # as if Chroma persisted heap bytes after the last scrub
    assert tails, "no HNSW file with spare capacity to check"
    store = _store(tmp_path)
    try:
        tier = store.tiers["long"]
        if how == "namespaces":
            found = tier.user_namespaces(UserNamespaces("u1"))  # type: ignore[attr-defined]
            assert found == []
            tier.erase_namespaces([("users", "u1", "notes")])  # type: ignore[attr-defined]
        else:
            tier.erase_keys({("users", "u1", "notes"): ["k1"]})  # type: ignore[attr-defined]
        assert [i.key for i in store.search(("users", "u2"), limit=20)]  # u2 intact
    finally:
        store.close()
    assert all(JUNK not in t.read_bytes() for t in tails)
