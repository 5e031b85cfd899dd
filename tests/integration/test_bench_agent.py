"""`tiered-memory bench agent`: turn latency with storage vs without, on the real tiers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from tiered_memory_benchmarks.agent import (
    AgentBenchConfig,
    DelayedChatModel,
    run_agent_benchmark,
)

pytestmark = pytest.mark.integration


def test_the_benchmark_times_the_reply_apart_from_storage(redis_url: str) -> None:
    config = AgentBenchConfig(
        turns=4, warmup=1, delay_ms=20, seed_memories=8, turns_per_session=2, redis_url=redis_url
    )
    report = run_agent_benchmark(config)
    for mode in ("with", "without"):
        assert len(report.reply_ms[mode]) == 4
        assert all(r >= 20 for r in report.reply_ms[mode])
        pairs = zip(report.run_ms[mode], report.reply_ms[mode], strict=True)
        assert all(run >= reply for run, reply in pairs)
    # only the "with" user's memories grew: every turn stored its interaction
    assert report.memories_before == 8 and report.memories_after >= 8 + 5
    assert report.write_failures == 0
    data = report.to_dict()
    assert data["ratio_p50"] == pytest.approx(
        data["with"]["turn_p50_ms"] / data["without"]["turn_p50_ms"], rel=1e-3
    )
    assert data["target_ratio"] == 1.1


def test_cli_prints_a_table_and_a_json_last_line(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    args = ["bench", "agent", "--turns", "2", "--warmup", "0", "--delay-ms", "5"]
    result = CliRunner().invoke(app, [*args, "--seed-memories", "4", "--no-extraction", "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output.strip().splitlines()[-1])
    assert data["benchmark"] == "agent" and data["config"]["extraction"] is False
    assert data["config"]["redis_url"] == "REDIS_URL"
    assert {"turn_p50_ms", "turn_p95_ms", "run_p50_ms"} <= set(data["with"])
    assert "within_target" in data and "Memory agent" in result.output


def test_the_fake_model_waits_and_echoes_the_user() -> None:
    model = DelayedChatModel(delay=0.0)
    assert model.invoke("tea please").content == "Understood. About that: tea please"
    with pytest.raises(ValueError, match="embed"):
        AgentBenchConfig(embed="openai").validate()
