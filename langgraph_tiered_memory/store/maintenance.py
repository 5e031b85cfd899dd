"""Maintenance passes over long-term memories: forgetting, consolidation, promotion.

Each pass is a plain function of a store core, so the sync store calls it directly and
the async store runs it in a worker thread. Every write goes through the store's normal
batch path, so vectors, keyword rows, statistics and the document copy stay in step.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import deque
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any, cast

from langgraph.store.base import Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.forgetting import PINNED_FIELD, ForgettingPolicy, ForgettingRules

if TYPE_CHECKING:
    from langgraph_tiered_memory.store.base import TieredStoreCore

__all__ = ["consolidate", "forget", "garbage_collect", "promote"]

PREVIEW_CHARS = 80


def _require_memory_mode(core: TieredStoreCore, what: str) -> None:
    if not core.memory_mode:
        raise ConfigurationError(
            f"{what} needs scoring={{'mode': 'memory'}} (the default); this store was"
            " created with scoring mode 'similarity'."
        )


def _check_page_size(page_size: int) -> None:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a positive int, got {page_size!r}.")


def _detail(ns: tuple[str, ...], key: str, value: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "id": key,
        "namespace": list(ns),
        "content_preview": str(value.get("content") or "")[:PREVIEW_CHARS],
        "reason": reason,
    }


def _long_namespaces(core: TieredStoreCore, prefix: tuple[str, ...], now: float) -> Iterator[Any]:
    for ns in core._long().namespaces(prefix, now=now):
        if core._router.tier_for(ns) == "long":
            yield ns


def _stats_of(st: Any, now: float) -> dict[str, Any]:
    return {
        "importance": st.importance,
        "access_count": st.access_count,
        "created_at": st.created_at,
        "last_accessed": st.last_accessed,
        "now": now,
    }


def _reported(
    core: TieredStoreCore, ns: tuple[str, ...], reasons: list[tuple[str, str]], now: float
) -> list[dict[str, Any]]:
    """Report rows of flagged memories; pinned ones (and vanished ones) are left out."""
    out = []
    for start in range(0, len(reasons), 1000):
        chunk = reasons[start : start + 1000]
        items = core._long().get(ns, [k for k, _ in chunk], now=now)  # not an access
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
    """
    _require_memory_mode(core, "Garbage collection")
    _check_page_size(page_size)
    rules = ForgettingRules(policy)
    now = core.clock() if now is None else float(now)
    details: list[dict[str, Any]] = []
    scanned = 0
    for ns in _long_namespaces(core, tuple(namespace_prefix), now):
        judge = _Judge(rules, now)
        for page in core._long().iter_memory_stats(ns, page_size):
            scanned += len(page)
            flagged = _reported(core, ns, judge.page(page), now)
            details.extend(flagged)
            if not dry_run:
                _delete(core, ns, [d["id"] for d in flagged])
            if progress is not None:
                progress(len(page))
        evicted = _reported(core, ns, judge.over_capacity(), now)
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
    wanted = list(dict.fromkeys(keys))
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
    out = _reported(core, namespace, reasons, now)
    _delete(core, namespace, [d["id"] for d in out])
    return out


def _merged_key(sources: list[str]) -> str:
    digest = hashlib.blake2b("\x00".join(sorted(sources)).encode(), digest_size=8).hexdigest()
    return f"consolidated-{digest}"


