"""`RedisIndex` answers as the SQLite memory index (`DocMirror`, docs=False) does, shared."""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.cluster import RedisCluster

from langgraph_tiered_memory.errors import BackendUnavailableError, ConfigurationError
from langgraph_tiered_memory.graph.types import MemoryTriples
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    namespace_id,
)
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex, _search_reply
from langgraph_tiered_memory.store.tiers.sqlite_history import HistoryRow, Selection
from langgraph_tiered_memory.store.tiers.sqlite_stats import MemoryRow

_WORDS = ["run", "running", "s", "ies", "café", "2023", "june", "dog", "dogs", "ß", "λόγος"]
_WORDS += ["trip", "camping", "camped", "x", "the"]
_KEYS = [f"k{i}" for i in range(8)]
_NS = ("users", "u1", "memories")

_text = st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join)
_row = st.builds(
    MemoryRow,
    _text,
    _text,
    _text,
    st.sampled_from(["fact", "event"]),
    st.floats(0, 1),
    st.none() | st.floats(0, 2e9),
    st.floats(0, 2e9),
)
_event = st.builds(
    HistoryRow,
    st.sampled_from(_KEYS),
    st.floats(0, 2e9),
    st.sampled_from(["add", "update", "deleted"]),
    st.none() | st.just("user"),
    st.none() | st.text(max_size=5),
    st.none() | st.just("h0"),
    st.none() | st.just("h1"),
    st.none() | _text,
    st.none() | st.sampled_from(["sa", "sb", "sa sb"]),
)
_commit = st.tuples(
    st.just("commit"),
    st.dictionaries(st.sampled_from(_KEYS), _row, max_size=4),
    st.lists(st.sampled_from(_KEYS), max_size=3),
    st.lists(st.sampled_from(_KEYS), max_size=2),
    st.lists(_event, max_size=3),
)
_touch = st.tuples(
    st.just("touch"), st.lists(st.sampled_from(_KEYS), max_size=4), st.floats(0, 2e9)
)
_recover = st.tuples(
    st.just("recover"),
    st.dictionaries(st.sampled_from(_KEYS), st.none() | _row, max_size=3),
    st.lists(st.sampled_from(_KEYS), max_size=2),
)
_ops = st.lists(st.one_of(_commit, _touch, _recover), min_size=1, max_size=12)


@pytest.fixture(params=[2, 3])
def client(redis_url: str, request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """A client speaking RESP2 or RESP3 (search replies differ)."""
    c = redis.Redis.from_url(redis_url, protocol=request.param)
    yield c
    c.close()


@pytest.fixture
def index(client: redis.Redis, key_prefix: str) -> RedisIndex:
    idx = RedisIndex(client, key_prefix)
    idx.setup()
    idx.setup()  # idempotent
    return idx


def _apply(target: Any, prefix: str, nsid: str, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "commit":
        _, rows, deletes, forget, events = op
        history = (_NS, events) if events else None
        target.commit(
            prefix,
            nsid,
            memories=rows,
            deletes=deletes,
            forget=forget,
            done=list(rows),
            docs=False,
            history=history,
        )
    elif kind == "touch":
        target.touch(prefix, [(nsid, k) for k in op[1]], op[2])
    else:
        _, records, pending = op
        keys = sorted({*records, *pending})
        target.begin(prefix, nsid, keys)

        def read(ns: str, asked: list[str]) -> dict[str, dict[str, Any]]:
            return {k: {"row": records[k]} for k in asked if k in records}

        def history(
            ns: str, asked: list[str], current: dict[str, Any], before: dict[str, Any]
        ) -> tuple[Any, list[HistoryRow]]:
            return _NS, [
                HistoryRow(k, 5.0, "recovered", "system", None, None, None, None)
                for k in asked
                if k in current
            ]

        target.recover(prefix, read, lambda m: m["row"], docs=False, history=history)


def _answers(target: Any, prefix: str, nsid: str) -> dict[str, Any]:
    out: dict[str, Any] = {"stats": target.memory_stats(prefix, nsid, _KEYS)}
    pages, after = [], 0
    while page := target.memory_page(prefix, nsid, after, 3):
        pages += [(k, s) for _, k, s in page]
        after = page[-1][0]
    out["pages"] = pages
    out["previous"] = [target.previous_text(prefix, nsid, k) for k in [*_KEYS, "new"]]
    inputs = target.context_inputs(prefix, nsid, [*_KEYS, "new"])  # both reads in one
    assert inputs.memories == out["stats"].keys()
    assert list(inputs.previous.values()) == out["previous"]
    out["successors"] = [
        target.context_successors(prefix, nsid, _KEYS[i : i + 3], _KEYS[i + 3 : i + 4])
        for i in range(0, 8, 2)
    ]
    out["events"] = [target.history.events(prefix, nsid, k, f"t-{k}") for k in _KEYS]
    out["last"] = target.history.last(prefix, nsid, _KEYS)
    out["select"] = target.history.select(prefix, Selection(subjects=["sa"]))
    out["namespaces"] = target.history.namespaces(prefix)
    out["ns_of"] = target.history.namespace_of(prefix, nsid)
    out["keys"] = target.namespace_keys(prefix, nsid)
    return out


def _same_hits(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert [k for k, _ in a] == [k for k, _ in b]
    for (_, x), (_, y) in zip(a, b, strict=True):
        assert math.isclose(x, y, rel_tol=1e-9)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=_ops,
    queries=st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4), max_size=2),
)
def test_op_sequences_give_the_sqlite_index_answers(
    client: redis.Redis, key_prefix: str, ops: list[tuple[Any, ...]], queries: list[list[str]]
) -> None:
    nsid = uuid.uuid4().hex
    prefix = f"{key_prefix}:{nsid[:8]}"  # history is per prefix: one per example
    index = RedisIndex(client, prefix)
    index.setup()
    mirror = DocMirror(":memory:")
    try:
        for op in ops:
            _apply(mirror, prefix, nsid, op)
            _apply(index, prefix, nsid, op)
            for terms in [*queries, ["dog", "run"], ["s"]]:
                for limit in (1, 20):
                    _same_hits(
                        index.keyword_search(prefix, nsid, terms, limit),
                        mirror.keyword_search(prefix, nsid, terms, limit),
                    )
        assert _answers(index, prefix, nsid) == _answers(mirror, prefix, nsid)
        chosen = Selection(nsids=[nsid], subjects=["sb"])
        for dry_run in (True, False):
            assert index.history.tombstone(
                prefix, chosen, lambda ns, k: f"t-{k}", dry_run=dry_run
            ) == mirror.history.tombstone(prefix, chosen, lambda ns, k: f"t-{k}", dry_run=dry_run)
        assert _answers(index, prefix, nsid) == _answers(mirror, prefix, nsid)
    finally:
        mirror.close()
        client.execute_command("FT.DROPINDEX", index.index_name)


