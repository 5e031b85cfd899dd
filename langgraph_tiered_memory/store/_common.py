"""Pure helpers shared by the store and its tiers: validation, filters, namespaces.

Nothing here does I/O. The store plans a batch with these helpers before it touches
Redis or Chroma, so a bad op fails the batch before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import orjson
from langgraph.store.base import InvalidNamespaceError, MatchCondition

from langgraph_tiered_memory.errors import InvalidFilterError, InvalidItemError

MAX_KEY_BYTES = 1024
"""Longest item key accepted, in UTF-8 bytes."""

MAX_LABEL_BYTES = 256
"""Longest namespace label accepted, in UTF-8 bytes."""

FILTER_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_FILTER_KEY = re.compile(r"^[\w.\-]+$")

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


# --------------------------------------------------------------------------- validation


def validate_namespace(namespace: Any) -> Namespace:
    """Check a namespace used for a write and return it as a tuple.

    Raises:
        InvalidNamespaceError: the namespace is empty, has a non-string, empty or
            dotted label, or a label longer than `MAX_LABEL_BYTES`.
    """
    if not isinstance(namespace, tuple):
        if isinstance(namespace, list):
            namespace = tuple(namespace)
        else:
            raise InvalidNamespaceError(
                f"Namespace must be a tuple of strings, got {type(namespace).__name__}:"
                f" {namespace!r}. Pass e.g. ('users', 'u1')."
            )
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty. Pass e.g. ('users', 'u1').")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels must be strings,"
                f" got {type(label).__name__}."
            )
        if not label:
            raise InvalidNamespaceError(
                f"Namespace labels cannot be empty strings. Got {namespace}."
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain"
                " periods ('.'). Split it into separate labels instead."
            )
        if len(label.encode("utf-8")) > MAX_LABEL_BYTES:
            raise InvalidNamespaceError(
                f"Namespace label {label[:40]!r}... is longer than {MAX_LABEL_BYTES} bytes."
                " Use a shorter label, e.g. a hash of it."
            )
    return namespace


def validate_key(key: Any) -> str:
    """Check an item key.

    Raises:
        InvalidItemError: the key is not a string or longer than `MAX_KEY_BYTES`.
    """
    if not isinstance(key, str):
        raise InvalidItemError(
            f"Item key must be a string, got {type(key).__name__}: {key!r}."
            " Convert it with str() first."
        )
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidItemError(
            f"Item key {key[:40]!r}... is {len(key.encode('utf-8'))} bytes long; the limit is"
            f" {MAX_KEY_BYTES} bytes. Use a shorter key, e.g. a hash of the long one, and keep"
            " the long text in the value."
        )
    return key


def encode_value(namespace: Namespace, key: str, value: Any) -> str:
    """Validate an item value and return it as compact JSON.

    Raises:
        InvalidItemError: the value is not a dict, or holds something JSON cannot
            represent (objects, bytes, sets, NaN or infinite floats, non-string keys).
    """
    if not isinstance(value, dict):
        raise InvalidItemError(
            f"Value of item {key!r} in {namespace} must be a dict, got {type(value).__name__}."
            " Wrap it, e.g. {'content': value}."
        )
    try:
        _check_keys(value)
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidItemError(
            f"Value of item {key!r} in {namespace} is not JSON-serialisable: {e}."
            " Store only dicts of str, int, float (finite), bool, None, lists and dicts;"
            " convert datetimes to ISO strings and objects to dicts first."
        ) from e


def _check_keys(node: Any) -> None:
    # json.dumps silently turns int/float/bool/None dict keys into strings, which would
    # change the value on the way back; refuse them instead.
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                raise TypeError(f"dict key {k!r} is a {type(k).__name__}, not a string")
            _check_keys(v)
    elif isinstance(node, (list, tuple)):
        for v in node:
            _check_keys(v)


def validate_ttl(ttl: Any) -> float | None:
    """Check a TTL in minutes (None means no expiry).

    Raises:
        InvalidItemError: the TTL is not a positive finite number.
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl):
        raise InvalidItemError(f"TTL must be a positive number of minutes or None, got {ttl!r}.")
    if ttl <= 0:
        raise InvalidItemError(
            f"TTL must be a positive number of minutes, got {ttl!r}. Use None for no expiry"
            " or delete the item instead."
        )
    return float(ttl)


