"""The store's read path for searches: tiers, user scope and memory ranking.

`search_tiers` answers one planned `SearchOp`; `search_memories` and `get_memory`
are the memory API. The decisions (mode, scope, candidates, the top-N cut) are pure
functions of `ranking.select` and `ranking`; this module fetches what they need
from the tiers.

With a knowledge graph (`core.graph`) and `graph_weight` > 0, hybrid and contextual
searches also ask the graph for the memories its triples link to the query's
entities (`GraphStore.memories_for`); those dense and keyword retrieval missed are
read from the long tier and pass the same value filter and user scope.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from langgraph_tiered_memory.config import TierName
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.ranking.dates import time_question
from langgraph_tiered_memory.ranking.scoring import (
    ScoreBreakdown,
    UserScope,
    keyword_terms,
    rank_memories,
    split_search_options,
)
from langgraph_tiered_memory.ranking.select import (
    ChannelHits,
    CutCandidate,
    GraphListHit,
    MemoryStatsView,
    best_first,
    cut_channels,
    graph_scores,
    memory_candidates,
    needs_larger_pool,
    search_mode,
    top_n,
    user_scope_for,
    visible,
)
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._validate import check_labels, validate_key
from langgraph_tiered_memory.store.tiers._filters import matches_filter, validate_filter
from langgraph_tiered_memory.store.tiers._items import Namespace, StoredItem
from langgraph_tiered_memory.store.tiers.base import Candidate, MemoryTier

_log = logging.getLogger("langgraph_tiered_memory.store.search")

__all__ = [
    "MemoryHit",
    "Ranked",
    "SearchRequest",
    "check_memory_namespace",
    "get_memory",
    "search_memories",
    "search_tiers",
]


class MemoryHit(NamedTuple):
    """One result of `search_memories`: the memory, its score and how it was made."""

    entry: MemoryEntry
    score: float
    breakdown: ScoreBreakdown


class Ranked(NamedTuple):
    """One search result before it becomes a `SearchItem`."""

    item: StoredItem
    score: float | None
    breakdown: ScoreBreakdown | None
    stats: MemoryStatsView | None


class SearchRequest(NamedTuple):
    """One search as the read path runs it."""

    prefix: Namespace
    query: str | None
    vector: Sequence[float] | None
    """The query's embedding, when the store has an index."""
    filter: dict[str, Any] | None
    """The value filter, without the search options."""
    options: dict[str, Any]
    """Search options (`$retrieval`, `$user`, `$min_score`)."""
    limit: int
    """How many results are needed: the page's offset plus its limit."""
    now: float


def search_tiers(core: StoreCore, req: SearchRequest) -> list[tuple[TierName, Ranked]]:
    """The best `req.limit` results of a search over every tier its prefix reaches."""
    memory = core.memory_mode
    scope = user_scope_for(req.options, core.scoring, memory_mode=True) if memory else None
    if memory and req.query:
        mode = search_mode(req.options, core.scoring)
        if mode.keyword_only(core.embeddings is not None) and not keyword_terms(req.query):
            return []  # keyword-only retrieval of a query without words: nothing matches
    merged: list[tuple[TierName, Ranked]] = []
    tiers = core._router.tiers_for_prefix(req.prefix)
    for tier_name in tiers:
        if tier_name == "long" and memory and req.query:
            ranked = _memory_ranked(core, req, req.query)
            if ranked is not None:
                merged.extend(("long", r) for r in ranked)
                continue
        hits = _scoped_search(core, tier_name, req, scope)
        merged.extend((tier_name, Ranked(item, sc, None, None)) for item, sc in hits)
    if req.query and len(tiers) > 1:
        merged = best_first(merged, lambda m: m[1].score, lambda m: m[1].item)
    return merged


def _scoped_search(
    core: StoreCore, tier_name: TierName, req: SearchRequest, scope: UserScope | None
) -> list[tuple[StoredItem, float | None]]:
    """`Tier.search` limited to what `scope` may see, before the page is cut.

    The tier skips namespaces of other users; when hidden items of shared
    namespaces (experiences, preferences) still fill the tier's `n` best, `n`
    grows until `limit` visible items are found or the tier has no more.
    """
    tier = core._tier(tier_name)
    keep = scope.may_hold if scope is not None else None
    limit = n = req.limit
    while True:
        hits = tier.search(
            req.prefix,
            query_vector=req.vector,
            filter=req.filter,
            limit=n,
            now=req.now,
            namespace_filter=keep,
        )
        if scope is None:
            return hits
        # The memory index records the same `memory_type` the value holds (it is
        # read from the value at write time), so the value decides on every tier.
        seen = [(it, sc) for it, sc in hits if scope.allows(it.namespace, it.value)]
        if len(seen) >= limit or len(hits) < n:
            return seen[:limit]
        n *= 4