def test_terms_in_half_of_a_thousand_memories_are_dropped_as_in_sqlite(
    index: RedisIndex, key_prefix: str
) -> None:
    nsid = uuid.uuid4().hex
    rows = {
        f"m{i}": MemoryRow(
            "dog walk" if i % 2 else f"cat {i % 7}", "", "june", "fact", 0.5, None, 1.0
        )
        for i in range(1100)
    }
    mirror = DocMirror(":memory:")
    try:
        for target in (mirror, index):
            target.commit(key_prefix, nsid, memories=rows, docs=False)
        for terms, limit in ((["dog", "cat", "3"], 10), (["walk", "3", "june"], 300)):
            expected = mirror.keyword_search(key_prefix, nsid, terms, limit)
            assert expected  # "3" is rare enough to stay
            _same_hits(index.keyword_search(key_prefix, nsid, terms, limit), expected)
    finally:
        mirror.close()


def test_touches_from_two_clients_add_up(
    index: RedisIndex, redis_url: str, key_prefix: str
) -> None:
    nsid = uuid.uuid4().hex
    index.commit(
        key_prefix,
        nsid,
        memories={"k": MemoryRow("dog", "", "", "fact", 0.5, None, 1.0)},
        docs=False,
    )

    def touches(start: float) -> None:
        other = redis.Redis.from_url(redis_url)
        try:
            mine = RedisIndex(other, key_prefix)
            for i in range(200):
                mine.touch(key_prefix, [(nsid, "k"), (nsid, "absent")], start + i)
        finally:
            other.close()

    threads = [threading.Thread(target=touches, args=(s,)) for s in (1000.0, 5000.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = index.memory_stats(key_prefix, nsid, ["k", "absent"])
    assert list(stats) == ["k"]
    assert stats["k"].access_count == 400
    assert stats["k"].last_accessed == 5199.0
    # A rewrite keeps the counts.
    index.commit(
        key_prefix,
        nsid,
        memories={"k": MemoryRow("cat", "", "", "fact", 0.9, None, 2.0)},
        docs=False,
    )
    assert index.memory_stats(key_prefix, nsid, ["k"])["k"].access_count == 400


def test_erase_namespace_leaves_no_key_and_no_search_hit(
    index: RedisIndex, client: redis.Redis, key_prefix: str
) -> None:
    names = {ns: encode_namespace(("users", uuid.uuid4().hex)) for ns in ("gone", "kept")}
    nsid, other = (namespace_id(decode_namespace(names[n])) for n in ("gone", "kept"))
    encoded = {nsid: names["gone"], other: names["kept"]}
    rows = {f"k{i}": MemoryRow("dog trip", "camping", "june", "fact", 0.5, None, 1.0) for i in "ab"}
    events = [HistoryRow("ka", 1.0, "add", "user", None, None, "h", "dog trip", "sa")]
    entries = {nsid: {"ns": encoded[nsid], "ttl": False, "m": 3}}  # moving to its own collection
    entries[other] = {"ns": encoded[other], "ttl": False, "b": 1, "d": 4}
    index.registry_put(key_prefix, entries)
    for ns in (nsid, other):
        index.begin(key_prefix, ns, ["kc"])
        index.commit(key_prefix, ns, memories=rows, docs=False, history=(_NS, events))
        index.touch(key_prefix, [(ns, "ka")], 3.0)
    index.history.tombstone(key_prefix, Selection(nsids=[nsid]), lambda ns, k: f"t-{k}")
    index.erase_namespace(key_prefix, nsid, encoded[nsid])
    assert list(client.scan_iter(match=f"*{nsid}*", count=1000)) == []
    assert index.keyword_search(key_prefix, nsid, ["dog"], 10) == []
    found = client.execute_command(
        "FT.SEARCH", index.index_name, f"@ns:{{{nsid}}}", "LIMIT", "0", "0", "DIALECT", "2"
    )
    assert _search_reply(found)[0] == 0
    assert index.registered(key_prefix, "") == [(encoded[other], False)]
    assert index.registry(key_prefix) == [(other, entries[other])]
    assert index.registry(key_prefix, moving=True) == []
    assert [k for k, _ in index.keyword_search(key_prefix, other, ["dog"], 10)] == ["ka", "kb"]
    assert index.namespace_keys(key_prefix, other) == {"ka", "kb", "kc"}


def test_triples_and_document_copies_are_refused(index: RedisIndex, key_prefix: str) -> None:
    triples = [MemoryTriples(_NS, "k", (), None)]
    with pytest.raises(ConfigurationError, match="graph store"):
        index.commit(key_prefix, "n" * 32, docs=False, graph=triples)
    with pytest.raises(ConfigurationError, match="docs=False"):
        index.commit(key_prefix, "n" * 32, memories={})
    index.commit(key_prefix, "n" * 32, docs=False, graph=[])


def test_a_redis_cluster_client_is_refused_with_the_fix() -> None:
    cluster = object.__new__(RedisCluster)  # a cluster client, not connected
    with pytest.raises(ConfigurationError, match="standalone Redis"):
        RedisIndex(cluster, "p")


def test_add_access_adds_counts_keeps_the_latest_access_and_runs_once(
    index: RedisIndex, client: redis.Redis, key_prefix: str
) -> None:
    nsid = uuid.uuid4().hex
    row = MemoryRow("dog", "", "", "fact", 0.5, None, 1.0)
    index.commit(key_prefix, nsid, memories={"a": row, "b": row}, docs=False)
    index.touch(key_prefix, [(nsid, "a")], 50.0)
    once = f"{key_prefix}:lt:meta:once"
    counts = {"a": (3, 20.0), "b": (2, None), "gone": (7, 99.0)}
    assert index.add_access(key_prefix, nsid, counts, once=once)
    assert not index.add_access(key_prefix, nsid, counts, once=once)  # done once
    assert index.add_access(key_prefix, nsid, {"b": (1, 70.0)})
    stats = index.memory_stats(key_prefix, nsid, ["a", "b", "gone"])
    assert {k: (s.access_count, s.last_accessed) for k, s in stats.items()} == {
        "a": (4, 50.0),
        "b": (3, 70.0),
    }
    assert not client.exists(f"{key_prefix}:ltm:{{{nsid}}}:gone")


def test_add_rows_keeps_rows_held_and_places_new_ones_at_their_position(
    index: RedisIndex, key_prefix: str
) -> None:
    nsid = uuid.uuid4().hex
    held = MemoryRow("dog walk", "", "", "fact", 0.5, None, 1.0)
    index.commit(key_prefix, nsid, memories={"a": held}, docs=False)
    index.touch(key_prefix, [(nsid, "a")], 5.0)
    other = MemoryRow("cat nap", "dog walk", "june", "event", 0.9, 3.0, 2.0)
    index.add_rows(key_prefix, nsid, {"a": other, "b": other, "c": other}, {"a": 1, "b": 4, "c": 2})
    stats = index.memory_stats(key_prefix, nsid, ["a", "b", "c"])
    assert (stats["a"].memory_type, stats["a"].access_count) == ("fact", 1)
    assert [(k, s.seq) for k, s in sorted(stats.items())] == [("a", 1), ("b", 4), ("c", 5)]
    assert [k for k, _ in index.keyword_search(key_prefix, nsid, ["cat"], 5)] == ["b", "c"]
    assert index.keyword_search(key_prefix, nsid, ["dog"], 5)[0][0] == "a"


def test_merged_history_keeps_one_copy_of_each_event_in_time_order(
    index: RedisIndex, key_prefix: str
) -> None:
    nsid = uuid.uuid4().hex
    first = HistoryRow("k", 10.0, "add", "user", None, None, "h1", "x", "sa")
    later = HistoryRow("k", 30.0, "update", "user", None, "h1", "h2", "y")
    index.commit(key_prefix, nsid, history=(_NS, [first, later]), docs=False)
    between = HistoryRow("k", 20.0, "update", "agent", None, "h1", "h3", "z", "sb")
    assert index.history.merge(nsid, _NS, [first, between, later]) == 1
    assert index.history.merge(nsid, _NS, [between]) == 0
    events = index.history.events(key_prefix, nsid, "k", "t")
    assert [(e.seq, e.at, e.content_hash) for e in events] == [
        (1, 10.0, "h1"),
        (2, 20.0, "h3"),
        (3, 30.0, "h2"),
    ]
    assert index.history.select(key_prefix, Selection(subjects=["sb"])) == events


def test_a_namespace_past_the_old_candidate_cut_ranks_as_sqlite(
    index: RedisIndex, key_prefix: str
) -> None:
    # Another namespace full of "dog" makes RediSearch's index-wide BM25 prefer "cat" rows,
    # while in this namespace the short "dog" rows are the best: every match is ranked.
    nsid, crowd = uuid.uuid4().hex, uuid.uuid4().hex
    rows = {
        f"m{i}": MemoryRow("dog" if i % 2 else "cat walk in the park", "", "", "fact", 0.5, None, 1)
        for i in range(600)
    }
    others = {f"o{i}": MemoryRow("dog", "", "", "fact", 0.5, None, 1.0) for i in range(2000)}
    index.commit(key_prefix, crowd, memories=others, docs=False)
    mirror = DocMirror(":memory:")
    try:
        for target in (mirror, index):
            target.commit(key_prefix, nsid, memories=rows, docs=False)
        for terms in (["cat", "dog"], ["dog", "park"], ["walk"]):
            expected = mirror.keyword_search(key_prefix, nsid, terms, 10)
            assert len(expected) == 10
            _same_hits(index.keyword_search(key_prefix, nsid, terms, 10), expected)
    finally:
        mirror.close()


def test_a_search_redisearch_stops_at_its_time_limit_raises(
    index: RedisIndex, client: redis.Redis, key_prefix: str
) -> None:
    nsid = uuid.uuid4().hex
    rows = {
        f"m{i}": MemoryRow("dog walk" if i % 5 < 2 else "cat", "", "", "fact", 0.5, None, 1.0)
        for i in range(20000)
    }  # "dog" and "walk" in 40% of the rows: kept, 8,000 matches to search
    index.commit(key_prefix, nsid, memories=rows, docs=False)
    assert len(index.keyword_search(key_prefix, nsid, ["dog", "walk"], 5)) == 5
    found = client.execute_command("FT.CONFIG", "GET", "TIMEOUT")  # RESP2: [[name, value]]
    before = found[b"TIMEOUT"] if isinstance(found, dict) else found[0][1]
    client.execute_command("FT.CONFIG", "SET", "TIMEOUT", "1")
    try:
        with pytest.raises(BackendUnavailableError, match="time limit.*partial"):
            index.keyword_search(key_prefix, nsid, ["dog", "walk"], 5)
    finally:
        client.execute_command("FT.CONFIG", "SET", "TIMEOUT", before)


def test_setup_warns_when_redis_may_drop_the_index(
    client: redis.Redis, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An evicting or non-persistent Redis is named at setup, with the setting to change."""
    before = {
        k.decode() if isinstance(k, bytes) else k: v
        for name in ("maxmemory-policy", "appendonly", "save")
        for k, v in client.config_get(name).items()
    }
    try:
        client.config_set("maxmemory-policy", "allkeys-lru")
        client.config_set("appendonly", "no")
        client.config_set("save", "")
        with caplog.at_level("WARNING", logger="langgraph_tiered_memory"):
            RedisIndex(client, key_prefix).setup()
        text = caplog.text
        assert "allkeys-lru" in text and "noeviction" in text
        assert "appendonly yes" in text
        caplog.clear()
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("save", "3600 1")
        with caplog.at_level("WARNING", logger="langgraph_tiered_memory"):
            RedisIndex(client, key_prefix).setup()
        assert "evicts" not in caplog.text and "persists nothing" not in caplog.text
    finally:
        for k, v in before.items():
            client.config_set(k, v)
