"""What a long-tier write costs on a Chroma server, and the state it keeps in Redis.

A put is one Chroma call (the upsert) and two Redis round trips (the begin script that
takes the namespace lock, the commit that releases it). What the write used to read
back from Chroma (the replaced version's write id, vector counts, creation time) comes
from item headers in Redis; a store written before those existed reads them from
Chroma once and writes them back. Recovery at open leaves a namespace another writer
holds alone.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import chromadb
import pytest
import redis
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings
from langgraph.store.base import PutOp

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy import memory_history
from langgraph_tiered_memory.ranking.keys import context_text
from langgraph_tiered_memory.store.tiers._namespaces import encode_namespace, namespace_id
from langgraph_tiered_memory.store.tiers.chroma_layout import bucket_of
from tests.fakes import HashingEmbeddings
from tests.integration.test_long_replicas import _replica
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401  (fixture)

Server = tuple[str, int]
NS = ("users", "ana", "memories")
CHROMA_CALLS = ("get", "upsert", "delete", "update", "query", "count", "add")


@contextmanager
def chroma_calls(monkeypatch: pytest.MonkeyPatch, label: str = "") -> Iterator[Counter[str]]:
    """Count Chroma collection calls by method name (prefixed with `label`)."""
    calls: Counter[str] = Counter()
    with monkeypatch.context() as m:
        for name in CHROMA_CALLS:
            original = getattr(Collection, name)

            def wrapper(self: Any, *a: Any, _f: Callable[..., Any] = original,
                        _n: str = name, **k: Any) -> Any:  # fmt: skip
                calls[f"{label}{_n}"] += 1
                return _f(self, *a, **k)

            m.setattr(Collection, name, wrapper)
        yield calls


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch, store: TieredMemoryStore) -> Iterator[Counter[str]]:
    """Count Chroma collection calls and Redis round trips of the store's long tier."""
    with chroma_calls(monkeypatch, "chroma ") as calls, monkeypatch.context() as m:
        r = store.tiers["long"].redis  # type: ignore[attr-defined]
        command, pipeline = r.execute_command, r.pipeline

        def execute_command(*a: Any, **k: Any) -> Any:
            calls["redis"] += 1
            return command(*a, **k)

        def make_pipeline(*a: Any, **k: Any) -> Any:
            calls["redis"] += 1  # one round trip per pipeline
            return pipeline(*a, **k)

        m.setattr(r, "execute_command", execute_command)
        m.setattr(r, "pipeline", make_pipeline)
        yield calls


@pytest.mark.parametrize("mode", ["similarity", "memory"])
def test_a_server_put_is_one_chroma_upsert_and_two_redis_round_trips(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    store = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": mode})
    try:
        store.put(NS, "a", {"text": "Ana keeps bees on her roof"})  # registers the namespace
        with counted(monkeypatch, store) as calls:
            store.put(NS, "b", {"text": "Ana learns the cello"})
        # Memory mode: the store first reads which keys are memories and the text of
        # the memory written before, in one round trip (its context key is embedded
        # before the write).
        planning = 1 if mode == "memory" else 0
        assert dict(calls) == {"chroma upsert": 1, "redis": 2 + planning}
        if mode == "similarity":  # one record per item: a rewrite leaves nothing stale
            with counted(monkeypatch, store) as calls:
                store.put(NS, "b", {"text": "Ana learns the viola"})
            assert dict(calls) == {"chroma upsert": 1, "redis": 2}
        assert store.get(NS, "b").value["text"].startswith("Ana learns the")  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_memory_batch_reads_its_context_inputs_in_one_round_trip_per_namespace(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "memory"})
    other = ("users", "bo", "memories")
    old = {"a": "Ana keeps bees on her roof", "b": "Ana learns the cello"}
    new = {"b": "Ana learns the viola", "c": "Ana flies to Oslo in May", "d": "Ana bakes rye"}
    try:
        for key, text in old.items():
            store.put(NS, key, {"text": text})
        store.put(other, "x", {"text": "Bo sails"})
        embedded: list[str] = []
        embed = HashingEmbeddings.embed_documents

        def record(self: HashingEmbeddings, texts: list[str]) -> list[list[float]]:
            embedded.extend(texts)
            return embed(self, texts)

        monkeypatch.setattr(HashingEmbeddings, "embed_documents", record)
        ops = [PutOp(NS, key, {"text": text}) for key, text in new.items()]
        with counted(monkeypatch, store) as calls:
            store.batch([*ops, PutOp(other, "y", {"text": "Bo rows"})])
        # One planning read per namespace, then begin and commit (both namespaces each).
        assert calls["redis"] == 2 + 2
        # A rewrite's context is the memory before it; the first new memory's, the last
        # stored one; the next new memory's, the new memory before it in the batch.
        for previous, own in [(old["a"], new["b"]), (old["b"], new["c"]), (new["c"], new["d"])]:
            assert context_text(previous, own) in embedded
        assert context_text("Bo sails", "Bo rows") in embedded
    finally:
        store.close()


