"""FalkorDB behind the store: a graph updated after the tier's write, and its repair.

The backend's own contract is tested in `test_graph_falkordb.py`; here: what the
store does when FalkorDB fails after the memories were stored, and `rebuild_graph`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.graph import (
    agraph_triples,
    arebuild_graph,
    graph_triples,
    rebuild_graph,
)
from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph
from langgraph_tiered_memory.store._graph_write import GraphSyncError
from tests.fakes import Clock

U1 = ("users", "u1", "memories")


@pytest.fixture
def options(store_options: dict[str, Any], key_prefix: str, falkordb_url: str) -> dict[str, Any]:
    """The session's store options with a FalkorDB graph of its own."""
    return {
        **store_options,
        "graph": {
            "backend": "falkordb",
            "url": falkordb_url,
            "graph_name": f"{key_prefix}_{uuid.uuid4().hex[:6]}",
        },
    }


class Outage:
    """Makes the graph's `replace` fail while `down` is set."""

    def __init__(self, graph: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = True
        real = graph.replace

        def replace(changes: Any) -> None:
            if self.down:
                raise ConnectionError("FalkorDB at redis://:s3cret@graph:6379 is down")
            real(changes)

        monkeypatch.setattr(graph, "replace", replace)


def _facts(store: TieredMemoryStore, prefix: tuple[str, ...] = ()) -> set[tuple[str, str, str]]:
    return {(r.subject, r.relation, r.object) for r in graph_triples(store, prefix)}


def test_store_uses_falkordb_and_closes_it(options: dict[str, Any]) -> None:
    store = TieredMemoryStore(**options)
    store.setup()
    graph = store.graph
    assert isinstance(graph, FalkorDBGraph) and not graph.in_tier_transaction
    store.put(U1, "m1", {"content": "Anna lives in Paris."})
    assert _facts(store) == {("anna", "lives_in", "paris")}
    closed: list[bool] = []
    real_close = graph.close
    graph.close = lambda: (closed.append(True), real_close())[0]  # type: ignore[method-assign]
    store.close()
    assert closed == [True]


def test_failed_graph_update_says_the_memories_are_stored_and_rebuild_repairs(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with TieredMemoryStore.from_conn_string(**options) as store:
        store.put(U1, "old", {"content": "Anna works at Google."})
        outage = Outage(store.graph, monkeypatch)
        with pytest.raises(GraphSyncError) as err:
            store.put(U1, "m1", {"content": "Anna lives in Paris."})
        message = str(err.value)
        assert "memories were stored" in message
        assert "rebuild_graph(store, namespace_prefix=('users', 'u1', 'memories'))" in message
        assert "s3cret" not in message
        assert store.get(U1, "m1") is not None  # the memory is there
        with pytest.raises(GraphSyncError):
            store.delete(U1, "old")
        assert store.get(U1, "old") is None
        assert _facts(store) == {("anna", "works_at", "google")}  # out of date
        outage.down = False
        assert rebuild_graph(store, ("users", "u1")) == 1
        records = graph_triples(store, ())
        assert {(r.subject, r.relation, r.object, r.memory_keys) for r in records} == {
            ("anna", "lives_in", "paris", ("m1",))
        }


async def test_async_failed_update_and_arebuild(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with AsyncTieredMemoryStore.from_conn_string(**options) as store:
        outage = Outage(store.graph, monkeypatch)
        with pytest.raises(GraphSyncError, match="rebuild_graph"):
            await store.aput(U1, "m1", {"content": "Anna lives in Paris."})
        assert await agraph_triples(store, U1) == []
        outage.down = False
        assert await arebuild_graph(store) == 1
        found = await agraph_triples(store, U1)
        assert [(r.subject, r.object) for r in found] == [("anna", "paris")]


def test_failed_sweep_update_names_the_repair(
    options: dict[str, Any], monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    with TieredMemoryStore.from_conn_string(**options) as store:
        store.put(U1, "brief", {"content": "Anna lives in Paris."}, ttl=1)
        Outage(store.graph, monkeypatch)
        clock.now += 120
        with pytest.raises(GraphSyncError, match="deleted \\(TTL expired\\)"):
            store.sweep_ttl()
        monkeypatch.undo()
        assert _facts(store) == {("anna", "lives_in", "paris")}
        assert rebuild_graph(store) == 0  # drops the triples of the swept memory
        assert _facts(store) == set()


def test_falkordb_store_keeps_no_triples_in_the_sqlite_file(options: dict[str, Any]) -> None:
    """The graph lives in FalkorDB only: the tier's SQLite file holds no second copy."""
    import sqlite3

    store = TieredMemoryStore(**options)
    store.setup()
    try:
        store.put(U1, "m1", {"content": "My sister Anna lives in Porto."})
        assert ("anna", "lives_in", "porto") in _facts(store)
    finally:
        store.close()
    con = sqlite3.connect(Path(options["chroma_path"]) / "tiered-memory-docs.sqlite3")
    try:
        counts = [
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("g_triple", "g_support", "g_pending")
        ]
    finally:
        con.close()
    assert counts == [0, 0, 0]
