"""Running summary of a conversation: bounded working memory that never splits tool calls.

Three layers:

- `summarize_messages` / `asummarize_messages`: pure functions. Given the messages and
  the running summary, they decide whether to summarize (message count and/or token
  budget), choose which messages to fold so that no `AIMessage` with `tool_calls` is
  separated from its `ToolMessage`s and system messages stay, and extend the running
  summary with the folded messages (with a chat model, or extractively without one).
- `SummarizationNode`: a graph node with configurable state keys; it returns
  `RemoveMessage`s for the folded messages and the new summary, and can write the
  summary to a session saver (`set_summary`).
- `create_summarizer_graph`: an uncompiled `StateGraph` usable as a subgraph of any
  graph with a `messages` channel.

Every layer accepts messages as `add_messages` does: message objects, dicts
(`{"role": "user", "content": ...}`, what Studio and the SDK send), `(role, text)`
tuples and strings, alone or in a list.

Every layer takes `redactor=` (see `redaction`): a new summary is redacted before it
is returned, put in the state or written to a session.

The extractive summary (no model) lives in `agent._extractive`; the choice of what stays in
working memory (`fold_boundary`, `messages_with_summary`, `trim_working_memory`) in
`agent._message_window`. This module re-exports them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langchain_core.messages.utils import convert_to_messages, count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import NotRequired, TypedDict

from langgraph_tiered_memory._models import resolve_model
from langgraph_tiered_memory.agent._extractive import extractive_summary, message_text, speaker
from langgraph_tiered_memory.agent._message_window import (
    TokenCounter,
    fold_boundary,
    messages_with_summary,
    trim_working_memory,
)
from langgraph_tiered_memory.privacy.redaction import (
    Redactor,
    RedactorSpec,
    redact_text,
    resolve_redactor,
)

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "SummarizationResult",
    "summarize_messages",
    "asummarize_messages",
    "fold_boundary",
    "extractive_summary",
    "messages_with_summary",
    "trim_working_memory",
    "SummarizationNode",
    "SummaryState",
    "create_summarizer_graph",
    "as_messages",
    "CHECKPOINTER",
]

DEFAULT_SUMMARY_PROMPT = (
    "You keep the running summary of a conversation. Extend the summary below with the"
    " new messages. Preserve facts, decisions and the user's preferences; drop small"
    " talk. Answer with the updated summary only.\n\nCurrent summary:\n{summary}"
)
"""Prompt of the model-based summary; `{summary}` is the running summary (or "none")."""


@dataclass
class SummarizationResult:
    """What one summarization step decided.

    Attributes:
        summarized: Whether anything was folded into the summary.
        summary: The running summary after this step (unchanged when not summarized).
        kept: The messages that stay in working memory, in order (system messages first).
        folded: The messages folded into the summary (removed from state).
        prompt: The messages the model received (empty without a model).
        redactions: What the redactor removed from the new summary, by kind.
    """

    summarized: bool
    summary: str | None
    kept: list[AnyMessage]
    folded: list[AnyMessage] = field(default_factory=list)
    prompt: list[BaseMessage] = field(default_factory=list)
    redactions: dict[str, int] = field(default_factory=dict)

    def _redact(self, redactor: Redactor | None) -> SummarizationResult:
        """Redact a new summary in place (a summary that was not extended is kept)."""
        if redactor is not None and self.summarized and self.summary:
            found = redact_text(self.summary, redactor)
            self.summary, self.redactions = found.text, found.counts
        return self

    @property
    def remove(self) -> list[RemoveMessage]:
        """`RemoveMessage`s deleting the folded messages from a `messages` channel."""
        return [RemoveMessage(id=m.id) for m in self.folded if m.id is not None]


_log = logging.getLogger("langgraph_tiered_memory.agent.summarizer")

CHECKPOINTER = "checkpointer"
"""`sessions=` value: write the summary to the session layer of the run's checkpointer."""

# LangGraph's config key of the run's checkpointer (`langgraph._internal._constants`).
_CONFIG_KEY_CHECKPOINTER = "__pregel_checkpointer"


