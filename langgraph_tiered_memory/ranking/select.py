"""What memory search ranks and returns: user scoping, candidates, the top-N cut (pure).

The store asks the long tier for raw candidates per channel (`MemoryTier.retrieve`)
and decides here which of them the caller may see, what ranking is told of each, and
which are returned, in which order. Nothing here does I/O.

The knowledge-graph channel adds a third list: the memories the graph reaches from
the query's entities (`GraphStore.memories_for`), scored per memory by `graph_scores`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import log
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from langgraph_tiered_memory.errors import InvalidFilterError
from langgraph_tiered_memory.graph.types import GraphHit
from langgraph_tiered_memory.ranking.dates import TimeQuestion, time_match
from langgraph_tiered_memory.ranking.modes import ModeSpec, mode_spec
from langgraph_tiered_memory.ranking.scoring import (
    MemoryCandidate,
    ScoreBreakdown,
    Scoring,
    UserScope,
    index_terms,
)

__all__ = [
    "CHANNELS",
    "ChannelCandidate",
    "ChannelHits",
    "CutCandidate",
    "DenseHit",
    "GraphListHit",
    "KeywordHit",
    "ItemView",
    "MemoryStatsView",
    "best_first",
    "cut_channels",
    "graph_scores",
    "memory_candidates",
    "needs_larger_pool",
    "recency_origin",
    "search_mode",
    "top_n",
    "user_scope_for",
    "visible",
]

CHANNELS = ("semantic", "own", "keyword", "graph")
"""Candidate fields that say a retrieval channel returned the candidate."""


class MemoryStatsView(Protocol):
    """Ranking fields and access statistics of one memory, as the memory index keeps them."""

    @property
    def seq(self) -> int:
        """Position of the memory in its namespace's write order."""

    @property
    def memory_type(self) -> str:
        """Its memory type (`experience`, `fact`, `skill`, ...)."""

    @property
    def importance(self) -> float:
        """Importance in 0..1."""

    @property
    def occurred_at(self) -> float | None:
        """Event time, when the memory has one."""

    @property
    def created_at(self) -> float:
        """Creation time."""

    @property
    def access_count(self) -> int:
        """How many searches and gets returned it."""

    @property
    def last_accessed(self) -> float | None:
        """Last search or get that returned it, or None."""


class ItemView(Protocol):
    """What selection reads of a stored item."""

    @property
    def namespace(self) -> tuple[str, ...]:
        """Its namespace."""

    @property
    def key(self) -> str:
        """Its key."""

    @property
    def value(self) -> Mapping[str, Any]:
        """Its value."""

    @property
    def created_at(self) -> float:
        """Creation time (epoch seconds)."""


class ChannelCandidate(Protocol):
    """A raw candidate: what each channel found of one item."""

    @property
    def item(self) -> ItemView:
        """The stored item."""

    @property
    def semantic(self) -> float | None:
        """Best similarity of any of its vectors; None when the dense channel missed it."""

    @property
    def keyword(self) -> float | None:
        """BM25 score; None when the keyword channel did not return it."""

    @property
    def own(self) -> float | None:
        """Best similarity of its own (field) vectors, when dense retrieval saw one."""

    @property
    def context(self) -> float | None:
        """Best similarity of its key vectors, when seen."""

    @property
    def graph(self) -> float | None:
        """Graph-channel score (`graph_scores`); None when the graph did not reach it."""

    @property
    def stats(self) -> MemoryStatsView | None:
        """Its memory statistics, or None when it is not a memory."""


C = TypeVar("C", bound=ChannelCandidate)
T = TypeVar("T")
I = TypeVar("I", bound=ItemView)  # noqa: E741


class DenseHit(NamedTuple, Generic[I]):
    """What the dense channel found of one item."""

    item: I
    best: float
    """Best similarity of any of its vectors."""
    own: float | None
    """Best similarity of its own (field) vectors, when one was seen."""
    context: float | None
    """Best similarity of its key vectors, when one was seen."""


class KeywordHit(NamedTuple, Generic[I]):
    """What the keyword channel found of one item."""

    item: I
    bm25: float


class GraphListHit(NamedTuple, Generic[I]):
    """A memory the knowledge-graph channel reached, with its `graph_scores` score."""

    item: I
    score: float


class ChannelHits(NamedTuple, Generic[I]):
    """Raw, uncut candidate lists of each retrieval channel, in no particular order."""

    dense: Sequence[DenseHit[I]]
    keyword: Sequence[KeywordHit[I]]
    graph: Sequence[GraphListHit[I]] = ()
    """Empty unless the store keeps a graph and the channel runs."""


class CutCandidate(NamedTuple, Generic[I]):
    """A candidate that survived the per-channel cut, with what each channel found of it."""

    item: I
    semantic: float | None
    keyword: float | None
    own: float | None
    context: float | None
    graph: float | None = None


