"""Memory ranking: pure functions from retrieval candidates to ordered, scored results.

Nothing here does I/O; the store collects candidates from the long-term tier (dense
and keyword retrieval, memory statistics) and ranks them here.

The score of a memory, in `"memory"` mode, is a weighted sum (never a product, so an
old memory's score cannot underflow to 0 and tie with every other old memory)::

    score = relevance_weight  * relevance                  # 0..1, see below
          + importance_weight * importance                 # 0..1, from the value
          + recency_weight    * 0.5 ** (age / half_life)   # age of the event
          + access_weight     * log1p(access_count)
          + user_weight       * [memory is in the caller's own user namespace]
          + time_weight       * [memory answers the query's time question]

`age` runs from the memory's `occurred_at` (its creation when it has none); with
`recency_from="last_access"` it runs from the last search or get that returned it
instead. Event time is the default because access-based recency feeds back on
itself: every search refreshes what it returns, and on LoCoMo that cost 2-3 points
of recall@5. Relevance stays dominant: with the default weights (importance 0.1,
recency 0.02, access 0.005) the other factors move a memory by a few ranks at most.
A query that asks when, or names a month or year, adds `time_weight` (0.2) to the
memories that state a time or happened in that period (`ranking.dates`).

Relevance depends on the retrieval mode (its `fusion` in `ranking.modes.MODES`):

- `"semantic"`: cosine similarity of the query and the memory, clipped to 0..1.
- `"keyword"`: BM25 score divided by the best BM25 score of the query.
- `"hybrid"` and `"contextual"`: weighted reciprocal-rank fusion of three lists, the
  memories ranked by their own (field) vectors (weight 0.5), by the best of all their
  vectors including index keys (weight 0.5) and by BM25 (weight 1): the dense and the
  keyword channel have an equal say, the dense channel's two lists share its half
  (when no memory has index keys, the one dense list takes the whole dense weight):
  `f = sum_c w_c / (rrf_k + rank_c)` (rrf_k = 5), then neighbour smoothing in write
  order, which lifts a memory toward its stronger neighbours:
  `f'(m) = f(m) + neighbor_weight * sum_d max(0, max(f(m - d), f(m + d)) - f(m))` over
  the distances d = 1 .. `neighbor_reach` (neighbor_weight = 0.4, neighbor_reach = 2:
  in a dialogue the turns just before and after a memory and the same speaker's
  previous and next turn), never above the best of those neighbours, so smoothing
  never moves a memory past the one that lifts it. Memories of one conversation
  answer each other, so a neighbour counts only when the two happened at most
  `neighbor_gap_minutes` = 30 apart. Divided by the largest possible value, so the
  top memory of every list gets 1. docs/ranking.md says where each default comes
  from.

  With a knowledge graph (`graph=`) and `graph_weight` > 0, a fourth list joins the
  fusion: memories supporting triples about the query's entities (and, with
  `graph_hops` 1, one hop further), ranked by `ranking.select.graph_scores`; it adds
  `graph_weight / (rrf_k + graph_rank)`, where memories tied in the graph list share
  the mean of the positions they fill (the graph ties in large groups). The largest
  possible value counts the graph list only when it holds a memory, so without graph
  hits relevance is exactly as without the channel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from langgraph_tiered_memory.errors import ConfigurationError, InvalidFilterError
from langgraph_tiered_memory.memory import DEFAULT_MEMORY_TYPE
from langgraph_tiered_memory.privacy.ownership import (
    DEFAULT_USER_TEMPLATES,
    namespace_owner,
    user_scope,
)
from langgraph_tiered_memory.ranking.modes import RETRIEVAL_MODES, RetrievalMode, mode_spec
from langgraph_tiered_memory.ranking.terms import fold, index_terms, keyword_terms

__all__ = [
    "RetrievalMode",
    "RETRIEVAL_MODES",
    "ScoreBreakdown",
    "Scoring",
    "keyword_terms",
    "fuse",
    "recency",
    "rank_memories",
    "MemoryCandidate",
    "SEARCH_OPTIONS",
    "split_search_options",
    "user_scope",
    "UserScope",
    "fold",
    "index_terms",
]

DAY = 86_400.0

GRAPH_WEIGHT = 0.0
"""Default weight of the graph list in the fusion (`ScoringConfig.graph_weight`)."""


@dataclass(frozen=True, slots=True)
class Scoring:
    """A validated `ScoringConfig` with every default filled in."""

    mode: Literal["similarity", "memory"] = "memory"
    retrieval: RetrievalMode = "hybrid"
    candidates: int = 50
    rrf_k: float = 5.0
    neighbor_weight: float = 0.4
    neighbor_reach: int = 2
    neighbor_gap_minutes: float = 30.0
    context_keys: bool = True
    sentence_keys: int = 0
    time_keys: bool = True
    semantic_weight: float = 0.5
    context_weight: float = 0.5
    keyword_weight: float = 1.0
    relevance_weight: float = 1.0
    importance_weight: float = 0.1
    recency_weight: float = 0.02
    access_weight: float = 0.005
    user_weight: float = 0.05
    half_life_days: float = 30.0
    time_weight: float = 0.2
    recency_from: Literal["occurred_at", "last_access"] = "occurred_at"
    min_score: float | None = None
    user_label: str = "users"
    shared_types: tuple[str, ...] = ("fact", "skill")
    graph_weight: float = GRAPH_WEIGHT
    graph_hops: int = 1

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> Scoring:
        """Validate a `ScoringConfig` dict.

        Raises:
            ConfigurationError: an unknown key, mode or out-of-range number.
        """
        if config is None:
            return cls()
        if not isinstance(config, Mapping):
            raise ConfigurationError(
                f"scoring must be a dict such as {{'mode': 'memory'}}, got {config!r}."
            )
        known = set(cls.__dataclass_fields__)
        unknown = set(config) - known
        if unknown:
            raise ConfigurationError(
                f"Unknown scoring keys {sorted(unknown)}; valid keys are {sorted(known)}."
            )
        mode = config.get("mode", "memory")
        if mode not in ("similarity", "memory"):
            raise ConfigurationError(
                f"scoring mode {mode!r} is unknown; use 'memory' (relevance, importance,"
                " recency and access count) or 'similarity' (cosine similarity only)."
            )
        retrieval = config.get("retrieval", "hybrid")
        if retrieval not in RETRIEVAL_MODES:
            raise ConfigurationError(
                f"scoring retrieval {retrieval!r} is unknown; use one of {list(RETRIEVAL_MODES)}."
            )
        values: dict[str, Any] = {"mode": mode, "retrieval": retrieval}
        origin = config.get("recency_from", "occurred_at")
        if origin not in ("occurred_at", "last_access"):
            raise ConfigurationError(
                f"scoring recency_from must be 'occurred_at' or 'last_access', got {origin!r}."
            )
        values["recency_from"] = origin
        for name in (
            "rrf_k",
            "semantic_weight",
            "context_weight",
            "keyword_weight",
            "relevance_weight",
            "importance_weight",
            "recency_weight",
            "access_weight",
            "user_weight",
            "half_life_days",
            "time_weight",
            "neighbor_weight",
            "neighbor_gap_minutes",
            "graph_weight",
        ):
            if name in config:
                values[name] = _number(name, config[name], positive=name in _POSITIVE)
        for flag in ("context_keys", "time_keys"):
            if flag in config:
                if not isinstance(config[flag], bool):
                    raise ConfigurationError(
                        f"scoring {flag} must be True or False, got {config[flag]!r}."
                    )
                values[flag] = config[flag]
        for name, (lowest, hint) in _COUNTS.items():
            if name in config:
                n = config[name]
                if isinstance(n, bool) or not isinstance(n, int) or n < lowest:
                    raise ConfigurationError(
                        f"scoring {name} must be an int >= {lowest}{hint}, got {n!r}."
                    )
                values[name] = n
        if "graph_hops" in config:
            n = config["graph_hops"]
            if isinstance(n, bool) or n not in (0, 1):
                raise ConfigurationError(
                    f"scoring graph_hops must be 0 (the query entities' own triples) or 1"
                    f" (one more hop from the entities they reach), got {n!r}."
                )
            values["graph_hops"] = int(n)
        if config.get("min_score") is not None:
            values["min_score"] = _number("min_score", config["min_score"], positive=False)
        if "user_label" in config:
            label = config["user_label"]
            if not isinstance(label, str) or not label:
                raise ConfigurationError(
                    f"scoring user_label must be a non-empty string, got {label!r}."
                )
            values["user_label"] = label
        if "shared_types" in config:
            from langgraph_tiered_memory.memory import MEMORY_TYPES

            types = config["shared_types"]
            if isinstance(types, str) or not all(t in MEMORY_TYPES for t in types):
                raise ConfigurationError(
                    f"scoring shared_types must be a list of {list(MEMORY_TYPES)}, got {types!r}."
                )
            values["shared_types"] = tuple(types)
        return cls(**values)


_POSITIVE = frozenset({"rrf_k", "half_life_days"})
_COUNTS = {
    "candidates": (1, ""),
    "sentence_keys": (0, " (0 switches them off)"),
    "neighbor_reach": (
        1,
        " (1: only the memories just before and after; switch smoothing off with"
        " neighbor_weight=0)",
    ),
}
"""Integer keys: the least value each takes, and what the error adds about it."""


def _number(name: str, value: Any, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigurationError(f"scoring {name} must be a finite number, got {value!r}.")
    if positive and value <= 0:
        raise ConfigurationError(f"scoring {name} must be > 0, got {value!r}.")
    if not positive and name != "min_score" and value < 0:
        raise ConfigurationError(f"scoring {name} must be >= 0, got {value!r}.")
    return float(value)


SEARCH_OPTIONS = frozenset({"$retrieval", "$user", "$min_score", "$count_access"})
"""Filter keys that set search options for one call instead of filtering values."""


def split_search_options(
    filter: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Separate the per-call search options (`$retrieval`, `$user`, ...) from a filter.

    The options are `$retrieval`, `$user`, `$min_score` and `$count_access`.

    Raises:
        InvalidFilterError: an option has a bad value or an unknown `$` key is used.
    """
    if not filter:
        return {}, filter  # type: ignore[return-value]
    options = {k: v for k, v in filter.items() if isinstance(k, str) and k.startswith("$")}
    if not options:
        return {}, dict(filter)
    unknown = set(options) - SEARCH_OPTIONS
    if unknown:
        raise InvalidFilterError(
            f"Unknown search option {sorted(unknown)[0]!r} in filter; top-level keys starting"
            f" with '$' set options, and the valid ones are {sorted(SEARCH_OPTIONS)}."
        )
    mode = options.get("$retrieval")
    if mode is not None and mode not in RETRIEVAL_MODES:
        raise InvalidFilterError(
            f"filter['$retrieval'] must be one of {list(RETRIEVAL_MODES)}, got {mode!r}."
        )
    user = options.get("$user")
    if user is not None and (not isinstance(user, str) or not user):
        raise InvalidFilterError(f"filter['$user'] must be a non-empty string, got {user!r}.")
    min_score = options.get("$min_score")
    if min_score is not None and (
        isinstance(min_score, bool)
        or not isinstance(min_score, (int, float))
        or not math.isfinite(min_score)
    ):
        raise InvalidFilterError(
            f"filter['$min_score'] must be a finite number, got {min_score!r}."
        )
    count = options.get("$count_access")
    if count is not None and not isinstance(count, bool):
        raise InvalidFilterError(
            f"filter['$count_access'] must be True or False, got {count!r}; False reads"
            " memories without counting an access (for profiles, extraction, audits)."
        )
    rest = {k: v for k, v in filter.items() if k not in options}
    return options, rest or None


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """How a memory's score was made; `score` is the weighted sum of the factors.

    Each factor is given before weighting: `relevance`, `importance` and `recency`
    are in 0..1, `access` is `log1p(access_count)` and `user` is 1 for a memory in
    the caller's own user namespace (contextual retrieval), else 0.
    """

    score: float
    relevance: float
    semantic: float | None
    """Cosine similarity, when dense retrieval returned the memory."""
    keyword: float | None
    """BM25 score, when keyword retrieval returned the memory."""
    importance: float
    recency: float
    access: float
    user: float
    semantic_rank: int | None = None
    keyword_rank: int | None = None
    graph_rank: int | None = None
    """Rank in the graph list, when the knowledge-graph channel returned the memory."""
    time: float = 0.0
    """1 when the memory answers the query's time question (`ranking.dates`), else 0."""