def as_messages(messages: Any) -> list[AnyMessage]:
    """Messages in any form `add_messages` takes, as message objects.

    A message object, a dict (`{"role": ..., "content": ...}` or `{"type": ...}`), a
    `(role, text)` tuple or a string (a user message), alone or in a list.
    """
    if messages is None:
        return []
    if isinstance(messages, (str, dict, tuple, BaseMessage)):
        messages = [messages]
    return cast("list[AnyMessage]", convert_to_messages(messages))


# --------------------------------------------------------------------------- planning


def _plan(
    messages: Sequence[AnyMessage],
    *,
    max_messages: int | None,
    max_tokens: int | None,
    keep_last: int,
    token_counter: TokenCounter,
) -> tuple[list[AnyMessage], list[AnyMessage], list[AnyMessage]] | None:
    """(system messages, folded, kept) when summarization triggers, else None."""
    if max_messages is None and max_tokens is None:
        raise ValueError("Give max_messages, max_tokens or both (they trigger summarization).")
    system: list[AnyMessage] = [m for m in messages if isinstance(m, SystemMessage)]
    rest: list[AnyMessage] = [m for m in messages if not isinstance(m, SystemMessage)]
    over_count = max_messages is not None and len(rest) > max_messages
    over_tokens = max_tokens is not None and token_counter(list(messages)) > max_tokens
    if not (over_count or over_tokens):
        return None
    boundary = fold_boundary(rest, keep_last)
    if boundary == 0:
        return None
    return system, rest[:boundary], rest[boundary:]


def _prompt(folded: Sequence[BaseMessage], previous: str | None, prompt: str) -> list[BaseMessage]:
    transcript = "\n".join(f"{speaker(m)}: {message_text(m)}" for m in folded if message_text(m))
    return [
        SystemMessage(content=prompt.format(summary=previous or "none")),
        HumanMessage(content=f"New messages:\n{transcript}"),
    ]


def _step(
    messages: Sequence[AnyMessage],
    running_summary: str | None,
    model: str | BaseChatModel | None,
    max_messages: int | None,
    max_tokens: int | None,
    keep_last: int,
    prompt: str,
    token_counter: TokenCounter,
    max_summary_sentences: int,
    redactor: Redactor | None,
) -> SummarizationResult | tuple[BaseChatModel, SummarizationResult]:
    """Everything but the model call: a final result, or the model and a pending result."""
    messages = as_messages(messages)
    plan = _plan(
        messages,
        max_messages=max_messages,
        max_tokens=max_tokens,
        keep_last=keep_last,
        token_counter=token_counter,
    )
    if plan is None:
        return SummarizationResult(False, running_summary, list(messages))
    system, folded, kept = plan
    chat = resolve_model(model)
    if chat is None:
        summary = extractive_summary(folded, running_summary, max_sentences=max_summary_sentences)
        return SummarizationResult(True, summary, system + kept, folded)._redact(redactor)
    request = _prompt(folded, running_summary, prompt)
    return chat, SummarizationResult(True, running_summary, system + kept, folded, request)


def _with_reply(
    result: SummarizationResult, reply: BaseMessage, redactor: Redactor | None
) -> SummarizationResult:
    result.summary = message_text(reply)
    return result._redact(redactor)


