"""`bench retrieval --cv --sweep` on the real store, with a synthetic LoCoMo-format file.

The LoCoMo data never enters the repository: the file is written here, three small
conversations whose questions each name one turn by a word only that turn holds. The
test needs the `local` extra (the offline multilingual-e5-small embedder), like the plain
benchmark's end-to-end test; no Redis (every namespace is on the long tier).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app

runner = CliRunner()

_HOBBIES = ["pottery", "kayaking", "violin", "tango", "sushi", "chess", "quilting", "orchids"]


def _conversation(n: int) -> dict[str, Any]:
    sessions: dict[str, Any] = {}
    qa = []
    for s, date in ((1, "1:56 pm on 8 May, 2023"), (2, "10:37 am on 27 June, 2023")):
        turns = []
        for t in range(1, 5):
            speaker = "Ana" if t % 2 else "Ben"
            hobby = _HOBBIES[(n + s * 3 + t) % len(_HOBBIES)]
            marker = f"zq{n}{s}{t}x"
            turns.append(
                {
                    "speaker": speaker,
                    "dia_id": f"D{s}:{t}",
                    "text": f"I tried {hobby} with my friend {marker} this week.",
                }
            )
            qa.append(
                {
                    "question": f"What did {speaker} try with {marker}?",
                    "answer": hobby,
                    "evidence": [f"D{s}:{t}"],
                    "category": 4,
                }
            )
        sessions[f"session_{s}_date_time"] = date
        sessions[f"session_{s}"] = turns
    return {"sample_id": f"conv-{n}", "conversation": sessions, "qa": qa}


def _json(output: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return data


def test_sweep_figures_equal_standalone_runs_and_folds_choose_on_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps([_conversation(n) for n in range(3)]), encoding="utf-8")
    # Access counts switched off: a value measured on the run's store (its searches do
    # not count accesses) then ranks exactly as a store built with that value.
    common = ["bench", "retrieval", "--data", str(path), "--k", "1,3", "--json"]
    common += ["--set", "access_weight=0", "--set", "neighbor_weight=0.25"]
    result = runner.invoke(app, [*common, "--cv", "--sweep", "neighbor_weight=0,2"])
    assert result.exit_code == 0, result.output
    data = _json(result.stdout)
    text = result.stdout.rsplit("\n{", 1)[0]
    assert "Leave-one-conversation-out" in text and "neighbor_weight = 0.25" in text
    assert [f["held_out"] for f in data["cv"]["folds"]] == ["conv-0", "conv-1", "conv-2"]
    (sweep,) = data["sweeps"]
    values = {json.dumps(v["value"]): v for v in sweep["values"]}
    assert list(values) == ["0", "0.25", "2"]
    assert values["0.25"]["per_conversation"] == data["per_conversation"]
    # Heavy smoothing lifts each hit's neighbours over it: a real difference to choose on.
    assert values["2"]["pooled"]["recall@1"] < values["0.25"]["pooled"]["recall@1"]

    alone = runner.invoke(app, [*common, "--set", "neighbor_weight=2"])  # the last --set wins
    assert alone.exit_code == 0, alone.output
    assert _json(alone.stdout)["per_conversation"] == values["2"]["per_conversation"]

    # Each fold's choice is the best pooled recall@1 on the two other conversations.
    for fold in sweep["folds"]:
        train = [c for c in data["per_conversation"] if c != fold["held_out"]]

        def pooled(v: dict[str, Any], train: list[str] = train) -> float:
            groups = [v["per_conversation"][c] for c in train]
            return sum(g["recall@1"] * g["n"] for g in groups) / sum(g["n"] for g in groups)

        best = max(pooled(v) for v in values.values())
        assert pooled(values[json.dumps(fold["chosen"])]) == pytest.approx(best)
        chosen = values[json.dumps(fold["chosen"])]["per_conversation"][fold["held_out"]]
        assert fold["recall@1"] == chosen["recall@1"]
    assert data["stores"] == 1 and data["searches"] == 24 * 3
