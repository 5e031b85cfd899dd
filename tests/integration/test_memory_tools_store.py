"""The memory tools on the tiered store (both tiers, sync and async) inside real graphs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from hypothesis import HealthCheck, given, settings
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.tools import create_manage_memory_tool, create_search_memory_tool
from tests.conftest import DIMS
from tests.fake_models import RecordedChatModel
from tests.fakes import HashingEmbeddings
from tests.memory_tools_support import (
    B_KEYS,
    B_NAMESPACE,
    EmailRedactor,
    async_store,
    calls,
    remember_then_recall,
    run_calls,
    seed_b,
    session,
    snapshot,
    tool_calls,
    tool_loop_graph,
    tool_results,
)

INDEX = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


@pytest.fixture
def tstore(make_store: Callable[..., TieredMemoryStore], tier: str) -> TieredMemoryStore:
    return make_store(tier, index=INDEX)


def test_sessions_of_one_user_share_memories_that_other_users_never_see(
    tstore: TieredMemoryStore,
) -> None:
    tools = [create_manage_memory_tool(), create_search_memory_tool()]
    model = RecordedChatModel()
    graph = tool_loop_graph(model, tools).compile(store=tstore, checkpointer=InMemorySaver())
    said = ("I always take the window seat", "Book me a seat")
    seats = {"content": "Prefers window seats", "memory_type": "preference"}
    item = remember_then_recall(graph, model, tstore, seats, said, "seat preference")

    model.replies += [
        calls(
            ("search_memory", {"query": "seat preference"}),
            ("manage_memory", {"action": "update", "id": item.key, "content": "Aisle"}),
        ),
        "?",
    ]
    graph.invoke({"messages": [("user", "Book me a seat")]}, session("u2", "c"))
    searched, updated = tool_results(model.prompts[-1])
    assert searched.content == "[]"
    assert updated.status == "error"
    assert tstore.get(("memories", "u1"), item.key).value["content"] == "Prefers window seats"  # type: ignore[union-attr]

    model.replies += [
        calls(("manage_memory", {"action": "update", "id": item.key, "content": "Prefers aisle"})),
        "Updated.",
    ]
    graph.invoke({"messages": [("user", "Actually, aisle")]}, session("u1", "d"))
    assert tstore.get(("memories", "u1"), item.key).value == {  # type: ignore[union-attr]
        "content": "Prefers aisle",
        "memory_type": "preference",
    }


def test_memory_fields_and_redactions_reach_the_memory_entry(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store("long", scoring=None, index=INDEX)
    manage = create_manage_memory_tool(store=store, redactor=EmailRedactor())
    reply = manage.invoke(
        {"content": "Invoices go to ann@example.com", "memory_type": "fact", "importance": 0.9},
        session("u1", "t"),
    )
    key = reply.split()[2].rstrip(".")
    entry = store.get_memory(("memories", "u1"), key)
    assert entry is not None
    assert (entry.content, entry.memory_type, entry.importance) == (
        "Invoices go to [email]",
        "fact",
        0.9,
    )
    assert entry.metadata["redactions"] == {"email": 1}
    hits = create_search_memory_tool(store=store).invoke({"query": "invoices"}, session("u1", "t"))
    assert [h["key"] for h in hits] == [key]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=tool_calls)
def test_no_invented_call_changes_another_users_namespace(
    tstore: TieredMemoryStore, sequence: list[Any]
) -> None:
    if tstore.get(B_NAMESPACE, B_KEYS[0]) is None:
        seed_b(tstore)
    before = snapshot(tstore, B_NAMESPACE)
    answers = run_calls(
        create_manage_memory_tool(store=tstore), create_search_memory_tool(store=tstore), sequence
    )
    assert snapshot(tstore, B_NAMESPACE) == before
    assert not any(f"B secret {B_KEYS[1]}" in answer for answer in answers)
    assert all(
        ns == B_NAMESPACE or ns[:2] != B_NAMESPACE for ns in tstore.list_namespaces(limit=1000)
    )


@pytest.fixture
async def astore(
    redis_url: str, key_prefix: str, tmp_path: Path, tier: str
) -> AsyncIterator[AsyncTieredMemoryStore]:
    options: dict[str, Any] = {"index": INDEX, "scoring": {"mode": "similarity"}}
    async with async_store(redis_url, key_prefix, tmp_path, tier, **options) as store:
        yield store


async def test_async_graph_manages_memories_without_blocking_the_event_loop(
    astore: AsyncTieredMemoryStore,
) -> None:
    tools = [create_manage_memory_tool(), create_search_memory_tool()]
    model = RecordedChatModel(
        replies=[
            calls(("manage_memory", {"content": "Speaks Portuguese", "memory_type": "fact"})),
            calls(("search_memory", {"query": "languages spoken"})),
            "Portuguese.",
        ]
    )
    graph = tool_loop_graph(model, tools).compile(store=astore)
    with blockbuster_ctx():
        out = await graph.ainvoke({"messages": [("user", "Falo português")]}, session("u1", "t"))
        other = await create_search_memory_tool(store=astore).ainvoke(
            {"query": "languages spoken"}, session("u2", "t")
        )
    created, searched = tool_results(out["messages"])
    key = str(created.content).split()[2].rstrip(".")
    [hit] = json.loads(str(searched.content))
    assert (hit["key"], hit["content"], hit["memory_type"]) == (key, "Speaks Portuguese", "fact")
    assert other == []
    item = await astore.aget(("memories", "u1"), key)
    assert item is not None and item.value["memory_type"] == "fact"
