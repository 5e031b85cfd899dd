"""Summarizer: triggers, tool-call safety (property-tested), extractive summary, model prompt."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_tiered_memory import create_summarizer_graph, summarize_messages
from langgraph_tiered_memory.agent.summarizer import (
    SummaryState,
    extractive_summary,
    fold_boundary,
    messages_with_summary,
    trim_working_memory,
)


@st.composite
def conversations(draw: Any) -> list[AnyMessage]:
    """Random conversations: a system prompt, turns, and tool-call groups."""
    out: list[AnyMessage] = [SystemMessage(content="You are helpful.", id="sys")]
    n = 0
    for kind in draw(st.lists(st.sampled_from(["human", "ai", "tools"]), max_size=40)):
        n += 1
        if kind == "human":
            out.append(HumanMessage(content=f"user says {n}.", id=f"h{n}"))
        elif kind == "ai":
            out.append(AIMessage(content=f"assistant says {n}.", id=f"a{n}"))
        else:
            calls = draw(st.integers(min_value=1, max_value=3))
            ids = [f"call{n}_{i}" for i in range(calls)]
            out.append(
                AIMessage(
                    content="",
                    id=f"a{n}",
                    tool_calls=[{"name": "lookup", "args": {"q": i}, "id": i} for i in ids],
                )
            )
            for i in ids:
                out.append(ToolMessage(content=f"result {i}.", tool_call_id=i, id=f"t{i}"))
    return out


def _check_tool_pairs(messages: list[BaseMessage]) -> None:
    calls = {tc["id"] for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert results <= calls, f"orphan ToolMessages: {results - calls}"
    assert calls <= results, f"tool calls without their results: {calls - results}"


@settings(max_examples=200, deadline=None)
@given(
    conversations(),
    st.integers(min_value=1, max_value=25),
    st.integers(min_value=0, max_value=8),
)
def test_summarizing_never_splits_tool_calls_or_drops_the_system_prompt(
    chat: list[AnyMessage], max_messages: int, keep_last: int
) -> None:
    result = summarize_messages(chat, max_messages=max_messages, keep_last=keep_last)
    kept_ids = [m.id for m in result.kept]
    folded_ids = [m.id for m in result.folded]
    assert kept_ids[0] == "sys"  # the system prompt is never folded
    assert sorted(kept_ids + folded_ids) == sorted(m.id for m in chat)  # nothing lost
    _check_tool_pairs(result.kept)
    _check_tool_pairs(result.folded)
    non_system = [m for m in chat if not isinstance(m, SystemMessage)]
    if result.summarized:
        assert len(result.kept) - 1 >= min(keep_last, len(non_system))
        assert [m.id for m in result.remove] == folded_ids
    else:
        assert result.kept == chat and result.folded == []
        assert len(non_system) <= max_messages or fold_boundary(non_system, keep_last) == 0


def test_triggers_on_count_on_tokens_or_both() -> None:
    chat = [HumanMessage(content=f"short {i}", id=str(i)) for i in range(10)]
    assert not summarize_messages(chat, max_messages=10).summarized
    assert summarize_messages(chat, max_messages=9, keep_last=3).summarized
    assert not summarize_messages(chat, max_messages=None, max_tokens=10_000).summarized
    by_tokens = summarize_messages(chat, max_messages=None, max_tokens=20, keep_last=2)
    assert by_tokens.summarized and [m.id for m in by_tokens.kept] == ["8", "9"]


def test_extractive_summary_keeps_the_sentences_that_state_facts() -> None:
    chat: list[BaseMessage] = []
    for i in range(15):
        chat.append(HumanMessage(content=f"Okay, sounds good, talk soon {i}."))
        chat.append(AIMessage(content="Sure, that is nice to hear."))
    chat.insert(5, HumanMessage(content="My sister Lena is allergic to peanuts."))
    chat.insert(17, HumanMessage(content="I prefer window seats on long flights."))
    chat.insert(25, HumanMessage(content="We decided to move to Lisbon in March."))
    summary = extractive_summary(chat, max_sentences=5)
    for fact in ("allergic to peanuts", "window seats", "Lisbon in March"):
        assert fact in summary
    assert len(summary.splitlines()) == 5
    # Running: the next summary extends the previous one instead of starting over.
    later = extractive_summary([HumanMessage(content="My dog Rex turned nine today.")], summary)
    assert "Lisbon in March" in later and "Rex turned nine" in later


def test_model_gets_the_previous_summary_and_the_folded_messages() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage(content="NEW SUMMARY")])
    chat = [HumanMessage(content=f"turn {i}", id=str(i)) for i in range(8)]
    result = summarize_messages(
        chat, running_summary="OLD SUMMARY", model=model, max_messages=6, keep_last=2
    )
    assert result.summary == "NEW SUMMARY"
    system, human = result.prompt
    assert isinstance(system, SystemMessage) and "OLD SUMMARY" in str(system.content)
    assert "turn 0" in str(human.content) and "turn 5" in str(human.content)
    assert "turn 6" not in str(human.content)  # kept messages are not summarized


def test_the_model_sees_the_summary_as_a_system_message() -> None:
    msgs: list[AnyMessage] = [SystemMessage(content="rules"), HumanMessage(content="hi")]
    shown = messages_with_summary(msgs, "User likes tea.")
    assert [type(m).__name__ for m in shown] == ["SystemMessage", "SystemMessage", "HumanMessage"]
    assert "User likes tea." in str(shown[1].content)
    assert messages_with_summary(msgs, None) == msgs


def test_graph_state_after_each_step_and_summary_survives_checkpoints() -> None:
    summarizer = create_summarizer_graph(max_messages=3, keep_last=2).compile()

    def chat_node(state: SummaryState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"Reply to {state['messages'][-1].content}")]}

    builder = StateGraph(SummaryState)
    builder.add_node("chat", chat_node)
    builder.add_node("summarize", summarizer)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "summarize")
    graph = builder.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t1"}}
    out = graph.invoke({"messages": [HumanMessage(content="I live in Porto now.")]}, cfg)
    assert len(out["messages"]) == 2 and "summary" not in out
    out = graph.invoke({"messages": [HumanMessage(content="My cat is called Miso.")]}, cfg)
    assert len(out["messages"]) == 2  # 4 messages > 3: the 2 oldest are folded
    assert "Porto" in out["summary"]
    state = graph.get_state(cfg)
    assert "Porto" in state.values["summary"]  # persisted in the checkpoint
    assert [m.content for m in state.values["messages"]][0] == "My cat is called Miso."


def test_trimming_keeps_system_and_recent_messages_and_never_orphans_tools() -> None:
    chat: list[AnyMessage] = [SystemMessage(content="rules " * 5)]
    for i in range(10):
        chat.append(HumanMessage(content=f"question {i} " * 5))
        chat.append(AIMessage(content="", tool_calls=[{"name": "f", "args": {}, "id": f"c{i}"}]))
        chat.append(ToolMessage(content="x " * 5, tool_call_id=f"c{i}"))
        chat.append(AIMessage(content=f"answer {i} " * 5))
    trimmed = trim_working_memory(chat, max_tokens=80)
    assert isinstance(trimmed[0], SystemMessage)
    assert isinstance(trimmed[1], HumanMessage)
    assert trimmed[-1] is chat[-1] and len(trimmed) < len(chat)
    _check_tool_pairs(trimmed)


def test_bench_summarizer_reports_context_ratio_and_coverage(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from langgraph_tiered_memory.cli.app import app

    turns = []
    for i in range(60):
        speaker = "Ana" if i % 2 == 0 else "Ben"
        turns.append(
            {"speaker": speaker, "dia_id": f"D1:{i + 1}", "text": f"Ok, turn number {i} here."}
        )
    turns[3]["text"] = "My sister Lena is allergic to peanuts."
    turns[58]["text"] = "We decided to fly to Lisbon in March."
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1": turns,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
        },
        "qa": [
            {"question": "Allergy?", "answer": "peanuts", "evidence": ["D1:4"], "category": 4},
            {"question": "Where?", "answer": "Lisbon", "evidence": ["D1:59"], "category": 4},
        ],
    }
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([sample]))
    result = CliRunner().invoke(app, ["bench", "summarizer", "--data", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert 0 < data["context_ratio"] < 0.6
    assert data["evidence_turns"] == 2
    assert data["covered_in_summary"] == 1 and data["covered_in_messages"] == 1
    assert data["covered_in_store"] is None
    # With the long-term store, folded turns can still be found by a search.
    turns[10]["text"] = "Ben keeps three goats named Pip, Pop and Pam."
    sample["qa"].append(
        {
            "question": "What goats does Ben keep?",
            "answer": "x",
            "evidence": ["D1:11"],
            "category": 4,
        }
    )
    path.write_text(json.dumps([sample]))
    args = ["bench", "summarizer", "--data", str(path), "--store", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["evidence_turns"] == 3 and isinstance(data["covered_in_store"], int)
    assert data["evidence_coverage"] == 1.0


async def test_async_twin_gives_the_same_decision_and_calls_the_model_async() -> None:
    from langgraph_tiered_memory import asummarize_messages

    chat = [HumanMessage(content=f"I own {i} bikes.", id=str(i)) for i in range(9)]
    model = FakeMessagesListChatModel(responses=[AIMessage(content="Owns bikes.")])
    sync = summarize_messages(chat, max_messages=6, keep_last=3)
    result = await asummarize_messages(chat, max_messages=6, keep_last=3, model=model)
    assert [m.id for m in result.kept] == [m.id for m in sync.kept] == ["6", "7", "8"]
    assert result.summary == "Owns bikes." and len(result.prompt) == 2
    none = await asummarize_messages(chat[:3], max_messages=6)
    assert not none.summarized and none.kept == chat[:3]