def summarize_messages(
    messages: Sequence[AnyMessage] | Any,
    *,
    running_summary: str | None = None,
    model: str | BaseChatModel | None = None,
    max_messages: int | None = 20,
    max_tokens: int | None = None,
    keep_last: int = 5,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    token_counter: TokenCounter = count_tokens_approximately,
    max_summary_sentences: int = 12,
    redactor: RedactorSpec = None,
) -> SummarizationResult:
    """Fold old messages into the running summary when a trigger fires.

    Args:
        messages: The conversation, oldest first: message objects, dicts, `(role,
            text)` tuples or strings (as `add_messages` takes them).
        running_summary: The summary so far (extended, never rebuilt from scratch).
        model: Chat model (or `init_chat_model` string) writing the summary; None uses
            the extractive summary.
        max_messages: Summarize when there are more non-system messages than this.
        max_tokens: Summarize when the messages count more tokens than this.
        keep_last: Most recent messages that stay (more when a tool-call group
            straddles the boundary).
        prompt: System prompt of the model, with a `{summary}` placeholder.
        token_counter: Counts the tokens of a list of messages.
        max_summary_sentences: Size of the extractive summary.
        redactor: Redact personal data from the new summary (None: off; True: the
            default `PatternRedactor`; or any `Redactor`).

    Returns:
        The decision, the new summary and the messages to keep and to remove.

    Example:
        ```python
        from langchain_core.messages import AIMessage, HumanMessage
        from langgraph_tiered_memory import summarize_messages

        chat = [HumanMessage(f"I am message {i}.", id=str(i)) for i in range(25)]
        result = summarize_messages(chat, max_messages=20, keep_last=5)
        assert result.summarized and len(result.kept) == 5 and len(result.folded) == 20
        ```
    """
    resolved = resolve_redactor(redactor)
    step = _step(
        messages,
        running_summary,
        model,
        max_messages,
        max_tokens,
        keep_last,
        prompt,
        token_counter,
        max_summary_sentences,
        resolved,
    )
    if isinstance(step, SummarizationResult):
        return step
    chat, result = step
    return _with_reply(result, chat.invoke(result.prompt), resolved)


async def asummarize_messages(
    messages: Sequence[AnyMessage] | Any,
    *,
    running_summary: str | None = None,
    model: str | BaseChatModel | None = None,
    max_messages: int | None = 20,
    max_tokens: int | None = None,
    keep_last: int = 5,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    token_counter: TokenCounter = count_tokens_approximately,
    max_summary_sentences: int = 12,
    redactor: RedactorSpec = None,
) -> SummarizationResult:
    """Async twin of `summarize_messages` (the model is called with `ainvoke`).

    Args:
        messages: The conversation, oldest first.
        running_summary: The summary so far.
        model: Chat model or `init_chat_model` string; None: extractive summary.
        max_messages: Message-count trigger.
        max_tokens: Token-budget trigger.
        keep_last: Most recent messages that stay.
        prompt: System prompt of the model, with a `{summary}` placeholder.
        token_counter: Counts the tokens of a list of messages.
        max_summary_sentences: Size of the extractive summary.
        redactor: Redact personal data from the new summary (as `summarize_messages`).

    Example:
        ```python
        import asyncio

        from langchain_core.language_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage, HumanMessage
        from langgraph_tiered_memory import asummarize_messages

        model = GenericFakeChatModel(messages=iter([AIMessage("The user counted to 19.")]))
        chat = [HumanMessage(f"I am message {i}.", id=str(i)) for i in range(25)]
        result = asyncio.run(asummarize_messages(chat, model=model, max_messages=20))
        assert result.summary == "The user counted to 19." and len(result.kept) == 5
        ```
    """
    resolved = resolve_redactor(redactor)
    step = _step(
        messages,
        running_summary,
        model,
        max_messages,
        max_tokens,
        keep_last,
        prompt,
        token_counter,
        max_summary_sentences,
        resolved,
    )
    if isinstance(step, SummarizationResult):
        return step
    chat, result = step
    return _with_reply(result, await chat.ainvoke(result.prompt), resolved)


# --------------------------------------------------------------------------- node and graph


