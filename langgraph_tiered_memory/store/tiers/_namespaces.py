"""Namespaces: stable ids, an order-preserving encoding, and `list_namespaces` matching."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from langgraph.store.base import MatchCondition

from langgraph_tiered_memory.store.tiers._items import Namespace


def namespace_id(namespace: Namespace) -> str:
    """Stable 32-hex-digit id of a namespace, used in collection and key names."""
    raw = json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def encode_namespace(namespace: Namespace) -> str:
    """Encode a namespace so that prefixes of the tuple are prefixes of the string."""
    return "".join(json.dumps(label, ensure_ascii=False) + "," for label in namespace)


def decode_namespace(encoded: str) -> Namespace:
    """Invert `encode_namespace`."""
    return tuple(json.loads("[" + encoded[:-1] + "]")) if encoded else ()


def has_prefix(namespace: Namespace, prefix: Sequence[str]) -> bool:
    """Whether `namespace` starts with the labels of `prefix` (exact labels)."""
    return len(namespace) >= len(prefix) and tuple(namespace[: len(prefix)]) == tuple(prefix)


def _condition_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(
            f"Unsupported namespace match type {condition.match_type!r}: use 'prefix' or 'suffix'."
        )
    return all(p == "*" or n == p for n, p in pairs)


def select_namespaces(
    namespaces: Iterable[Namespace],
    conditions: Sequence[MatchCondition] | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[Namespace]:
    """Apply `list_namespaces` matching, truncation, sorting and paging."""
    selected = list(namespaces)
    for c in conditions or ():
        path = tuple(c.path)
        if c.match_type == "prefix" and "*" not in path:  # the common case: one slice compare
            n = len(path)
            selected = [ns for ns in selected if ns[:n] == path]
        else:
            selected = [ns for ns in selected if _condition_matches(c, ns)]
    # Dicts keep the tiers' order: sorting an already sorted listing is linear.
    if max_depth is not None:
        result = sorted(dict.fromkeys(ns[:max_depth] for ns in selected))
    else:
        result = sorted(dict.fromkeys(selected))
    return result[offset : offset + limit]


def literal_prefix(conditions: Sequence[MatchCondition] | None) -> Namespace:
    """The wildcard-free leading labels of the first prefix condition, if any."""
    for c in conditions or ():
        if c.match_type == "prefix":
            out: list[str] = []
            for label in c.path:
                if label == "*":
                    break
                out.append(label)
            return tuple(out)
    return ()
