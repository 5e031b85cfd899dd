"""Consolidation: merge related memories into one, keeping provenance.

Near-duplicates are found by embedding similarity: memories whose own-text vectors
have a cosine similarity of at least `threshold` with a seed memory form a group
(greedy, each memory in at most one group). A theme (a query) forms one group instead:
the memories whose own-text vectors are at least `min_similarity` cosine to the query.

A group of two or more becomes one consolidated memory. Without a model its content is
every source's text once (the longest memory first; a source already contained in the
text is left out, see `merge_contents`); with a model, the model merges them with
`CONSOLIDATION_PROMPT`. Its importance is the group's highest, and
`consolidated_from` / `source_count` record the sources. The consolidated memory is
written first; only then are the originals deleted (or down-weighted), so a crash in
between loses nothing.

`consolidate` is the pass: it reads the candidates from the long-term tier, keeps what
may not be merged out, and writes the merged memories before it deletes or
down-weights their sources.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.store.base import PutOp

from langgraph_tiered_memory._models import resolve_model
from langgraph_tiered_memory.embeddings import threshold_vectors
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import Triple
from langgraph_tiered_memory.memory import DEFAULT_MEMORY_TYPE
from langgraph_tiered_memory.privacy.history import acting
from langgraph_tiered_memory.privacy.ownership import namespace_owner
from langgraph_tiered_memory.privacy.provenance import (
    PROVENANCE_FIELD,
    merged_provenance,
    provenance_of,
)
from langgraph_tiered_memory.ranking.forgetting import PINNED_FIELD
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._reports import ConsolidationRecord
from langgraph_tiered_memory.store._validate import check_search_text
from langgraph_tiered_memory.store.promotion import _content_id, _digest
from langgraph_tiered_memory.store.tiers._history_events import reasons_for
from langgraph_tiered_memory.store.tiers._items import StoredItem
from langgraph_tiered_memory.store.tiers.base import MemoryTier

__all__ = [
    "CONSOLIDATION_PROMPT",
    "group_near_duplicates",
    "merge_contents",
    "merger",
    "theme_group",
]

CONSOLIDATION_PROMPT = (
    "Merge these related memories into one. Keep every core fact, remove redundancy,"
    " resolve contradictions in favour of the most recent statement, and stay within 200"
    " words. Answer with the merged memory only."
)
THEME_SIMILARITY = 0.25
"""Default cosine similarity of a memory to a theme's query that puts it in the theme.

