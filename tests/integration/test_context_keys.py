"""Key vectors of memories in own collections: `x:` HNSW records, embedded or on a server.

Each test compares a namespace in its own collection with a bucketed twin written the
same way (bucketed namespaces score every record exactly, key vectors included, as
before): the dense channel must give every memory the same best, own-vector and
key-vector similarities.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.chroma_layout import Collections
from langgraph_tiered_memory.store.tiers.chroma_vectors import VECTORS_FILE
from langgraph_tiered_memory.store.tiers.chroma_writes import ChromaWrites
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401  (fixture)

NS = ("mem", "hana")

FACTS = [
    "Hana adopted a greyhound named Biscuit.",
    "The clinic door code is 4471.",
    "Ivo bought a red kayak last summer.",
    "Biscuit the greyhound hates thunder.",
    "Hana works night shifts at the clinic.",
    "The kayak club meets on Sundays.",
    "Ivo's sister lives in Porto.",
    "Thunderstorms are common in May.",
    "Hana's favourite tea is genmaicha.",
    "The clinic moved to Elm Street.",
]

QUERIES = ["greyhound at the clinic", "kayak on Sunday", "Porto sister", "tea in May"]


def _store(path: Path, prefix: str, clock: Clock, *, own: bool) -> Any:
    store = TieredMemoryStore(
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=clock,
    )
    store.setup()
    if own:  # moves to its own collection once it holds 4 records
        store.tiers["long"]._layout.graduate_at = 4
    return store


def _dense(store: Any, clock: Clock, ns: tuple[str, ...] = NS) -> dict[str, list[Any]]:
    """Per query: (key, best, own, key-vector similarity) of every dense hit.

    Similarities compare within 1e-5 (HNSW distances are float32, exact ones float64).
    """
    tier = store.tiers["long"]
    emb = HashingEmbeddings(DIMS)
    out: dict[str, list[Any]] = {}
    for q in QUERIES:
        hits = tier.retrieve(
            ns, query_vector=emb.embed_query(q), match=None, filter=None, limit=5, now=clock()
        ).dense
        out[q] = sorted(
            (
                h.item.key,
                *(
                    None if s is None else pytest.approx(s, abs=1e-5)
                    for s in (h.best, h.own, h.context)
                ),
            )
            for h in hits
        )
    return out


def _hnsw_ids(store: Any, ns: tuple[str, ...] = NS) -> list[str]:
    col = store.tiers["long"]._collection(ns, create=False)
    assert type(col).__name__ != "NamespaceView"
    return sorted(col.get(include=[])["ids"])


def _copied(store: Any, prefix: str, ns: tuple[str, ...] = NS) -> set[str]:
    """Ids of the key (extra) vectors the own collection's HNSW index holds."""
    return {rid for rid in _hnsw_ids(store, ns) if rid[:2] == "x:"}


def _current_key_rids(
    store: Any, ns: tuple[str, ...] = NS, *, unkeyed: tuple[str, ...] = ()
) -> set[str]:
    """Key vector ids the stored documents name (`x:<i>:<write id>:<key>`).

    `unkeyed`: memories whose context key went with their predecessor's delete (their
    documents still count it; readers take it as missing).
    """
    tier = store.tiers["long"]
    col = tier._collection(ns, create=False)
    keys = [f"m{i}" for i in range(len(FACTS))]
    out = set()
    for key, meta in tier._docs.get(namespace_id(ns), col, keys).items():
        _, nvec, write_id, nkeys = tier._decode(ns, key, meta)
        if key not in unkeyed:
            out.update(f"x:{i}:{write_id}:{key}" for i in range(nvec - nkeys, nvec) if i >= 1)
    return out


@pytest.fixture
def twins(tmp_path: Path) -> Any:
    clock = Clock()
    prefix = "k" + uuid.uuid4().hex[:8]
    bucketed = _store(tmp_path / "b", prefix, clock, own=False)
    own = _store(tmp_path / "o", prefix, clock, own=True)
    yield bucketed, own, prefix, clock
    bucketed.close()
    own.close()


def _both(twins: Any, fn: Any) -> None:
    bucketed, own, _, _ = twins
    fn(bucketed)
    fn(own)


def test_an_own_collection_keeps_each_context_key_as_an_hnsw_record(twins: Any) -> None:
    bucketed, own, prefix, clock = twins
    _both(twins, lambda s: [s.put(NS, f"m{i}", {"content": t}) for i, t in enumerate(FACTS)])
    # Every memory after the first has a context key, an `x:` record beside its own.
    primaries = {f"p:m{i}" for i in range(len(FACTS))}
    assert set(_hnsw_ids(own)) == primaries | _current_key_rids(own)
    assert _copied(own, prefix) == _current_key_rids(own)
    assert len(_current_key_rids(own)) == len(FACTS) - 1
    assert _dense(own, clock) == _dense(bucketed, clock)
    assert any(h[3] is not None for hits in _dense(own, clock).values() for h in hits)


