"""Maintenance passes over long-term memories: forgetting, consolidation, promotion.

Promotion lives in `promotion`; it is re-exported here with the other passes.

Each pass is a plain function of a store core, so the sync store calls it directly and
the async store runs it in a worker thread. Every write goes through the store's normal
batch path, so vectors, keyword rows, statistics and the document copy stay in step.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from langgraph.store.base import PutOp

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.forgetting import PINNED_FIELD, ForgettingPolicy, ForgettingRules
from langgraph_tiered_memory.memory import DEFAULT_MEMORY_TYPE
from langgraph_tiered_memory.store._common import (
    StoredItem,
    check_labels,
    check_search_text,
    validate_key,
)
from langgraph_tiered_memory.store.promotion import (
    Promoted,
    _check_page_size,
    _content_id,
    _digest,
    promote,
)

if TYPE_CHECKING:
    from langgraph_tiered_memory.store.base import TieredStoreCore

__all__ = ["Promoted", "consolidate", "forget", "garbage_collect", "promote"]

PREVIEW_CHARS = 80
TTL_EXPIRED = "ttl expired"
"""Report reason of a memory whose TTL ran out (swept, or would be in a dry run)."""


def _require_memory_mode(core: TieredStoreCore, what: str) -> None:
    if not core.memory_mode:
        raise ConfigurationError(
            f"{what} needs scoring={{'mode': 'memory'}} (the default); this store was"
            " created with scoring mode 'similarity'."
        )


def _detail(ns: tuple[str, ...], key: str, value: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "id": key,
        "namespace": list(ns),
        "content_preview": str(value.get("content") or "")[:PREVIEW_CHARS],
        "reason": reason,
    }


def _long_namespaces(core: TieredStoreCore, prefix: tuple[str, ...]) -> Iterator[Any]:
    # Every namespace, also one holding only expired items (swept by the caller, if at all).
    for ns in core._long().namespaces(prefix, now=None):
        if core._router.tier_for(ns) == "long":
            yield ns


def _expired(
    core: TieredStoreCore,
    ns: tuple[str, ...],
    *,
    dry_run: bool,
    keys: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Report rows of the items whose TTL ran out on the store's clock; swept unless dry.

    A hypothetical `now` never sweeps: TTLs run on the store's clock only.
    """
    gone = core._long().expired(ns, now=core.clock(), delete=not dry_run, keys=keys)
    return [_detail(ns, it.key, it.value, TTL_EXPIRED) for it in gone]


def _stats_of(st: Any, now: float) -> dict[str, Any]:
    return {
        "importance": st.importance,
        "access_count": st.access_count,
        "created_at": st.created_at,
        "last_accessed": st.last_accessed,
        "now": now,
    }


