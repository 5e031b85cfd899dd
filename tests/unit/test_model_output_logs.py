"""No model output in logs or raised errors: every path that meets a malformed answer.

The chat models are langchain_core's `GenericFakeChatModel`, answering through the two
ways providers implement structured output, so the exceptions are langchain's own:
JSON mode (the reply's text parsed by `PydanticOutputParser`: an
`OutputParserException` quoting the completion and keeping it in `llm_output`) and
tool calling (`BaseChatModel.with_structured_output`: pydantic's `ValidationError`
quoting the arguments as `input_value=...`). Every malformed answer holds `MARKER`; it
must reach no log record (message, arguments, formatted traceback) and no raised error.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import PydanticOutputParser
from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from langgraph_tiered_memory.agent.extraction import (
    ExtractedMemories,
    MemoryDecision,
    aextract_memories,
    extract_memories,
)
from langgraph_tiered_memory.agent.profile import (
    ProfileFields,
    aget_user_profile,
    cache_value,
    cached_profile,
    get_user_profile,
    memories_profile,
    model_profile,
    plan_profile,
)
from langgraph_tiered_memory.graph.extract import (
    ExtractedTriples,
    ModelExtractor,
    TripleExtractionError,
)

MARKER = "SECRET-MARKER-ana-lives-at-12-rua-augusta"
NS = ("memories", "u1")


class JsonModeModel(GenericFakeChatModel):
    """Structured output as JSON-mode providers do it: the reply's text, parsed."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self | PydanticOutputParser(pydantic_object=schema)