def test_rewrites_deletes_and_sweeps_keep_the_key_records_exact(twins: Any) -> None:
    bucketed, own, prefix, clock = twins

    def ops(s: Any) -> None:
        for i, t in enumerate(FACTS):
            s.put(NS, f"m{i}", {"content": t}, ttl=1 if i == 7 else None)
        s.put(NS, "m3", {"content": "Biscuit the greyhound loves thunder now."})  # rewrite
        s.delete(NS, "m5")  # m6's context key was made with m5's text

    _both(twins, ops)
    assert _copied(own, prefix) == _current_key_rids(own, unkeyed=("m6",))
    assert not any(r.endswith((":m5", ":m6")) for r in _copied(own, prefix))
    assert any(r.endswith(":m3") for r in _copied(own, prefix))
    assert _dense(own, clock) == _dense(bucketed, clock)
    clock.now += 120
    assert bucketed.sweep_ttl() == own.sweep_ttl() == 1  # m7, and m8's context key
    assert not any(r.endswith((":m7", ":m8")) for r in _copied(own, prefix))
    assert _copied(own, prefix) == _current_key_rids(own, unkeyed=("m6", "m8"))
    primaries = {f"p:m{i}" for i in range(len(FACTS)) if i not in (5, 7)}
    assert set(_hnsw_ids(own)) - _copied(own, prefix) == primaries
    assert _dense(own, clock) == _dense(bucketed, clock)


def test_a_crashed_move_to_an_own_collection_is_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    prefix = "k" + uuid.uuid4().hex[:8]
    twin = _store(tmp_path / "b", prefix, clock, own=False)
    store = _store(tmp_path / "o", prefix, clock, own=True)
    real_flip = Collections.flip

    def crash(self: Any, *args: Any) -> None:
        raise RuntimeError("injected crash before the registry flip")

    monkeypatch.setattr(Collections, "flip", crash)
    for i, t in enumerate(FACTS[:4]):
        twin.put(NS, f"m{i}", {"content": t})
    for i, t in enumerate(FACTS[:2]):
        store.put(NS, f"m{i}", {"content": t})
    # From the third put the namespace holds 4 records (with its key records): each put
    # tries the move, which crashes.
    for i, t in enumerate(FACTS[2:4], start=2):
        with pytest.raises(RuntimeError, match="^injected crash before the registry flip$"):
            store.put(NS, f"m{i}", {"content": t})
    monkeypatch.setattr(Collections, "flip", real_flip)
    store.close()
    store = _store(tmp_path / "o", prefix, clock, own=True)
    for s in (twin, store):
        for i, t in enumerate(FACTS[4:], start=4):
            s.put(NS, f"m{i}", {"content": t})
    primaries = {f"p:m{i}" for i in range(len(FACTS))}
    assert set(_hnsw_ids(store)) == primaries | _current_key_rids(store)
    assert _dense(store, clock) == _dense(twin, clock)
    twin.close()
    store.close()


def test_a_write_interrupted_before_chroma_leaves_no_key_vector_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    prefix = "k" + uuid.uuid4().hex[:8]
    store = _store(tmp_path / "o", prefix, clock, own=True)
    for i, t in enumerate(FACTS[:6]):
        store.put(NS, f"m{i}", {"content": t})
    before = _copied(store, prefix)
    dense = _dense(store, clock)

    def crash(self: Any, targets: Any) -> None:
        raise RuntimeError("injected crash before Chroma")

    monkeypatch.setattr(ChromaWrites, "_send", crash)
    with pytest.raises(RuntimeError, match="^injected crash before Chroma$"):
        store.put(NS, "m4", {"content": "Hana now works day shifts."})
    with pytest.raises(RuntimeError, match="^injected crash before Chroma$"):
        store.put(NS, "m6", {"content": FACTS[6]})
    assert _copied(store, prefix) == before  # nothing reached Chroma
    assert _dense(store, clock) == dense
    monkeypatch.undo()
    store.close()
    store = _store(tmp_path / "o", prefix, clock, own=True)  # repairs the intent log
    assert _copied(store, prefix) == before == _current_key_rids(store)
    assert _dense(store, clock) == dense
    store.close()


FIXTURE = Path(__file__).parent.parent / "data" / "legacy" / "legacy-embedded-keys.tgz"


