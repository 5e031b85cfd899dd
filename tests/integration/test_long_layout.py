"""The long tier's storage layout: small namespaces share bucket collections.

Searches in a bucketed namespace are exact; a namespace past the size threshold moves
to its own collection (crash-safe); stores written with one collection per namespace
keep working; the same holds with a Chroma server.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store.tiers._namespaces import encode_namespace, namespace_id
from langgraph_tiered_memory.store.tiers.chroma_vectors import VECTORS_FILE
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings
from tests.integration.test_store_chroma_server import _store as _server_store
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401  (fixture)


class TableEmbeddings(Embeddings):
    """Texts of the form "v:<json list>" embed to that list; others hash."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self._hash = HashingEmbeddings(dims)

    def _one(self, text: str) -> list[float]:
        if text.startswith("v:"):
            return [float(x) for x in json.loads(text[2:])]
        return self._hash.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def _store(path: Path, prefix: str, *, buckets: int | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("index", {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]})
    kwargs.setdefault("scoring", {"mode": "similarity"})
    store = TieredMemoryStore(
        chroma_path=str(path), key_prefix=prefix, tiers={"default": "long"}, **kwargs
    )
    if buckets is not None:
        store.tiers["long"]._layout._wanted_buckets = buckets  # type: ignore[attr-defined]
    store.setup()
    return store


def _names(store: Any, prefix: str) -> list[str]:
    client = store.tiers["long"].client
    return sorted(c.name for c in client.list_collections() if c.name.startswith(prefix))


def _bucket_ids(store: Any, prefix: str) -> list[str]:
    client = store.tiers["long"].client
    out: list[str] = []
    for name in _names(store, prefix):
        if "-ns-bucket-" in name:
            out.extend(client.get_collection(name).get(include=[])["ids"])
    return out


def test_many_small_namespaces_share_a_bounded_number_of_collections(tmp_path: Path) -> None:
    prefix = "t" + uuid.uuid4().hex[:8]
    with _store(tmp_path / "c", prefix, buckets=3) as store:
        for u in range(40):
            for k in range(3):
                store.put(("memories", f"u{u}"), f"k{k}", {"text": f"user {u} fact {k}"})
        names = _names(store, prefix)
        # 3 buckets, not one per namespace; the registry is in the SQLite file.
        assert names == [f"{prefix}-ns-bucket-64d-{i}" for i in range(3)]
        assert len(store.list_namespaces(prefix=("memories",), limit=100)) == 40
        hit = store.search(("memories", "u17"), query="user 17 fact 2", limit=2)[0]
        assert (hit.namespace, hit.key) == (("memories", "u17"), "k2")
        assert hit.score == pytest.approx(1.0)
        assert len(_bucket_ids(store, prefix)) == 120


_vector = st.lists(st.integers(-3, 3), min_size=4, max_size=4).filter(any)
_items = st.dictionaries(st.sampled_from("abcdefgh"), _vector, min_size=1, max_size=8)


@pytest.fixture(scope="module")
def twin_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """A bucketed store and one where every namespace has its own collection."""
    path = tmp_path_factory.mktemp("twins")
    index = {"dims": 4, "embed": TableEmbeddings(4), "fields": ["text"]}
    bucketed = _store(path / "b", "tb", buckets=2, index=index)
    own = _store(path / "o", "to", index=index)
    own.tiers["long"]._layout.graduate_at = 1  # every namespace moves on its first write
    yield bucketed, own
    bucketed.close()
    own.close()


