"""Forgetting policy: known points of the decay formula and of each rule."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory import ConfigurationError, MemoryEntry
from langgraph_tiered_memory.ranking.forgetting import (
    GARBAGE_COLLECT_POLICY,
    calculate_decay,
    should_forget,
)

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
DAY = 86_400.0


def entry(
    importance: float = 0.5,
    *,
    age_days: float = 0,
    idle_days: float | None = None,
    count: int = 0,
    pinned: bool = False,
) -> tuple[MemoryEntry, float]:
    """A memory created `age_days` ago, last accessed `idle_days` ago; and "now"."""
    now = T0 + timedelta(days=age_days)
    last = None if idle_days is None else now - timedelta(days=idle_days)
    meta = {"pinned": True} if pinned else {}
    return MemoryEntry("m", "x", "fact", importance, T0, last, count, meta), now.timestamp()


def test_decay_known_points() -> None:
    e, now = entry(0.0, age_days=30)
    assert calculate_decay(e, now=now) == pytest.approx(0.5)  # one half-life, no shield
    e, now = entry(1.0, age_days=30)
    assert calculate_decay(e, now=now) == pytest.approx(0.5 * 0.8)
    e, now = entry(0.5, age_days=60, idle_days=0, count=3)
    assert calculate_decay(e, now=now) == pytest.approx(0.0)  # just accessed
    e, now = entry(0.5, age_days=90, idle_days=60, count=3)
    expected = 0.75 * (1 - 0.1 - math.log1p(3) * 0.05)
    assert calculate_decay(e, now=now) == pytest.approx(expected)
    e, now = entry(0.0, age_days=10_000, count=10**9)
    assert calculate_decay(e, now=now) == 0.0  # the shield clamps at 0
    e, now = entry(0.5, age_days=30)
    assert calculate_decay(e, now=now, policy={"half_life_days": 60}) == pytest.approx(
        (1 - 2**-0.5) * 0.9
    )


@given(
    st.floats(0, 1),
    st.floats(0, 5000),
    st.integers(0, 10**6),
)
def test_decay_stays_in_unit_range_and_grows_with_idle_time(
    importance: float, days: float, count: int
) -> None:
    e, now = entry(importance, age_days=days, count=count)
    d = calculate_decay(e, now=now)
    assert 0.0 <= d <= 1.0
    assert calculate_decay(e, now=now + 10 * DAY) >= d


def test_each_rule_of_the_default_policy() -> None:
    e, now = entry(0.0, age_days=150, idle_days=150, count=1)
    assert should_forget(e, now=now)[0] and "decay" in should_forget(e, now=now)[1]
    e, now = entry(0.5, age_days=91, count=0)
    forget, reason = should_forget(e, now=now, policy={"decay_threshold": None})
    assert forget and "never accessed" in reason
    e, now = entry(0.3, age_days=181, idle_days=1, count=2)
    forget, reason = should_forget(e, now=now)
    assert forget and "importance 0.3 < 0.4" in reason
    e, now = entry(0.1, age_days=1, idle_days=0, count=5)
    assert should_forget(e, now=now) == (True, "importance 0.1 < 0.2")
    e, now = entry(0.5, age_days=20, idle_days=1, count=2)
    assert should_forget(e, now=now) == (False, "")


def test_garbage_collect_preset_and_pinned_memories() -> None:
    e, now = entry(0.9, age_days=31, idle_days=0, count=50)
    assert should_forget(e, now=now)[0] is False
    assert should_forget(e, now=now, policy=GARBAGE_COLLECT_POLICY)[0] is True
    e, now = entry(0.25, age_days=1, idle_days=0, count=1)
    assert should_forget(e, now=now, policy=GARBAGE_COLLECT_POLICY) == (
        True,
        "importance 0.25 < 0.3",
    )
    e, now = entry(0.0, age_days=5000, pinned=True)
    assert should_forget(e, now=now) == (False, "")
    with pytest.raises(ConfigurationError, match="half_life"):
        calculate_decay(e, now=now, policy={"half_life_days": 0})
    with pytest.raises(ConfigurationError, match="Unknown"):
        should_forget(e, now=now, policy={"nope": 1})  # type: ignore[typeddict-unknown-key]


@given(
    st.lists(
        st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3),
        min_size=0,
        max_size=40,
    ),
    st.floats(0.0, 0.99),
    st.integers(1, 7),
)
def test_near_duplicate_groups_match_a_plain_greedy_pass(
    rows: list[list[float]], threshold: float, block: int
) -> None:
    import numpy as np

    from langgraph_tiered_memory.store.consolidation import group_near_duplicates

    keys = [f"k{i}" for i in range(len(rows))]
    groups = group_near_duplicates(keys, rows, threshold, block=block)
    m = np.asarray(rows, dtype=np.float32).reshape(len(rows), 3)
    unit = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    taken: set[int] = set()
    expected = []
    for i in range(len(keys)):
        if i in taken:
            continue
        members = [j for j in range(len(keys)) if j not in taken and sims[i, j] >= threshold]
        if len(members) >= 2:
            taken.update(members)
            expected.append([keys[i], *(keys[j] for j in members if j != i)])
    assert groups == expected
    flat = [k for g in groups for k in g]
    assert len(flat) == len(set(flat)) and all(len(g) >= 2 for g in groups)


def test_theme_group_keeps_the_most_similar_above_the_floor() -> None:
    from langgraph_tiered_memory.store.consolidation import theme_group

    keys = ["a", "b", "c", "d"]
    vectors = [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.7, 0.7]]
    assert theme_group(keys, vectors, [1.0, 0.0], 0.5, 10) == ["a", "b", "d"]
    assert theme_group(keys, vectors, [1.0, 0.0], 0.5, 2) == ["a", "b"]
    assert theme_group(keys, vectors, [1.0, 0.0], 0.999, 10) == ["a"]
    assert theme_group([], [], [1.0, 0.0], 0.5, 10) == []


def _design_decay(importance: float, count: int, idle_days: float, half_life: float = 30) -> float:
    """The README's decay formula, written out independently of the package."""
    fade = 1 - 0.5 ** (idle_days / half_life)  # 1 - exp(-ln 2 * t / h)
    shield = 1 - 0.2 * importance - 0.05 * math.log(1 + count)
    return min(1.0, max(0.0, fade * shield))


