"""Triple extraction: (subject, relation, object) facts from memory texts.

Two extractors implement `TripleExtractor` (`extract` / `aextract` take a batch of
texts and, optionally, who said each one; they return one list of normalised `Triple`s
per text):

`ModelExtractor(model)` asks a chat model for structured output (`ExtractedTriples`:
triples naming their text, plus the aliases of entities the model reports), up to
`batch_size` texts per call. Entities are normalised (`normalize_entity`: case,
spacing; a leading article dropped) and the reported aliases are applied ("NYC" ->
"new york city"). Errors of the model propagate; an answer that is not the schema
raises `TripleExtractionError`.

`RuleExtractor()` needs no model. What it recognises, per clause (questions are
skipped, clauses split at "and"/"but"/";" before a new subject):

- Subjects: "I"/"we" (the speaker, or "user" without one), "my/our X", "<Name>'s X",
  "his/her/their X", a capitalised name, "he/she/they" (the last person named in the
  text). Memory texts of the form `Caroline said, "I ..."` take the quoted speaker.
  "The user"/"User" and "the user's X" (how extracted memories are written: "The
  user's sister Anna lives in Porto") are the speaker too, like "I" and "my".
- Transcripts (lines starting "User:"/"Human:", "Assistant:"/"AI:", "System:", as the
  memory agent stores a turn): only the user's lines are read, as the speaker's
  first-person statements; a line without a prefix continues the line before it.
- People and pets: "my sister Anna" -> (user, has_sister, anna); an unnamed relative
  becomes "<owner>'s <relative>": "my sister is a nurse" -> (user, has_sister,
  user's sister), (user's sister, is_a, nurse). Also "I have a dog named Max",
  "Anna is my sister", "my sister is Anna", "my dog is called Rex" (a capitalised
  nationality such as "is Norwegian" names no one).
- Verbs (relation): live in (lives_in), live with (lives_with), move to (moved_to),
  "move from A to B" (also moved_from), work at/for, got a job at, joined <Name>,
  teach/lecture at, "Y employs X" -> (x, works_at, y) (works_at), work as / am a(n)
  (is_a), am from / come from (from), grew up in, born in/on, based/located in,
  N years old (age), married (married),
  like/love/enjoy/prefer/am into/fan of (likes), hate/dislike/don't like/can't stand
  (dislikes), allergic to (allergic_to), stayed at/in (stayed_at), got promoted to
  (promoted_to), diagnosed with (diagnosed_with),
  visited/went to/travelled to/have been to (visited), plan to visit
  (plans_to_visit), studied at / graduated from (studied_at), study/major in
  (studies), play (plays), speak (speaks), have/own (has), "X is the N of Y"
  (n_of: capital_of, ceo_of; also "a member of", "a co-founder of"), "is friends with"
  (has_friend), "X is written in Y" (written_in), runs on (runs_on),
  "my <noun> is Y" (the noun: birthday, name; "favourite X" is likes), and common
  event verbs (founded, wrote, invented, discovered, painted, built, met, adopted,
  bought, joined, attended, won, uses, teaches, ... as their past tense or 3rd person),
  passive "was written by Y" -> (y, wrote, x).
- Facts about people and organisations: "is a(n) <job> at/for <Name>"
  adds works_at (studied_at for a student) instead of a place ("Dave is a software
  engineer at Google"); an appositive after a name is a clause of its own ("Marcus,
  the CEO of Helix Labs, lives in Austin", "Karl, my cousin, is a baker"); "the
  headquarters of Y is in Z" / "Y's headquarters are in Z" -> (y, located_in, z); after
  "and", a clause starting with a fact verb shares the subject before it ("born in
  Cairo and now lives in Dubai").
- Objects stop at a preposition, date, comma, conjunction or "over"/"rather than"
  ("prefer coffee over tea" likes only coffee); coordinated likes, visits and plays
  give one triple each ("hiking and swimming"). Objects longer than six words and
  pronoun objects are dropped; a capitalised word in -ed is a name ("Ahmed").
- Negated verb groups ("I don't live in Paris", "never visited Japan") give no
  triple; "don't like" gives dislikes, never likes. "had"/"got" give no `has` triple
  ("had a great time") unless a relative or pet follows ("had a baby named Mia").
- Capitalised sentence openers that are no names ("Sounds like", "Thanks", "Here's")
  start no statement; a capitalised word followed by a lower-case noun is a modifier,
  not a place ("in the LGBTQ community").
- `RuleExtractor(mentions=True)` also adds (speaker, mentions, entity) for each named
  entity of a statement that no triple names (not the person addressed, not a
  sentence's first word).
- Dates ("on 8 May 2023", "in 2019", "last week", "two days ago", kept as text) give
  (event object, date, text), or (subject, date, text) without an object; places
  ("in/at <Capitalised>") give (object or subject, located_in, place); "from
  <Capitalised>" gives from; "with <Capitalised>" gives (subject, with, name).

`query_entities(text)` names the entities a search query may mention, normalised the
same way, for exact matching against stored entity names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from langgraph_tiered_memory._models import MODEL_OUTPUT_ERRORS, describe_model_error
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph._extract_model import (
    TRIPLE_PROMPT,
    Batch,
    EntityAlias,
    ExtractedTriple,
    ExtractedTriples,
    TripleExtractionError,
    parse_reply,
    plan_batches,
)
from langgraph_tiered_memory.graph._rules import DEFAULT_SPEAKER, extract_text
from langgraph_tiered_memory.graph._rules_text import entity_name, query_entities
from langgraph_tiered_memory.graph.types import Triple

__all__ = [
    "DEFAULT_SPEAKER",
    "TRIPLE_PROMPT",
    "EntityAlias",
    "ExtractedTriple",
    "ExtractedTriples",
    "ModelExtractor",
    "RuleExtractor",
    "TripleExtractionError",
    "TripleExtractor",
    "entity_name",
    "query_entities",
    "resolve_extractor",
]

_log = logging.getLogger("langgraph_tiered_memory.graph.extract")


@runtime_checkable
class TripleExtractor(Protocol):
    """Turns texts into triples; `speakers[i]` is who said text i ("I"/"my" map to it)."""

    def extract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        """One list of normalised triples per text, in order."""

    async def aextract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        """Async `extract`."""


def _speakers(texts: Sequence[str], speakers: Sequence[str | None] | None) -> list[str | None]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    if speakers is None:
        return [None] * len(texts)
    if len(speakers) != len(texts):
        raise ValueError(f"got {len(speakers)} speakers for {len(texts)} texts")
    return list(speakers)


class RuleExtractor:
    """The rule-based extractor (no model); see this module's docstring for its rules.

    Args:
        mentions: Also link the speaker to every named entity a statement mentions that
            no other triple names: (speaker, mentions, entity). More of a conversation's
            memories get connected (most chat turns state no pattern the rules know), at
            the cost of precision; off by default.
    """

    name = "rules"

    def __init__(self, *, mentions: bool = False) -> None:
        self.mentions = mentions

    def extract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        """One list of triples per text."""
        who = _speakers(texts, speakers)
        return [
            extract_text(text, speaker, mentions=self.mentions)
            for text, speaker in zip(texts, who, strict=True)
        ]

    async def aextract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        """Same as `extract` (pure CPU work, no I/O to await)."""
        return self.extract(texts, speakers=speakers)


class ModelExtractor:
    """Extraction by a chat model's structured output (`ExtractedTriples`).

    Args:
        model: A `BaseChatModel` supporting `with_structured_output`.
        batch_size: Most texts sent in one call.
    """

    name = "model"

    def __init__(self, model: BaseChatModel, *, batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self._runnable: Runnable[Any, Any] | None = None

    def _structured(self) -> Runnable[Any, Any]:
        if self._runnable is None:
            try:
                self._runnable = self.model.with_structured_output(ExtractedTriples)
            except NotImplementedError as e:
                raise ConfigurationError(
                    f"{type(self.model).__name__} does not support structured output"
                    " (with_structured_output), which triple extraction needs. Pass a"
                    " model with tool calling or JSON mode, or extractor='rules'."
                ) from e
        return self._runnable

    def _plan(self, texts: Sequence[str], speakers: Sequence[str | None] | None) -> list[Batch]:
        return plan_batches(list(texts), _speakers(texts, speakers), self.batch_size)

    @staticmethod
    def _merge(n: int, batches: Sequence[Batch], replies: Sequence[Any]) -> list[list[Triple]]:
        out: list[list[Triple]] = [[] for _ in range(n)]
        for batch, reply in zip(batches, replies, strict=True):
            out[batch.start : batch.start + batch.size] = parse_reply(batch, reply)
        return out

    def extract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        """One list of triples per text, one model call per batch of texts."""
        batches = self._plan(texts, speakers)
        replies = []
        for batch in batches:
            try:
                replies.append(self._structured().invoke(batch.messages))
            except MODEL_OUTPUT_ERRORS as e:
                raise _invalid(e) from None  # its cause quotes the model's answer
        return self._merge(len(texts), batches, replies)

    async def aextract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        """Async `extract`: the batches' calls run concurrently."""
        batches = self._plan(texts, speakers)

        async def ask(batch: Batch) -> Any:
            try:
                return await self._structured().ainvoke(batch.messages)
            except MODEL_OUTPUT_ERRORS as e:
                raise _invalid(e) from None  # its cause quotes the model's answer

        replies = await asyncio.gather(*(ask(b) for b in batches))
        return self._merge(len(texts), batches, replies)


