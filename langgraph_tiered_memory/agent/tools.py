"""Memory tools for tool-calling agents: manage (create, update, delete) and search.

Both factories return LangChain `StructuredTool`s (sync and async bodies) for `ToolNode`,
`bind_tools` and prebuilt agents. Each tool works in one namespace, filled from the run's
`config["configurable"]` (e.g. `("memories", "{user_id}")`); nothing the model passes can
change it: unknown fields are refused, ids only name keys of that namespace, and an update
or delete of a key it lacks fails alike whether or not another namespace holds the key.
The store is the factory's `store=`, else the graph's (`langgraph.config.get_store()`).

Mistakes the model can fix come back to it as error `ToolMessage`s (`MemoryToolError`);
setup mistakes (no store, a missing config value) raise `ConfigurationError`.
"""

from __future__ import annotations

import logging
import re
import string
import uuid
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException
from langgraph.config import get_store
from langgraph.store.base import BaseStore, InvalidNamespaceError, SearchItem
from pydantic import BaseModel, ConfigDict, Field

from langgraph_tiered_memory._drive import Call, adrive, drive
from langgraph_tiered_memory.errors import ConfigurationError, TieredMemoryError
from langgraph_tiered_memory.memory import DEFAULT_MEMORY_TYPE, MemoryType
from langgraph_tiered_memory.privacy.history import acting
from langgraph_tiered_memory.privacy.provenance import from_config, stamp
from langgraph_tiered_memory.privacy.redaction import Redactor, redact_text, resolve_redactor
from langgraph_tiered_memory.store._validate import validate_namespace

__all__ = [
    "DEFAULT_MANAGE_INSTRUCTIONS",
    "DEFAULT_SEARCH_INSTRUCTIONS",
    "ManageMemoryArgs",
    "MemoryToolError",
    "NamespaceTemplate",
    "SearchMemoryArgs",
    "create_manage_memory_tool",
    "create_search_memory_tool",
]

_log = logging.getLogger("langgraph_tiered_memory.agent.tools")

DEFAULT_MANAGE_INSTRUCTIONS = (
    "Use it to keep what matters about the user across conversations: create a memory"
    " when the user states a preference or a fact about themselves, or asks you to"
    " remember something; update a memory (pass its id) when it has become wrong or"
    " incomplete; delete one (pass its id) when the user asks you to forget it or it no"
    " longer holds. Search the memories first to find the id of one to change."
)
"""What the manage tool's description tells the model about when to call it."""

DEFAULT_SEARCH_INSTRUCTIONS = (
    "Use it before answering when what you know about the user could matter. Each result"
    " has a key: pass it as `id` to the memory management tool to update or delete it."
)
"""What the search tool's description tells the model about when to call it."""

MAX_CONTENT_CHARS = 4000
"""Default longest memory content the manage tool accepts, in characters."""

MAX_ID_CHARS = 256
"""Longest memory id the manage tool accepts, in characters."""

MAX_QUERY_CHARS = 2000
"""Longest search query the search tool accepts, in characters."""

_MAX_PAGES = 10
# Text no store can hold: surrogate code points; and control characters in ids.
_SURROGATE = re.compile("[\ud800-\udfff]")
_ID_UNSAFE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


class MemoryToolError(ToolException, TieredMemoryError, ValueError):
    """A memory tool call the model made cannot be carried out as given.

    The tools report it back to the model as an error `ToolMessage` (their
    `handle_tool_error` is on), so the agent can correct the call. Nothing was written.
    """


# ------------------------------------------------------------------ namespaces


def check_tool_namespace(namespace: tuple[str, ...]) -> None:
    """The store's label rules plus LangGraph's own (no NUL, no "langgraph" root)."""
    validate_namespace(namespace)
    if any("\x00" in label for label in namespace):
        raise InvalidNamespaceError(f"A label of namespace {namespace} holds a NUL character.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'The first namespace label cannot be "langgraph" (reserved); got {namespace}.'
        )


