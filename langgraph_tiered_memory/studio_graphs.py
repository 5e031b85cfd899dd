"""The graphs the repository's `langgraph.json` serves: memory agent, summarizer, forgetting.

Each is compiled WITHOUT a store or checkpointer: the server (`langgraph dev`, LangGraph
Platform) gives them its own, here the tiered store and the session saver of
`langgraph_tiered_memory.server`.

- `memory_agent`: `create_memory_agent` with the summarizer on, writing the running
  summary to the served checkpointer's session layer. Runs need
  `config={"configurable": {"user_id": ...}}`. Its model is `TIERED_MEMORY_MODEL`
  (an `init_chat_model` string), else `openai:gpt-4o-mini` when `OPENAI_API_KEY` is
  set, else `OfflineChatModel`, a scripted model that needs no network.
- `summarizer`: a chat thread (`SummaryState`) whose old messages are folded into a
  running summary (`TIERED_MEMORY_SUMMARY_MAX_MESSAGES`, default 20;
  `TIERED_MEMORY_SUMMARY_KEEP_LAST`, default 5), also written to the session. Its
  output holds `summary` (empty until the first fold) and `summary_status`, a line
  saying what it kept.
- `forgetting`: `create_forgetting_graph` on the served store, a dry run unless the
  input says `{"dry_run": false}`: the first click reports and deletes nothing.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory.agent.builder import create_memory_agent
from langgraph_tiered_memory.agent.forgetting_graph import create_forgetting_graph
from langgraph_tiered_memory.agent.summarizer import (
    CHECKPOINTER,
    SummarizationNode,
    SummaryState,
    message_text,
)
from langgraph_tiered_memory.demo.model import FakeReplyModel
from langgraph_tiered_memory.errors import ConfigurationError

__all__ = [
    "OfflineChatModel",
    "StudioSummaryState",
    "chat_model",
    "forgetting",
    "memory_agent",
    "summarizer",
]

DEFAULT_OPENAI_MODEL = "openai:gpt-4o-mini"


class OfflineChatModel(FakeReplyModel):
    """A scripted chat model for offline serving.

    It acknowledges the user's last message and says how many memory lines its context held.
    """

    llm_type: ClassVar[str] = "tiered-memory-offline"

    def _reply(self, messages: list[BaseMessage]) -> str:
        said = next(
            (message_text(m) for m in reversed(messages) if isinstance(m, HumanMessage)), ""
        )
        context = "\n".join(message_text(m) for m in messages if isinstance(m, SystemMessage))
        recalled = sum(1 for line in context.splitlines() if line.lstrip().startswith("- "))
        return f"(offline model) Noted: {said.strip()} [memory lines in context: {recalled}]"


def chat_model(environ: Any = None) -> str | BaseChatModel:
    """The served agent's model: `TIERED_MEMORY_MODEL`, OpenAI with a key, else offline."""
    env = os.environ if environ is None else environ
    named = (env.get("TIERED_MEMORY_MODEL") or "").strip()
    if named:
        return named
    if (env.get("OPENAI_API_KEY") or "").strip():
        return DEFAULT_OPENAI_MODEL
    return OfflineChatModel()


def _positive(name: str, default: int) -> int:
    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {raw!r}.")
    return int(raw)


class StudioSummaryState(SummaryState, total=False):
    """The served summarizer's state: `SummaryState` and a line saying what it kept."""

    summary_status: str


def _summarizer_graph() -> Any:
    most = _positive("TIERED_MEMORY_SUMMARY_MAX_MESSAGES", 20)
    node = SummarizationNode(
        max_messages=most,
        keep_last=_positive("TIERED_MEMORY_SUMMARY_KEEP_LAST", 5),
        sessions=CHECKPOINTER,
    )

    def status(state: StudioSummaryState) -> dict[str, Any]:
        kept, summary = len(state["messages"]), state.get("summary") or ""
        said = (
            f"Kept the last {kept} messages; the older ones are in the summary."
            if summary
            else f"Kept {kept} messages; the summary is empty: older messages fold into it"
            f" past {most} messages (TIERED_MEMORY_SUMMARY_MAX_MESSAGES)."
        )
        return {"summary": summary, "summary_status": said}

    builder = StateGraph(StudioSummaryState, input_schema=MessagesState)
    builder.add_node("summarize", node.as_runnable())
    builder.add_node("status", status)
    builder.add_edge(START, "summarize")
    builder.add_edge("summarize", "status")
    return builder.compile(name="summarizer")


memory_agent = create_memory_agent(
    chat_model(), summarize=SummarizationNode(sessions=CHECKPOINTER)
).compile(name="memory_agent")
"""The memory agent (served without its own store or checkpointer)."""

summarizer = _summarizer_graph()
"""A chat thread kept bounded by a running summary."""

forgetting = create_forgetting_graph(dry_run=True).compile(name="forgetting")
"""Decay, consolidation and forgetting of the served store's long-term memories (a dry
run unless the input says `{"dry_run": false}`)."""
