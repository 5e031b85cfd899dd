"""Leave-one-conversation-out figures of the retrieval benchmark (`--cv`, `--sweep`).

A setting chosen on the conversations it is measured on looks better than it is. The
honest figure of a choice is the one on a conversation that took no part in it: with
conversations ``c1..cn``, fold ``i`` holds ``ci`` out, chooses on the others and is
judged on ``ci``. This module holds the pure part of that protocol, over figures the
benchmark already measured (recall@k per conversation, per value of a swept key):

- `cv_folds`: without a sweep nothing is chosen; each fold's figure is the run's recall
  on the held-out conversation, reported with their mean (macro) next to the pooled
  figure (every question alike, what the plain benchmark prints);
- `choose`: the value of one key with the best pooled recall on the training
  conversations (ties go to the run's own value, `base`, then to the first given);
- `sweep_key`: every fold's choice and its held-out figure (the LOO figure), and the
  stability verdict of the run's value (`verdict`).

The verdict (issue 17's rule for a `ScoringConfig` default): the value is *stable* when
its mean over folds is within `STABLE_MEAN_POINTS` of the best value's mean AND on no
held-out conversation it trails that conversation's best value by more than
`STABLE_FOLD_POINTS`.

Example:
    ```python
    from tiered_memory_benchmarks._retrieval_cv import ValueFigures, sweep_key
    from tiered_memory_benchmarks._retrieval_metrics import CategoryRecall

    def figs(a: float, b: float) -> dict[str, CategoryRecall]:
        return {"c1": CategoryRecall(10, {5: a}), "c2": CategoryRecall(10, {5: b})}

    result = sweep_key(
        "rrf_k",
        [ValueFigures(10, figs(60.0, 70.0), base=True), ValueFigures(30, figs(64.0, 69.0))],
        k=5,
    )
    # Fold c1 chooses on c2 (10 wins there) and fold c2 on c1 (30 wins there).
    assert [f.chosen for f in result.folds] == [10, 30]
    assert result.loo[5] == (60.0 + 69.0) / 2
    assert not result.verdict.stable  # 10 trails 30 by 4 points on c1
    ```
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiered_memory_benchmarks._retrieval_data import RetrievalBenchmarkError
from tiered_memory_benchmarks._retrieval_metrics import CategoryRecall, RetrievalBenchReport

__all__ = [
    "STABLE_FOLD_POINTS",
    "STABLE_MEAN_POINTS",
    "CvFold",
    "CvFigures",
    "KeySweep",
    "RetrievalCvReport",
    "SweepFold",
    "ValueFigures",
    "Verdict",
    "choose",
    "cv_folds",
    "macro_mean",
    "pooled_mean",
    "sweep_key",
    "verdict",
]

STABLE_MEAN_POINTS = 1.0
"""Largest gap, in recall points, between the mean over folds of a stable value and of
the best value."""

STABLE_FOLD_POINTS = 2.0
"""Largest gap, in recall points, between a stable value and the best value of any one
held-out conversation."""

_TIE = 1e-9


def macro_mean(groups: Mapping[str, CategoryRecall], ks: Sequence[int]) -> dict[int, float]:
    """Mean over conversations of their recall (each conversation counts once).

    Args:
        groups: Recall by conversation (none empty).
        ks: The cut-offs.

    Returns:
        The mean recall by cut-off; 0 without conversations.
    """
    if not groups:
        return {k: 0.0 for k in ks}
    return {k: sum(g.recall[k] for g in groups.values()) / len(groups) for k in ks}


def pooled_mean(
    groups: Mapping[str, CategoryRecall], ks: Sequence[int], only: Collection[str] | None = None
) -> dict[int, float]:
    """Recall over the questions of the conversations (each question counts once).

    Args:
        groups: Recall and question count by conversation.
        ks: The cut-offs.
        only: Conversations to pool (default: all).

    Returns:
        The pooled recall by cut-off; 0 without questions.
    """
    chosen = [g for name, g in groups.items() if only is None or name in only]
    n = sum(g.n for g in chosen)
    if n == 0:
        return {k: 0.0 for k in ks}
    return {k: sum(g.recall[k] * g.n for g in chosen) / n for k in ks}


@dataclass(frozen=True)
class CvFold:
    """One fold without a sweep: the run's figure on the held-out conversation.

    Attributes:
        held_out: The conversation judged.
        recall: Its recall and question count.
    """

    held_out: str
    recall: CategoryRecall


@dataclass(frozen=True)
class CvFigures:
    """Leave-one-conversation-out figures of one setting (nothing chosen).

    Attributes:
        folds: One per conversation with questions.
        macro: Mean over folds, by cut-off.
        pooled: Over every question, by cut-off.
    """

    folds: list[CvFold]
    macro: dict[int, float]
    pooled: dict[int, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON: ``folds`` (``held_out``, ``n``, ``recall@k``), ``macro``, ``pooled``."""
        return {
            "folds": [
                {"held_out": f.held_out, "n": f.recall.n, **_recall(f.recall.recall)}
                for f in self.folds
            ],
            "macro": _recall(self.macro),
            "pooled": _recall(self.pooled),
        }


