"""Erasing a user from a FalkorDB graph also clears FalkorDB's logs of the graph's queries.

FalkorDB logs each query with its parameters (namespaces, keys, the triples' words) in
the stream ``telemetry{<graph>}``, a background task writing it a second or two later,
and slow queries in the graph's `GRAPH.SLOWLOG` and the server's `SLOWLOG`. The tests
read all three after the erase, once the log holds a query sent after it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from langgraph_tiered_memory.errors import BackendUnavailableError
from langgraph_tiered_memory.graph import _falkordb_erase
from langgraph_tiered_memory.graph.erase import erase_user_graph
from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple
from langgraph_tiered_memory.privacy.erasure import ErasureReceipt, UserNamespaces


@pytest.fixture
def graph(falkordb_url: str) -> Iterator[FalkorDBGraph]:
    g = FalkorDBGraph(falkordb_url, graph_name=f"qlog_{uuid.uuid4().hex[:10]}")
    g.setup()
    yield g
    g.drop()
    g.close()


@pytest.fixture
def raw(falkordb_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(falkordb_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def every_command_slow(raw: redis.Redis) -> Iterator[None]:
    """Log every command in the server's SLOWLOG for the test (restored after)."""
    before = raw.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
    raw.config_set("slowlog-log-slower-than", 0)
    yield
    raw.config_set("slowlog-log-slower-than", before)


def _wait_logged(raw: redis.Redis, graph: FalkorDBGraph) -> None:
    """Send a query and return once FalkorDB's query log holds it (so all before it)."""
    nonce = f"probe-{uuid.uuid4().hex}"
    graph._run("RETURN $p", {"p": nonce}, read_only=True)
    deadline = time.monotonic() + 30
    stream = _falkordb_erase.telemetry_stream(graph.graph_name)
    while not any(nonce in str(f) for _, f in raw.xrevrange(stream, count=100)):
        assert time.monotonic() < deadline, "FalkorDB logged no query within 30 s"
        time.sleep(0.05)  # FalkorDB's background task writes the log; nothing to wait on


def _logs(raw: redis.Redis, graph: FalkorDBGraph) -> str:
    """Every query log FalkorDB keeps of the graph, as one text."""
    stream = _falkordb_erase.telemetry_stream(graph.graph_name)
    entries = [str(fields) for _, fields in raw.xrange(stream)]
    try:
        entries += [str(e) for e in raw.execute_command("GRAPH.SLOWLOG", graph.graph_name)]
    except redis.ResponseError as e:
        assert "empty key" in str(e)
    entries += [str(e) for e in raw.execute_command("SLOWLOG", "GET", "-1")]
    return "\n".join(entries)


def test_erase_leaves_no_query_of_the_user_in_falkordbs_logs(
    graph: FalkorDBGraph, raw: redis.Redis, every_command_slow: None
) -> None:
    uid = f"qlog-{uuid.uuid4().hex[:8]}"
    marker = f"mk{uuid.uuid4().hex[:10]}"
    other = f"other-{uuid.uuid4().hex[:8]}"
    graph.replace(
        [
            MemoryTriples(("users", uid), "m1", (Triple.of("I", "drink", f"{marker} tea"),), uid),
            MemoryTriples(("users", other), "m1", (Triple.of("bo", "likes", "jazz"),), other),
        ]
    )
    _wait_logged(raw, graph)
    before = _logs(raw, graph)
    assert uid in before and marker in before  # what the erase has to clear

    gone = erase_user_graph(graph, UserNamespaces(uid))
    _wait_logged(raw, graph)  # whatever the erase's own queries logged is there now

    after = _logs(raw, graph)
    assert uid not in after
    assert marker not in after
    assert gone.triples == [("users", uid, "i", "drink", f"{marker} tea")]
    assert not gone.kept
    # The other user's triple is intact.
    assert [(t.namespace, t.subject) for t in graph.triples(("users", other))] == [
        (("users", other), "bo")
    ]


def test_a_dry_run_leaves_the_logs_alone(graph: FalkorDBGraph, raw: redis.Redis) -> None:
    uid = f"qlog-{uuid.uuid4().hex[:8]}"
    graph.replace([MemoryTriples(("users", uid), "m1", (Triple.of("a", "b", "c"),), uid)])
    _wait_logged(raw, graph)
    erase_user_graph(graph, UserNamespaces(uid), dry_run=True)
    stream = _falkordb_erase.telemetry_stream(graph.graph_name)
    assert any(uid in str(f) for _, f in raw.xrange(stream))


class _FakeServer:
    """A server whose query log never shows the probe (a stalled background task)."""

    def __init__(self, max_info_queries: Any) -> None:
        self.max_info_queries = max_info_queries
        self.sent: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> Any:
        self.sent.append(args)
        if args[:2] == ("GRAPH.CONFIG", "GET"):
            if self.max_info_queries is None:
                raise redis.ResponseError("Unknown configuration field")
            return [args[2], self.max_info_queries]
        if args[0] == "XREVRANGE":
            return []
        if args[0] == "SLOWLOG":
            return []
        return "OK"


def test_a_log_that_never_shows_the_probe_is_an_error_not_a_silent_success() -> None:
    server = _FakeServer(1000)
    now = [0.0]

    def pause(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(BackendUnavailableError, match="Run the erase again"):
        _falkordb_erase.forget_queries(
            lambda *a, **k: [], server, "g", timeout=5, clock=lambda: now[0], pause=pause
        )
    assert ("DEL", "telemetry{g}") not in server.sent  # nothing claimed as cleared


@pytest.mark.parametrize("setting", [0, None], ids=["log-off", "no-such-setting"])
def test_without_a_query_log_nothing_is_awaited(setting: Any) -> None:
    server = _FakeServer(setting)
    _falkordb_erase.forget_queries(
        lambda *a, **k: pytest.fail("no probe query without a log"),
        server,
        "g",
        timeout=5,
        clock=lambda: pytest.fail("no wait without a log"),
    )
    assert ("DEL", "telemetry{g}") in server.sent
    assert ("GRAPH.SLOWLOG", "g", "RESET") in server.sent


def test_a_refused_slowlog_reset_is_reported_as_kept() -> None:
    class Refusing(_FakeServer):
        def __call__(self, *args: Any) -> Any:
            if args == ("SLOWLOG", "GET", "-1"):
                return [[1, 0, 10, ["GRAPH.QUERY", "g", "CYPHER x='u'"], "", ""]]
            if args == ("SLOWLOG", "RESET"):
                raise redis.ResponseError("NOPERM this user has no permissions")
            return super().__call__(*args)

    kept = _falkordb_erase.forget_queries(
        lambda *a, **k: [], Refusing(0), "g", timeout=5, clock=time.monotonic
    )
    assert kept == [_falkordb_erase.KEPT_SLOWLOG]
    receipt = ErasureReceipt.for_user("u")
    from langgraph_tiered_memory.graph.erase import GraphErasure

    GraphErasure(kept=kept).record(receipt)
    assert receipt.kept == [_falkordb_erase.KEPT_SLOWLOG]
