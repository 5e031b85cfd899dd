"""Figures of the retrieval benchmark: recall@k, its means by group, search latency.

`RecallTally` collects recall@k of every question as it is asked and gives the mean, in
percent, over all questions, by LoCoMo category and by conversation; `RetrievalBenchReport`
holds them with the timings of a run.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tiered_memory_benchmarks._retrieval_config import RetrievalBenchConfig
from tiered_memory_benchmarks._retrieval_data import Question, category_name

__all__ = [
    "CategoryRecall",
    "GraphlessRun",
    "RecallTally",
    "RetrievalBenchReport",
    "recall_at_k",
    "search_percentiles_ms",
]


def recall_at_k(evidence: Collection[str], ranked_keys: Sequence[str], k: int) -> float:
    """Fraction of the evidence found among the first `k` results.

    Args:
        evidence: The dialog ids that answer the question (not empty).
        ranked_keys: Keys of the search results, best first.
        k: The cut-off.

    Returns:
        ``|evidence ∩ ranked_keys[:k]| / |evidence|``, from 0 to 1.

    Raises:
        ValueError: `evidence` is empty or `k` is not positive.
    """
    if not evidence:
        raise ValueError("recall@k needs at least one evidence id.")
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}.")
    wanted = set(evidence)
    return len(wanted & set(ranked_keys[:k])) / len(wanted)


@dataclass
class CategoryRecall:
    """Recall of a group of questions.

    Attributes:
        n: Number of questions.
        recall: Mean recall@k in percent, by k.
    """

    n: int
    recall: dict[int, float]


@dataclass
class GraphlessRun:
    """The figures of the same questions asked without the graph channel (`--graph compare`).

    Attributes:
        overall: Recall of every question.
        per_category: Recall by category name.
        search_p50_ms: Median latency of one search without the channel.
        search_p95_ms: 95th percentile latency of one search without the channel.
    """

    overall: CategoryRecall
    per_category: dict[str, CategoryRecall]
    search_p50_ms: float | None
    search_p95_ms: float | None


@dataclass
class RetrievalBenchReport:
    """Everything one retrieval benchmark run measured.

    Attributes:
        config: The options of the run (mode resolved).
        overall: Recall of every question.
        per_category: Recall by category name, in category order.
        per_conversation: Recall by sample id.
        n_turns: Memories written.
        skipped_questions: Questions without evidence naming a turn.
        ingest_seconds: Time spent in `store.batch` writing the turns.
        warmup_seconds: Time of one untimed search before ingesting (model loading).
        search_p50_ms: Median latency of one search.
        search_p95_ms: 95th percentile latency of one search.
        seconds: Wall time of the run, the model loading included.
        without_graph: With `--graph compare`, the figures without the channel (the
            report's own figures are with it).
    """

    config: RetrievalBenchConfig
    overall: CategoryRecall
    per_category: dict[str, CategoryRecall]
    per_conversation: dict[str, CategoryRecall]
    n_turns: int
    skipped_questions: int
    ingest_seconds: float
    warmup_seconds: float
    search_p50_ms: float | None
    search_p95_ms: float | None
    seconds: float
    without_graph: GraphlessRun | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary.

        Returns:
            ``recall@<k>`` (percent) for each k, ``n_questions``, ``per_category`` and
            ``per_conversation`` (each ``{"recall@<k>": .., "n": ..}``), ``mode``,
            ``scoring``, ``decay``, ``graph``, timings and the config; with
            `--graph compare` also ``without_graph`` (recall and latency without the
            channel).
        """

        def group(g: CategoryRecall) -> dict[str, Any]:
            out: dict[str, Any] = {f"recall@{k}": round(v, 2) for k, v in g.recall.items()}
            out["n"] = g.n
            return out

        result: dict[str, Any] = {
            "benchmark": "retrieval",
            **{f"recall@{k}": round(v, 2) for k, v in self.overall.recall.items()},
            "n_questions": self.overall.n,
            "per_category": {name: group(g) for name, g in self.per_category.items()},
            "per_conversation": {name: group(g) for name, g in self.per_conversation.items()},
            "mode": self.config.mode,
            "scoring": self.config.scoring,
            "decay": self.config.decay,
            "graph": self.config.graph,
            "ks": list(self.config.ks),
            "n_turns": self.n_turns,
            "skipped_questions": self.skipped_questions,
            "ingest_seconds": round(self.ingest_seconds, 3),
            "warmup_seconds": round(self.warmup_seconds, 3),
            "search_p50_ms": _round(self.search_p50_ms),
            "search_p95_ms": _round(self.search_p95_ms),
            "seconds": round(self.seconds, 3),
            "config": asdict(self.config),
        }
        off = self.without_graph
        if off is not None:
            result["without_graph"] = {
                **{f"recall@{k}": round(v, 2) for k, v in off.overall.recall.items()},
                "per_category": {name: group(g) for name, g in off.per_category.items()},
                "search_p50_ms": _round(off.search_p50_ms),
                "search_p95_ms": _round(off.search_p95_ms),
            }
        return result


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _mean_recall(rows: Sequence[dict[int, float]], ks: Sequence[int]) -> CategoryRecall:
    if not rows:
        return CategoryRecall(n=0, recall={k: 0.0 for k in ks})
    return CategoryRecall(
        n=len(rows), recall={k: 100.0 * sum(r[k] for r in rows) / len(rows) for k in ks}
    )


class RecallTally:
    """Recall@k of the questions asked so far, kept by conversation and category.

    Args:
        ks: The cut-offs.
    """

    def __init__(self, ks: Sequence[int]) -> None:
        self.ks = list(ks)
        self._rows: list[dict[int, float]] = []
        self._by_conversation: dict[str, list[dict[int, float]]] = {}
        self._by_category: dict[int, list[dict[int, float]]] = {}

    def add(self, sample_id: str, question: Question, ranked_keys: Sequence[str]) -> None:
        """Count one answered question.

        Args:
            sample_id: The question's conversation.
            question: The question (its evidence and category).
            ranked_keys: Keys of the search results, best first.
        """
        row = {k: recall_at_k(question.evidence, ranked_keys, k) for k in self.ks}
        self._rows.append(row)
        self._by_conversation.setdefault(sample_id, []).append(row)
        self._by_category.setdefault(question.category, []).append(row)

    def overall(self) -> CategoryRecall:
        """Mean recall of every question."""
        return _mean_recall(self._rows, self.ks)

    def per_category(self) -> dict[str, CategoryRecall]:
        """Mean recall by category name, in category-number order."""
        return {
            category_name(c): _mean_recall(self._by_category[c], self.ks)
            for c in sorted(self._by_category)
        }

    def per_conversation(self, sample_ids: Iterable[str]) -> dict[str, CategoryRecall]:
        """Mean recall by conversation.

        Args:
            sample_ids: The conversations, in report order (one without questions gets
                ``n`` 0 and recall 0).

        Returns:
            The recall of each conversation.
        """
        return {s: _mean_recall(self._by_conversation.get(s, []), self.ks) for s in sample_ids}


def search_percentiles_ms(seconds: Sequence[float]) -> tuple[float | None, float | None]:
    """The median and 95th percentile (nearest rank) of search times, in milliseconds.

    Args:
        seconds: The time of each search, in seconds.

    Returns:
        ``(p50, p95)``, or ``(None, None)`` without searches.
    """
    if not seconds:
        return None, None
    ms = sorted(s * 1000.0 for s in seconds)
    return statistics.median(ms), ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
