"""The store's memory history: planning the events of a write, and reading them back.

Every change to a long-term item appends a `MemoryEvent` to the `m_history` table of
the long tier's SQLite file (`sqlite_history`), in the transaction of the item's own
commit. The long tier plans the events of each namespace's part of a batch with
`plan_events`, from what it already holds at that point: the new values and the
documents they replace, so the previous content hash costs no extra read.

What kind of event a change is:

- an upsert is an ``"add"`` when nothing was stored under the key, else an
  ``"update"``; a delete is a ``"deleted"``;
- the actor's context refines that: deletes by ``"forgetting"`` are ``"forgotten"``,
  writes and deletes by ``"consolidation"`` are ``"merged"``;
- a pass that knows better says so with `as_event` (reinforcement: ``"reinforced"``),
  and TTL sweeps plan ``"expired"`` events themselves.

The reason is the `acting` reason, or a per-key reason given with `reasons_for`
(forgetting gives each memory its own). An item's content is its ``content`` string,
or its whole value as JSON when it has none. Each event also keeps hashes of the users
and sessions its value's provenance names, so an erasure finds a shared memory's
history even after the memory is gone.

A write interrupted between Chroma and the SQLite commit leaves no event; the next
open repairs it from Chroma and records it with `recovered_events` (actor
``"system"``, reason `RECOVERED`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy.erasure import id_hash, subject_hash
from langgraph_tiered_memory.privacy.history import (
    EventKind,
    MemoryEvent,
)
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store._validate import check_labels, validate_key
from langgraph_tiered_memory.store.tiers._history_events import _session_subject
from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.sqlite_history import (
    HistoryTable,
    Selection,
    StoredEvent,
)

HISTORY_PLACE = "history.events"
"""The erasure receipt's place for history events made tombstones."""

NamespaceSelector = Iterable[Sequence[str]] | Callable[[Namespace], bool]
"""Namespaces, or a predicate choosing among every namespace with history."""


def check_history(history: object) -> bool:
    """The `history` store option, checked."""
    if not isinstance(history, bool):
        raise ConfigurationError(
            f"history must be True (record every change to a long-term memory) or False,"
            f" got {history!r}."
        )
    return history


def _tombstone_key(namespace: Namespace, key: str) -> str:
    return id_hash(*namespace, key)


def _memory_event(e: StoredEvent) -> MemoryEvent:
    return MemoryEvent(
        seq=e.seq,
        at=e.at,
        event=cast(EventKind, e.event),
        actor=cast(Any, e.actor),
        reason=e.reason,
        previous_hash=e.previous_hash,
        content_hash=e.content_hash,
        content=e.content,
    )


def memory_history(store: StoreCore, namespace: tuple[str, ...], key: str) -> list[MemoryEvent]:
    """The events of a long-term memory, oldest first.

    Every change appends one: ``add``, ``update``, ``merged``, ``reinforced``,
    ``forgotten``, ``deleted``, ``expired``, with the store clock's time, the actor
    (``user`` for direct writes; ``tool``, ``extraction``, ``forgetting``,
    ``consolidation``, ``system`` for the library's own), the reason and the
    hashes of the content before and after. A memory deleted since still has its
    history; one erased with `erase_user` has content-free ``erased`` tombstones.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespace: The memory's namespace (routed to the long-term tier).
        key: The memory's key.

    Raises:
        ConfigurationError: the store records no history (`history=False`), or
            `namespace` is routed to the short-term tier.
    """
    ns = tuple(namespace)
    check_labels(ns)
    validate_key(key)
    if store.tier_for(ns) != "long":
        raise ConfigurationError(
            f"Namespace {ns} is routed to the short-term tier; memory history is kept"
            " for long-term memories only."
        )
    table = store._history_table()
    return [
        _memory_event(e)
        for e in table.events(store.key_prefix, namespace_id(ns), key, _tombstone_key(ns, key))
    ]


async def amemory_history(
    store: StoreCore, namespace: tuple[str, ...], key: str
) -> list[MemoryEvent]:
    """Async `memory_history` (the read runs in a worker thread)."""
    return await asyncio.to_thread(memory_history, store, namespace, key)


