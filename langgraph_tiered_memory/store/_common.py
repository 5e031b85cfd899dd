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
from typing import Any, Literal

import numpy as np
import orjson
from langgraph.store.base import InvalidNamespaceError, MatchCondition

from langgraph_tiered_memory.errors import InvalidFilterError, InvalidItemError

MAX_KEY_BYTES = 1024
"""Longest item key accepted, in UTF-8 bytes."""

MAX_LABEL_BYTES = 256
"""Longest namespace label accepted, in UTF-8 bytes."""

MAX_VALUE_DEPTH = 100
"""Deepest nesting of dicts and lists accepted in an item value (the value itself is 1)."""

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
            dotted label, a label holding a surrogate code point (not UTF-8
            encodable), or a label longer than `MAX_LABEL_BYTES`.
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
        _check_label_text(label, namespace)
        if len(label.encode("utf-8")) > MAX_LABEL_BYTES:
            raise InvalidNamespaceError(
                f"Namespace label {label[:40]!r}... is longer than {MAX_LABEL_BYTES} bytes."
                " Use a shorter label, e.g. a hash of it."
            )
    return namespace


def check_labels(labels: Iterable[Any], what: str = "Namespace") -> None:
    """Check that the labels of a namespace or prefix used for a read are UTF-8 encodable.

    Reads accept any namespace a write would (and more: prefixes, `"*"` wildcards);
    only text no backend can store or look up is refused.

    Raises:
        InvalidNamespaceError: a label holds a surrogate code point.
    """
    labels = tuple(labels)
    for label in labels:
        if isinstance(label, str):
            _check_label_text(label, labels, what)


def _check_label_text(label: str, namespace: Sequence[Any], what: str = "Namespace") -> None:
    if _SURROGATE.search(label):
        raise InvalidNamespaceError(
            f"{what} label {_short(label)} in {tuple(namespace)!r} cannot be encoded as UTF-8."
            f" {SURROGATE_FIX}"
        )


_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_FIX = (
    "A surrogate code point (U+D800-U+DFFF) is not a character and UTF-8 cannot encode it"
    " (it is left e.g. by decoding bytes with errors='surrogateescape' or by JSON with an"
    " unpaired \\u escape). Replace it first, e.g. with"
    " text.encode('utf-8', 'replace').decode('utf-8')."
)
"""How to fix text holding a surrogate code point (for error messages)."""


def find_bad_text(
    root: Any, *, max_depth: int, str_keys: bool
) -> tuple[Literal["text", "depth", "key"], str] | None:
    """Find the first thing in a JSON-like tree that cannot be stored.

    Walks dicts, lists and tuples iteratively (it never recurses, so any depth is
    safe). Locations in the description read like `$.a[2].b`.

    Returns:
        None when all is well, else the kind of problem and a description of it:
        `"text"`, a string or dict key UTF-8 cannot encode; `"depth"`, nesting deeper
        than `max_depth` containers (`root` is level 1); `"key"` (only with
        `str_keys`), a dict key that is not a string.
    """
    # Entries: (node, depth, parent entry, step from the parent); paths are built on failure.
    stack: list[tuple[Any, int, Any, str]] = [(root, 1, None, "$")]
    while stack:
        entry = stack.pop()
        node, depth = entry[0], entry[1]
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return "text", f"the string {_short(node)} at {_path(entry)}"
            continue
        children: Iterable[tuple[str, Any]]
        if isinstance(node, dict):
            for k in node:
                if isinstance(k, str):
                    if _SURROGATE.search(k):
                        return "text", f"the dict key {_short(k)} at {_path(entry)}"
                elif str_keys:
                    shown = f" {k!r}" if isinstance(k, (int, float, type(None))) else ""
                    return "key", (
                        f"the dict key{shown} at {_path(entry)} has type {type(k).__name__},"
                        " not str"
                    )
            children = (
                (f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{_short(k)}]", v)
                for k, v in node.items()
            )
        elif isinstance(node, (list, tuple)):
            children = ((f"[{i}]", v) for i, v in enumerate(node))
        else:
            continue
        if depth > max_depth:
            return "depth", (
                f"it is nested deeper than {max_depth} levels of dicts and lists"
                f" (at {_path(entry)})"
            )
        stack.extend((child, depth + 1, entry, step) for step, child in children)
    return None


def _short(text: Any) -> str:
    if not isinstance(text, str):
        return f"<{type(text).__name__}>"
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."


def _path(entry: tuple[Any, int, Any, str]) -> str:
    steps: list[str] = []
    node: Any = entry
    while node is not None:
        steps.append(node[3] if len(node[3]) <= 40 else node[3][:37] + "...")
        node = node[2]
    path = "".join(reversed(steps))
    return path if len(path) <= 80 else path[:40] + "..." + path[-37:]


def validate_key(key: Any) -> str:
    """Check an item key.

    Raises:
        InvalidItemError: the key is not a string, holds a surrogate code point (not
            UTF-8 encodable) or is longer than `MAX_KEY_BYTES`.
    """
    if not isinstance(key, str):
        raise InvalidItemError(
            f"Item key must be a string, got {type(key).__name__}: {key!r}."
            " Convert it with str() first."
        )
    if _SURROGATE.search(key):
        raise InvalidItemError(
            f"Item key {_short(key)} cannot be encoded as UTF-8. {SURROGATE_FIX}"
        )
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidItemError(
            f"Item key {key[:40]!r}... is {len(key.encode('utf-8'))} bytes long; the limit is"
            f" {MAX_KEY_BYTES} bytes. Use a shorter key, e.g. a hash of the long one, and keep"
            " the long text in the value."
        )
    return key


