"""The memory index's rows, as both indexes (`DocMirror`, `RedisIndex`) read and write them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["ContextInputs", "MemoryRow", "MemoryStats"]


class MemoryRow(NamedTuple):
    """What the memory index keeps of one memory besides its statistics."""

    text: str
    """Keyword-indexed text of the memory itself."""
    context: str
    """Text of the memory written just before it in the namespace (contextual key)."""
    time_text: str
    """Its event time in words, with relative dates resolved (time key)."""
    memory_type: str
    importance: float
    occurred_at: float | None
    created_at: float


class MemoryStats(NamedTuple):
    """Ranking fields and access statistics of one memory."""

    seq: int
    """Position of the memory in its namespace's write order (first write)."""
    memory_type: str
    importance: float
    occurred_at: float | None
    created_at: float
    access_count: int
    last_accessed: float | None


class ContextInputs(NamedTuple):
    """What a batch of memory writes to one namespace reads before embedding its context keys."""

    memories: frozenset[str]
    """Those of the asked keys that are memories already."""
    previous: Mapping[str, str | None]
    """Each asked key -> own text of the memory written just before it (for a key not
    stored yet, the namespace's last memory); None: no earlier memory."""
