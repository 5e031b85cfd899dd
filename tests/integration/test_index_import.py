"""A server's legacy memory index file (`memory_index_path`) imported into Redis, once.

The fixture (tests/data/legacy/legacy-server.tgz, written by make_server_store.py on the
code of 6da60d7) holds the file and what that code answered. Each test imports a copy
whose rows are renamed from the fixture's prefix "legacy" to the test's `key_prefix`, so
tests share no Redis keys.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import shutil
import sqlite3
import tarfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from falkordb import FalkorDB

from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph
from langgraph_tiered_memory.ranking.terms import FTS_TOKENIZE, keyword_terms
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror
from langgraph_tiered_memory.store.tiers.index_import import import_memory_index
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex

FIXTURE = Path(__file__).parent.parent / "data" / "legacy" / "legacy-server.tgz"
ALICE, BOB = ("users", "alice", "memories"), ("users", "bob", "memories")


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The fixture's memory index file and expected.json."""
    root = tmp_path_factory.mktemp("legacy")
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, filter="data")
    return root / "memory-index.sqlite3", json.loads((root / "expected.json").read_text())


@pytest.fixture
def expected(legacy: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    return legacy[1]


@pytest.fixture
def source(legacy: tuple[Path, dict[str, Any]], tmp_path: Path, key_prefix: str) -> Path:
    """A copy of the file with its rows under `key_prefix`."""
    return _renamed(legacy[0], tmp_path / "replica-a.sqlite3", key_prefix)


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def index(client: redis.Redis, key_prefix: str) -> Iterator[RedisIndex]:
    idx = RedisIndex(client, key_prefix)
    idx.setup()
    yield idx
    client.execute_command("FT.DROPINDEX", idx.index_name)


@pytest.fixture
def graph(falkordb_url: str, key_prefix: str) -> Iterator[FalkorDBGraph]:
    g = FalkorDBGraph(falkordb_url, graph_name=f"{key_prefix}_graph")
    g.setup()
    yield g
    g.close()
    db = FalkorDB.from_url(falkordb_url)
    try:
        if g.graph_name in db.list_graphs():
            db.select_graph(g.graph_name).delete()
    finally:
        db.close()


def _renamed(src: Path, dst: Path, prefix: str) -> Path:
    """Copy the file, moving every row of prefix "legacy" to `prefix`."""
    shutil.copyfile(src, dst)
    conn = sqlite3.connect(dst)
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            columns = {c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')}
            if "prefix" in columns:
                conn.execute(
                    f'UPDATE "{table}" SET prefix = ? || substr(prefix, 7)'
                    " WHERE prefix = 'legacy' OR prefix LIKE 'legacy/%'",
                    (prefix,),
                )
        conn.commit()
    finally:
        conn.close()
    return dst


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _mirror_of(path: Path, tmp: Path) -> DocMirror:
    """The legacy index of a copy of `path` (DocMirror changes the file it opens)."""
    copy = tmp / f"mirror-{uuid.uuid4().hex[:6]}.sqlite3"
    shutil.copyfile(path, copy)
    return DocMirror(copy)


def _keys(expected: dict[str, Any], ns: tuple[str, ...]) -> list[str]:
    head = "/".join(ns) + "/"
    return sorted({k[len(head) :] for k in expected["history"] if k.startswith(head)})


def _snapshot(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    """Every Redis key of the prefix with its value."""
    out: dict[bytes, Any] = {}
    for key in sorted(client.scan_iter(match=f"{prefix}:*", count=1000)):
        kind = client.type(key)
        if kind == b"hash":
            out[key] = client.hgetall(key)
        elif kind == b"list":
            out[key] = client.lrange(key, 0, -1)
        elif kind == b"set":
            out[key] = client.smembers(key)
        elif kind == b"zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        else:
            out[key] = client.get(key)
    return out


def _same_hits(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert [k for k, _ in a] == [k for k, _ in b]
    for (_, x), (_, y) in zip(a, b, strict=True):
        assert math.isclose(x, y, rel_tol=1e-9)


def test_import_gives_every_answer_of_the_legacy_file(
    source: Path,
    index: RedisIndex,
    graph: FalkorDBGraph,
    expected: dict[str, Any],
    key_prefix: str,
    tmp_path: Path,
) -> None:
    before = _digest(source)
    report = import_memory_index(source, index=index, graph=graph)
    assert _digest(source) == before  # the file is never written
    assert not report.before and not report.triples_skipped and report.pending == {}
    assert (report.memories, report.events, report.triples) == (7, 10, 8)

    mirror = _mirror_of(source, tmp_path)
    try:
        for ns in (ALICE, BOB):
            nsid, keys = namespace_id(ns), _keys(expected, ns)
            assert index.memory_stats(key_prefix, nsid, keys) == mirror.memory_stats(
                key_prefix, nsid, keys
            )
            assert [k for _, k, _ in index.memory_page(key_prefix, nsid, 0, 100)] == [
                k for _, k, _ in mirror.memory_page(key_prefix, nsid, 0, 100)
            ]
            for key in [*keys, "new"]:
                assert index.previous_text(key_prefix, nsid, key) == mirror.previous_text(
                    key_prefix, nsid, key
                )
                assert index.history.events(key_prefix, nsid, key, "none") == mirror.history.events(
                    key_prefix, nsid, key, "none"
                )
        for name, hits in expected["hits"].items():
            mode, query = name.split(":", 1)
            terms = keyword_terms(query)
            found = set()
            for ns in (ALICE, BOB):
                nsid = namespace_id(ns)
                got = index.keyword_search(key_prefix, nsid, terms, 5)
                _same_hits(got, mirror.keyword_search(key_prefix, nsid, terms, 5))
                found |= {(tuple(ns), k) for k, _ in got}
            if mode == "keyword":
                assert {(tuple(ns), k) for ns, k, _ in hits} <= found
        assert sorted(
            (t.namespace, t.subject, t.relation, t.object, t.user_id, t.memory_keys)
            for t in graph.triples(("users",), limit=1000)
        ) == sorted(
            (t.namespace, t.subject, t.relation, t.object, t.user_id, t.memory_keys)
            for t in mirror.graph_triples(key_prefix, ("users",), limit=1000)
        )
    finally:
        mirror.close()

    counts = {}
    history = {}
    for ns in (ALICE, BOB):
        nsid, keys = namespace_id(ns), _keys(expected, ns)
        for key, s in index.memory_stats(key_prefix, nsid, keys).items():
            counts[f"{'/'.join(ns)}/{key}"] = [s.access_count, s.last_accessed]
        for key in keys:
            history[f"{'/'.join(ns)}/{key}"] = [
                [e.event, e.at, e.actor, e.content_hash]
                for e in index.history.events(key_prefix, nsid, key, "none")
            ]
    assert counts == expected["counts"]
    assert history == expected["history"]
    assert (
        sorted(
            [list(t.namespace), t.subject, t.relation, t.object]
            for t in graph.triples(("users",), limit=1000)
        )
        == expected["triples"]
    )


def test_importing_the_same_file_again_changes_nothing(
    source: Path,
    index: RedisIndex,
    graph: FalkorDBGraph,
    client: redis.Redis,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    import_memory_index(source, index=index, graph=graph)
    state = _snapshot(client, key_prefix)
    triples = graph.triples(("users",), limit=1000)
    elsewhere = tmp_path / "moved" / "index.sqlite3"  # the fingerprint is not the path
    elsewhere.parent.mkdir()
    shutil.copyfile(source, elsewhere)
    for path in (source, elsewhere):
        report = import_memory_index(path, index=index, graph=graph)
        assert report.before and report.memories == 0
        assert _snapshot(client, key_prefix) == state
        assert graph.triples(("users",), limit=1000) == triples


def _second_replica(source: Path, dst: Path) -> Path:
    """Another process's file: more counts, one event more, a memory more, a text changed."""
    shutil.copyfile(source, dst)
    conn = sqlite3.connect(dst)
    try:
        conn.execute(
            "UPDATE mem SET access_count = access_count + 10, last_accessed ="
            " last_accessed + 100 WHERE key = 'm1'"
        )
        conn.execute("UPDATE mem SET last_accessed = 5.0 WHERE key = 'm2'")
        conn.execute(
            "UPDATE kw_docs SET text = 'zebra crossing' WHERE rid = (SELECT rid FROM mem"
            " WHERE key = 'm2')"
        )
        conn.execute(
            "INSERT INTO mem (prefix, nsid, key, seq, mtype, importance, created, access_count)"
            " SELECT prefix, nsid, 'm6', 6, 'fact', 0.5, 1700000900.0, 2 FROM mem"
            " WHERE key = 'm1'"
        )
        conn.execute(
            "INSERT INTO kw_docs (rid, text, context, time) SELECT rid, 'Anna visits"
            " Quokka', 'My favourite tea is now a green sencha.', '' FROM mem WHERE key = 'm6'"
        )
        # An update of m1 that only this process saw, before m1's other events end.
        conn.execute(
            "INSERT INTO m_history (prefix, nsid, ns, key, seq, at, event, actor, content_hash,"
            " content) SELECT prefix, nsid, ns, key, 2, 1700000070.0, 'update', 'agent', 'h-b',"
            " 'B' FROM m_history WHERE key = 'm1'"
        )
        conn.commit()
    finally:
        conn.close()
    return dst


def test_a_second_replica_file_adds_counts_and_keeps_one_copy_of_shared_events(
    source: Path,
    index: RedisIndex,
    graph: FalkorDBGraph,
    expected: dict[str, Any],
    key_prefix: str,
    tmp_path: Path,
) -> None:
    conn = sqlite3.connect(source)  # an erased memory's event, which both files hold
    conn.execute(
        "INSERT INTO m_history (prefix, nsid, key, seq, at, event) VALUES (?, '', 't-x', 1,"
        " 1700000010.0, 'erased')",
        (key_prefix,),
    )
    conn.commit()
    conn.close()
    other = _second_replica(source, tmp_path / "replica-b.sqlite3")
    assert import_memory_index(source, index=index, graph=graph).events == 11
    report = import_memory_index(other, index=index, graph=graph)
    assert not report.before and report.events == 1  # only B's own event is new

    nsid = namespace_id(ALICE)
    stats = index.memory_stats(key_prefix, nsid, ["m1", "m2", "m3", "m6"])
    counts = expected["counts"]
    m1, m2, m3 = (counts[f"users/alice/memories/{k}"] for k in ("m1", "m2", "m3"))
    assert (stats["m1"].access_count, stats["m1"].last_accessed) == (2 * m1[0] + 10, m1[1] + 100)
    assert (stats["m2"].access_count, stats["m2"].last_accessed) == (2 * m2[0], m2[1])
    assert stats["m3"].access_count == 2 * m3[0]
    assert (stats["m6"].seq, stats["m6"].access_count) == (6, 2)
    # The first file's texts win; the memory only B held is found by its own words.
    assert index.keyword_search(key_prefix, nsid, ["zebra"], 5) == []
    assert [k for k, _ in index.keyword_search(key_prefix, nsid, ["visits"], 5)] == ["m6"]
    assert index.previous_text(key_prefix, nsid, "m6") == "My favourite tea is now a green sencha."

    events = index.history.events(key_prefix, nsid, "m1", "none")
    assert [(e.seq, e.event, e.at, e.actor) for e in events] == [
        (1, "add", 1700000060.0, "user"),
        (2, "update", 1700000070.0, "agent"),
    ]
    bob = namespace_id(BOB)
    assert [e.event for e in index.history.events(key_prefix, bob, "b2", "none")] == [
        "add",
        "deleted",
    ]
    erased = index.history.events(key_prefix, nsid, "gone", "t-x")
    assert [(e.namespace, e.key, e.event, e.at) for e in erased] == [
        (None, "t-x", "erased", 1700000010.0)
    ]


def test_replicas_importing_at_once_import_the_file_once(
    source: Path,
    index: RedisIndex,
    graph: FalkorDBGraph,
    redis_url: str,
    expected: dict[str, Any],
    key_prefix: str,
) -> None:
    reports: list[Any] = []
    errors: list[BaseException] = []

    def replica() -> None:
        c = redis.Redis.from_url(redis_url)
        try:
            reports.append(
                import_memory_index(source, index=RedisIndex(c, key_prefix), graph=graph)
            )
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=replica) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(r.before for r in reports) == [False, True, True, True]
    nsid = namespace_id(ALICE)
    stats = index.memory_stats(key_prefix, nsid, _keys(expected, ALICE))
    assert {k: s.access_count for k, s in stats.items()} == {
        k: expected["counts"][f"users/alice/memories/{k}"][0] for k in stats
    }
    assert len(index.history.events(key_prefix, nsid, "m5", "none")) == 2


def test_triples_without_a_graph_store_are_reported_and_imported_later(
    source: Path,
    index: RedisIndex,
    graph: FalkorDBGraph,
    expected: dict[str, Any],
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "langgraph_tiered_memory"):
        report = import_memory_index(source, index=index, graph=None)
    assert report.triples_skipped and report.triples == 8
    assert "graph=" in caplog.text
    assert graph.triples(("users",), limit=10) == []

    report = import_memory_index(source, index=index, graph=graph)
    assert not report.before and not report.triples_skipped
    assert (
        sorted(
            [list(t.namespace), t.subject, t.relation, t.object]
            for t in graph.triples(("users",), limit=1000)
        )
        == expected["triples"]
    )
    stats = index.memory_stats(key_prefix, namespace_id(ALICE), ["m1"])
    assert stats["m1"].access_count == expected["counts"]["users/alice/memories/m1"][0]
    assert import_memory_index(source, index=index, graph=graph).before


def test_interrupted_writes_in_the_file_are_left_to_recover(
    source: Path, index: RedisIndex, graph: FalkorDBGraph, key_prefix: str
) -> None:
    nsid = namespace_id(BOB)
    conn = sqlite3.connect(source)
    conn.execute("INSERT INTO pending VALUES (?, ?, 'b1'), (?, ?, 'b4')", (key_prefix, nsid) * 2)
    conn.commit()
    conn.close()
    report = import_memory_index(source, index=index, graph=graph)
    assert report.pending == {nsid: ["b1", "b4"]}
    asked: list[tuple[str, list[str]]] = []

    def read(ns: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        asked.append((ns, keys))
        return {}  # Chroma holds neither any more

    assert index.recover(key_prefix, read, lambda meta: None, docs=False) == 2
    assert asked == [(nsid, ["b1", "b4"])]
    assert index.memory_stats(key_prefix, nsid, ["b1", "b3"]).keys() == {"b3"}


@pytest.mark.parametrize("layout", ["own table", "one table per namespace"])
def test_files_of_older_keyword_layouts_give_the_same_rows(
    layout: str,
    source: Path,
    index: RedisIndex,
    graph: FalkorDBGraph,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    mirror = _mirror_of(source, tmp_path)
    nsid = namespace_id(ALICE)
    keys = ["m1", "m2", "m3", "m4", "m5"]
    texts = [mirror.previous_text(key_prefix, nsid, k) for k in [*keys, "new"]]
    hits = mirror.keyword_search(key_prefix, nsid, ["quokka", "sardines"], 5)
    mirror.close()
    # 9e8229f named own tables with each uppercase letter of the prefix as "-" + lowercase.
    safe = re.sub("[A-Z]", lambda m: "-" + m[0].lower(), key_prefix)
    name = f"fts_{safe}_{nsid}" if layout == "own table" else f"fts_{key_prefix}_{nsid}"
    conn = sqlite3.connect(source)
    conn.execute(
        f'CREATE VIRTUAL TABLE "{name}" USING fts5(text, context, time,'
        f" tokenize='{FTS_TOKENIZE}')"
    )
    owned = f"SELECT rid FROM mem WHERE prefix='{key_prefix}' AND nsid='{nsid}'"
    conn.execute(f'INSERT INTO "{name}" (rowid, text, context, time) SELECT * FROM kw_docs'
                 f" WHERE rid IN ({owned})")  # fmt: skip
    conn.execute(f"DELETE FROM kw_docs WHERE rid IN ({owned})")
    if layout == "own table":
        conn.execute("INSERT INTO kw_own VALUES (?, ?, ?)", (key_prefix, nsid, name))
    else:
        conn.execute("DELETE FROM filled WHERE prefix = ?", (f"{key_prefix}/fts-shared",))
    conn.commit()
    conn.close()

    before = _digest(source)
    import_memory_index(source, index=index, graph=graph)
    assert _digest(source) == before
    assert [index.previous_text(key_prefix, nsid, k) for k in [*keys, "new"]] == texts
    _same_hits(index.keyword_search(key_prefix, nsid, ["quokka", "sardines"], 5), hits)
