"""The SQLite copy of long-term documents: used for gets, repaired after a crash, refilled."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from langgraph_tiered_memory import ConfigurationError, TieredMemoryStore
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.doc_mirror import MIRROR_FILE, DocMirror, MemoryRow
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings


def _open(path: Path, prefix: str) -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    store.setup()
    return store


def test_gets_are_answered_from_the_mirror(tmp_path: Path, key_prefix: str) -> None:
    store = _open(tmp_path, key_prefix)
    store.put(("a",), "k", {"text": "hello"})
    tier = store.tiers["long"]
    assert isinstance(tier.index, DocMirror) and (tmp_path / MIRROR_FILE).exists()  # type: ignore[attr-defined]
    col = tier._collection(("a",), create=False)  # type: ignore[attr-defined]
    calls: list[object] = []
    original = col.get
    col.get = lambda *a, **k: calls.append(1) or original(*a, **k)
    assert store.get(("a",), "k").value == {"text": "hello"}  # type: ignore[union-attr]
    assert store.get(("a",), "missing") is None
    assert calls == []
    store.close()


def test_interrupted_writes_are_repaired_from_chroma(tmp_path: Path, key_prefix: str) -> None:
    store = _open(tmp_path, key_prefix)
    ns = ("users", "u1")
    store.put(ns, "updated", {"text": "old"})
    store.put(ns, "deleted", {"text": "doomed"})
    tier = store.tiers["long"]
    mirror = tier.index  # type: ignore[attr-defined]
    col = tier._collection(ns, create=False)  # type: ignore[attr-defined]
    nsid = namespace_id(ns)
    # A crash after step 1 (keys recorded) and step 2 (Chroma written), before step 3.
    mirror.begin(key_prefix, nsid, ["updated", "deleted"])
    meta = col.get(ids=["p:updated"], include=["metadatas"])["metadatas"][0]
    doc = json.loads(meta["_d"])
    doc["value"] = {"text": "new"}
    col.update(ids=["p:updated"], metadatas=[{"_d": json.dumps(doc)}])
    col.delete(ids=["p:deleted"])
    assert store.get(ns, "updated").value == {"text": "old"}  # type: ignore[union-attr]
    store.close()

    reopened = _open(tmp_path, key_prefix)
    assert reopened.get(ns, "updated").value == {"text": "new"}  # type: ignore[union-attr]
    assert reopened.get(ns, "deleted") is None
    hits = reopened.search(ns, query="new", limit=5)
    assert {h.key: h.value for h in hits} == {"updated": {"text": "new"}}
    reopened.close()


def test_a_missing_sqlite_file_is_refused_as_it_holds_the_registry(
    tmp_path: Path, key_prefix: str
) -> None:
    store = _open(tmp_path, key_prefix)
    for i in range(1200):  # more than one page
        store.put(("bulk", str(i % 3)), f"k{i}", {"text": f"item {i}"}, index=False)
    store.put(("ttl",), "t", {"text": "x"}, ttl=30)
    store.close()
    saved = tmp_path.parent / "saved"
    saved.mkdir()
    for suffix in ("", "-wal", "-shm"):
        if (tmp_path / (MIRROR_FILE + suffix)).exists():
            (tmp_path / (MIRROR_FILE + suffix)).rename(saved / (MIRROR_FILE + suffix))

    # The namespaces of bucketed items are named nowhere else: no silently empty store.
    broken = TieredMemoryStore(
        chroma_path=str(tmp_path), key_prefix=key_prefix, tiers={"default": "long"}
    )
    with pytest.raises(ConfigurationError, match=rf"{MIRROR_FILE}, which lacks namespaces"):
        broken.setup()
    broken.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / (MIRROR_FILE + suffix)).unlink(missing_ok=True)
        if (saved / (MIRROR_FILE + suffix)).exists():
            (saved / (MIRROR_FILE + suffix)).rename(tmp_path / (MIRROR_FILE + suffix))
    reopened = _open(tmp_path, key_prefix)  # the file restored
    assert reopened.get(("bulk", "1"), "k1000").value == {"text": "item 1000"}  # type: ignore[union-attr]
    assert reopened.get(("ttl",), "t", refresh_ttl=False) is not None
    assert len(reopened.search(("bulk",), limit=2000)) == 1200
    reopened.close()


def test_refresh_and_sweep_keep_the_mirror_in_step(tmp_path: Path, key_prefix: str) -> None:
    now = [1_000_000.0]
    store = TieredMemoryStore(
        chroma_path=str(tmp_path),
        key_prefix=key_prefix,
        tiers={"default": "long"},
        clock=lambda: now[0],
    )
    store.put(("s",), "a", {"v": 1}, ttl=1)
    store.put(("s",), "b", {"v": 2}, ttl=1)
    now[0] += 50
    assert store.get(("s",), "a") is not None  # refreshes "a" to expire at +110 s
    now[0] += 20
    assert store.get(("s",), "a", refresh_ttl=False) is not None
    assert store.get(("s",), "b", refresh_ttl=False) is None
    assert store.sweep_ttl() == 1
    mirror = store.tiers["long"].index  # type: ignore[attr-defined]
    assert set(mirror.get(key_prefix, namespace_id(("s",)), ["a", "b"])) == {"a"}
    store.close()


def test_two_stores_on_one_directory_see_each_others_namespaces(
    tmp_path: Path, key_prefix: str
) -> None:
    a = _open(tmp_path, key_prefix)
    b = _open(tmp_path, key_prefix)
    assert b.list_namespaces() == []
    a.put(("x", "new"), "k", {"text": "made by a"})
    assert b.list_namespaces() == [("x", "new")]
    assert [r.key for r in b.search(("x",), query="made by a")] == ["k"]
    assert b.get(("x", "new"), "k").value == {"text": "made by a"}  # type: ignore[union-attr]
    b.delete(("x", "new"), "k")
    assert a.list_namespaces() == [] and a.get(("x", "new"), "k") is None
    a.close()
    b.close()


def test_a_failed_commit_changes_no_role_and_leaves_no_keyword_entry(
    tmp_path: Path,
) -> None:
    mirror = DocMirror(tmp_path)
    row = MemoryRow("banana bread recipe", "", "", "fact", 0.5, None, 1.0)
    meta = {"_d": '{"c":1.0,"u":1.0,"t":null,"n":0,"w":"w1","value":{}}'}
    mirror.begin("tm", "ns1", ["a"])
    with pytest.raises(sqlite3.Error):  # the bad expiry fails after the other roles wrote
        mirror.commit(
            "tm",
            "ns1",
            upserts={"a": meta},
            memories={"a": row},
            expiries={"a": object()},  # type: ignore[dict-item]
            done=["a"],
        )
    # Nothing of the transaction stays: no document, no memory row, no keyword entry, and
    # the key is still pending.
    assert mirror.get("tm", "ns1", ["a"]) == {}
    assert mirror.memory_stats("tm", "ns1", ["a"]) == {}
    assert mirror.keyword_search("tm", "ns1", ["banana"], 5) == []
    repaired = mirror.recover("tm", lambda nsid, keys: {"a": meta}, lambda m: row)
    assert repaired == 1
    assert mirror.get("tm", "ns1", ["a"]) == {"a": meta}
    assert [k for k, _ in mirror.keyword_search("tm", "ns1", ["banana"], 5)] == ["a"]
    assert mirror.recover("tm", lambda nsid, keys: {}) == 0  # nothing left pending
    mirror.close()


def test_memory_index_path_beside_an_embedded_chroma_is_refused(
    tmp_path: Path, key_prefix: str
) -> None:
    with pytest.raises(ConfigurationError, match="memory_index_path.*Chroma server's tier only"):
        TieredMemoryStore(
            chroma_path=str(tmp_path),
            key_prefix=key_prefix,
            tiers={"default": "long"},
            memory_index_path=str(tmp_path / "memory-index.sqlite3"),
        )
    assert not (tmp_path / "memory-index.sqlite3").exists()
