"""Precision and recall of triple extraction on the labelled set shipped with the benchmarks.

The set (`data/triples.jsonl` here, one JSON object a line) holds sentences written for
this benchmark from varied domains (personal life, work, travel, health, hobbies,
family, tech, history, food, dates), hard cases (negation, questions, pronouns
without an antecedent) and the forms the memory features store: conversation turns
("User: ..." and "Assistant: ..." lines, domain `transcript`) and third-person memories
about the user ("The user's sister ...", domain `user_memory`). Each line: `id`,
`domain`, `speaker` (who says "I", or null), `text`, `triples`: the gold
`[subject, relation, object]` lists, and `split`: "dev" for the sentences the rule
extractor was developed against, "held_out" for those written afterwards and scored
without changing the rules (the honest figure for unseen text).

Gold conventions (those of the rule extractor's docs in `graph.extract`): entities are
normalised names without articles, common nouns singular; "I"/"my" is the speaker, or
"user" without one (texts `Name said, "..."` name their speaker); an unnamed relative
is "<owner>'s <relative>" with an (owner, has_<relative>, ...) triple; a date is
(event object, date, text), or (subject, date, text) when the event has no object;
"in/at <Place>" gives located_in; questions and negated statements give none.

Scores (micro-averaged over all sentences):

- strict: a predicted triple is correct when the same (subject, relation, object),
  each part normalised (`normalize_entity`, `normalize_relation`), is gold for that
  sentence;
- relaxed: the relation is ignored: (subject, object) pairs are compared, per
  sentence, as sets.

precision = correct / predicted, recall = correct / gold, F1 their harmonic mean
(0 when both are 0; precision is 1.0 when nothing was predicted).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from langgraph_tiered_memory.graph.extract import TripleExtractor
from langgraph_tiered_memory.graph.types import Triple

__all__ = [
    "LabelledSentence",
    "Scores",
    "evaluate",
    "load_labelled",
    "run_triples_benchmark",
    "score",
]


@dataclass(frozen=True)
class LabelledSentence:
    """One line of the labelled set."""

    id: str
    split: str
    domain: str
    speaker: str | None
    text: str
    triples: tuple[Triple, ...]


@dataclass(frozen=True)
class Scores:
    """Counts and micro-averaged figures of one extractor (strict or relaxed)."""

    predicted: int
    gold: int
    correct: int

    @property
    def precision(self) -> float:
        """Share of predicted triples that are correct (1.0 when none was predicted)."""
        return self.correct / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        """Share of gold triples predicted (1.0 when there is no gold)."""
        return self.correct / self.gold if self.gold else 1.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall (0.0 when both are 0)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The figures (rounded to 4 places) and the counts."""
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "predicted": self.predicted,
            "gold": self.gold,
            "correct": self.correct,
        }


def _default_path() -> Any:
    return resources.files("tiered_memory_benchmarks").joinpath("data/triples.jsonl")


def load_labelled(path: str | Path | None = None) -> list[LabelledSentence]:
    """The labelled sentences of `path` (default: the set shipped with the package).

    Raises:
        ValueError: a line is not a labelled sentence (names the line).
    """
    source = _default_path() if path is None else Path(path)
    out: list[LabelledSentence] = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            triples = tuple(Triple.of(*parts) for parts in row["triples"])
            out.append(
                LabelledSentence(
                    id=str(row["id"]),
                    split=str(row.get("split", "dev")),
                    domain=str(row["domain"]),
                    speaker=row["speaker"],
                    text=row["text"],
                    triples=triples,
                )
            )
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{source}: line {number} is not a labelled sentence: {e}") from e
    return out


def score(
    gold: Sequence[Sequence[Triple]], predicted: Sequence[Sequence[Triple]]
) -> tuple[Scores, Scores]:
    """(strict, relaxed) scores of `predicted` against `gold`, sentence by sentence."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} sentences")
    counts = [0, 0, 0, 0, 0, 0]
    for want, got in zip(gold, predicted, strict=True):
        want_set, got_set = set(want), set(got)
        counts[0] += len(got_set)
        counts[1] += len(want_set)
        counts[2] += len(want_set & got_set)
        want_pairs = {(t.subject, t.object) for t in want_set}
        got_pairs = {(t.subject, t.object) for t in got_set}
        counts[3] += len(got_pairs)
        counts[4] += len(want_pairs)
        counts[5] += len(want_pairs & got_pairs)
    return Scores(*counts[:3]), Scores(*counts[3:])


def evaluate(extractor: TripleExtractor, sentences: Sequence[LabelledSentence]) -> dict[str, Any]:
    """Figures of `extractor` on `sentences` (one `extract` call over all of them)."""
    start = time.perf_counter()
    predicted = extractor.extract(
        [s.text for s in sentences], speakers=[s.speaker for s in sentences]
    )
    elapsed = time.perf_counter() - start
    strict, relaxed = score([s.triples for s in sentences], predicted)

    def part(attribute: str) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for value in sorted({getattr(s, attribute) for s in sentences}):
            picked = [i for i, s in enumerate(sentences) if getattr(s, attribute) == value]
            p_strict, p_relaxed = score(
                [sentences[i].triples for i in picked], [predicted[i] for i in picked]
            )
            out[value] = p_strict.to_dict() | {
                "sentences": len(picked),
                "relaxed": p_relaxed.to_dict(),
            }
        return out

    return {
        **strict.to_dict(),
        "relaxed": relaxed.to_dict(),
        "by_split": part("split"),
        "by_domain": part("domain"),
        "seconds": round(elapsed, 4),
    }


def run_triples_benchmark(
    extractors: dict[str, TripleExtractor], path: str | Path | None = None
) -> dict[str, Any]:
    """Figures of each named extractor on the labelled set (`path` or the shipped one)."""
    sentences = load_labelled(path)
    return {
        "sentences": len(sentences),
        "gold_triples": sum(len(s.triples) for s in sentences),
        "matching": {
            "strict": "exact normalised (subject, relation, object) per sentence",
            "relaxed": "(subject, object) per sentence, relation ignored",
        },
        "extractors": {name: evaluate(x, sentences) for name, x in extractors.items()},
    }
