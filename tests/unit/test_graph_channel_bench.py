"""`bench retrieval --graph on|compare`: the graph channel's figures, with and without."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import Item, PutOp
from rich.console import Console

from langgraph_tiered_memory.ranking.scoring import GRAPH_WEIGHT, Scoring
from tests.unit.test_bench_retrieval import _sample, _write
from tiered_memory_benchmarks._retrieval_config import BENCH_GRAPH_WEIGHT
from tiered_memory_benchmarks.retrieval import (
    RetrievalBenchConfig,
    RetrievalBenchmarkError,
    render_retrieval_report,
    run_retrieval_benchmark,
)


def test_graph_option_is_checked_and_sets_the_channel_weight() -> None:
    assert RetrievalBenchConfig(data="x").validate().graph == "off"
    assert "graph_weight" not in RetrievalBenchConfig(data="x").validate().scoring_config()
    on = RetrievalBenchConfig(data="x", graph="on").validate()
    assert on.scoring_config()["graph_weight"] == (GRAPH_WEIGHT or BENCH_GRAPH_WEIGHT) > 0
    tuned = RetrievalBenchConfig(data="x", graph="compare", overrides={"graph_weight": 0.3})
    assert tuned.validate().scoring_config()["graph_weight"] == 0.3
    with pytest.raises(RetrievalBenchmarkError, match="graph must be one of"):
        RetrievalBenchConfig(data="x", graph="yes").validate()
    with pytest.raises(RetrievalBenchmarkError, match="--mode hybrid"):
        RetrievalBenchConfig(data="x", graph="on", mode="keyword").validate()
    with pytest.raises(RetrievalBenchmarkError, match="--mode hybrid"):
        RetrievalBenchConfig(data="x", graph="on", scoring="similarity").validate()


class _GraphStore:
    """Stands in for TieredMemoryStore(graph=True): the graph channel finds D1:2 first."""

    instances: list[_GraphStore] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.scoring = Scoring.from_config(kwargs["scoring"])
        self.searches: list[tuple[float, dict[str, Any] | None]] = []
        _GraphStore.instances.append(self)

    def setup(self) -> None:
        pass

    def close(self) -> None:
        pass

    def batch(self, ops: list[PutOp]) -> list[None]:
        return [None] * len(ops)

    def search(self, namespace: tuple[str, ...], **kwargs: Any) -> list[Item]:
        self.searches.append((self.scoring.graph_weight, kwargs["filter"]))
        now = datetime.now(timezone.utc)
        keys = ["D2:3", "D1:1", "D1:3", "D2:2", "D1:2"]
        if self.scoring.graph_weight > 0:
            keys = ["D1:2", *keys[:-1]]
        return [Item(value={}, key=k, namespace=namespace, created_at=now, updated_at=now)
                for k in keys][: kwargs["limit"]]  # fmt: skip


def test_compare_asks_each_question_without_and_with_the_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_tiered_memory

    _GraphStore.instances.clear()
    monkeypatch.setattr(langgraph_tiered_memory, "TieredMemoryStore", _GraphStore)
    config = RetrievalBenchConfig(
        data=str(_write(tmp_path, [_sample()])), ks=[1, 5], graph="compare", progress=False
    )
    report = run_retrieval_benchmark(config)
    (store,) = _GraphStore.instances
    assert store.kwargs["graph"] is True
    assert store.scoring.graph_weight > 0  # restored after every search without it
    _, *asked = store.searches  # after the warm-up: off then on, per question
    weights = [w for w, _ in asked]
    assert weights == [0.0, store.scoring.graph_weight] * 3
    # The search without the channel counts the access, the one with it does not.
    assert [f for _, f in asked][:2] == [
        {"$retrieval": "hybrid"},
        {"$retrieval": "hybrid", "$count_access": False},
    ]
    off = report.without_graph
    assert off is not None
    # The multi-hop question's evidence is D1:2 and D2:3.
    assert off.per_category["multi-hop"].recall == {1: 50.0, 5: 100.0}
    assert report.per_category["multi-hop"].recall == {1: 50.0, 5: 100.0}
    assert off.per_category["single-hop"].recall[5] == 100.0  # D1:3
    data = report.to_dict()
    assert data["graph"] == "compare"
    assert data["without_graph"]["per_category"]["multi-hop"]["recall@1"] == 50.0
    json.dumps(data, allow_nan=False)
    out = io.StringIO()
    render_retrieval_report(report, Console(file=out, width=200))
    text = out.getvalue()
    assert "graph compare" in text and "@5 off" in text and "@5 graph" in text
    assert "without the graph channel" in text


def test_graph_on_builds_a_graph_store_and_asks_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_tiered_memory

    _GraphStore.instances.clear()
    monkeypatch.setattr(langgraph_tiered_memory, "TieredMemoryStore", _GraphStore)
    config = RetrievalBenchConfig(
        data=str(_write(tmp_path, [_sample()])), ks=[1], graph="on", progress=False
    )
    report = run_retrieval_benchmark(config)
    (store,) = _GraphStore.instances
    assert store.kwargs["graph"] is True and report.without_graph is None
    assert len(store.searches) == 1 + 3
    # D1:2 first: the multi-hop question finds half its evidence, single-hop none.
    assert report.per_category["multi-hop"].recall == {1: 50.0}
    assert report.per_category["single-hop"].recall == {1: 0.0}
