"""The base of the benchmarks' fake chat models: a fixed delay, then a computed reply."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["FakeReplyModel"]


class FakeReplyModel(BaseChatModel):
    """Waits `_delay()` seconds, then answers with `_reply(messages)`.

    The wait is `time.sleep` on the sync path and `asyncio.sleep` on the async one.
    """

    def _delay(self) -> float:
        return 0.0

    def _reply(self, messages: list[BaseMessage]) -> str:
        raise NotImplementedError

    def _result(self, messages: list[BaseMessage]) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self._reply(messages)))])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._delay() > 0:
            time.sleep(self._delay())
        return self._result(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._delay() > 0:
            await asyncio.sleep(self._delay())
        return self._result(messages)
