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
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import convert_to_messages, count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import NotRequired, TypedDict

from langgraph_tiered_memory._drive import Call, adrive, drive
from langgraph_tiered_memory._models import resolve_model
from langgraph_tiered_memory.privacy.redaction import RedactorSpec, redact_text, resolve_redactor

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

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Counts the tokens of a list of messages."""


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


# --------------------------------------------------------------------------- working memory


def fold_boundary(messages: Sequence[BaseMessage], keep_last: int) -> int:
    """Index of the first non-system message to keep, never inside a tool-call group.

    The last `keep_last` non-system messages are kept. The boundary moves earlier while
    a kept `ToolMessage` answers an `AIMessage` that would be folded, so a tool call and
    its results always stay together.

    Args:
        messages: The non-system messages, oldest first.
        keep_last: How many of the most recent messages to keep at least.

    Returns:
        The boundary: messages before it are folded, the rest are kept.
    """
    boundary = max(0, len(messages) - max(0, keep_last))
    while 0 < boundary < len(messages):
        kept_results = {
            str(m.tool_call_id) for m in messages[boundary:] if isinstance(m, ToolMessage)
        }
        folded_calls = {
            str(tc["id"])
            for m in messages[:boundary]
            if isinstance(m, AIMessage)
            for tc in m.tool_calls
            if tc.get("id")
        }
        if not kept_results & folded_calls and not isinstance(messages[boundary], ToolMessage):
            break
        boundary -= 1
    return boundary


def messages_with_summary(messages: Sequence[AnyMessage], summary: str | None) -> list[BaseMessage]:
    """The messages a model should see: system messages, the summary, then the rest.

    The summary comes as a system message after the original system messages.

    Args:
        messages: Working memory.
        summary: The running summary, or None.
    """
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    note = [SystemMessage(content=f"Summary of the earlier conversation:\n{summary}")]
    return [*system, *(note if summary else []), *rest]


def trim_working_memory(
    messages: Sequence[AnyMessage],
    *,
    max_tokens: int,
    token_counter: TokenCounter = count_tokens_approximately,
) -> list[BaseMessage]:
    """Keep the system messages and the most recent messages within `max_tokens`.

    Unlike summarization this forgets what it drops (nothing is folded into a summary)
    and changes nothing in state: use it to shape one model call. It wraps
    `langchain_core.messages.trim_messages` with the strategy "last", keeps system
    messages, starts the window on a human message, and never leaves a `ToolMessage`
    without its tool call.

    Args:
        messages: Working memory, oldest first.
        max_tokens: Token budget of the result.
        token_counter: Counts the tokens of a list of messages.

    Example:
        ```python
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        from langgraph_tiered_memory.agent.summarizer import trim_working_memory

        chat = [SystemMessage("Be brief."), HumanMessage("hi"), AIMessage("hello!")]
        chat.append(HumanMessage("What is 2 + 2?"))
        window = trim_working_memory(chat, max_tokens=2, token_counter=len)  # 1 message = 1 token
        assert [m.content for m in window] == ["Be brief.", "What is 2 + 2?"]
        ```
    """
    return list(
        trim_messages(
            list(messages),
            max_tokens=max_tokens,
            token_counter=token_counter,
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
    )


# --------------------------------------------------------------------------- extractive summary


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9']+")
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from as is are was were be
    been being am do does did have has had i you he she it we they me him her us them my your
    his its our their this that these those what which who whom how when where why not no yes
    just very really also too can could will would should shall may might must there here
    about into over than oh ok okay hey hi hello thanks thank well like get got lol""".split()
)
# First-person statements of facts, preferences and decisions carry what a summary must keep.
_CUES = re.compile(
    r"\b(i am|i'm|my|i have|i've|i live|i work|i like|i love|i prefer|i hate|i don't|"
    r"i want|i need|we decided|decided|let's|i will|i'll|remember|always|never|allergic|"
    r"birthday|name is)\b",
    re.IGNORECASE,
)


