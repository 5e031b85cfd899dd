"""The records the store and its tiers pass around, and the JSON they are stored as.

`StoredItem` is an item as a tier returns it, `ItemWrite` one planned write; `loads`
parses stored JSON without losing big integers. Nothing here does I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from langgraph_tiered_memory.graph.types import Triple

Namespace = tuple[str, ...]


@dataclass(slots=True)
class StoredItem:
    """An item as a tier returns it (timestamps are epoch seconds)."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    ttl: float | None = None
    """TTL in minutes, or None when the item never expires."""
    expires_at: float | None = None
    """Epoch seconds after which the item is gone, or None."""

    def expired(self, now: float) -> bool:
        """Whether the item's TTL has run out at `now`."""
        return self.expires_at is not None and self.expires_at <= now


@dataclass(slots=True)
class ItemWrite:
    """One planned write: an upsert (value set) or a delete (value None)."""

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    encoded: str | None
    """The value as compact JSON, computed once while validating."""
    vectors: list[list[float]] | None = None
    """Embeddings of the item's indexed texts; None when the item is not indexed."""
    ttl: float | None = None
    expires_at: float | None = None
    """Expiry kept by a rewrite (epoch seconds); None: `now + ttl` when there is a TTL."""
    keyword_text: str | None = None
    """Text for the keyword index (memory mode on the long tier), or None."""
    context_text: str | None = None
    """Own text of the memory written before it in its namespace (contextual key)."""
    time_text: str | None = None
    """Event time in words (time key)."""
    key_vectors: int = 0
    """How many of `vectors` (the last ones) are index keys, not field texts."""
    memory: Any = None
    """The value's validated `MemoryFields` (memory mode on the long tier), or None."""
    triples: tuple[Triple, ...] | None = None
    """Knowledge-graph facts of an upsert: after the write the item supports exactly
    these triples. None: the write changes nothing in the graph (graph off). Deletes
    drop the key's triples whatever this holds."""
    user_id: str | None = None
    """The user the namespace belongs to, for the graph's tenant scope (None: shared)."""


def loads(text: str | bytes) -> Any:
    """Parse stored JSON with orjson; with `json` when it may hold huge integers.

    orjson turns integers beyond 64 bits into floats, so text with 19 or more digits
    in a row goes to the standard library instead.
    """
    probe = text if isinstance(text, str) else text.decode("utf-8", "replace")
    if _LONG_DIGITS.search(probe):
        return json.loads(text)
    return orjson.loads(text)


_LONG_DIGITS = re.compile(r"\d{19}")


def to_datetime(ts: float) -> datetime:
    """Convert epoch seconds to an aware UTC datetime."""
    return datetime.fromtimestamp(ts, tz=timezone.utc)
