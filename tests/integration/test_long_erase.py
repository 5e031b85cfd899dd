"""Erasing namespaces and keys from the long-term tier leaves no id or text anywhere.

After `erase_namespaces` / `erase_keys` the user's id and a marker the user said must be
absent from every Chroma collection (ids, metadatas, collection metadata) and from the
raw bytes of every file of the store: Chroma's own `chroma.sqlite3` (its log included),
the HNSW files, the tier's SQLite files (documents, keyword index, statistics, intents,
registry) and the vector copy.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import chromadb
import httpx
import numpy as np
import pytest
import redis
from chromadb.config import Settings

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy.erasure import UserNamespaces
from langgraph_tiered_memory.store.tiers.chroma_scrub import scrub_chroma_dir
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror
from langgraph_tiered_memory.store.tiers.long_erase import ITEMS, NAMESPACES
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401
from tests.net import free_port


@pytest.fixture
def ids() -> tuple[str, str]:
    """A fresh user id and a fresh marker the user says."""
    return "user" + uuid.uuid4().hex[:10], "zq" + uuid.uuid4().hex[:12]


def _embedded(path: Path, clock: Clock, **kwargs: Any) -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_path=str(path),
        key_prefix="er",
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=clock,
        history=False,  # memory history has its own erase (privacy.tombstone_history)
        **kwargs,
    )
    store.setup()
    return store


def _fill(store: TieredMemoryStore, uid: str, marker: str) -> None:
    """The user's data in a bucket, an own collection, a big keyword table, a TTL item."""
    store.tiers["long"]._layout.graduate_at = 8  # type: ignore[attr-defined]
    for i in range(3):  # stays in its bucket
        store.put(("users", uid, "notes"), f"n{i}", {"content": f"{marker} note {i} of {uid}"})
    for i in range(6):  # past graduate_at (6 memories + key vectors): own collection
        store.put(("memories", uid), f"m{i}", {"content": f"I told you {marker} fact {i}"})
    store.put(("users", uid, "tmp"), "t", {"content": f"short lived {marker}"}, ttl=1)
    for i in range(6):  # another user: must stay intact
        store.put(("users", "bob", "notes"), f"b{i}", {"content": f"bob likes green tea {i}"})


def _raw_traces(directory: Path, words: list[str]) -> list[str]:
    found = []
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            found += [f"{p.relative_to(directory)}: {w}" for w in words if w.encode() in data]
    return found


def _vector_traces(directory: Path, uid: str, marker: str) -> list[str]:
    """Files holding the float32 bytes of one of the user's own-text vectors."""
    emb = HashingEmbeddings(DIMS)
    texts = [f"{marker} note {i} of {uid}" for i in range(3)]
    texts += [f"I told you {marker} fact {i}" for i in range(6)] + [f"short lived {marker}"]
    needles = [_needle(np.asarray(emb.embed_query(t), dtype=np.float32)) for t in texts]
    return [
        f"{p.relative_to(directory)}: vector {i}"
        for p in sorted(directory.rglob("*"))
        if p.is_file()
        for i, n in enumerate(needles)
        if n in p.read_bytes()
    ]


def _needle(vector: np.ndarray) -> bytes:
    """Eight float32s of `vector` around its largest component.

    Never a run of zeros, which any zeroed slot or blank would match: a short text's
    hashed vector can have eight zero components in a row.
    """
    start = min(int(np.argmax(np.abs(vector))), len(vector) - 8)
    return vector[start : start + 8].tobytes()


