"""Maintenance of a tiered store's memories: forgetting, consolidation, promotion.

Each pass is a function whose first argument is the store (`TieredMemoryStore` or
`AsyncTieredMemoryStore`): `garbage_collect(store, ...)`, `forget`, `consolidate`,
`promote`. Every write goes through the store's normal batch path, so vectors, keyword
rows, statistics and the document copy stay in step. The `a…` twins (`agarbage_collect`,
`aforget`, `aconsolidate`, `apromote`) run the same pass in a worker thread (the passes
are synchronous I/O), so the event loop never blocks; call the synchronous ones from a
thread other than the event loop's. Reinforcement stays a store method
(`store.update_importance`); the functions here are its implementation.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import inspect
import math
from collections.abc import Callable, Collection, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar

from langgraph.store.base import PutOp

from langgraph_tiered_memory._redis_client import redis_call
from langgraph_tiered_memory.memory import memory_fields
from langgraph_tiered_memory.privacy.history import Actor, acting, current_actor
from langgraph_tiered_memory.ranking.forgetting import (
    PINNED_FIELD,
    ForgettingPolicy,
    ForgettingRules,
)
from langgraph_tiered_memory.store import promotion
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._reports import ForgottenRow, GCReport
from langgraph_tiered_memory.store._validate import check_labels, validate_key
from langgraph_tiered_memory.store.consolidation import THEME_SIMILARITY, consolidate
from langgraph_tiered_memory.store.promotion import Promoted, _check_page_size
from langgraph_tiered_memory.store.search import require_memory_mode
from langgraph_tiered_memory.store.tiers._history_events import as_event, reasons_for
from langgraph_tiered_memory.store.tiers._items import StoredItem
from langgraph_tiered_memory.store.tiers.base import MemoryStatsView

__all__ = [
    "THEME_SIMILARITY",
    "Promoted",
    "aconsolidate",
    "aforget",
    "agarbage_collect",
    "apromote",
    "consolidate",
    "forget",
    "garbage_collect",
    "promote",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

PREVIEW_CHARS = 80
_CHUNK = 1000
"""Keys read or deleted per tier call."""
TTL_EXPIRED = "ttl expired"
"""Report reason of a memory whose TTL ran out (swept, or would be in a dry run)."""


def _detail(ns: tuple[str, ...], key: str, value: dict[str, Any], reason: str) -> ForgottenRow:
    return {
        "id": key,
        "namespace": list(ns),
        "content_preview": str(value.get("content") or "")[:PREVIEW_CHARS],
        "reason": reason,
    }


def _expired(
    core: StoreCore,
    ns: tuple[str, ...],
    *,
    dry_run: bool,
    keys: list[str] | None = None,
) -> list[ForgottenRow]:
    """Report rows of the items whose TTL ran out on the store's clock; swept unless dry.

    A hypothetical `now` never sweeps: TTLs run on the store's clock only.
    """
    with acting("forgetting", TTL_EXPIRED):  # an "expired" event of each swept item
        gone = core._long().expired(ns, now=core.clock(), delete=not dry_run, keys=keys)
    return [_detail(ns, it.key, it.value, TTL_EXPIRED) for it in gone]


def _reported(
    core: StoreCore, ns: tuple[str, ...], reasons: list[tuple[str, str]]
) -> list[ForgottenRow]:
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

    def page(self, page: Sequence[tuple[str, MemoryStatsView]]) -> list[tuple[str, str]]:
        """The (key, reason) of the page's memories that a rule flags."""
        flagged = []
        cap = self.rules.max_memories
        for key, st in page:
            stats: dict[str, Any] = {
                "importance": st.importance,
                "access_count": st.access_count,
                "created_at": st.created_at,
                "last_accessed": st.last_accessed,
                "now": self.now,
            }
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


def _delete(core: StoreCore, ns: tuple[str, ...], rows: list[ForgottenRow]) -> None:
    """Forget the memories of report rows (each one's history gets its row's reason)."""
    keys = [d["id"] for d in rows]
    with acting("forgetting"), reasons_for({(ns, d["id"]): d["reason"] for d in rows}):
        for start in range(0, len(keys), 1000):
            core._run_batch([PutOp(ns, k, None) for k in keys[start : start + 1000]])