def _recall(values: Mapping[int, float]) -> dict[str, float]:
    return {f"recall@{k}": round(v, 2) for k, v in values.items()}


def _with_questions(groups: Mapping[str, CategoryRecall]) -> dict[str, CategoryRecall]:
    return {name: g for name, g in groups.items() if g.n > 0}


def cv_folds(groups: Mapping[str, CategoryRecall], ks: Sequence[int]) -> CvFigures:
    """The folds of a run that chooses nothing.

    Args:
        groups: The run's recall by conversation; those without questions are left out.
        ks: The cut-offs.

    Returns:
        One fold per conversation, their mean and the pooled figure.

    Raises:
        RetrievalBenchmarkError: Fewer than two conversations have questions.
    """
    kept = _with_questions(groups)
    _check_folds(kept)
    return CvFigures(
        folds=[CvFold(name, g) for name, g in kept.items()],
        macro=macro_mean(kept, ks),
        pooled=pooled_mean(kept, ks),
    )


def _check_folds(groups: Mapping[str, CategoryRecall]) -> None:
    if len(groups) < 2:
        raise RetrievalBenchmarkError(
            "leave-one-conversation-out needs at least two conversations with questions,"
            f" got {len(groups)}."
        )


@dataclass(frozen=True)
class ValueFigures:
    """Recall of one value of a swept key on each conversation.

    Attributes:
        value: The key's value.
        per_conversation: Recall and question count by conversation.
        base: Whether it is the run's own value (its default or `--set`).
    """

    value: Any
    per_conversation: dict[str, CategoryRecall]
    base: bool = False


def choose(points: Sequence[ValueFigures], train: Collection[str], k: int) -> int:
    """The value with the best pooled recall@k on the training conversations.

    Args:
        points: The values and their figures.
        train: The conversations to choose on.
        k: The cut-off to choose by.

    Returns:
        The index of the chosen value in `points`: the best, the base value among
        tied best ones, else the first of them.
    """
    scores = [pooled_mean(p.per_conversation, [k], train)[k] for p in points]
    best = max(scores)
    tied = [i for i, s in enumerate(scores) if s >= best - _TIE]
    return next((i for i in tied if points[i].base), tied[0])


@dataclass(frozen=True)
class SweepFold:
    """One fold of a sweep.

    Attributes:
        held_out: The conversation judged.
        chosen: The value chosen on the other conversations.
        train_recall: Its pooled recall@k (the choosing cut-off) there.
        recall: The chosen value's recall on the held-out conversation, by cut-off.
        base_recall: The base value's recall there, by cut-off.
        best: The best value on the held-out conversation (at the choosing cut-off).
        best_recall: Its recall there, at the choosing cut-off.
    """

    held_out: str
    chosen: Any
    train_recall: float
    recall: dict[int, float]
    base_recall: dict[int, float]
    best: Any
    best_recall: float