class NamespaceTemplate:
    """A namespace whose labels may hold `{name}` placeholders filled from the run config.

    Args:
        template: The labels, e.g. `("memories", "{user_id}")`. A placeholder is a
            plain name; `{{` and `}}` stand for literal braces.

    Raises:
        ConfigurationError: the template is empty, a placeholder is not a plain name
            (no index, attribute, conversion or format spec), or a fixed label breaks
            the namespace rules.

    Example:
        ```python
        from langgraph_tiered_memory.agent.tools import NamespaceTemplate

        template = NamespaceTemplate(("memories", "{user_id}"))
        assert template.placeholders == ("user_id",)
        config = {"configurable": {"user_id": "u1"}}
        assert template.fill(config) == ("memories", "u1")
        ```
    """

    def __init__(self, template: Sequence[str]) -> None:
        if isinstance(template, str) or not template:
            raise ConfigurationError(
                f"A memory namespace must be a non-empty tuple of labels, got {template!r};"
                " pass e.g. ('memories', '{user_id}')."
            )
        self.template: tuple[str, ...] = tuple(template)
        fields = [field for label in self.template for field in self._parse(label)]
        self._placeholders = tuple(dict.fromkeys(fields))
        probe = self._format(dict.fromkeys(self._placeholders, "x"))
        try:
            check_tool_namespace(probe)
        except InvalidNamespaceError as e:
            raise ConfigurationError(
                f"Memory namespace template {self.template} is not a valid namespace: {e}"
            ) from e

    def _parse(self, label: Any) -> list[str]:
        """The placeholders of one label, checked."""
        if not isinstance(label, str):
            raise ConfigurationError(
                f"Memory namespace labels must be strings, got {type(label).__name__}"
                f" {label!r} in {self.template}."
            )
        try:
            parsed = list(string.Formatter().parse(label))
        except ValueError as e:
            raise ConfigurationError(
                f"Memory namespace label {label!r} has unbalanced braces ({e}); write"
                " placeholders as {user_id} and literal braces as {{ and }}."
            ) from e
        for _, field, spec, conversion in parsed:
            if field is not None and (not field.isidentifier() or spec or conversion):
                raise ConfigurationError(
                    f"Memory namespace label {label!r} has placeholder {{{field}}}: use a"
                    " plain config key such as {user_id} (no index, attribute, conversion"
                    " or format spec)."
                )
        return [field for _, field, _, _ in parsed if field is not None]

    def _format(self, values: Mapping[str, str]) -> tuple[str, ...]:
        return tuple(label.format(**values) for label in self.template)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The config keys the template reads, in order of first use."""
        return self._placeholders

    def fill(self, config: RunnableConfig | None) -> tuple[str, ...]:
        """The namespace for a run.

        Raises:
            ConfigurationError: a placeholder's key is missing from
                `config["configurable"]`, its value is not a non-empty string, or the
                filled namespace breaks the store's label rules.
        """
        configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
        namespace = self._format({k: self._value(configurable, k) for k in self._placeholders})
        try:
            check_tool_namespace(namespace)
        except InvalidNamespaceError as e:
            keys = ", ".join(f"config['configurable'][{k!r}]" for k in self.placeholders)
            raise ConfigurationError(
                f"The memory namespace {self.template} filled from {keys} is not a valid"
                f" namespace: {e} Use ids without periods, NUL or unpaired surrogates."
            ) from e
        return namespace

    def _value(self, configurable: Mapping[str, Any], key: str) -> str:
        if key not in configurable:
            raise ConfigurationError(
                f"The memory namespace {self.template} needs config['configurable'][{key!r}],"
                f" which this run does not have. Invoke the graph with"
                f" config={{'configurable': {{{key!r}: ...}}}}."
            )
        value = configurable[key]
        if not isinstance(value, str) or not value:
            raise ConfigurationError(
                f"config['configurable'][{key!r}] must be a non-empty string to fill the"
                f" memory namespace {self.template}, got {type(value).__name__} {value!r};"
                " convert it with str() first."
            )
        return value

    def __repr__(self) -> str:
        return f"NamespaceTemplate({self.template!r})"


# ------------------------------------------------------------------ store access


_Steps = Generator[Call, Any, Any]


def _pick_store(store: BaseStore | None, tool: str) -> BaseStore:
    if store is not None:
        return store
    try:
        found = get_store()
    except (RuntimeError, KeyError) as e:  # outside a graph run: no runtime in the config
        raise ConfigurationError(
            f"The {tool!r} tool has no store: pass store=... to its factory, or call it"
            " inside a graph compiled with graph.compile(store=...)."
        ) from e
    if found is None:
        raise ConfigurationError(
            f"The {tool!r} tool runs in a graph compiled without a store: compile it with"
            " graph.compile(store=...) or pass store=... to the tool's factory."
        )
    return found


# ------------------------------------------------------------------ manage


class ManageMemoryArgs(BaseModel):
    """Arguments of the manage tool (unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(
        default=None,
        description="The memory: one self-contained statement. Required to create;"
        " on update, the new text (omit to keep the old one).",
    )
    action: Literal["create", "update", "delete"] = Field(
        default="create", description="What to do with the memory."
    )
    id: str | None = Field(
        default=None,
        description="Key of the memory to update or delete, as search results show it."
        " Omit it when creating.",
    )
    memory_type: MemoryType | None = Field(
        default=None,
        description="The kind of memory: experience (default), preference, fact or skill.",
    )
    importance: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="How much the memory matters, 0 (trivial) to 1 (essential); default 0.5.",
    )


