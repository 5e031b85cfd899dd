"""Forgetting policy: how much a memory has decayed and whether to forget it (pure).

decay = (1 - exp(-ln 2 * days since last access / half-life))
        * (1 - importance * importance_factor - log1p(access_count) * access_factor)

clamped to [0, 1]; "last access" is the creation time for a memory never accessed.
A memory is forgotten when any rule of the policy holds (the default policy):

- its decay is above 0.8;
- it is older than 90 days and was never accessed;
- it is older than 180 days and its importance is below 0.4;
- its importance is below 0.2.

`GARBAGE_COLLECT_POLICY` is the simpler preset: older than 30 days, or importance
below 0.3. A memory whose value has `"pinned": True` is never forgotten.
"""

from __future__ import annotations

import math
import time
from typing import Any

from typing_extensions import TypedDict

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.memory import MemoryEntry

__all__ = [
    "ForgettingPolicy",
    "DEFAULT_FORGETTING_POLICY",
    "GARBAGE_COLLECT_POLICY",
    "PINNED_FIELD",
    "ForgettingRules",
    "calculate_decay",
    "should_forget",
]

DAY = 86_400.0
PINNED_FIELD = "pinned"
"""Value field that protects a memory from forgetting when it is `True`."""


class ForgettingPolicy(TypedDict, total=False):
    """The decay formula's constants and the forgetting rules; None switches a rule off."""

    half_life_days: float
    """Half-life of the decay, in days. Default 30."""
    importance_factor: float
    """How much importance slows decay. Default 0.2."""
    access_factor: float
    """How much each `log1p(access_count)` slows decay. Default 0.05."""
    decay_threshold: float | None
    """Forget when decay is above this. Default 0.8."""
    unaccessed_max_days: float | None
    """Forget when older than this and never accessed. Default 90."""
    stale_max_days: float | None
    """Forget when older than this and less important than `stale_importance`.
    Default 180."""
    stale_importance: float
    """See `stale_max_days`. Default 0.4."""
    min_importance: float | None
    """Forget when importance is below this. Default 0.2."""
    max_age_days: float | None
    """Forget when older than this, whatever else. Default None (off)."""
    max_memories: int | None
    """Keep at most this many memories per namespace: when more survive the other
    rules, the most decayed (then the least important, then the oldest) are forgotten.
    This bounds the store however memories are used. Default None (off)."""


DEFAULT_FORGETTING_POLICY: ForgettingPolicy = {
    "half_life_days": 30.0,
    "importance_factor": 0.2,
    "access_factor": 0.05,
    "decay_threshold": 0.8,
    "unaccessed_max_days": 90.0,
    "stale_max_days": 180.0,
    "stale_importance": 0.4,
    "min_importance": 0.2,
    "max_age_days": None,
    "max_memories": None,
}
"""The seed's forgetting rules."""

GARBAGE_COLLECT_POLICY: ForgettingPolicy = {
    "decay_threshold": None,
    "unaccessed_max_days": None,
    "stale_max_days": None,
    "min_importance": 0.3,
    "max_age_days": 30.0,
}
"""The seed's simpler garbage-collection preset: older than 30 days or importance < 0.3."""


def _policy(policy: ForgettingPolicy | None) -> dict[str, Any]:
    merged: dict[str, Any] = {**DEFAULT_FORGETTING_POLICY, **(policy or {})}
    unknown = set(merged) - set(DEFAULT_FORGETTING_POLICY)
    if unknown:
        raise ConfigurationError(
            f"Unknown forgetting policy keys {sorted(unknown)}; valid keys are"
            f" {sorted(DEFAULT_FORGETTING_POLICY)}."
        )
    for key, value in merged.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigurationError(f"forgetting policy {key} must be >= 0, got {value!r}.")
    if merged["half_life_days"] <= 0:
        raise ConfigurationError("forgetting policy half_life_days must be > 0.")
    cap = merged["max_memories"]
    if cap is not None and (not isinstance(cap, int) or cap < 1):
        raise ConfigurationError(
            f"forgetting policy max_memories must be a whole number >= 1 or None, got {cap!r}."
        )
    return merged


