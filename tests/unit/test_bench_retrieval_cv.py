"""Tests for `bench retrieval --cv` / `--sweep`: folds, choices, verdicts and the run.

The fold, selection and verdict logic is pure (`bench._retrieval_cv`) and tested on
hand-made figures; the run is tested with a stand-in store that records how it was
built and searched. The real store on a synthetic file is in
tests/integration/test_bench_retrieval_cv.py.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import Item, PutOp
from rich.console import Console
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.ranking.scoring import Scoring
from tiered_memory_benchmarks._retrieval_config import (
    parse_select,
    parse_sweeps,
    same_value,
)
from tiered_memory_benchmarks._retrieval_cv import (
    CvFigures,
    ValueFigures,
    choose,
    cv_folds,
    pooled_mean,
    sweep_key,
    verdict,
)
from tiered_memory_benchmarks._retrieval_metrics import CategoryRecall
from tiered_memory_benchmarks.retrieval import (
    RetrievalBenchConfig,
    RetrievalBenchmarkError,
    render_cv_report,
    run_retrieval_cv,
)

runner = CliRunner()


def _groups(*recalls: float, n: int = 10, k: int = 5) -> dict[str, CategoryRecall]:
    return {f"c{i + 1}": CategoryRecall(n, {k: r}) for i, r in enumerate(recalls)}


# --------------------------------------------------------------------------- parsing


def test_parse_sweeps_reads_json_values_and_drops_repeats() -> None:
    assert parse_sweeps(["rrf_k=5, 10,10.0,60", "context_keys=true,false", "x=abc"]) == {
        "rrf_k": [5, 10, 60],
        "context_keys": [True, False],
        "x": ["abc"],
    }
    for bad, message in [
        ("rrf_k", "KEY=V1"),
        ("=5", "KEY=V1"),
        ("rrf_k=", "no value"),
        ("mode=similarity", "--scoring"),
        ("retrieval=keyword", "--mode"),
    ]:
        with pytest.raises(RetrievalBenchmarkError, match=message):
            parse_sweeps([bad])
    with pytest.raises(RetrievalBenchmarkError, match="twice"):
        parse_sweeps(["rrf_k=5", "rrf_k=10"])


def test_same_value_tells_booleans_from_numbers() -> None:
    assert same_value(10, 10.0)
    assert not same_value(True, 1)
    assert not same_value(0, False)
    assert same_value(False, False)


def test_parse_select_defaults_to_recall_at_5_and_checks_the_cut_off() -> None:
    assert parse_select(None, [5, 10]) == 5
    assert parse_select(None, [1, 3]) == 1
    assert parse_select("recall@10", [5, 10]) == 10
    with pytest.raises(RetrievalBenchmarkError, match="cut-offs"):
        parse_select("recall@25", [5, 10])
    with pytest.raises(RetrievalBenchmarkError, match="recall@K"):
        parse_select("ndcg", [5, 10])


# --------------------------------------------------------------------------- folds


def test_cv_folds_report_each_conversation_the_mean_and_the_pooled_figure() -> None:
    groups = {
        "c1": CategoryRecall(30, {5: 60.0}),
        "c2": CategoryRecall(10, {5: 80.0}),
        "empty": CategoryRecall(0, {5: 0.0}),
    }
    cv = cv_folds(groups, [5])
    assert [f.held_out for f in cv.folds] == ["c1", "c2"]  # no questions, no fold
    assert cv.macro == {5: 70.0}
    assert cv.pooled == {5: 65.0}  # (30 * 60 + 10 * 80) / 40
    assert cv.to_dict()["folds"][1] == {"held_out": "c2", "n": 10, "recall@5": 80.0}
    with pytest.raises(RetrievalBenchmarkError, match="two conversations"):
        cv_folds({"c1": groups["c1"], "empty": groups["empty"]}, [5])


def test_choose_pools_the_training_questions_and_breaks_ties_for_the_run_value() -> None:
    # c1 has 30 questions, c2 has 10: a (60 / 80) has the better mean over the two,
    # 70 vs 65, but b (70 / 60) the better pooled recall, 67.5 vs 65.
    a = ValueFigures(
        "a", {"c1": CategoryRecall(30, {5: 60.0}), "c2": CategoryRecall(10, {5: 80.0})}
    )
    b = ValueFigures(
        "b", {"c1": CategoryRecall(30, {5: 70.0}), "c2": CategoryRecall(10, {5: 60.0})}
    )
    assert choose([a, b], ["c1", "c2"], 5) == 1
    assert choose([a, b], ["c2"], 5) == 0
    run = dataclasses.replace(b, value="run", base=True)
    tie = ValueFigures("tie", run.per_conversation)
    assert choose([tie, run], ["c1"], 5) == 1  # tied: the run's value
    assert choose([tie, dataclasses.replace(tie, value="later")], ["c1"], 5) == 0  # first


def test_sweep_key_chooses_each_fold_on_the_other_conversations() -> None:
    points = [
        ValueFigures(5, _groups(70.0, 50.0, 50.0)),
        ValueFigures(10, _groups(60.0, 60.0, 61.0), base=True),
        ValueFigures(60, _groups(50.0, 80.0, 40.0)),
    ]
    result = sweep_key("rrf_k", points, k=5)
    # c1 out: on c2+c3 (60 pooled 60.0, 10 pooled 60.5) -> 10; c2 out: on c1+c3 -> 10
    # (60.5 vs 60); c3 out: on c1+c2 -> 60 (65 vs 60 vs 60).
    assert [(f.held_out, f.chosen) for f in result.folds] == [("c1", 10), ("c2", 10), ("c3", 60)]
    assert [f.recall[5] for f in result.folds] == [60.0, 60.0, 40.0]
    assert result.loo[5] == pytest.approx((60.0 + 60.0 + 40.0) / 3)
    assert result.base_mean[5] == pytest.approx((60.0 + 60.0 + 61.0) / 3)
    assert [(f.best, f.best_recall) for f in result.folds] == [(5, 70.0), (60, 80.0), (10, 61.0)]
    data = result.to_dict()
    assert data["base"] == 10 and data["select"] == "recall@5"
    assert data["folds"][2]["chosen"] == 60
    json.dumps(data, allow_nan=False)


def test_verdict_applies_the_mean_and_fold_thresholds_at_their_bounds() -> None:
    def run(*recalls: float) -> ValueFigures:
        return ValueFigures("run", _groups(*recalls), base=True)

    # Best mean exactly 1 above, best fold exactly 2 above: stable.
    ok = verdict([run(60.0, 60.0), ValueFigures("x", _groups(62.0, 60.0))], 5)
    assert ok.stable and ok.mean_gap == 1.0 and ok.fold_gaps == {"c1": 2.0, "c2": 0.0}
    assert "stable" in ok.describe()
    # A fold 2.5 above while the mean is only 0.5 above: the fold condition fails alone.
    fold = verdict([run(60.0, 60.0), ValueFigures("x", _groups(62.5, 58.5))], 5)
    assert not fold.stable
    assert fold.reasons == ["on c1 2.5 points below x (> 2)"]
    # Mean 1.5 above, no fold more than 2 above: the mean condition fails alone.
    mean = verdict([run(60.0, 60.0), ValueFigures(0.5, _groups(61.5, 61.5))], 5)
    assert mean.reasons == ["mean over folds 1.5 points below 0.5 (> 1)"]
    assert mean.describe().startswith("not stable: ")
    # The run's value best everywhere is stable with no gap.
    best = verdict([ValueFigures(1, _groups(50.0, 50.0)), run(55.0, 52.0)], 5)
    assert best.stable and best.best == "run" and best.mean_gap == 0.0


def test_sweep_needs_one_run_value_and_two_conversations() -> None:
    with pytest.raises(RetrievalBenchmarkError, match="one base value"):
        sweep_key("rrf_k", [ValueFigures(5, _groups(1.0, 2.0))], k=5)
    with pytest.raises(RetrievalBenchmarkError, match="two conversations"):
        sweep_key("rrf_k", [ValueFigures(5, _groups(1.0), base=True)], k=5)


_recall = st.integers(min_value=0, max_value=100).map(float)


@st.composite
def _sweeps(draw: st.DrawFn) -> list[ValueFigures]:
    n_convs = draw(st.integers(2, 5))
    n_values = draw(st.integers(1, 5))
    base = draw(st.integers(0, n_values - 1))
    sizes = draw(st.lists(st.integers(1, 50), min_size=n_convs, max_size=n_convs))
    return [
        ValueFigures(
            v,
            {f"c{c}": CategoryRecall(sizes[c], {5: draw(_recall)}) for c in range(n_convs)},
            base=v == base,
        )
        for v in range(n_values)
    ]


@settings(max_examples=200, deadline=None)
@given(_sweeps(), st.data())
def test_a_fold_never_looks_at_its_held_out_conversation(
    points: list[ValueFigures], data: st.DataObject
) -> None:
    result = sweep_key("key", points, k=5)
    convs = list(points[0].per_conversation)
    held_out = data.draw(st.sampled_from(convs))
    fold = next(f for f in result.folds if f.held_out == held_out)
    # Rewrite every figure of the held-out conversation: that fold's choice is unchanged.
    changed = [
        dataclasses.replace(
            p,
            per_conversation={
                **p.per_conversation,
                held_out: CategoryRecall(p.per_conversation[held_out].n, {5: data.draw(_recall)}),
            },
        )
        for p in points
    ]
    again = next(f for f in sweep_key("key", changed, k=5).folds if f.held_out == held_out)
    assert again.chosen == fold.chosen
    # The held-out figure is the chosen value's own figure on that conversation.
    assert again.recall[5] == changed[again.chosen].per_conversation[held_out].recall[5]


@settings(max_examples=200, deadline=None)
@given(_sweeps())
def test_the_verdict_matches_its_definition(points: list[ValueFigures]) -> None:
    convs = list(points[0].per_conversation)
    run = next(p for p in points if p.base)

    def mean(p: ValueFigures) -> float:
        return sum(p.per_conversation[c].recall[5] for c in convs) / len(convs)

    mean_ok = max(mean(p) for p in points) - mean(run) <= 1.0 + 1e-9
    folds_ok = all(
        max(p.per_conversation[c].recall[5] for p in points) - run.per_conversation[c].recall[5]
        <= 2.0 + 1e-9
        for c in convs
    )
    result = sweep_key("key", points, k=5)
    assert result.verdict.stable == (mean_ok and folds_ok)
    assert len(result.verdict.reasons) == (not mean_ok) + sum(
        max(p.per_conversation[c].recall[5] for p in points) - run.per_conversation[c].recall[5]
        > 2.0 + 1e-9
        for c in convs
    )
    # Choosing on other conversations never beats choosing on the held-out one itself.
    oracle = sum(max(p.per_conversation[c].recall[5] for p in points) for c in convs)
    assert result.loo[5] <= oracle / len(convs) + 1e-9
    assert result.base_mean[5] == pytest.approx(mean(run))


def test_pooled_mean_counts_questions_not_conversations() -> None:
    groups = {"a": CategoryRecall(3, {5: 100.0}), "b": CategoryRecall(1, {5: 0.0})}
    assert pooled_mean(groups, [5]) == {5: 75.0}
    assert pooled_mean(groups, [5], only=["b"]) == {5: 0.0}
    assert pooled_mean(groups, [5], only=[]) == {5: 0.0}


# --------------------------------------------------------------------------- the run


def _conversation(sample_id: str, rank_first: str) -> dict[str, Any]:
    """Two turns and one question whose evidence is `rank_first`'s other turn."""
    return {
        "sample_id": sample_id,
        "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": f"{sample_id} one"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": f"{sample_id} two"},
            ],
        },
        "qa": [{"question": f"{sample_id}?", "evidence": ["D1:2"], "category": 4}],
    }