def message_text(message: BaseMessage) -> str:
    """The text of a message, with its tool calls spelled out, stripped."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        text = " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(f"{tc['name']}({tc.get('args', {})})" for tc in message.tool_calls)
        text = f"{text} [called {calls}]".strip()
    return text.strip()


def speaker(message: BaseMessage) -> str:
    """Who said a message, as a summary line names them."""
    if isinstance(message, HumanMessage):
        return message.name or "User"
    if isinstance(message, ToolMessage):
        return f"Tool {message.name or ''}".strip()
    if isinstance(message, AIMessage):
        return message.name or "Assistant"
    return message.type


def extractive_summary(
    messages: Sequence[BaseMessage], previous: str | None = None, *, max_sentences: int = 12
) -> str:
    """Extend `previous` with the most salient sentences of `messages` (no model).

    Sentences are scored by the inverse frequency of their content words across all
    candidate sentences (rare, specific words score high), normalised by sqrt(length),
    with a boost for first-person statements of facts, preferences and decisions. The
    previous summary's sentences compete too, so the summary stays bounded.

    Args:
        messages: Messages to fold in, oldest first.
        previous: The running summary so far.
        max_sentences: Most sentences the summary keeps.

    Returns:
        The new summary, one sentence per line, in chronological order.
    """
    candidates: list[str] = []
    if previous:
        candidates.extend(line.strip() for line in previous.splitlines() if line.strip())
    for m in messages:
        text = message_text(m)
        if not text:
            continue
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if len(_WORD.findall(sentence)) >= 3:
                candidates.append(f"{speaker(m)}: {sentence}")
    if len(candidates) <= max_sentences:
        return "\n".join(candidates)
    words = [
        [w.lower() for w in _WORD.findall(c.split(": ", 1)[-1]) if w.lower() not in _STOP]
        for c in candidates
    ]
    df = Counter(w for ws in words for w in set(ws))
    n = len(candidates)
    scores = []
    for i, (sentence, ws) in enumerate(zip(candidates, words, strict=True)):
        salience = sum(math.log((n + 1) / (df[w] + 0.5)) for w in set(ws))
        score = salience / math.sqrt(len(ws) + 1)
        if _CUES.search(sentence):
            score *= 1.5
        scores.append((score, i))
    best = sorted(i for _, i in sorted(scores, reverse=True)[:max_sentences])
    return "\n".join(candidates[i] for i in best)


# --------------------------------------------------------------------------- planning


def _summarize(
    messages: Any,
    running_summary: str | None,
    model: str | BaseChatModel | None,
    max_messages: int | None,
    max_tokens: int | None,
    keep_last: int,
    prompt: str,
    token_counter: TokenCounter,
    max_summary_sentences: int,
    redactor: RedactorSpec,
) -> Generator[Call, Any, SummarizationResult]:
    """One summarization step; with a model it yields the model call (`_drive`)."""
    resolved = resolve_redactor(redactor)
    messages = as_messages(messages)
    if max_messages is None and max_tokens is None:
        raise ValueError("Give max_messages, max_tokens or both (they trigger summarization).")
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    over_count = max_messages is not None and len(rest) > max_messages
    over_tokens = max_tokens is not None and token_counter(list(messages)) > max_tokens
    boundary = fold_boundary(rest, keep_last) if over_count or over_tokens else 0
    if boundary == 0:
        return SummarizationResult(False, running_summary, list(messages))
    folded = rest[:boundary]
    result = SummarizationResult(True, running_summary, system + rest[boundary:], folded)
    chat = resolve_model(model)
    if chat is None:
        result.summary = extractive_summary(
            folded, running_summary, max_sentences=max_summary_sentences
        )
    else:
        transcript = "\n".join(
            f"{speaker(m)}: {message_text(m)}" for m in folded if message_text(m)
        )
        result.prompt = [
            SystemMessage(content=prompt.format(summary=running_summary or "none")),
            HumanMessage(content=f"New messages:\n{transcript}"),
        ]
        result.summary = message_text((yield Call(chat, "invoke", (result.prompt,))))
    if resolved is not None and result.summary:
        found = redact_text(result.summary, resolved)
        result.summary, result.redactions = found.text, found.counts
    return result


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
    return drive(
        _summarize(
            messages,
            running_summary,
            model,
            max_messages,
            max_tokens,
            keep_last,
            prompt,
            token_counter,
            max_summary_sentences,
            redactor,
        )
    )


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
    return await adrive(
        _summarize(
            messages,
            running_summary,
            model,
            max_messages,
            max_tokens,
            keep_last,
            prompt,
            token_counter,
            max_summary_sentences,
            redactor,
        )
    )


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
        removals = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *result.kept]
        update = removals if self.replace_all else result.remove
        return {self.messages_key: update, self.summary_key: result.summary}

    def _summarize(self, state: Any) -> Generator[Call, Any, SummarizationResult]:
        messages, summary = state[self.messages_key], state.get(self.summary_key)
        return _summarize(messages, summary, self.model, **self._options)

    def _target(self, config: Any, result: SummarizationResult) -> tuple[Any, str] | None:
        """Where the new summary goes: (`sessions` or the run's checkpointer, thread)."""
        configurable = (config or {}).get("configurable") or {}
        thread, sessions = configurable.get("thread_id"), self.sessions
        thread = "" if thread is None else str(thread)
        if sessions == CHECKPOINTER:
            sessions = configurable.get(_CONFIG_KEY_CHECKPOINTER)
            if not (hasattr(sessions, "set_summary") or hasattr(sessions, "aset_summary")):
                _log.debug("The run's checkpointer has no session layer; summary not persisted.")
                sessions = None
        if result.summarized and sessions is not None and thread and result.summary:
            return sessions, thread
        return None

    # LangGraph passes the run config only to a parameter annotated exactly
    # "RunnableConfig" or "Optional[RunnableConfig]" (annotations are strings here).
    def __call__(self, state: Any, config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Summarize if a trigger fires (sync)."""
        result = drive(self._summarize(state))
        target = self._target(config, result)
        if target is not None:
            target[0].set_summary(target[1], result.summary)
        return self._update(result)

    async def acall(self, state: Any, config: Optional[RunnableConfig] = None) -> dict[str, Any]:  # noqa: UP045
        """Summarize if a trigger fires (async)."""
        result = await adrive(self._summarize(state))
        target = self._target(config, result)
        if target is not None and hasattr(target[0], "aset_summary"):
            await target[0].aset_summary(target[1], result.summary)
        elif target is not None:
            target[0].set_summary(target[1], result.summary)
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
