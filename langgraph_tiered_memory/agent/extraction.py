"""Extraction: turn a conversation into long-term memories that update instead of pile up.

`extract_memories(store, namespace, messages)` (and its async twin `aextract_memories`)
finds the memories worth keeping in `messages`, compares each with the similar memories
already stored in `namespace`, and adds, updates, deletes or leaves them, so a fact
stated twice is stored once and a changed fact or preference replaces the old one.

With a model (any `BaseChatModel` that supports `with_structured_output`, or an
`init_chat_model` string):

1. the model extracts candidates (`ExtractedMemory`: content, memory_type, importance)
   with `EXTRACTION_PROMPT`;
2. each candidate is compared with the stored memories of `namespace` that are most
   similar to it, that have its exact text, or that fill the same slot (see below);
3. a candidate whose text (case, spacing and punctuation aside) is already stored is a
   NOOP without asking; one with nothing similar stored is added without asking;
   otherwise the model decides (`MemoryDecision`, with `DECISION_PROMPT`): ADD, UPDATE
   a memory with merged content, DELETE a contradicted memory (the candidate takes its
   place) or NOOP.

A decision naming a memory that was not offered to the model is refused (logged,
reported in `ExtractionResult.rejected`) and the heuristic decides instead: extraction
never touches another key or namespace. A malformed answer (unparseable, or not the
schema) is logged as a warning and the heuristic path takes over: for the whole run
when it is the extraction call's, for that candidate when it is a decision's.

Without a model (the heuristic path), the first-person facts and preferences of the
user's messages become memories: "I live in ...", "I moved to ...", "I am ...",
"I'm from ...", "I work as/at ...", "my X is Y", "I like/love/enjoy/prefer ...",
"I hate/don't like ...", and anything after "remember that ...". Facts are `fact`,
likes and favourites `preference`. Importance is 0.5, +0.1 for who the user is
(residence, origin, work, name, age), +0.3 when the user says "remember" or
"important". Each candidate is then decided:

- the same text is stored: NOOP;
- a memory fills the same *slot* (residence, employer, `my favourite colour`, the
  liking of one thing, ...): NOOP when the value is the same, else DELETE it and
  add the candidate ("I moved to Lisbon" replaces "I live in Berlin"; "I don't like
  coffee" replaces "I love coffee");
- a memory is at least `similarity_threshold` similar: UPDATE it to the new wording.
  Similarity is the cosine of the store's embeddings (`store.embeddings`, set by its
  `index` config), or, for a store without an index, difflib's ratio of the
  normalised texts;
- else ADD.

Every write of a run goes through one `store.batch` (or `abatch`) of `PutOp`s, so it
works with any `BaseStore` and, on the tiered stores, is all or nothing. New memories
get a uuid4 hex key. Values carry `content`, `memory_type`, `importance` and
`"source": "extraction"`, plus `slot` when the text fills one (the same-slot search
filters on it) and `redactions` when a redactor removed something. An UPDATE keeps the
memory's key and other fields (its `consolidated_from` too), takes the higher
importance and appends to `replaced` what it replaced: `{"key", "content_sha256",
"updated_at", "replaced_at", "action"}` (the newest 20). A DELETE's replacement
memory carries the deleted memory's `replaced` history plus an entry for it. Written
outside the user's own namespaces, values also record `provenance` (the user and
session ids, see `langgraph_tiered_memory.privacy.provenance`), an UPDATE adding to it. Pinned
memories (`"pinned": True`) are never updated or deleted: the candidate is added
beside them. Only hashes are kept of replaced texts, so forgetting a memory forgets
its text.

Searching a tiered store in `"memory"` scoring mode counts an access on the memories it
returns, so the memories a run compares with gain an access each. On a tiered store
whose retrieval is `"contextual"`, a run's searches use `"hybrid"` (they read one
namespace, so they need no `$user`). The planning is shared by both entry points
(`agent._extract_plan.plan_extraction`); they only make its model, store and embedding
calls, blocking or awaited (`_drive.drive` / `adrive`).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.store.base import BaseStore

from langgraph_tiered_memory._drive import adrive, drive
from langgraph_tiered_memory._models import (
    resolve_model,
)
from langgraph_tiered_memory.agent._extract_plan import Plan, Redact, Settings, plan_extraction
from langgraph_tiered_memory.agent._extract_types import (
    DECISION_PROMPT,
    EXTRACTION_PROMPT,
    ExtractedMemories,
    ExtractedMemory,
    ExtractionResult,
    MemoryDecision,
)
from langgraph_tiered_memory.privacy.history import acting
from langgraph_tiered_memory.privacy.redaction import RedactorSpec, redact_text, resolve_redactor
from langgraph_tiered_memory.ranking.modes import mode_spec
from langgraph_tiered_memory.store.base import TieredStoreCore

__all__ = [
    "DECISION_PROMPT",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "EXTRACTION_PROMPT",
    "ExtractedMemories",
    "ExtractedMemory",
    "ExtractionResult",
    "MemoryDecision",
    "aextract_memories",
    "extract_memories",
]

_log = logging.getLogger("langgraph_tiered_memory.agent.extraction")

EXTRACTION_REASON = "extracted from a conversation"
"""The memory history's reason of the writes an extraction run makes."""