def history_namespaces(store: StoreCore) -> list[Namespace]:
    """Every namespace with history, including those whose memories are all gone.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
    """
    table = store._history_file() if store.history_enabled else None
    return [] if table is None else table.namespaces(store.key_prefix)


def _selection(
    store: StoreCore,
    table: HistoryTable,
    namespaces: NamespaceSelector,
    keys: Mapping[Namespace, Iterable[str]] | None,
    user_id: str | None,
    session_ids: Iterable[str],
) -> Selection:
    if callable(namespaces):
        chosen = [ns for ns in table.namespaces(store.key_prefix) if namespaces(ns)]
    else:
        chosen = list(dict.fromkeys(tuple(ns) for ns in namespaces))
    pairs = [(namespace_id(tuple(ns)), k) for ns, ks in (keys or {}).items() for k in ks]
    subjects = [_session_subject(s) for s in session_ids]
    if user_id is not None:
        subjects.append(subject_hash(user_id))
    return Selection([namespace_id(ns) for ns in chosen], pairs, subjects)


def history_export(
    store: StoreCore,
    namespaces: NamespaceSelector,
    *,
    keys: Mapping[Namespace, Iterable[str]] | None = None,
    user_id: str | None = None,
    session_ids: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """The history of the selected memories, as JSON-ready data.

    Memories deleted since are included: their events still hold content until an
    erasure makes them tombstones. Empty when the store records no history. The
    arguments select as for `tombstone_history`.

    Returns:
        ``[{"namespace": [...], "key": ..., "events": [MemoryEvent.to_dict(), ...]}]``.
    """
    table = store._history_file() if store.history_enabled else None
    if table is None:
        return []
    chosen = _selection(store, table, namespaces, keys, user_id, session_ids)
    out: dict[tuple[Namespace, str], list[dict[str, Any]]] = {}
    for e in table.select(store.key_prefix, chosen):
        assert e.namespace is not None  # tombstones are never selected
        out.setdefault((e.namespace, e.key), []).append(_memory_event(e).to_dict())
    return [{"namespace": list(ns), "key": k, "events": ev} for (ns, k), ev in out.items()]


def tombstone_history(
    store: StoreCore,
    namespaces: NamespaceSelector,
    *,
    keys: Mapping[Namespace, Iterable[str]] | None = None,
    user_id: str | None = None,
    session_ids: Iterable[str] = (),
    dry_run: bool = False,
) -> dict[str, list[tuple[str, ...]]]:
    """Make the history of the selected memories content-free tombstones.

    Each event keeps its position and time; its kind becomes ``"erased"``; its
    namespace labels, actor, reason, content, hashes and provenance go, and its key
    becomes `erasure.id_hash(*namespace, key)`, which `memory_history(store,
    namespace, key)` still finds. One transaction; a rerun finds nothing left to do.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        namespaces: Namespaces, or a predicate over every namespace with history
            (pass `UserNamespaces(user_id).owns`: it also reaches namespaces whose
            memories are all gone, which no registry lists any more); `()` for none.
        keys: Single memories besides, `{namespace: [key, ...]}` (shared-namespace
            memories whose provenance names the user).
        user_id: Also every memory with an event whose value's provenance named
            this user (`provenance.provenance_of`), even one deleted since.
        session_ids: Likewise for memories whose provenance named these sessions.
        dry_run: Report what would change; change nothing.

    Returns:
        ``{"history.events": [(*namespace, key), ...]}``, one entry per event (for
        `ErasureReceipt.add`); empty when nothing was selected or the store records
        no history.
    """
    table = store._history_file() if store.history_enabled else None
    if table is None:
        return {}
    chosen = _selection(store, table, namespaces, keys, user_id, session_ids)
    done = table.tombstone(store.key_prefix, chosen, _tombstone_key, dry_run=dry_run)
    return {HISTORY_PLACE: [(*ns, key) for ns, key in done]} if done else {}
