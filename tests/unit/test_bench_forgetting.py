"""Tests for `tiered-memory bench forgetting` (GC pass and simulated year)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory import MemoryEntry
from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.ranking.forgetting import should_forget
from tiered_memory_benchmarks.forgetting import (
    DAY,
    T_END,
    ForgettingBenchConfig,
    TopicEmbeddings,
    YearResult,
    _steady_state,
)

runner = CliRunner()


def _year(sizes: list[int]) -> YearResult:
    return YearResult(
        policy={},
        days=7 * len(sizes),
        writes=0,
        weekly_sizes=sizes,
        gc_seconds_p50=0.0,
        forgotten=0,
        consolidated=0,
    )


def test_bounded_means_the_second_half_stays_near_the_second_quarter() -> None:
    plateau = [100 * min(w, 13) for w in range(1, 53)]
    assert _year(plateau).bounded
    assert not _year([100 * w for w in range(1, 53)]).bounded  # no forgetting: grows
    assert not _year([100, 200, 300]).bounded  # too short to tell


def test_steady_state_keeps_only_what_last_weeks_pass_kept() -> None:
    config = ForgettingBenchConfig(sizes=[500], users=3)
    memories = _steady_state(config, 500)
    assert len(memories) == 500 and len({m.key for m in memories}) == 500
    previous = T_END - 7 * DAY
    for m in memories:
        assert m.created <= T_END and all(m.created <= a <= T_END for a in m.accesses)
        if m.created >= previous:
            continue
        before = [a for a in m.accesses if a <= previous]
        entry = MemoryEntry(
            m.key,
            "x",
            "fact",
            m.importance,
            datetime.fromtimestamp(m.created, timezone.utc),
            datetime.fromtimestamp(before[-1], timezone.utc) if before else None,
            len(before),
        )
        assert should_forget(entry, now=previous) == (False, "")


def test_topic_embeddings_are_deterministic_and_topical() -> None:
    emb = TopicEmbeddings(32)
    a, b, c = emb.embed_documents(["note about topic 3", "other about topic 3", "about topic 9"])
    assert a == emb.embed_query("note about topic 3")

    def cos(x: list[float], y: list[float]) -> float:
        return sum(p * q for p, q in zip(x, y, strict=True))

    assert cos(a, b) > cos(a, c) + 0.2


def test_cli_prints_the_report_and_judges_too_short_a_year(tmp_path: Any) -> None:
    args = ["bench", "forgetting", "--sizes", "100,200", "--users", "2", "--days", "21"]
    result = runner.invoke(app, [*args, "--writes-per-day", "8", "--max-memories", "10", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    small, large = data["passes"]
    assert (small["size"], small["scanned"]) == (100, 100)
    assert (large["size"], large["scanned"]) == (200, 200) and 0 < large["forgotten"] < 200
    # The headline figures are the largest size's, named after it.
    assert data["gc_size"] == 200 and "gc_seconds_100" not in data
    assert data["gc_seconds_200"] == large["gc_seconds"] > 0
    assert data["pass_seconds_200"] == large["pass_seconds"] > 0
    # The verdicts follow from the passes: time at the largest size against the target,
    # working memory of the largest size against twice the smallest's (plus 1 MiB).
    assert data["gc_within_target"] is (large["gc_seconds"] <= data["gc_target_seconds"]) is True
    bounded = large["working_mib"] <= 2 * small["working_mib"] + 1.0
    assert data["gc_memory_bounded"] is bounded is True
    assert len(data["year"]["weekly_sizes"]) == 3 and data["no_gc_size"] == 168
    assert data["year"]["policy"] == {"max_memories": 10}
    assert data["year_seed_rules"]["policy"] == {}
    capped, seed = data["year"]["weekly_sizes"], data["year_seed_rules"]["weekly_sizes"]
    assert max(capped) <= 2 * 10 < seed[-1]  # at most 10 per user, 2 users
    assert data["bounded"] is False  # three weeks cannot show a level


def test_cli_rejects_bad_sizes() -> None:
    result = runner.invoke(app, ["bench", "forgetting", "--sizes", "10"])
    assert result.exit_code != 0 and "sizes" in result.output


@pytest.mark.parametrize("bad", [{"duplicate_rate": 1.0}, {"users": 0}, {"sizes": []}])
def test_config_names_the_bad_setting(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        ForgettingBenchConfig(**bad).validate()
