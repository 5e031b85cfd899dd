"""The embedded knowledge graph: triples in the long tier's SQLite file.

The shared contract runs on a file of its own and on the file of a real long tier.
Tier-level tests write `ItemWrite`s carrying triples through the Chroma tier: the
triples commit in the memory's own transaction, deletes, sweeps and rewrites as
non-memories drop them, and a crash between the Chroma write and the commit is
repaired on the next open.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import chromadb
import pytest
from chromadb.config import Settings

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple
from langgraph_tiered_memory.store._backends import chroma_from_path
from langgraph_tiered_memory.store.tiers import sqlite_graph
from langgraph_tiered_memory.store.tiers._items import ItemWrite
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.chroma_tier import ChromaTier
from langgraph_tiered_memory.store.tiers.chroma_writes import ChromaWrites
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror, PendingGraph
from tests.graph_contract import GraphStoreContract

T = Triple.of
NS = ("users", "u1", "mem")
NOW = 1_700_000_000.0
WORKS = T("Alice", "works at", "Acme")
LIVES = T("Alice", "lives in", "Paris")
KNOWS = T("Bob", "knows", "Alice")


# ---------------------------------------------------------------- the contract
class TestContractOwnFile(GraphStoreContract):
    """The contract on a graph in a SQLite file of its own."""

    @pytest.fixture
    def opened(self, tmp_path: Path) -> Iterator[list[SqliteGraph]]:
        graphs = [SqliteGraph(DocMirror(tmp_path), "tg", owns_source=True)]
        graphs[0].setup()
        yield graphs
        graphs[-1].close()

    @pytest.fixture
    def graph(self, opened: list[SqliteGraph]) -> GraphStore:
        return opened[0]

    @pytest.fixture
    def reopen(self, opened: list[SqliteGraph], tmp_path: Path) -> Callable[[], GraphStore]:
        def again() -> GraphStore:
            opened[-1].close()
            opened.append(SqliteGraph.open(tmp_path, prefix="tg"))
            return opened[-1]

        return again


class _Fields(NamedTuple):
    memory_type: str
    importance: float
    occurred_at: float | None


def _describe(value: dict[str, Any]) -> tuple[str, str, Any] | None:
    """Memory mode for the tests: items with a "text" are memories."""
    if "text" not in value:
        return None
    return value["text"], "", _Fields("fact", 0.5, None)


def _tier(path: Path, prefix: str, *, memory: bool = True) -> ChromaTier:
    tier = ChromaTier(
        None,
        key_prefix=prefix,
        dims=0,
        client_factory=lambda: chroma_from_path(str(path)),
        owns_client=True,
        describe=_describe if memory else None,
    )
    tier.setup()
    return tier


class TestContractOnTheLongTier(GraphStoreContract):
    """The contract on the graph of a real long tier (embedded Chroma, memory mode)."""

    @pytest.fixture
    def opened(self, tmp_path: Path) -> Iterator[list[ChromaTier]]:
        tiers = [_tier(tmp_path, "tc")]
        yield tiers
        tiers[-1].close()

    @pytest.fixture
    def graph(self, opened: list[ChromaTier]) -> GraphStore:
        graph = SqliteGraph.for_tier(opened[0])
        graph.setup()
        return graph

    @pytest.fixture
    def reopen(self, opened: list[ChromaTier], tmp_path: Path) -> Callable[[], GraphStore]:
        def again() -> GraphStore:
            opened[-1].close()
            opened.append(_tier(tmp_path, "tc"))
            return SqliteGraph.for_tier(opened[-1])

        return again


# ---------------------------------------------------------------- tier writes
def _put(
    key: str,
    text: str | None,
    triples: tuple[Triple, ...] | None,
    *,
    ns: tuple[str, ...] = NS,
    ttl: float | None = None,
    user: str | None = "u1",
) -> ItemWrite:
    """An upsert (a memory when `text` is given, else a plain item) carrying `triples`."""
    value: dict[str, Any] = {"text": text} if text is not None else {"plain": key}
    write = ItemWrite(ns, key, value, json.dumps(value), ttl=ttl, triples=triples, user_id=user)
    if text is not None:
        write.memory = _Fields("fact", 0.5, None)
        write.keyword_text = text
    return write


def _delete(key: str, ns: tuple[str, ...] = NS) -> ItemWrite:
    return ItemWrite(ns, key, None, None)


@pytest.fixture
def prefix() -> str:
    return "tg" + uuid.uuid4().hex[:8]


@pytest.fixture(params=["memory", "similarity"])
def tier(request: pytest.FixtureRequest, tmp_path: Path, prefix: str) -> Iterator[ChromaTier]:
    """An embedded long tier; the graph is in its mirror either way."""
    t = _tier(tmp_path / "chroma", prefix, memory=request.param == "memory")
    yield t
    t.close()


def _stored(graph: GraphStore) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    return [(r.namespace[-1], r.memory_keys, tuple(r.triple)) for r in graph.triples(())]


def test_tier_writes_triples_in_the_memory_commit(tier: ChromaTier) -> None:
    graph = SqliteGraph.for_tier(tier)
    tier.write(
        [_put("m1", "alice works at acme", (WORKS, LIVES)), _put("m2", "bob", (KNOWS,))], now=NOW
    )
    assert _stored(graph) == [
        ("mem", ("m1",), tuple(LIVES)),
        ("mem", ("m1",), tuple(WORKS)),
        ("mem", ("m2",), tuple(KNOWS)),
    ]
    assert {r.user_id for r in graph.triples(())} == {"u1"}
    # None: the write changes nothing in the graph; a tuple: exactly those triples.
    tier.write([_put("m1", "alice works at acme, still", None)], now=NOW + 1)
    assert graph.memory_triples(NS, ["m1"]) == {"m1": (LIVES, WORKS)}
    tier.write([_put("m1", "alice works at acme", (WORKS,)), _delete("m2")], now=NOW + 2)
    assert _stored(graph) == [("mem", ("m1",), tuple(WORKS))]
    tier.write([_delete("m1")], now=NOW + 3)
    assert graph.triples(()) == []
    assert tier.get(NS, ["m1", "m2"], now=NOW + 3) == {}


def test_rewriting_a_memory_as_a_plain_item_drops_its_triples(tmp_path: Path, prefix: str) -> None:
    tier = _tier(tmp_path, prefix)
    try:
        graph = SqliteGraph.for_tier(tier)
        tier.write(
            [_put("m1", "alice works at acme", (WORKS,)), _put("m2", "bob", (KNOWS,))], now=NOW
        )
        tier.write([_put("m1", None, None), _put("m2", None, (KNOWS,))], now=NOW + 1)
        # m1 left the memory index and its triples with it; m2's write gave its own.
        assert _stored(graph) == [("mem", ("m2",), tuple(KNOWS))]
        assert tier.memory_stats(NS, ["m1", "m2"]) == {}
    finally:
        tier.close()


def test_a_failing_commit_leaves_neither_the_copy_nor_the_graph(
    tier: ChromaTier, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = SqliteGraph.for_tier(tier)
    tier.write([_put("m1", "alice works at acme", (WORKS,))], now=NOW)

    def broken(self: Any, prefix: str, nsid: str, keys: Any) -> None:
        raise RuntimeError("disk full")

    # The triples `begin` recorded are cleared after the graph was written, in the same
    # transaction.
    with monkeypatch.context() as patched:
        patched.setattr(sqlite_graph.GraphTables, "clear", broken)
        with pytest.raises(RuntimeError, match="disk full"):
            tier.write([_put("m1", "alice lives in paris", (LIVES,))], now=NOW + 1)
    assert graph.memory_triples(NS, ["m1"]) == {"m1": (WORKS,)}
    item = tier.get(NS, ["m1"], now=NOW + 1)["m1"]
    assert item.value == {"text": "alice works at acme"}  # the copy: the old document too
    mirror = tier.index
    assert isinstance(mirror, DocMirror)
    with mirror.locked() as conn:
        assert conn.execute("SELECT count(*) FROM g_pending").fetchone()[0] == 1


def _reopen(tier: ChromaTier, path: Path, prefix: str, *, memory: bool = True) -> ChromaTier:
    tier.close()
    return _tier(path, prefix, memory=memory)


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "similarity"])
def test_a_crash_after_the_chroma_write_is_repaired_on_open(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch, memory: bool
) -> None:
    tier = _tier(tmp_path, prefix, memory=memory)
    tier.write([_put("m1", "alice works at acme", (WORKS,)), _put("m2", "bob", (KNOWS,))], now=NOW)

    def crash(self: Any, p: Any) -> None:
        raise RuntimeError("crash")  # the process dies between the Chroma write and the commit

    with monkeypatch.context() as patched:
        patched.setattr(ChromaWrites, "_commit", crash)
        with pytest.raises(RuntimeError, match="crash"):
            tier.write(
                [
                    _put("m1", "alice lives in paris", (LIVES,)),
                    _put("m3", "c", (KNOWS,)),
                    _delete("m2"),
                ],
                now=NOW + 1,
            )
    graph = SqliteGraph.for_tier(tier)
    assert _stored(graph) == [("mem", ("m1",), tuple(WORKS)), ("mem", ("m2",), tuple(KNOWS))]
    tier = _reopen(tier, tmp_path, prefix, memory=memory)
    try:
        graph = SqliteGraph.for_tier(tier)
        assert _stored(graph) == [("mem", ("m1",), tuple(LIVES)), ("mem", ("m3",), tuple(KNOWS))]
        assert sorted(tier.get(NS, ["m1", "m2", "m3"], now=NOW + 2)) == ["m1", "m3"]
        mirror = tier.index
        assert isinstance(mirror, DocMirror)
        with mirror.locked() as conn:
            assert conn.execute("SELECT count(*) FROM g_pending").fetchone()[0] == 0
    finally:
        tier.close()


def test_a_crash_before_the_chroma_write_keeps_the_old_triples(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tier = _tier(tmp_path, prefix)
    tier.write([_put("m1", "alice works at acme", (WORKS,))], now=NOW)

    def crash(self: Any, targets: Any) -> None:
        raise RuntimeError("crash")

    with monkeypatch.context() as patched:
        patched.setattr(ChromaWrites, "_send", crash)
        with pytest.raises(RuntimeError, match="crash"):
            tier.write(
                [_put("m1", "alice lives in paris", (LIVES,)), _put("m2", "b", (KNOWS,))],
                now=NOW + 1,
            )
    tier = _reopen(tier, tmp_path, prefix)
    try:
        # Chroma still holds m1's first document and no m2: so does the graph.
        assert _stored(SqliteGraph.for_tier(tier)) == [("mem", ("m1",), tuple(WORKS))]
        assert tier.get(NS, ["m1"], now=NOW + 2)["m1"].value == {"text": "alice works at acme"}
    finally:
        tier.close()


def test_sweeping_expired_memories_drops_their_triples(tier: ChromaTier) -> None:
    graph = SqliteGraph.for_tier(tier)
    tier.write(
        [_put("m1", "alice works at acme", (WORKS, KNOWS), ttl=1.0), _put("m2", "bob", (KNOWS,))],
        now=NOW,
    )
    assert tier.sweep(now=NOW + 30) == 0
    assert len(graph.triples(NS)) == 2
    assert tier.sweep(now=NOW + 61) == 1
    assert _stored(graph) == [("mem", ("m2",), tuple(KNOWS))]


def test_expired_with_delete_drops_triples(tier: ChromaTier) -> None:
    graph = SqliteGraph.for_tier(tier)
    tier.write([_put("m1", "alice works at acme", (WORKS,), ttl=1.0)], now=NOW)
    gone = tier.expired(NS, now=NOW + 61, delete=True)
    assert [i.key for i in gone] == ["m1"]
    assert graph.triples(()) == []


def test_a_tier_namespace_of_another_user_stays_apart(tier: ChromaTier) -> None:
    graph = SqliteGraph.for_tier(tier)
    u2 = ("users", "u2", "mem")
    tier.write(
        [
            _put("m1", "alice knows bob", (T("alice", "knows", "bob"),)),
            _put(
                "m1",
                "alice knows eve",
                (T("alice", "knows", "eve"), T("eve", "likes", "rome")),
                ns=u2,
                user="u2",
            ),
        ],
        now=NOW,
    )
    assert [n.entity for n in graph.neighbors(("users",), "bob", hops=2)] == ["alice"]
    assert [(h.namespace, h.key) for h in graph.memories_for(("users",), ["bob"])] == [(NS, "m1")]


# ---------------------------------------------------------------- an in-memory Chroma
@pytest.mark.parametrize("memory", [True, False], ids=["memory", "similarity"])
def test_an_in_memory_chroma_keeps_the_graph_in_its_index_in_either_mode(
    prefix: str, memory: bool
) -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    tier = ChromaTier(client, key_prefix=prefix, dims=0, describe=_describe if memory else None)
    try:
        tier.setup()
        assert isinstance(tier.index, DocMirror) and tier.index.path is None  # in memory
        graph = SqliteGraph.for_tier(tier)
        tier.write(
            [_put("m1", "alice works at acme", (WORKS,)), _put("m2", "b", (KNOWS,))], now=NOW
        )
        tier.write([_delete("m2")], now=NOW + 1)
        assert _stored(graph) == [("mem", ("m1",), tuple(WORKS))]
        assert list(tier.get(NS, ["m1", "m2"], now=NOW + 1)) == ["m1"]
    finally:
        tier.close()


def test_memory_index_path_without_a_chroma_server_is_refused(tmp_path: Path, prefix: str) -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    with pytest.raises(ConfigurationError, match="memory_index_path.*Chroma server"):
        ChromaTier(
            client,
            key_prefix=prefix,
            dims=0,
            describe=_describe,
            memory_index_path=str(tmp_path / "memory-index.sqlite3"),
        )
    assert not (tmp_path / "memory-index.sqlite3").exists()


# ---------------------------------------------------------------- the file's recovery
def test_recover_without_write_ids_drops_the_triples_of_recovered_keys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mirror = DocMirror(tmp_path)
    try:
        graph = SqliteGraph(mirror, "p")
        nsid = namespace_id(NS)
        graph.replace(
            [MemoryTriples(NS, "k1", (WORKS,), "u1"), MemoryTriples(NS, "k2", (KNOWS,), "u1")]
        )
        change = MemoryTriples(NS, "k1", (LIVES,), "u1")
        mirror.begin("p", nsid, ["k1", "k2"], [PendingGraph("w2", change)])
        metas = {"k1": {"_d": "{}"}, "k2": {"_d": "{}"}}
        with caplog.at_level(logging.INFO, logger="langgraph_tiered_memory.store.tiers.doc_mirror"):
            assert mirror.recover("p", lambda n, keys: {k: metas[k] for k in keys}, docs=False) == 2
        assert graph.memory_triples(NS, ["k1", "k2"]) == {"k2": (KNOWS,)}
        assert "1 keys left without triples" in caplog.text
    finally:
        mirror.close()


def test_recover_applies_recorded_triples_only_for_the_write_chroma_holds(tmp_path: Path) -> None:
    mirror = DocMirror(tmp_path)
    try:
        graph = SqliteGraph(mirror, "p")
        nsid = namespace_id(NS)
        graph.replace(
            [MemoryTriples(NS, "k1", (WORKS,), "u1"), MemoryTriples(NS, "k2", (WORKS,), "u1")]
        )
        mirror.begin(
            "p",
            nsid,
            ["k1", "k2", "k3"],
            [
                PendingGraph("new1", MemoryTriples(NS, "k1", (LIVES,), "u1")),
                PendingGraph("new2", MemoryTriples(NS, "k2", (LIVES,), "u1")),
                PendingGraph("new3", MemoryTriples(NS, "k3", (KNOWS,), "u1")),
            ],
        )
        chroma = {"k1": {"_d": '{"w": "new1"}'}, "k2": {"_d": '{"w": "old2"}'}}  # no k3
        mirror.recover(
            "p",
            lambda n, keys: {k: chroma[k] for k in keys if k in chroma},
            write_id=lambda meta: json.loads(meta["_d"])["w"],
        )
        assert graph.memory_triples(NS, ["k1", "k2", "k3"]) == {"k1": (LIVES,), "k2": (WORKS,)}
        assert [r.memory_keys for r in graph.triples(NS)] == [("k1",), ("k2",)]
    finally:
        mirror.close()


def test_ns_key_orders_like_tuples_and_round_trips() -> None:
    spaces = [
        ("a",),
        ("a", "b"),
        ("a b",),
        ("a\x00",),
        ("a\x01", "x"),
        ("a\x02",),
        ("a", "\x02\x01"),
    ]
    keys = [sqlite_graph.ns_key(ns) for ns in spaces]
    assert [sqlite_graph.ns_of_key(k) for k in keys] == spaces
    assert sorted(keys) == [sqlite_graph.ns_key(ns) for ns in sorted(spaces)]
