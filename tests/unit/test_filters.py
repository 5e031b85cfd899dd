"""The value-filter matcher with non-finite and very large numbers, against InMemoryStore."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import _compare_values

from langgraph_tiered_memory.errors import InvalidFilterError
from langgraph_tiered_memory.store.tiers._filters import matches_filter, validate_filter

INF, NAN = math.inf, math.nan
ORDERING = ("$gt", "$gte", "$lt", "$lte")
OPERATORS = ("$eq", "$ne", *ORDERING)

# What a stored value can be: JSON, so numbers are finite (encode_value refuses NaN/inf).
stored_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.lists(st.integers(-2, 2), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(-2, 2), max_size=2),
)
non_finite = st.sampled_from([INF, -INF, NAN])


def _inmemory(stored: Any, cond: Any) -> bool | None:
    """InMemoryStore's verdict for one value (missing field = None), or None if it raises."""
    try:
        return bool(_compare_values(stored, cond))
    except (TypeError, ValueError):
        return None


def _expected(stored: Any, cond: Any) -> bool:
    """InMemoryStore's verdict, except where this store documents a difference.

    InMemoryStore applies `float()` to both sides of an ordering operator, so it
    raises on None, lists, dicts and most strings, and it orders booleans and
    numeric strings as numbers. This store compares numbers only with numbers (bools
    are not numbers) and strings only with strings, and anything else does not match.
    """
    ops = cond if isinstance(cond, dict) else {"$eq": cond}
    if any(op in ORDERING for op in ops) and (
        isinstance(stored, bool) or not isinstance(stored, (int, float))
    ):
        return False
    verdict = _inmemory(stored, cond)
    assert verdict is not None, f"InMemoryStore raised on {stored!r} with {cond!r}"
    return verdict


@settings(max_examples=100, deadline=None)
@given(stored_values, st.sampled_from((*OPERATORS, "plain")), non_finite, st.booleans())
def test_non_finite_operands_agree_with_inmemory_store(
    stored: Any, op: str, operand: float, missing: bool
) -> None:
    cond: Any = operand if op == "plain" else {op: operand}
    value = {} if missing else {"x": stored}
    validate_filter({"x": cond})  # accepted by default
    assert matches_filter(value, {"x": cond}) == _expected(None if missing else stored, cond)


@pytest.mark.parametrize(
    ("stored", "cond", "matches"),
    [
        (5, {"$lt": INF}, True),
        (-(10**30), {"$gt": -INF}, True),
        (1.7976931348623157e308, {"$lt": INF, "$gt": -INF}, True),
        (5, {"$gt": INF}, False),
        (5, {"$lte": -INF}, False),
        (5, {"$eq": NAN}, False),
        (5, NAN, False),
        (5, {"$gte": NAN}, False),
        (5, {"$lte": NAN}, False),
        (5, {"$ne": NAN}, True),
        (5, {"$ne": INF}, True),
        ("inf", {"$lt": INF}, False),  # strings never order with numbers
        (True, {"$lt": INF}, False),  # nor do booleans
        (None, {"$ne": NAN}, True),
        ([1], [INF], False),
        ({"y": 1}, {"y": {"$lt": INF}}, True),  # nested condition
        (10**400, {"$gt": 1e308, "$lt": INF}, True),  # beyond float range, no overflow
    ],
)
def test_non_finite_operands_are_accepted_by_default_with_ieee_semantics(
    stored: Any, cond: Any, matches: bool
) -> None:
    validate_filter({"x": cond})
    assert matches_filter({"x": stored}, {"x": cond}) is matches


@settings(max_examples=100, deadline=None)
@given(
    st.integers(-(10**400), 10**400),
    st.sampled_from(ORDERING),
    st.one_of(st.integers(-(10**400), 10**400), st.floats(allow_nan=True)),
)
def test_ordering_is_exact_for_integers_beyond_float_range(
    stored: int, op: str, bound: int | float
) -> None:
    # float() of such an int raises OverflowError; the matcher must not.
    exact = {"$gt": stored > bound, "$gte": stored >= bound, "$lt": stored < bound}
    exact["$lte"] = stored <= bound
    assert matches_filter({"x": stored}, {"x": {op: bound}}) is exact[op]


def test_huge_integers_do_not_overflow() -> None:
    assert matches_filter({"x": 10**400}, {"x": {"$gt": 1.5, "$lt": INF}})
    assert matches_filter({"x": 1}, {"x": {"$lt": 10**400}})
    assert not matches_filter({"x": 10**400}, {"x": {"$lte": 1e308}})


@pytest.mark.parametrize(
    "flt",
    [
        {"x": {"$lt": INF}},
        {"x": {"$gt": -INF}},
        {"x": NAN},
        {"x": {"$ne": NAN}},
        {"x": {"y": INF}},
        {"x": [1, NAN]},
    ],
)
def test_strict_mode_refuses_non_finite_numbers_and_names_the_fix(flt: dict) -> None:
    validate_filter(flt, allow_non_finite=True)
    validate_filter(flt)  # IEEE semantics are the default
    with pytest.raises(InvalidFilterError) as err:
        validate_filter(flt, allow_non_finite=False)
    message = str(err.value)
    assert "'x'" in message and "allow_non_finite_filters=True" in message
    assert "strict mode" in message
    validate_filter({"x": {"$lt": 10**400, "$gt": -1e308}}, allow_non_finite=False)