@dataclass(frozen=True, slots=True)
class MemoryCandidate:
    """What ranking needs of one candidate."""

    semantic: float | None
    keyword: float | None
    importance: float
    last_touched: float
    """Last access, or creation time when never accessed (epoch seconds)."""
    access_count: int
    own: bool = False
    """In the caller's user namespace (contextual retrieval)."""
    own_semantic: float | None = None
    """Best similarity of the memory's own (field) vectors, when dense retrieval saw one."""
    context_semantic: float | None = None
    """Best similarity of its key vectors (contextual, sentence keys), when seen."""
    namespace: tuple[str, ...] = ()
    seq: int | None = None
    """Write position in its namespace; memories at seq +- 1 are its neighbours."""
    graph: float | None = None
    """Graph-channel score (`ranking.select.graph_scores`), when the graph reached it."""
    event_at: float | None = None
    """When the memory happened (`occurred_at`, else its creation), epoch seconds; the
    neighbour smoothing joins only neighbours within `neighbor_gap_minutes` of it."""
    time_match: bool = False
    """It answers the query's time question (`ranking.dates.time_match`)."""


def recency(last_touched: float, now: float, half_life_days: float) -> float:
    """Exponential decay `0.5 ** (age / half_life)`; 1 for future timestamps."""
    age = max(0.0, now - last_touched)
    return cast(float, 0.5 ** (age / (half_life_days * DAY)))


