"""HNSW `length.bin` of indexes that do not normalise: zeroed by erase, the store still works.

Chroma stores each vector's norm in `length.bin` only for a cosine index; for any other
space (l2: the registry collection of a store an earlier version wrote, or an app's own
collection in the directory) it writes the buffer uninitialised, so every entry may hold
heap bytes of the writing process, erased users' words included.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy import erase_user
from langgraph_tiered_memory.store.tiers.chroma_scrub import scrub_hnsw_files, segment_spaces
from tests.fakes import HashingEmbeddings

DIMS = 32


def _store(path: Path) -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_path=str(path),
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    )
    store.setup()
    return store


def _lengths(path: Path) -> dict[str, tuple[str, bytes]]:
    spaces = segment_spaces(path)
    return {
        seg.parent.name: (spaces[seg.parent.name], seg.read_bytes())
        for seg in path.glob("*/length.bin")
    }


def test_unnormalised_lengths_are_zeroed_and_cosine_norms_kept(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    store = _store(path)
    app: Any = store.tiers["long"].client.create_collection("app-l2", embedding_function=None)
    app.upsert(ids=[f"r{i}" for i in range(150)], embeddings=[[float(i), 1.0] for i in range(150)])
    for user in ("a", "b"):
        for i in range(150):  # past Chroma's batch size: the indexes are persisted
            store.put(("users", user), f"k{i}", {"content": f"{user} likes tea number {i}"})
    erase_user(store, "a")
    store.close()

    lengths = _lengths(path)
    assert {space for space, _ in lengths.values()} >= {"l2", "cosine"}  # the app's, buckets
    for space, raw in lengths.values():
        if space == "cosine":
            norms = struct.unpack(f"<{len(raw) // 4}f", raw)
            assert norms and all(abs(n - 1.0) < 1e-3 for n in norms if n)  # kept
        else:
            assert raw.count(0) == len(raw)  # nothing but zeros

    again = _store(path)  # the registry and the buckets still work after the scrub
    try:
        assert again.get(("users", "b"), "k7") is not None
        assert again.get(("users", "a"), "k7") is None
        hits = again.search(("users", "b"), query="tea number 7", limit=3)
        assert hits and all(h.namespace == ("users", "b") for h in hits)
        again.put(("users", "c"), "k0", {"content": "c likes coffee"})
        assert again.get(("users", "c"), "k0") is not None
    finally:
        again.close()


def test_a_directory_without_chroma_sqlite_has_no_known_spaces(tmp_path: Path) -> None:
    assert segment_spaces(tmp_path) == {}
    (tmp_path / "chroma.sqlite3").write_bytes(b"not a database")
    assert segment_spaces(tmp_path) == {}
    assert scrub_hnsw_files(tmp_path) == 0
