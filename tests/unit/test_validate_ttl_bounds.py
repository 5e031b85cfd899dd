"""TTLs longer than `MAX_TTL_MINUTES` are refused, for puts and `default_ttl` alike."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_tiered_memory import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.checkpoint._session import session_ttl
from langgraph_tiered_memory.checkpoint.registry import MAX_SESSION_TTL_SECONDS, check_ttl
from langgraph_tiered_memory.store._config import check_ttl_config
from langgraph_tiered_memory.store._validate import MAX_TTL_MINUTES, validate_ttl

REDIS_MAX_MS = 2**63 - 1  # Redis refuses a PX expiry that, added to now in ms, passes this


def test_the_maximum_is_100_years_and_fits_every_backend() -> None:
    assert MAX_TTL_MINUTES == 100 * 365 * 24 * 60 == 52_560_000
    # Redis tier: PX in milliseconds plus the current time in milliseconds.
    assert MAX_TTL_MINUTES * 60_000 + int(time.time() * 1000) < REDIS_MAX_MS
    # Expiry timestamps (long tier metadata, exports) stay before datetime's year 10000.
    assert time.time() + MAX_TTL_MINUTES * 60 < 253_402_300_799


@pytest.mark.parametrize("ttl", [1e-9, 1, 60.5, MAX_TTL_MINUTES, float(MAX_TTL_MINUTES)])
def test_ttls_up_to_the_maximum_are_accepted(ttl: float) -> None:
    assert validate_ttl(ttl) == float(ttl)


@given(st.floats(min_value=MAX_TTL_MINUTES, exclude_min=True, allow_infinity=False))
def test_any_finite_ttl_above_the_maximum_is_refused(ttl: float) -> None:
    with pytest.raises(InvalidItemError, match="maximum") as err:
        validate_ttl(ttl)
    message = str(err.value)
    assert "52,560,000 minutes" in message
    assert "ttl=None for no expiry" in message


@pytest.mark.parametrize("ttl", [MAX_TTL_MINUTES + 1, 10**30, 1.5e14, 1e15])
def test_int_and_overflowing_ttls_are_refused(ttl: float) -> None:
    with pytest.raises(InvalidItemError, match="longer than the maximum"):
        validate_ttl(ttl)


def test_default_ttl_above_the_maximum_is_a_configuration_error() -> None:
    assert check_ttl_config({"default_ttl": MAX_TTL_MINUTES}) == {"default_ttl": MAX_TTL_MINUTES}
    with pytest.raises(ConfigurationError, match=r"default_ttl.*maximum.*ttl=None"):
        check_ttl_config({"default_ttl": 1e15})


@pytest.mark.parametrize(
    "ttl", [float("inf"), 1e30, MAX_SESSION_TTL_SECONDS * 2, timedelta(days=365 * 200)]
)
def test_a_session_ttl_above_100_years_is_refused_when_the_saver_is_built(ttl: Any) -> None:
    with pytest.raises(ConfigurationError, match="100 years"):
        session_ttl(ttl)
    if not isinstance(ttl, timedelta):
        with pytest.raises(ConfigurationError, match="100 years"):
            check_ttl(ttl)


def test_a_session_ttl_up_to_100_years_is_kept() -> None:
    assert session_ttl(MAX_SESSION_TTL_SECONDS)[0] == MAX_SESSION_TTL_SECONDS
    assert session_ttl(timedelta(days=7))[0] == 7 * 86_400
    assert check_ttl(60) == 60.0
