"""`tiered-memory bench triples`: precision and recall computed from the labelled set."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.graph import extract as extract_module
from langgraph_tiered_memory.graph._rules import user_lines
from langgraph_tiered_memory.graph.extract import ModelExtractor, RuleExtractor
from langgraph_tiered_memory.graph.types import Triple
from tests.fake_models import RecordedChatModel
from tiered_memory_benchmarks.triples import evaluate, load_labelled

pytestmark = pytest.mark.integration


def _rows() -> list[dict[str, Any]]:
    text = (
        resources.files("tiered_memory_benchmarks")
        .joinpath("data/triples.jsonl")
        .read_text(encoding="utf-8")
    )
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _last_json(output: str) -> dict[str, Any]:
    return json.loads(output.strip().splitlines()[-1])


def test_the_labelled_set_is_big_varied_and_has_hard_cases() -> None:
    rows = _rows()
    assert len(rows) >= 60
    assert len({r["id"] for r in rows}) == len(rows)
    domains = {r["domain"] for r in rows}
    assert {"personal", "work", "travel", "health", "hobbies", "family", "tech"} <= domains
    assert {"history", "food", "dates", "negation", "question", "pronoun"} <= domains
    assert {r["split"] for r in rows} == {"dev", "held_out"}
    for row in rows:  # gold is stored normalised, so exact matching is fair
        for parts in row["triples"]:
            assert tuple(Triple.of(*parts)) == tuple(parts), row["id"]
    # a question of the user's (a stored turn may end with the assistant's question)
    questions = [r for r in rows if user_lines(r["text"]).rstrip().endswith("?")]
    assert questions and all(r["triples"] == [] for r in questions)


def test_the_labelled_set_covers_what_the_memory_agent_stores() -> None:
    """Stored turns ("User: ...\nAssistant: ...") and third-person memories ("The
    user's ...") are labelled in both splits, and the rules find most of their facts."""
    rows = _rows()
    for domain in ("transcript", "user_memory"):
        picked = [r for r in rows if r["domain"] == domain]
        assert {r["split"] for r in picked} == {"dev", "held_out"}, domain
    turns = [r for r in rows if r["domain"] == "transcript"]
    assert all(re.search(r"^(?:User|Human|Assistant|AI):", r["text"], re.M) for r in turns)
    assert sum("\nAssistant:" in r["text"] or "\nAI:" in r["text"] for r in turns) >= 10
    memories = [r for r in rows if r["domain"] == "user_memory"]
    assert all(re.match(r"(?:The user|User)\b", r["text"]) for r in memories)

    figures = evaluate(RuleExtractor(), load_labelled())["by_domain"]
    for domain in ("transcript", "user_memory"):
        assert figures[domain]["recall"] >= 0.7, (domain, figures[domain])
        assert figures[domain]["precision"] >= 0.9, (domain, figures[domain])


def test_the_labelled_set_has_fact_phrasings_the_rules_join() -> None:
    """Profile and encyclopaedic facts ("X is an engineer at Y", "Y is headquartered in
    Z", "X moved from A to B") are labelled in both splits, and the rules read them."""
    rows = [r for r in load_labelled() if r.domain == "facts"]
    assert {r.split for r in rows} == {"dev", "held_out"}
    assert sum(r.split == "held_out" for r in rows) >= 30
    relations = {t.relation for r in rows for t in r.triples}
    assert {"works_at", "located_in", "moved_to", "moved_from", "lives_with"} <= relations
    for split in ("dev", "held_out"):
        figures = evaluate(RuleExtractor(), [r for r in rows if r.split == split])
        assert figures["precision"] >= 0.9, (split, figures)
        assert figures["recall"] >= 0.8, (split, figures)


def test_cli_figures_are_recomputed_from_the_data_and_the_extractor() -> None:
    result = CliRunner().invoke(app, ["bench", "triples", "--json"])
    assert result.exit_code == 0, result.output
    data = _last_json(result.output)
    rows = _rows()
    assert data["sentences"] == len(rows)
    assert data["gold_triples"] == sum(len(r["triples"]) for r in rows)
    rules = data["extractors"]["rules"]
    assert set(data["extractors"]) == {"rules"}

    predicted = RuleExtractor().extract(
        [r["text"] for r in rows], speakers=[r["speaker"] for r in rows]
    )
    n_pred = n_gold = correct = 0
    pairs_pred = pairs_gold = pairs_correct = 0
    for row, got in zip(rows, predicted, strict=True):
        gold = {Triple(*parts) for parts in row["triples"]}
        n_pred += len(set(got))
        n_gold += len(gold)
        correct += len(gold & set(got))
        gold_pairs = {(t.subject, t.object) for t in gold}
        got_pairs = {(t.subject, t.object) for t in got}
        pairs_pred += len(got_pairs)
        pairs_gold += len(gold_pairs)
        pairs_correct += len(gold_pairs & got_pairs)
    assert (rules["predicted"], rules["gold"], rules["correct"]) == (n_pred, n_gold, correct)
    assert rules["precision"] == pytest.approx(correct / n_pred, abs=1e-4)
    assert rules["recall"] == pytest.approx(correct / n_gold, abs=1e-4)
    p, r = correct / n_pred, correct / n_gold
    assert rules["f1"] == pytest.approx(2 * p * r / (p + r), abs=1e-4)
    relaxed = rules["relaxed"]
    assert relaxed["precision"] == pytest.approx(pairs_correct / pairs_pred, abs=1e-4)
    assert relaxed["recall"] == pytest.approx(pairs_correct / pairs_gold, abs=1e-4)
    assert 0 < rules["precision"] < 1 and 0 < rules["recall"] < 1
    splits = rules["by_split"]
    assert sum(s["sentences"] for s in splits.values()) == len(rows)
    assert sum(s["correct"] for s in splits.values()) == correct
    assert "exact normalised (subject, relation, object)" in data["matching"]["strict"]
    assert "precision" in result.output and "relaxed" in result.output


def test_cli_scores_a_model_extractor_with_model(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows()
    batch = 16
    replies = []
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        # a model that finds exactly the gold triples, except in the first text of each call
        replies.append(
            {
                "triples": [
                    {"text": i, "subject": s, "relation": rel, "object": o}
                    for i, row in enumerate(chunk)
                    if i > 0
                    for s, rel, o in row["triples"]
                ]
            }
        )
    model = RecordedChatModel(structured=replies)
    asked: list[str] = []

    def fake_resolve(spec: Any) -> Any:
        asked.append(spec)
        return ModelExtractor(model, batch_size=batch)

    monkeypatch.setattr(extract_module, "resolve_extractor", fake_resolve)
    result = CliRunner().invoke(app, ["bench", "triples", "--model", "fake:model", "--json"])
    assert result.exit_code == 0, result.output
    assert asked == ["fake:model"]
    figures = _last_json(result.output)["extractors"]["model"]
    missed = sum(len(rows[i]["triples"]) for i in range(0, len(rows), batch))
    gold = sum(len(r["triples"]) for r in rows)
    assert figures["precision"] == 1.0
    assert figures["correct"] == gold - missed
    assert figures["recall"] == pytest.approx((gold - missed) / gold, abs=1e-4)
    assert len(model.structured_prompts) == -(-len(rows) // batch)


def test_cli_rejects_a_model_spec_it_cannot_build() -> None:
    result = CliRunner().invoke(app, ["bench", "triples", "--model", "nosuchprovider:x"])
    assert result.exit_code == 2
    assert "--model" in result.output