def _legacy(root: Path, prefix: str, clock: Clock) -> Any:
    store = TieredMemoryStore(
        chroma_path=str(root / "chroma"),
        key_prefix=prefix,
        tiers={"default": "long"},
        index={"dims": 64, "embed": HashingEmbeddings(64), "fields": ["content"]},
        clock=clock,
    )
    store.setup()
    return store


def _legacy_dense(store: Any, queries: list[str], clock: Clock) -> dict[str, Any]:
    tier, emb = store.tiers["long"], HashingEmbeddings(64)
    out = {}
    for q in queries:
        hits = tier.retrieve(
            NS, query_vector=emb.embed_query(q), match=None, filter=None, limit=5, now=clock()
        ).dense
        out[q] = sorted([h.item.key, h.best, h.own, h.context] for h in hits)
    return out


def _approx(dense: dict[str, Any]) -> dict[str, Any]:
    return {
        q: [[k, *(None if s is None else pytest.approx(s, abs=1e-5) for s in r)] for k, *r in hits]
        for q, hits in dense.items()
    }


def _legacy_prefixes(path: Path) -> set[str] | None:
    """Prefixes with rows in the copy's old `keyvec` table (None: the table is gone)."""
    conn = sqlite3.connect(path)
    try:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "keyvec" not in tables:
            assert "keys_due" not in tables
            return None
        return {p for (p,) in conn.execute("SELECT DISTINCT prefix FROM keyvec")}
    finally:
        conn.close()


def test_key_vectors_of_an_older_vector_copy_move_into_chroma_once(tmp_path: Path) -> None:
    """A store written by 96c17ec (make_embedded_store.py) ranks as it did.

    Two prefixes share the copy file: each moves its own key vectors into Chroma and
    deletes its rows; the old tables go once the last prefix has taken its rows.
    """
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    expected = json.loads((tmp_path / "expected.json").read_text())
    clock = Clock()
    clock.now = expected["now"]
    vectors = tmp_path / "chroma" / VECTORS_FILE
    saved = tmp_path / "saved.sqlite3"
    shutil.copy(vectors, saved)
    assert _legacy_prefixes(vectors) == {"lega", "legb"}
    left = [{"legb"}, None]
    for round_ in range(2):  # the second time as if the first crashed before the cleanup
        for n, prefix in enumerate(("lega", "legb")):
            store = _legacy(tmp_path, prefix, clock)
            want = expected[prefix]
            assert _copied(store, prefix) == set(want["key_rids"])
            assert _legacy_dense(store, list(want["dense"]), clock) == _approx(want["dense"])
            store.close()
            assert _legacy_prefixes(vectors) == left[n]
        if round_ == 0:
            shutil.copy(saved, vectors)
    store = _legacy(tmp_path, "lega", clock)  # opened again: nothing left to move
    assert _copied(store, "lega") == set(expected["lega"]["key_rids"])
    store.close()


def test_a_chroma_server_keeps_key_vectors_in_chroma(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> None:
    import chromadb
    from chromadb.config import Settings

    clock = Clock()
    prefix = key_prefix
    client = chromadb.HttpClient(
        host=chroma_server[0], port=chroma_server[1], settings=Settings(anonymized_telemetry=False)
    )
    store = TieredMemoryStore(
        chroma_client=client,
        redis_url=redis_url,
        tiers={"default": "long"},
        key_prefix=prefix,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=clock,
    )
    store.setup()
    store.tiers["long"]._layout.graduate_at = 4
    for i, t in enumerate(FACTS):
        store.put(NS, f"m{i}", {"content": t})
    ids = _hnsw_ids(store)
    assert len(ids) == 2 * len(FACTS) - 1 and set(ids) >= _current_key_rids(store)
    dense = _dense(store, clock)
    assert any(h[3] is not None for hits in dense.values() for h in hits)
    store.close()


def test_without_key_vectors_an_own_collection_gets_the_whole_dense_pool(tmp_path: Path) -> None:
    clock = Clock()
    store = TieredMemoryStore(
        chroma_path=str(tmp_path),
        key_prefix="nk",
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        scoring={"mode": "memory", "context_keys": False},
        clock=clock,
    )
    store.setup()
    store.tiers["long"]._layout.graduate_at = 4
    for i in range(40):
        store.put(NS, f"n{i}", {"content": f"note {i} about the clinic"})
    assert len(_hnsw_ids(store)) == 40
    emb = HashingEmbeddings(DIMS)
    hits = store.tiers["long"].retrieve(
        NS, query_vector=emb.embed_query("clinic"), match=None, filter=None, limit=5, now=clock()
    )
    assert len(hits.dense) == 20  # 4 x limit records, all own vectors
    store.close()
