"""Promotion: copy short-term items worth keeping to the same user's long-term memory.

Every item is read, mapped and validated before the first write, so an invalid item is
skipped and reported instead of stopping the pass halfway; a copy never replaces a
different long-term memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from langgraph.store.base import (
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langgraph_tiered_memory.errors import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.privacy.provenance import stamp
from langgraph_tiered_memory.ranking.scoring import user_scope
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._reports import PromotionSkip
from langgraph_tiered_memory.store.tiers._items import StoredItem
from langgraph_tiered_memory.store.tiers.base import ConditionalDeletes

__all__ = ["Promoted", "long_term_namespace", "promote", "worth_keeping"]

logger = logging.getLogger(__name__)


def _check_page_size(page_size: int) -> None:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a positive int, got {page_size!r}.")


def _content_id(value: dict[str, Any]) -> str:
    """What makes two values the same memory: the `content`, else the whole value."""
    content = value.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _digest(*parts: Any) -> str:
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def worth_keeping(item: Item) -> bool:
    """The default promotion predicate: `importance >= 0.7` or `mentions >= 2`."""
    importance = item.value.get("importance", 0)
    mentions = item.value.get("mentions", 0)
    return (
        not isinstance(importance, bool)
        and isinstance(importance, (int, float))
        and importance >= 0.7
    ) or (not isinstance(mentions, bool) and isinstance(mentions, int) and mentions >= 2)


def long_term_namespace(namespace: tuple[str, ...], user_label: str = "users") -> tuple[str, ...]:
    """The default promotion target: the same user's long-term namespace.

    A first label `"short_term"` is dropped; a namespace that then names its user
    (`(..., user_label, id, ...)`) goes under `"memories"` unchanged, and otherwise its
    first label is the user id: `("short_term", "u1", "s1")` becomes
    `("users", "u1", "memories", "s1")`. Contextual retrieval therefore treats every
    promoted memory as the user's own, never as shared.

    Raises:
        ConfigurationError: the namespace names no user (e.g. `("short_term",)`).
    """
    rest = tuple(namespace[1:] if namespace[:1] == ("short_term",) else namespace)
    if user_scope(rest, user_label) is not None:
        return ("memories", *rest)
    if not rest:
        raise ConfigurationError(
            f"Short-term namespace {tuple(namespace)} names no user, so its items have no"
            " private long-term home; pass promote(target=...) to choose one."
        )
    return (user_label, rest[0], "memories", *rest[1:])


class Promoted(list[tuple[tuple[str, ...], str]]):
    """The (long-term namespace, key) of each promoted item, plus what was skipped.

    A plain list of pairs (as before) with one more attribute, `skipped`: one
    `PromotionSkip` (`{"namespace", "key", "reason"}`) per item the predicate accepted
    but that could not be promoted (not a valid memory, or no user in its namespace).
    """

    skipped: list[PromotionSkip]

    def __init__(
        self,
        pairs: Iterable[tuple[tuple[str, ...], str]] = (),
        skipped: list[PromotionSkip] | None = None,
    ) -> None:
        """Build from pairs and skip records."""
        super().__init__(pairs)
        self.skipped = list(skipped or [])


def _short_namespaces(core: StoreCore, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Short-term namespaces that literally start with `prefix` (a "*" label is a label)."""
    (found,) = core._run_batch(
        [
            ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", prefix),),
                max_depth=None,
                limit=1_000_000,
                offset=0,
            )
        ]
    )
    return [
        tuple(ns)
        for ns in cast(list[tuple[str, ...]], found or [])
        if tuple(ns[: len(prefix)]) == prefix and core.tier_for(tuple(ns)) == "short"
    ]


def _items_of(core: StoreCore, ns: tuple[str, ...], page_size: int) -> Iterator[Item]:
    """The items of exactly `ns` (not of deeper namespaces), page by page."""
    offset = 0
    while True:
        (found,) = core._run_batch([SearchOp(ns, None, page_size, offset, None, refresh_ttl=False)])
        page = cast(list[Item], found or [])
        yield from (item for item in page if tuple(item.namespace) == ns)
        if len(page) < page_size:
            return
        offset += len(page)


