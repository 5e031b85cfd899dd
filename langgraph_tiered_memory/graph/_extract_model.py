"""The model side of triple extraction: schema, prompt, batching and parsing.

Entity names are normalised with `normalize_entity` (NFKC, case, spacing), typographic
apostrophes made plain and a leading article dropped. Unlike the rule extractor, plurals
and numbers are kept as the model wrote them ("two weeks ago"): `query_entities` offers
both the plural and singular spelling of a query's words, so either matches.

Pure: `plan_batches` builds the structured-output requests, `parse_reply` turns an
answer into normalised triples. `ModelExtractor.extract` and `aextract` only differ in
calling `invoke` or `ainvoke` between the two.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from langgraph_tiered_memory.errors import TieredMemoryError
from langgraph_tiered_memory.graph._rules import DEFAULT_SPEAKER, split_quoted
from langgraph_tiered_memory.graph._rules_text import APOSTROPHES
from langgraph_tiered_memory.graph.types import Triple, normalize_entity, normalize_relation

TRIPLE_PROMPT = (
    "You extract facts as (subject, relation, object) triples from numbered texts, for a"
    " knowledge graph. For each fact stated in a text, give the text's number, the"
    " subject and object as short entity names (a person, place, organisation, thing,"
    " activity or date, without articles) and the relation as a short snake_case verb"
    " phrase such as lives_in, works_at, likes, dislikes, has_sister, visited, moved_to,"
    " married, is_a, date. 'I', 'me' and 'my' are the text's speaker, given before it;"
    " so is 'the user'. In a transcript ('User: ...' and 'Assistant: ...' lines) take"
    " facts from the user's lines only."
    " An unnamed relative is '<owner>'s <relative>' (\"caroline's sister\")."
    ' Leave out questions, wishes and anything negated ("I don\'t like X" is'
    ' dislikes, never likes). When one entity appears under several names ("NYC",'
    ' "New York City"), use one name in the triples and list each other name in'
    " aliases with that canonical name. Return no triples for a text without facts."
)
"""System prompt of the triple extraction call (structured output: `ExtractedTriples`)."""


class ExtractedTriple(BaseModel):
    """One fact a model found in one of the numbered texts."""

    text: int = Field(ge=0, description="The number of the text the fact is stated in.")
    subject: str = Field(min_length=1, description="Entity name, e.g. 'Caroline'.")
    relation: str = Field(min_length=1, description="snake_case verb phrase, e.g. 'lives_in'.")
    object: str = Field(min_length=1, description="Entity name or date, e.g. 'Berlin'.")


class EntityAlias(BaseModel):
    """Another name of an entity and the canonical name the triples use."""

    alias: str = Field(min_length=1, description="The other name, e.g. 'NYC'.")
    canonical: str = Field(min_length=1, description="The name used, e.g. 'New York City'.")


class ExtractedTriples(BaseModel):
    """The triples found in a batch of texts (the extraction call's answer)."""

    triples: list[ExtractedTriple] = Field(default_factory=list)
    aliases: list[EntityAlias] = Field(
        default_factory=list, description="Other names of entities the triples name."
    )


class TripleExtractionError(TieredMemoryError, ValueError):
    """A model's answer to triple extraction is not usable (unparseable or off-schema)."""


class Batch(NamedTuple):
    """One structured-output request: texts `start` to `start + size - 1`."""

    start: int
    size: int
    messages: list[BaseMessage]


def plan_batches(
    texts: Sequence[str], speakers: Sequence[str | None], batch_size: int
) -> list[Batch]:
    """The requests extracting `texts`, `batch_size` texts per call (empty batches skipped).

    A text without a speaker of the form `Name said, "..."` is given as said by Name.
    """
    batches: list[Batch] = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        if not any(t.strip() for t in chunk):
            continue
        lines = []
        for i, text in enumerate(chunk):
            speaker = speakers[start + i] or split_quoted(text)[0] or DEFAULT_SPEAKER
            lines.append(f"[{i}] (speaker: {speaker}) {text}")
        asked = HumanMessage(content="\n".join(lines))
        batches.append(Batch(start, len(chunk), [SystemMessage(content=TRIPLE_PROMPT), asked]))
    return batches


def alias_map(aliases: Sequence[EntityAlias]) -> dict[str, str]:
    """Normalised alias -> normalised canonical name, chains followed ("a"->"b"->"c")."""
    raw = {_name(a.alias): _name(a.canonical) for a in aliases}
    raw = {k: v for k, v in raw.items() if k and v and k != v}
    resolved: dict[str, str] = {}
    for alias in raw:
        seen = {alias}
        target = raw[alias]
        while target in raw and target not in seen:
            seen.add(target)
            target = raw[target]
        resolved[alias] = target
    return resolved


_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)


def _name(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """A model's entity name normalised: `normalize_entity` without a leading article."""
    return normalize_entity(_ARTICLE.sub("", name.translate(APOSTROPHES).strip()), aliases)


def parse_reply(batch: Batch, reply: Any) -> list[list[Triple]]:
    """The normalised, deduplicated triples of each text of `batch`.

    Raises:
        TripleExtractionError: `reply` is not an `ExtractedTriples`, or a triple names a
            text outside the batch or normalises to an empty part.
    """
    if not isinstance(reply, ExtractedTriples):
        raise TripleExtractionError(
            f"the model answered triple extraction with {type(reply).__name__},"
            " expected ExtractedTriples"
        )
    aliases = alias_map(reply.aliases)
    out: list[dict[Triple, None]] = [{} for _ in range(batch.size)]
    for item in reply.triples:
        if item.text >= batch.size:
            raise TripleExtractionError(
                f"the model named text [{item.text}], but the batch has texts"
                f" [0]..[{batch.size - 1}]"
            )
        triple = Triple(
            _name(item.subject, aliases),
            normalize_relation(item.relation),
            _name(item.object, aliases),
        )
        if not all(triple):
            raise TripleExtractionError(
                f"the model returned a triple of text [{item.text}] with an empty part"
                " after normalisation"
            )
        out[item.text][triple] = None
    return [list(found) for found in out]
