"""The history events of long-term writes: planned from the actor's context, or recovered.

`plan_events` turns one namespace's part of a batch into `HistoryRow`s (pure: it reads the
actor set by `privacy.history.acting` and the kind and reasons set by `as_event` and
`reasons_for`). `recovered_events` makes the events of writes interrupted before their
commit, when the tier repairs them on open. The tiers record the rows in their index in
the same step as the write; the store reads them back (`store._history`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from langgraph_tiered_memory.privacy.erasure import id_hash, subject_hash
from langgraph_tiered_memory.privacy.history import EventKind, content_hash, current_actor
from langgraph_tiered_memory.privacy.provenance import provenance_of
from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers.sqlite_history import HistoryRow

_EVENT: ContextVar[EventKind | None] = ContextVar("langgraph_tiered_memory_event", default=None)
_REASONS: ContextVar[Mapping[tuple[Namespace, str], str] | None] = ContextVar(
    "langgraph_tiered_memory_reasons", default=None
)


@contextmanager
def as_event(event: EventKind) -> Iterator[None]:
    """Record the long-term writes made inside the block as `event` events."""
    token = _EVENT.set(event)
    try:
        yield
    finally:
        _EVENT.reset(token)


def in_event() -> bool:
    """Whether the caller is inside an `as_event` block."""
    return _EVENT.get() is not None


@contextmanager
def reasons_for(reasons: Mapping[tuple[Namespace, str], str]) -> Iterator[None]:
    """Give the writes of the block's (namespace, key) pairs their own reasons."""
    token = _REASONS.set(reasons)
    try:
        yield
    finally:
        _REASONS.reset(token)


def history_content(value: Mapping[str, Any]) -> str:
    """The content an event keeps of a value: its `content` string, else its JSON."""
    content = value.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def plan_events(
    namespace: Namespace,
    upserts: Iterable[tuple[str, Mapping[str, Any]]],
    previous: Mapping[str, Mapping[str, Any]],
    deletes: Iterable[str],
    now: float,
    *,
    event: EventKind | None = None,
    hashes: Mapping[str, str | None] | None = None,
) -> list[HistoryRow]:
    """The events of one namespace's part of a batch (pure; reads the actor's context).

    Args:
        namespace: The namespace written.
        upserts: (key, new value) of the items written.
        previous: Stored values the batch replaces or removes, by key.
        deletes: Keys removed; those with no stored value leave no event.
        now: The store clock's time of the write.
        event: The kind of every event (a TTL sweep: ``"expired"``); None: planned from
            the context (see the module notes).
        hashes: Content hashes of stored values an upsert replaces, by key, for those
            not in `previous` (a replaced value is only needed for its hash).
    """
    actor, reason = current_actor()
    forced = event or _EVENT.get()
    reasons = _REASONS.get() or {}
    if event == "expired" and (actor, reason) == ("user", None):
        actor, reason = "system", "ttl expired"
    rows: list[HistoryRow] = []
    hashes = hashes or {}
    for key, value in upserts:
        before = previous.get(key)
        held = before is not None or key in hashes
        kind = forced or _kind(actor, removed=False, new=not held)
        text = history_content(value)
        rows.append(
            HistoryRow(
                key,
                now,
                kind,
                actor,
                reasons.get((namespace, key), reason),
                hashes.get(key) if before is None else content_hash(history_content(before)),
                content_hash(text),
                text,
                _subjects(value),
            )
        )
    for key in deletes:
        before = previous.get(key)
        if before is None:
            continue
        rows.append(
            HistoryRow(
                key,
                now,
                forced or _kind(actor, removed=True, new=False),
                actor,
                reasons.get((namespace, key), reason),
                content_hash(history_content(before)),
                None,
                None,
                _subjects(before),
            )
        )
    return rows


RECOVERED = "recovered after an interrupted write"
"""The reason of the events of writes repaired when the store is opened again."""

_REMOVALS = frozenset({"deleted", "forgotten", "expired", "erased"})


class Written(Protocol):
    """What `recovered_events` reads of a stored document."""

    @property
    def value(self) -> dict[str, Any]: ...

    @property
    def updated_at(self) -> float: ...

    @property
    def write_id(self) -> str: ...


def recovered_events(
    namespace: Namespace,
    keys: Sequence[str],
    current: Mapping[str, Written],
    before: Mapping[str, Written],
    last: Mapping[str, tuple[str, str | None]],
    *,
    now: float,
) -> list[HistoryRow]:
    """The events of writes interrupted before their commit, repaired from Chroma.

    The actor and reason of the interrupted write are lost: the events are the
    ``"system"``'s, with reason `RECOVERED`. An upsert takes the time of its document
    (the store clock's time of the write); a delete takes `now`.

    Args:
        namespace: The namespace repaired.
        keys: Its keys whose writes were interrupted.
        current: The documents Chroma holds for them.
        before: The documents the file's copy held (empty without a copy): a key whose
            document is still the same write did not change.
        last: The (event, content hash) of each key's last recorded event.
        now: The time of deletes.
    """
    rows: list[HistoryRow] = []
    for key in keys:
        doc, prev = current.get(key), before.get(key)
        event, last_hash = last.get(key, ("deleted", None))
        stored = event not in _REMOVALS
        prev_hash = content_hash(history_content(prev.value)) if prev is not None else None
        if prev is None and stored:
            prev_hash = last_hash
        if doc is None:
            if prev_hash is not None:
                subjects = None if prev is None else _subjects(prev.value)
                rows.append(
                    HistoryRow(
                        key, now, "deleted", "system", RECOVERED, prev_hash, None, None, subjects
                    )
                )
            continue
        if prev is not None and prev.write_id == doc.write_id:
            continue  # Chroma never took the write
        text = history_content(doc.value)
        new_hash = content_hash(text)
        if prev is None and stored and last_hash == new_hash:
            continue  # no copy to tell, and nothing new to record
        kind: EventKind = "add" if prev_hash is None else "update"
        rows.append(
            HistoryRow(
                key,
                float(doc.updated_at),
                kind,
                "system",
                RECOVERED,
                prev_hash,
                new_hash,
                text,
                _subjects(doc.value),
            )
        )
    return rows


def _kind(actor: str, *, removed: bool, new: bool) -> EventKind:
    if actor == "consolidation":
        return "merged"
    if removed:
        return "forgotten" if actor == "forgetting" else "deleted"
    return "add" if new else "update"


def _session_subject(session_id: str) -> str:
    return id_hash("session", session_id)


def _subjects(value: Mapping[str, Any]) -> str | None:
    """Hashes of the users and sessions the value's provenance names (None: none)."""
    found = provenance_of(value)
    hashes = [subject_hash(u) for u in sorted(found.user_ids)]
    hashes += [_session_subject(s) for s in sorted(found.session_ids)]
    return " ".join(hashes) or None