def promote(
    store: StoreCore,
    namespace_prefix: tuple[str, ...],
    *,
    predicate: Callable[[Item], bool] | None = None,
    target: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None,
    delete: bool = False,
    page_size: int = 500,
) -> Promoted:
    """Copy short-term items that deserve it to long-term memory before they expire.

    Every item is read, mapped and validated before the first write, and each copy
    is stored before the optional delete of the short-term item. An item that is
    not a valid memory (e.g. `importance` 7) is skipped, logged and reported in
    `.skipped`; it stays in the short-term tier. A copy never replaces another
    long-term memory: when its key holds different content, it is stored as
    `promoted-<digest>` (of source namespace, key and content); a copy whose
    content is already stored there is not written again, so reruns add nothing.

    Args:
        store: The tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace_prefix: Short-term namespaces to scan (e.g. `("short_term",)`),
            taken literally (a `"*"` label is a label, not a wildcard).
        predicate: Which items to promote. Default: `importance >= 0.7` or
            `mentions >= 2` in the value.
        target: Long-term namespace of a short-term one. Default: the same user's
            namespace, `("short_term", "u1", ...)` -> `("users", "u1", "memories",
            ...)` (the scoring config's `user_label`), so contextual search never
            shows it to another user; a namespace without a user is skipped.
        delete: Delete the short-term item once its copy is stored.
        page_size: Items read per page.

    Returns:
        The (long-term namespace, key) of each promoted item (a list); its
        `skipped` attribute lists the `PromotionSkip` rows (`{"namespace", "key",
        "reason"}`) of the items the predicate accepted but that could not be
        promoted.
    """
    _check_page_size(page_size)
    prefix = tuple(namespace_prefix)
    check = predicate or worth_keeping
    label = store.scoring.user_label
    skipped: list[PromotionSkip] = []
    plan: list[tuple[tuple[str, ...], Item, tuple[str, ...]]] = []
    for ns in _short_namespaces(store, prefix):
        for item in _items_of(store, ns, page_size):
            if not check(item):
                continue
            try:
                dest = tuple(target(ns)) if target else long_term_namespace(ns, label)
            except ConfigurationError as e:
                if target is not None:
                    raise
                skipped.append(_skip(ns, item.key, str(e)))
                continue
            if store.tier_for(dest) != "long":
                raise ConfigurationError(
                    f"Promotion target {dest} is routed to the short-term tier;"
                    " pass target= a function returning a long-term namespace."
                )
            try:
                store._plan([PutOp(dest, item.key, dict(item.value))])  # validates, writes nothing
            except (InvalidItemError, InvalidNamespaceError) as e:
                skipped.append(_skip(ns, item.key, str(e)))
                continue
            plan.append((ns, item, dest))
    for row in skipped:
        logger.warning(
            "Not promoting %s/%s: %s", tuple(row["namespace"]), row["key"], row["reason"]
        )
    moves = _placed(store, plan, label)
    promoted = Promoted(skipped=skipped)
    for start in range(0, len(moves), 500):
        chunk = moves[start : start + 500]
        store._run_batch([op for _, op, _ in chunk if op is not None])  # copies stored first
        if delete:
            _delete_promoted(store, [source for source, _, _ in chunk])
        promoted.extend(pair for _, _, pair in chunk)
    return promoted


def _delete_promoted(core: StoreCore, sources: list[tuple[tuple[str, ...], Item]]) -> None:
    """Delete the short-term items that were copied, unless written since they were read.

    A source changed after the read (a newer value) is not what the copy holds: it stays
    in the short-term tier, logged, instead of being lost. The check and the delete are
    one step on the tier (`ConditionalDeletes.delete_unchanged`).
    """
    tier = cast(ConditionalDeletes, core._tier("short"))
    now = core.clock()
    by_ns: dict[tuple[str, ...], list[Item]] = {}
    for ns, item in sources:
        by_ns.setdefault(ns, []).append(item)
    current: list[StoredItem] = []
    changed: list[tuple[tuple[str, ...], str]] = []
    for ns, items in by_ns.items():
        found = tier.get(ns, [it.key for it in items], now=now)
        for item in items:
            stored = found.get(item.key)
            if stored is not None and _same_write(stored, item):
                current.append(stored)
            else:
                changed.append((ns, item.key))
    done = tier.delete_unchanged(current)
    changed += [(s.namespace, s.key) for s, ok in zip(current, done, strict=True) if not ok]
    for ns, key in changed:
        logger.info("Kept %s/%s in short-term memory: it changed after it was promoted.", ns, key)


def _same_write(stored: StoredItem, item: Item) -> bool:
    """Whether `stored` is the write `item` was read from (value and update time)."""
    # `Item.updated_at` is a datetime: microseconds, where the tier keeps the float.
    return (
        stored.value == item.value and abs(stored.updated_at - item.updated_at.timestamp()) < 1e-5
    )


def _skip(ns: tuple[str, ...], key: str, reason: str) -> PromotionSkip:
    return {"namespace": list(ns), "key": key, "reason": reason}


def _source_user(namespace: tuple[str, ...], user_label: str = "users") -> str | None:
    """The user a short-term namespace belongs to, by `long_term_namespace`'s rule."""
    short = namespace[:1] == ("short_term",)
    rest = tuple(namespace[1:] if short else namespace)
    user = user_scope(rest, user_label)
    return user if user is not None or not (short and rest) else rest[0]


def _placed(
    core: StoreCore, plan: list[tuple[tuple[str, ...], Item, tuple[str, ...]]], label: str
) -> list[tuple[tuple[tuple[str, ...], Item], PutOp | None, tuple[tuple[str, ...], str]]]:
    """Where each copy goes, and its write (None when that content is stored already).

    A copy outside its user's own namespaces (a `target` of the caller's) records the
    user in its `provenance`, so erasing the user finds it.
    """
    derived = {
        id(item): f"promoted-{_digest(list(ns), item.key, _content_id(item.value))}"
        for ns, item, _ in plan
    }
    wanted: dict[tuple[str, ...], set[str]] = {}
    for _, item, dest in plan:
        wanted.setdefault(dest, set()).update((item.key, derived[id(item)]))
    stored: dict[tuple[tuple[str, ...], str], str] = {}  # content ids, incl. this run's copies
    for dest, keys in wanted.items():
        ordered = sorted(keys)
        for start in range(0, len(ordered), 1000):
            got = core._long().get(dest, ordered[start : start + 1000], now=core.clock())
            stored.update({(dest, k): _content_id(it.value) for k, it in got.items()})
    out = []
    for ns, item, dest in plan:
        value = stamp(item.value, dest, _source_user(ns, label), None)
        content = _content_id(value)
        key = item.key
        if stored.get((dest, key), content) != content:
            key = derived[id(item)]  # the key holds another memory: never replace it
        op = None
        if (dest, key) not in stored:
            op = PutOp(dest, key, value)
            stored[(dest, key)] = content
        out.append(((ns, item), op, (dest, key)))
    return out