def _ranks(values: Sequence[float | None]) -> list[int | None]:
    """1-based ranks by descending value; equal values (within 1e-6) share a rank."""
    order = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: -values[i])  # type: ignore[operator]
    ranks: list[int | None] = [None] * len(values)
    prev: float | None = None
    rank = 0
    for position, i in enumerate(order, start=1):
        value = values[i]
        assert value is not None
        if prev is None or prev - value > 1e-6:
            rank, prev = position, value
        ranks[i] = rank
    return ranks


def _mean_ranks(values: Sequence[float | None]) -> list[float | None]:
    """Like `_ranks`, but memories of one tie share the mean of the positions they fill.

    The graph list ties in large groups (every memory a frequent entity names scores
    alike); sharing the first position would lift a whole group as high as a single
    best match, so the group shares its mean position instead (fractional ranking).
    """
    ranks = _ranks(values)
    size: dict[int, int] = {}
    for r in ranks:
        if r is not None:
            size[r] = size.get(r, 0) + 1
    return [None if r is None else r + (size[r] - 1) / 2 for r in ranks]


def _smooth(
    candidates: Sequence[MemoryCandidate],
    fused: Sequence[float],
    beta: float,
    gap: float,
    reach: int,
) -> list[float]:
    """Lift each memory toward its stronger neighbours in write order.

    For every distance d from 1 to `reach`, the better of the memories d places before
    and after it, when its fused score is higher, adds `beta` x the difference. The
    result never exceeds the memory's own score or its best neighbour's, whichever is
    higher: smoothing never moves a memory past the one that lifts it, so no memory
    passes the best-fused one (it stays strictly ahead while `beta` x `reach` < 1, as
    by default; at 1 or more a neighbour can tie it). A neighbour joins only when both
    event times are known and at most `gap` seconds apart, or when either is unknown:
    memories written in one conversation answer each other, memories that happen to be
    written one after the other days apart do not.
    """
    at = {
        (c.namespace, c.seq): (f, c.event_at)
        for c, f in zip(candidates, fused, strict=True)
        if c.seq is not None
    }

    def near(c: MemoryCandidate, seq: int) -> float:
        hit = at.get((c.namespace, seq))
        if hit is None:
            return 0.0
        f, when = hit
        if when is not None and c.event_at is not None and abs(when - c.event_at) > gap:
            return 0.0
        return f

    out = []
    for c, f in zip(candidates, fused, strict=True):
        if c.seq is not None:
            best = [max(near(c, c.seq - d), near(c, c.seq + d)) for d in range(1, reach + 1)]
            f = min(f + beta * sum(max(0.0, b - f) for b in best), max(f, *best))
        out.append(f)
    return out


