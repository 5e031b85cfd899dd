"""`tiered-memory bench graph-search`: search latency with and without the graph channel."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.graph.extract import RuleExtractor, query_entities
from tiered_memory_benchmarks.graph import (
    GraphSearchBenchConfig,
    make_memories,
    make_queries,
)

pytestmark = pytest.mark.integration


def _last_json(output: str) -> dict[str, Any]:
    return json.loads(output.strip().splitlines()[-1])


def test_the_command_times_the_three_settings_side_by_side() -> None:
    result = CliRunner().invoke(
        app,
        ["bench", "graph-search", "--memories", "150", "--queries", "9", "--users", "3", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert "hops 1" in result.output and "search p50 ms" in result.output  # the table
    data = _last_json(result.output)
    assert data["benchmark"] == "graph-search"
    assert data["config"]["memories"] == 150 and data["config"]["queries"] == 9
    assert data["target_p50_ms"] == 20.0
    assert data["triples"] > 0 and data["entities_mean"] > 0
    rows = data["results"]
    assert [(r["setting"], r["graph_weight"]) for r in rows] == [
        ("off", 0.0),
        ("hops 0", 0.5),
        ("hops 1", 0.5),
    ]
    assert [r["graph_hops"] for r in rows[1:]] == [0, 1]
    off, hops0, hops1 = rows
    for row in rows:
        assert 0 < row["p50_ms"] <= row["p95_ms"]
    # Off: the channel ranks nothing and its graph query is not timed.
    assert off["graph_hits_mean"] == 0
    assert off["graph_p50_ms"] is None and off["graph_p95_ms"] is None
    for row in (hops0, hops1):
        assert 0 < row["graph_p50_ms"] <= row["graph_p95_ms"]
    # The queries name entities the memories hold: the channel reaches returned hits,
    # and one hop further reaches at least as many.
    assert 0 < hops0["graph_hits_mean"] <= 10
    assert hops1["graph_hits_mean"] > 0


def test_invalid_options_are_usage_errors() -> None:
    result = CliRunner().invoke(app, ["bench", "graph-search", "--users", "99"])
    assert result.exit_code == 2
    assert "users must be at most" in result.output


def test_the_data_has_hub_entities_and_queries_about_the_memories() -> None:
    config = GraphSearchBenchConfig(memories=600, queries=40, users=3)
    memories = make_memories(config)
    assert memories == make_memories(config)  # deterministic
    assert len({key for _, key, _ in memories}) == 600
    assert {ns for ns, _, _ in memories} == {("users", f"u{u}", "memories") for u in range(3)}
    first = [(ns, v) for ns, _, v in memories if ns[1] == "u0"]
    triples = RuleExtractor().extract(
        [v["content"] for _, v in first], speakers=[v["speaker"] for _, v in first]
    )
    named = Counter(e for found in triples for e in {x for t in found for x in (t[0], t[2])})
    speaker = first[0][1]["speaker"].casefold()
    # The speaker is a hub (in a good share of the user's memories), and so is one
    # place or employer; most entities are named by a few memories only.
    assert named[speaker] >= 0.3 * len(first)
    hubs = [e for e, n in named.items() if n >= 0.15 * len(first) and e != speaker]
    assert hubs
    assert sorted(named.values())[len(named) // 2] <= 0.05 * len(first)
    queries = make_queries(config)
    assert len(queries) == 40 and {u for u, _ in queries} == {"u0", "u1", "u2"}
    asked = [e for u, q in queries if u == "u0" for e in query_entities(q)]
    assert sum(e in named for e in asked) >= len([q for u, q in queries if u == "u0"])