def _reported(
    core: TieredStoreCore, ns: tuple[str, ...], reasons: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Report rows of flagged memories; pinned, expired and vanished ones are left out."""
    out = []
    for start in range(0, len(reasons), 1000):
        chunk = reasons[start : start + 1000]
        # Live on the store's clock (a dry run's `now` may be ahead); not an access.
        items = core._long().get(ns, [k for k, _ in chunk], now=core.clock())
        for key, reason in chunk:
            item = items.get(key)
            if item is not None and item.value.get(PINNED_FIELD) is not True:
                out.append(_detail(ns, key, item.value, reason))
    return out


class _Judge:
    """Judges one namespace page by page; `max_memories` keeps a bounded heap."""

    def __init__(self, rules: ForgettingRules, now: float) -> None:
        self.rules = rules
        self.now = now
        self._best: list[tuple[tuple[float, float, float], str]] = []  # min-heap: worst first
        self._evicted: list[tuple[str, float]] = []

    def page(self, page: list[tuple[str, Any]]) -> list[tuple[str, str]]:
        """The (key, reason) of the page's memories that a rule flags."""
        flagged = []
        cap = self.rules.max_memories
        for key, st in page:
            stats = _stats_of(st, self.now)
            reason = self.rules.reason(**stats)
            if reason:
                flagged.append((key, reason))
            elif cap is not None:
                entry = (self.rules.retention(**stats), key)
                if len(self._best) < cap:
                    heapq.heappush(self._best, entry)
                else:
                    worst = heapq.heappushpop(self._best, entry)
                    self._evicted.append((worst[1], -worst[0][0]))
        return flagged

    def over_capacity(self) -> list[tuple[str, str]]:
        """The (key, reason) of the memories beyond `max_memories`, once every page is in."""
        cap = self.rules.max_memories
        return [
            (key, f"beyond max_memories {cap} (decay {decay:.2f})") for key, decay in self._evicted
        ]


def _delete(core: TieredStoreCore, ns: tuple[str, ...], keys: list[str]) -> None:
    for start in range(0, len(keys), 1000):
        core._run_batch([PutOp(ns, k, None) for k in keys[start : start + 1000]])


def garbage_collect(
    core: TieredStoreCore,
    namespace_prefix: tuple[str, ...],
    *,
    dry_run: bool,
    policy: ForgettingPolicy | None,
    page_size: int,
    progress: Callable[[int], None] | None,
    now: float | None,
) -> dict[str, Any]:
    """Apply the forgetting policy to every long-term memory under a prefix.

    Streams each namespace's memory index in pages (statistics only); only flagged
    memories have their values read (for pinning and the report) and, unless
    `dry_run`, are deleted from every index in one batch per page. With
    `max_memories`, a heap of at most that many entries per namespace picks the
    memories beyond it, which go once the namespace has been read.

    Memories whose TTL ran out on the store's clock are swept first (reason
    `TTL_EXPIRED`); `now` only moves the forgetting rules, never a TTL. A dry run
    writes nothing at all and reports exactly what the same real run would delete.
    """
    _require_memory_mode(core, "Garbage collection")
    _check_page_size(page_size)
    check_labels(namespace_prefix)
    rules = ForgettingRules(policy)
    now = core.clock() if now is None else float(now)
    details: list[dict[str, Any]] = []
    scanned = 0
    for ns in _long_namespaces(core, tuple(namespace_prefix)):
        swept = _expired(core, ns, dry_run=dry_run)
        details.extend(swept)
        gone = {d["id"] for d in swept}  # in a dry run, still listed below: skip them
        scanned += len(gone)
        judge = _Judge(rules, now)
        for listed in core._long().iter_memory_stats(ns, page_size):
            page = [(k, st) for k, st in listed if k not in gone]
            scanned += len(page)
            flagged = _reported(core, ns, judge.page(page))
            details.extend(flagged)
            if not dry_run:
                _delete(core, ns, [d["id"] for d in flagged])
            if progress is not None:
                progress(len(page))
        evicted = _reported(core, ns, judge.over_capacity())
        details.extend(evicted)
        if not dry_run:
            _delete(core, ns, [d["id"] for d in evicted])
    return {
        "forgotten_count": len(details),
        "details": details,
        "scanned": scanned,
        "dry_run": dry_run,
    }


def forget(
    core: TieredStoreCore,
    namespace: tuple[str, ...],
    keys: Collection[str],
    *,
    policy: ForgettingPolicy | None,
    now: float | None,
    page_size: int = 1000,
) -> list[dict[str, Any]]:
    """Delete those of `keys` that the policy still flags, judged on current statistics.

    With `max_memories`, the namespace is judged again as a whole (statistics only).
    """
    namespace = tuple(namespace)
    core._check_memory_namespace(namespace)
    rules = ForgettingRules(policy)
    now = core.clock() if now is None else float(now)
    wanted = [validate_key(k) for k in dict.fromkeys(keys)]
    reasons: list[tuple[str, str]] = []
    if rules.max_memories is None:
        for start in range(0, len(wanted), 1000):
            chunk = wanted[start : start + 1000]
            stats = core._long().memory_stats(namespace, chunk)
            reasons.extend(_Judge(rules, now).page([(k, stats[k]) for k in chunk if k in stats]))
    else:
        asked = set(wanted)
        judge = _Judge(rules, now)
        for page in core._long().iter_memory_stats(namespace, page_size):
            reasons.extend(r for r in judge.page(page) if r[0] in asked)
        reasons.extend(r for r in judge.over_capacity() if r[0] in asked)
    out = _reported(core, namespace, reasons)
    _delete(core, namespace, [d["id"] for d in out])
    return out + _expired(core, namespace, dry_run=False, keys=wanted)


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


def _most_restrictive_type(values: list[dict[str, Any]], shared: tuple[str, ...]) -> str:
    types = [str(v.get("memory_type", DEFAULT_MEMORY_TYPE)) for v in values]
    return next((t for t in types if t not in shared), types[0])


class _Candidates:
    """The memories a consolidation pass may merge, and the values read so far.

    A memory is no source when it is pinned, has no text `content`, or was already
    merged into a memory that still exists (`consolidated_into`): a down-weighted
    original stays beside its merged memory instead of being merged with it again.
    """

    def __init__(self, tier: Any, namespace: tuple[str, ...], now: float) -> None:
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
    core: TieredStoreCore,
    namespace: tuple[str, ...],
    *,
    query: str | None,
    threshold: float,
    min_similarity: float,
    max_sources: int,
    model: Any,
    originals: str,
    dry_run: bool,
    limit: int,
    exclude: Collection[str],
    now: float | None,
) -> list[dict[str, Any]]:
    """Merge related memories of one namespace; see `TieredMemoryStore.consolidate`."""
    from langgraph_tiered_memory.consolidation import group_near_duplicates, theme_group

    if originals not in ("delete", "downweight"):
        raise ValueError(f"originals must be 'delete' or 'downweight', got {originals!r}.")
    for name, val in (("threshold", threshold), ("min_similarity", min_similarity)):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not -1 <= val <= 1:
            raise ValueError(f"{name} must be a cosine similarity in [-1, 1], got {val!r}.")
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise ValueError("query must be a non-empty theme such as 'food preferences', or None.")
    check_search_text(query, None)
    namespace = tuple(namespace)
    core._check_memory_namespace(namespace)
    if core.embeddings is None:
        raise ConfigurationError(
            "Consolidation compares embeddings: create the store with index={'dims': ...,"
            " 'embed': ...}."
        )
    now = core.clock() if now is None else float(now)
    tier: Any = core._long()
    skip = set(exclude)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ValueError(f"limit must be an int >= 2, got {limit!r}.")
    shared = tuple(core.scoring.shared_types)
    recent: deque[tuple[str, bool]] = deque(maxlen=limit)  # the newest memories, write order
    for page in tier.iter_memory_stats(namespace):
        recent.extend((k, st.memory_type in shared) for k, st in page if k not in skip)
    keys = [k for k, _ in recent]
    is_shared = dict(recent)
    order = {k: i for i, k in enumerate(keys)}
    found, matrix = tier.primary_vectors(namespace, keys)
    rank = sorted(range(len(found)), key=lambda i: order[found[i]])  # write order
    present = [found[i] for i in rank]
    matrix = matrix[rank] if rank else matrix
    qv = None
    if query is not None:
        qv = core.embeddings.embed_query(query)
        core._check_vectors([qv], "consolidation themes")
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
    chat = None
    if model is not None and groups:
        from langgraph_tiered_memory.summarizer import _resolve_model

        chat = _resolve_model(model)
    records = []
    merged_ops: list[PutOp] = []
    source_ops: list[PutOp] = []
    keep: dict[tuple[tuple[str, ...], str], StoredItem] = {}  # TTLs the rewrites keep
    for group in groups:
        values = [candidates.values[k] for k in group]
        content = _merge(chat, [str(v.get("content") or "") for v in values])
        importance = max(float(v.get("importance", 0.5)) for v in values)
        origins = _origins(group, values)
        done = _unfinished(group, values)
        if done is None:
            merged_key, base = _merged_key(group, values), values[0]
        else:
            merged_key, base = group[done], values[done]
        sources = [k for k in group if k != merged_key]
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
            "memory_type": _most_restrictive_type(values, shared),
            "consolidated_from": origins,
            "source_count": len(origins),
        }
        if "memory_type" not in base and merged["memory_type"] == DEFAULT_MEMORY_TYPE:
            del merged["memory_type"]
        merged.pop("consolidated_into", None)
        merged_ops.append(PutOp(namespace, merged_key, merged))
        expiry = candidates.kept_expiry(group)
        if expiry is not None:
            keep[(namespace, merged_key)] = expiry
        for k in sources:
            v = candidates.values[k]
            if originals == "delete":
                source_ops.append(PutOp(namespace, k, None))
            else:
                weaker = {**v, "importance": float(v.get("importance", 0.5)) / 2}
                source_ops.append(PutOp(namespace, k, {**weaker, "consolidated_into": merged_key}))
                keep[(namespace, k)] = candidates.items[k]
    if dry_run:
        return records
    # Every merged memory is stored before any source changes: a crash loses nothing.
    for ops in (merged_ops, source_ops):
        for start in range(0, len(ops), 500):
            core._run_batch(ops[start : start + 500], keep=keep)
    return records


def _merge(chat: Any, contents: list[str]) -> str:
    """One memory's content from several: each source's text once, or the model's merge."""
    from langgraph_tiered_memory.consolidation import CONSOLIDATION_PROMPT, merge_contents

    if chat is None:
        return merge_contents(contents)
    from langchain_core.messages import HumanMessage, SystemMessage

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