def fuse(
    candidates: Sequence[MemoryCandidate], scoring: Scoring, retrieval: str
) -> list[tuple[float, int | None, int | None]]:
    """Relevance in 0..1 of each candidate, with its rank in each list.

    `retrieval` names a mode; its `fusion` (`ranking.modes.MODES`) decides how.

    Returns:
        (relevance, semantic rank, keyword rank) per candidate, in input order.
    """
    sem = [c.semantic for c in candidates]
    kw = [c.keyword for c in candidates]
    sem_ranks, kw_ranks = _ranks(sem), _ranks(kw)
    out = []
    fusion = mode_spec(retrieval).fusion
    if fusion == "cosine":
        for c, sr, kr in zip(candidates, sem_ranks, kw_ranks, strict=True):
            out.append((min(1.0, max(0.0, c.semantic or 0.0)), sr, kr))
        return out
    if fusion == "bm25":
        best = max((k for k in kw if k is not None), default=0.0)
        for c, sr, kr in zip(candidates, sem_ranks, kw_ranks, strict=True):
            rel = (c.keyword or 0.0) / best if best > 0 else 0.0
            out.append((max(0.0, rel), sr, kr))
        return out
    k = scoring.rrf_k
    ws, wc, wk = scoring.semantic_weight, scoring.context_weight, scoring.keyword_weight
    if any(c.context_semantic is not None for c in candidates):
        # Memories with index keys: their own vectors and their key vectors are ranked
        # as two lists, so other memories' context vectors cannot crowd out a memory
        # whose own text answers the query.
        own_ranks = _ranks([c.own_semantic for c in candidates])
        ctx_ranks = sem_ranks  # best of all vectors: a memory without keys competes too
    else:
        # One dense list: it carries the whole dense share (semantic + context weight).
        own_ranks, ctx_ranks = sem_ranks, [None] * len(candidates)
        ws, wc = ws + wc, 0.0
    beta = scoring.neighbor_weight
    graph_ranks = _mean_ranks([c.graph for c in candidates])
    # The graph list counts only when it holds a memory: otherwise wg is 0 and the
    # normalisation (so every score) is bit for bit the one without the channel.
    wg = scoring.graph_weight if any(r is not None for r in graph_ranks) else 0.0
    top = (ws + wc + wk + wg) / (k + 1) or 1.0
    fused = [
        (ws / (k + orank) if orank else 0.0)
        + (wc / (k + crank) if crank else 0.0)
        + (wk / (k + kr) if kr else 0.0)
        for orank, crank, kr in zip(own_ranks, ctx_ranks, kw_ranks, strict=True)
    ]
    if wg:
        fused = [
            f + (wg / (k + gr) if gr else 0.0) for f, gr in zip(fused, graph_ranks, strict=True)
        ]
    if beta:
        gap = scoring.neighbor_gap_minutes * 60.0
        fused = _smooth(candidates, fused, beta, gap, scoring.neighbor_reach)
    for f, sr, kr in zip(fused, sem_ranks, kw_ranks, strict=True):
        out.append((f / top, sr, kr))
    return out