def _design_forget(importance: float, count: int, age_days: float, idle_days: float) -> bool:
    """The README's default rules: any one of them forgets the memory."""
    return (
        _design_decay(importance, count, idle_days) > 0.8
        or (age_days > 90 and count == 0)
        or (age_days > 180 and importance < 0.4)
        or importance < 0.2
    )


@pytest.mark.parametrize(
    ("importance", "count", "age_days", "idle_days", "decay", "forget"),
    [
        # fade 1 - 2**-2 = 0.75, shield 1 - 0.06 - 0.05 * ln 2 = 0.905343
        (0.3, 1, 200, 60, 0.679007, True),  # 200 days old, importance < 0.4
        # fade 1 - 2**-(10/30) = 0.206299, shield 1 - 0.1 - 0.05 * ln 4 = 0.830685
        (0.5, 3, 100, 10, 0.17137, False),
        # fade 1 - 2**-5 = 0.96875, shield 1 - 0.18 = 0.82
        (0.9, 0, 150, 150, 0.794375, True),  # never accessed in 150 days
        # fade 1 - 2**-6 = 0.984375, shield 1 - 0.12 - 0.05 * ln 2 = 0.845343
        (0.6, 1, 180, 180, 0.832134, True),  # decay > 0.8
        # fade 0.984375, shield 1 - 0.18 - 0.05 * ln 3 = 0.765069
        (0.9, 2, 180, 180, 0.753115, False),
        (0.19, 40, 1, 0, 0.0, True),  # importance < 0.2, just used
    ],
)
def test_decay_and_rules_match_hand_computed_values(
    importance: float, count: int, age_days: float, idle_days: float, decay: float, forget: bool
) -> None:
    e, now = entry(importance, age_days=age_days, idle_days=idle_days, count=count)
    assert calculate_decay(e, now=now) == pytest.approx(decay, abs=1e-6)
    assert should_forget(e, now=now)[0] is forget


@settings(max_examples=300)
@given(
    st.floats(0, 1) | st.sampled_from([0.0, 0.19, 0.21, 0.39, 0.41, 0.6, 1.0]),
    st.integers(0, 3) | st.integers(0, 1000),
    st.floats(0, 400) | st.sampled_from([89.0, 91.0, 100.0, 179.0, 181.0]),
    st.floats(0, 1),
    st.booleans(),
)
def test_decay_and_rules_match_the_design_formulas(
    importance: float, count: int, age_days: float, idle_share: float, accessed: bool
) -> None:
    idle_days = age_days * idle_share if accessed else None
    e, now = entry(importance, age_days=age_days, idle_days=idle_days, count=count)
    idle = age_days if idle_days is None else idle_days
    assert calculate_decay(e, now=now) == pytest.approx(
        _design_decay(importance, count, idle), abs=1e-9
    )
    expected = _design_forget(importance, count, age_days, idle)
    decay = _design_decay(importance, count, idle)
    if abs(decay - 0.8) > 1e-9 and abs(importance - 0.2) > 1e-9:  # not on a rule's edge
        assert should_forget(e, now=now)[0] is expected


def test_rules_object_matches_the_public_functions() -> None:
    from langgraph_tiered_memory.ranking.forgetting import ForgettingRules

    e, now = entry(0.3, age_days=200, idle_days=10, count=3)
    rules = ForgettingRules()
    reason = rules.reason(
        importance=0.3,
        access_count=3,
        created_at=e.created_at.timestamp(),
        last_accessed=e.last_accessed.timestamp(),  # type: ignore[union-attr]
        now=now,
    )
    assert reason == "200 days old (> 180) with importance 0.3 < 0.4"
    assert should_forget(e, now=now) == (True, reason)
    # (1 - 2**-(1/3)) * (1 - 0.06 - 0.05 * ln 4) = 0.206299 * 0.870685
    assert rules.decay(0.3, 3, 10) == pytest.approx(0.179622, abs=1e-6)
    assert calculate_decay(e, now=now) == pytest.approx(0.179622, abs=1e-6)
