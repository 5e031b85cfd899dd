"""Memory history: the events of a long-term memory, and who caused them (no I/O).

Every change to a long-term memory appends a `MemoryEvent` (when, what, which actor,
why, the hash of the content before and after). The store writes them next to the
memory, in the same commit; `privacy.memory_history(store, namespace, key)` reads them back.

The actor and reason of a write come from the context it runs in: the library's own
paths wrap their writes in `acting("tool" | "extraction" | "forgetting" |
"consolidation", reason=...)`; a direct `store.put` is the `"user"`'s. The context is a
`contextvars.ContextVar`, so it follows threads started with a copied context and
asyncio tasks.

Erasing a user replaces their events with content-free tombstones: the event kind
``"erased"``, its time, and hashes; no namespace labels, key, reason or content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Literal, get_args

__all__ = [
    "ACTORS",
    "EVENTS",
    "Actor",
    "EventKind",
    "MemoryEvent",
    "acting",
    "content_hash",
    "current_actor",
]

EventKind = Literal[
    "add", "update", "merged", "reinforced", "forgotten", "deleted", "expired", "erased"
]
EVENTS: tuple[EventKind, ...] = get_args(EventKind)
"""add: first write; update: new content; merged: consolidated into another memory (or
written as the merge of others); reinforced: importance changed by use; forgotten:
removed by decay / budget; deleted: removed by a delete; expired: TTL ran out; erased:
a tombstone left by `erase_user`."""

Actor = Literal["user", "tool", "extraction", "forgetting", "consolidation", "system"]
ACTORS: tuple[Actor, ...] = get_args(Actor)

_ACTOR: ContextVar[tuple[Actor, str | None]] = ContextVar(
    "langgraph_tiered_memory_actor", default=("user", None)
)


@contextmanager
def acting(actor: Actor, reason: str | None = None) -> Iterator[None]:
    """Attribute the memory writes made inside the block to `actor`, with `reason`."""
    if actor not in ACTORS:
        raise ValueError(f"actor must be one of {list(ACTORS)}, got {actor!r}.")
    token = _ACTOR.set((actor, reason))
    try:
        yield
    finally:
        _ACTOR.reset(token)


def current_actor() -> tuple[Actor, str | None]:
    """The (actor, reason) of the writes made now."""
    return _ACTOR.get()


def content_hash(content: str | None) -> str | None:
    """SHA-256 (hex) of a memory's content text, or None for no content."""
    if content is None:
        return None
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One change to a long-term memory."""

    seq: int
    """Order of the event within the memory's history (1, 2, ...)."""
    at: float
    """When, in epoch seconds of the store's clock."""
    event: EventKind
    actor: Actor | None
    """Who caused it; None on a tombstone."""
    reason: str | None
    """Why, in words (``"importance 0.04 below 0.05"``, ``"merged into k9"``); None on
    a tombstone."""
    previous_hash: str | None
    """`content_hash` of the content before the event (None for an add)."""
    content_hash: str | None
    """`content_hash` of the content after it (None when the memory is gone)."""
    content: str | None = None
    """The content after the event, as stored (redacted); None on removals and
    tombstones."""

    def to_dict(self) -> dict[str, object]:
        """The event as JSON-ready data."""
        return asdict(self)
