"""Tests for `tiered-memory bench retrieval` (LoCoMo recall@k).

The LoCoMo data is CC BY-NC 4.0 and never enters the repository: every test writes its
own tiny synthetic file in the LoCoMo format.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import Item, PutOp
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from tiered_memory_benchmarks import retrieval as bench
from tiered_memory_benchmarks.retrieval import (
    BenchClock,
    RetrievalBenchConfig,
    RetrievalBenchmarkError,
    load_locomo,
    parse_conversation,
    parse_ks,
    parse_session_date,
    recall_at_k,
    run_retrieval_benchmark,
    split_evidence,
    turn_text,
)

runner = CliRunner()


def _last_json_line(output: str) -> dict[str, Any]:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert lines, "no output"
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def _sample() -> dict[str, Any]:
    """A tiny LoCoMo-format conversation whose evidence is findable by unique words."""
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben, how are you today?"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "I adopted a ferret named Zorblat last weekend.",
                },
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "Lovely! Here is my garden.",
                    "img_url": ["http://example.invalid/a.jpg"],
                    "blip_caption": "a photo of purple quokkaflowers in a pot",
                },
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "Good morning Ana."},
                {
                    "speaker": "Ana",
                    "dia_id": "D2:2",
                    "text": "I started learning the xylorimba at a music school.",
                },
                {"speaker": "Ben", "dia_id": "D2:3", "text": "Zorblat chewed my slippers again."},
            ],
            # Like conv-26: a dated session without turns.
            "session_3_date_time": "9:00 am on 1 December, 2023",
            "session_3": [],
        },
        "qa": [
            {"question": "What is the name of Ben's ferret Zorblat?", "answer": "Zorblat",
             "evidence": ["D1:2; D2:3"], "category": 1},
            {"question": "What flowers grow in Ana's garden, the quokkaflowers?",
             "answer": "quokkaflowers", "evidence": ["D1:3", "D9:99"], "category": 4},
            {"question": "Which instrument, the xylorimba, is Ana learning?",
             "adversarial_answer": "piano", "evidence": ["D2:2"], "category": 5},
            {"question": "Is Ana happy?", "answer": "yes", "evidence": [], "category": 3},
            {"question": "Where is Ben?", "answer": "?", "evidence": ["D7:7"], "category": 2},
        ],
    }  # fmt: skip


def _write(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo_synthetic.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- pure parts


def test_split_evidence_splits_malformed_strings_and_drops_unknown_ids() -> None:
    known = {"D1:1", "D8:6", "D9:17", "D2:3"}
    assert split_evidence(["D8:6; D9:17"], known) == ["D8:6", "D9:17"]
    assert split_evidence(["D8:6,D9:17", " D2:3 D1:1 "], known) == [
        "D8:6",
        "D9:17",
        "D2:3",
        "D1:1",
    ]
    assert split_evidence(["D8:6", "D8:6;", "D30:1", ""], known) == ["D8:6"]
    assert split_evidence(["D30:1"], known) == []


def test_recall_at_k_counts_evidence_in_the_first_k_keys() -> None:
    ranked = ["D1:1", "D2:2", "D3:3", "D4:4"]
    assert recall_at_k(["D2:2"], ranked, 1) == 0.0
    assert recall_at_k(["D2:2"], ranked, 2) == 1.0
    assert recall_at_k(["D1:1", "D4:4"], ranked, 3) == 0.5
    assert recall_at_k(["D1:1", "D4:4"], ranked, 50) == 1.0
    assert recall_at_k(["D1:1", "D9:9"], [], 5) == 0.0
    with pytest.raises(ValueError):
        recall_at_k([], ranked, 5)


def test_parse_session_date_reads_locomo_dates_as_utc() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(
        2023, 5, 8, 13, 56, tzinfo=timezone.utc
    )
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=timezone.utc
    )
    # Not the LoCoMo format: the fuzzy fallback still reads it.
    assert parse_session_date("May 8th 2023 at 13:56") == datetime(
        2023, 5, 8, 13, 56, tzinfo=timezone.utc
    )
    with pytest.raises(RetrievalBenchmarkError):
        parse_session_date("sometime, somewhere")


def test_turn_text_appends_the_image_caption() -> None:
    assert turn_text("Ana", "Hi!") == 'Ana said, "Hi!"'
    assert turn_text("Ana", "Look.", "a dog on a beach") == (
        'Ana said, "Look." and shared a dog on a beach'
    )
    assert turn_text("Ana", "Look.", "") == 'Ana said, "Look."'


def test_parse_ks_sorts_and_rejects_bad_values() -> None:
    assert parse_ks("50, 5,10,5") == [5, 10, 50]
    for bad in ("", "0", "5,x"):
        with pytest.raises(RetrievalBenchmarkError):
            parse_ks(bad)


def test_parse_conversation_orders_turns_and_cleans_questions() -> None:
    conv = parse_conversation(_sample())
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert conv.namespace == ("locomo", "conv-x")
    # The empty session 3 neither adds turns nor moves "now".
    assert conv.now == datetime(2023, 6, 28, 10, 37, tzinfo=timezone.utc)
    assert [len(turns) for _, turns in conv.sessions()] == [3, 3]
    assert [q.evidence for q in conv.questions] == [("D1:2", "D2:3"), ("D1:3",), ("D2:2",)]
    assert [q.category_name for q in conv.questions] == ["multi-hop", "single-hop", "adversarial"]
    assert conv.skipped_questions == 2
    value = conv.turns[2].value()
    assert value == {
        "content": 'Ana said, "Lovely! Here is my garden." and shared a photo of purple'
        " quokkaflowers in a pot",
        "occurred_at": "2023-05-08T13:56:00+00:00",
        "speaker": "Ana",
        "session": 1,
    }
    assert datetime.fromisoformat(conv.turns[4].value()["occurred_at"]) == datetime(
        2023, 6, 27, 10, 37, tzinfo=timezone.utc
    )


def test_load_locomo_selects_conversations_and_reports_unknown_ids(tmp_path: Path) -> None:
    other = _sample()
    other["sample_id"] = "conv-y"
    path = _write(tmp_path, [_sample(), other])
    assert [c.sample_id for c in load_locomo(path)] == ["conv-x", "conv-y"]
    assert [c.sample_id for c in load_locomo(path, ["conv-y"])] == ["conv-y"]
    with pytest.raises(RetrievalBenchmarkError, match="conv-z"):
        load_locomo(path, ["conv-z"])


def test_bench_clock_returns_the_time_it_was_set_to() -> None:
    clock = BenchClock()
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    clock.set(when)
    assert clock() == when.timestamp()


def test_config_resolves_and_checks_mode_and_scoring() -> None:
    cfg = RetrievalBenchConfig(data="x").validate()
    assert cfg.mode == "hybrid"
    assert cfg.scoring_config() == {"mode": "memory", "retrieval": "hybrid"}
    assert cfg.search_filter() == {"$retrieval": "hybrid"}
    cfg = RetrievalBenchConfig(data="x", mode="keyword", decay=False).validate()
    assert cfg.scoring_config() == {"mode": "memory", "retrieval": "keyword", "recency_weight": 0.0}
    cfg = RetrievalBenchConfig(data="x", scoring="similarity").validate()
    assert cfg.mode == "semantic"
    assert cfg.search_filter() is None
    assert RetrievalBenchConfig(data="x", mode="contextual").validate().mode == "hybrid"
    with pytest.raises(RetrievalBenchmarkError, match="similarity"):
        RetrievalBenchConfig(data="x", scoring="similarity", mode="keyword").validate()
    with pytest.raises(RetrievalBenchmarkError):
        RetrievalBenchConfig(data="x", mode="fuzzy").validate()


class _RecordingStore:
    """Stands in for TieredMemoryStore: records writes and searches, ranks by a fixed list."""

    instances: list[_RecordingStore] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.clock = kwargs["clock"]
        self.writes: list[tuple[str, float, int]] = []  # key, clock, batch number
        self.searches: list[dict[str, Any]] = []
        self.batches = 0
        _RecordingStore.instances.append(self)

    def setup(self) -> None:
        pass

    def close(self) -> None:
        pass

    def batch(self, ops: list[PutOp]) -> list[None]:
        self.batches += 1
        for op in ops:
            self.writes.append((op.key, self.clock(), self.batches))
        return [None] * len(ops)

    def search(self, namespace: tuple[str, ...], **kwargs: Any) -> list[Item]:
        self.searches.append({"namespace": namespace, "clock": self.clock(), **kwargs})
        now = datetime.now(timezone.utc)
        keys = ["D2:3", "D1:1", "D1:2", "D1:3", "D2:2"]  # D1:2 only third, D2:2 fifth
        return [Item(value={}, key=k, namespace=namespace, created_at=now, updated_at=now)
                for k in keys][: kwargs["limit"]]  # fmt: skip


def test_run_writes_in_dialog_order_at_session_dates_and_searches_once_per_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_tiered_memory

    _RecordingStore.instances.clear()
    monkeypatch.setattr(langgraph_tiered_memory, "TieredMemoryStore", _RecordingStore)
    config = RetrievalBenchConfig(
        data=str(_write(tmp_path, [_sample()])),
        ks=[1, 3, 10],
        mode="keyword",
        decay=False,
        batch_size=2,
        progress=False,
    )
    report = run_retrieval_benchmark(config)
    (store,) = _RecordingStore.instances
    assert store.kwargs["tiers"] == {"default": "long"}
    assert store.kwargs["index"] == {"dims": 384, "embed": "local", "fields": ["content"]}
    assert store.kwargs["key_prefix"] == "bench"
    assert store.kwargs["scoring"] == {
        "mode": "memory",
        "retrieval": "keyword",
        "recency_weight": 0.0,
    }
    may8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc).timestamp()
    jun27 = datetime(2023, 6, 27, 10, 37, tzinfo=timezone.utc).timestamp()
    assert [(k, c) for k, c, _ in store.writes] == [
        ("D1:1", may8),
        ("D1:2", may8),
        ("D1:3", may8),
        ("D2:1", jun27),
        ("D2:2", jun27),
        ("D2:3", jun27),
    ]
    # Batches of at most 2, never spanning two sessions.
    assert [b for _, _, b in store.writes] == [1, 1, 2, 3, 3, 4]
    # One untimed warm-up search outside the conversation, then one per question.
    warmup, *asked = store.searches
    assert warmup["namespace"] != ("locomo", "conv-x")
    assert len(asked) == 3
    asked_at = datetime(2023, 6, 28, 10, 37, tzinfo=timezone.utc).timestamp()
    for s in asked:
        assert s["namespace"] == ("locomo", "conv-x")
        assert s["limit"] == 10
        assert s["filter"] == {"$retrieval": "keyword"}
        assert s["clock"] == asked_at
    assert asked[0]["query"] == "What is the name of Ben's ferret Zorblat?"
    # Ranking D2:3, D1:1, D1:2, D1:3, D2:2: multi-hop (D1:2, D2:3) has 1/2 at k=1,
    # single-hop (D1:3) 0 until k=10, adversarial (D2:2) 0 until k=10.
    assert report.per_category["multi-hop"].recall == {1: 50.0, 3: 100.0, 10: 100.0}
    assert report.per_category["single-hop"].recall == {1: 0.0, 3: 0.0, 10: 100.0}
    assert report.overall.n == 3
    assert report.overall.recall[1] == pytest.approx(50.0 / 3)
    assert report.overall.recall[10] == 100.0
    data = report.to_dict()
    assert data["recall@3"] == pytest.approx(33.33)
    assert data["per_category"]["adversarial"] == {"recall@1": 0.0, "recall@3": 0.0,
                                                   "recall@10": 100.0, "n": 1}  # fmt: skip
    assert data["n_questions"] == 3
    assert data["skipped_questions"] == 2
    json.dumps(data, allow_nan=False)


# --------------------------------------------------------------------------- command line


def test_bench_help_lists_retrieval() -> None:
    result = runner.invoke(app, ["bench", "--help"])
    assert result.exit_code == 0, result.output
    assert "retrieval" in result.stdout


def test_bench_retrieval_rejects_an_unknown_conversation(tmp_path: Path) -> None:
    path = _write(tmp_path, [_sample()])
    result = runner.invoke(
        app, ["bench", "retrieval", "--data", str(path), "--conversations", "conv-nope"]
    )
    assert result.exit_code == 2
    assert "conv-nope" in result.output


def test_bench_retrieval_rejects_keyword_mode_with_similarity_scoring(tmp_path: Path) -> None:
    path = _write(tmp_path, [_sample()])
    result = runner.invoke(
        app,
        ["bench", "retrieval", "--data", str(path), "--scoring", "similarity", "--mode", "keyword"],
    )
    assert result.exit_code == 2
    assert "similarity" in result.output


def test_bench_retrieval_end_to_end_finds_keyword_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Needs the `local` extra (offline multilingual-e5-small): the store embeds every turn.
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    path = _write(tmp_path, [_sample()])
    chroma = tmp_path / "chroma"
    result = runner.invoke(
        app,
        [
            "bench",
            "retrieval",
            "--data",
            str(path),
            "--json",
            "--mode",
            "keyword",
            "--k",
            "1,3",
            "--chroma-path",
            str(chroma),
        ],
    )
    assert result.exit_code == 0, result.output
    data = _last_json_line(result.stdout)
    assert data["mode"] == "keyword"
    assert data["n_questions"] == 3
    assert data["recall@3"] == 100.0
    assert set(data["per_category"]) == {"multi-hop", "single-hop", "adversarial"}
    for group in data["per_category"].values():
        assert group["recall@3"] == 100.0
        assert group["n"] == 1
    # One result finds every evidence turn but for the multi-hop question, which has two:
    # (50 + 100 + 100) / 3.
    assert {c: g["recall@1"] for c, g in data["per_category"].items()} == {
        "multi-hop": 50.0,
        "single-hop": 100.0,
        "adversarial": 100.0,
    }
    assert data["recall@1"] == pytest.approx(83.33, abs=0.01)
    assert "recall@3" in result.stdout.split("\n{", 1)[0]  # the table precedes the JSON
    # A second run on the same directory replaces the memories instead of piling up.
    again = runner.invoke(
        app,
        ["bench", "retrieval", "--data", str(path), "--json", "--mode", "keyword",
         "--k", "1,3", "--chroma-path", str(chroma)],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert _last_json_line(again.stdout)["recall@3"] == 100.0


def test_module_example_runs() -> None:
    doc = bench.__doc__ or ""
    code = doc.split("```python", 1)[1].split("```", 1)[0]
    import textwrap

    exec(textwrap.dedent(code), {})


def test_set_options_become_scoring_overrides() -> None:
    from tiered_memory_benchmarks.retrieval import (
        RetrievalBenchConfig,
        RetrievalBenchmarkError,
        parse_overrides,
    )

    overrides = parse_overrides(["context_keys=false", "rrf_k=60", "retrieval=keyword"])
    assert overrides == {"context_keys": False, "rrf_k": 60, "retrieval": "keyword"}
    config = RetrievalBenchConfig(data="x", overrides=overrides).validate()
    assert config.scoring_config()["context_keys"] is False
    assert config.scoring_config()["rrf_k"] == 60
    with pytest.raises(RetrievalBenchmarkError, match="KEY=VALUE"):
        parse_overrides(["rrf_k"])
    with pytest.raises(RetrievalBenchmarkError, match="similarity"):
        RetrievalBenchConfig(data="x", scoring="similarity", overrides=overrides).validate()


def test_merge_asks_every_question_over_one_namespace_of_all_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    second = json.loads(json.dumps(_sample()).replace("Ana", "Cy").replace("Ben", "Dee"))
    second["sample_id"] = "conv-y"
    path = _write(tmp_path, [_sample(), second])
    args = ["bench", "retrieval", "--data", str(path), "--json", "--mode", "keyword", "--k", "1,6"]
    merged = runner.invoke(app, [*args, "--merge"])
    assert merged.exit_code == 0, merged.output
    data = _last_json_line(merged.stdout)
    assert data["n_questions"] == 6 and data["n_turns"] == 12
    assert list(data["per_conversation"]) == ["merged"]
    # Both conversations share their words: in one namespace, a question's top hit can be
    # the other conversation's twin turn, so R@1 falls; more room finds the evidence again.
    apart = _last_json_line(runner.invoke(app, args).stdout)
    assert apart["recall@1"] > data["recall@1"] and data["recall@6"] > data["recall@1"]
    refused = runner.invoke(app, [*args, "--merge", "--cv"])
    assert refused.exit_code != 0 and "--merge" in refused.output
