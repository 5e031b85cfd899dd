"""Which user a namespace belongs to: the one rule of search, erase and export (pure).

A namespace belongs to user ``u`` when

1. the label after the user label (``"users"`` by default, `ScoringConfig.user_label`)
   is ``u``, anywhere in the namespace: ``("users", "u", "memories")``,
   ``("team", "users", "u")``; or, when it has no such label,
2. it falls under one of the per-user templates filled with ``u``: by default the
   library's own layouts, ``("memories", "{user_id}")`` (the memory agent, tools and
   profile), ``("profiles", "{user_id}")`` (the profile cache) and
   ``("short_term", "{user_id}")`` (short-term items promotion treats as the user's).

Anything else belongs to no user (a shared namespace). The user label wins over a
template, so ``("memories", "users", "bob")`` is bob's, never the data of a user whose
id is ``"users"``. The same rule decides what a ``$user`` search may see, what
``erase_user`` removes and what ``export_user`` returns, so the three cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "DEFAULT_USER_TEMPLATES",
    "USER_PLACEHOLDER",
    "namespace_owner",
    "template_owner",
    "user_scope",
]

USER_PLACEHOLDER = "{user_id}"
"""The placeholder of a template label that stands for the user id."""

DEFAULT_USER_TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("memories", USER_PLACEHOLDER),
    ("profiles", USER_PLACEHOLDER),
    ("short_term", USER_PLACEHOLDER),
)
"""Namespace prefixes that belong to a user besides its `"users"` scope.

`("short_term", "{user_id}")` is promotion's layout: `promotion.long_term_namespace`
reads the label after `"short_term"` as the user (`("short_term", "u1", "s1")` is
promoted to `("users", "u1", "memories", "s1")`).
"""


def user_scope(namespace: Sequence[str], label: str) -> str | None:
    """The user id of a namespace: the label after the first `label` ("users"), if any."""
    for i, part in enumerate(namespace[:-1]):
        if part == label:
            return namespace[i + 1]
    return None


def template_owner(template: Sequence[str], namespace: Sequence[str]) -> str | None:
    """The user `namespace` belongs to under `template`, or None when it does not fit.

    A template label is literal, or holds ``{user_id}`` once (``"{user_id}"``,
    ``"user-{user_id}"``); the namespace fits when it is at least as long as the
    template, every literal label is equal and every placeholder label gives the same
    non-empty id.

    Examples:
        >>> from langgraph_tiered_memory.privacy.ownership import template_owner
        >>> template_owner(("memories", "{user_id}"), ("memories", "u1", "notes"))
        'u1'
        >>> template_owner(("notes", "user-{user_id}"), ("notes", "user-u2"))
        'u2'
        >>> template_owner(("memories", "{user_id}"), ("profiles", "u1")) is None
        True
    """
    if len(namespace) < len(template):
        return None
    owner: str | None = None
    for pattern, part in zip(template, namespace, strict=False):
        if USER_PLACEHOLDER not in pattern:
            if pattern != part:
                return None
            continue
        head, _, tail = pattern.partition(USER_PLACEHOLDER)
        if len(part) <= len(head) + len(tail) or not (
            part.startswith(head) and part.endswith(tail)
        ):
            return None
        found = part[len(head) : len(part) - len(tail)]
        if owner is not None and found != owner:
            return None
        owner = found
    return owner


def namespace_owner(
    namespace: Sequence[str],
    label: str = "users",
    templates: Sequence[Sequence[str]] = DEFAULT_USER_TEMPLATES,
) -> str | None:
    """The user `namespace` belongs to, or None for a shared namespace.

    Args:
        namespace: The namespace.
        label: The user label (`ScoringConfig.user_label`).
        templates: Per-user namespace templates (see the module docstring).

    Examples:
        >>> from langgraph_tiered_memory.privacy.ownership import namespace_owner
        >>> namespace_owner(("users", "u1", "memories"))
        'u1'
        >>> namespace_owner(("memories", "u1"))
        'u1'
        >>> namespace_owner(("memories", "users", "bob", "s1"))
        'bob'
        >>> namespace_owner(("shared", "kb")) is None
        True
    """
    scope = user_scope(namespace, label)
    if scope is not None:
        return scope
    for template in templates:
        owner = template_owner(template, namespace)
        if owner is not None:
            return owner
    return None
