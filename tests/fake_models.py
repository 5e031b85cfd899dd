"""Fake chat models for tests: recorded replies, recorded prompts, no network.

`RecordedChatModel` is a real `BaseChatModel`, so it goes wherever a user's model goes
(`invoke`/`ainvoke`, `bind_tools`, `with_structured_output`), answers from a list of
recorded replies and keeps every prompt it was sent, so tests can count calls and read
what the model saw. Shared by the tests of several features: add to it, do not change
what is here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from langgraph_tiered_memory.demo.model import FakeReplyModel


class RecordedChatModel(BaseChatModel):
    """A chat model that replays recorded replies and records every prompt.

    Attributes:
        replies: Answers to plain calls, in order: a string, an `AIMessage` (tool calls
            included) or an exception to raise.
        structured: Answers to calls through `with_structured_output(schema)`, in order:
            a dict (validated against a pydantic `schema`, so a malformed dict raises
            pydantic's `ValidationError` as a real parser does), a pydantic instance
            (returned as is), a string (unparseable output: `OutputParserException`) or
            an exception to raise.
        prompts: Every prompt sent, plain and structured (lists of messages).
        structured_prompts: The prompts of the structured calls only.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: list[Any] = Field(default_factory=list)
    structured: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    structured_prompts: list[list[BaseMessage]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "recorded-fake"

    def _next(self, queue: list[Any], what: str) -> Any:
        with self._lock:
            if not queue:
                raise AssertionError(f"RecordedChatModel has no recorded {what} reply left")
            reply = queue.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        with self._lock:
            self.prompts.append(list(messages))
        reply = self._next(self.replies, "plain")
        message = reply if isinstance(reply, BaseMessage) else AIMessage(content=str(reply))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordedChatModel:  # type: ignore[override]
        """Tools are accepted and ignored: record `AIMessage`s with `tool_calls` instead."""
        return self

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Answer from `structured`, validated against `schema` when it is a pydantic class."""

        def answer(prompt: LanguageModelInput) -> Any:
            messages = self._convert_input(prompt).to_messages()
            with self._lock:
                self.prompts.append(messages)
                self.structured_prompts.append(messages)
            reply = self._next(self.structured, "structured")
            if isinstance(reply, str):
                raise OutputParserException(f"Invalid json output: {reply}")
            parsed = reply
            if (
                isinstance(reply, dict)
                and isinstance(schema, type)
                and issubclass(schema, BaseModel)
            ):
                parsed = schema.model_validate(reply)
            if include_raw:
                return {"raw": AIMessage(content=""), "parsed": parsed, "parsing_error": None}
            return parsed

        return RunnableLambda(answer)


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """Every message's text content, joined (what a prompt "contains")."""
    return "\n".join(str(m.content) for m in messages)


class RecordingChatModel(FakeReplyModel):
    """Answers from a script (or a function of the prompt) and records each prompt.

    `replies` are used in order, the last one repeating; a reply may be a function of
    the prompt. `delay` seconds are spent per call (`time.sleep` / `asyncio.sleep`).
    `bind_tools` returns the model itself (the script decides the tool calls) and
    records the tools.
    """

    replies: list[Any] = []
    llm_type = "recording-fake"
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _calls: int = PrivateAttr(default=0)
    _tools: list[Any] = PrivateAttr(default_factory=list)

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt received so far, in call order."""
        with self._lock:
            return list(self._prompts)

    @property
    def bound_tools(self) -> list[Any]:
        """The tools passed to `bind_tools`."""
        return list(self._tools)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self._tools = list(tools)
        return self

    def _result(self, messages: list[BaseMessage]) -> ChatResult:
        with self._lock:
            self._prompts.append(list(messages))
            index = min(self._calls, len(self.replies) - 1)
            self._calls += 1
        reply = self.replies[index] if self.replies else "ok"
        if callable(reply):
            reply = reply(list(messages))
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))
        return ChatResult(generations=[ChatGeneration(message=message.model_copy())])