def rank_memories(
    candidates: Sequence[MemoryCandidate],
    *,
    scoring: Scoring,
    retrieval: str,
    now: float,
    min_score: float | None = None,
) -> list[tuple[int, ScoreBreakdown]]:
    """Order candidates by memory score, dropping those below `min_score`.

    Returns:
        (index into `candidates`, breakdown) pairs, best first. Ties keep input order.
    """
    out: list[tuple[int, ScoreBreakdown]] = []
    # The graph list counts in rrf fusion only; its rank is shown whenever it fused.
    fuses_graph = mode_spec(retrieval).fusion == "rrf" and scoring.graph_weight > 0
    graph_ranks = _ranks([c.graph for c in candidates]) if fuses_graph else None
    for i, (c, (rel, sr, kr)) in enumerate(
        zip(candidates, fuse(candidates, scoring, retrieval), strict=True)
    ):
        rec = recency(c.last_touched, now, scoring.half_life_days)
        acc = math.log1p(max(0, c.access_count))
        own = 1.0 if c.own else 0.0
        when = 1.0 if c.time_match else 0.0
        score = (
            scoring.relevance_weight * rel
            + scoring.importance_weight * c.importance
            + scoring.recency_weight * rec
            + scoring.access_weight * acc
            + scoring.user_weight * own
            + scoring.time_weight * when
        )
        if min_score is not None and score < min_score:
            continue
        out.append(
            (
                i,
                ScoreBreakdown(
                    score=score,
                    relevance=rel,
                    semantic=c.semantic,
                    keyword=c.keyword,
                    importance=c.importance,
                    recency=rec,
                    access=acc,
                    user=own,
                    semantic_rank=sr,
                    keyword_rank=kr,
                    graph_rank=graph_ranks[i] if graph_ranks is not None else None,
                    time=when,
                ),
            )
        )
    out.sort(key=lambda p: -p[1].score)
    return out


