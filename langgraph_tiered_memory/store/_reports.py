"""Typed reports of the maintenance passes and of the forgetting graph.

Each report is a `TypedDict`: a plain `dict` at runtime (code that indexes it by key,
serialises it or compares it with a dict keeps working) whose keys mypy checks.
"""

from __future__ import annotations

from typing_extensions import TypedDict


class ForgottenRow(TypedDict):
    """One memory forgotten (or, in a dry run, that would be forgotten)."""

    id: str
    """The memory's key."""
    namespace: list[str]
    """The memory's namespace, as a list."""
    content_preview: str
    """The first 80 characters of its `content` (empty without one)."""
    reason: str
    """The rule that flagged it, e.g. `"decay 0.85 > 0.8"` or `"ttl expired"`."""


class GCReport(TypedDict):
    """What `garbage_collect` did (or, with `dry_run=True`, would do)."""

    forgotten_count: int
    """Number of rows in `details`."""
    details: list[ForgottenRow]
    """One row per forgotten memory."""
    scanned: int
    """Memories read (statistics only)."""
    dry_run: bool
    """Whether the pass only reported."""


class ConsolidationRecord(TypedDict):
    """One merged memory written by `consolidate` (or, in a dry run, planned)."""

    key: str
    """The merged memory's key."""
    namespace: list[str]
    """Its namespace, as a list."""
    sources: list[str]
    """Keys of the memories merged into it (deleted or down-weighted)."""
    content: str
    """The merged content."""
    importance: float
    """The highest importance of its sources."""


class PromotionSkip(TypedDict):
    """A short-term item `promote` accepted but could not promote (`Promoted.skipped`)."""

    namespace: list[str]
    """The short-term item's namespace, as a list."""
    key: str
    """Its key."""
    reason: str
    """Why it stayed: not a valid memory, or no user in its namespace."""


class ForgettingReport(GCReport):
    """The forgetting graph's output report: a `GCReport` plus the merges and the time."""

    consolidated: list[ConsolidationRecord]
    """The merged memories, in the order they were written (empty in a dry run)."""
    now: float | None
    """The instant every step judged at, in epoch seconds."""