def _invalid(e: Exception) -> TripleExtractionError:
    """The error of a malformed answer, without the model's text (see `describe_model_error`)."""
    detail = describe_model_error(e)
    _log.warning("triple extraction: invalid model answer: %s", detail)
    return TripleExtractionError(f"invalid triple extraction answer from the model: {detail}")


def resolve_extractor(spec: Any) -> TripleExtractor:
    """The extractor for `spec`.

    None or "rules": `RuleExtractor()`; a `BaseChatModel`: `ModelExtractor(spec)`; any
    other string: `ModelExtractor(init_chat_model(spec))`; an object with `extract`
    (a `TripleExtractor`, which also has `aextract`): itself.

    Raises:
        ConfigurationError: `spec` is none of these.
    """
    if spec is None or spec == "rules":
        return RuleExtractor()
    if isinstance(spec, BaseChatModel):
        return ModelExtractor(spec)
    if isinstance(spec, str):
        from langchain.chat_models import init_chat_model

        try:
            model = init_chat_model(spec)
        except (ValueError, ImportError) as e:
            raise ConfigurationError(
                f"extractor {spec!r} is neither 'rules' nor a chat model init_chat_model"
                f" can build: {e}"
            ) from e
        return ModelExtractor(model)
    if callable(getattr(spec, "extract", None)):
        return spec  # a TripleExtractor of the caller's
    raise ConfigurationError(
        f"extractor must be None, 'rules', a BaseChatModel, an init_chat_model string or"
        f" an object with extract/aextract (a TripleExtractor), got {spec!r}"
    )
