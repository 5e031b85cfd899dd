"""The prebuilt graphs served by Studio take messages as `add_messages` does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_tiered_memory.agent.summarizer import (
    CHECKPOINTER,
    SummarizationNode,
    SummaryState,
    as_messages,
    asummarize_messages,
    create_summarizer_graph,
    summarize_messages,
)

FORMS: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "My cat is called Miso."},
    {"type": "ai", "content": "Noted, Miso."},
    ("user", "My dog is called Rex."),
    ("assistant", "Noted, Rex."),
    "I live in Lyon.",
    HumanMessage("I work as a baker."),
]


def test_as_messages_accepts_every_form() -> None:
    converted = as_messages(FORMS)
    kinds = [type(m).__name__ for m in converted]
    assert kinds == [
        "SystemMessage", "HumanMessage", "AIMessage", "HumanMessage", "AIMessage",
        "HumanMessage", "HumanMessage",
    ]  # fmt: skip
    assert as_messages("hello")[0].content == "hello"
    assert as_messages({"role": "user", "content": "hi"})[0].content == "hi"
    assert as_messages(None) == []


def test_summarize_messages_on_dicts_tuples_and_strings() -> None:
    result = summarize_messages(FORMS, max_messages=3, keep_last=2)
    assert result.summarized
    assert "Miso" in (result.summary or "") and "Rex" in (result.summary or "")
    assert isinstance(result.kept[0], SystemMessage)  # system messages stay
    assert [m.content for m in result.kept[1:]] == ["I live in Lyon.", "I work as a baker."]
    again = asyncio.run(asummarize_messages(FORMS, max_messages=3, keep_last=2))
    assert again.summary == result.summary


def test_summarizer_graph_takes_dicts() -> None:
    graph = create_summarizer_graph(max_messages=3, keep_last=2).compile()
    out = graph.invoke({"messages": FORMS})
    assert "Miso" in out["summary"]
    assert [type(m).__name__ for m in out["messages"]][0] == "RemoveMessage"
    assert [m.content for m in out["messages"][2:]] == ["I live in Lyon.", "I work as a baker."]
    async_out = asyncio.run(graph.ainvoke({"messages": FORMS}))
    assert async_out["summary"] == out["summary"]


class _SessionSaver(InMemorySaver):
    """An in-memory checkpointer with a session layer, as `RedisSessionSaver` has."""

    def __init__(self) -> None:
        super().__init__()
        self.summaries: dict[str, str] = {}

    def set_summary(self, thread_id: str, summary: str) -> None:
        self.summaries[thread_id] = summary


class _AsyncSessionSaver(InMemorySaver):
    """Only `aset_summary`, as `AsyncRedisSessionSaver`."""

    def __init__(self) -> None:
        super().__init__()
        self.summaries: dict[str, str] = {}

    async def aset_summary(self, thread_id: str, summary: str) -> None:
        self.summaries[thread_id] = summary


def _chat_graph(saver: Any) -> Any:
    node = SummarizationNode(max_messages=3, keep_last=2, sessions=CHECKPOINTER)
    builder = StateGraph(SummaryState)
    builder.add_node("summarize", node.as_runnable())
    builder.add_edge(START, "summarize")
    return builder.compile(checkpointer=saver)


def test_sessions_checkpointer_writes_to_the_runs_checkpointer() -> None:
    saver = _SessionSaver()
    graph = _chat_graph(saver)
    out = graph.invoke({"messages": FORMS[1:]}, {"configurable": {"thread_id": "t1"}})
    assert len(out["messages"]) == 2 and "Miso" in saver.summaries["t1"]
    async_saver = _AsyncSessionSaver()
    graph = _chat_graph(async_saver)
    asyncio.run(graph.ainvoke({"messages": FORMS[1:]}, {"configurable": {"thread_id": "t2"}}))
    assert "Miso" in async_saver.summaries["t2"]


def test_sessions_checkpointer_without_a_session_layer_only_summarizes() -> None:
    graph = _chat_graph(InMemorySaver())
    out = graph.invoke({"messages": FORMS[1:]}, {"configurable": {"thread_id": "t3"}})
    assert "Miso" in out["summary"] and len(out["messages"]) == 2


@pytest.mark.parametrize("message", ["What is my cat called?", ("user", "What is my cat called?")])
def test_served_summarizer_graph_accepts_each_form(message: Any) -> None:
    from langgraph_tiered_memory import studio_graphs

    out = studio_graphs.summarizer.invoke({"messages": [message]})
    assert isinstance(out["messages"][0], HumanMessage)
    reply = studio_graphs.OfflineChatModel().invoke([SystemMessage("- likes tea"), message])
    assert isinstance(reply, AIMessage) and "What is my cat called?" in reply.content
    assert "memory lines in context: 1" in reply.content


def test_served_model_choice() -> None:
    from langgraph_tiered_memory.studio_graphs import OfflineChatModel, chat_model

    assert isinstance(chat_model({}), OfflineChatModel)
    assert chat_model({"OPENAI_API_KEY": "sk-test"}) == "openai:gpt-4o-mini"
    named = {"OPENAI_API_KEY": "sk-test", "TIERED_MEMORY_MODEL": "anthropic:claude-x"}
    assert chat_model(named) == "anthropic:claude-x"


def test_served_summarizer_shows_the_summary_it_kept() -> None:
    from langgraph_tiered_memory import studio_graphs

    first = studio_graphs.summarizer.invoke({"messages": [{"role": "user", "content": "Hi."}]})
    assert first["summary"] == ""
    assert first["summary_status"].startswith("Kept 1 messages; the summary is empty")
    talk = [{"role": "user", "content": f"My number {i} is {i * 7}."} for i in range(25)]
    folded = studio_graphs.summarizer.invoke({"messages": talk})
    assert "My number" in folded["summary"]
    assert len(folded["messages"]) == 5  # TIERED_MEMORY_SUMMARY_KEEP_LAST's default
    assert folded["summary_status"] == (
        "Kept the last 5 messages; the older ones are in the summary."
    )