@dataclass(frozen=True)
class Verdict:
    """Whether the base value of a key holds up across folds.

    Attributes:
        stable: Both conditions hold.
        mean_gap: Best value's mean over folds minus the base value's (>= 0).
        best: The value with the best mean over folds.
        fold_gaps: By held-out conversation, that fold's best recall minus the base
            value's (>= 0).
        reasons: The failing conditions, in words (empty when stable).
    """

    stable: bool
    mean_gap: float
    best: Any
    fold_gaps: dict[str, float]
    reasons: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line: ``stable (...)`` or ``not stable: <reasons>``."""
        worst = max(self.fold_gaps.items(), key=lambda kv: kv[1])
        if self.stable:
            return (
                f"stable (mean {self.mean_gap:.1f} <= {STABLE_MEAN_POINTS:g} below the best,"
                f" {_show(self.best)}; worst fold {worst[0]} {worst[1]:.1f} <="
                f" {STABLE_FOLD_POINTS:g} below its best)"
            )
        return "not stable: " + "; ".join(self.reasons)


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def verdict(points: Sequence[ValueFigures], k: int) -> Verdict:
    """The stability verdict of the base value (issue 17's rule), at cut-off `k`.

    Args:
        points: The values and their figures; exactly one is the base value, and every
            one covers the same conversations (at least two with questions).
        k: The cut-off to judge by.

    Returns:
        The verdict, with the gaps that decide it.

    Raises:
        RetrievalBenchmarkError: No base value, or fewer than two conversations.
    """
    base = _base(points)
    convs = list(_with_questions(base.per_conversation))
    _check_folds({c: base.per_conversation[c] for c in convs})
    means = [macro_mean({c: p.per_conversation[c] for c in convs}, [k])[k] for p in points]
    best = max(range(len(points)), key=lambda i: (means[i], points[i].base))
    base_mean = sum(base.per_conversation[c].recall[k] for c in convs) / len(convs)
    mean_gap = max(0.0, means[best] - base_mean)
    reasons: list[str] = []
    if mean_gap > STABLE_MEAN_POINTS + _TIE:
        reasons.append(
            f"mean over folds {mean_gap:.1f} points below {_show(points[best].value)}"
            f" (> {STABLE_MEAN_POINTS:g})"
        )
    fold_gaps: dict[str, float] = {}
    for c in convs:
        top = max(range(len(points)), key=lambda i: points[i].per_conversation[c].recall[k])
        gap = points[top].per_conversation[c].recall[k] - base.per_conversation[c].recall[k]
        fold_gaps[c] = max(0.0, gap)
        if gap > STABLE_FOLD_POINTS + _TIE:
            reasons.append(
                f"on {c} {gap:.1f} points below {_show(points[top].value)}"
                f" (> {STABLE_FOLD_POINTS:g})"
            )
    return Verdict(not reasons, mean_gap, points[best].value, fold_gaps, reasons)


def _base(points: Sequence[ValueFigures]) -> ValueFigures:
    bases = [p for p in points if p.base]
    if len(bases) != 1:
        raise RetrievalBenchmarkError(f"a sweep needs one base value, got {len(bases)}.")
    return bases[0]


@dataclass(frozen=True)
class KeySweep:
    """Everything a sweep of one key measured and concluded.

    Attributes:
        key: The `ScoringConfig` key.
        index_time: Whether each value had its own store (`INDEX_TIME_KEYS`).
        k: The cut-off values are chosen and judged by.
        ks: Every cut-off measured.
        points: The values, in the order given (the base value added when missing).
        folds: One per held-out conversation.
        loo: Mean over folds of the chosen value's held-out recall, by cut-off.
        base_mean: Mean over folds of the base value's recall, by cut-off.
        verdict: The base value's stability verdict.
    """

    key: str
    index_time: bool
    k: int
    ks: list[int]
    points: list[ValueFigures]
    folds: list[SweepFold]
    loo: dict[int, float]
    base_mean: dict[int, float]
    verdict: Verdict

    @property
    def base_value(self) -> Any:
        """The run's own value of the key."""
        return _base(self.points).value

    def to_dict(self) -> dict[str, Any]:
        """JSON of every figure, fold and the verdict."""
        convs = [f.held_out for f in self.folds]

        def group(g: CategoryRecall) -> dict[str, Any]:
            return {**_recall(g.recall), "n": g.n}

        return {
            "key": self.key,
            "base": self.base_value,
            "index_time": self.index_time,
            "select": f"recall@{self.k}",
            "values": [
                {
                    "value": p.value,
                    "base": p.base,
                    "per_conversation": {c: group(p.per_conversation[c]) for c in convs},
                    "macro": _recall(
                        macro_mean({c: p.per_conversation[c] for c in convs}, self.ks)
                    ),
                    "pooled": _recall(pooled_mean(p.per_conversation, self.ks, convs)),
                }
                for p in self.points
            ],
            "folds": [
                {
                    "held_out": f.held_out,
                    "chosen": f.chosen,
                    "train_recall": round(f.train_recall, 2),
                    **_recall(f.recall),
                    "base": _recall(f.base_recall),
                    "fold_best": {"value": f.best, f"recall@{self.k}": round(f.best_recall, 2)},
                }
                for f in self.folds
            ],
            "loo": _recall(self.loo),
            "base_mean": _recall(self.base_mean),
            "verdict": {
                "stable": self.verdict.stable,
                "mean_gap": round(self.verdict.mean_gap, 2),
                "best": self.verdict.best,
                "fold_gaps": {c: round(g, 2) for c, g in self.verdict.fold_gaps.items()},
                "reasons": list(self.verdict.reasons),
            },
        }


def sweep_key(
    key: str,
    points: Sequence[ValueFigures],
    *,
    k: int,
    ks: Sequence[int] | None = None,
    index_time: bool = False,
) -> KeySweep:
    """Leave-one-conversation-out over the values of one key.

    Args:
        key: The key swept.
        points: Its values with their figures (exactly one `base`); conversations
            without questions are left out.
        k: The cut-off to choose and judge by.
        ks: Every cut-off to report (default: the `k` only).
        index_time: Whether each value had its own store.

    Returns:
        The folds, the LOO figure, the base value's mean and its verdict.

    Raises:
        RetrievalBenchmarkError: No base value, or fewer than two conversations.
    """
    ks = list(ks) if ks is not None else [k]
    base = _base(points)
    convs = list(_with_questions(base.per_conversation))
    _check_folds({c: base.per_conversation[c] for c in convs})
    folds: list[SweepFold] = []
    for held_out in convs:
        train = [c for c in convs if c != held_out]
        i = choose(points, train, k)
        top = max(
            range(len(points)),
            key=lambda j: (points[j].per_conversation[held_out].recall[k], points[j].base),
        )
        folds.append(
            SweepFold(
                held_out=held_out,
                chosen=points[i].value,
                train_recall=pooled_mean(points[i].per_conversation, [k], train)[k],
                recall={m: points[i].per_conversation[held_out].recall[m] for m in ks},
                base_recall={m: base.per_conversation[held_out].recall[m] for m in ks},
                best=points[top].value,
                best_recall=points[top].per_conversation[held_out].recall[k],
            )
        )
    return KeySweep(
        key=key,
        index_time=index_time,
        k=k,
        ks=ks,
        points=list(points),
        folds=folds,
        loo={m: sum(f.recall[m] for f in folds) / len(folds) for m in ks},
        base_mean={m: sum(f.base_recall[m] for f in folds) / len(folds) for m in ks},
        verdict=verdict(points, k),
    )


@dataclass
class RetrievalCvReport:
    """What `bench retrieval --cv` measured.

    Attributes:
        run: The run's own report (its setting, every question asked once, counted).
        cv: Its folds, mean over folds and pooled figure.
        sweeps: One per swept key, in the order given.
        select: The cut-off values are chosen and judged by.
        stores: Stores built (one, plus one per value of an index-time key).
        searches: Searches made, over every store.
        ingest_seconds: Time spent writing turns, over every store.
        seconds: Wall time.
    """

    run: RetrievalBenchReport
    cv: CvFigures
    sweeps: list[KeySweep]
    select: int
    stores: int
    searches: int
    ingest_seconds: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary.

        Returns:
            The run's own summary (`RetrievalBenchReport.to_dict`) plus ``cv``,
            ``sweeps``, ``select``, ``stores``, ``searches``, ``cv_ingest_seconds`` and
            ``cv_seconds``.
        """
        return {
            **self.run.to_dict(),
            "cv": self.cv.to_dict(),
            "sweeps": [s.to_dict() for s in self.sweeps],
            "select": f"recall@{self.select}",
            "stores": self.stores,
            "searches": self.searches,
            "cv_ingest_seconds": round(self.ingest_seconds, 3),
            "cv_seconds": round(self.seconds, 3),
        }
