"""Memory records of the long-term tier.

An item stored on the long-term tier of a store in `"memory"` scoring mode is a
memory. Its value is a plain dict with a few fields the store understands; any other
field is kept as the user's metadata:

- `content` (str): the text indexed by default (the store's `index["fields"]`
  decide what is embedded and keyword-indexed).
- `memory_type`: `"experience"` (default), `"preference"`, `"fact"` or `"skill"`.
- `importance`: a number from 0 to 1, default 0.5.
- `occurred_at`: when the remembered event happened, an ISO 8601 string (optional).

The store manages `created_at`, `updated_at`, `last_accessed` and `access_count`
outside the value, so a `put` never clobbers them; read them with
`store.get_memory(namespace, key)`, which returns a `MemoryEntry`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, get_args

from langgraph_tiered_memory.errors import InvalidItemError

__all__ = [
    "MemoryEntry",
    "MemoryType",
    "MEMORY_TYPES",
    "MemoryFields",
    "memory_fields",
    "parse_occurred_at",
]

MemoryType = Literal["experience", "preference", "fact", "skill"]
"""The kinds of memory."""

MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)

DEFAULT_IMPORTANCE = 0.5
DEFAULT_MEMORY_TYPE = "experience"
RESERVED_FIELDS = ("content", "memory_type", "importance", "occurred_at")


@dataclass(frozen=True, slots=True)
class MemoryFields:
    """The validated memory fields of one value (what ranking needs)."""

    memory_type: str
    importance: float
    occurred_at: float | None
    """Epoch seconds, or None."""


def parse_occurred_at(value: Any, *, key: str = "?") -> float | None:
    """Parse an `occurred_at` value (ISO 8601 string or datetime) to epoch seconds.

    A value without a time zone is taken as UTC.

    Raises:
        InvalidItemError: the value is not an ISO 8601 date or date-time.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        from dateutil.parser import isoparse

        try:
            dt = isoparse(value)
        except (ValueError, OverflowError) as e:
            raise InvalidItemError(
                f"occurred_at of memory {key!r} must be an ISO 8601 date or date-time such as"
                f" '2023-05-08' or '2023-05-08T13:56:00+00:00', got {value!r} ({e})."
            ) from e
    else:
        raise InvalidItemError(
            f"occurred_at of memory {key!r} must be an ISO 8601 string, got"
            f" {type(value).__name__} {value!r}."
        )
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _check_type(mtype: Any, key: str) -> str:
    if mtype not in MEMORY_TYPES:
        raise InvalidItemError(
            f"memory_type of memory {key!r} must be one of {list(MEMORY_TYPES)}, got {mtype!r}."
        )
    return str(mtype)


def _check_importance(importance: Any, key: str) -> float:
    if (
        isinstance(importance, bool)
        or not isinstance(importance, (int, float))
        or not math.isfinite(importance)
        or not 0.0 <= importance <= 1.0
    ):
        raise InvalidItemError(
            f"importance of memory {key!r} must be a number from 0 to 1, got {importance!r}."
            " Use 0 for trivial and 1 for essential memories; leave it out for 0.5."
        )
    return float(importance)


def memory_fields(value: dict[str, Any], *, key: str = "?") -> MemoryFields:
    """Validate the memory fields of a value and return them with defaults filled in.

    Raises:
        InvalidItemError: `importance` is not a number from 0 to 1 (NaN included),
            `memory_type` is not one of `MEMORY_TYPES`, `content` is not a string, or
            `occurred_at` is not ISO 8601.
    """
    content = value.get("content")
    if content is not None and not isinstance(content, str):
        raise InvalidItemError(
            f"content of memory {key!r} must be a string, got {type(content).__name__}."
        )
    return MemoryFields(
        memory_type=_check_type(value.get("memory_type", DEFAULT_MEMORY_TYPE), key),
        importance=_check_importance(value.get("importance", DEFAULT_IMPORTANCE), key),
        occurred_at=parse_occurred_at(value.get("occurred_at"), key=key),
    )


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(slots=True)
class MemoryEntry:
    """One memory with the statistics the store keeps about it.

    Timestamps are aware UTC datetimes. `metadata` holds every field of the stored
    value except `content`, `memory_type` and `importance` (so `occurred_at`,
    `redactions` when the store redacted something, and the user's own fields).

    `MemoryEntry(id=..., content=...)` builds a new memory with the design's defaults:
    type `"experience"`, importance 0.5, created now, never accessed.

    Raises:
        InvalidItemError: `importance` is not a number from 0 to 1, or `memory_type`
            is not one of `MEMORY_TYPES`.
    """

    id: str
    content: str
    memory_type: str = DEFAULT_MEMORY_TYPE
    importance: float = DEFAULT_IMPORTANCE
    created_at: datetime = field(default_factory=_utc_now)
    last_accessed: datetime | None = None
    """The last time a search or get returned the memory; None if never."""
    access_count: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    namespace: tuple[str, ...] = ()
    updated_at: datetime | None = None
    occurred_at: datetime | None = None

    def __post_init__(self) -> None:
        self.memory_type = _check_type(self.memory_type, self.id)
        self.importance = _check_importance(self.importance, self.id)

    @classmethod
    def from_value(
        cls,
        *,
        key: str,
        namespace: tuple[str, ...],
        value: dict[str, Any],
        created_at: float,
        updated_at: float,
        last_accessed: float | None,
        access_count: int,
    ) -> MemoryEntry:
        """Build an entry from a stored value and its statistics (epoch seconds)."""
        fields = memory_fields(value, key=key)

        def dt(ts: float | None) -> datetime | None:
            return None if ts is None else datetime.fromtimestamp(ts, tz=timezone.utc)

        return cls(
            id=key,
            content=str(value.get("content") or ""),
            memory_type=fields.memory_type,
            importance=fields.importance,
            created_at=datetime.fromtimestamp(created_at, tz=timezone.utc),
            last_accessed=dt(last_accessed),
            access_count=int(access_count),
            metadata={k: v for k, v in value.items() if k not in RESERVED_FIELDS[:3]},
            namespace=namespace,
            updated_at=dt(updated_at),
            occurred_at=dt(fields.occurred_at),
        )
