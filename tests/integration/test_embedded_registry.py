"""The namespace registry beside an embedded Chroma: the tier's SQLite file, not Chroma.

A write registers its namespaces in the SQLite transaction that records its intents, so
a namespace's first put is one Chroma call; a write that dies before Chroma got its
records leaves no namespace once the store reopens. A store an earlier version wrote,
with its registry in the Chroma collection `P-registry`, has it copied once.
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.models.Collection import Collection

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy import erase_user
from langgraph_tiered_memory.privacy.erasure import UserNamespaces
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.chroma_layout import bucket_of
from langgraph_tiered_memory.store.tiers.doc_mirror import MIRROR_FILE
from tests.fakes import Clock, HashingEmbeddings
from tests.integration.test_long_write_path import chroma_calls

DIMS = 64
FIXTURE = Path(__file__).parent.parent / "data" / "legacy" / "legacy-embedded-registry.tgz"


def _store(path: Path, prefix: str = "er", clock: Clock | None = None) -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=clock or Clock(),
    )
    store.setup()
    return store


def _in_bucket_of(ns: tuple[str, ...], buckets: int) -> tuple[str, ...]:
    """Another namespace in the bucket of `ns` (its collection is open already)."""
    want = bucket_of(namespace_id(ns), buckets)
    for i in range(1000):
        other = ("users", f"u{i}", "memories")
        if bucket_of(namespace_id(other), buckets) == want:
            return other
    raise AssertionError("unreachable")


def _registry_rows(path: Path, prefix: str) -> dict[str, tuple[Any, ...]]:
    conn = sqlite3.connect(path / MIRROR_FILE)
    try:
        rows = conn.execute("SELECT nsid, ns, b, m, ttl FROM reg WHERE prefix=?", (prefix,))
        return {nsid: tuple(rest) for nsid, *rest in rows}
    finally:
        conn.close()


def test_a_namespaces_first_put_is_one_chroma_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = ("users", "ana", "memories")
    store = _store(tmp_path / "c")
    try:
        store.put(first, "a", {"content": "Ana keeps bees on her roof"})
        new = _in_bucket_of(first, 4)
        with chroma_calls(monkeypatch) as calls:
            store.put(new, "k", {"content": "Bo keeps goats"})
        assert dict(calls) == {"upsert": 1}  # the item only: no registry upsert
        with chroma_calls(monkeypatch) as calls:  # its first TTL item: the flag is set
            store.put(new, "t", {"content": "Bo sells cheese"}, ttl=60)
        assert dict(calls) == {"upsert": 1}
        names = [c.name for c in store.tiers["long"].client.list_collections()]  # type: ignore[attr-defined]
        assert "er-registry" not in names
    finally:
        store.close()
    rows = _registry_rows(tmp_path / "c", "er")
    bucket = bucket_of(namespace_id(new), 4)
    assert rows[namespace_id(new)][1:] == (bucket, None, 1)  # bucket, no move, held TTL
    store = _store(tmp_path / "c")
    try:
        assert store.list_namespaces(prefix=("users",)) == sorted([first, new])
        assert store.tiers["long"]._docs.has_held_ttl(new)  # type: ignore[attr-defined]
        assert [h.key for h in store.search(new, query="goats")][0] == "k"
    finally:
        store.close()


def test_a_write_that_dies_before_chroma_leaves_no_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, lost = ("users", "ana", "memories"), ("users", "cy", "memories")
    store = _store(tmp_path / "c")
    store.put(kept, "a", {"content": "Ana keeps bees"})

    upsert = Collection.upsert

    def dies(self: Any, *a: Any, **k: Any) -> None:
        if "-ns-" in self.name:  # the item's collection (not an older registry collection)
            raise RuntimeError("the process died here")
        upsert(self, *a, **k)

    with monkeypatch.context() as m:  # the registration and intents are committed
        m.setattr(Collection, "upsert", dies)
        with pytest.raises(RuntimeError, match="died"):
            store.put(lost, "c", {"content": "Cy keeps cats"})
    store.close()
    store = _store(tmp_path / "c")  # the repair finds nothing in Chroma for it
    try:
        assert store.list_namespaces() == [kept]
        assert namespace_id(lost) not in _registry_rows(tmp_path / "c", "er")
        store.put(lost, "c", {"content": "Cy keeps cats"})  # registered again
        assert store.list_namespaces() == sorted([kept, lost])
        assert store.get(lost, "c").value == {"content": "Cy keeps cats"}  # type: ignore[union-attr]
    finally:
        store.close()


def _open_fixture(tmp_path: Path) -> tuple[dict[str, Any], Clock]:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    expected = json.loads((tmp_path / "expected.json").read_text())
    return expected, Clock(expected["now"])


def test_a_store_with_the_chroma_registry_opens_with_every_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written by 9e8229f (make_embedded_registry.py): listed, searched, erased."""
    expected, clock = _open_fixture(tmp_path)
    prefix, path = expected["prefix"], tmp_path / "chroma"
    store = _store(path, prefix, clock)
    try:
        tier: Any = store.tiers["long"]
        assert tier._layout.buckets == 3  # the prefix's recorded count, not the default
        assert [list(ns) for ns in store.list_namespaces()] == expected["listed"]
        for want in expected["namespaces"]:
            ns = tuple(want["ns"])
            # The memories 9e8229f found, with its best hit first. The order below it and
            # the scores were recorded under 0.1.0's neighbour smoothing, which 0.2.0
            # replaced (it never moves a memory past the best match).
            hits = store.search(ns, query=want["query"], limit=10)
            assert sorted(h.key for h in hits) == sorted(k for k, _ in want["hits"])
            assert hits[0].key == want["hits"][0][0]
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            assert sorted(it.key for it in store.search(ns, limit=100)) == want["keys"]
            assert tier._docs.has_held_ttl(ns) == want["ttl"]
        rows = _registry_rows(path, prefix)
        assert {r[0]: (r[1], r[3]) for r in rows.values()} == {
            json.dumps(w["ns"])[1:-1].replace(", ", ",") + ",": (w["bucket"], int(w["ttl"]))
            for w in expected["namespaces"]
        }
        assert all(r[2] is None for r in rows.values())  # the unfinished move was finished
        with chroma_calls(monkeypatch) as calls:  # a new namespace: its bucket only
            store.put(_in_bucket_of(("users", "ana", "notes"), 3), "k", {"content": "new"})
        assert dict(calls) == {"upsert": 1}
        old = tier.client.get_collection(f"{prefix}-registry")
        erased = erase_user(store, "cy")
        assert ("users", "cy", "memories") not in store.list_namespaces()
        nsid = namespace_id(("users", "cy", "memories"))
        assert old.get(ids=[nsid])["ids"] == []  # gone from the old collection too
        assert nsid not in _registry_rows(path, prefix)
        assert erased is not None
    finally:
        store.close()
    store = _store(path, prefix, clock)  # copied once: the old collection is not read again
    try:
        listed = store.list_namespaces(prefix=("users",))
        assert ("users", "cy", "memories") not in listed
        assert [list(ns) for ns in listed if ns[1] != "cy" and ns[1][0] != "u"] == [
            ns for ns in expected["listed"] if ns[1] != "cy"
        ]
        assert UserNamespaces("di").owns(("users", "di", "memories"))
        assert store.search(("users", "di", "memories"), query="tree number 2", limit=1)
    finally:
        store.close()