def _origins(keys: list[str], values: list[dict[str, Any]]) -> list[str]:
    """The original memories behind a group: a merged source stands for its own sources."""
    out: list[str] = []
    for key, value in zip(keys, values, strict=True):
        earlier = value.get("consolidated_from")
        if isinstance(earlier, list) and all(isinstance(k, str) for k in earlier):
            out.extend(earlier)
        else:
            out.append(key)
    return list(dict.fromkeys(out))


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
    recent: deque[str] = deque(maxlen=limit)  # the newest memories, in write order
    for page in tier.iter_memory_stats(namespace):
        recent.extend(k for k, _ in page if k not in skip)
    keys = list(recent)
    order = {k: i for i, k in enumerate(keys)}
    found, matrix = tier.primary_vectors(namespace, keys)
    rank = sorted(range(len(found)), key=lambda i: order[found[i]])  # write order
    present = [found[i] for i in rank]
    matrix = matrix[rank] if rank else matrix
    if query is None:
        groups = group_near_duplicates(present, matrix, threshold)
    else:
        qv = core.embeddings.embed_query(query)
        core._check_vectors([qv], "consolidation themes")
        group = theme_group(present, matrix, qv, min_similarity, max_sources)
        groups = [group] if len(group) >= 2 else []
    chat = None
    if model is not None and groups:
        from langgraph_tiered_memory.summarizer import _resolve_model

        chat = _resolve_model(model)
    wanted = [k for group in groups for k in group]
    items: dict[str, Any] = {}
    for start in range(0, len(wanted), 1000):
        items.update(tier.get(namespace, wanted[start : start + 1000], now=now))  # no access
    records = []
    merged_ops: list[PutOp] = []
    source_ops: list[PutOp] = []
    for group in groups:
        group = [k for k in group if k in items]
        values = [items[k].value for k in group]
        if len(values) < 2:
            continue
        content = _merge(chat, [str(v.get("content") or "") for v in values])
        importance = max(float(v.get("importance", 0.5)) for v in values)
        merged_key = _merged_key(group)
        records.append(
            {
                "key": merged_key,
                "namespace": list(namespace),
                "sources": list(group),
                "content": content,
                "importance": importance,
            }
        )
        origins = _origins(group, values)
        merged = {
            **{k: v for k, v in values[0].items() if k not in ("content", "importance")},
            "content": content,
            "importance": importance,
            "consolidated_from": origins,
            "source_count": len(origins),
        }
        merged.pop("consolidated_into", None)
        merged_ops.append(PutOp(namespace, merged_key, merged))
        for k, v in zip(group, values, strict=True):
            if originals == "delete":
                source_ops.append(PutOp(namespace, k, None))
            else:
                weaker = {**v, "importance": float(v.get("importance", 0.5)) / 2}
                source_ops.append(PutOp(namespace, k, {**weaker, "consolidated_into": merged_key}))
    if dry_run:
        return records
    # Every merged memory is stored before any source changes: a crash loses nothing.
    for ops in (merged_ops, source_ops):
        for start in range(0, len(ops), 500):
            core._run_batch(ops[start : start + 500])
    return records


def _merge(chat: Any, contents: list[str]) -> str:
    """One memory's content from several: their distinct sentences, or the model's merge."""
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


def worth_keeping(item: Item) -> bool:
    """The default promotion predicate: `importance >= 0.7` or `mentions >= 2`."""
    importance = item.value.get("importance", 0)
    mentions = item.value.get("mentions", 0)
    return (
        not isinstance(importance, bool)
        and isinstance(importance, (int, float))
        and importance >= 0.7
    ) or (not isinstance(mentions, bool) and isinstance(mentions, int) and mentions >= 2)


def long_term_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The default promotion target: first label `"short_term"` becomes `"memories"`."""
    if namespace and namespace[0] == "short_term":
        return ("memories", *namespace[1:])
    return ("memories", *namespace)


def promote(
    core: TieredStoreCore,
    namespace_prefix: tuple[str, ...],
    *,
    predicate: Callable[[Item], bool] | None,
    target: Callable[[tuple[str, ...]], tuple[str, ...]] | None,
    delete: bool,
    page_size: int,
) -> list[tuple[tuple[str, ...], str]]:
    """Copy short-term items the predicate accepts to long-term memory (copy stored first)."""
    _check_page_size(page_size)
    check = predicate or worth_keeping
    move = target or long_term_namespace
    promoted: list[tuple[tuple[str, ...], str]] = []
    namespaces: Any
    (namespaces,) = core._run_batch(
        [
            ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", tuple(namespace_prefix)),),
                max_depth=None,
                limit=1_000_000,
                offset=0,
            )
        ]
    )
    for ns in namespaces or []:
        if core.tier_for(ns) != "short":
            continue
        offset = 0
        while True:
            (found,) = core._run_batch(
                [SearchOp(ns, None, page_size, offset, None, refresh_ttl=False)]
            )
            page: list[Item] = list(cast(list[Item], found or []))
            removed = 0
            for item in page:
                if not check(item):
                    continue
                dest = tuple(move(tuple(item.namespace)))
                if core.tier_for(dest) != "long":
                    raise ConfigurationError(
                        f"Promotion target {dest} is routed to the short-term tier;"
                        " pass target= a function returning a long-term namespace."
                    )
                core._run_batch([PutOp(dest, item.key, dict(item.value))])  # stored first
                promoted.append((dest, item.key))
                if delete:
                    core._run_batch([PutOp(tuple(item.namespace), item.key, None)])
                    removed += 1
            if len(page) < page_size:
                break
            offset += len(page) - removed  # deleted items no longer take a place
    return promoted
