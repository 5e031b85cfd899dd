"""The model triple extractor: structured output, batching, aliases, errors (fake models)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.extract import (
    TRIPLE_PROMPT,
    ExtractedTriples,
    ModelExtractor,
    TripleExtractionError,
)
from langgraph_tiered_memory.graph.types import Triple
from tests.fake_models import RecordedChatModel, RecordingChatModel, prompt_text


def answer(*triples: tuple[int, str, str, str], aliases: dict[str, str] | None = None) -> dict:
    return {
        "triples": [
            {"text": i, "subject": s, "relation": r, "object": o} for i, s, r, o in triples
        ],
        "aliases": [{"alias": a, "canonical": c} for a, c in (aliases or {}).items()],
    }


def test_one_call_per_batch_with_numbered_texts_and_speakers() -> None:
    model = RecordedChatModel(
        structured=[
            answer((0, "Caroline", "Lives In", "Berlin"), (1, "user", "likes", "Jazz")),
            answer((0, "Tom", "works_at", "Acme")),
        ]
    )
    extractor = ModelExtractor(model, batch_size=2)
    found = extractor.extract(
        ["I live in Berlin.", "I like jazz.", "Tom works at Acme."],
        speakers=["Caroline", None, "Tom"],
    )
    assert found == [
        [Triple("caroline", "lives_in", "berlin")],
        [Triple("user", "likes", "jazz")],
        [Triple("tom", "works_at", "acme")],  # index 0 of the second batch is text 2
    ]
    assert len(model.structured_prompts) == 2
    first = prompt_text(model.structured_prompts[0])
    assert TRIPLE_PROMPT in first
    assert "[0] (speaker: Caroline) I live in Berlin." in first
    assert "[1] (speaker: user) I like jazz." in first
    assert "Tom works at Acme" not in first


def test_reported_aliases_are_applied_and_parts_normalised() -> None:
    model = RecordedChatModel(
        structured=[
            answer(
                (0, "The User", "moved to", "NYC"),
                (0, "user", "visited", "Big Apple"),
                (0, "user", "likes", " the  bagels "),
                aliases={"NYC": "New York City", "the Big Apple": "NYC"},
            )
        ]
    )
    [found] = ModelExtractor(model).extract(["I moved to NYC and love bagels."])
    assert found == [
        Triple("user", "moved_to", "new york city"),
        Triple("user", "visited", "new york city"),  # alias chain big apple -> nyc -> ...
        Triple("user", "likes", "bagels"),  # a model's plural is kept
    ]


def test_duplicate_triples_are_kept_once_and_texts_without_facts_are_empty() -> None:
    model = RecordedChatModel(
        structured=[answer((1, "user", "likes", "tea"), (1, "User", "LIKES", "tea"))]
    )
    assert ModelExtractor(model).extract(["Hello!", "I like tea."]) == [
        [],
        [Triple("user", "likes", "tea")],
    ]


def test_no_call_for_an_empty_batch() -> None:
    model = RecordedChatModel()
    assert ModelExtractor(model).extract([]) == []
    assert ModelExtractor(model).extract(["", "  "]) == [[], []]
    assert model.prompts == []


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        ("not json at all", "not parseable"),
        ({"triples": [{"text": 0, "subject": "a"}]}, "does not validate"),
        (answer((3, "user", "likes", "tea")), r"named text \[3\]"),
        (answer((0, "  ", "likes", "tea")), "empty part"),
    ],
)
def test_invalid_output_raises_a_clear_error(reply: Any, match: str) -> None:
    model = RecordedChatModel(structured=[reply])
    with pytest.raises(TripleExtractionError, match=match):
        ModelExtractor(model).extract(["I like tea."])


def test_a_reply_of_another_type_is_invalid() -> None:
    model = RecordedChatModel(structured=[{"not": "the schema"}])
    model_any: Any = model

    def wrong_schema(schema: Any, **kwargs: Any) -> Any:
        return RecordedChatModel.with_structured_output(model, dict)

    object.__setattr__(model_any, "with_structured_output", wrong_schema)
    with pytest.raises(TripleExtractionError, match="dict, expected ExtractedTriples"):
        ModelExtractor(model).extract(["I like tea."])


def test_model_errors_propagate_unchanged() -> None:
    error = TimeoutError("provider timed out")
    model = RecordedChatModel(structured=[error])
    with pytest.raises(TimeoutError) as raised:
        ModelExtractor(model).extract(["I like tea."])
    assert raised.value is error


class _NoStructuredOutput(RecordingChatModel):
    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_model_without_structured_output_is_a_configuration_error() -> None:
    model = _NoStructuredOutput(replies=["{}"])
    with pytest.raises(ConfigurationError, match="structured output"):
        ModelExtractor(model).extract(["I like tea."])
    with pytest.raises(ValueError, match="batch_size"):
        ModelExtractor(model, batch_size=0)


def test_a_model_answering_nothing_parseable_is_invalid_output() -> None:
    # a plain chat model's tool-calling structured output parses a text reply to None
    model = RecordingChatModel(replies=["I cannot do that."])
    with pytest.raises(TripleExtractionError, match="NoneType, expected ExtractedTriples"):
        ModelExtractor(model).extract(["I like tea."])


async def test_aextract_shares_the_planning_and_parsing() -> None:
    replies = [answer((0, "user", "likes", "tea")), answer((0, "Bob", "lives_in", "Rome"))]
    sync_model = RecordedChatModel(structured=list(replies))
    async_model = RecordedChatModel(structured=list(replies))
    texts = ["I like tea.", "I live in Rome."]
    speakers = [None, "Bob"]
    expected = ModelExtractor(sync_model, batch_size=1).extract(texts, speakers=speakers)
    got = await ModelExtractor(async_model, batch_size=1).aextract(texts, speakers=speakers)
    assert (
        got == expected == [[Triple("user", "likes", "tea")], [Triple("bob", "lives_in", "rome")]]
    )

    def texts_of(prompts: list[list[BaseMessage]]) -> set[str]:
        return {prompt_text(p) for p in prompts}

    assert texts_of(async_model.structured_prompts) == texts_of(sync_model.structured_prompts)


async def test_aextract_raises_invalid_output_and_model_errors() -> None:
    with pytest.raises(TripleExtractionError):
        await ModelExtractor(RecordedChatModel(structured=["garbage"])).aextract(["x"])
    with pytest.raises(ConnectionError, match="down"):
        await ModelExtractor(RecordedChatModel(structured=[ConnectionError("down")])).aextract(
            ["x"]
        )


def test_the_schema_is_what_the_model_is_asked_for() -> None:
    seen: list[Any] = []
    model = RecordedChatModel(structured=[answer()])
    original = RecordedChatModel.with_structured_output

    def spy(schema: Any, **kwargs: Any) -> Any:
        seen.append(schema)
        return original(model, schema, **kwargs)

    object.__setattr__(model, "with_structured_output", spy)
    ModelExtractor(model).extract(["I like tea."])
    assert seen == [ExtractedTriples]


def test_a_quoted_memory_text_names_its_speaker_to_the_model() -> None:
    model = RecordedChatModel(structured=[answer((0, "Caroline", "likes", "tea"))])
    found = ModelExtractor(model).extract(['Caroline said, "I like tea."', "I like jam."])
    assert found == [[Triple("caroline", "likes", "tea")], []]
    prompt = prompt_text(model.structured_prompts[0])
    assert '[0] (speaker: Caroline) Caroline said, "I like tea."' in prompt
    assert "[1] (speaker: user) I like jam." in prompt
