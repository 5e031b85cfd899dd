"""Graph order is write order on a Chroma server, and a graph left behind is repaired.

Replicas (stores on one Chroma server and one Redis) update the shared FalkorDB graph
after the long tier's write, inside the namespaces' write locks (a batch over several
namespaces takes them in one order), so the graph ends with the triples of the value the
tier kept. A graph update that does not happen (the graph
failed; a process dying there is the same) leaves the memory listed in the due record
`<prefix>:lt:graph_due`, which the next store's `setup()` repairs.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis
from langgraph.store.base import PutOp

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.graph import graph_triples, rebuild_graph
from langgraph_tiered_memory.graph.types import Triple
from langgraph_tiered_memory.store._graph_write import GraphSyncError
from tests.integration.test_graph_default_server import (  # noqa: F401
    ANNA,
    BEN,
    Replicas,
    _prefix,
    chroma_server,
    prefixes,
    replicas,
)

ROUNDS = 12
SLOW = 0.15
"""Seconds a slow replica's graph update takes (one replica per round is slow)."""


def _triples(store: TieredMemoryStore, key: str, ns: tuple[str, ...] = ANNA) -> set[Triple]:
    return {
        Triple(r.subject, r.relation, r.object)
        for r in graph_triples(store, ns, limit=1000)
        if key in r.memory_keys
    }


def _expected(store: TieredMemoryStore, key: str, ns: tuple[str, ...] = ANNA) -> set[Triple]:
    """The triples of the value the tier holds now (none when the memory is gone)."""
    item = store.get(ns, key)
    if item is None:
        return set()
    [found] = store.graph_extractor.extract([item.value["content"]], speakers=[None])
    return set(found)


def _slow_graph(
    store: TieredMemoryStore, delay: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph that takes `delay[0]` seconds to answer, as one over a network may."""
    graph = store.graph
    real = graph.replace  # type: ignore[union-attr]

    def replace(changes: Any) -> None:
        time.sleep(delay[0])
        real(changes)

    monkeypatch.setattr(graph, "replace", replace)


def _due(redis_url: str, prefix: str) -> set[bytes]:
    client = redis.Redis.from_url(redis_url)
    try:
        return set(client.smembers(f"{prefix}:lt:graph_due"))
    finally:
        client.close()


def test_replicas_rewriting_one_memory_leave_the_graph_on_the_value_that_was_kept(
    replicas: Replicas,  # noqa: F811
    prefixes: list[str],  # noqa: F811
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = _prefix(prefixes)
    stores = [replicas.open(prefix), replicas.open(prefix)]
    delays = [[0.0], [0.0]]
    for store, delay in zip(stores, delays, strict=True):
        store.setup()
        _slow_graph(store, delay, monkeypatch)
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def rewrite(i: int, store: TieredMemoryStore, round_: int) -> None:
        try:
            start.wait(timeout=30)
            if i == 1 and round_ % 4 == 3:
                store.delete(ANNA, "m1")
            else:
                city = ("Paris", "Lisbon")[i]
                store.put(ANNA, "m1", {"content": f"Anna lives in {city} {round_}."})
            # One batch over two namespaces, in opposite orders on the two replicas.
            pair = [
                PutOp(ns, "pair", {"content": f"{ns[1].title()} works at Firm {i} {round_}."})
                for ns in (ANNA, BEN)
            ]
            store.batch(pair[:: 1 - 2 * i])
        except BaseException as e:  # reported by the main thread
            failures.append(e)

    behind: list[int] = []
    for round_ in range(ROUNDS):
        for i, delay in enumerate(delays):  # the replicas take turns being slow
            delay[0] = SLOW if (i + round_) % 2 else 0.0
        threads = [
            threading.Thread(target=rewrite, args=(i, store, round_))
            for i, store in enumerate(stores)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not failures, failures
        for ns, key in ((ANNA, "m1"), (ANNA, "pair"), (BEN, "pair")):
            wanted = _expected(stores[0], key, ns)
            assert _expected(stores[1], key, ns) == wanted  # both replicas read one value
            if any(_triples(store, key, ns) != wanted for store in stores):
                behind.append(round_)
        assert _expected(stores[0], "pair", BEN) != set()  # the values do give triples
    assert behind == [], f"the graph kept another write's triples in rounds {behind}"
    assert _due(redis_url, prefix) == set()  # every update finished: nothing is due


def test_a_graph_update_that_fails_is_left_due_and_the_next_setup_repairs_it(
    replicas: Replicas,  # noqa: F811
    prefixes: list[str],  # noqa: F811
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = _prefix(prefixes)
    first = replicas.open(prefix)
    first.setup()
    first.put(ANNA, "m1", {"content": "Anna lives in Paris."})
    first.put(ANNA, "m2", {"content": "Anna works at Acme."})
    first.put(ANNA, "brief", {"content": "Anna works at Initech."}, ttl=0.002)
    graph = first.graph
    real = graph.replace  # type: ignore[union-attr]
    failed: list[int] = []

    def replace_fails_once(changes: Any) -> None:
        if not failed:
            failed.append(len(changes))
            raise ConnectionError("the graph went away")
        real(changes)

    monkeypatch.setattr(graph, "replace", replace_fails_once)
    with pytest.raises(GraphSyncError) as err:
        first.put(ANNA, "m1", {"content": "Anna lives in Lisbon."})
    assert "next setup() repairs them" in str(err.value)
    assert failed == [1]
    # The memory is stored, the graph still has its old triples, and the memory is due.
    assert first.get(ANNA, "m1").value["content"] == "Anna lives in Lisbon."  # type: ignore[union-attr]
    assert _triples(first, "m1") == {Triple("anna", "lives_in", "paris")}
    assert len(_due(redis_url, prefix)) == 1
    # A TTL sweep whose graph update fails is left due too (the swept memory's triples).
    time.sleep(0.2)
    failed.clear()
    with pytest.raises(GraphSyncError, match=r"deleted \(TTL expired\)"):
        first.sweep_ttl()
    assert first.get(ANNA, "brief") is None
    assert _triples(first, "brief") == {Triple("anna", "works_at", "initech")}
    assert len(_due(redis_url, prefix)) == 2

    # The next store to open (another replica, or this process restarted) repairs both.
    second = replicas.open(prefix)
    second.setup()
    assert _due(redis_url, prefix) == set()
    for store in (first, second):
        assert _triples(store, "m1") == {Triple("anna", "lives_in", "lisbon")}
        assert _triples(store, "brief") == set()
        assert _triples(store, "m2") == {Triple("anna", "works_at", "acme")}


def test_rebuild_graph_repairs_the_due_memories_under_its_prefix(
    replicas: Replicas,  # noqa: F811
    prefixes: list[str],  # noqa: F811
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = _prefix(prefixes)
    store = replicas.open(prefix)
    store.setup()
    store.put(ANNA, "m1", {"content": "Anna lives in Paris."})
    graph = store.graph
    real = graph.replace  # type: ignore[union-attr]
    down = [True]

    def replace(changes: Any) -> None:
        if down[0]:
            raise ConnectionError("the graph went away")
        real(changes)

    monkeypatch.setattr(graph, "replace", replace)
    with pytest.raises(GraphSyncError):
        store.delete(ANNA, "m1")
    assert len(_due(redis_url, prefix)) == 1
    down[0] = False
    assert rebuild_graph(store, ("users", "anna")) == 0  # nothing live: m1 was deleted
    assert _triples(store, "m1") == set()
    assert _due(redis_url, prefix) == set()
