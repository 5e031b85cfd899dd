"""`tiered-memory bench store --writes`: write cost against raw Chroma, embedded and on a server."""

from __future__ import annotations

from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401  # fixture
from tests.unit.test_bench_store import last_json_line

runner = CliRunner()

SINGLES, BATCHES, BATCH, USERS = 6, 2, 3, 3  # 3 first puts of a namespace, 3 later
COLUMNS = ["raw", "raw-default", "long", "hybrid", "redisstore"]


def run_writes(*args: str) -> tuple[dict[str, Any], str]:
    """Run the write mode at a tiny size; return its JSON and the printed table."""
    result = runner.invoke(
        app,
        [
            "bench", "store", "--writes", "--json",
            "--singles", str(SINGLES), "--batches", str(BATCHES), "--batch-size", str(BATCH),
            "--users", str(USERS),
            *args,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = last_json_line(result.stdout)
    assert data["benchmark"] == "store-writes"
    return data, result.stdout


def check_report(data: dict[str, Any], table: str) -> None:
    rows = {row["store"]: row for row in data["results"]}
    assert list(rows) == COLUMNS
    items = 1 + SINGLES + BATCHES * BATCH  # the warm-up item, the single puts, the batches
    assert data["config"]["items"] == items
    raw = rows["raw"]
    for name, row in rows.items():
        assert row["status"] == "ok", row
        assert 0 < row["single_p50_ms"] <= row["single_p95_ms"]
        assert row["batch_per_s"] > 0
        # the ratios are the reported figures over raw Chroma's (raw's own cost is 1x)
        assert row["p50_ratio"] == pytest.approx(row["single_p50_ms"] / raw["single_p50_ms"])
        assert row["p95_ratio"] == pytest.approx(row["single_p95_ms"] / raw["single_p95_ms"])
        assert row["batch_ratio"] == pytest.approx(raw["batch_per_s"] / row["batch_per_s"])
        assert min(row["p50_ratio"], row["p95_ratio"], row["batch_ratio"]) > 0
        # the p50 apart for a namespace's first put and the later ones (SINGLES > users)
        assert 0 < row["first_p50_ms"] and 0 < row["later_p50_ms"]
        assert min(row["first_p50_ms"], row["later_p50_ms"]) <= row["single_p50_ms"]
        assert row["single_p50_ms"] <= max(row["first_p50_ms"], row["later_p50_ms"])
        assert row["first_ratio"] == pytest.approx(row["first_p50_ms"] / raw["first_p50_ms"])
        assert row["later_ratio"] == pytest.approx(row["later_p50_ms"] / raw["later_p50_ms"])
        # every item was written and is found again (collection count / prefix search)
        assert row["written"] == row["found"] == items, name
        assert row["label"] in table
    for figure in (
        "single put p50 ms",
        "namespace's first put p50 ms",
        "later puts p50 ms",
        "single put p95 ms",
        f"batch of {BATCH}: items/s",
    ):
        assert figure in table


def test_write_mode_compares_stores_with_raw_chroma_embedded(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)  # RedisStore's reference column
    data, table = run_writes()
    assert data["environment"]["chroma"] == "embedded"
    check_report(data, table)


def test_write_mode_on_a_chroma_server_cleans_up_its_collections(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, port = chroma_server
    monkeypatch.setenv("REDIS_URL", redis_url)
    data, table = run_writes("--chroma-host", host, "--chroma-port", str(port))
    assert data["environment"]["chroma"] == f"server {host}:{port}"
    check_report(data, table)
    client = chromadb.HttpClient(
        host=host, port=port, settings=Settings(anonymized_telemetry=False)
    )
    run = f"bench_{data['environment']['run_id']}"
    assert [c.name for c in client.list_collections() if c.name.startswith(run)] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sizes", "1000"], "drop --sizes"),
        (["--stores", "short"], "unknown store(s) short"),
        (["--chroma-host", "h", "--chroma-path", "/tmp/x"], "not both"),
    ],
)
def test_write_mode_refuses_options_of_other_modes(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["bench", "store", "--writes", *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