def _tie(item: ItemView) -> tuple[tuple[str, ...], str]:
    return tuple(item.namespace), item.key


def cut_channels(hits: ChannelHits[I], limit: int) -> list[CutCandidate[I]]:
    """The best `limit` of each channel, merged into one candidate per item.

    The ranked lists are cut, each by descending score with ties broken by
    namespace then key: dense hits by their best similarity, dense hits with an
    own-vector similarity by it, keyword hits by BM25, and graph hits by their graph
    score. Candidates come in that order of first appearance; an item a later list
    also holds keeps its place.
    """
    found: dict[tuple[tuple[str, ...], str], CutCandidate[I]] = {}

    def top(score: Callable[[DenseHit[I]], float | None]) -> list[DenseHit[I]]:
        scored = [(s, d) for d in hits.dense if (s := score(d)) is not None]
        scored.sort(key=lambda sd: (-sd[0], *_tie(sd[1].item)))
        return [d for _, d in scored[:limit]]

    for column in (lambda d: d.best, lambda d: d.own):
        for d in top(column):
            found[_tie(d.item)] = CutCandidate(d.item, d.best, None, d.own, d.context)
    for k in sorted(hits.keyword, key=lambda k: (-k.bm25, *_tie(k.item)))[:limit]:
        prev = found.get(_tie(k.item))
        found[_tie(k.item)] = (
            prev._replace(keyword=k.bm25)
            if prev is not None
            else CutCandidate(k.item, None, k.bm25, None, None)
        )
    for g in sorted(hits.graph, key=lambda g: (-g.score, *_tie(g.item)))[:limit]:
        prev = found.get(_tie(g.item))
        found[_tie(g.item)] = (
            prev._replace(graph=g.score)
            if prev is not None
            else CutCandidate(g.item, None, None, None, None, g.score)
        )
    return list(found.values())


HOP_DISCOUNT = 0.5
"""Factor of a triple reached one hop beyond the query entities' own triples."""


def graph_scores(
    hits: Sequence[GraphHit], query_terms: Sequence[str]
) -> dict[tuple[tuple[str, ...], str], float]:
    """One graph-channel score per memory the graph reached, higher is better.

    Every hit (a triple the memory supports, reached from query entity `e`) is worth

        hop * specificity(e) * (1 + share)

    where `hop` is 1 for a triple naming `e` and `HOP_DISCOUNT` one hop further,
    `specificity(e) = 1 / (1 + ln n_e)` with `n_e` the memories whose own triples name
    `e` (an entity in every memory, such as a speaker, tells little, like a frequent
    word in BM25), and `share` the fraction of the query's terms that are not words of
    a query entity and that the triple's parts contain (words compared as the keyword
    index's stemmed terms, so "camping" meets "camped"). A memory's score sums,
    over the distinct query entities that reach it, the best hit of each: memories
    joining several of the query's entities come first (a hop onto a triple naming a
    query entity is that entity's direct hit, counted once).

    A memory is left out when all the graph knows is that an entity several memories
    name (a speaker, say) is in one of its triples, with no query word and through no
    hop: the keyword channel already has the name, and such memories tie in large
    groups. Nothing is fitted to data.

    Args:
        hits: What `GraphStore.memories_for` returned for the query's entities.
        query_terms: The query's keyword terms (`ranking.keyword_terms`).

    Returns:
        Score by (namespace, key).
    """
    direct: dict[str, set[tuple[tuple[str, ...], str]]] = {}
    for h in hits:
        if h.hops == 0:
            direct.setdefault(h.entity, set()).add((tuple(h.namespace), h.key))
    entities = {h.entity for h in hits}
    entity_words = {w for e in entities for w in index_terms(e)}
    terms = index_terms(" ".join(query_terms)) - entity_words
    best: dict[tuple[tuple[str, ...], str], dict[str, float]] = {}
    linked: set[tuple[tuple[str, ...], str]] = set()
    for h in hits:
        if h.hops and (h.triple.subject in entities or h.triple.object in entities):
            continue  # a hop onto a query entity's own triple: that entity counts it
        mem = (tuple(h.namespace), h.key)
        n = max(1, len(direct.get(h.entity, ())))
        value = (1.0 if h.hops == 0 else HOP_DISCOUNT) / (1.0 + log(n))
        matched = 0
        if terms:
            t = h.triple
            matched = len(terms & index_terms(f"{t.subject} {t.relation} {t.object}"))
            value *= 1.0 + matched / len(terms)
        if h.hops or n == 1 or matched:
            linked.add(mem)
        per_entity = best.setdefault(mem, {})
        per_entity[h.entity] = max(per_entity.get(h.entity, 0.0), value)
    # A memory only mentioned by an entity many memories mention (a speaker) is no
    # evidence (the keyword channel has the name already), unless several query
    # entities meet in it.
    return {m: sum(v.values()) for m, v in best.items() if m in linked or len(v) > 1}