class ForgettingRules:
    """A validated `ForgettingPolicy`, applied to raw statistics (used by every pass).

    Args:
        policy: Overrides of `DEFAULT_FORGETTING_POLICY`.

    Raises:
        ConfigurationError: for an unknown key or a negative constant.
    """

    def __init__(self, policy: ForgettingPolicy | None = None) -> None:
        cfg = _policy(policy)
        self.half_life = float(cfg["half_life_days"])
        self.importance_factor = float(cfg["importance_factor"])
        self.access_factor = float(cfg["access_factor"])
        self.decay_threshold: float | None = cfg["decay_threshold"]
        self.unaccessed_max_days: float | None = cfg["unaccessed_max_days"]
        self.stale_max_days: float | None = cfg["stale_max_days"]
        self.stale_importance = float(cfg["stale_importance"])
        self.min_importance: float | None = cfg["min_importance"]
        self.max_age_days: float | None = cfg["max_age_days"]
        self.max_memories: int | None = cfg["max_memories"]

    def decay(self, importance: float, access_count: int, idle_days: float) -> float:
        """The decay of a memory idle for `idle_days` (see the module docstring)."""
        fade = 1.0 - math.exp(-_LN2 * max(0.0, idle_days) / self.half_life)
        shield = (
            1.0
            - importance * self.importance_factor
            - math.log1p(max(0, access_count)) * self.access_factor
        )
        return min(1.0, max(0.0, fade * shield))

    def retention(
        self,
        *,
        importance: float,
        access_count: int,
        created_at: float,
        last_accessed: float | None,
        now: float,
    ) -> tuple[float, float, float]:
        """Sort key of `max_memories`: the smallest is forgotten first.

        The most decayed memory first, then the least important, then the oldest.
        """
        idle = _idle_days(created_at, last_accessed, now)
        return (-self.decay(importance, access_count, idle), importance, created_at)

    def reason(
        self,
        *,
        importance: float,
        access_count: int,
        created_at: float,
        last_accessed: float | None,
        now: float,
    ) -> str:
        """Why a memory with these statistics is forgotten, or "" when it is kept.

        Pinning is not checked here (it lives in the value).
        """
        age = max(0.0, (now - created_at) / DAY)
        idle = _idle_days(created_at, last_accessed, now)
        threshold = self.decay_threshold
        if threshold is not None:
            decay = self.decay(importance, access_count, idle)
            if decay > threshold:
                return f"decay {decay:.2f} > {threshold:g}"
        limit = self.unaccessed_max_days
        if limit is not None and age > limit and access_count == 0:
            return f"never accessed in {age:.0f} days (> {limit:g})"
        stale = self.stale_max_days
        if stale is not None and age > stale and importance < self.stale_importance:
            return (
                f"{age:.0f} days old (> {stale:g}) with importance {importance:g}"
                f" < {self.stale_importance:g}"
            )
        floor = self.min_importance
        if floor is not None and importance < floor:
            return f"importance {importance:g} < {floor:g}"
        max_age = self.max_age_days
        if max_age is not None and age > max_age:
            return f"{age:.0f} days old (> {max_age:g})"
        return ""


_LN2 = math.log(2)


def _idle_days(created_at: float, last_accessed: float | None, now: float) -> float:
    """Days since the last access (since creation for a memory never accessed)."""
    return max(0.0, (now - (created_at if last_accessed is None else last_accessed)) / DAY)


def _stats(entry: MemoryEntry) -> dict[str, Any]:
    return {
        "importance": entry.importance,
        "access_count": entry.access_count,
        "created_at": entry.created_at.timestamp(),
        "last_accessed": entry.last_accessed.timestamp() if entry.last_accessed else None,
    }


def calculate_decay(
    entry: MemoryEntry, *, now: float | None = None, policy: ForgettingPolicy | None = None
) -> float:
    """How far a memory has decayed, from 0 (fresh) to 1 (gone).

    Args:
        entry: The memory (with its access statistics).
        now: Current time in epoch seconds (defaults to the wall clock).
        policy: Overrides of `DEFAULT_FORGETTING_POLICY`.

    Example:
        ```python
        from datetime import datetime, timezone
        from langgraph_tiered_memory import MemoryEntry
        from langgraph_tiered_memory.ranking.forgetting import calculate_decay

        t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
        entry = MemoryEntry("m", "likes tea", "preference", 0.0, t0, None, 0)
        assert abs(calculate_decay(entry, now=t0.timestamp() + 30 * 86400) - 0.5) < 1e-9
        ```
    """
    rules = ForgettingRules(policy)
    now = time.time() if now is None else now
    stats = _stats(entry)
    idle = _idle_days(stats["created_at"], stats["last_accessed"], now)
    return rules.decay(entry.importance, entry.access_count, idle)


def should_forget(
    entry: MemoryEntry, *, now: float | None = None, policy: ForgettingPolicy | None = None
) -> tuple[bool, str]:
    """Whether to forget a memory, and why.

    Args:
        entry: The memory (with its access statistics).
        now: Current time in epoch seconds (defaults to the wall clock).
        policy: Overrides of `DEFAULT_FORGETTING_POLICY` (e.g. `GARBAGE_COLLECT_POLICY`).

    Returns:
        (True, reason) for the first rule that holds, else (False, "").

    Example:
        ```python
        from datetime import datetime, timezone
        from langgraph_tiered_memory import MemoryEntry
        from langgraph_tiered_memory.ranking.forgetting import should_forget

        t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
        parking = MemoryEntry("parking", "parked on level 3", "experience", 0.1, t0, None, 0)
        tea = MemoryEntry("tea", "likes green tea", "preference", 0.9, t0, None, 0)
        week_later = t0.timestamp() + 7 * 86_400
        assert should_forget(parking, now=week_later) == (True, "importance 0.1 < 0.2")
        assert should_forget(tea, now=week_later) == (False, "")
        ```
    """
    rules = ForgettingRules(policy)
    now = time.time() if now is None else now
    if entry.metadata.get(PINNED_FIELD) is True:
        return False, ""
    reason = rules.reason(now=now, **_stats(entry))
    return bool(reason), reason