def garbage_collect(
    store: StoreCore,
    namespace_prefix: tuple[str, ...] = (),
    *,
    dry_run: bool = True,
    policy: ForgettingPolicy | None = None,
    page_size: int = 1000,
    progress: Callable[[int], None] | None = None,
    now: float | None = None,
) -> GCReport:
    """Forget long-term memories the forgetting policy flags.

    Memories are streamed in pages from the memory index (statistics only), so
    memory use stays bounded; values are read only for flagged memories. A memory
    whose value has `"pinned": True` is never forgotten. Deletes go through the
    normal batch path: vectors, keyword rows and statistics all go.

    Memories whose TTL ran out on the store's clock are swept first (reason
    `"ttl expired"`); `now` only moves the forgetting rules, never a TTL. A dry run
    writes nothing at all and reports exactly what the same real run would delete.
    With `max_memories`, a heap of at most that many entries per namespace picks the
    memories beyond it, which go once the namespace has been read.

    Args:
        store: The tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace_prefix: Only namespaces under this prefix (default: all).
        dry_run: Report only, delete nothing (the default).
        policy: Overrides of `DEFAULT_FORGETTING_POLICY`, e.g. `GARBAGE_COLLECT_POLICY`.
        page_size: Memories read per page.
        progress: Called with the number of memories scanned after each page.
        now: The time to judge at, in epoch seconds (default: the store's clock).

    Returns:
        A `GCReport`: `{"forgotten_count": N, "details": [{"id", "namespace",
        "content_preview", "reason"}, ...], "scanned": M, "dry_run": bool}`.
    """
    namespace_prefix = tuple(namespace_prefix)
    require_memory_mode(store, "Garbage collection")
    _check_page_size(page_size)
    check_labels(namespace_prefix)
    rules = ForgettingRules(policy)
    now = store.clock() if now is None else float(now)
    details: list[ForgottenRow] = []
    scanned = 0
    # Every namespace, also one holding only expired items (swept first, unless dry).
    for ns in store._long().namespaces(namespace_prefix, now=None):
        if store.tier_for(ns) != "long":
            continue
        swept = _expired(store, ns, dry_run=dry_run)
        details.extend(swept)
        gone = {d["id"] for d in swept}  # in a dry run, still listed below: skip them
        scanned += len(gone)
        judge = _Judge(rules, now)
        for listed in store._long().iter_memory_stats(ns, page_size):
            page = [(k, st) for k, st in listed if k not in gone]
            scanned += len(page)
            flagged = _reported(store, ns, judge.page(page))
            details.extend(flagged)
            if not dry_run:
                _delete(store, ns, flagged)
            if progress is not None:
                progress(len(page))
        evicted = _reported(store, ns, judge.over_capacity())
        details.extend(evicted)
        if not dry_run:
            _delete(store, ns, evicted)
    return {
        "forgotten_count": len(details),
        "details": details,
        "scanned": scanned,
        "dry_run": dry_run,
    }


def forget(
    store: StoreCore,
    namespace: tuple[str, ...],
    keys: Collection[str],
    *,
    policy: ForgettingPolicy | None = None,
    now: float | None = None,
) -> list[ForgottenRow]:
    """Delete those of `keys` that the forgetting policy still flags.

    Each memory is judged again on its current statistics and value, so one used
    or pinned since a dry run is kept. Missing keys are ignored. With
    `max_memories`, the namespace is judged again as a whole (statistics only).

    Args:
        store: The tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace: The memories' namespace (long-term tier).
        keys: Candidate keys, e.g. the ids of a `garbage_collect` dry run.
        policy: Overrides of `DEFAULT_FORGETTING_POLICY`.
        now: The time to judge at, in epoch seconds (default: the store's clock).

    Returns:
        The report rows (`ForgottenRow`: `id`, `namespace`, `content_preview`,
        `reason`) of the deleted memories.
    """
    namespace = tuple(namespace)
    store._check_memory_namespace(namespace)
    rules = ForgettingRules(policy)
    now = store.clock() if now is None else float(now)
    wanted = [validate_key(k) for k in dict.fromkeys(keys)]
    reasons: list[tuple[str, str]] = []
    if rules.max_memories is None:
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            stats = store._long().memory_stats(namespace, chunk)
            reasons.extend(_Judge(rules, now).page([(k, stats[k]) for k in chunk if k in stats]))
    else:
        asked = set(wanted)
        judge = _Judge(rules, now)
        for page in store._long().iter_memory_stats(namespace, _CHUNK):
            reasons.extend(r for r in judge.page(page) if r[0] in asked)
        reasons.extend(r for r in judge.over_capacity() if r[0] in asked)
    out = _reported(store, namespace, reasons)
    _delete(store, namespace, out)
    return out + _expired(store, namespace, dry_run=False, keys=wanted)