@dataclass(frozen=True, slots=True)
class UserScope:
    """What a search on behalf of one user (`filter={"$user": ...}`) may return.

    The one visibility rule of the store, applied as a filter before any ranking, on
    every tier and path: an item is visible to `user` if and only if

    - its namespace belongs to `user` (`ownership.namespace_owner`: the label after
      `label`, else a per-user template such as `("memories", "{user_id}")`; ids are
      compared whole: `"u1"` never sees `"u10"`), or
    - its namespace belongs to no user and its memory type is one of `shared_types`
      (facts and skills by default).
    """

    user: str
    label: str = "users"
    shared_types: tuple[str, ...] = ("fact", "skill")
    templates: tuple[tuple[str, ...], ...] = DEFAULT_USER_TEMPLATES

    def owner(self, namespace: Sequence[str]) -> str | None:
        """The user `namespace` belongs to, or None when shared."""
        return namespace_owner(namespace, self.label, self.templates)

    def may_hold(self, namespace: Sequence[str]) -> bool:
        """Whether `namespace` can hold visible items (own or unscoped)."""
        owner = self.owner(namespace)
        return owner is None or owner == self.user

    def owns(self, namespace: Sequence[str]) -> bool:
        """Whether `namespace` is in the user's own scope."""
        return self.owner(namespace) == self.user

    def allows(
        self,
        namespace: Sequence[str],
        value: Mapping[str, Any] | None,
        memory_type: str | None = None,
    ) -> bool:
        """Whether an item is visible.

        Args:
            namespace: The item's namespace.
            value: The item's value; its `memory_type` is read when `memory_type`
                is None (default `"experience"`).
            memory_type: The memory type recorded in the memory index, when known.
        """
        owner = self.owner(namespace)
        if owner is not None:
            return owner == self.user
        if memory_type is None:
            memory_type = (value or {}).get("memory_type", DEFAULT_MEMORY_TYPE)
        return isinstance(memory_type, str) and memory_type in self.shared_types