class _Request(NamedTuple):
    action: str
    key: str | None
    content: str | None
    memory_type: str | None
    importance: float | None


def _request(args: Mapping[str, Any], max_chars: int) -> _Request:
    """Check a manage call's arguments (no I/O); `MemoryToolError` names the fix."""
    action = args.get("action", "create")
    key = args.get("id") or None
    content = args.get("content")
    if content is not None:
        content = content.strip()
        if not content:
            raise MemoryToolError("content is empty: write the memory as a short statement.")
        if len(content) > max_chars:
            raise MemoryToolError(
                f"content is {len(content)} characters long; a memory holds at most"
                f" {max_chars}. Store a shorter statement (or several memories)."
            )
        if _SURROGATE.search(content):
            raise MemoryToolError("content holds unpaired surrogate characters: remove them.")
    if action == "create":
        if key is not None:
            raise MemoryToolError(
                "Do not pass an id when creating a memory: one is assigned. To change an"
                " existing memory use action='update' with its id."
            )
        if content is None:
            raise MemoryToolError("Creating a memory needs its content.")
    else:
        if key is None:
            raise MemoryToolError(
                f"action={action!r} needs the id of the memory; search the memories to find it."
            )
        if len(key) > MAX_ID_CHARS or _ID_UNSAFE.search(key):
            raise MemoryToolError(
                f"{key[:60]!r} is not a memory id; use a key from the search results."
            )
        if (
            action == "update"
            and content is None
            and not (args.get("memory_type") or args.get("importance") is not None)
        ):
            raise MemoryToolError(
                "Nothing to update: pass the new content, memory_type or importance."
            )
    return _Request(action, key, content, args.get("memory_type"), args.get("importance"))


def _new_value(
    request: _Request, old: dict[str, Any] | None, redactor: Redactor | None
) -> tuple[dict[str, Any], dict[str, int]]:
    """The value to store (redacted) and the counts of what was redacted."""
    value = dict(old or {})
    counts: dict[str, int] = {}
    if request.content is not None:
        content = request.content
        if redactor is not None:
            result = redact_text(content, redactor)
            content, counts = result.text, {k: v for k, v in result.counts.items() if v}
        value["content"] = content
        value.pop("redactions", None)  # describes the old text
        if counts:
            value["redactions"] = counts
    if request.memory_type is not None:
        value["memory_type"] = request.memory_type
    if request.importance is not None:
        value["importance"] = float(request.importance)
    return value, counts


def _manage_steps(
    store: BaseStore,
    namespace: tuple[str, ...],
    request: _Request,
    redactor: Redactor | None,
    source: tuple[str | None, str | None] = (None, None),
) -> _Steps:
    if request.action == "create":
        key = uuid.uuid4().hex
        old = None
    else:
        key = str(request.key)
        item = yield Call(store, "get", (namespace, key))
        if item is None:  # the same words whether or not another namespace has the key
            raise MemoryToolError(
                f"There is no memory with id {key!r} among this user's memories; search them"
                " to find the right id."
            )
        if request.action == "delete":
            yield Call(store, "delete", (namespace, key))
            _log.debug("deleted memory %s in %s", key, namespace)
            return f"Deleted memory {key}."
        old = item.value
    value, counts = _new_value(request, old, redactor)
    value = stamp(value, namespace, *source)  # (user, session) outside the user's namespaces
    yield Call(store, "put", (namespace, key, value))
    _log.debug("%sd memory %s in %s", request.action, key, namespace)
    done = f"{request.action.capitalize()}d memory {key}."
    if counts:
        what = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        done += f" Redacted before storing: {what}."
    return done