class _ScoringStore:
    """Stands in for TieredMemoryStore: records its scoring at each search and ranks
    D1:2 first only when `rrf_k` is above 20 (so the sweep has something to choose)."""

    instances: list[_ScoringStore] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.scoring = Scoring.from_config(kwargs["scoring"])
        self.searches: list[tuple[Scoring, dict[str, Any] | None]] = []
        self.writes: list[str] = []
        _ScoringStore.instances.append(self)

    def setup(self) -> None:
        pass

    def close(self) -> None:
        pass

    def batch(self, ops: list[PutOp]) -> list[None]:
        self.writes += [op.key for op in ops]
        return [None] * len(ops)

    def search(self, namespace: tuple[str, ...], **kwargs: Any) -> list[Item]:
        self.searches.append((self.scoring, kwargs.get("filter")))
        now = datetime.now(timezone.utc)
        keys = ["D1:2", "D1:1"] if self.scoring.rrf_k > 20 else ["D1:1", "D1:2"]
        return [Item(value={}, key=k, namespace=namespace, created_at=now, updated_at=now)
                for k in keys][: kwargs["limit"]]  # fmt: skip


def _data(tmp_path: Path) -> str:
    path = tmp_path / "synthetic.json"
    samples = [_conversation("conv-a", "D1:2"), _conversation("conv-b", "D1:2")]
    path.write_text(json.dumps(samples), encoding="utf-8")
    return str(path)