def search_mode(options: Mapping[str, Any], scoring: Scoring) -> ModeSpec:
    """The retrieval mode of a search: its `$retrieval` option, else the store's."""
    return mode_spec(options.get("$retrieval", scoring.retrieval))


def user_scope_for(
    options: Mapping[str, Any], scoring: Scoring, *, memory_mode: bool
) -> UserScope | None:
    """The caller's scope from `$user` (any retrieval mode), or None.

    Raises:
        InvalidFilterError: a user-scoped retrieval mode (contextual) without a `$user`.
    """
    user = options.get("$user")
    if user is None:
        if memory_mode and search_mode(options, scoring).user_scoped:
            raise InvalidFilterError(
                "Contextual retrieval needs the caller's user id: pass filter={'$user':"
                " '<user id>'} (or search_memories(..., user_id=...)), or use 'hybrid'."
            )
        return None
    return UserScope(user, scoring.user_label, scoring.shared_types)


def recency_origin(stats: MemoryStatsView | None, created_at: float, origin: str) -> float:
    """The time recency decays from: the event time, or the last access."""
    if stats is None:
        return created_at
    if origin == "occurred_at":
        return float(stats.occurred_at if stats.occurred_at is not None else stats.created_at)
    return float(stats.last_accessed if stats.last_accessed is not None else stats.created_at)


def visible(found: Sequence[C], scope: UserScope | None) -> list[C]:
    """The candidates `scope` may see (all without a scope).

    The memory type recorded in the memory index decides, else the value's.
    """
    if scope is None:
        return list(found)
    return [
        c
        for c in found
        if scope.allows(
            c.item.namespace, c.item.value, c.stats.memory_type if c.stats is not None else None
        )
    ]


def needs_larger_pool(
    found: Sequence[ChannelCandidate], kept: Sequence[ChannelCandidate], pool: int, want: int
) -> bool:
    """Whether a channel that returned a full pool may hold more visible candidates.

    Hidden candidates took places in the pool: when a channel filled its `pool` and
    fewer than `want` of its candidates are visible, a larger pool may find more.
    """
    return any(
        sum(getattr(c, ch) is not None for c in found) >= pool
        and sum(getattr(c, ch) is not None for c in kept) < want
        for ch in CHANNELS
    )


def memory_candidates(
    kept: Sequence[ChannelCandidate],
    *,
    recency_from: str,
    owns: Callable[[Sequence[str]], bool] | None = None,
    question: TimeQuestion | None = None,
    text_of: Callable[[Mapping[str, Any]], str] | None = None,
) -> list[MemoryCandidate]:
    """What ranking is told of each candidate.

    Args:
        kept: The visible candidates.
        recency_from: `ScoringConfig.recency_from`.
        owns: Marks the caller's own namespaces (contextual retrieval).
        question: What the query asks about time (`ranking.dates.time_question`).
        text_of: A stored value's indexed text; with `question`, marks the memories
            that answer the query's time question.
    """
    out = []
    for c in kept:
        event_at = recency_origin(c.stats, c.item.created_at, "occurred_at")
        answers = (
            question is not None
            and text_of is not None
            and time_match(question, text_of(c.item.value), event_at)
        )
        out.append(
            MemoryCandidate(
                semantic=c.semantic,
                keyword=c.keyword,
                importance=c.stats.importance if c.stats is not None else 0.5,
                last_touched=recency_origin(c.stats, c.item.created_at, recency_from),
                access_count=c.stats.access_count if c.stats is not None else 0,
                own=owns is not None and owns(c.item.namespace),
                own_semantic=c.own,
                context_semantic=c.context,
                namespace=c.item.namespace,
                seq=c.stats.seq if c.stats is not None else None,
                graph=c.graph,
                event_at=event_at,
                time_match=answers,
            )
        )
    return out


def top_n(
    ranked: Sequence[tuple[int, ScoreBreakdown]], kept: Sequence[ChannelCandidate], limit: int
) -> list[tuple[int, ScoreBreakdown]]:
    """The best `limit` of ranked candidates: by score, ties by namespace then key."""

    def order(pair: tuple[int, ScoreBreakdown]) -> tuple[float, tuple[str, ...], str]:
        item = kept[pair[0]].item
        return -pair[1].score, item.namespace, item.key

    return sorted(ranked, key=order)[:limit]


def best_first(
    hits: Sequence[T], score: Callable[[T], float | None], item: Callable[[T], ItemView]
) -> list[T]:
    """Scored hits by score (ties by namespace then key), then the unscored in order.

    Merges the results of several tiers: each tier's own order is kept among equals
    of the fixed tie-break, so pages of one search stay disjoint and stable.
    """

    def order(hit: T) -> tuple[float, tuple[str, ...], str]:
        it = item(hit)
        return -(score(hit) or 0.0), it.namespace, it.key

    scored = sorted((h for h in hits if score(h) is not None), key=order)
    return scored + [h for h in hits if score(h) is None]