def create_manage_memory_tool(
    namespace: Sequence[str] = ("memories", "{user_id}"),
    *,
    name: str = "manage_memory",
    instructions: str = DEFAULT_MANAGE_INSTRUCTIONS,
    store: BaseStore | None = None,
    redactor: Redactor | bool | str | None = None,
    max_content_chars: int = MAX_CONTENT_CHARS,
) -> StructuredTool:
    """Create a tool with which a model creates, updates and deletes long-term memories.

    The tool takes `content`, `action` (`"create"`, `"update"` or `"delete"`), `id`
    (for update and delete) and optionally `memory_type` and `importance` (the store's
    memory fields), and answers with a short confirmation naming the memory's key.
    An update keeps the fields it is not given (type, importance, metadata). Outside
    the user's own namespaces (a template without `{user_id}`, say), the value records
    the run's `user_id` and `thread_id` under `"provenance"`, so erasing the user finds it.

    Args:
        namespace: Namespace template; `{name}` labels are filled from
            `config["configurable"]` when the tool runs.
        name: The tool's name.
        instructions: When the model should call the tool (part of its description).
        store: The store to use; default: the store of the running graph.
        redactor: Masks sensitive text in the content before it is stored: a
            `Redactor` such as `PatternRedactor()`, or True for the default detector.
            What was masked is counted under `"redactions"` in the stored value.
        max_content_chars: Longest content accepted.

    Returns:
        A `StructuredTool` with a sync and an async body.

    Raises:
        ConfigurationError: the namespace template is invalid (at creation); no store
            or config value is available (when the tool runs).

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore

        from langgraph_tiered_memory.agent.tools import create_manage_memory_tool

        store = InMemoryStore()
        tool = create_manage_memory_tool(store=store)
        config = {"configurable": {"user_id": "u1"}}
        reply = tool.invoke({"content": "Prefers tea", "memory_type": "preference"}, config)
        key = reply.split()[-1].rstrip(".")
        assert store.get(("memories", "u1"), key).value["content"] == "Prefers tea"
        ```
    """
    template = NamespaceTemplate(namespace)
    redact = resolve_redactor(redactor)
    if max_content_chars < 1:
        raise ConfigurationError(f"max_content_chars must be at least 1, got {max_content_chars}.")

    def prepare(config: RunnableConfig, args: Mapping[str, Any]) -> _Steps:
        request = _request(args, max_content_chars)
        target = template.fill(config)
        return _manage_steps(_pick_store(store, name), target, request, redact, from_config(config))

    def manage(*, config: RunnableConfig, **args: Any) -> str:
        with acting("tool", f"{name} tool"):  # the memory history's actor of its writes
            return str(drive(prepare(config, args)))

    async def amanage(*, config: RunnableConfig, **args: Any) -> str:
        with acting("tool", f"{name} tool"):
            return str(await adrive(prepare(config, args)))

    return StructuredTool(
        name=name,
        description=(
            "Create, update or delete long-term memories about the current user."
            f" {instructions}".rstrip()
        ),
        args_schema=ManageMemoryArgs,
        func=manage,
        coroutine=amanage,
        handle_tool_error=True,
    )


# ------------------------------------------------------------------ search