def validate_filter(filter: dict[str, Any] | None, *, allow_non_finite: bool) -> None:
    """Check a search filter before it is used.

    Raises:
        InvalidFilterError: a key has characters other than letters, digits, `_`, `-`
            and `.`, an operator is unknown, or a number is NaN or infinite (unless the
            store was built with `allow_non_finite_filters=True`).
    """
    if filter is None:
        return
    if not isinstance(filter, dict):
        raise InvalidFilterError(
            f"Filter must be a dict such as {{'color': 'red'}}, got {type(filter).__name__}."
        )
    for key, cond in filter.items():
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise InvalidFilterError(
                f"Invalid filter key: {key!r}. Filter keys may contain only letters, digits,"
                " underscores, hyphens and dots (dots address nested fields, e.g."
                " 'user.name')."
            )
        _check_condition(key, cond, allow_non_finite)


def _check_condition(key: str, cond: Any, allow_non_finite: bool) -> None:
    if isinstance(cond, dict):
        for op, operand in cond.items():
            if isinstance(op, str) and op.startswith("$") and op not in FILTER_OPERATORS:
                raise InvalidFilterError(
                    f"Unsupported filter operator {op!r} on {key!r}. Use one of"
                    f" {', '.join(sorted(FILTER_OPERATORS))}."
                )
            _check_condition(key, operand, allow_non_finite)
    elif isinstance(cond, (list, tuple)):
        for c in cond:
            _check_condition(key, c, allow_non_finite)
    elif isinstance(cond, float) and not math.isfinite(cond) and not allow_non_finite:
        raise InvalidFilterError(
            f"Filter on {key!r} compares with {cond!r}, which is not a finite number."
            " Stored values are always finite, so drop the bound (no upper/lower limit)"
            " instead, or build the store with allow_non_finite_filters=True to compare"
            " with IEEE semantics."
        )


# --------------------------------------------------------------------------- filters


def _lookup(value: dict[str, Any], key: str) -> Any:
    if key in value:
        return value[key]
    if "." not in key:
        return None
    node: Any = value
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _compare(value: Any, cond: Any) -> bool:
    if isinstance(cond, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            return all(_apply(value, op, operand) for op, operand in cond.items())
        if not isinstance(value, dict):
            return False
        return all(_compare(value.get(k), v) for k, v in cond.items())
    if isinstance(cond, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(cond)
            and all(_compare(v, c) for v, c in zip(value, cond, strict=True))
        )
    return _json_equal(value, cond)


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _json_equal(value, operand)
    if op == "$ne":
        return not _json_equal(value, operand)
    if _is_number(value) and _is_number(operand):
        a, b = float(value), float(operand)
    elif isinstance(value, str) and isinstance(operand, str):
        a, b = value, operand  # type: ignore[assignment]
    else:
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    if op == "$lte":
        return a <= b
    raise InvalidFilterError(f"Unsupported filter operator {op!r}.")


def matches_filter(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether an item value satisfies a (validated) filter.

    Semantics follow LangGraph's stores: a plain value means equality, a dict of
    `$`-operators applies each operator, a dict without operators matches nested
    fields, lists compare element-wise. A dotted key reads a nested field unless the
    value has that exact top-level key. Booleans never equal numbers; ordering
    operators compare numbers with numbers and strings with strings, anything else
    does not match.
    """
    if not filter:
        return True
    return all(_compare(_lookup(value, k), cond) for k, cond in filter.items())


# --------------------------------------------------------------------------- namespaces


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
    selected = [
        ns for ns in namespaces if all(_condition_matches(c, ns) for c in (conditions or ()))
    ]
    if max_depth is not None:
        result = sorted({ns[:max_depth] for ns in selected})
    else:
        result = sorted(set(selected))
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


# --------------------------------------------------------------------------- vectors


def cosine_similarities(query: Sequence[float], matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of `query` with each row of `matrix` (0 for zero vectors)."""
    if matrix.size == 0:
        return np.zeros((0,), dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    qn = np.linalg.norm(q)
    norms = np.linalg.norm(matrix, axis=1)
    out = np.zeros(matrix.shape[0], dtype=np.float64)
    mask = norms > 0
    if qn > 0:
        out[mask] = (matrix[mask] @ q) / (norms[mask] * qn)
    return out


def rank_key(hit: tuple[StoredItem, float | None]) -> tuple[float, Namespace, str]:
    """Sort key of scored hits: best score first, ties broken by namespace and key.

    A fixed tie-break keeps pages of the same search disjoint and stable.
    """
    item, score = hit
    return (-(score if score is not None else float("-inf")), item.namespace, item.key)
