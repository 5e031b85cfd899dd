"""User profiles built from a user's long-term memories, cached in the long tier.

`get_user_profile(store, user_id)` (and its async twin `aget_user_profile`) works on
any LangGraph `BaseStore`, through its public API only:

- **Without a model** the profile lists the user's memories grouped by type
  (`memories_by_type`: preferences and facts first, then experiences and skills), each
  group ordered by importance, then by recency (newest update first), and capped at
  `max_per_type` memories (default `DEFAULT_MAX_PER_TYPE`, 20).
- **With a model** (a `BaseChatModel` or an `init_chat_model` string) the model also
  fills `basics`, `communication_preferences`, `special_needs` and
  `interaction_history` through `with_structured_output(ProfileFields)`, from the same
  capped memories. Malformed output is logged as a warning and the profile built
  without a model is returned (its `source` is then `"memories"`).

**Cache.** A built profile is stored in the namespace `("profiles", user_id)`, under a
key naming its source and the user's memory namespace. Beside it the cache keeps a
fingerprint of the user's memories: a SHA-256 over the namespace, key, `updated_at`
and value of every item under the user's namespace, read with one listing search (one
per 2,000 items). A read whose fingerprint matches returns the cached profile without
calling the model; any put, update or delete of the user's memories (forgetting
included) changes the fingerprint, so the next read rebuilds the profile. A cached
record is only returned after checking that it names the same user, the same memory
namespace and the same options. The cache namespace is outside the memory namespace,
so searches of the user's memories never see it, and it is stored with
`index=False` (never embedded).

**Known facts.** When the store has a knowledge graph (a tiered store opened with
`graph=`), the profile's `known_facts` lists the triples whose subject is the user
(their id, or `"user"`, the subject the extractors give "I" without a speaker) under
the user's namespace, as `"relation object"` texts (`"lives in porto"`), and the
model's prompt shows them. The triples read (with their supporting memories) are part
of the cache fingerprint, so a cached profile is rebuilt when they change. Without a
graph, `known_facts` is empty and nothing else differs.

Every decision of one read is `build_profile`, a generator of store and model calls
(`_drive.Call`) that the sync and async entry points make blocking or awaited.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore, InvalidNamespaceError, Item, SearchItem
from pydantic import BaseModel, Field, ValidationError

from langgraph_tiered_memory._drive import Call, adrive, drive
from langgraph_tiered_memory._models import MODEL_OUTPUT_ERRORS, describe_model_error, resolve_model
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph import queries
from langgraph_tiered_memory.graph.extract import DEFAULT_SPEAKER, entity_name
from langgraph_tiered_memory.graph.types import TripleRecord, normalize_entity
from langgraph_tiered_memory.memory import DEFAULT_IMPORTANCE, DEFAULT_MEMORY_TYPE, MEMORY_TYPES
from langgraph_tiered_memory.ranking.scoring import UserScope
from langgraph_tiered_memory.store.base import TieredStoreCore

__all__ = [
    "DEFAULT_MAX_PER_TYPE",
    "DEFAULT_PROFILE_NAMESPACE",
    "PROFILE_CACHE_LABEL",
    "ItemLister",
    "AsyncItemLister",
    "ProfileFields",
    "UserProfile",
    "aget_user_profile",
    "check_user_id",
    "get_user_profile",
]

logger = logging.getLogger("langgraph_tiered_memory.agent.profile")

DEFAULT_PROFILE_NAMESPACE: tuple[str, ...] = ("memories", "{user_id}")
"""Where a user's memories live; `{user_id}` is replaced by the user's id."""

PROFILE_CACHE_LABEL = "profiles"
"""First label of the cache namespace `("profiles", user_id)`."""

DEFAULT_MAX_PER_TYPE = 20
"""Most memories of each type in a profile (and in the model's prompt)."""

LIST_PAGE_SIZE = 2000
"""Items per listing search when the profile reads a user's memories."""

MAX_PROMPT_CHARS = 500
"""Longest memory text shown to the model; longer ones are cut."""

MAX_KNOWN_FACTS = 50
"""Most knowledge-graph triples read per subject for a profile's `known_facts`."""

PROFILE_TYPE_ORDER: tuple[str, ...] = ("preference", "fact", "experience", "skill")
"""Order of the groups in `memories_by_type`."""

_USER_ID_MAX_BYTES = 256  # the store's longest namespace label
_BAD_USER_ID_CHARS = re.compile("[.*{}\ud800-\udfff]")
_CACHE_KIND = "user_profile"
_CACHE_VERSION = 1
_UNCOUNTED = {"$count_access": False}  # memory ranking's search option

ProfileSource = Literal["model", "memories"]

ItemLister = Callable[[tuple[str, ...], int, int], Sequence[SearchItem]]
"""`(namespace_prefix, limit, offset) -> items`: one page of a listing search."""

AsyncItemLister = Callable[[tuple[str, ...], int, int], Awaitable[Sequence[SearchItem]]]
"""The async `ItemLister`."""


class ProfileFields(BaseModel):
    """The part of a profile a chat model writes (the structured-output schema)."""

    basics: list[str] = Field(
        default_factory=list,
        description="Stable facts about the user (name, location, occupation, family,"
        " ...), one short statement each.",
    )
    communication_preferences: list[str] = Field(
        default_factory=list,
        description="How the user wants to be addressed and answered: language, tone,"
        " length, format.",
    )
    special_needs: list[str] = Field(
        default_factory=list,
        description="Accessibility needs, health or dietary constraints and other needs"
        " to respect.",
    )
    interaction_history: list[str] = Field(
        default_factory=list,
        description="What the user has done or discussed with the assistant so far,"
        " most important first.",
    )


class UserProfile(ProfileFields):
    """A user's profile.

    Attributes:
        user_id: The user the profile describes.
        memories_by_type: The user's memory texts per type, always filled: keys
            `"preference"`, `"fact"`, `"experience"`, `"skill"` (in that order), each
            list ordered by importance then recency, at most `max_per_type` long.
        source: `"model"` when a chat model wrote `basics` ... `interaction_history`,
            `"memories"` when they are empty and only `memories_by_type` is filled.
        updated_at: When the profile was built (UTC).
        memory_count: How many items the user's namespace held when it was built.
        known_facts: Facts about the user from the store's knowledge graph (triples
            whose subject is the user, e.g. `"lives in porto"`); empty when the store
            has no graph (`graph=`).
    """

    user_id: str
    memories_by_type: dict[str, list[str]]
    source: ProfileSource
    updated_at: datetime
    memory_count: int = 0
    known_facts: list[str] = Field(default_factory=list)

    @property
    def preferences(self) -> list[str]:
        """The user's preference memories (`memories_by_type["preference"]`)."""
        return self.memories_by_type.get("preference", [])

    @property
    def facts(self) -> list[str]:
        """The user's fact memories (`memories_by_type["fact"]`)."""
        return self.memories_by_type.get("fact", [])

    def to_text(self) -> str:
        """The profile as plain text for a prompt (empty sections left out)."""
        sections = [
            (f.replace("_", " ").capitalize(), getattr(self, f)) for f in ProfileFields.model_fields
        ]
        sections += [(f"{t.capitalize()} memories", m) for t, m in self.memories_by_type.items()]
        sections.append(("Known facts about the user", self.known_facts))
        lines: list[str] = []
        for title, entries in sections:
            if entries:
                lines.append(f"{title}:")
                lines.extend(f"- {e}" for e in entries)
        return "\n".join(lines)


def check_user_id(user_id: Any) -> str:
    """Check that `user_id` can name a user's namespace and return it.

    Raises:
        InvalidNamespaceError: `user_id` is not a string, is empty or blank, holds a
            character a namespace label cannot hold (`.`, or a surrogate) or one that
            could act as a wildcard or template (`*`, `{`, `}`), or is longer than 256
            bytes in UTF-8.
    """
    if not isinstance(user_id, str):
        raise InvalidNamespaceError(
            f"user_id must be a non-empty string, got {type(user_id).__name__} {user_id!r}."
        )
    if not user_id.strip():
        raise InvalidNamespaceError(
            f"user_id must be a non-empty string, got {user_id!r}. Pass the user's id."
        )
    bad = _BAD_USER_ID_CHARS.search(user_id)
    if bad is not None:
        raise InvalidNamespaceError(
            f"user_id {user_id[:80]!r} contains {bad.group()!r}. A user id becomes a"
            " namespace label, which cannot hold '.' or surrogates; '*', '{' and '}' are"
            " refused so an id can never act as a wildcard or a template. Map such ids"
            " to a safe label first (e.g. a hash of the id)."
        )
    if len(user_id.encode("utf-8")) > _USER_ID_MAX_BYTES:
        raise InvalidNamespaceError(
            f"user_id {user_id[:40]!r}... is longer than {_USER_ID_MAX_BYTES} bytes."
            " Use a shorter id, e.g. a hash of it."
        )
    return user_id


def resolve_namespace(template: Sequence[str], user_id: str) -> tuple[str, ...]:
    """The user's memory namespace: `template` with `{user_id}` filled in.

    Raises:
        ConfigurationError: the template is not a non-empty tuple of strings holding
            `{user_id}`, holds another placeholder, or starts with the cache label.
    """
    if isinstance(template, str) or not all(isinstance(x, str) for x in template):
        raise ConfigurationError(
            f"namespace must be a tuple of strings such as ('memories', '{{user_id}}'),"
            f" got {template!r}."
        )
    labels = tuple(template)
    if not any("{user_id}" in label for label in labels):
        raise ConfigurationError(
            f"namespace {labels!r} does not contain '{{user_id}}', so the profile would"
            " not be scoped to one user. Use e.g. ('memories', '{user_id}')."
        )
    resolved = tuple(label.replace("{user_id}", user_id) for label in labels)
    for label in resolved:
        if not label or "." in label or "{" in label or "}" in label:
            raise ConfigurationError(
                f"namespace {labels!r} gives the label {label!r} for user {user_id!r}:"
                " labels must be non-empty, without '.', and '{user_id}' is the only"
                " placeholder filled in here."
            )
    if resolved[0] == PROFILE_CACHE_LABEL:
        raise ConfigurationError(
            f"namespace {resolved!r} starts with {PROFILE_CACHE_LABEL!r}, the label of the"
            " profile cache: keep memories in another namespace, e.g."
            " ('memories', '{user_id}')."
        )
    return resolved


@dataclass(frozen=True)
class ProfilePlan:
    """One profile request, checked: whose, from where, where its cache lives."""

    user_id: str
    namespace: tuple[str, ...]
    max_per_type: int
    model_tag: str | None
    """Identifies the model (class and model name); None without a model."""

    @property
    def cache_namespace(self) -> tuple[str, ...]:
        """Where this user's cached profiles live: `("profiles", user_id)`."""
        return (PROFILE_CACHE_LABEL, self.user_id)

    def cache_key(self, source: ProfileSource) -> str:
        """The cache key of a profile of `source` built from this plan's namespace."""
        raw = json.dumps(list(self.namespace), ensure_ascii=False)
        return f"{source}-{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:24]}"


def plan_profile(
    user_id: Any, namespace: Sequence[str], model: BaseChatModel | None, max_per_type: int
) -> ProfilePlan:
    """Check a profile request (raises before any I/O)."""
    uid = check_user_id(user_id)
    if isinstance(max_per_type, bool) or not isinstance(max_per_type, int) or max_per_type < 1:
        raise ConfigurationError(f"max_per_type must be an integer >= 1, got {max_per_type!r}.")
    resolved, tag = resolve_namespace(namespace, uid), None
    if model is not None:
        name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
        tag = f"{type(model).__module__}.{type(model).__qualname__}:{name}"
    return ProfilePlan(uid, resolved, max_per_type, tag)


def own_items(plan: ProfilePlan, items: Sequence[SearchItem]) -> list[SearchItem]:
    """The items under the plan's namespace that are the user's or no user's.

    Never a cached profile, and never another user's namespace below the plan's
    (`("memories", "users", "bob")` under `("memories", "users")` for a user id
    `"users"`: `UserScope.may_hold`).
    """
    n = len(plan.namespace)
    scope = UserScope(plan.user_id)
    return [
        it
        for it in items
        if tuple(it.namespace[:n]) == plan.namespace
        and it.namespace[0] != PROFILE_CACHE_LABEL
        and scope.may_hold(it.namespace)
    ]


def fingerprint(items: Sequence[SearchItem]) -> str:
    """A digest of the items' namespaces, keys, update times and values (no I/O).

    Any put, update or delete among `items` changes it; reading them does not.
    """
    digest = hashlib.sha256()
    rows = sorted(items, key=lambda it: (tuple(it.namespace), it.key))
    for it in rows:
        row = [list(it.namespace), it.key, it.updated_at.isoformat(), it.value]
        digest.update(json.dumps(row, sort_keys=True, default=str).encode("utf-8"))
        digest.update(b"\n")
    return f"{len(rows)}:{digest.hexdigest()[:40]}"


def group_memories(items: Sequence[SearchItem], max_per_type: int) -> dict[str, list[str]]:
    """Memory texts per type: importance first, then newest update, capped per type."""
    rows: list[tuple[tuple[float, float, str], str, str]] = []
    for item in items:
        value = item.value
        content = value.get("content") if isinstance(value, dict) else None
        if not isinstance(content, str) or not content.strip():
            continue
        mtype = value.get("memory_type", DEFAULT_MEMORY_TYPE)
        importance = value.get("importance", DEFAULT_IMPORTANCE)
        if (
            isinstance(importance, bool)
            or not isinstance(importance, (int, float))
            or not math.isfinite(importance)
        ):
            importance = DEFAULT_IMPORTANCE  # a store that does not validate memories
        rank = (-float(importance), -item.updated_at.timestamp(), item.key)
        rows.append(
            (rank, mtype if mtype in MEMORY_TYPES else DEFAULT_MEMORY_TYPE, content.strip())
        )
    groups: dict[str, list[str]] = {t: [] for t in PROFILE_TYPE_ORDER}
    for _, mtype, content in sorted(rows, key=lambda row: row[0]):
        group = groups.setdefault(mtype, [])
        if len(group) < max_per_type:
            group.append(content)
    return groups


def memories_profile(
    plan: ProfilePlan, items: Sequence[SearchItem], facts: Sequence[str] = ()
) -> UserProfile:
    """The profile built without a model (`facts`: its `known_facts`)."""
    return UserProfile(
        user_id=plan.user_id,
        memories_by_type=group_memories(items, plan.max_per_type),
        source="memories",
        updated_at=datetime.now(timezone.utc),
        memory_count=len(items),
        known_facts=list(facts),
    )


def fact_subjects(user_id: str) -> list[str]:
    """The graph subjects that stand for the user: their id, and `"user"`.

    The triple extractors map "I"/"my" to the speaker of a memory (its `speaker`
    field: the user's id when it is set) or to `"user"` when it has none, so both are
    read, named as the extractors name entities.
    """
    names = [entity_name(user_id), normalize_entity(user_id), DEFAULT_SPEAKER]
    return list(dict.fromkeys(n for n in names if n))


def known_facts(records: Sequence[TripleRecord]) -> list[str]:
    """`relation object` texts of the user's triples (e.g. `"lives in porto"`), once each."""
    texts = (f"{r.relation.replace('_', ' ')} {r.object}".strip() for r in records)
    return list(dict.fromkeys(t for t in texts if t))


def graph_fingerprint(records: Sequence[TripleRecord]) -> str:
    """A digest of the triples a profile read: part of its cache fingerprint."""
    rows = sorted(
        [list(r.namespace), r.subject, r.relation, r.object, list(r.memory_keys)] for r in records
    )
    raw = json.dumps(rows, ensure_ascii=False).encode("utf-8")
    return f"g{len(rows)}:{hashlib.sha256(raw).hexdigest()[:24]}"


_SYSTEM_PROMPT = (
    "You maintain a profile of one user for an assistant. From the user's memories"
    " below, fill in: basics (stable facts about the user), communication_preferences"
    " (how they want to be answered), special_needs (needs and constraints to respect)"
    " and interaction_history (what they did or discussed with the assistant). Use only"
    " what the memories say; leave a field empty when they say nothing about it. Write"
    " short statements in the memories' language."
)


def profile_prompt(profile: UserProfile) -> list[BaseMessage]:
    """The model's prompt: the instructions and the profile's memories by type."""
    lines = [f"Memories of user {profile.user_id!r}:"]
    for mtype, texts in profile.memories_by_type.items():
        if texts:
            lines.append(f"\n{mtype.capitalize()} memories:")
            lines.extend(f"- {t[:MAX_PROMPT_CHARS]}" for t in texts)
    if len(lines) == 1:
        lines.append("(none)")
    if profile.known_facts:
        lines.append("\nKnown facts about the user (from the knowledge graph):")
        lines.extend(f"- {f[:MAX_PROMPT_CHARS]}" for f in profile.known_facts)
    return [SystemMessage(content=_SYSTEM_PROMPT), HumanMessage(content="\n".join(lines))]


def model_profile(base: UserProfile, output: Any) -> UserProfile | None:
    """`base` completed with the model's output, or None (and a warning) if malformed.

    `output` is the structured answer, or the error the structured call raised instead.
    """
    if isinstance(output, Exception):
        problem = describe_model_error(output)
    else:
        data = output.model_dump() if isinstance(output, BaseModel) else output
        try:
            fields = ProfileFields.model_validate(data)
        except ValidationError as e:
            problem = describe_model_error(e)
        else:
            update: dict[str, Any] = {
                name: [e.strip() for e in getattr(fields, name) if e.strip()]
                for name in ProfileFields.model_fields
            }
            return base.model_copy(update={**update, "source": "model"})
    logger.warning(
        "Profile of user %r: the model's structured output is malformed (%s); returning"
        " the profile built from the memories without a model.",
        base.user_id,
        problem,
    )
    return None


def _cache_header(plan: ProfilePlan, source: ProfileSource, fp: str) -> dict[str, Any]:
    """What a cache record must say to be current for `plan`, `source` and `fp`."""
    return {
        "kind": _CACHE_KIND,
        "version": _CACHE_VERSION,
        "user_id": plan.user_id,
        "namespace": list(plan.namespace),
        "max_per_type": plan.max_per_type,
        "model": plan.model_tag if source == "model" else None,
        "fingerprint": fp,
    }


def cache_value(plan: ProfilePlan, profile: UserProfile, fp: str) -> dict[str, Any]:
    """The cache record of `profile` for the memories whose fingerprint is `fp`."""
    return {
        **_cache_header(plan, profile.source, fp),
        "profile": profile.model_dump(mode="json"),
    }


def cached_profile(
    plan: ProfilePlan, item: Item | None, fp: str, source: ProfileSource
) -> UserProfile | None:
    """The cached profile in `item` if it is current for `plan` and `fp`, else None."""
    if item is None:
        return None
    value = item.value
    if any(value.get(k) != v for k, v in _cache_header(plan, source, fp).items()):
        return None
    try:
        profile = UserProfile.model_validate(value.get("profile"))
    except ValidationError as e:
        logger.warning(
            "Cached profile of user %r is unreadable (%s); rebuilding.",
            plan.user_id,
            describe_model_error(e),  # the record quotes the memories
        )
        return None
    if profile.user_id != plan.user_id or profile.source != source:
        return None
    return profile


def build_profile(
    store: Any,
    user_id: Any,
    model: str | BaseChatModel | None = None,
    namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
    refresh: bool = False,
    max_per_type: int = DEFAULT_MAX_PER_TYPE,
    lister: ItemLister | AsyncItemLister | None = None,
    *,
    write_cache: bool = True,
) -> Generator[Call, Any, UserProfile]:
    """One profile read: yields its store and model calls (`_drive`), returns the profile.

    Checks the request (before any call), lists the user's memories (with `lister`,
    else a listing search that counts no access on a tiered store), reads the user's
    triples when the store has a knowledge graph, returns the cached profile when its
    fingerprint (memories, and triples with a graph) is current (unless `refresh`), else
    builds the profile, asks the model and caches the result (if `write_cache`).
    """
    model = resolve_model(model)
    plan = plan_profile(user_id, namespace, model, max_per_type)
    # Reading a profile is no use of the memories: no access counted, no TTL refreshed.
    tiered = isinstance(store, TieredStoreCore)
    uncounted = _UNCOUNTED if tiered and store.memory_mode else None
    search = {"filter": uncounted, "limit": LIST_PAGE_SIZE, "refresh_ttl": False}
    items: list[SearchItem] = []
    while True:
        if lister is not None:
            call = Call(lister, None, (plan.namespace, LIST_PAGE_SIZE, len(items)))
        else:
            call = Call(store, "search", (plan.namespace,), {**search, "offset": len(items)})
        page = yield call
        items.extend(page)
        if len(page) < LIST_PAGE_SIZE:
            break
    items = own_items(plan, items)
    fp = fingerprint(items)
    records: list[TripleRecord] = []
    if tiered and store.graph is not None:
        scope = UserScope(plan.user_id)  # another user's namespace below the plan's: left out
        for subject in fact_subjects(plan.user_id):
            found = yield Call(
                queries,
                "graph_triples",
                (store, plan.namespace),
                {"subject": subject, "limit": MAX_KNOWN_FACTS},
            )
            records.extend(r for r in found if scope.may_hold(r.namespace))
        fp = f"{fp}+{graph_fingerprint(records)}"
    source: ProfileSource = "model" if model is not None else "memories"
    if not refresh:
        cached = yield Call(store, "get", (plan.cache_namespace, plan.cache_key(source)))
        hit = cached_profile(plan, cached, fp, source)
        if hit is not None:
            logger.debug("Profile of user %r: cache hit (%s).", plan.user_id, source)
            return hit
    profile = memories_profile(plan, items, facts=known_facts(records))
    if model is not None:
        structured = model.with_structured_output(ProfileFields)
        try:
            output = yield Call(structured, "invoke", (profile_prompt(profile),))
        except MODEL_OUTPUT_ERRORS as e:
            output = e
        profile = model_profile(profile, output) or profile
    if write_cache:
        key, value = plan.cache_key(profile.source), cache_value(plan, profile, fp)
        yield Call(store, "put", (plan.cache_namespace, key, value), {"index": False})
    return profile


def get_user_profile(
    store: BaseStore,
    user_id: str,
    *,
    model: str | BaseChatModel | None = None,
    namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
    refresh: bool = False,
    max_per_type: int = DEFAULT_MAX_PER_TYPE,
    lister: ItemLister | None = None,
) -> UserProfile:
    """The profile of `user_id`, from the cache when the user's memories are unchanged.

    Args:
        store: Any LangGraph `BaseStore` (only its public API is used).
        user_id: The user's id; it fills `{user_id}` in `namespace`.
        model: A chat model (or `init_chat_model` string) that writes the structured
            fields; None builds the profile from the memories alone, with no model call.
        namespace: The user's memory namespace, with a `{user_id}` placeholder.
        refresh: Rebuild (and re-cache) even if the cached profile is current.
        max_per_type: Most memories of each type in the profile and in the prompt.
        lister: How the memories are listed, one page at a time. Without one, the
            store is listed with `store.search` (on a tiered store, without counting
            accesses).

    Returns:
        The `UserProfile`; its `source` says whether a model wrote it. On a store with
        a knowledge graph (`graph=`), its `known_facts` lists the user's triples.

    Raises:
        InvalidNamespaceError: `user_id` cannot name a namespace (see `check_user_id`).
        ConfigurationError: `namespace` or `max_per_type` is unusable.

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore
        from langgraph_tiered_memory.agent.profile import get_user_profile

        store = InMemoryStore()
        store.put(("memories", "ana"), "m1", {"content": "Prefers short answers",
                                              "memory_type": "preference"})
        store.put(("memories", "ana"), "m2", {"content": "Lives in Lisbon",
                                              "memory_type": "fact", "importance": 0.9})
        profile = get_user_profile(store, "ana")
        assert profile.preferences == ["Prefers short answers"]
        assert profile.facts == ["Lives in Lisbon"] and profile.source == "memories"
        ```
    """
    return drive(build_profile(store, user_id, model, namespace, refresh, max_per_type, lister))


async def aget_user_profile(
    store: BaseStore,
    user_id: str,
    *,
    model: str | BaseChatModel | None = None,
    namespace: Sequence[str] = DEFAULT_PROFILE_NAMESPACE,
    refresh: bool = False,
    max_per_type: int = DEFAULT_MAX_PER_TYPE,
    lister: AsyncItemLister | None = None,
) -> UserProfile:
    """Async `get_user_profile`: the same profile and cache, with the async APIs.

    Args:
        store: Any LangGraph `BaseStore` (only its public async API is used).
        user_id: The user's id; it fills `{user_id}` in `namespace`.
        model: A chat model or `init_chat_model` string; None for no model call.
        namespace: The user's memory namespace, with a `{user_id}` placeholder.
        refresh: Rebuild (and re-cache) even if the cached profile is current.
        max_per_type: Most memories of each type in the profile and in the prompt.
        lister: Async page lister. Without one, the store is listed with
            `store.asearch` (on a tiered store, without counting accesses).
    """
    return await adrive(
        build_profile(store, user_id, model, namespace, refresh, max_per_type, lister)
    )