DEFAULT_SIMILARITY_THRESHOLD = 0.9
"""Similarity from which the heuristic path updates a stored memory instead of adding."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _namespace(namespace: Sequence[str], user_id: str | None) -> tuple[str, ...]:
    if isinstance(namespace, str) or not namespace:
        raise ValueError(
            f"namespace must be a non-empty tuple of labels such as ('memories', 'u1'),"
            f" got {namespace!r}."
        )
    out: list[str] = []
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise ValueError(f"namespace labels must be non-empty strings, got {label!r}.")
        names = set(_PLACEHOLDER.findall(label))
        if names - {"user_id"}:
            raise ValueError(
                f"namespace label {label!r} has a placeholder other than {{user_id}}; fill"
                " it before calling extraction."
            )
        if names:
            if not user_id:
                raise ValueError(
                    f"namespace {tuple(namespace)!r} has a {{user_id}} placeholder: pass"
                    " user_id=..."
                )
            label = label.replace("{user_id}", user_id)
        out.append(label)
    return tuple(out)


def _redact_function(redactor: RedactorSpec) -> Redact | None:
    resolved = resolve_redactor(redactor)
    if resolved is None:
        return None
    redact = resolved

    def run(text: str) -> tuple[str, dict[str, int]]:
        found = redact_text(text, redact)
        return found.text, found.counts

    return run


def _search_options(store: BaseStore) -> dict[str, Any]:
    """Reserved filter keys every search of a run carries (tiered memory stores only).

    Comparing candidates with stored memories is not a use of them, so the searches do
    not count accesses (`$count_access`). A store whose default retrieval is user-scoped
    (`"contextual"`) needs the caller's user for every search; a run reads one namespace
    only, so plain hybrid retrieval finds the same memories without one.
    """
    if not (isinstance(store, TieredStoreCore) and store.memory_mode):
        return {}
    options: dict[str, Any] = {"$count_access": False}
    if mode_spec(store.scoring.retrieval).user_scoped:
        options["$retrieval"] = "hybrid"
    return options


def _clock(store: BaseStore, clock: Callable[[], float] | None) -> Callable[[], float]:
    """`clock`, else the store's own clock (the tiered stores have one), else `time.time`."""
    if clock is not None:
        return clock
    own = getattr(store, "clock", None)
    return own if callable(own) else time.time


def _start(
    store: BaseStore,
    namespace: Sequence[str],
    messages: Any,
    model: str | BaseChatModel | None,
    similarity_threshold: float,
    redactor: RedactorSpec,
    user_id: str | None,
    limit: int,
    clock: Callable[[], float] | None,
    session_id: str | None = None,
) -> Plan[ExtractionResult]:
    """Validate the arguments and build the run's plan (shared by both entry points)."""
    if not isinstance(store, BaseStore):
        raise TypeError(f"store must be a langgraph BaseStore, got {type(store).__name__}.")
    if (
        isinstance(similarity_threshold, bool)
        or not isinstance(similarity_threshold, (int, float))
        or not 0.0 < similarity_threshold <= 1.0
    ):
        raise ValueError(
            f"similarity_threshold must be a number in (0, 1], got {similarity_threshold!r}."
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}.")
    chat = resolve_model(model)
    embeddings = getattr(store, "embeddings", None)
    if not isinstance(embeddings, Embeddings):
        embeddings = None
    settings = Settings(
        namespace=_namespace(namespace, user_id),
        model=chat,
        embeddings=embeddings,
        threshold=float(similarity_threshold),
        limit=limit,
        now=datetime.fromtimestamp(_clock(store, clock)(), tz=timezone.utc),
        new_key=lambda: uuid.uuid4().hex,
        redact=_redact_function(redactor),
        search_options=_search_options(store),
        user_id=user_id,
        session_id=session_id,
    )
    if isinstance(messages, (str, BaseMessage, dict, tuple)):
        messages = [messages]
    return plan_extraction(store, convert_to_messages(messages), settings)