_counter = itertools.count()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spaces=st.lists(_items, min_size=1, max_size=3), query=_vector, k=st.integers(1, 6))
def test_bucket_search_is_exact(
    twin_stores: tuple[Any, Any], spaces: list[dict[str, list[int]]], query: list[int], k: int
) -> None:
    bucketed, own = twin_stores
    run = next(_counter)
    namespaces = [("p", str(run), str(i)) for i in range(len(spaces))]
    for store in (bucketed, own):
        store.batch(
            [
                _put(ns, key, vec)
                for ns, items in zip(namespaces, spaces, strict=True)
                for key, vec in items.items()
            ]
        )
    assert bucketed.tiers["long"]._layout.lookup(namespace_id(namespaces[0]))[1] is not None
    assert own.tiers["long"]._layout.lookup(namespace_id(namespaces[0]))[1] is None
    q = np.asarray(query, dtype=float)
    reference = sorted(
        (
            -float(np.dot(q, v) / (np.linalg.norm(q) * np.linalg.norm(v))),
            ns,
            key,
        )
        for ns, items in zip(namespaces, spaces, strict=True)
        for key, v in ((key, np.asarray(v, dtype=float)) for key, v in items.items())
    )[:k]
    for store in (bucketed, own):
        hits = store.search(("p", str(run)), query="v:" + json.dumps(query), limit=k)
        assert [h.score for h in hits] == pytest.approx([-s for s, _, _ in reference], abs=1e-5)
        # Items clearly above the k-th score are the same items (ties may swap places).
        cut = -reference[-1][0] + 1e-5
        assert {(h.namespace, h.key) for h in hits if h.score > cut} == {
            (ns, key) for s, ns, key in reference if -s > cut
        }


def _put(ns: tuple[str, ...], key: str, vec: list[int]) -> Any:
    return PutOp(ns, key, {"text": "v:" + json.dumps(vec)})


def test_memory_mode_ranks_bucketed_namespaces_like_own_collections(tmp_path: Path) -> None:
    clock = Clock()
    facts = [
        "Hana adopted a greyhound named Biscuit.",
        "The clinic door code is 4471.",
        "Ivo bought a red kayak last summer.",
        "Biscuit the greyhound hates thunder.",
        "Hana works night shifts at the clinic.",
    ]
    results = []
    for name, move in (("b", False), ("o", True)):
        store = _store(
            tmp_path / name,
            "tm" + name,
            scoring=None,
            clock=clock,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        )
        if move:
            store.tiers["long"]._layout.graduate_at = 1
        for i, text in enumerate(facts):
            store.put(("mem", "hana"), f"m{i}", {"content": text})
        col = store.tiers["long"]._collection(("mem", "hana"), create=False)
        assert (type(col).__name__ == "NamespaceView") is not move
        hits = store.search(("mem",), query="greyhound at the clinic", limit=5)
        results.append([(h.key, round(h.score or 0.0, 6)) for h in hits])
        store.close()
    assert results[0] == results[1]


def test_a_growing_namespace_moves_to_its_own_collection_despite_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = "t" + uuid.uuid4().hex[:8]
    ns = ("memories", "big")
    store = _store(tmp_path / "c", prefix, buckets=2)
    tier = store.tiers["long"]
    layout = tier._layout
    layout.graduate_at = 5
    store.put(("memories", "small"), "s", {"text": "a small neighbour"})
    for i in range(4):
        store.put(ns, f"k{i}", {"text": f"fact {i}"})
    assert layout.lookup(namespace_id(ns))[1] is not None

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected crash")

    # 1. Crash after the copy, before the registry flip: still read from the bucket.
    monkeypatch.setattr(layout, "flip", crash)
    with pytest.raises(RuntimeError, match="^injected crash$"):
        store.put(ns, "k4", {"text": "fact 4"})
    monkeypatch.undo()
    assert layout.lookup(namespace_id(ns))[1] is not None
    assert {h.key for h in store.search(ns, query="fact 4", limit=10)} == {
        f"k{i}" for i in range(5)
    }
    store.delete(ns, "k0")  # a change the stale copy does not have
    # 2. The next write reruns the move; crash after the flip, before the bucket is emptied.
    monkeypatch.setattr(layout, "clear_bucket", crash)
    with pytest.raises(RuntimeError, match="^injected crash$"):
        store.put(ns, "k5", {"text": "fact 5"})
    monkeypatch.undo()
    assert layout.lookup(namespace_id(ns))[1] is None  # reads follow the own collection
    assert {h.key for h in store.search(ns, query="fact 5", limit=10)} == {
        "k1",
        "k2",
        "k3",
        "k4",
        "k5",
    }
    assert store.get(ns, "k0") is None
    store.close()
    # 3. Reopening finishes the move: the bucket keeps only the neighbour.
    store = _store(tmp_path / "c", prefix)
    names = _names(store, prefix)
    assert f"{prefix}-ns-{namespace_id(ns)}" in names
    assert [i.split(":", 1)[1] for i in _bucket_ids(store, prefix)] == ["p:s"]
    hits = store.search(ns, query="fact 3", limit=10)
    assert hits[0].key == "k3" and len(hits) == 5
    assert store.tiers["long"]._vcopy.count(prefix, namespace_id(ns)) == 0
    store.put(ns, "k6", {"text": "fact 6"})  # later writes go to the own collection
    assert len(_bucket_ids(store, prefix)) == 1
    store.close()