Compared in the embedder's threshold space (`embeddings.threshold_vectors`). A short
query scores lower against a memory than two memories score against each other: with
the offline models, memories about a theme score 0.23-0.61 against it and unrelated
ones at most 0.19 (docs/forgetting.md has the table)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _unit(vectors: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def group_near_duplicates(
    keys: Sequence[str],
    vectors: Sequence[Sequence[float]] | np.ndarray,
    threshold: float,
    block: int = 256,
) -> list[list[str]]:
    """Groups of two or more keys whose vectors are within `threshold` cosine of a seed.

    Similarities are computed `block` rows at a time, so memory stays at
    `block * len(keys)` floats however many memories there are.

    Args:
        keys: Memory keys.
        vectors: Their embeddings (same order).
        threshold: Minimum cosine similarity to the group's seed.
        block: Rows of the similarity matrix held at once.

    Returns:
        The groups, each seed first, in input order.
    """
    if not keys:
        return []
    unit = _unit(vectors)
    taken = np.zeros(len(keys), dtype=bool)
    groups: list[list[str]] = []
    for start in range(0, len(keys), block):
        close = (unit[start : start + block] @ unit.T) >= threshold
        # Only a row with a near neighbour besides itself can seed a group.
        for row in np.flatnonzero(close.sum(axis=1) >= 2):
            i = start + int(row)
            if taken[i]:
                continue
            hits = np.flatnonzero(close[row] & ~taken)
            if len(hits) >= 2:
                taken[hits] = True
                groups.append([keys[i], *(keys[int(j)] for j in hits if j != i)])
    return groups


def theme_group(
    keys: Sequence[str],
    vectors: Sequence[Sequence[float]] | np.ndarray,
    query_vector: Sequence[float],
    min_similarity: float,
    max_sources: int,
) -> list[str]:
    """The keys whose vectors are at least `min_similarity` cosine to a theme's vector.

    Args:
        keys: Memory keys.
        vectors: Their embeddings (same order).
        query_vector: The theme's embedding.
        min_similarity: Minimum cosine similarity to the theme.
        max_sources: Most keys returned.

    Returns:
        At most `max_sources` keys, most similar first (ties in input order).
    """
    if not keys:
        return []
    sims = _unit(vectors) @ _unit([query_vector])[0]
    order = np.argsort(-sims, kind="stable")
    return [keys[j] for j in order[:max_sources] if sims[j] >= min_similarity]


def _contains(kept: list[str], part: list[str]) -> bool:
    """Whether `part` occurs in `kept` as a run of consecutive sentences."""
    width = len(part)
    return any(kept[i : i + width] == part for i in range(len(kept) - width + 1))


def merge_contents(contents: Sequence[str]) -> str:
    """Every source's text once, the longest first; nothing of any source is lost.

    A source whose sentences already occur, consecutively and in order, in the text
    kept so far (case and spacing aside) adds nothing and is left out; any other
    source is appended whole. Dropping single repeated sentences instead would cut
    sentences that the splitter broke at an abbreviation ("Ask Dr. Smith." would
    lose "Smith." to "Meet Dr. Smith."), so it is not done.
    """
    kept: list[str] = []
    norms: list[str] = []
    for content in sorted(contents, key=len, reverse=True):
        sentences = [s.strip() for s in _SENTENCE.split(content.strip()) if s.strip()]
        part = [" ".join(s.casefold().split()) for s in sentences]  # case and spacing aside
        if not part or _contains(norms, part):
            continue
        kept.extend(sentences)
        norms.extend(part)
    return " ".join(kept)


def merger(model: str | BaseChatModel | None) -> Callable[[Sequence[str]], str]:
    """How a group's contents become one: `merge_contents`, or the model's merge.

    Args:
        model: Chat model or `init_chat_model` string merging the contents with
            `CONSOLIDATION_PROMPT`; None merges without a model (`merge_contents`).

    Returns:
        A function of the sources' contents returning the merged content. With a model
        it raises `ValueError` when the model answers with an empty merge.
    """
    chat = resolve_model(model)
    if chat is None:
        return merge_contents

    def merge(contents: Sequence[str]) -> str:
        reply = chat.invoke(
            [
                SystemMessage(content=CONSOLIDATION_PROMPT),
                HumanMessage(content="\n".join(f"- {c}" for c in contents)),
            ]
        )
        content = str(reply.text if hasattr(reply, "text") else reply.content).strip()
        if not content:
            raise ValueError(
                "The consolidation model returned an empty merge; nothing was changed."
                " Check the model, or pass model=None to merge without one."
            )
        return content

    return merge


# --------------------------------------------------------------------------- the pass
def _merged_key(keys: list[str], values: list[dict[str, Any]]) -> str:
    """A key of the sources' keys and contents: reused keys with new content never collide."""
    pairs = sorted((k, _content_id(v)) for k, v in zip(keys, values, strict=True))
    return f"consolidated-{_digest(pairs)}"


def _origins(keys: list[str], values: list[dict[str, Any]]) -> list[str]:
    """The original memories behind a group: a merged source stands for its own sources."""
    out: list[str] = []
    for key, value in zip(keys, values, strict=True):
        earlier = _sources_of(value)
        out.extend(earlier if earlier is not None else [key])
    return list(dict.fromkeys(out))


def _sources_of(value: dict[str, Any]) -> list[str] | None:
    earlier = value.get("consolidated_from")
    if isinstance(earlier, list) and all(isinstance(k, str) for k in earlier):
        return earlier
    return None


def _unfinished(keys: list[str], values: list[dict[str, Any]]) -> int | None:
    """The merged member of a group that is that merged memory plus its own sources.

    Such a group is a merge interrupted before its sources were deleted or
    down-weighted; finishing it reuses the merged memory's key instead of adding one.
    """
    origins = set(_origins(keys, values))
    for i, value in enumerate(values):
        earlier = _sources_of(value)
        if earlier is not None and set(earlier) == origins:
            return i
    return None


def _merged_support(
    graph: GraphStore, namespace: tuple[str, ...], groups: list[tuple[str, list[str]]]
) -> dict[tuple[tuple[str, ...], str], tuple[Triple, ...]]:
    """What each merged memory supports besides its own text: all its sources supported.

    Read before anything is written. The merged memory is stored with these triples
    before its sources are deleted, so no triple of a memory that still exists (or
    of one merged into it) is ever unsupported.
    """
    keys = sorted({k for _, group in groups for k in group})
    held: dict[str, tuple[Triple, ...]] = {}
    for start in range(0, len(keys), 1000):
        held.update(graph.memory_triples(namespace, keys[start : start + 1000]))
    return {
        (namespace, merged): tuple(dict.fromkeys(t for k in group for t in held.get(k, ())))
        for merged, group in groups
    }


def _keep_provenance(merged: dict[str, Any], values: list[dict[str, Any]]) -> None:
    """Make `merged` name every user and session its sources name (`provenance`).

    Unchanged when its own fields already name them all, so merges of memories that
    record no provenance (or the same) stay as they were.
    """
    union = merged_provenance(values)
    if union and union != provenance_of(merged).to_value():
        merged[PROVENANCE_FIELD] = union


def _split_by_origin(
    groups: list[list[str]], values: dict[str, dict[str, Any]], is_shared: dict[str, bool]
) -> list[list[str]]:
    """The private groups of a shared namespace split so that no merge mixes origins.

    A shared namespace holds private memories (experiences, preferences) of several
    users, told apart by their provenance and visible to none of the others; a merge of
    two users' private memories would put one user's words in the other's export and
    erase them with the other. Memories with the same origin (provenance users, else
    sessions, else none) still merge, and so do shared types (facts, skills), which
    every user can read anyway.
    """
    out: list[list[str]] = []
    for group in groups:
        if is_shared[group[0]]:  # groups never mix shared and private types
            out.append(group)
            continue
        parts: dict[tuple[frozenset[str], frozenset[str]], list[str]] = {}
        for key in group:
            found = provenance_of(values.get(key, {}))  # its users, else its sessions
            origin = (found.user_ids, frozenset() if found.user_ids else found.session_ids)
            parts.setdefault(origin, []).append(key)
        out.extend(part for part in parts.values() if len(part) >= 2)
    return out


class _Candidates:
    """The memories a consolidation pass may merge, and the values read so far.

    A memory is no source when it is pinned, has no text `content`, or was already
    merged into a memory that still exists (`consolidated_into`): a down-weighted
    original stays beside its merged memory instead of being merged with it again.
    """

    def __init__(self, tier: MemoryTier, namespace: tuple[str, ...], now: float) -> None:
        self.tier = tier
        self.namespace = namespace
        self.now = now
        self.items: dict[str, StoredItem] = {}
        self.values: dict[str, dict[str, Any]] = {}
        self.excluded: set[str] = set()
        self.expiring: set[str] = set()
        """Keys of memories with a TTL: merged only with each other."""
        self._exists: dict[str, bool] = {}

    def read(self, keys: list[str]) -> bool:
        """Read the values of `keys` not read yet.

        True when one of them is excluded or has a TTL: the groups must be made again.
        """
        wanted = [k for k in dict.fromkeys(keys) if k not in self.values]
        expiring = len(self.expiring)
        for start in range(0, len(wanted), 1000):
            got = self.tier.get(self.namespace, wanted[start : start + 1000], now=self.now)
            self.items.update(got)
            self.values.update({k: item.value for k, item in got.items()})  # not an access
            self.expiring.update(k for k, item in got.items() if item.expires_at is not None)
        targets = {
            t
            for k in wanted
            if isinstance(t := self.values.get(k, {}).get("consolidated_into"), str)
            and t not in self._exists
        }
        if targets:
            got = self.tier.get(self.namespace, sorted(targets), now=self.now)
            self._exists.update({t: t in got for t in targets})
        before = len(self.excluded)
        self.excluded.update(k for k in wanted if not self._usable(k))
        return len(self.excluded) > before or len(self.expiring) > expiring

    def kept_expiry(self, group: list[str]) -> StoredItem | None:
        """The source whose TTL and expiry a group's merged memory takes.

        Groups never mix memories with and without a TTL. Merged TTL memories expire
        when the last of their sources would have; without a TTL, None.
        """
        items = [self.items[k] for k in group]
        if any(it.expires_at is None for it in items):
            return None
        return max(items, key=lambda it: it.expires_at or 0.0)

    def _usable(self, key: str) -> bool:
        value = self.values.get(key)
        if value is None or value.get(PINNED_FIELD) is True:
            return False
        content = value.get("content")
        if not isinstance(content, str) or not content.strip():
            return False
        into = value.get("consolidated_into")
        return not (isinstance(into, str) and self._exists.get(into, False))


def consolidate(
    store: StoreCore,
    namespace: tuple[str, ...],
    *,
    query: str | None = None,
    threshold: float = 0.9,
    min_similarity: float = THEME_SIMILARITY,
    max_sources: int = 20,
    model: Any = None,
    originals: Literal["delete", "downweight"] = "delete",
    dry_run: bool = False,
    limit: int = 10_000,
    exclude: Collection[str] = (),
    now: float | None = None,
) -> list[ConsolidationRecord]:
    """Merge related memories of one namespace into consolidated memories.

    Without `query`, every cluster of near-duplicates (own-text cosine similarity
    of at least `threshold` to the cluster's first memory) becomes one memory.
    With `query`, the memories about that theme (cosine similarity of at least
    `min_similarity` to the query, at most `max_sources`) become one memory.

    The merged memory keeps the first source's fields, takes the sources' highest
    importance and records `consolidated_from` (keys of the original memories; a
    merged source stands for its own sources) and `source_count`.
    It is stored before the originals are deleted or down-weighted, so a crash in
    between loses nothing (with a knowledge graph, the merged memory also supports
    every triple its sources supported, from that same write on); its key is derived
    from the sources' keys and contents, so reused keys with new content never
    collide and a rerun (after a crash too) writes the same memory again instead of
    a duplicate.

    Never merged: pinned memories (`"pinned": True`: they stay exactly as they
    are), memories without a text `content`, down-weighted originals whose merged
    memory still exists, and memories of different visibility: shared types
    (`shared_types` of the scoring config, `fact` and `skill` by default) are
    only merged with each other, never with private ones. The merged memory takes
    the most restrictive memory type of its sources.

    Args:
        store: The tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace: The namespace (long-term tier; the store needs an index).
        query: A theme to consolidate, such as `"food preferences"`.
        threshold: Cosine similarity that makes two memories near-duplicates.
        min_similarity: Cosine similarity to `query` that puts a memory in the theme.
        max_sources: Most memories merged for a theme.
        model: Chat model (or `init_chat_model` string) merging the contents with
            `consolidation.CONSOLIDATION_PROMPT`; None joins their texts, the
            longest first, leaving out a text already contained in the others.
        originals: `"delete"` the sources after the merged memory is stored, or
            `"downweight"` them (importance halved, `consolidated_into` set).
        dry_run: Only report the groups; write nothing.
        limit: Most memories of the namespace considered: the newest `limit`.
        exclude: Keys left out (e.g. memories about to be forgotten).
        now: The time of the pass, in epoch seconds (default: the store's clock).

    Returns:
        One `ConsolidationRecord` per merged memory: `{"key", "namespace",
        "sources", "content", "importance"}`.
    """
    if originals not in ("delete", "downweight"):
        raise ValueError(f"originals must be 'delete' or 'downweight', got {originals!r}.")
    for name, val in (("threshold", threshold), ("min_similarity", min_similarity)):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not -1 <= val <= 1:
            raise ValueError(f"{name} must be a cosine similarity in [-1, 1], got {val!r}.")
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise ValueError("query must be a non-empty theme such as 'food preferences', or None.")
    check_search_text(query, None)
    namespace = tuple(namespace)
    store._check_memory_namespace(namespace)
    if store.embeddings is None:
        raise ConfigurationError(
            "Consolidation compares embeddings: create the store with index={'dims': ...,"
            " 'embed': ...}."
        )
    now = store.clock() if now is None else float(now)
    tier = store._long()
    skip = set(exclude)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ValueError(f"limit must be an int >= 2, got {limit!r}.")
    shared = tuple(store.scoring.shared_types)
    recent: deque[tuple[str, bool]] = deque(maxlen=limit)  # the newest memories, write order
    for page in tier.iter_memory_stats(namespace):
        recent.extend((k, st.memory_type in shared) for k, st in page if k not in skip)
    keys = [k for k, _ in recent]
    is_shared = dict(recent)
    order = {k: i for i, k in enumerate(keys)}
    found, matrix = tier.primary_vectors(namespace, keys)
    rank = sorted(range(len(found)), key=lambda i: order[found[i]])  # write order
    present = [found[i] for i in rank]
    # Thresholds compare vectors in the embedder's threshold space (`threshold_vectors`).
    matrix = threshold_vectors(store.embeddings, matrix[rank]) if rank else matrix
    qv = None
    if query is not None:
        query_vector = store.embeddings.embed_query(query)
        store._check_vectors([query_vector], "consolidation themes")
        qv = threshold_vectors(store.embeddings, [query_vector], query=True)[0]
    candidates = _Candidates(tier, namespace, now)

    def grouped() -> list[list[str]]:
        # Shared types (facts, skills) and private ones are never merged together, nor
        # memories with a TTL and memories without one.
        out: list[list[str]] = []
        for visibility, expiring in itertools.product((True, False), (True, False)):
            rows = [
                i
                for i, k in enumerate(present)
                if is_shared[k] is visibility
                and (k in candidates.expiring) is expiring
                and k not in candidates.excluded
            ]
            sub = [present[i] for i in rows]
            if qv is None:
                out.extend(group_near_duplicates(sub, matrix[rows], threshold))
            else:
                group = theme_group(sub, matrix[rows], qv, min_similarity, max_sources)
                out.extend([group] if len(group) >= 2 else [])
        return out

    groups = grouped()
    while candidates.read([k for group in groups for k in group]):
        groups = grouped()  # regroup without the memories that cannot be sources
    if namespace_owner(namespace, store.scoring.user_label) is None:
        groups = _split_by_origin(groups, candidates.values, is_shared)
    merge = merger(model if groups else None)  # no model is loaded for nothing to merge
    records: list[ConsolidationRecord] = []
    merged_ops: list[PutOp] = []
    source_ops: list[PutOp] = []
    keep: dict[tuple[tuple[str, ...], str], StoredItem] = {}  # TTLs the rewrites keep
    merged_groups: list[tuple[str, list[str]]] = []
    reasons: dict[tuple[tuple[str, ...], str], str] = {}  # of each write, for its history
    for group in groups:
        values = [candidates.values[k] for k in group]
        content = merge([str(v.get("content") or "") for v in values])
        importance = max(float(v.get("importance", 0.5)) for v in values)
        origins = _origins(group, values)
        done = _unfinished(group, values)
        if done is None:
            merged_key, base = _merged_key(group, values), values[0]
        else:
            merged_key, base = group[done], values[done]
        sources = [k for k in group if k != merged_key]
        types = [str(v.get("memory_type", DEFAULT_MEMORY_TYPE)) for v in values]
        private = next((t for t in types if t not in shared), types[0])  # most restrictive
        records.append(
            {
                "key": merged_key,
                "namespace": list(namespace),
                "sources": sources,
                "content": content,
                "importance": importance,
            }
        )
        merged = {
            **{k: v for k, v in base.items() if k not in ("content", "importance")},
            "content": content,
            "importance": importance,
            "memory_type": private,
            "consolidated_from": origins,
            "source_count": len(origins),
        }
        if "memory_type" not in base and merged["memory_type"] == DEFAULT_MEMORY_TYPE:
            del merged["memory_type"]
        merged.pop("consolidated_into", None)
        _keep_provenance(merged, values)
        merged_ops.append(PutOp(namespace, merged_key, merged))
        merged_groups.append((merged_key, group))
        reasons[(namespace, merged_key)] = "merged from " + ", ".join(sources)
        expiry = candidates.kept_expiry(group)
        if expiry is not None:
            keep[(namespace, merged_key)] = expiry
        for k in sources:
            v = candidates.values[k]
            reasons[(namespace, k)] = f"merged into {merged_key}"
            if originals == "delete":
                source_ops.append(PutOp(namespace, k, None))
            else:
                weaker = {**v, "importance": float(v.get("importance", 0.5)) / 2}
                source_ops.append(PutOp(namespace, k, {**weaker, "consolidated_into": merged_key}))
                keep[(namespace, k)] = candidates.items[k]
    if dry_run:
        return records
    support = None
    if store.graph is not None and merged_groups:
        support = _merged_support(store.graph, namespace, merged_groups)
    # Every merged memory is stored before any source changes: a crash loses nothing.
    # Down-weighted sources keep their content, so they keep supporting their triples.
    with acting("consolidation"), reasons_for(reasons):
        for ops in (merged_ops, source_ops):
            for start in range(0, len(ops), 500):
                store._run_batch(ops[start : start + 500], keep=keep, support=support)
    return records