def test_cv_sets_query_time_keys_per_search_and_builds_a_store_per_index_time_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_tiered_memory

    _ScoringStore.instances.clear()
    monkeypatch.setattr(langgraph_tiered_memory, "TieredMemoryStore", _ScoringStore)
    # The run's values set explicitly: the test does not depend on the store's defaults.
    config = RetrievalBenchConfig(
        data=_data(tmp_path),
        ks=[1, 2],
        progress=False,
        overrides={"rrf_k": 10, "context_keys": True},
    )
    report = run_retrieval_cv(
        config, {"rrf_k": [30, 5], "context_keys": [False]}, select="recall@1"
    )
    run_store, keys_off = _ScoringStore.instances
    own = {"mode": "memory", "retrieval": "hybrid", "rrf_k": 10, "context_keys": True}
    assert run_store.kwargs["scoring"] == own
    assert keys_off.kwargs["scoring"] == {**own, "context_keys": False}
    assert keys_off.writes == run_store.writes == ["D1:1", "D1:2"] * 2
    # The run's store: warm-up, then per question one search per other rrf_k value (not
    # counted), in sorted order without the run's 10, and last the run's own (counted).
    asked = run_store.searches[1:]
    assert [(s.rrf_k, f) for s, f in asked[:3]] == [
        (5.0, {"$retrieval": "hybrid", "$count_access": False}),
        (30.0, {"$retrieval": "hybrid", "$count_access": False}),
        (10.0, {"$retrieval": "hybrid"}),
    ]
    assert len(asked) == 6
    assert all(s.context_keys for s, _ in asked)
    assert run_store.scoring == Scoring.from_config(run_store.kwargs["scoring"])  # restored
    assert [s.rrf_k for s, _ in keys_off.searches[1:]] == [10.0, 10.0]
    (rrf, ctx) = report.sweeps
    assert [p.value for p in rrf.points] == [5, 10, 30]
    assert [p.base for p in rrf.points] == [False, True, False]
    assert [p.per_conversation["conv-a"].recall[1] for p in rrf.points] == [0.0, 0.0, 100.0]
    assert [f.chosen for f in rrf.folds] == [30, 30]
    assert rrf.loo == {1: 100.0, 2: 100.0}
    assert rrf.base_mean == {1: 0.0, 2: 100.0}
    assert rrf.verdict.reasons == [
        "mean over folds 100.0 points below 30 (> 1)",
        "on conv-a 100.0 points below 30 (> 2)",
        "on conv-b 100.0 points below 30 (> 2)",
    ]
    assert ctx.index_time and [p.value for p in ctx.points] == [False, True]
    assert ctx.verdict.stable
    assert report.stores == 2
    assert report.searches == 2 * 3 + 2 * 1  # 2 questions; warm-ups not counted
    assert isinstance(report.cv, CvFigures) and report.cv.macro == {1: 0.0, 2: 100.0}
    data = report.to_dict()
    assert data["recall@1"] == 0.0 and data["sweeps"][0]["loo"] == {"recall@1": 100.0,
                                                                    "recall@2": 100.0}  # fmt: skip
    json.dumps(data, allow_nan=False)
    console = Console(record=True, width=200)
    render_cv_report(report, console)
    text = console.export_text()
    assert "mean over folds" in text and "mean (LOO)" in text
    assert "rrf_k = 10.0 (the run's value), judged by recall@1: not stable: mean over" in text
    assert "context_keys = true (the run's value), judged by recall@1: stable" in text


def test_cv_refuses_what_it_cannot_measure(tmp_path: Path) -> None:
    data = _data(tmp_path)
    one = tmp_path / "one.json"
    one.write_text(json.dumps([_conversation("conv-a", "D1:2")]), encoding="utf-8")
    cases: list[tuple[RetrievalBenchConfig, dict[str, list[Any]], str]] = [
        (RetrievalBenchConfig(data=str(one)), {}, "two conversations"),
        (RetrievalBenchConfig(data=data), {"rrf_k": [-1]}, "rrf_k"),
        (RetrievalBenchConfig(data=data), {"nope": [1]}, "not a ScoringConfig key"),
        (RetrievalBenchConfig(data=data), {"graph_weight": [0.5]}, "--graph on"),
        (RetrievalBenchConfig(data=data, graph="compare"), {}, "--graph on or off"),
    ]
    for config, sweeps, message in cases:
        config.progress = False
        with pytest.raises(RetrievalBenchmarkError, match=message):
            run_retrieval_cv(config, sweeps)


def test_cli_sweep_needs_cv(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["bench", "retrieval", "--data", _data(tmp_path), "--sweep", "rrf_k=5,10"]
    )
    assert result.exit_code == 2
    assert "--cv" in result.output
