"""Two store objects on one Chroma server and one Redis, as two replicas of a service.

Each store has its own Chroma and Redis clients, as separate processes would; they must
agree on what the long tier holds, and their writers must not undo each other's work.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import chromadb
import pytest
import redis
from chromadb.config import Settings

from langgraph_tiered_memory import ConfigurationError, TieredMemoryStore
from langgraph_tiered_memory.errors import NamespaceLockedError
from langgraph_tiered_memory.privacy import memory_history
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.redis_locks import NamespaceLocks
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401  (fixture)

Server = tuple[str, int]


def _replica(server: Server, redis_url: str, prefix: str, **kwargs: Any) -> TieredMemoryStore:
    client = chromadb.HttpClient(
        host=server[0], port=server[1], settings=Settings(anonymized_telemetry=False)
    )
    store = TieredMemoryStore(
        chroma_client=client,
        redis_url=redis_url,
        tiers={"default": "long"},
        key_prefix=prefix,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
        **kwargs,
    )
    store.setup()
    return store


@pytest.fixture
def replicas(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> Iterator[tuple[TieredMemoryStore, TieredMemoryStore]]:
    a = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    b = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    yield a, b
    a.close()
    b.close()


def test_a_chroma_server_without_redis_is_refused_naming_redis_url(
    chroma_server: Server,  # noqa: F811
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="redis_url="):
        _replica(chroma_server, None, key_prefix, scoring={"mode": "similarity"})  # type: ignore[arg-type]


def test_a_namespace_one_replica_moved_is_written_and_read_where_it_lives_by_the_other(
    replicas: tuple[TieredMemoryStore, TieredMemoryStore],
) -> None:
    a, b = replicas
    ns = ("users", "grows")
    b.put(ns, "k0", {"text": "first memory"})  # b caches: the namespace is in a bucket
    assert b.get(ns, "k0") is not None
    a.tiers["long"]._layout.graduate_at = 4  # type: ignore[attr-defined]
    for i in range(1, 6):  # a moves it to its own collection
        a.put(ns, f"k{i}", {"text": f"memory number {i}"})
    layout = a.tiers["long"]._layout  # type: ignore[attr-defined]
    assert layout.lookup(namespace_id(ns)) == (True, None)  # own collection now
    b.put(ns, "k6", {"text": "written by the other replica"})
    got = a.get(ns, "k6")
    assert got is not None and got.value["text"] == "written by the other replica"
    # The other replica reads the moved items too (a read of the emptied bucket misses).
    assert b.get(ns, "k3") is not None and b.get(ns, "k3").value["text"] == "memory number 3"  # type: ignore[union-attr]
    assert {h.key for h in a.search(ns, query="memory", limit=20)} == {f"k{i}" for i in range(7)}
    assert {h.key for h in b.search(ns, query="memory", limit=20)} == {f"k{i}" for i in range(7)}


def test_a_namespace_moved_to_its_own_collection_is_known_to_a_new_replica_from_redis_alone(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> None:
    ns = ("users", "grows")
    a = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    a.tiers["long"]._layout.graduate_at = 4  # type: ignore[attr-defined]
    for i in range(6):  # past the threshold: a moves it to its own collection
        a.put(ns, f"k{i}", {"text": f"memory number {i}"})
    a.put(("users", "small"), "k0", {"text": "stays in its bucket"})
    a.close()
    client = chromadb.HttpClient(
        host=chroma_server[0], port=chroma_server[1], settings=Settings(anonymized_telemetry=False)
    )
    names = {c.name for c in client.list_collections() if c.name.startswith(key_prefix)}
    assert f"{key_prefix}-ns-{namespace_id(ns)}" in names
    assert f"{key_prefix}-registry" not in names  # the move is recorded in Redis only
    b = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    try:
        assert b.list_namespaces() == [ns, ("users", "small")]
        layout = b.tiers["long"]._layout  # type: ignore[attr-defined]
        assert layout.lookup(namespace_id(ns)) == (True, None)  # its own collection
        assert b.get(ns, "k3").value["text"] == "memory number 3"  # type: ignore[union-attr]
        assert {h.key for h in b.search(ns, query="memory", limit=20)} == {
            f"k{i}" for i in range(6)
        }
    finally:
        b.close()


def test_a_server_store_whose_redis_lost_its_registry_is_refused_naming_redis(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> None:
    a = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    a.put(("users", "ana"), "k0", {"text": "kept in a bucket"})
    a.close()
    r = redis.Redis.from_url(redis_url)
    try:
        r.delete(*r.scan_iter(match=f"{key_prefix}:lt*", count=1000))
    finally:
        r.close()
    with pytest.raises(ConfigurationError, match=r"Redis \(.*\), which lacks namespaces"):
        _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})


def test_exclusive_of_one_replica_holds_back_the_others_write_of_that_namespace(
    replicas: tuple[TieredMemoryStore, TieredMemoryStore],
) -> None:
    a, b = replicas
    ns = ("users", "locked")
    a.put(ns, "k", {"text": "v1"})
    other_ns_done = threading.Event()
    done = threading.Event()

    def write() -> None:
        b.put(("users", "free"), "k", {"text": "another namespace"})
        other_ns_done.set()
        b.put(ns, "k", {"text": "from b"})
        done.set()

    with a.tiers["long"].exclusive(ns):  # type: ignore[call-arg]
        read = a.get(ns, "k")
        assert read is not None
        thread = threading.Thread(target=write)
        thread.start()
        assert other_ns_done.wait(30)  # b's other namespaces are not held back
        assert not done.wait(1.0)  # b waits for the namespace
        a.put(ns, "k", {"text": read.value["text"] + "+a"})
    thread.join(30)
    assert done.is_set()
    assert a.get(ns, "k").value["text"] == "from b"  # type: ignore[union-attr]  # after a's rewrite


def test_the_namespace_lock_serialises_read_and_rewrite_across_replicas(
    replicas: tuple[TieredMemoryStore, TieredMemoryStore],
) -> None:
    ns = ("users", "counter")
    replicas[0].put(ns, "n", {"text": "counter", "n": 0})
    rounds = 8
    errors: list[BaseException] = []

    def bump(store: TieredMemoryStore) -> None:
        try:
            for _ in range(rounds):
                with store.tiers["long"].exclusive(ns):  # type: ignore[call-arg]
                    item = store.get(ns, "n")
                    assert item is not None
                    time.sleep(0.01)  # another writer would land here without the lock
                    store.put(ns, "n", {"text": "counter", "n": item.value["n"] + 1})
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=bump, args=(s,)) for s in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert replicas[1].get(ns, "n").value["n"] == 2 * rounds  # type: ignore[union-attr]


def test_a_namespace_lock_is_reentrant_bounded_and_outlives_no_dead_holder(
    redis_url: str, key_prefix: str
) -> None:
    c1, c2 = redis.Redis.from_url(redis_url), redis.Redis.from_url(redis_url)
    mine = NamespaceLocks(c1, key_prefix, lease=1.0, wait=0.2)
    other = NamespaceLocks(c2, key_prefix, lease=1.0, wait=0.2)
    nsid = "0" * 32
    try:
        with mine.hold([nsid], [("users", "x")]):
            with mine.hold([nsid]):  # the same thread takes it again
                assert mine.holds(nsid)
            assert mine.holds(nsid)  # still held by the outer block
            with pytest.raises(NamespaceLockedError, match=r"\('users', 'x'\)"):
                with other.hold([nsid], [("users", "x")]):
                    pass
            time.sleep(0.6)
            mine.keepalive()  # a long write renews its lease
            time.sleep(0.6)  # past the first lease
            with pytest.raises(NamespaceLockedError):
                with other.hold([nsid]):
                    pass
        assert not mine.holds(nsid)
        with other.hold([nsid]):  # released by its holder: free at once
            pass
        # A holder that dies keeps the namespace for one lease at most.
        key = f"{key_prefix}:lt:{{{nsid}}}:lock"
        assert c1.set(key, "token of a killed process", px=500, nx=True)
        patient = NamespaceLocks(c2, key_prefix, lease=1.0, wait=2.0)
        start = time.monotonic()
        with patient.hold([nsid]):
            assert time.monotonic() - start < 1.5
    finally:
        c1.close()
        c2.close()


@pytest.fixture
def memory_replicas(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> Iterator[tuple[TieredMemoryStore, TieredMemoryStore]]:
    now = [1_700_000_000.0]
    a = _replica(chroma_server, redis_url, key_prefix, clock=lambda: now[0])
    b = _replica(chroma_server, redis_url, key_prefix, clock=lambda: now[0])
    yield a, b
    a.close()
    b.close()


def test_memory_mode_replicas_agree_on_scores_counts_history_and_deletes(
    memory_replicas: tuple[TieredMemoryStore, TieredMemoryStore],
) -> None:
    a, b = memory_replicas
    ns = ("users", "shared")
    a.put(ns, "tea", {"text": "Green tea with invoice XK-4471", "importance": 0.8})
    b.put(ns, "coffee", {"text": "Black coffee every morning", "importance": 0.3})
    a.put(ns, "cake", {"text": "Cheesecake after the invoice meeting", "importance": 0.5})
    b.put(ns, "tea", {"text": "Green tea with invoice XK-4471, paid", "importance": 0.8})

    def ranked(store: TieredMemoryStore, query: str) -> list[tuple[str, float | None]]:
        hits = store.search(ns, query=query, filter={"$count_access": False}, limit=5)
        return [(h.key, h.score) for h in hits]

    for query in ("invoice", "green tea", "coffee morning"):
        assert ranked(a, query) == ranked(b, query)
    keyword = {"$retrieval": "keyword", "$count_access": False}

    def found(store: TieredMemoryStore, query: str) -> list[str]:
        return [h.key for h in store.search(ns, query=query, filter=keyword, limit=3)]

    assert found(b, "XK-4471")[0] == "tea" and found(a, "XK-4471") == found(b, "XK-4471")
    # Accesses counted by either replica add up, whichever replica reads them.
    a.search(ns, query="XK-4471", filter={"$retrieval": "keyword"}, limit=1)
    b.search(ns, query="XK-4471", filter={"$retrieval": "keyword"}, limit=1)
    b.get(ns, "tea")
    for store in (a, b):
        entry = store.get_memory(ns, "tea")
        assert entry is not None and entry.access_count == 3
    # One history, with the events of both replicas' writes.
    events_a, events_b = memory_history(a, ns, "tea"), memory_history(b, ns, "tea")
    assert [e.event for e in events_a] == ["add", "update"]
    assert events_a == events_b
    # A delete by one replica leaves the other's keyword search at once.
    a.delete(ns, "tea")
    assert "tea" not in found(b, "XK-4471")
    assert found(b, "invoice")[0] == "cake"
    assert [e.event for e in memory_history(b, ns, "tea")] == ["add", "update", "deleted"]


def test_similarity_mode_on_a_chroma_server_records_memory_history(
    replicas: tuple[TieredMemoryStore, TieredMemoryStore],
) -> None:
    a, b = replicas
    ns = ("users", "plain")
    a.put(ns, "k", {"text": "one"})
    b.put(ns, "k", {"text": "two"})
    assert [e.event for e in memory_history(b, ns, "k")] == ["add", "update"]
    assert memory_history(a, ns, "k") == memory_history(b, ns, "k")