class ToolCallingModel(GenericFakeChatModel):
    """Structured output through `BaseChatModel`'s own tool calling and parser."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self


Reply = Callable[[type[BaseModel]], AIMessage]


def _tool_call(schema: type[BaseModel], args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": schema.__name__, "args": args, "id": "c1"}])


def _bad_fields(schema: type[BaseModel]) -> dict[str, Any]:
    """Every field set to the marker, and a key named after it (no schema takes that)."""
    return {**dict.fromkeys(schema.model_fields, MARKER), MARKER: [MARKER]}


# (model class, a malformed reply to a call for `schema`, a valid reply of `value`)
MODES: dict[str, tuple[type[GenericFakeChatModel], Reply, Callable[[BaseModel], AIMessage]]] = {
    "json, not json": (
        JsonModeModel,
        lambda schema: AIMessage(content=f"Sure! The user {MARKER}."),
        lambda value: AIMessage(content=value.model_dump_json()),
    ),
    "json, bad fields": (
        JsonModeModel,
        lambda schema: AIMessage(content=json.dumps(_bad_fields(schema))),
        lambda value: AIMessage(content=value.model_dump_json()),
    ),
    "tool call, bad fields": (
        ToolCallingModel,
        lambda schema: _tool_call(schema, _bad_fields(schema)),
        lambda value: _tool_call(type(value), value.model_dump()),
    ),
}


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> tuple[Any, Reply, Callable[[BaseModel], AIMessage]]:
    return MODES[request.param]


def _model(cls: type[GenericFakeChatModel], *replies: AIMessage) -> GenericFakeChatModel:
    return cls(messages=iter(replies))


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    """Everything the records hold: messages, arguments and formatted tracebacks."""
    formatter = logging.Formatter("%(message)s %(args)s")
    parts = []
    for record in caplog.records:
        parts.append(formatter.format(record))  # the traceback too, with exc_info
        parts.append(repr(record.args))
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
    return "\n".join(parts)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], str]]:
    caplog.set_level(logging.DEBUG, logger="langgraph_tiered_memory")
    yield lambda: _logged(caplog)


def _raised(error: BaseException) -> str:
    """An escaping error as a log or a console would show it, causes included."""
    return "".join(traceback.format_exception(error)) + repr(error)


# --------------------------------------------------------------------------- the helper


def test_the_description_names_the_schema_and_the_failed_checks_only() -> None:
    from langgraph_tiered_memory._models import describe_model_error

    with pytest.raises(ValueError) as raised:
        ProfileFields.model_validate(_bad_fields(ProfileFields))
    assert MARKER in str(raised.value)  # pydantic quotes the input
    text = describe_model_error(raised.value)
    assert text.startswith("ValidationError: ProfileFields does not validate (basics: list_type")
    assert MARKER not in text


# --------------------------------------------------------------------------- profile


def _profile_store() -> InMemoryStore:
    store = InMemoryStore()
    store.put(("memories", "ana"), "m1", {"content": "Prefers tea", "memory_type": "preference"})
    return store


def test_profile_fallback_logs_no_model_output(mode: Any, logs: Callable[[], str]) -> None:
    cls, bad, _ = mode
    profile = get_user_profile(_profile_store(), "ana", model=_model(cls, bad(ProfileFields)))
    assert profile.source == "memories"
    assert "malformed" in logs() and MARKER not in logs()


async def test_async_profile_fallback_logs_no_model_output(
    mode: Any, logs: Callable[[], str]
) -> None:
    cls, bad, _ = mode
    model = _model(cls, bad(ProfileFields))
    profile = await aget_user_profile(_profile_store(), "ana", model=model)
    assert profile.source == "memories"
    assert "malformed" in logs() and MARKER not in logs()


def test_a_profile_answer_failing_validation_logs_no_model_output(
    logs: Callable[[], str],
) -> None:
    base = memories_profile(plan_profile("u", ("m", "{user_id}"), None, 20), [])
    assert model_profile(base, _bad_fields(ProfileFields)) is None
    assert "basics: list_type" in logs() and MARKER not in logs()


def test_an_unreadable_cached_profile_logs_no_memory_text(logs: Callable[[], str]) -> None:
    plan = plan_profile("u", ("m", "{user_id}"), None, 20)
    profile = memories_profile(plan, [])
    record = cache_value(plan, profile, "fp")
    record["profile"] = {**record["profile"], "basics": MARKER}
    item = Item(value=record, key="k", namespace=plan.cache_namespace, created_at=0, updated_at=0)
    assert cached_profile(plan, item, "fp", "memories") is None
    assert "unreadable" in logs() and MARKER not in logs()


# --------------------------------------------------------------------------- extraction


def _memory(content: str) -> ExtractedMemories:
    memory = {"content": content, "memory_type": "fact", "importance": 0.6}
    return ExtractedMemories.model_validate({"memories": [memory]})


def test_malformed_extraction_logs_no_model_output(mode: Any, logs: Callable[[], str]) -> None:
    cls, bad, _ = mode
    model = _model(cls, bad(ExtractedMemories))
    result = extract_memories(InMemoryStore(), NS, [("user", "I work at Siemens.")], model=model)
    assert result.method == "heuristic"
    assert "malformed" in logs() and MARKER not in logs()


async def test_malformed_decision_logs_no_model_output(mode: Any, logs: Callable[[], str]) -> None:
    cls, bad, good = mode
    store = InMemoryStore()
    first = _model(cls, good(_memory("The user lives in Berlin")))
    assert extract_memories(store, NS, [("user", "I live in Berlin")], model=first).added
    model = _model(cls, good(_memory("The user lives in Berlin-Mitte")), bad(MemoryDecision))
    result = await aextract_memories(store, NS, [("user", "I live in Berlin-Mitte")], model=model)
    assert result.method == "model"
    assert "decision is malformed" in logs() and MARKER not in logs()


def test_a_refused_decision_logs_not_the_memory_id_the_model_wrote(
    logs: Callable[[], str],
) -> None:
    store = InMemoryStore()
    found = _memory("The user lives in Berlin")
    first = _model(JsonModeModel, AIMessage(content=found.model_dump_json()))
    assert extract_memories(store, NS, [("user", "I live in Berlin")], model=first).added
    moved = _memory("The user lives in Berlin-Mitte")
    decision = json.dumps({"action": "DELETE", "memory_id": MARKER})
    model = _model(
        JsonModeModel, AIMessage(content=moved.model_dump_json()), AIMessage(content=decision)
    )
    result = extract_memories(store, NS, [("user", "I live in Berlin-Mitte")], model=model)
    assert [d.memory_id for d in result.rejected] == [MARKER]  # the caller still sees it
    assert "not one of the memories offered" in logs() and MARKER not in logs()


# --------------------------------------------------------------------------- triples


def test_malformed_triples_raise_and_log_no_model_output(
    mode: Any, logs: Callable[[], str]
) -> None:
    cls, bad, _ = mode
    extractor = ModelExtractor(_model(cls, bad(ExtractedTriples)))
    with pytest.raises(TripleExtractionError) as raised:
        extractor.extract(["I like tea."])
    assert "ExtractedTriples" in str(raised.value) or "not parseable" in str(raised.value)
    assert MARKER not in _raised(raised.value)
    logging.getLogger("langgraph_tiered_memory.test").error("failed", exc_info=raised.value)
    assert "invalid model answer" in logs() and MARKER not in logs()


async def test_async_malformed_triples_raise_and_log_no_model_output(
    mode: Any, logs: Callable[[], str]
) -> None:
    cls, bad, _ = mode
    extractor = ModelExtractor(_model(cls, bad(ExtractedTriples)))
    with pytest.raises(TripleExtractionError) as raised:
        await extractor.aextract(["I like tea."])
    assert MARKER not in _raised(raised.value)
    assert "invalid model answer" in logs() and MARKER not in logs()
