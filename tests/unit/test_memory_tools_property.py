"""Whatever calls a model invents, the memory tools never touch or reveal another user's data."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory.agent.tools import create_manage_memory_tool, create_search_memory_tool
from tests.memory_tools_support import (
    B_KEYS,
    B_NAMESPACE,
    normalise_keys,
    run_calls,
    seed_b,
    snapshot,
    tool_calls,
)


def _tools(store: InMemoryStore) -> tuple[Any, Any]:
    return create_manage_memory_tool(store=store), create_search_memory_tool(store=store)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence=tool_calls)
def test_no_call_by_another_user_changes_user_bs_namespace(sequence: list[Any]) -> None:
    store = InMemoryStore()
    seed_b(store)
    before = snapshot(store, B_NAMESPACE)
    answers = run_calls(*_tools(store), sequence)
    assert snapshot(store, B_NAMESPACE) == before
    for namespace in store.list_namespaces():
        assert namespace == B_NAMESPACE or namespace[:2] != B_NAMESPACE
    # Nothing the other users got back holds B's text (no invented content has it).
    assert not any(f"B secret {B_KEYS[1]}" in answer for answer in answers)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence=tool_calls)
def test_answers_are_the_same_whether_or_not_user_b_has_memories(sequence: list[Any]) -> None:
    with_b, without_b = InMemoryStore(), InMemoryStore()
    seed_b(with_b)
    answers = normalise_keys(run_calls(*_tools(with_b), sequence))
    assert answers == normalise_keys(run_calls(*_tools(without_b), sequence))

    def others(store: InMemoryStore) -> list[tuple[Any, ...]]:
        # Keys are random: compare what is stored where, and how many of them.
        return sorted(
            (ns, value) for ns, _key, value, *_ in snapshot(store, ()) if ns != B_NAMESPACE
        )

    assert others(with_b) == others(without_b)
