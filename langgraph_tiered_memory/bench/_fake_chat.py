"""The base of the benchmarks' fake chat models: a fixed delay, then a computed reply."""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["FakeReplyModel"]


class FakeReplyModel(BaseChatModel):
    """Waits `delay` seconds, then answers with `_result(messages)`.

    The wait is `time.sleep` on the sync path and `asyncio.sleep` on the async one.
    Subclasses write `_reply` (the reply's text) or `_result` (the whole result).
    """

    delay: float = 0.0
    """Seconds each call waits before answering."""
    llm_type: ClassVar[str] = "fake-reply"

    @property
    def _llm_type(self) -> str:
        return self.llm_type

    def _reply(self, messages: list[BaseMessage]) -> str:
        raise NotImplementedError

    def _result(self, messages: list[BaseMessage]) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self._reply(messages)))])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if self.delay > 0:
            time.sleep(self.delay)
        return self._result(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        return self._result(messages)
