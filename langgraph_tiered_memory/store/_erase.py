"""`erase_user`: remove everything a store (and a session saver) holds about one user.

An erasure runs in two phases, so it can be re-run after a crash midway and still
find what the crash left:

1. **Find** (reads only). The user's namespaces on each tier (`user_rule`: their
   `"users"` scope and the library's per-user layouts, registered namespaces whether
   or not they still hold a live item), and in the *shared* namespaces (no user
   scope, no per-user layout) the items whose value names the user (`names_user`: a
   provenance field holding the user id, or the id of one of the user's sessions when
   a checkpointer is given).
2. **Remove**, leaf data before registries (`remove` gives the order and why): history
   tombstones, shared memories' triples, shared items, the user's namespaces, the
   user's graph triples (`user_graph_part`, which `export_user` lists too), and
   finally the checkpointer's sessions (it holds the session ids a re-run needs to
   find shared memories by session).

A dry run does the first phase and asks every place what it *would* remove, so its
receipt has the same counts and removes nothing. The receipt and the log lines carry
counts and hashes only, never content or raw ids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langgraph_tiered_memory.agent.writer import erasing_writes
from langgraph_tiered_memory.config import TierName
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.erase import GraphErasure, erase_user_graph
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple
from langgraph_tiered_memory.privacy.erasure import (
    DEFAULT_USER_TEMPLATES,
    ErasureReceipt,
    UserNamespaces,
    check_user_id,
)
from langgraph_tiered_memory.privacy.history import acting
from langgraph_tiered_memory.privacy.provenance import names_user
from langgraph_tiered_memory.store._history import tombstone_history
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers.base import MemoryTier

_log = logging.getLogger("langgraph_tiered_memory.store.erase")

_ALL = 2**31 - 1
"""A `limit` no namespace reaches: every item of a namespace."""

WRITER_JOBS = "writer.jobs"
"""The receipt's place for the user's background memory writes dropped in this process."""

KEPT_UNATTRIBUTED = (
    "memories in shared namespaces whose value names neither the user nor one of the"
    " user's sessions (no provenance links them to the user)"
)
KEPT_TOMBSTONES = (
    "content-free history tombstones (event 'erased', time, hashes), so the erasure"
    " itself stays on record"
)
KEPT_RETRIEVED = (
    "copies of the user's shared memories that other users' agents retrieved into their"
    " own sessions (the memory context checkpointed there): they are part of those"
    " sessions' state, which the user never took part in"
)
KEPT_NO_SESSIONS = (
    "sessions, checkpointer and running summaries: no session saver was given"
    " (erase_user(store, ..., checkpointer=saver), or tiered-memory erase --redis-url)"
)


# ----------------------------------------------------------------------------- rules


STORE_USER_TEMPLATES: tuple[tuple[str, ...], ...] = DEFAULT_USER_TEMPLATES
"""The library's per-user layouts: `erasure.DEFAULT_USER_TEMPLATES`, the one rule
(`("memories", id)`, `("profiles", id)`, and promotion's `("short_term", id, ...)`)."""


def user_rule(
    user_id: str, label: str, namespaces: Iterable[Sequence[str]] | None = None
) -> UserNamespaces:
    """The user's namespaces: the library's layouts plus caller-given templates."""
    extra = tuple(tuple(t) for t in namespaces or ())
    templates = STORE_USER_TEMPLATES + tuple(t for t in extra if t not in STORE_USER_TEMPLATES)
    return UserNamespaces(check_user_id(user_id), label=label, templates=templates)


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names a user goes by, checked (a bare string would be read letter by letter)."""
    if isinstance(names, str) or not all(isinstance(n, str) and n.strip() for n in names):
        raise ValueError(
            f"names must be a list of non-empty strings such as ['Ana Lopes'], got {names!r}."
        )
    return tuple(names)


# ----------------------------------------------------------------------------- find


@dataclass
class ErasePlan:
    """What one erasure found (nothing is read after it is built)."""

    user_id: str
    rule: UserNamespaces
    sessions: tuple[str, ...]
    names: tuple[str, ...] = ()
    """Names the user goes by (`erase_user(names=...)`): graph triples of shared
    namespaces that mention one are the user's too."""
    owned: dict[TierName, list[Namespace]] = field(default_factory=dict)
    """Per tier, the user's namespaces."""
    shared: dict[TierName, dict[Namespace, list[str]]] = field(default_factory=dict)
    """Per tier, keys of shared-namespace items whose provenance names the user."""

    @property
    def shared_count(self) -> int:
        """Shared-namespace items to remove, over every tier."""
        return sum(len(keys) for by_ns in self.shared.values() for keys in by_ns.values())


def erasable_tier(core: StoreCore, name: TierName) -> MemoryTier:
    """The tier `name` with its erase methods (those of `MemoryTier`, the short tier's too)."""
    return cast(MemoryTier, core._tier(name))


def tier_names(core: StoreCore) -> list[TierName]:
    """The tiers the store routes to, in a fixed order."""
    return sorted(core._router.used_tiers)


def _shared_matches(
    core: StoreCore, name: TierName, plan: ErasePlan, now: float
) -> dict[Namespace, list[str]]:
    """Keys of items in shared namespaces of a tier whose value names the user."""
    tier = erasable_tier(core, name)
    rule = plan.rule
    found: dict[Namespace, list[str]] = {}
    for ns in tier.user_namespaces(rule.shared):
        hits = tier.search(
            ns,
            query_vector=None,
            filter=None,
            limit=_ALL,
            now=now,
            namespace_filter=ns.__eq__,
        )
        items = [item for item, _ in hits]
        if name == "long":  # expired but not yet swept: still stored
            items += core._long().expired(ns, now=now, delete=False)
        keys = {it.key for it in items if names_user(it.value, plan.user_id, plan.sessions)}
        if keys:
            found[ns] = sorted(keys)
    return found


def find(
    core: StoreCore,
    user_id: str,
    *,
    namespaces: Iterable[Sequence[str]] | None = None,
    sessions: Sequence[str] = (),
    names: Sequence[str] = (),
) -> ErasePlan:
    """Everything the store's tiers hold about `user_id` (reads only).

    The memory history and the graph are found by the rule itself when they are
    erased (they may know namespaces the registries no longer list).
    """
    rule = user_rule(user_id, core.scoring.user_label, namespaces)
    plan = ErasePlan(user_id, rule, tuple(sorted(set(sessions))), check_names(names))
    now = core.clock()
    for name in tier_names(core):
        plan.owned[name] = list(erasable_tier(core, name).user_namespaces(rule.owns))
        plan.shared[name] = _shared_matches(core, name, plan, now)
    return plan


# ----------------------------------------------------------------------------- remove


def _add_places(receipt: ErasureReceipt, places: Mapping[str, Iterable[Sequence[str]]]) -> None:
    for place, ids in places.items():
        receipt.add(place, ids)


def _shared_place(place: str) -> str:
    """`"long.items"` of a shared-namespace erase as `"long.shared_items"`."""
    tier, _, what = place.partition(".")
    return f"{tier}.shared_{what}" if what else f"shared.{tier}"


def user_graphs(core: StoreCore) -> list[GraphStore]:
    """Every graph that may hold the user's triples.

    The store's own graph, and the embedded graph tables of the long tier's SQLite
    file even when this store runs without a graph (a store opened earlier with
    `graph=True` wrote them).
    """
    graphs: list[GraphStore] = []
    if core.graph is not None:
        graphs.append(core.graph)
    if "long" in core._router.used_tiers and not isinstance(core.graph, SqliteGraph):
        long_tier = cast(Any, core._long())
        if long_tier.redis is None:  # not a Chroma server's tier: it keeps a SQLite file
            graphs.append(SqliteGraph.for_tier(long_tier))
    return graphs


def _tombstone(
    core: StoreCore,
    receipt: ErasureReceipt | None,
    plan: ErasePlan,
    *,
    dry_run: bool,
) -> None:
    """Make the history of the user's memories content-free tombstones.

    The memories of the user's namespaces (also those no registry lists any more),
    the shared memories found, and every memory whose recorded provenance named the
    user or one of the user's sessions, deleted ones included.
    """
    if not core.history_enabled:
        return
    places = tombstone_history(
        core,
        plan.rule.owns,
        keys=plan.shared.get("long", {}),
        user_id=plan.user_id,
        session_ids=plan.sessions,
        dry_run=dry_run,
    )
    if receipt is not None:
        _add_places(receipt, places)
        receipt.keep(KEPT_TOMBSTONES)


SharedLinks = dict[tuple[Namespace, str], tuple[Triple, ...]]
"""(namespace, key) of a shared memory -> the triples it supports."""


def _detach(
    graph: GraphStore, keys: Mapping[Namespace, Sequence[str]], *, dry_run: bool
) -> SharedLinks:
    """Make the memories `keys` support nothing (with `dry_run`, only find their triples).

    A triple one of them alone supported goes with it. A graph outside the tier's
    transaction (FalkorDB) learns of deletes from the store's write path, which erasing
    a tier's keys does not take, so the erase does it here.
    """
    links: SharedLinks = {}
    for ns, wanted in keys.items():
        for key, triples in graph.memory_triples(ns, wanted).items():
            links[(ns, key)] = triples
    if links and not dry_run:
        graph.replace([MemoryTriples(ns, key, (), None) for ns, key in links])
    return links


def _record_links(receipt: ErasureReceipt, links: SharedLinks) -> None:
    receipt.add(
        "graph.shared_supports",
        [(*ns, key, *t) for (ns, key), triples in links.items() for t in triples],
    )


def user_graph_part(
    graph: GraphStore, plan: ErasePlan, *, dry_run: bool
) -> tuple[GraphErasure, SharedLinks]:
    """Take the user's part off `graph` (with `dry_run`, find it): erase's and export's rule.

    The user's part is what `erase_user_graph` selects (every triple of the user's
    namespaces; in shared namespaces, the triples of the user's scope and those
    mentioning one of `plan.names`) and the support the shared memories of the plan
    give (`plan.shared`; a triple only they support goes). `export_user` lists exactly
    what this finds, `erase_user` removes it.

    Returns:
        The graph's erasure and, per shared memory of the plan, the triples it supported.
    """
    links = _detach(graph, plan.shared.get("long", {}), dry_run=dry_run)
    # The graph's erase goes last on each graph: FalkorDB then clears its query logs,
    # which hold the parameters of every query sent before, these included.
    return erase_user_graph(graph, plan.rule, names=plan.names, dry_run=dry_run), links


def remove(core: StoreCore, plan: ErasePlan, *, dry_run: bool) -> ErasureReceipt:
    """Remove (or, with `dry_run`, count) what `plan` found; leaf data first.

    History goes first: it is found by the rule, so a crash after it leaves records a
    re-run finds. The shared memories' support goes from each graph before the shared
    items (a re-run no longer finds them by value), the shared items before the user's
    namespaces, whose registry entries the tiers remove last. The graph's erase comes
    after the memories: a write that lands while the erase runs then leaves no triple
    of a memory the erase deleted, and a crash before it is finished by a re-run (the
    graph finds the user's namespaces by the rule).
    """
    receipt = ErasureReceipt.for_user(plan.user_id, dry_run=dry_run)
    _tombstone(core, receipt, plan, dry_run=dry_run)
    graphs = user_graphs(core)
    if not dry_run:
        for graph in graphs:
            _record_links(receipt, _detach(graph, plan.shared.get("long", {}), dry_run=False))
    with acting("system", "erase_user"):
        for name in tier_names(core):
            if shared := plan.shared.get(name):
                found = erasable_tier(core, name).erase_keys(shared, dry_run=dry_run)
                for place, ids in found.items():
                    receipt.add(_shared_place(place), ids)
        if plan.shared_count and not dry_run:
            # Deleting the shared items may have appended events: tombstones too, before
            # anything else runs (a re-run no longer finds these items by value).
            _tombstone(core, None, plan, dry_run=False)
        for name in tier_names(core):
            erased = erasable_tier(core, name).erase_namespaces(plan.owned[name], dry_run=dry_run)
            _add_places(receipt, erased)
    for graph in graphs:
        # Again for the shared memories: support a write gave them meanwhile.
        part, links = user_graph_part(graph, plan, dry_run=dry_run)
        _record_links(receipt, links)
        part.record(receipt)
    if not dry_run:
        # Events the removals appended (not counted: they are of the same memories). A
        # crash before this line is caught by the next run's first tombstone step.
        _tombstone(core, None, plan, dry_run=False)
        compact_sqlite_files(core)
    receipt.keep(KEPT_UNATTRIBUTED)
    if plan.shared_count:
        receipt.keep(KEPT_RETRIEVED)
    return receipt


def compact_sqlite_files(core: StoreCore) -> None:
    """Rebuild the long tier's SQLite files (`VACUUM`), then empty their WAL.

    `secure_delete` zeroes freed pages and cells, but a page can keep the first bytes
    of a deleted cell (its row's namespace id and key) when SQLite reuses part of the
    freed space; `VACUUM` writes every page anew from the live rows only. The WAL is
    then checkpointed and truncated, so the old pages leave the main file too.
    """
    if "long" not in core._router.used_tiers:
        return
    cast(Any, core._long()).compact_files()
    _log.debug("compacted the long tier's SQLite files after an erasure")


# ----------------------------------------------------------------------------- savers


def session_ids(checkpointer: Any, user_id: str) -> list[str]:
    """Ids of the sessions `user_id` owns in a sync session saver (none without one)."""
    if checkpointer is None:
        return []
    if not hasattr(checkpointer, "user_sessions"):
        raise ConfigurationError(
            "erase_user needs a sync session saver (RedisSessionSaver or"
            f" ShallowRedisSessionSaver) as checkpointer=, got {type(checkpointer).__name__};"
            " with an async saver, call `await aerase_user(store, ...)`."
        )
    return list(checkpointer.user_sessions(user_id))


async def asession_ids(checkpointer: Any, user_id: str) -> list[str]:
    """`session_ids` for an async or a sync session saver."""
    if checkpointer is None:
        return []
    if hasattr(checkpointer, "auser_sessions"):
        return list(await checkpointer.auser_sessions(user_id))
    if hasattr(checkpointer, "user_sessions"):
        return list(await asyncio.to_thread(checkpointer.user_sessions, user_id))
    raise ConfigurationError(
        "checkpointer= must be one of the session savers of"
        f" langgraph_tiered_memory.checkpoint, got {type(checkpointer).__name__}."
    )


def _log_receipt(receipt: ErasureReceipt) -> None:
    verb = "would remove" if receipt.dry_run else "removed"
    _log.info(
        "erase_user %s %s %d records of subject %s: %s",
        "(dry run)" if receipt.dry_run else "",
        verb,
        receipt.total,
        receipt.subject[:12],
        ", ".join(f"{p}={n}" for p, n in sorted(receipt.counts.items())) or "nothing",
    )


def erase_store(
    core: StoreCore,
    user_id: str,
    *,
    dry_run: bool = False,
    namespaces: Iterable[Sequence[str]] | None = None,
    sessions: Sequence[str] = (),
    names: Sequence[str] = (),
) -> ErasureReceipt:
    """The store's part of `erase_user` (no sessions): find, then remove.

    `sessions` are the ids of the user's sessions, for finding shared memories by
    session; the caller erases the sessions themselves afterwards. Meanwhile no memory
    writer of this process writes the user's data: its jobs of the user are dropped
    (counted as `"writer.jobs"`), a running one once its current step ends.
    """
    with erasing_writes(user_id, dry_run=dry_run) as dropped:
        plan = find(core, user_id, namespaces=namespaces, sessions=sessions, names=names)
        _log.info(
            "erase_user%s of subject %s: %d namespaces, %d shared items, %d sessions found",
            " (dry run)" if dry_run else "",
            ErasureReceipt.for_user(user_id).subject[:12],
            sum(len(v) for v in plan.owned.values()),
            plan.shared_count,
            len(plan.sessions),
        )
        receipt = remove(core, plan, dry_run=dry_run)
    receipt.count(WRITER_JOBS, dropped())
    return receipt


def erase_user(
    store: StoreCore,
    user_id: str,
    *,
    dry_run: bool = False,
    namespaces: Iterable[Sequence[str]] | None = None,
    checkpointer: Any = None,
    names: Sequence[str] = (),
) -> ErasureReceipt:
    """Remove everything the store (and `checkpointer`) holds about `user_id`.

    Removes the user's namespaces on every tier (items, vectors, the SQLite
    document copy, keyword index and statistics, namespace registries), the
    profile cache, the graph triples of those namespaces (and, in shared
    namespaces, those of the user's scope or mentioning one of `names`), memories
    of shared namespaces whose provenance names the user or one of the user's
    sessions, and the content of the memory history (left as content-free
    tombstones). With `checkpointer`, the user's sessions go too: checkpoints,
    writes, registry entries and running summaries. Idempotent: a second run,
    or a run after a crash midway, removes what is left.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        user_id: The user to erase.
        dry_run: Remove nothing; the receipt counts what would be removed.
        namespaces: More namespace templates of the user's data, such as
            `[("notes", "{user_id}")]`, besides the library's layouts
            (`erasure.DEFAULT_USER_TEMPLATES`: `("memories", "{user_id}")`, `("profiles",
            "{user_id}")`, `("short_term", "{user_id}")`) and every namespace
            whose user scope (the label after `"users"`) is the user.
        checkpointer: A sync session saver of `langgraph_tiered_memory.checkpoint`
            whose `erase_user` runs too; its receipt is merged.
        names: Names the user goes by (`["Ana Lopes"]`): graph triples of shared
            namespaces whose subject or object mentions one go too. The user id
            is no mention unless listed here; namespaces of other users are never
            touched.

    Returns:
        The `ErasureReceipt`: counts per place and hashes of the removed ids.

    Raises:
        ValueError: `user_id` is empty or has surrounding spaces, or `names` is
            not a list of non-empty strings.
        ConfigurationError: `checkpointer` is not a sync session saver.

    Example:
        ```python
        import tempfile

        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.privacy import erase_user

        with tempfile.TemporaryDirectory() as folder, TieredMemoryStore.from_conn_string(
            chroma_path=folder, tiers={"default": "long"}
        ) as store:
            store.put(("users", "u9", "memories"), "m1", {"content": "likes tea"})
            receipt = erase_user(store, "u9")
            assert store.get(("users", "u9", "memories"), "m1") is None
            assert erase_user(store, "u9").total == 0  # nothing left
        ```
    """
    uid = check_user_id(user_id)
    sessions = session_ids(checkpointer, uid)
    receipt = erase_store(
        store, uid, dry_run=dry_run, namespaces=namespaces, sessions=sessions, names=names
    )
    if checkpointer is None:
        receipt.keep(KEPT_NO_SESSIONS)
    else:
        receipt.merge(checkpointer.erase_user(uid, dry_run=dry_run))
    _log_receipt(receipt)
    return receipt.finish()


async def aerase_user(
    store: StoreCore,
    user_id: str,
    *,
    dry_run: bool = False,
    namespaces: Iterable[Sequence[str]] | None = None,
    checkpointer: Any = None,
    names: Sequence[str] = (),
) -> ErasureReceipt:
    """Async `erase_user`: the store's I/O runs in a worker thread.

    `checkpointer` may be an async session saver (its `aerase_user` is awaited)
    or a sync one (run in a thread).
    """
    uid = check_user_id(user_id)
    sessions = await asession_ids(checkpointer, uid)
    receipt = await asyncio.to_thread(
        erase_store,
        store,
        uid,
        dry_run=dry_run,
        namespaces=namespaces,
        sessions=sessions,
        names=names,
    )
    if checkpointer is None:
        receipt.keep(KEPT_NO_SESSIONS)
    elif hasattr(checkpointer, "aerase_user"):
        receipt.merge(await checkpointer.aerase_user(uid, dry_run=dry_run))
    else:
        receipt.merge(await asyncio.to_thread(checkpointer.erase_user, uid, dry_run=dry_run))
    _log_receipt(receipt)
    return receipt.finish()