def _memory_ranked(core: StoreCore, req: SearchRequest, query: str) -> list[Ranked] | None:
    """Memory-ranked long-term results, or None when the query cannot rank.

    None (plain listing, LangGraph's contract) for a mode that lists on a store
    without an index; a query without words under keyword-only retrieval finds
    nothing. The caller's scope (`$user`) filters candidates before they are ranked.
    """
    cfg, options = core.scoring, req.options
    mode = search_mode(options, cfg)
    scope = user_scope_for(options, cfg, memory_mode=True)
    if core.embeddings is None and mode.lists_without_index:
        return None
    use_dense = req.vector is not None and mode.dense
    match = keyword_terms(query) if mode.keyword else None
    if not use_dense and not match:
        return []  # no word to look up and no vector: nothing matches
    want = max(cfg.candidates, req.limit) * mode.pool_factor
    pool = want
    long = core._long()
    linked = _graph_linked(core, req, query, scope, want) if mode.fusion == "rrf" else []
    fetched: dict[tuple[Namespace, str], StoredItem | None] = {}
    while True:
        hits = long.retrieve(
            req.prefix,
            query_vector=req.vector if use_dense else None,
            match=match,
            filter=req.filter,
            limit=pool,
            now=req.now,
            namespace_filter=scope.may_hold if scope is not None else None,
        )
        if linked:
            hits = hits._replace(graph=_graph_items(long, req, hits, linked[:pool], fetched))
        found = _with_stats(long, cut_channels(hits, pool))
        kept = visible(found, scope)
        # A channel that returned a full pool may hold more visible candidates
        # behind hidden ones: fetch a larger pool until each channel has `want`.
        if scope is None or not needs_larger_pool(found, kept, pool, want):
            break
        pool *= 4
    # A user-scoped mode also boosts the caller's own memories (user_weight).
    owns = scope.owns if mode.user_scoped and scope is not None else None
    # A query that asks when, or names a period, favours the memories that answer it.
    question = time_question(query, req.now) if cfg.time_weight > 0 else None
    cands = memory_candidates(
        kept,
        recency_from=cfg.recency_from,
        owns=owns,
        question=question,
        text_of=core._memory_text,
    )
    ranked = rank_memories(
        cands,
        scoring=cfg,
        retrieval=options.get("$retrieval", cfg.retrieval),
        now=req.now,
        min_score=options.get("$min_score", cfg.min_score),
    )
    best = top_n(ranked, kept, req.limit)
    return [Ranked(kept[j].item, b.score, b, kept[j].stats) for j, b in best]


def _graph_linked(
    core: StoreCore, req: SearchRequest, query: str, scope: UserScope | None, want: int
) -> list[tuple[Namespace, str, float]]:
    """The graph channel's list: memories linked to the query's entities, best first.

    Empty unless the store keeps a graph, `graph_weight` > 0 and the query names an
    entity. Only namespaces `scope` may hold are asked (the graph never joins users).
    """
    graph, cfg = core.graph, core.scoring
    if graph is None or cfg.graph_weight <= 0:
        return []
    from langgraph_tiered_memory.graph.extract import query_entities

    entities = query_entities(query)
    if not entities:
        return []
    hits = graph.memories_for(
        req.prefix,
        entities,
        hops=cfg.graph_hops,
        limit=max(200, 4 * want),
        namespace_filter=scope.may_hold if scope is not None else None,
    )
    scores = graph_scores(hits, keyword_terms(query))
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    _log.debug("graph channel: entities %s reach %d memories", entities, len(ranked))
    return [(ns, key, score) for (ns, key), score in ranked]


def _graph_items(
    tier: MemoryTier,
    req: SearchRequest,
    hits: ChannelHits[StoredItem],
    linked: Sequence[tuple[Namespace, str, float]],
    fetched: dict[tuple[Namespace, str], StoredItem | None],
) -> list[GraphListHit[StoredItem]]:
    """The graph's memories as items: those the other channels returned, else read.

    A memory read here must be live and match the value filter, like every other
    candidate; `fetched` keeps what was read for the next, larger pool.
    """
    known: dict[tuple[Namespace, str], StoredItem] = {}
    for item in [d.item for d in hits.dense] + [k.item for k in hits.keyword]:
        known[(item.namespace, item.key)] = item
    missing: dict[Namespace, list[str]] = {}
    for ns, key, _ in linked:
        if (ns, key) not in known and (ns, key) not in fetched:
            missing.setdefault(ns, []).append(key)
    for ns, keys in missing.items():
        got = tier.get(ns, keys, now=req.now)
        for key in keys:
            read = got.get(key)
            ok = read is not None and matches_filter(read.value, req.filter)
            fetched[(ns, key)] = read if ok else None
    out: list[GraphListHit[StoredItem]] = []
    for ns, key, score in linked:
        found = known.get((ns, key)) or fetched.get((ns, key))
        if found is not None:
            out.append(GraphListHit(found, score))
    return out


