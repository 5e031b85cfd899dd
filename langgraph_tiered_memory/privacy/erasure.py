"""Erasure receipts and the rule of which namespaces hold a user's data (pure, no I/O).

`privacy.erase_user(store, user_id)` and `saver.erase_user(user_id)` remove everything held about
one user and return an `ErasureReceipt`: how many records went from each place, and a
hash of each removed id, never content or the raw id, so a receipt can be filed as
proof of erasure without becoming personal data itself.

Which namespaces are a user's (`UserNamespaces.owns`) is `ownership.namespace_owner`,
the rule `$user` searches use too (see `privacy.ownership`): the label after the user
label (`"users"`), else a namespace under one of the templates, by default the
library's own layouts. Pass more templates for layouts of your own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from langgraph_tiered_memory.privacy.ownership import DEFAULT_USER_TEMPLATES, namespace_owner

__all__ = [
    "DEFAULT_USER_TEMPLATES",
    "ErasureReceipt",
    "UserNamespaces",
    "check_user_id",
    "id_hash",
    "subject_hash",
]


def id_hash(*parts: str) -> str:
    """SHA-256 (hex) of an id made of `parts` (a namespace's labels and a key, say)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def subject_hash(user_id: str) -> str:
    """The receipt's name for the erased user: a hash, so the receipt holds no id."""
    return id_hash("user", user_id)


def check_user_id(user_id: object) -> str:
    """The user id, or a `ValueError` naming what is wrong with it."""
    if not isinstance(user_id, str) or not user_id or user_id != user_id.strip():
        raise ValueError(
            f"user_id must be a non-empty string without surrounding spaces, got {user_id!r}."
        )
    return user_id


@dataclass(frozen=True, slots=True)
class UserNamespaces:
    """Which namespaces are one user's (see the module docstring)."""

    user_id: str
    label: str = "users"
    templates: tuple[tuple[str, ...], ...] = DEFAULT_USER_TEMPLATES

    def __post_init__(self) -> None:
        check_user_id(self.user_id)
        for template in self.templates:
            if not template or not all(isinstance(p, str) and p for p in template):
                raise ValueError(
                    f"namespace template {template!r} must be a non-empty tuple of non-empty"
                    " strings, such as ('memories', '{user_id}')."
                )

    def owns(self, namespace: Sequence[str]) -> bool:
        """Whether `namespace` holds this user's data."""
        return namespace_owner(tuple(namespace), self.label, self.templates) == self.user_id

    def shared(self, namespace: Sequence[str]) -> bool:
        """Whether `namespace` belongs to no user (neither this one nor another)."""
        return namespace_owner(tuple(namespace), self.label, self.templates) is None


@dataclass(slots=True)
class ErasureReceipt:
    """What an erasure removed: counts per place and hashes of removed ids, no content.

    Places are dotted names such as ``"long.memories"``, ``"short.items"``,
    ``"graph.triples"``, ``"history.events"``, ``"sessions"``, ``"checkpoints"``.
    A dry run fills the same counts with what *would* be removed and removes nothing.
    """

    subject: str
    """`subject_hash(user_id)`."""
    dry_run: bool = False
    started_at: str = field(default_factory=lambda: _now())
    finished_at: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    removed: dict[str, list[str]] = field(default_factory=dict)
    """Place -> sorted hashes of the removed ids (`id_hash` of namespace labels + key)."""
    kept: list[str] = field(default_factory=list)
    """What was deliberately left, and why (no content, no raw ids)."""

    @classmethod
    def for_user(cls, user_id: str, *, dry_run: bool = False) -> ErasureReceipt:
        """An empty receipt for erasing `user_id`."""
        return cls(subject=subject_hash(check_user_id(user_id)), dry_run=dry_run)

    def add(self, place: str, ids: Iterable[Sequence[str] | str]) -> None:
        """Count removed ids of `place` and keep their hashes."""
        new = [id_hash(*((one,) if isinstance(one, str) else one)) for one in ids]
        self.removed[place] = sorted([*self.removed.get(place, []), *new])
        self.count(place, len(new))

    def count(self, place: str, n: int) -> None:
        """Count `n` removed records of `place` that have no id of their own."""
        self.counts[place] = self.counts.get(place, 0) + n

    def keep(self, reason: str) -> None:
        """Record something deliberately kept (once)."""
        if reason not in self.kept:
            self.kept.append(reason)

    def merge(self, other: ErasureReceipt) -> ErasureReceipt:
        """Fold another receipt of the same subject into this one; returns self."""
        if other.subject != self.subject:
            raise ValueError("cannot merge receipts of two different users.")
        for place, n in other.counts.items():
            self.count(place, n)
        for place, hashes in other.removed.items():
            self.removed[place] = sorted([*self.removed.get(place, []), *hashes])
        for reason in other.kept:
            self.keep(reason)
        return self

    def finish(self) -> ErasureReceipt:
        """Stamp the end time; returns self."""
        self.finished_at = _now()
        return self

    @property
    def total(self) -> int:
        """Records removed (or, in a dry run, to remove) over every place."""
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        """The receipt as JSON-ready data."""
        return {
            "subject": self.subject,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "total": self.total,
            "counts": dict(sorted(self.counts.items())),
            "removed": {k: list(v) for k, v in sorted(self.removed.items())},
            "kept": list(self.kept),
        }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
