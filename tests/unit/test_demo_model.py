"""The demo's chat model: scripted replies that depend on the recalled memories."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from langgraph_tiered_memory.demo.model import ScriptedDemoModel, demo_model


def _reply(context: str, said: str) -> str:
    messages = [SystemMessage(context), HumanMessage(said)] if context else [HumanMessage(said)]
    return str(ScriptedDemoModel().invoke(messages).content)


def test_the_dinner_advice_uses_only_what_the_memory_context_holds() -> None:
    bare = _reply("", "What should I cook for dinner tonight?")
    assert "chicken" in bare and "vegetarian" not in bare
    context = "- [fact] I'm vegetarian, no meat and no fish\n- [fact] I'm allergic to peanuts"
    informed = _reply(context, "What should I cook for dinner tonight?")
    assert "vegetarian" in informed and "no peanuts" in informed and "chicken" not in informed


def test_eating_out_needs_the_city_from_memory() -> None:
    assert "Which city" in _reply("", "Is there a place nearby where I could eat out?")
    reply = _reply("- I live in Lisbon, in the Alfama district", "Any place nearby to eat out?")
    assert "Alfama" in reply and "peanut" not in reply


def test_the_first_session_replies_acknowledge_what_the_user_said() -> None:
    assert "vegetarian" in _reply("", "Please remember: I'm vegetarian, no meat and no fish.")
    assert "peanuts are out" in _reply("", "Important: I'm allergic to peanuts.")


def test_the_model_is_scripted_unless_one_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat, label = demo_model(None, offline=False)
    assert isinstance(chat, ScriptedDemoModel) and "OPENAI_API_KEY" in label
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    chat, label = demo_model(None, offline=True)
    assert isinstance(chat, ScriptedDemoModel) and "--offline" in label


def test_openai_api_key_or_model_selects_a_real_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # no request is made
    chat, label = demo_model(None, offline=False)
    assert label == "openai:gpt-4o-mini"
    assert getattr(chat, "model_name", None) == "gpt-4o-mini"
    chat, label = demo_model("openai:gpt-4.1-nano", offline=False)
    assert label == "openai:gpt-4.1-nano" and getattr(chat, "model_name", None) == "gpt-4.1-nano"