class SearchMemoryArgs(BaseModel):
    """Arguments of the search tool (unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to look for, in natural language.")
    limit: int | None = Field(
        default=None, ge=1, description="How many memories to return (the tool caps it)."
    )


def _hit(item: SearchItem) -> dict[str, Any]:
    value = item.value
    return {
        "key": item.key,
        "content": value.get("content"),
        "memory_type": value.get("memory_type", DEFAULT_MEMORY_TYPE),
        "score": None if item.score is None else float(item.score),
    }


def _search_steps(
    store: BaseStore, namespace: tuple[str, ...], query: str | None, limit: int
) -> _Steps:
    # A search covers the namespace and every namespace under it: keep only the
    # namespace itself (what the manage tool can address), paging on when filtered.
    found: list[SearchItem] = []
    for page_number in range(_MAX_PAGES):
        page = yield Call(
            store,
            "search",
            (namespace,),
            {"query": query, "limit": limit, "offset": page_number * limit},
        )
        found.extend(item for item in page if tuple(item.namespace) == namespace)
        if len(found) >= limit or len(page) < limit:
            break
    return [_hit(item) for item in found[:limit]]


class _SearchTool(StructuredTool):
    """Answers an empty search with the content "[]", never with empty content.

    LangChain takes an empty list as a list of no content blocks, so a `ToolMessage`
    of an empty result would be empty, which some providers refuse.
    """

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return _empty_as_json(super().run(*args, **kwargs))

    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        return _empty_as_json(await super().arun(*args, **kwargs))


def _empty_as_json(out: Any) -> Any:
    if isinstance(out, ToolMessage) and out.content == []:
        return out.model_copy(update={"content": "[]"})
    return out


def create_search_memory_tool(
    namespace: Sequence[str] = ("memories", "{user_id}"),
    *,
    name: str = "search_memory",
    store: BaseStore | None = None,
    limit: int = 5,
    max_limit: int | None = None,
    instructions: str = DEFAULT_SEARCH_INSTRUCTIONS,
) -> StructuredTool:
    """Create a tool with which a model searches the current user's long-term memories.

    The tool takes a `query` and an optional `limit` and returns a list of
    `{"key", "content", "memory_type", "score"}` dicts, best first (`score` is None on
    a store without a search index). Only memories of the namespace itself are
    returned, not of namespaces nested under it.

    Args:
        namespace: Namespace template; `{name}` labels are filled from
            `config["configurable"]` when the tool runs.
        name: The tool's name.
        store: The store to use; default: the store of the running graph.
        limit: How many memories a call returns when the model gives no limit.
        max_limit: The most a call may ask for (larger requests are capped); default
            `max(limit, 20)`.
        instructions: When the model should call the tool (part of its description).

    Returns:
        A `StructuredTool` with a sync and an async body.

    Raises:
        ConfigurationError: the namespace template or the limits are invalid (at
            creation); no store or config value is available (when the tool runs).

    Example:
        ```python
        from langgraph.store.memory import InMemoryStore

        from langgraph_tiered_memory.agent.tools import create_search_memory_tool

        store = InMemoryStore()
        store.put(("memories", "u1"), "m1", {"content": "Prefers tea"})
        store.put(("memories", "u2"), "m2", {"content": "Prefers coffee"})
        tool = create_search_memory_tool(store=store)
        hits = tool.invoke({"query": "drinks"}, {"configurable": {"user_id": "u1"}})
        assert [hit["content"] for hit in hits] == ["Prefers tea"]
        ```
    """
    template = NamespaceTemplate(namespace)
    cap = max(limit, 20) if max_limit is None else max_limit
    if limit < 1 or cap < limit:
        raise ConfigurationError(
            f"Need 1 <= limit <= max_limit, got limit={limit}, max_limit={max_limit}."
        )

    def prepare(config: RunnableConfig, args: Mapping[str, Any]) -> _Steps:
        query = args["query"].strip()
        if len(query) > MAX_QUERY_CHARS:
            raise MemoryToolError(
                f"The query is {len(query)} characters long; keep it under {MAX_QUERY_CHARS}."
            )
        if _SURROGATE.search(query):
            raise MemoryToolError("The query holds unpaired surrogate characters: remove them.")
        count = min(args.get("limit") or limit, cap)
        target = template.fill(config)
        return _search_steps(_pick_store(store, name), target, query or None, count)

    def search(*, config: RunnableConfig, **args: Any) -> list[dict[str, Any]]:
        return list(drive(prepare(config, args)))

    async def asearch(*, config: RunnableConfig, **args: Any) -> list[dict[str, Any]]:
        return list(await adrive(prepare(config, args)))

    return _SearchTool(
        name=name,
        description=(f"Search the current user's long-term memories. {instructions}".rstrip()),
        args_schema=SearchMemoryArgs,
        func=search,
        coroutine=asearch,
        handle_tool_error=True,
    )