def extract_memories(
    store: BaseStore,
    namespace: Sequence[str],
    messages: Any,
    *,
    model: str | BaseChatModel | None = None,
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    redactor: RedactorSpec = None,
    user_id: str | None = None,
    limit: int = 5,
    clock: Callable[[], float] | None = None,
    session_id: str | None = None,
) -> ExtractionResult:
    """Extract memories from `messages` into `namespace`, updating instead of duplicating.

    See the module documentation for how candidates are found and decided.

    Args:
        store: Any LangGraph `BaseStore` (a `TieredMemoryStore`, `InMemoryStore`, ...).
            With an `index`, similarity is the cosine of its embeddings.
        namespace: Where the memories live, e.g. `("memories", "u1")`; a
            `"{user_id}"` placeholder is filled from `user_id`. Only memories of this
            exact namespace are read or written.
        messages: The conversation: `BaseMessage`s, dicts, `(role, text)` tuples or
            strings (user messages), or a single one of those.
        model: Chat model or `init_chat_model` string for the model path; None for the
            heuristic path.
        similarity_threshold: Similarity (0-1] from which the heuristic path updates a
            stored memory instead of adding one.
        redactor: Applied to the conversation before a model sees it and to every
            memory before it is stored: None, True/`"default"` (the default detector of
            `langgraph_tiered_memory.privacy.redaction`) or a `Redactor`.
        user_id: Fills `"{user_id}"` in `namespace`.
        limit: Most stored memories each candidate is compared with.
        clock: Returns the current time in epoch seconds, for provenance times
            (default: the store's `clock` if it has one, else `time.time`).
        session_id: The conversation's session (thread) id. With `user_id`, recorded
            in the `provenance` of memories written outside the user's own namespaces
            (`langgraph_tiered_memory.privacy.provenance`), so erasing the user finds them.

    Returns:
        An `ExtractionResult` with the keys added, updated, deleted and unchanged.

    Raises:
        ValueError: A bad namespace, threshold or limit.
        ConfigurationError: The model does not support structured output.

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.agent.extraction import extract_memories

        store = InMemoryStore()
        ns = ("memories", "u1")
        first = extract_memories(store, ns, [("user", "I live in Berlin.")])
        again = extract_memories(store, ns, [("user", "i live in Berlin")])
        moved = extract_memories(store, ns, [("user", "I moved to Lisbon!")])
        assert again.unchanged == first.added and moved.deleted == first.added
        assert [i.value["content"] for i in store.search(ns)] == ["I moved to Lisbon"]
        ```
    """
    run = _start(
        store,
        namespace,
        messages,
        model,
        similarity_threshold,
        redactor,
        user_id,
        limit,
        clock,
        session_id=session_id,
    )
    with acting("extraction", EXTRACTION_REASON):  # the memory history's actor of its writes
        return drive(run)


async def aextract_memories(
    store: BaseStore,
    namespace: Sequence[str],
    messages: Any,
    *,
    model: str | BaseChatModel | None = None,
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    redactor: RedactorSpec = None,
    user_id: str | None = None,
    limit: int = 5,
    clock: Callable[[], float] | None = None,
    session_id: str | None = None,
) -> ExtractionResult:
    """Async `extract_memories`: `ainvoke`, `aembed_documents` and `store.abatch`.

    Same arguments and result as `extract_memories`; works with
    `AsyncTieredMemoryStore` and any `BaseStore` implementing `abatch`.

    Example:
        ```python
        import asyncio
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.agent.extraction import aextract_memories

        store = InMemoryStore()
        result = asyncio.run(
            aextract_memories(store, ("memories", "u1"), "My favourite colour is green.")
        )
        assert store.get(("memories", "u1"), result.added[0]).value["memory_type"] == (
            "preference"
        )
        ```
    """
    run = _start(
        store,
        namespace,
        messages,
        model,
        similarity_threshold,
        redactor,
        user_id,
        limit,
        clock,
        session_id=session_id,
    )
    with acting("extraction", EXTRACTION_REASON):
        return await adrive(run)
