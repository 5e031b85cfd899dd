"""The chat model of `tiered-memory demo`: a scripted offline model, or a real one.

`FakeReplyModel` is the base of the offline models (the demo's, the Studio graphs' and
the benchmarks'): a fixed delay, then a computed reply.

The scripted model answers from rules on the user's message and on the memory
context the agent put in its system message, so its replies in the second session
really depend on what the store recalled (it only mentions a diet, an allergy or a
city it finds in that context). No network, no API key.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["DEFAULT_OPENAI_MODEL", "FakeReplyModel", "ScriptedDemoModel", "demo_model"]

DEFAULT_OPENAI_MODEL = "openai:gpt-4o-mini"
"""The model the demo uses when only OPENAI_API_KEY is set."""


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


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
    )


class ScriptedDemoModel(FakeReplyModel):
    """Plausible replies from keyword rules; memory-aware through the system message."""

    llm_type: ClassVar[str] = "scripted-demo"

    def _reply(self, messages: list[BaseMessage]) -> str:
        context = " ".join(_text(m) for m in messages if isinstance(m, SystemMessage)).lower()
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        said = _text(humans[-1]).lower() if humans else ""
        if "vegetarian" in said:
            return (
                "Noted: you are vegetarian, so no meat and no fish. I will keep every"
                " food suggestion meat-free."
            )
        if "lisbon" in said:
            return (
                "Lisbon, lovely! Alfama's steep little streets are full of small tascas."
                " I will remember you live there."
            )
        if "allergic" in said or "peanut" in said:
            return "Understood, peanuts are out. I will leave them out of every recipe."
        if "nurse" in said or "shift" in said:
            return (
                "Night shifts are hard on a schedule. I will favour dishes that are"
                " quick to make late in the evening."
            )
        if "cook" in said or "dinner" in said:
            return self._dinner(context)
        if "eat out" in said or "restaurant" in said or "nearby" in said:
            return self._eating_out(context)
        return "Happy to help. Is there anything else you would like to plan?"

    @staticmethod
    def _dinner(context: str) -> str:
        if "vegetarian" not in context:
            return "How about a quick chicken stir-fry? It takes about 20 minutes."
        reply = "How about a mushroom and spinach risotto? It is vegetarian"
        if "peanut" in context:
            reply += ", has no peanuts"
        reply += " and takes about 25 minutes"
        if "night shift" in context or "late" in context:
            reply += ", which suits a late evening after your shift"
        return reply + "."

    @staticmethod
    def _eating_out(context: str) -> str:
        if "lisbon" not in context:
            return "Which city are you in? I can suggest a few places then."
        reply = "Near you in Alfama, try one of the small tascas around Largo do Chafariz"
        if "vegetarian" in context:
            reply += "; ask for their vegetable dishes"
        if "peanut" in context:
            reply += " and mention your peanut allergy"
        return reply + "."


def demo_model(model: str | None, offline: bool) -> tuple[BaseChatModel, str]:
    """The demo's chat model and a label describing it.

    Args:
        model: An `init_chat_model` string ("provider:model") chosen by the user.
        offline: Use the scripted model even when a real one is configured.

    Returns:
        The model, and how it was chosen (for the demo's header).
    """
    if offline:
        return ScriptedDemoModel(), "scripted offline model (--offline)"
    if model is None and os.environ.get("OPENAI_API_KEY"):
        model = DEFAULT_OPENAI_MODEL
    if model is None:
        return ScriptedDemoModel(), "scripted offline model (set --model or OPENAI_API_KEY)"
    from langchain.chat_models import init_chat_model

    return init_chat_model(model), model
