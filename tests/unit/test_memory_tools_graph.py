"""The memory tools inside compiled LangGraph graphs, with a fake tool-calling model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory.agent.tools import create_manage_memory_tool, create_search_memory_tool
from langgraph_tiered_memory.errors import ConfigurationError
from tests.fake_models import RecordedChatModel
from tests.fakes import HashingEmbeddings
from tests.memory_tools_support import (
    calls,
    remember_then_recall,
    session,
    tool_loop_graph,
    tool_results,
)

DIMS = 64


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore(
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    )


@pytest.fixture
def tools() -> list[Any]:
    # No store given: the tools use the store the graph is compiled with.
    return [create_manage_memory_tool(), create_search_memory_tool()]


def test_a_memory_made_in_one_session_is_found_in_the_next_and_not_by_another_user(
    store: InMemoryStore, tools: list[Any]
) -> None:
    model = RecordedChatModel()
    graph = tool_loop_graph(model, tools).compile(store=store, checkpointer=InMemorySaver())
    memory = {"content": "Prefers green tea", "memory_type": "preference"}
    said = ("Remember: I like green tea", "What do I drink?")
    item = remember_then_recall(graph, model, store, memory, said, "what tea do I like")

    model.replies += [calls(("search_memory", {"query": "what tea do I like"})), "No idea."]
    graph.invoke({"messages": [("user", "What do I drink?")]}, session("u2", "t3"))
    [other] = tool_results(model.prompts[-1])
    assert other.content == "[]"  # an explicit empty result, not an empty message

    # u2 guessing u1's key cannot delete it; u1 can.
    model.replies += [calls(("manage_memory", {"action": "delete", "id": item.key})), "Done."]
    graph.invoke({"messages": [("user", "Forget it")]}, session("u2", "t3"))
    [refused] = tool_results(model.prompts[-1])[-1:]
    assert refused.status == "error" and store.get(("memories", "u1"), item.key) is not None
    model.replies += [calls(("manage_memory", {"action": "delete", "id": item.key})), "Done."]
    graph.invoke({"messages": [("user", "Forget my tea preference")]}, session("u1", "t4"))
    assert store.search(("memories", "u1")) == []


def test_a_call_with_an_injected_namespace_is_refused_and_the_run_goes_on(
    store: InMemoryStore, tools: list[Any]
) -> None:
    store.put(("memories", "B"), "k1", {"content": "B's diary"})
    model = RecordedChatModel(
        replies=[
            calls(
                ("manage_memory", {"content": "planted", "namespace": ["memories", "B"]}),
                ("search_memory", {"query": "diary", "user_id": "B"}),
            ),
            "Sorry.",
        ]
    )
    graph = tool_loop_graph(model, tools).compile(store=store)
    out = graph.invoke({"messages": [("user", "hi")]}, session("A", "t"))
    assert out["messages"][-1].content == "Sorry."
    results = tool_results(model.prompts[-1])
    assert [m.status for m in results] == ["error", "error"]
    assert all("namespace" in str(m.content) or "user_id" in str(m.content) for m in results)
    assert store.list_namespaces() == [("memories", "B")]


def test_a_run_without_the_user_id_stops_with_the_config_key_named(
    store: InMemoryStore, tools: list[Any]
) -> None:
    model = RecordedChatModel(replies=[calls(("manage_memory", {"content": "x"})), "?"])
    graph = tool_loop_graph(model, tools).compile(store=store)
    with pytest.raises(ConfigurationError, match=r"config\['configurable'\]\['user_id'\]"):
        graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t"}})
    assert store.list_namespaces() == []


def test_the_tools_work_in_langchains_prebuilt_agent(
    store: InMemoryStore, tools: list[Any]
) -> None:
    model = RecordedChatModel(
        replies=[
            calls(("manage_memory", {"content": "Allergic to peanuts", "memory_type": "fact"})),
            calls(("search_memory", {"query": "allergies"})),
            "You are allergic to peanuts.",
        ]
    )
    agent = create_agent(model, tools, store=store)
    out = agent.invoke({"messages": [("user", "I'm allergic to peanuts")]}, session("u1", "t"))
    assert out["messages"][-1].content == "You are allergic to peanuts."
    created, searched = tool_results(out["messages"])
    assert created.content.startswith("Created memory ")
    assert json.loads(str(searched.content))[0]["content"] == "Allergic to peanuts"


async def test_the_async_graph_uses_the_tools_async_bodies(tools: list[Any]) -> None:
    class AsyncOnly(InMemoryStore):
        def batch(self, ops: Any) -> Any:
            raise AssertionError("the async run used the sync store API")

    store = AsyncOnly()
    model = RecordedChatModel(
        replies=[
            calls(("manage_memory", {"content": "Works nights", "importance": 0.9})),
            calls(("search_memory", {"query": "schedule"})),
            "ok",
        ]
    )
    graph = tool_loop_graph(model, tools).compile(store=store)
    out = await graph.ainvoke({"messages": [("user", "I work nights")]}, session("u1", "t"))
    created, searched = tool_results(out["messages"])
    key = str(created.content).split()[2].rstrip(".")
    assert json.loads(str(searched.content)) == [
        {"key": key, "content": "Works nights", "memory_type": "experience", "score": None}
    ]
    item = await store.aget(("memories", "u1"), key)
    assert item is not None and item.value["importance"] == 0.9