def _write_old_layout(
    path: Path, prefix: str, namespaces: dict[tuple[str, ...], list[str]]
) -> None:
    """Write collections the way the one-collection-per-namespace layout did."""
    client: Any = chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False)
    )
    registry: Any = client.get_or_create_collection(
        f"{prefix}-registry", embedding_function=None, metadata={"tm_kind": "registry"}
    )
    embed = HashingEmbeddings(DIMS)
    for ns, texts in namespaces.items():
        nsid = namespace_id(ns)
        meta: dict[str, Any] = {"ns": encode_namespace(ns), "depth": len(ns)}
        for d in range(1, len(ns) + 1):
            meta[f"p{d}"] = namespace_id(ns[:d])
        registry.upsert(ids=[nsid], embeddings=[[1.0]], metadatas=[meta])
        col: Any = client.get_or_create_collection(
            f"{prefix}-ns-{nsid}",
            embedding_function=None,
            metadata={"tm_dims": DIMS, "tm_ns": encode_namespace(ns)},
            configuration={"hnsw": {"space": "cosine"}},
        )
        docs = [
            json.dumps(
                {"c": 1.0, "u": 1.0, "t": None, "n": 1, "w": f"w{i}", "value": {"text": text}}
            )
            for i, text in enumerate(texts)
        ]
        col.upsert(
            ids=[f"p:k{i}" for i in range(len(texts))],
            embeddings=[[*embed.embed_query(t), 0.0] for t in texts],
            metadatas=[{"_d": d} for d in docs],
        )
    client.close()  # releases the directory for the store


def test_a_store_written_with_one_collection_per_namespace_still_opens(tmp_path: Path) -> None:
    prefix = "t" + uuid.uuid4().hex[:8]
    old: dict[tuple[str, ...], list[str]] = {
        ("users", "a"): ["green tea", "black coffee"],
        ("users", "b"): ["tea ceremony"],
    }
    _write_old_layout(tmp_path / "c", prefix, old)
    store = _store(tmp_path / "c", prefix)
    assert sorted(store.list_namespaces()) == [("users", "a"), ("users", "b")]
    assert store.get(("users", "a"), "k1").value == {"text": "black coffee"}
    hits = store.search(("users",), query="green tea", limit=3)
    assert hits[0].key == "k0" and hits[0].namespace == ("users", "a")
    assert hits[0].score == pytest.approx(1.0)
    store.put(("users", "a"), "k2", {"text": "oolong"})  # stays in its own collection
    store.put(("users", "c"), "k0", {"text": "new user"})  # goes to a bucket
    names = _names(store, prefix)
    assert sum("-ns-bucket-" in n for n in names) == 1
    own = store.tiers["long"]._collection(("users", "a"), create=False)
    assert own.count() == 3
    assert [h.key for h in store.search(("users", "a"), query="oolong", limit=1)] == ["k2"]
    assert store.search(("users", "c"), query="new user", limit=1)[0].key == "k0"
    store.close()


