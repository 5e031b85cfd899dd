"""Typed configuration of the tiered store.

All options are `TypedDict(total=False)`: every key is optional and its default is
stated under it.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

__all__ = [
    "TierName",
    "TierPolicy",
    "ScoringConfig",
    "ChromaHnswConfig",
    "DEFAULT_TIER_POLICY",
    "DEFAULT_CHROMA_HNSW",
]

TierName = Literal["short", "long"]
"""The two storage tiers: `"short"` is Redis, `"long"` is Chroma."""


class TierPolicy(TypedDict, total=False):
    """How namespaces are routed to tiers.

    A namespace goes to the tier of the longest prefix listed in `short` or `long`
    that it starts with; if none matches, it goes to `default`. A prefix may not be
    listed under both tiers.

    Passing `{"default": "long"}` routes every namespace to Chroma and
    `{"default": "short"}` every namespace to Redis. When `tiers` is not given at
    all, the store uses `DEFAULT_TIER_POLICY`: namespaces whose first label is
    `"short_term"` go to Redis, everything else to Chroma.

    Example:
        ```python
        import tempfile

        from langgraph_tiered_memory import TieredMemoryStore, TierPolicy

        tiers: TierPolicy = {
            "default": "long",
            "short": [("short_term",), ("scratch",)],
            "long": [("scratch", "keep")],
        }
        folder = tempfile.TemporaryDirectory()  # your store's directory in an application
        store = TieredMemoryStore(tiers=tiers, chroma_path=folder.name)
        assert store.tier_for(("scratch", "s1")) == "short"
        assert store.tier_for(("scratch", "keep", "k1")) == "long"  # the longest prefix wins
        store.close()
        folder.cleanup()
        ```
    """

    default: TierName
    """Tier for namespaces no prefix matches. Defaults to `"long"`."""
    short: list[tuple[str, ...]]
    """Namespace prefixes stored in the Redis tier. Defaults to `[]`."""
    long: list[tuple[str, ...]]
    """Namespace prefixes stored in the Chroma tier. Defaults to `[]`."""


DEFAULT_TIER_POLICY: TierPolicy = {"default": "long", "short": [("short_term",)], "long": []}
"""The routing used when `tiers` is not given."""


class ScoringConfig(TypedDict, total=False):
    """How search results are scored and which retrieval finds them.

    `"memory"` (the default) ranks long-term items as memories: relevance from
    hybrid retrieval, plus importance, recency and access count, as a weighted sum
    (see `langgraph_tiered_memory.ranking.scoring` for the formula). `"similarity"` scores by
    cosine similarity only, exactly as LangGraph's own stores report it. Short-term
    (Redis) items are always scored by similarity.

    Per call, a search may override `retrieval` and `min_score` and name the caller's
    user with reserved filter keys: `filter={"$retrieval": "keyword", "$user": "u1",
    "$min_score": 0.5}`.

    Example:
        ```python
        import tempfile

        from langgraph_tiered_memory import ScoringConfig, TieredMemoryStore

        scoring: ScoringConfig = {
            "mode": "memory",
            "retrieval": "hybrid",
            "half_life_days": 14,
            "importance_weight": 0.2,
            "min_score": 0.3,
        }
        with (
            tempfile.TemporaryDirectory() as folder,  # your store's directory in an app
            TieredMemoryStore.from_conn_string(
                chroma_path=folder,
                tiers={"default": "long"},
                index={"dims": 384, "embed": "local", "fields": ["content"]},
                scoring=scoring,
            ) as store,
        ):
            store.put(("users", "u1"), "car", {"content": "Ana drives a red Fiat"})
            store.put(("users", "u1"), "tea", {"content": "Ana drinks green tea"})
            hits = store.search(("users", "u1"), query="What does Ana drink?")
            assert hits[0].key == "tea"
        ```
    """

    mode: Literal["similarity", "memory"]
    """Scoring mode. Defaults to `"memory"`."""
    retrieval: Literal["semantic", "keyword", "contextual", "hybrid"]
    """How candidates are found: `"semantic"` (dense vectors in Chroma), `"keyword"`
    (BM25 over an SQLite FTS5 index), `"hybrid"` (both, fused by reciprocal rank) or
    `"contextual"` (hybrid, restricted to the caller's user namespace plus shared
    `fact`/`skill` memories, own memories preferred). Defaults to `"hybrid"`."""
    candidates: int
    """Candidates taken from each retrieval list before ranking. Defaults to 50."""
    rrf_k: float
    """Reciprocal-rank-fusion constant. Defaults to 5 (60, the common choice for fusing
    many long result lists, flattens three short lists too much: see docs/ranking.md,
    "Where the defaults come from")."""
    neighbor_weight: float
    """How far a memory is lifted toward a stronger write-order neighbour (hybrid and
    contextual): at each distance up to `neighbor_reach`, the better neighbour there,
    when its fused score is higher, adds this share of the difference. A memory never
    passes the neighbour that lifts it. 0 switches smoothing off. Defaults to 0.4."""
    neighbor_reach: int
    """How many write positions on each side of a memory its smoothing reaches. 1 is the
    memories just before and after; 2 (the default) adds the ones two away, in a
    dialogue the same speaker's previous and next turn (docs/ranking.md, "Where the
    defaults come from")."""
    neighbor_gap_minutes: float
    """Neighbours join the smoothing only when their event times are at most this far
    apart (one conversation): 30 minutes of inactivity is the usual end of a session.
    Defaults to 30."""
    context_keys: bool
    """Index each memory also under `previous memory + own text` (one more vector and a
    keyword column weighted 0.5). Defaults to True."""
    sentence_keys: int
    """Extra vectors for a memory of several sentences: its first sentences and the rest,
    at most this many. Defaults to 0 (off): on LoCoMo they lift multi-hop recall but
    crowd out open-domain evidence (see docs/benchmarks.md)."""
    time_keys: bool
    """Keyword-index `occurred_at` in words, with relative dates of the text resolved.
    Defaults to True."""
    semantic_weight: float
    """Weight of the dense list (memories ranked by their own vectors) in the fusion.
    Defaults to 0.5: the two dense lists share the dense channel's weight, equal to
    the keyword channel's."""
    context_weight: float
    """Weight of the second dense list: memories ranked by the best of all their
    vectors, index keys included (contextual and sentence keys). Defaults to 0.5.
    Without index keys there is one dense list, weighted semantic + context."""
    keyword_weight: float
    """Weight of the keyword list in the fusion. Defaults to 1."""
    relevance_weight: float
    """Weight of relevance (0..1) in the score. Defaults to 1."""
    importance_weight: float
    """Weight of importance (0..1). Defaults to 0.1."""
    recency_weight: float
    """Weight of recency, `0.5 ** (age / half_life)`, where age runs from
    `recency_from`. 0 switches decay off. Defaults to 0.02."""
    recency_from: Literal["occurred_at", "last_access"]
    """Where recency's age starts: the memory's `occurred_at` (creation when it has
    none), or its last access (creation when never accessed). Defaults to
    `"occurred_at"`: access-based recency rewards whatever searches already return."""
    access_weight: float
    """Weight of `log1p(access_count)`. Defaults to 0.005."""
    user_weight: float
    """Bonus of the caller's own memories in contextual retrieval. Defaults to 0.05."""
    half_life_days: float
    """Half-life of recency, in days. Defaults to 30."""
    time_weight: float
    """Bonus of a memory that answers the query's time question: a query that asks when
    ("When did ...", "How long ...") favours memories that state a time, a query that
    names a month or year favours memories of that period (`ranking.dates`). 0
    switches it off. Defaults to 0.2."""
    min_score: float | None
    """Drop results scoring below this. Defaults to None (keep all)."""
    user_label: str
    """Namespace label followed by the user id, for contextual retrieval: a memory in
    `(..., "users", "u1", ...)` belongs to user `u1`. Defaults to `"users"`."""
    shared_types: list[str]
    """Memory types of namespaces outside any user that contextual retrieval keeps.
    Defaults to `["fact", "skill"]`."""
    graph_weight: float
    """Weight of the knowledge-graph list in the fusion (hybrid and contextual, on a
    store with `graph=`): memories supporting triples about the query's entities,
    ranked by `ranking.select.graph_scores`, add `graph_weight / (rrf_k + rank)`.
    0 switches the channel off. Defaults to 0 (off: with the rule extractor it did not
    reach its target on the LoCoMo dev split, see docs/graph.md); 0.5 is
    the value `bench retrieval --graph on` measures."""
    graph_hops: int
    """How far the graph channel walks beyond the triples naming a query entity: 0
    (those triples' memories only) or 1 (also memories of triples one hop further).
    Defaults to 1."""


class ChromaHnswConfig(TypedDict, total=False):
    """HNSW settings of the Chroma collections the long-term tier creates.

    They apply to collections created from now on (one per namespace); existing
    namespaces keep the settings they were created with.
    """

    ef_construction: int
    """Candidate list size while inserting. Lower is faster to write, higher gives a
    better graph. Defaults to 64 (Chroma's own default is 100)."""
    ef_search: int
    """Candidate list size while searching. Higher raises recall at some latency.
    Defaults to 128 (Chroma's own default is 100)."""
    max_neighbors: int
    """Graph degree (HNSW `M`). Defaults to 12 (Chroma's own default is 16): on
    clustered 384-dimensional embeddings it keeps recall@10 at 0.998 at 100k items
    while writing about 15% faster."""


DEFAULT_CHROMA_HNSW: ChromaHnswConfig = {
    "ef_construction": 64,
    "ef_search": 128,
    "max_neighbors": 12,
}
"""HNSW settings used when `chroma_hnsw` is not given."""