def update_importance(
    store: StoreCore, namespace: tuple[str, ...], key: str, delta: float
) -> float | None:
    """`TieredMemoryStore.update_importance` (documented there), for both stores."""
    # Read and rewrite under the namespace's writer lock: a delete or put (of any
    # process sharing the long tier) lands before the read or after the rewrite, never
    # in between (where the rewrite would bring a deleted memory back, or undo the put).
    with store._long().exclusive(tuple(namespace)):
        rewrite = _reinforced(store, tuple(namespace), key, delta)
        if rewrite is None:
            return None
        with redis_call(), _reinforcing(rewrite):
            store._run_batch(rewrite.ops, keep=rewrite.keep)
    return rewrite.importance


class _Rewrite(NamedTuple):
    ops: list[PutOp]
    keep: dict[tuple[tuple[str, ...], str], StoredItem]
    """The stored item whose TTL and expiry the rewrite keeps."""
    importance: float
    before: float
    """The importance before the rewrite."""


@contextmanager
def _reinforcing(rewrite: _Rewrite) -> Iterator[None]:
    """Record the rewrite as a "reinforced" event of the caller's actor."""
    actor, reason = current_actor()
    change = f"importance {rewrite.before:.2f} -> {rewrite.importance:.2f}"
    with acting(actor, reason or change), as_event("reinforced"):
        yield


def _reinforced(core: StoreCore, ns: tuple[str, ...], key: str, delta: float) -> _Rewrite | None:
    """The rewrite moving a memory's importance by `delta`, clamped to [0, 1].

    None when the memory does not exist; reading it is not an access.
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta):
        raise ValueError(f"delta must be a finite number, got {delta!r}.")
    core._check_memory_namespace(ns)
    stored = core._long().get(ns, [validate_key(key)], now=core.clock()).get(key)
    if stored is None:
        return None
    current = memory_fields(stored.value, key=key).importance
    importance = min(1.0, max(0.0, current + float(delta)))
    value = {**stored.value, "importance": importance}
    return _Rewrite([PutOp(ns, key, value)], {(ns, key): stored}, importance, current)


# ------------------------------------------------------------------ the public passes


def _in_thread(
    method: Callable[Concatenate[StoreCore, _P], _R],
) -> Callable[Concatenate[StoreCore, _P], Coroutine[Any, Any, _R]]:
    """The async twin of a pass: the same call, in a worker thread.

    The twin has the pass's signature and, under a first line naming it, its docstring.
    """

    async def twin(store: StoreCore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(method, store, *args, **kwargs)

    functools.update_wrapper(twin, method)
    twin.__name__ = twin.__qualname__ = f"a{method.__name__}"
    twin.__doc__ = (
        f"Async `{method.__name__}`: the same pass, run in a worker thread (callbacks such"
        " as `progress` are called from that thread).\n\n" + inspect.cleandoc(method.__doc__ or "")
    )
    return twin


def _acting(
    method: Callable[Concatenate[StoreCore, _P], _R], actor: Actor, reason: str
) -> Callable[Concatenate[StoreCore, _P], _R]:
    """The pass with its writes attributed to `actor` in the memory history."""

    def run(store: StoreCore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with acting(actor, reason):
            return method(store, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


promote = _acting(promotion.promote, "system", "promoted from the short-term tier")
agarbage_collect = _in_thread(garbage_collect)
aforget = _in_thread(forget)
aconsolidate = _in_thread(consolidate)
apromote = _in_thread(promote)
