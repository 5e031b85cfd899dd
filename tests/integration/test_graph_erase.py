"""Erasing a user from the knowledge graph, checked on the raw storage of each backend.

The contract (`tests/graph_contract.py`) checks `erase` through the protocol; here every
row of the SQLite graph tables (pending writes included) and every FalkorDB node and
edge property is read back, and nothing may still hold the user id.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from falkordb import FalkorDB

from langgraph_tiered_memory.graph._falkordb_erase import namespace_of_key
from langgraph_tiered_memory.graph.erase import erase_user_graph, mentions_any
from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph, namespace_key
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple
from langgraph_tiered_memory.privacy.erasure import UserNamespaces
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror, PendingGraph
from langgraph_tiered_memory.store.tiers.sqlite_db import MIRROR_FILE

T = Triple.of
UID = "zq-user-7"
OTHER = "zq-user-70"
MINE = ("users", UID, "mem")
SHARED = ("shared", "facts")


def _fill(graph: GraphStore) -> None:
    graph.replace(
        [
            MemoryTriples(MINE, "m1", (T("Alice", "works at", "Acme"),), UID),
            MemoryTriples(("memories", UID), "a1", (T(UID, "likes", "plover tea"),), None),
            MemoryTriples(("users", OTHER, "mem"), "m1", (T("alice", "works at", "acme"),), OTHER),
            MemoryTriples(
                SHARED, "s1", (T(f"user {UID}", "likes", "tea"), T("bob", "likes", "jazz")), None
            ),
        ]
    )


def test_mentions_are_whole_words() -> None:
    assert mentions_any("zq-user-7", ["zq-user-7"])
    assert mentions_any("user zq-user-7's cat", ["zq-user-7"])
    assert not mentions_any("zq-user-70", ["zq-user-7"])
    assert not mentions_any("xzq-user-7", ["zq-user-7"])
    assert not mentions_any("anything", [])


def test_namespace_keys_decode() -> None:
    for ns in [(), ("users", "u1"), ("a%1F", "b\x1fc", "%25", "")]:
        assert namespace_of_key(namespace_key(ns)) == ns


# ------------------------------------------------------------------ SQLite
@pytest.fixture
def sqlite_graph(tmp_path: Path) -> Iterator[SqliteGraph]:
    graph = SqliteGraph(DocMirror(tmp_path), "tg", owns_source=True)
    graph.setup()
    yield graph
    graph.close()


def _rows(path: Path) -> list[tuple[str, tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return [
            (table, row)
            for table in ("g_triple", "g_support", "g_pending")
            for row in conn.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed names
        ]
    finally:
        conn.close()


def test_sqlite_rows_and_pending_writes_of_the_user_are_gone(
    sqlite_graph: SqliteGraph, tmp_path: Path
) -> None:
    _fill(sqlite_graph)
    file = sqlite_graph._file()
    # Writes in flight: one in the user's namespace, one shared naming the user.
    drafts = ("users", UID, "drafts")  # a namespace with a write in flight only
    file.begin(
        "tg",
        namespace_id(drafts),
        ["d1"],
        [PendingGraph("w1", MemoryTriples(drafts, "d1", (T("bob", "is", "x"),), UID))],
    )
    shared_pending = MemoryTriples(
        SHARED, "s2", (T(UID, "owns", "a boat"), T("carol", "owns", "a car")), None
    )
    file.begin("tg", namespace_id(SHARED), ["s2"], [PendingGraph("w2", shared_pending)])
    before = _rows(tmp_path / MIRROR_FILE)
    assert any(UID in repr(row) for row in before)

    planned = erase_user_graph(sqlite_graph, UserNamespaces(UID), dry_run=True, names=[UID])
    assert _rows(tmp_path / MIRROR_FILE) == before
    done = erase_user_graph(sqlite_graph, UserNamespaces(UID), names=[UID])
    assert done == planned
    assert done.pending == [(*SHARED, "s2"), (*drafts, "d1")]
    assert len(done.triples) == 3 and done.mentioned == [(SHARED, "s1")]

    after = _rows(tmp_path / MIRROR_FILE)
    assert [row for row in after if UID in repr(row) and OTHER not in repr(row)] == []
    # The shared write in flight keeps its other triple; the other user is intact.
    assert file.graph_memory_triples("tg", SHARED, ["s1"]) == {"s1": (T("bob", "likes", "jazz"),)}
    pending = [row for table, row in after if table == "g_pending"]
    assert [json.loads(str(row[-1])) for row in pending] == [[["carol", "owns", "a car"]]]
    assert [r.user_id for r in sqlite_graph.triples(("users",))] == [OTHER]
    assert erase_user_graph(sqlite_graph, UserNamespaces(UID), names=[UID]).total == 0
    # Nor do the file's bytes (free pages, WAL): every UID left is part of OTHER.
    raw = b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.is_file())
    assert b"plover" not in raw and b"a boat" not in raw
    assert raw.count(UID.encode()) == raw.count(OTHER.encode())


# ------------------------------------------------------------------ FalkorDB
@pytest.fixture
def falkor_graph(falkordb_url: str) -> Iterator[FalkorDBGraph]:
    graph = FalkorDBGraph(falkordb_url, graph_name=f"erase{uuid.uuid4().hex[:12]}")
    graph.setup()
    yield graph
    graph.drop()
    graph.close()


def _nodes(url: str, name: str) -> list[str]:
    """Every node and edge, as text: labels/type and properties."""
    db = FalkorDB.from_url(url)
    try:
        g = db.select_graph(name)
        nodes = g.ro_query("MATCH (n) RETURN labels(n), properties(n)").result_set
        edges = g.ro_query("MATCH ()-[e]->() RETURN type(e), properties(e)").result_set
        return sorted(repr(row) for row in [*nodes, *edges])
    finally:
        db.close()


def test_falkordb_nodes_of_the_user_are_gone(
    falkor_graph: FalkorDBGraph, falkordb_url: str
) -> None:
    _fill(falkor_graph)
    before = _nodes(falkordb_url, falkor_graph.graph_name)
    assert sum(UID in row and OTHER not in row for row in before) >= 6
    planned = erase_user_graph(falkor_graph, UserNamespaces(UID), dry_run=True, names=[UID])
    assert _nodes(falkordb_url, falkor_graph.graph_name) == before
    done = erase_user_graph(falkor_graph, UserNamespaces(UID), names=[UID])
    assert done == planned and len(done.triples) == 3
    after = _nodes(falkordb_url, falkor_graph.graph_name)
    assert [row for row in after if UID in row and OTHER not in row] == []
    # Left: the other user's fact (+ its 2 entities, memory node, 3 edges) and the
    # shared bob-likes-jazz fact (same), nothing else.
    assert len(after) == 2 * 7
    assert not any("plover" in row or "'tea'" in row for row in after)
    assert erase_user_graph(falkor_graph, UserNamespaces(UID), names=[UID]).total == 0


# ------------------------------------------------------------------ both
@pytest.fixture(params=["sqlite", "falkordb"])
def any_graph(request: pytest.FixtureRequest) -> GraphStore:
    name = "sqlite_graph" if request.param == "sqlite" else "falkor_graph"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def test_a_user_named_like_the_anonymous_speaker_erases_no_one_elses_triples(
    any_graph: GraphStore,
) -> None:
    # "I" without a known speaker is the entity "user", in every user's namespace.
    alice, bob = ("users", "alice", "mem"), ("users", "bob", "mem")
    any_graph.replace(
        [
            MemoryTriples(alice, "a1", (T("user", "works at", "Google"),), "alice"),
            MemoryTriples(bob, "b1", (T("user", "lives in", "Berlin"),), "bob"),
            MemoryTriples(("users", "user"), "u1", (T("user", "likes", "tea"),), "user"),
        ]
    )
    done = erase_user_graph(any_graph, UserNamespaces("user"))
    assert [t[:2] for t in done.triples] == [("users", "user")]
    kept = sorted((r.namespace, r.triple.subject) for r in any_graph.triples(("users",)))
    assert kept == [(alice, "user"), (bob, "user")]


def test_an_id_that_is_a_common_word_takes_no_other_users_triple(any_graph: GraphStore) -> None:
    # "2019" is a user id and a year in everyone's facts.
    mine, anas, bos = ("users", "2019", "mem"), ("users", "ana", "mem"), ("memories", "bo")
    any_graph.replace(
        [
            MemoryTriples(mine, "m1", (T("2019", "joined", "acme"),), "2019"),
            MemoryTriples(anas, "a1", (T("boston", "date", "2019"),), "ana"),
            MemoryTriples(bos, "b1", (T("2019", "founded", "paris"),), None),  # bo's layout
            MemoryTriples(SHARED, "s1", (T("expo", "held in", "2019"),), None),
        ]
    )
    others = {(anas, T("boston", "date", "2019")), (bos, T("2019", "founded", "paris"))}
    by_id = erase_user_graph(any_graph, UserNamespaces("2019"), dry_run=True)
    assert by_id.triples == [(*mine, "2019", "joined", "acme")]  # the id is no mention
    named = erase_user_graph(any_graph, UserNamespaces("2019"), names=["2019"])
    assert named.triples == [
        (*SHARED, "expo", "held_in", "2019"),
        (*mine, "2019", "joined", "acme"),
    ]
    assert named.mentioned == [(SHARED, "s1")]
    assert {(r.namespace, r.triple) for r in any_graph.triples(())} == others