class SummarizationNode:
    """Graph node folding old messages into a running summary.

    It reads `messages_key` and `summary_key` from the state and returns
    `RemoveMessage`s for the folded messages and the new summary. With `sessions` (a
    `RedisSessionSaver`, or anything with `set_summary(thread_id, summary)`), the
    summary is also written to the thread's session; `sessions="checkpointer"` uses
    the checkpointer the graph runs with (compiled with, or served by `langgraph
    dev`) when it has a session layer.

    Args:
        model: Chat model or `init_chat_model` string; None: extractive summary.
        messages_key: State key of the messages.
        summary_key: State key of the running summary.
        max_messages: Message-count trigger (None: off).
        max_tokens: Token-budget trigger (None: off).
        keep_last: Most recent messages that stay.
        prompt: System prompt of the model, with a `{summary}` placeholder.
        token_counter: Counts the tokens of a list of messages.
        max_summary_sentences: Size of the extractive summary.
        sessions: Where to persist the summary per thread (optional):
            a session saver, or `"checkpointer"` for the run's checkpointer.
        replace_all: Return `[RemoveMessage(REMOVE_ALL_MESSAGES), *kept]` instead of one
            `RemoveMessage` per folded message. The summarizer graph uses this so its
            output, applied by the parent graph's `add_messages`, removes the folded
            messages there too.
        redactor: Redact personal data from the new summary before it is returned
            and written to `sessions` (None: off; True: `PatternRedactor()`).

    Example:
        ```python
        from langchain_core.messages import HumanMessage
        from langgraph.graph import START, StateGraph
        from langgraph_tiered_memory import SummarizationNode
        from langgraph_tiered_memory.agent.summarizer import SummaryState

        builder = StateGraph(SummaryState)
        builder.add_node("summarize", SummarizationNode(max_messages=4, keep_last=2))
        builder.add_edge(START, "summarize")
        chat = [HumanMessage(f"My number {i} is {i * 7}.", id=str(i)) for i in range(6)]
        out = builder.compile().invoke({"messages": chat})
        assert [m.id for m in out["messages"]] == ["4", "5"] and "number 0" in out["summary"]
        ```
    """

    def __init__(
        self,
        model: str | BaseChatModel | None = None,
        *,
        messages_key: str = "messages",
        summary_key: str = "summary",
        max_messages: int | None = 20,
        max_tokens: int | None = None,
        keep_last: int = 5,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        token_counter: TokenCounter = count_tokens_approximately,
        max_summary_sentences: int = 12,
        sessions: Any = None,
        replace_all: bool = False,
        redactor: RedactorSpec = None,
    ) -> None:
        if max_messages is None and max_tokens is None:
            raise ValueError("Give max_messages, max_tokens or both (they trigger summarization).")
        if keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {keep_last}.")
        self.model = resolve_model(model)
        self.messages_key = messages_key
        self.summary_key = summary_key
        self.sessions = sessions
        self.replace_all = replace_all
        self._options: dict[str, Any] = {
            "max_messages": max_messages,
            "max_tokens": max_tokens,
            "keep_last": keep_last,
            "prompt": prompt,
            "token_counter": token_counter,
            "max_summary_sentences": max_summary_sentences,
            "redactor": resolve_redactor(redactor),
        }

    def _update(self, result: SummarizationResult) -> dict[str, Any]:
        if not result.summarized:
            return {}
        if self.replace_all:
            update: list[Any] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *result.kept]
            return {self.messages_key: update, self.summary_key: result.summary}
        return {self.messages_key: result.remove, self.summary_key: result.summary}

    @staticmethod
    def _thread(config: Any) -> str | None:
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        return None if thread is None else str(thread)

    def _sessions(self, config: Any) -> Any:
        """Where this run's summary goes: `sessions`, the run's checkpointer, or None."""
        if self.sessions != CHECKPOINTER:
            return self.sessions
        found = ((config or {}).get("configurable") or {}).get(_CONFIG_KEY_CHECKPOINTER)
        if found is None or not (hasattr(found, "set_summary") or hasattr(found, "aset_summary")):
            _log.debug("The run's checkpointer has no session layer; summary not persisted.")
            return None
        return found

    # LangGraph passes the run config only to a parameter annotated exactly
    # "RunnableConfig" or "Optional[RunnableConfig]" (annotations are strings here).
    def __call__(self, state: Any, config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Summarize if a trigger fires (sync)."""
        result = summarize_messages(
            state[self.messages_key],
            running_summary=state.get(self.summary_key),
            model=self.model,
            **self._options,
        )
        thread, sessions = self._thread(config), self._sessions(config)
        if result.summarized and sessions is not None and thread and result.summary:
            sessions.set_summary(thread, result.summary)
        return self._update(result)

    async def acall(self, state: Any, config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Summarize if a trigger fires (async)."""
        result = await asummarize_messages(
            state[self.messages_key],
            running_summary=state.get(self.summary_key),
            model=self.model,
            **self._options,
        )
        thread, sessions = self._thread(config), self._sessions(config)
        if result.summarized and sessions is not None and thread and result.summary:
            if hasattr(sessions, "aset_summary"):
                await sessions.aset_summary(thread, result.summary)
            else:
                sessions.set_summary(thread, result.summary)
        return self._update(result)

    def as_runnable(self) -> Any:
        """The node as a `RunnableLambda` with sync and async implementations."""
        from langchain_core.runnables import RunnableLambda

        return RunnableLambda(self.__call__, afunc=self.acall, name="summarize")


class SummaryState(MessagesState):
    """A chat state with a running summary: `messages` (`add_messages`) and `summary`."""

    summary: str


def _replace(left: list[Any], right: list[Any]) -> list[Any]:
    return right


class _SummarizerGraphState(TypedDict):
    # Inside the summarizer graph `messages` holds the update for the parent graph, so
    # a parent with `add_messages` applies the removals (a subgraph's output is its
    # final state, which would otherwise only re-add the kept messages).
    messages: Annotated[list[Any], _replace]
    summary: NotRequired[str]


def create_summarizer_graph(
    model: str | BaseChatModel | None = None,
    /,
    *,
    max_messages: int | None = 20,
    max_tokens: int | None = None,
    keep_last: int = 5,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    token_counter: TokenCounter = count_tokens_approximately,
    max_summary_sentences: int = 12,
    sessions: Any = None,
    redactor: RedactorSpec = None,
) -> StateGraph:
    """An uncompiled graph that keeps working memory bounded with a running summary.

    Add it, compiled, as a node of any graph whose state has a `messages` channel with
    `add_messages` and a `summary` key (such as `SummaryState`). Its output `messages`
    is the update for that channel (`RemoveMessage(REMOVE_ALL_MESSAGES)` followed by
    the kept messages) when it summarized, and the input unchanged otherwise.

    Args:
        model: Chat model or `init_chat_model` string; None: extractive summary.
        max_messages: Message-count trigger (default 20; None: off).
        max_tokens: Token-budget trigger (None: off).
        keep_last: Most recent messages that stay (default 5).
        prompt: System prompt of the model, with a `{summary}` placeholder.
        token_counter: Counts the tokens of a list of messages.
        max_summary_sentences: Size of the extractive summary (no model).
        sessions: A session saver (or anything with `set_summary`) to persist the
            summary, or `"checkpointer"`: the session layer of the run's checkpointer.
        redactor: Redact personal data from the summary before it reaches the state
            or `sessions` (None: off; True: `PatternRedactor()`; or any `Redactor`).

    Example:
        ```python
        from langchain_core.messages import HumanMessage
        from langgraph_tiered_memory import create_summarizer_graph

        from langgraph.graph import START, StateGraph
        from langgraph_tiered_memory.agent.summarizer import SummaryState

        summarizer = create_summarizer_graph(max_messages=4, keep_last=2).compile()
        builder = StateGraph(SummaryState)
        builder.add_node("summarize", summarizer)
        builder.add_edge(START, "summarize")
        chat = [HumanMessage(f"My number {i} is {i * 7}.", id=str(i)) for i in range(6)]
        out = builder.compile().invoke({"messages": chat})
        assert [m.id for m in out["messages"]] == ["4", "5"] and "number 0" in out["summary"]
        ```
    """
    node = SummarizationNode(
        model,
        max_messages=max_messages,
        max_tokens=max_tokens,
        keep_last=keep_last,
        prompt=prompt,
        token_counter=token_counter,
        max_summary_sentences=max_summary_sentences,
        sessions=sessions,
        replace_all=True,
        redactor=redactor,
    )
    graph = StateGraph(_SummarizerGraphState)
    graph.add_node("summarize", node.as_runnable())
    graph.add_edge(START, "summarize")
    graph.add_edge("summarize", END)
    return graph