def _same_bucket(store: TieredMemoryStore, ns: tuple[str, ...]) -> tuple[str, ...]:
    """A new namespace sharing `ns`'s bucket (whose collection the store has opened)."""
    buckets = store.tiers["long"]._layout.buckets  # type: ignore[attr-defined]
    want = bucket_of(namespace_id(ns), buckets)
    for i in itertools.count():
        other = ("users", f"u{i}", "memories")
        if bucket_of(namespace_id(other), buckets) == want:
            return other
    raise AssertionError("unreachable")


def test_a_first_server_put_to_a_namespace_is_one_chroma_call(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    other = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    try:
        store.put(NS, "a", {"text": "Ana keeps bees on her roof"})
        new = _same_bucket(store, NS)
        client = store.tiers["long"].client  # type: ignore[attr-defined]
        opened: list[str] = []
        for name in ("get_collection", "get_or_create_collection", "create_collection"):
            original = getattr(client, name)

            def opening(*a: Any, _f: Callable[..., Any] = original, **k: Any) -> Any:
                opened.append(str(a[0] if a else k.get("name")))
                return _f(*a, **k)

            monkeypatch.setattr(client, name, opening)
        with counted(monkeypatch, store) as calls:
            store.put(new, "k", {"text": "Bo keeps goats"}, ttl=60)
        # The planning read of the registry, the begin script (which registers the
        # namespace) and the commit; in Chroma, only the item.
        assert dict(calls) == {"chroma upsert": 1, "redis": 3}
        assert opened == []
        # Another process lists it, finds its item and knows it has held TTL items.
        assert new in other.list_namespaces(prefix=("users",))
        assert other.get(new, "k").value == {"text": "Bo keeps goats"}  # type: ignore[union-attr]
        assert [it.key for it in other.search(new, query="goats")] == ["k"]
        assert other.tiers["long"]._docs.has_held_ttl(new)  # type: ignore[attr-defined]
        with counted(monkeypatch, other) as calls:  # known now: no registry write
            other.put(new, "k2", {"text": "Bo sells cheese"})
        assert calls["chroma upsert"] == 1 and "chroma get" not in calls
    finally:
        store.close()
        other.close()


def test_only_the_first_ttl_write_of_a_namespace_updates_the_registry(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    r = redis.Redis.from_url(redis_url)
    try:
        store.put(NS, "a", {"text": "Ana keeps bees on her roof"})
        assert r.hget(f"{key_prefix}:lt:reg", encode_namespace(NS)) == b"0"
        with counted(monkeypatch, store) as calls:  # the namespace now holds TTL items
            store.put(NS, "b", {"text": "Ana learns the cello"}, ttl=60)
        # The flag is set by the begin script: no registry write in Chroma.
        assert dict(calls) == {"chroma upsert": 1, "redis": 2}
        assert r.hget(f"{key_prefix}:lt:reg", encode_namespace(NS)) == b"1"
        assert [ttl for ns, ttl in store.tiers["long"]._docs.registered(NS)] == [True]  # type: ignore[attr-defined]
    finally:
        store.close()
    fresh = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    try:  # another process reads the flag from the registry
        with counted(monkeypatch, fresh) as calls:
            fresh.put(NS, "d", {"text": "Ana bakes rye"}, ttl=60)
        assert calls["chroma upsert"] == 1
        assert [it.key for it in fresh.search(NS)] == ["a", "b", "d"]
    finally:
        fresh.close()
        r.close()


def test_a_store_whose_registry_is_only_in_chroma_lists_and_writes_its_namespaces(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stores written before the Redis registry kept their namespaces in Chroma only.

    Later ones kept them in Redis, without their bucket, and kept in Chroma only those
    moved to their own collection: both are copied once.
    """
    plain, timed = ("users", "ana", "memories"), ("users", "bo", "memories")
    later, moved = ("users", "cy", "memories"), ("users", "dee", "memories")
    old = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    old.put(plain, "a", {"text": "Ana keeps bees on her roof"})
    old.put(timed, "a", {"text": "Bo keeps goats"}, ttl=60)
    old.put(later, "a", {"text": "Cy keeps cats"})
    layout = old.tiers["long"]._layout  # type: ignore[attr-defined]
    layout.graduate_at = 2
    for i in range(3):  # moves to its own collection; Redis has its TTL flag
        old.put(moved, f"k{i}", {"text": f"Dee fact {i}"}, ttl=60 if i else None)
    entries = layout.plan([(plain, False), (timed, True), (moved, False)])
    buckets = layout.buckets
    old.close()
    client = chromadb.HttpClient(
        host=chroma_server[0], port=chroma_server[1], settings=Settings(anonymized_telemetry=False)
    )
    client.create_collection(
        f"{key_prefix}-registry",
        embedding_function=None,
        metadata={"tm_kind": "registry", "tm_buckets": buckets},
    ).upsert(ids=list(entries), embeddings=[[1.0]] * 3, metadatas=list(entries.values()))
    r = redis.Redis.from_url(redis_url)
    r.delete(f"{key_prefix}:lt:reg", f"{key_prefix}:lt:regp", f"{key_prefix}:lt:buckets")
    r.hset(
        f"{key_prefix}:lt:reg", mapping={encode_namespace(later): "0", encode_namespace(moved): "1"}
    )
    r.zadd(f"{key_prefix}:lt:regp", {encode_namespace(later): 0, encode_namespace(moved): 0})
    for ns in (plain, timed, later, moved):
        r.hdel(
            f"{key_prefix}:lt:{{{namespace_id(ns)}}}:s",
            "ns",
            "b",
            *(("reg", "d") if ns in (plain, timed) else ()),
        )
    store = _replica(chroma_server, redis_url, key_prefix, scoring={"mode": "similarity"})
    try:
        assert store.list_namespaces(prefix=("users",)) == [plain, timed, later, moved]
        assert [ttl for _, ttl in store.tiers["long"]._docs.registered(("users",))] == [  # type: ignore[attr-defined]
            False,
            True,
            False,
            True,
        ]
        assert store.get(later, "a").value["text"] == "Cy keeps cats"  # type: ignore[union-attr]
        tier: Any = store.tiers["long"]
        assert tier._layout.lookup(namespace_id(moved)) == (True, None)  # its own collection
        assert sorted(it.key for it in store.search(moved)) == ["k0", "k1", "k2"]
        with counted(monkeypatch, store) as calls:  # known: its layout is read once
            store.put(plain, "a", {"text": "Ana keeps wasps on her roof"})
        assert calls["chroma upsert"] == 1
        store.put(timed, "b", {"text": "Bo sells cheese"})
        assert [it.value["text"] for it in store.search(plain)] == [  # type: ignore[index]
            "Ana keeps wasps on her roof"
        ]
        assert sorted(it.key for it in store.search(timed)) == ["a", "b"]
        assert store.tiers["long"]._docs.has_held_ttl(timed)  # type: ignore[attr-defined]
        assert r.get(f"{key_prefix}:lt:buckets") == str(buckets).encode()
    finally:
        store.close()
        r.close()


def _records(store: TieredMemoryStore, nsid: str) -> list[str]:
    tier = store.tiers["long"]
    col = tier._collection(NS, create=False)  # type: ignore[attr-defined]
    return sorted(col.get(include=[])["ids"])


def test_a_put_to_a_store_without_headers_in_redis_reads_them_once_and_backfills(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nsid = namespace_id(NS)
    old = _replica(chroma_server, redis_url, key_prefix, history=True)  # memory mode
    old.put(NS, "a", {"text": "Ana keeps bees on her roof"})
    old.put(NS, "b", {"text": "Ana learns the cello"})
    old.put(NS, "c", {"text": "Ana flies to Oslo in May"})
    created = old.get(NS, "b").created_at  # type: ignore[union-attr]
    before = _records(old, nsid)
    old.close()
    # A store written before the headers were kept in Redis.
    r = redis.Redis.from_url(redis_url)
    r.delete(f"{key_prefix}:lt:{{{nsid}}}:h")
    r.hdel(f"{key_prefix}:lt:{{{nsid}}}:s", "recs")

    store = _replica(chroma_server, redis_url, key_prefix, history=True)
    try:
        store.put(NS, "b", {"text": "Ana learns the viola"})  # a rewrite: stale vectors go
        item = store.get(NS, "b")
        assert item is not None and item.value["text"] == "Ana learns the viola"
        assert item.created_at == created
        after = _records(store, nsid)  # b's vectors of the old write are gone
        assert len(after) == len(before)
        assert [rid for rid in after if rid.endswith(":b")] != [
            rid for rid in before if rid.endswith(":b")
        ]
        assert [e.event for e in memory_history(store, NS, "b")] == ["add", "update"]
        headers = r.hgetall(f"{key_prefix}:lt:{{{nsid}}}:h")
        assert sorted(headers) == [b"a", b"b", b"c"]
        assert int(r.hget(f"{key_prefix}:lt:{{{nsid}}}:s", "recs")) == len(before)  # type: ignore[arg-type]
        with counted(monkeypatch, store) as calls:  # from now on, from Redis
            store.put(NS, "d", {"text": "Ana bakes rye bread"})
        assert dict(calls) == {"chroma upsert": 1, "redis": 2 + 1}  # 1: memory mode planning
    finally:
        store.close()
        r.close()


def test_recovery_at_open_leaves_a_namespace_another_writer_holds(
    chroma_server: Server,  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> None:
    held, free = ("users", "held"), ("users", "free")
    first = _replica(chroma_server, redis_url, key_prefix, history=True)
    first.put(held, "k", {"text": "a memory being rewritten elsewhere"})
    first.put(free, "k", {"text": "a memory a dead writer left"})
    first.close()
    r = redis.Redis.from_url(redis_url)
    base = {ns: f"{key_prefix}:lt:{{{namespace_id(ns)}}}" for ns in (held, free)}
    for ns in (held, free):  # both have intents, as if a write were under way
        r.sadd(f"{base[ns]}:i", "k")
        r.sadd(f"{key_prefix}:lt:intents", namespace_id(ns))
    r.set(f"{base[held]}:lock", "another replica's token", px=30_000)
    try:
        store = _replica(chroma_server, redis_url, key_prefix, history=True)
        try:
            assert r.smembers(f"{base[held]}:i") == {b"k"}  # left to its writer
            assert r.get(f"{base[held]}:lock") == b"another replica's token"
            assert r.smembers(f"{base[free]}:i") == set()  # repaired under its lock
            assert r.sismember(f"{key_prefix}:lt:intents", namespace_id(held))
            assert not r.sismember(f"{key_prefix}:lt:intents", namespace_id(free))
            assert [e.event for e in memory_history(store, held, "k")] == ["add"]
            assert r.get(f"{base[free]}:lock") is None  # the repair released it
        finally:
            store.close()
    finally:
        r.close()
