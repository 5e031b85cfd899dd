"""Search filters: checking them, and matching item values against them.

The semantics follow LangGraph's own stores (see `matches_filter`); the tiers that
cannot push a filter down to their backend apply it with `matches_filter`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from langgraph_tiered_memory.errors import InvalidFilterError

FILTER_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_FILTER_KEY = re.compile(r"^[\w.\-]+$")


# --------------------------------------------------------------------------- checking


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


# --------------------------------------------------------------------------- matching


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
