"""`tiered-memory bench store --namespaces N --per-namespace M` (many small namespaces)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from tiered_memory_benchmarks.store import NamespaceBenchResult

runner = CliRunner()

COLUMNS = set(NamespaceBenchResult.__dataclass_fields__)


def last_json_line(output: str) -> dict[str, Any]:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert lines, "no output"
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def run_namespaces(*args: str) -> dict[str, Any]:
    """Run the namespace mode on 5 namespaces of 3 items; return its JSON."""
    result = runner.invoke(
        app,
        ["bench", "store", "--namespaces", "5", "--per-namespace", "3", "--json", *args],
    )
    assert result.exit_code == 0, result.output
    data = last_json_line(result.stdout)
    assert data["benchmark"] == "store-namespaces"
    assert data["config"]["items"] == 15
    # the table and its footnote come before the JSON line
    assert "1st touch" in result.stdout
    assert "list_namespaces(prefix=('memories',), limit=5)" in result.stdout
    return data


def check_search(figures: dict[str, Any], samples: int) -> None:
    assert 0 < figures["p50_ms"] <= figures["p95_ms"]
    assert figures["samples"] == samples
    # the query is an item's own text, so that item ranks first
    assert figures["hit_at_1"] == 1.0


def check_common(row: dict[str, Any], *, lists_all: bool = True) -> None:
    assert set(row) == COLUMNS
    assert row["status"] == "ok", row
    assert row["put"]["items"] == 15
    assert row["put"]["seconds"] > 0
    assert row["put"]["per_s"] == 15 / row["put"]["seconds"]
    check_search(row["touch"], 4)  # one per namespace but the warm-up one
    check_search(row["warm"], 4)
    assert row["lists"]["p50_ms"] > 0
    assert row["lists"]["listed"] == 5 if lists_all else 1 <= row["lists"]["listed"] <= 5


def check_cold(row: dict[str, Any]) -> None:
    # the fresh process embeds the queries as the writer did and finds the same items
    check_search(row["cold"], 4)
    assert row["cold"]["open_s"] > 0


def test_namespace_mode_measures_long_tier_and_inmemory_store(tmp_path: Path) -> None:
    data = run_namespaces(
        "--stores", "long,inmemory", "--searches", "4", "--chroma-path", str(tmp_path)
    )
    assert data["config"]["searches"] == 4
    rows = {row["store"]: row for row in data["results"]}
    assert list(rows) == ["long", "inmemory"]
    for row in rows.values():
        check_common(row)

    long = rows["long"]
    check_cold(long)
    disk = long["footprint"]
    assert disk["kind"] == "disk"
    assert disk["total_bytes"] > 0
    assert disk["bytes_per_item"] == disk["total_bytes"] / 15
    assert disk["files"] >= 1
    assert disk["files_per_item"] == disk["files"] / 15

    inmemory = rows["inmemory"]  # nothing persists: no cold process, no footprint
    assert inmemory["cold"] is None
    assert inmemory["footprint"] is None

    # the run's own subdirectory of --chroma-path is removed at the end
    assert list(tmp_path.iterdir()) == []


def test_namespace_mode_memory_ranking_and_no_cold(tmp_path: Path) -> None:
    data = run_namespaces(
        "--stores", "hybrid", "--searches", "4", "--no-cold", "--chroma-path", str(tmp_path)
    )
    (row,) = data["results"]
    assert row["store"] == "hybrid"
    check_common(row)
    assert row["cold"] is None
    assert row["footprint"]["bytes_per_item"] > 0


def test_namespace_mode_rejects_sizes_and_lone_per_namespace() -> None:
    both = runner.invoke(app, ["bench", "store", "--namespaces", "5", "--sizes", "100"])
    assert both.exit_code == 2
    assert "not both" in both.output
    lone = runner.invoke(app, ["bench", "store", "--per-namespace", "3"])
    assert lone.exit_code == 2
    assert "--namespaces" in lone.output
    one = runner.invoke(app, ["bench", "store", "--namespaces", "1"])
    assert one.exit_code == 2