def check_value(namespace: Namespace, key: str, value: Any) -> None:
    """Check an item value's type, depth and text before anything reads into it.

    The value is walked iteratively, so a deeply nested value fails with this error,
    never with `RecursionError`.

    Raises:
        InvalidItemError: the value is not a dict, is nested deeper than
            `MAX_VALUE_DEPTH` levels, has a non-string dict key, or holds a string or
            dict key UTF-8 cannot encode (a surrogate code point).
    """
    if not isinstance(value, dict):
        raise InvalidItemError(
            f"Value of item {key!r} in {namespace} must be a dict, got {type(value).__name__}."
            " Wrap it, e.g. {'content': value}."
        )
    # json.dumps silently turns int/float/bool/None dict keys into strings, which would
    # change the value on the way back: refuse them (str_keys) instead.
    problem = find_bad_text(value, max_depth=MAX_VALUE_DEPTH, str_keys=True)
    if problem is None:
        return
    kind, where = problem
    if kind == "text":
        detail = f"{where} cannot be encoded as UTF-8. {SURROGATE_FIX}"
    elif kind == "depth":
        detail = (
            f"{where}. Values may nest at most {MAX_VALUE_DEPTH} levels of dicts and lists:"
            " flatten the structure, or store the deep part as a JSON string."
        )
    else:
        detail = f"{where}. Values are JSON objects: convert the key with str() first."
    raise InvalidItemError(f"Value of item {key!r} in {namespace} cannot be stored: {detail}")


def encode_value(namespace: Namespace, key: str, value: Any, *, checked: bool = False) -> str:
    """Validate an item value and return it as compact JSON.

    Args:
        namespace: The item's namespace (for messages).
        key: The item's key (for messages).
        value: The value to store.
        checked: The value already passed `check_value`; skip that walk.

    Raises:
        InvalidItemError: `check_value` refuses the value, or it holds something JSON
            cannot represent (objects, bytes, sets, NaN or infinite floats).
    """
    if not checked:
        check_value(namespace, key, value)
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidItemError(
            f"Value of item {key!r} in {namespace} is not JSON-serialisable: {e}."
            " Store only dicts of str, int, float (finite), bool, None, lists and dicts;"
            " convert datetimes to ISO strings and objects to dicts first."
        ) from e


def check_search_text(query: Any, filter: Any) -> None:
    """Check the text of a search's query and filter before it reaches a backend.

    Raises:
        InvalidFilterError: the query, or a key or string of the filter, holds a
            surrogate code point (not UTF-8 encodable), or the filter nests deeper
            than `MAX_VALUE_DEPTH` + 1 levels (no stored value could match it).
    """
    if isinstance(query, str) and _SURROGATE.search(query):
        raise InvalidFilterError(
            f"Search query {_short(query)} cannot be encoded as UTF-8. {SURROGATE_FIX}"
        )
    if filter is None:
        return
    problem = find_bad_text(filter, max_depth=MAX_VALUE_DEPTH + 1, str_keys=False)
    if problem is not None:
        kind, where = problem
        detail = (
            f"{where} cannot be encoded as UTF-8. {SURROGATE_FIX}"
            if kind == "text"
            else f"{where}. Stored values nest at most {MAX_VALUE_DEPTH} levels, so no item"
            " can match it."
        )
        raise InvalidFilterError(f"Search filter cannot be used: {detail}")


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


def validate_filter(filter: dict[str, Any] | None, *, allow_non_finite: bool = True) -> None:
    """Check a search filter before it is used.

    Args:
        filter: The value filter of a search (search options already removed).
        allow_non_finite: Accept NaN and infinite numbers (IEEE semantics, as in
            LangGraph's own stores). False is the store's opt-in strict mode,
            `allow_non_finite_filters=False`, which refuses them.

    Raises:
        InvalidFilterError: a key has characters other than letters, digits, `_`, `-`
            and `.`, an operator is unknown, or, in strict mode, a number is NaN or
            infinite.
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
            f"Filter on {key!r} compares with {cond!r}, which is not a finite number, and"
            " this store was built in strict mode (allow_non_finite_filters=False)."
            " Stored values are always finite, so drop the bound (no upper/lower limit)"
            " instead, or build the store with allow_non_finite_filters=True (the default)"
            " to compare with IEEE semantics."
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
    # Python compares ints with floats exactly and never raises (float() would overflow
    # on ints beyond 1e308); every comparison with NaN is false, as in IEEE 754.
    if not (
        (_is_number(value) and _is_number(operand))
        or (isinstance(value, str) and isinstance(operand, str))
    ):
        return False
    a, b = value, operand
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
    does not match. Numbers compare exactly (ints of any size included) with IEEE
    semantics: `{"$lt": inf}` matches every number, and NaN equals and orders with
    nothing, so it matches nothing except under `$ne`, which it matches always.
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