def _with_stats(tier: MemoryTier, cut: Sequence[CutCandidate[StoredItem]]) -> list[Candidate]:
    """The cut candidates with their memory statistics, read per namespace."""
    keys: dict[Namespace, list[str]] = {}
    for c in cut:
        keys.setdefault(c.item.namespace, []).append(c.item.key)
    stats = {
        (ns, key): st for ns, ks in keys.items() for key, st in tier.memory_stats(ns, ks).items()
    }
    return [
        Candidate(
            c.item,
            c.semantic,
            c.keyword,
            stats.get((c.item.namespace, c.item.key)),
            c.own,
            c.context,
            c.graph,
        )
        for c in cut
    ]


def _memory_entry(item: StoredItem, stats: MemoryStatsView | None) -> MemoryEntry:
    return MemoryEntry.from_value(
        key=item.key,
        namespace=item.namespace,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        last_accessed=stats.last_accessed if stats is not None else None,
        access_count=stats.access_count if stats is not None else 0,
    )


def require_memory_mode(core: StoreCore, what: str) -> None:
    """Refuse `what` on a store that scores by similarity (it keeps no memories)."""
    if not core.memory_mode:
        raise ConfigurationError(
            f"{what} needs scoring={{'mode': 'memory'}} (the default); this store was"
            " created with scoring mode 'similarity'."
        )


def check_memory_namespace(core: StoreCore, namespace: Namespace) -> None:
    """Refuse a namespace that cannot hold memory records.

    Raises:
        ConfigurationError: the store scores by similarity, or `namespace` is routed
            to the short-term tier.
    """
    check_labels(namespace)
    if not core.memory_mode:
        raise ConfigurationError(
            "Memory records need scoring={'mode': 'memory'} (the default); this store"
            " was created with scoring mode 'similarity'."
        )
    if core.tier_for(namespace) != "long":
        raise ConfigurationError(
            f"Namespace {namespace} is routed to the short-term tier; memories and their"
            " statistics live on the long-term tier. Route it with tiers={...}."
        )


def get_memory(core: StoreCore, namespace: Namespace, key: str) -> MemoryEntry | None:
    """The memory at `key` with its statistics, or None (not counted as an access)."""
    namespace = tuple(namespace)
    check_memory_namespace(core, namespace)
    validate_key(key)
    tier = core._long()
    item = tier.get(namespace, [key], now=core.clock()).get(key)
    if item is None:
        return None
    stats = tier.memory_stats(namespace, [key]).get(key)
    return _memory_entry(item, stats)


def search_memories(
    core: StoreCore,
    prefix: Namespace,
    query: str,
    qv: Sequence[float] | None,
    *,
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
    retrieval: str | None,
    user_id: str | None,
    min_score: float | None,
) -> list[MemoryHit]:
    """A page of memories ranked for `query`, each counted as an access.

    A filter with `"$count_access": False` counts none.
    """
    require_memory_mode(core, "search_memories")
    if "long" not in core._router.used_tiers:
        raise ConfigurationError(
            "search_memories ranks long-term memories, and this store has no long-term"
            " tier: route the memory namespaces to it, e.g. tiers={'default': 'long'}, or"
            " use search()."
        )
    if not isinstance(query, str) or not query.strip():
        raise ValueError("search_memories needs a non-empty query string.")
    if limit < 0 or offset < 0:
        raise ValueError(f"limit and offset must be >= 0, got {limit}, {offset}.")
    raw = dict(filter or {})
    for name, val in (("$retrieval", retrieval), ("$user", user_id), ("$min_score", min_score)):
        if val is not None:
            raw[name] = val
    options, value_filter = split_search_options(raw)
    validate_filter(value_filter, allow_non_finite=core.allow_non_finite_filters)
    now = core.clock()
    req = SearchRequest(tuple(prefix), query, qv, value_filter, options, offset + limit, now)
    ranked = _memory_ranked(core, req, query)
    page = (ranked or [])[offset : offset + limit]
    if options.get("$count_access", True):
        core._long().touch([r.item for r in page], now=now)
    return [
        MemoryHit(_memory_entry(r.item, r.stats), r.score, r.breakdown)  # type: ignore[arg-type]
        for r in page
    ]
