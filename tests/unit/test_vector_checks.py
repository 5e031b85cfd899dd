"""What an embedding model returns is checked before anything is stored or searched."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_tiered_memory import ConfigurationError
from langgraph_tiered_memory.store._validate import check_vectors

DIMS = 8
FLOAT32_MAX = float(np.finfo(np.float32).max)

_finite = st.floats(min_value=-FLOAT32_MAX, max_value=FLOAT32_MAX, allow_nan=False)
_vector = st.lists(_finite, min_size=DIMS, max_size=DIMS)
_non_finite = st.one_of(
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.floats(min_value=FLOAT32_MAX, exclude_min=True, allow_infinity=False),
    st.floats(max_value=-FLOAT32_MAX, exclude_max=True, allow_infinity=False),
)
_not_a_number = st.one_of(
    st.none(), st.booleans(), st.text(max_size=3), st.just([0.5]), st.just({"x": 1.0})
)


@given(st.lists(_vector, max_size=4))
def test_vectors_of_finite_numbers_pass(vectors: list[list[float]]) -> None:
    check_vectors(vectors, dims=DIMS, what="stored items", count=len(vectors))


@given(vectors=st.lists(_vector, min_size=1, max_size=4), data=st.data())
def test_any_non_finite_entry_is_refused(vectors: list[list[float]], data: Any) -> None:
    i = data.draw(st.integers(0, len(vectors) - 1))
    j = data.draw(st.integers(0, DIMS - 1))
    vectors[i][j] = data.draw(_non_finite)
    with pytest.raises(ConfigurationError, match="finite numbers") as err:
        check_vectors(vectors, dims=DIMS, what="stored items", count=len(vectors))
    message = str(err.value)
    assert f"(vector {i}, entry {j})" in message
    assert "Check the embedding model" in message


@given(vectors=st.lists(_vector, min_size=1, max_size=4), data=st.data())
def test_any_entry_that_is_not_a_real_number_is_refused(
    vectors: list[list[Any]], data: Any
) -> None:
    i = data.draw(st.integers(0, len(vectors) - 1))
    j = data.draw(st.integers(0, DIMS - 1))
    bad = data.draw(_not_a_number)
    vectors[i][j] = bad
    with pytest.raises(ConfigurationError, match="not a list of real numbers") as err:
        check_vectors(vectors, dims=DIMS, what="stored items")
    assert f"vector {i}: entry {j} of type {type(bad).__name__}" in str(err.value)


@pytest.mark.parametrize(
    "vector, problem",
    [
        (None, "a NoneType"),
        ("abcdefgh", "a str"),
        (np.array(["a"] * DIMS), "dtype <U1"),
        (np.zeros((1, DIMS)), "shape (1, 8)"),
        (np.zeros(DIMS, dtype=bool), "dtype bool"),
        ([10**400] * DIMS, "too large"),
    ],
)
def test_vectors_that_are_not_lists_of_numbers_are_refused(vector: Any, problem: str) -> None:
    with pytest.raises(ConfigurationError, match="not a list of real numbers") as err:
        check_vectors([vector], dims=DIMS, what="search queries")
    assert problem in str(err.value)


def test_numpy_vectors_and_number_types_pass() -> None:
    check_vectors(
        [np.ones(DIMS, dtype=np.float32), np.arange(DIMS), [np.float32(1)] * DIMS, [1] * DIMS],
        dims=DIMS,
        what="stored items",
    )
    with pytest.raises(ConfigurationError, match="NaN"):
        check_vectors([np.full(DIMS, np.nan, dtype=np.float32)], dims=DIMS, what="x")


@pytest.mark.parametrize("returned, texts", [(1, 2), (3, 2), (0, 1), (2, 0)])
def test_another_number_of_vectors_than_texts_is_refused(returned: int, texts: int) -> None:
    with pytest.raises(ConfigurationError, match="exactly one vector per text") as err:
        check_vectors([[0.0] * DIMS] * returned, dims=DIMS, what="stored items", count=texts)
    assert f"returned {returned} vector" in str(err.value)
    assert "Check the embedding model" in str(err.value)


def test_a_wrong_size_keeps_its_message() -> None:
    with pytest.raises(ConfigurationError, match=r"4-dimensional .* index\['dims'\] is 8"):
        check_vectors([[0.0] * 4], dims=DIMS, what="stored items", count=1)
