"""Which messages stay in working memory.

`fold_boundary` picks where to cut without separating a tool call from its results,
`messages_with_summary` puts the running summary in front of what is kept, and
`trim_working_memory` fits a window into a token budget for one model call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

TokenCounter = Callable[[Sequence[BaseMessage]], int]
"""Counts the tokens of a list of messages."""


def _tool_call_ids(message: BaseMessage) -> set[str]:
    if isinstance(message, AIMessage):
        return {str(tc["id"]) for tc in message.tool_calls if tc.get("id")}
    return set()


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
        folded_calls: set[str] = set()
        for m in messages[:boundary]:
            folded_calls |= _tool_call_ids(m)
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
    if not summary:
        return [*system, *rest]
    note = SystemMessage(content=f"Summary of the earlier conversation:\n{summary}")
    return [*system, note, *rest]


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
    from langchain_core.messages import trim_messages

    trimmed = trim_messages(
        list(messages),
        max_tokens=max_tokens,
        token_counter=token_counter,
        strategy="last",
        include_system=True,
        start_on="human",
        allow_partial=False,
    )
    return list(trimmed)