def _sql_traces(path: Path, words: list[str]) -> list[str]:
    """Rows of every table (FTS shadow tables included) holding one of `words`."""
    conn = sqlite3.connect(path)
    conn.text_factory = bytes
    found = []
    try:
        names = [
            str(n, "utf-8")
            for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        for name in names:
            for row in conn.execute(f'SELECT * FROM "{name}"'):
                blob = b"|".join(v if isinstance(v, bytes) else str(v).encode() for v in row)
                found += [f"{name}: {w}" for w in words if w.encode() in blob]
    finally:
        conn.close()
    return found


def _chroma_traces(client: Any, words: list[str]) -> list[str]:
    found = []
    for col in client.list_collections():
        text = f"{col.name} {col.metadata}"
        offset = 0
        while True:
            page = col.get(include=["metadatas"], limit=500, offset=offset)
            text += f" {page['ids']} {page['metadatas']}"
            if len(page["ids"]) < 500:
                break
            offset += 500
        found += [f"{col.name}: {w}" for w in words if w in text]
    return found


def _bob_intact(store: TieredMemoryStore) -> None:
    item = store.get(("users", "bob", "notes"), "b3")
    assert item is not None and item.value == {"content": "bob likes green tea 3"}
    hits = store.search(("users", "bob"), query="green tea", limit=10)
    assert {h.key for h in hits} == {f"b{i}" for i in range(6)}


def test_erasing_a_users_namespaces_leaves_no_trace_in_any_file(
    tmp_path: Path, ids: tuple[str, str]
) -> None:
    uid, marker = ids
    clock = Clock()
    path = tmp_path / "chroma"
    store = _embedded(path, clock)
    _fill(store, uid, marker)
    clock.now += 120  # the TTL item expired: its namespace holds nothing live
    tier: Any = store.tiers["long"]
    assert isinstance(tier._layout.resolve(_nsid(("memories", uid))), chromadb.Collection)

    owned = tier.user_namespaces(UserNamespaces(uid))
    assert owned == [("memories", uid), ("users", uid, "notes"), ("users", uid, "tmp")]
    assert tier.user_namespaces(UserNamespaces(uid).owns) == owned  # a plain predicate too

    # The scan sees every vector before the erase (else a clean scan proves nothing).
    seen = {t.rsplit(" ", 1)[1] for t in _vector_traces(path, uid, marker)}
    assert seen == {str(i) for i in range(10)}, seen

    dry = tier.erase_namespaces(owned, dry_run=True)
    assert len(dry[ITEMS]) == 10 and dry[NAMESPACES] == owned
    assert (*("memories", uid), "m5") in dry[ITEMS]
    assert store.get(("memories", uid), "m5") is not None  # the dry run removed nothing

    done = tier.erase_namespaces(owned)
    assert done == dry
    # Namespace ids too: Chroma's log must not keep even the ids of erased records.
    words = [uid, marker, *(_nsid(ns) for ns in owned)]
    assert _chroma_traces(tier.client, words) == []
    assert tier.user_namespaces(UserNamespaces(uid)) == []
    assert store.get(("memories", uid), "m5") is None
    assert store.search(("memories", uid), query=marker) == []
    _bob_intact(store)
    # Idempotent: nothing is found the second time.
    assert tier.erase_namespaces(owned) == {ITEMS: [], NAMESPACES: []}
    store.close()

    assert _raw_traces(path, words) == []
    assert _vector_traces(path, uid, marker) == []
    for name in ("tiered-memory-docs.sqlite3", "tiered-memory-vectors.sqlite3", "chroma.sqlite3"):
        assert _sql_traces(path / name, words) == []
    # Chroma replays its log on open: still consistent, still nothing of the user.
    store = _embedded(path, clock)
    tier = store.tiers["long"]
    assert tier.user_namespaces(UserNamespaces(uid)) == []
    _bob_intact(store)
    store.put(("users", "bob", "notes"), "b6", {"content": "bob after the erase"})
    assert store.get(("users", "bob", "notes"), "b6") is not None
    store.close()


def _nsid(ns: tuple[str, ...]) -> str:
    from langgraph_tiered_memory.store.tiers._namespaces import namespace_id

    return namespace_id(ns)


def test_erasing_keys_of_a_shared_namespace_removes_them_and_their_terms(
    tmp_path: Path, ids: tuple[str, str]
) -> None:
    uid, marker = ids
    clock = Clock()
    path = tmp_path / "chroma"
    store = _embedded(path, clock)
    shared = ("shared", "facts")
    for i in range(8):
        said = f"{uid} said {marker} {i}" if i in (2, 5) else f"common fact number {i}"
        store.put(shared, f"f{i}", {"content": said})
    tier: Any = store.tiers["long"]

    dry = tier.erase_keys({shared: ["f2", "f5", "missing"]}, dry_run=True)
    assert dry == {ITEMS: [(*shared, "f2"), (*shared, "f5")]}
    assert store.get(shared, "f2") is not None

    assert tier.erase_keys({shared: ["f2", "f5", "missing"]}) == dry
    assert store.get(shared, "f2") is None and store.get(shared, "f5") is None
    assert {h.key for h in store.search(shared, query="common fact", limit=20)} == {
        f"f{i}" for i in (0, 1, 3, 4, 6, 7)
    }
    assert tier.erase_keys({shared: ["f2", "f5"]}) == {ITEMS: []}
    assert _chroma_traces(tier.client, [uid, marker]) == []
    store.close()
    # The successors' context keys were made with the erased texts: rewritten too.
    assert _raw_traces(path, [uid, marker]) == []


def test_a_crash_midway_leaves_what_a_rerun_finds_and_removes(
    tmp_path: Path, ids: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uid, marker = ids
    clock = Clock()
    path = tmp_path / "chroma"
    store = _embedded(path, clock)
    _fill(store, uid, marker)
    tier: Any = store.tiers["long"]
    owned = tier.user_namespaces(UserNamespaces(uid))

    def crash(self: DocMirror, *args: Any) -> None:
        raise RuntimeError("killed")

    with monkeypatch.context() as m:
        m.setattr(DocMirror, "erase_namespace", crash)
        with pytest.raises(RuntimeError, match="killed"):
            tier.erase_namespaces(owned)
    store.close()  # the process died: a new one re-runs the erase

    store = _embedded(path, clock)
    tier = store.tiers["long"]
    assert tier.user_namespaces(UserNamespaces(uid)) == owned  # the registry went last
    again = tier.erase_namespaces(owned)
    assert again[NAMESPACES] == owned and len(again[ITEMS]) >= 3
    assert tier.user_namespaces(UserNamespaces(uid)) == []
    _bob_intact(store)
    store.close()
    assert _raw_traces(path, [uid, marker, *(_nsid(ns) for ns in owned)]) == []


def test_a_chroma_server_store_keeps_nothing_reachable_in_chroma_or_its_redis_index(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    key_prefix: str,
    ids: tuple[str, str],
) -> None:
    uid, marker = ids
    client = chromadb.HttpClient(
        host=chroma_server[0], port=chroma_server[1], settings=Settings(anonymized_telemetry=False)
    )
    prefix = key_prefix
    store = TieredMemoryStore(
        chroma_client=client,
        redis_url=redis_url,
        key_prefix=prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=Clock(),
        history=False,
    )
    store.setup()
    _fill(store, uid, marker)
    tier: Any = store.tiers["long"]
    owned = tier.user_namespaces(UserNamespaces(uid))
    assert owned == [("memories", uid), ("users", uid, "notes"), ("users", uid, "tmp")]
    needles = [uid, marker, *(_nsid(ns) for ns in owned)]
    assert _redis_traces(redis_url, prefix, needles)  # the index held them
    dry = tier.erase_namespaces(owned, dry_run=True)
    assert tier.erase_namespaces(owned) == dry and len(dry[ITEMS]) == 10
    assert tier.erase_namespaces(owned) == {ITEMS: [], NAMESPACES: []}
    mine = [c for c in client.list_collections() if c.name.startswith(prefix)]
    assert mine and _chroma_traces(_Only(mine), [uid, marker]) == []
    assert _redis_traces(redis_url, prefix, needles) == []
    _bob_intact(store)
    store.close()


def _redis_traces(redis_url: str, prefix: str, needles: list[str]) -> list[str]:
    """Keys of `prefix` whose name or content holds a needle (lower-cased)."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    found = []
    try:
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            kind = client.type(key)
            if kind == "hash":
                text = str(client.hgetall(key))
            elif kind == "list":
                text = str(client.lrange(key, 0, -1))
            elif kind == "set":
                text = str(client.smembers(key))
            elif kind == "zset":
                text = str(client.zrange(key, 0, -1))
            elif kind == "string":
                text = str(client.get(key))
            else:
                text = ""
            if any(n.lower() in f"{key} {text}".lower() for n in needles):
                found.append(key)
    finally:
        client.close()
    return found


class _Only:
    """A client listing only some collections (the server is shared by other tests)."""

    def __init__(self, cols: list[Any]):
        self.cols = cols

    def list_collections(self) -> list[Any]:
        return self.cols


def test_a_stopped_chroma_servers_files_hold_nothing_after_the_scrub(
    tmp_path: Path, ids: tuple[str, str], redis_url: str, key_prefix: str
) -> None:
    """The erase purges the server's log through the API; the offline scrub does the rest."""
    uid, marker = ids
    data = tmp_path / "server"
    port = free_port()
    exe = Path(sys.executable).parent / "chroma"
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen(
            [str(exe), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for(port, proc)
            client = chromadb.HttpClient(
                host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)
            )
            store = TieredMemoryStore(
                chroma_client=client,
                redis_url=redis_url,
                key_prefix=key_prefix,
                tiers={"default": "long"},
                index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
                clock=Clock(),
                history=False,
            )
            store.setup()
            _fill(store, uid, marker)
            tier: Any = store.tiers["long"]
            owned = tier.user_namespaces(UserNamespaces(uid))
            tier.erase_namespaces(owned)
            _bob_intact(store)
            store.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    words = [uid, marker, *(_nsid(ns) for ns in owned)]
    # Chroma's log lost every entry of the erased records (flushed through the API).
    assert _sql_traces(data / "chroma.sqlite3", words) == []
    scrub_chroma_dir(data)
    assert _raw_traces(data, words) == []


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, "chroma server exited"
        assert time.monotonic() < deadline, "chroma server did not start in 60 s"
        time.sleep(0.3)  # polling a process we do not control: no event to wait on
