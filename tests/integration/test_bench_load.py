"""`tiered-memory bench load`: concurrent agent sessions on real Redis and Chroma."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from langgraph.store.base import Op, PutOp, Result
from typer.testing import CliRunner

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.cli.app import app
from tiered_memory_benchmarks.load import LoadBenchConfig, run_load_benchmark

pytestmark = pytest.mark.integration

KEYS = ("errors", "lost_updates", "p95_turn_ms", "p50_turn_ms", "turns_per_s", "peak_rss_mb")


def _run_cli(redis_url: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    monkeypatch.setenv("REDIS_URL", redis_url)  # a shared server: the run removes its keys
    result = CliRunner().invoke(app, ["bench", "load", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


@pytest.mark.parametrize("mode", ["async", "threads"])
def test_small_concurrent_run_has_no_errors_and_loses_nothing(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    data = _run_cli(redis_url, monkeypatch, "--sessions", "3", "--turns", "3", "--mode", mode)
    for key in KEYS:
        assert key in data, key
    assert (data["sessions"], data["turns"], data["users"]) == (3, 3, 1)  # one user, 3 sessions
    assert data["errors"] == 0 and data["error_examples"] == []
    assert data["lost_updates"] == 0
    assert data["lost"]["unexpected_memories"] == 0
    assert data["turns_completed"] == 9
    assert data["turns_per_s"] > 0 and data["peak_rss_mb"] > 0
    assert 0 < data["p50_turn_ms"] <= data["p95_turn_ms"] <= data["max_turn_ms"]
    # the reply arrives within the turn (whose deferred writes finish after it)
    assert 0 < data["p50_reply_ms"] <= data["p95_reply_ms"] <= data["max_turn_ms"]
    # the run stored the same memories as the serial replay, beyond the seeds
    seeds = LoadBenchConfig(sessions=3).seed_count
    assert data["memories"] == data["replay"]["memories"] > seeds
    # every turn's searches were counted, as many as in the replay
    assert data["accesses"] == data["replay"]["accesses"] > 0


def _store_dropping_one_put(dropped: list[PutOp]) -> Any:
    """A store factory whose concurrent-run store silently drops the first memory put."""

    class DroppingStore(AsyncTieredMemoryStore):
        async def abatch(self, ops: Iterable[Op]) -> list[Result]:
            ops = list(ops)
            for i, op in enumerate(ops):
                if (
                    not dropped
                    and isinstance(op, PutOp)
                    and op.value is not None
                    and op.namespace[:1] == ("memories",)
                    and not op.key.startswith("seed-")
                ):
                    dropped.append(op)
                    rest = await super().abatch(ops[:i] + ops[i + 1 :])
                    return [*rest[:i], None, *rest[i:]]
            return await super().abatch(ops)

    def factory(phase: str, asynchronous: bool, options: dict[str, Any]) -> Any:
        assert asynchronous
        if phase == "run":
            return DroppingStore(**options)
        return AsyncTieredMemoryStore(**options)

    return factory


def test_detector_reports_a_dropped_memory_write_as_lost(redis_url: str) -> None:
    dropped: list[PutOp] = []
    config = LoadBenchConfig(sessions=2, turns=2, users=1, redis_url=redis_url)
    report = run_load_benchmark(config, store_factory=_store_dropping_one_put(dropped))
    assert len(dropped) == 1
    assert report.run.errors == 0  # the drop is silent: only the replay reveals it
    assert report.lost is not None
    data = report.to_dict()
    assert data["lost_updates"] >= 1 and data["lost"]["lost_memories"] >= 1
    assert data["lost"]["users_with_lost_updates"] == ["user-000"]
    content = dropped[0].value["content"]  # type: ignore[index]
    assert any(content[:40] in example for example in data["lost"]["examples"])
    assert report.failed


def test_sync_store_is_used_in_thread_mode(redis_url: str) -> None:
    seen: list[type] = []

    def factory(phase: str, asynchronous: bool, options: dict[str, Any]) -> Any:
        store = (AsyncTieredMemoryStore if asynchronous else TieredMemoryStore)(**options)
        seen.append(type(store))
        return store

    config = LoadBenchConfig(sessions=2, turns=1, mode="threads", redis_url=redis_url)
    report = run_load_benchmark(config, store_factory=factory)
    assert seen == [TieredMemoryStore, TieredMemoryStore]
    assert report.run.errors == 0 and report.lost is not None and report.lost.total == 0