def test_deletes_and_ttl_sweeps_leave_nothing_in_the_buckets(tmp_path: Path) -> None:
    prefix = "t" + uuid.uuid4().hex[:8]
    now = [1_000_000.0]
    store = _store(tmp_path / "c", prefix, buckets=1, clock=lambda: now[0])
    tier = store.tiers["long"]
    for u in range(5):
        store.put(("s", f"u{u}"), "old", {"text": f"expiring {u}"}, ttl=1)
        store.put(("s", f"u{u}"), "keep", {"text": f"kept {u}"})
    assert len(_bucket_ids(store, prefix)) == 10
    now[0] += 61
    expired = tier.expired(("s", "u0"), now=now[0], delete=False)
    assert [i.key for i in expired] == ["old"] and len(_bucket_ids(store, prefix)) == 10
    assert [i.key for i in tier.expired(("s", "u0"), now=now[0], delete=True)] == ["old"]
    assert store.sweep_ttl() == 4
    assert sorted(i.split(":", 1)[1] for i in _bucket_ids(store, prefix)) == ["p:keep"] * 5
    assert [h.key for h in store.search(("s", "u3"), query="expiring 3", limit=5)] == ["keep"]
    for u in range(5):
        store.delete(("s", f"u{u}"), "keep")
    assert _bucket_ids(store, prefix) == []
    assert store.list_namespaces() == []
    assert all(tier._vcopy.count(prefix, namespace_id(("s", f"u{u}"))) == 0 for u in range(5))
    store.close()


def test_buckets_over_a_chroma_server(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> None:
    now = [1_000_000.0]
    prefix = key_prefix
    store = _server_store(
        *chroma_server, prefix, redis_url, scoring={"mode": "similarity"}, clock=lambda: now[0]
    )
    tier: Any = store.tiers["long"]
    client = tier.client
    assert isinstance(tier.index, RedisIndex)  # documents stay in Chroma
    tier._layout.graduate_at = 6
    users = 40
    for u in range(users):
        store.put(("users", f"u{u}"), "a", {"text": f"user {u} likes tea"})
        store.put(("users", f"u{u}"), "b", {"text": f"user {u} likes chess"}, ttl=1)
    names = [c.name for c in client.list_collections() if c.name.startswith(prefix)]
    buckets = [n for n in names if "-ns-bucket-" in n]
    assert names == buckets and len(buckets) <= tier._layout.buckets < users  # no registry
    hit = store.search(("users", "u5"), query="user 5 likes chess", limit=1)[0]
    assert (hit.key, hit.score) == ("b", pytest.approx(1.0))
    assert len(store.search(("users",), query="tea", limit=100)) == 2 * users
    for i in range(6):  # past the threshold: moves to its own collection
        store.put(("users", "u0"), f"x{i}", {"text": f"extra {i}"})
    assert tier._layout.lookup(namespace_id(("users", "u0")))[1] is None
    assert store.search(("users", "u0"), query="extra 3", limit=1)[0].key == "x3"
    now[0] += 61
    assert store.sweep_ttl() == users
    for u in range(users):
        store.delete(("users", f"u{u}"), "a")
    for i in range(6):
        store.delete(("users", "u0"), f"x{i}")
    for name in buckets:
        assert client.get_collection(name).get(include=[])["ids"] == []
    assert store.list_namespaces() == []
    store.close()


def test_the_vector_copy_is_rebuilt_from_the_buckets(tmp_path: Path) -> None:
    prefix = "t" + uuid.uuid4().hex[:8]
    store = _store(tmp_path / "c", prefix, buckets=2)
    for u in range(6):
        store.put(("u", str(u)), "a", {"text": f"alpha {u}"})
        store.put(("u", str(u)), "b", {"text": f"beta {u}"})
    store.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / "c" / (VECTORS_FILE + suffix)).unlink(missing_ok=True)
    store = _store(tmp_path / "c", prefix)
    hits = store.search(("u", "4"), query="beta 4", limit=2)
    assert [h.key for h in hits] == ["b", "a"] and hits[0].score == pytest.approx(1.0)
    assert store.tiers["long"]._vcopy.count(prefix, namespace_id(("u", "4"))) == 2
    store.close()
