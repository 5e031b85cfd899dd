"""Shared helpers of the memory-tool, extraction and profile tests.

A tool-calling graph, a redactor, call specs, and the options of a tiered store on the
test Redis with Chroma under a temporary directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.base import BaseStore, Item
from pydantic import ValidationError

from langgraph_tiered_memory import AsyncTieredMemoryStore
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy.redaction import Finding, RedactionResult
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings


def tool_loop_graph(model: BaseChatModel, tools: Sequence[BaseTool]) -> StateGraph:
    """The usual agent loop: the model, then `ToolNode` while the model calls tools."""
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent, afunc=aagent))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph


def calls(*tool_calls: tuple[str, dict[str, Any]]) -> AIMessage:
    """An `AIMessage` calling the given tools with the given arguments."""
    return AIMessage(
        content="",
        tool_calls=[
            ToolCall(name=name, args=args, id=f"call{i}", type="tool_call")
            for i, (name, args) in enumerate(tool_calls)
        ],
    )


def config(user_id: Any) -> dict[str, Any]:
    return {"configurable": {"user_id": user_id}}


def store_options(redis_url: str, key_prefix: str, path: Path, **options: Any) -> dict[str, Any]:
    """Constructor options of a tiered store: Redis, its own prefix, Chroma under `path`."""
    return {
        "redis_url": redis_url,
        "chroma_path": str(path / "chroma"),
        "key_prefix": key_prefix,
        **options,
    }


def indexed_store_options(
    redis_url: str, key_prefix: str, path: Path, clock: Clock, **options: Any
) -> dict[str, Any]:
    """`store_options` with the test clock and an index of hashed embeddings of `content`."""
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    return store_options(redis_url, key_prefix, path, clock=clock, index=index, **options)


@contextlib.asynccontextmanager
async def async_store(
    redis_url: str, key_prefix: str, tmp_path: Path, tier: str, **options: Any
) -> AsyncIterator[AsyncTieredMemoryStore]:
    """An `AsyncTieredMemoryStore` whose default tier is `tier`, set up; closed at exit."""
    tiers = {"default": tier}
    store = AsyncTieredMemoryStore(
        **store_options(redis_url, key_prefix, tmp_path, tiers=tiers, **options)
    )
    await store.asetup()
    try:
        yield store
    finally:
        await asyncio.to_thread(store.close)


def session(user: str, thread: str) -> dict[str, Any]:
    """The run config of one session (thread) of `user`."""
    return {"configurable": {"user_id": user, "thread_id": thread}}


def tool_results(messages: list[Any]) -> list[ToolMessage]:
    """The tool answers among `messages`."""
    return [m for m in messages if isinstance(m, ToolMessage)]


def remember_then_recall(
    graph: Any,
    model: Any,
    store: BaseStore,
    memory: dict[str, str],
    said: tuple[str, str],
    query: str,
) -> Item:
    """User u1 saves `memory` in one session and finds it by `query` in the next.

    `model` is a `RecordedChatModel` the compiled `graph` calls; `said` are the user's
    two messages (threads `recall-1` and `recall-2`). Checks what was stored and that
    the search answered exactly it, with a float score; returns the stored item.
    """
    model.replies += [calls(("manage_memory", memory)), "Noted."]
    graph.invoke({"messages": [("user", said[0])]}, session("u1", "recall-1"))
    [item] = store.search(("memories", "u1"))
    assert item.value == memory
    model.replies += [calls(("search_memory", {"query": query})), "Found it."]
    graph.invoke({"messages": [("user", said[1])]}, session("u1", "recall-2"))
    [found] = tool_results(model.prompts[-1])
    hits = json.loads(str(found.content))
    assert [(h["key"], h["content"]) for h in hits] == [(item.key, memory["content"])]
    assert isinstance(hits[0]["score"], float)
    return item


class EmailRedactor:
    """Masks e-mail addresses as `[email]` and records every text it saw."""

    pattern = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, text: str) -> RedactionResult:
        self.seen.append(text)
        found = tuple(Finding("email", m.start(), m.end()) for m in self.pattern.finditer(text))
        return RedactionResult(self.pattern.sub("[email]", text), found)


def snapshot(store: BaseStore, namespace: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Everything stored in `namespace` and under it: keys, values, timestamps, sorted."""
    items = store.search(namespace, limit=10_000)
    return sorted(
        (tuple(i.namespace), i.key, repr(i.value), i.created_at, i.updated_at) for i in items
    )


_HEX_KEY = re.compile(r"\b[0-9a-f]{32}\b")


def normalise_keys(texts: Sequence[str]) -> list[str]:
    """Replace 32-hex-digit keys by their order of first appearance (`<key0>`, ...)."""
    seen: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<key{len(seen)}>")

    return [_HEX_KEY.sub(name, text) for text in texts]


# ------------------------------------------------------------------ invented tool calls

B_NAMESPACE = ("memories", "B")
B_KEYS = ("k1", "0123456789abcdef0123456789abcdef")


def seed_b(store: BaseStore) -> None:
    """User B's memories, which no call made for anyone else may touch."""
    for key in B_KEYS:
        store.put(B_NAMESPACE, key, {"content": f"B secret {key}", "memory_type": "fact"})


_junk = st.sampled_from(
    [["memories", "B"], "B", {"configurable": {"user_id": "B"}}, ("memories", "B"), None]
)
_extras = st.dictionaries(
    st.sampled_from(["namespace", "user_id", "config", "key", "store", "prefix"]), _junk, max_size=2
)
_ids = st.one_of(
    st.none(),
    st.sampled_from(B_KEYS),
    st.sampled_from(["../B/k1", "memories/B/k1", "B/k1", "('memories', 'B', 'k1')", "*", ""]),
    st.sampled_from(["k1\x00", "\ud800k1", "k" * 300]),
    st.integers(0, 4).map(lambda i: f"@own{i}"),  # the caller's i-th created memory
    st.text(max_size=20),
)
_contents = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from(["x" * 5000, "B secret k1", "mail ann@example.com", "bad \udc80", "  "]),
)
_users = st.one_of(
    st.just("A"),
    st.sampled_from(["B.x", "B/", "b", " B", "B\x00", "", "memories", "\udc80", "langgraph"]),
    st.text(max_size=6),
).filter(lambda user: user != "B")

manage_calls = st.fixed_dictionaries(
    {
        "content": _contents,
        "action": st.sampled_from(["create", "create", "update", "delete", "forget", None]),
        "id": _ids,
        "memory_type": st.sampled_from([None, "fact", "preference", "secret"]),
        "importance": st.one_of(st.none(), st.floats(allow_nan=True), st.just("high")),
    }
)
search_calls = st.fixed_dictionaries(
    {
        "query": st.one_of(st.text(max_size=20), st.sampled_from(B_KEYS)),
        "limit": st.one_of(st.none(), st.integers(-2, 1000)),
    }
)
_texts = st.sampled_from(["Likes tea", "B secret k1", "mail a@b.co", "Lives in Lisbon"])
_own = st.integers(0, 1).map(lambda i: f"@own{i}")
_targets = st.one_of(st.sampled_from(B_KEYS), _own, _own)
_fields = {
    "memory_type": st.sampled_from([None, "fact", "preference"]),
    "importance": st.one_of(st.none(), st.floats(0, 1)),
}
_plausible_manage_calls = st.one_of(
    st.fixed_dictionaries({"content": _texts, "action": st.just("create"), **_fields}),
    st.fixed_dictionaries(
        {"content": _texts, "action": st.just("update"), "id": _targets, **_fields}
    ),
    st.fixed_dictionaries({"action": st.just("delete"), "id": _targets}),
)
"""Calls a model would plausibly make: they mostly succeed on the caller's own memories."""
tool_calls = st.lists(
    st.one_of(
        st.tuples(st.just("manage"), manage_calls, _extras, _users),
        st.tuples(st.just("manage"), _plausible_manage_calls, st.just({}), st.just("A")),
        st.tuples(st.just("manage"), _plausible_manage_calls, st.just({}), st.just("A")),
        st.tuples(st.just("manage"), _plausible_manage_calls, st.just({}), _users),
        st.tuples(st.just("search"), search_calls, _extras, _users),
        st.tuples(st.just("search"), search_calls, st.just({}), st.just("A")),
    ),
    max_size=10,
)
"""Sequences of (tool, arguments, injected extra fields, user id) a model might invent."""


def run_calls(
    manage: BaseTool,
    search: BaseTool,
    sequence: Sequence[tuple[str, dict[str, Any], dict[str, Any], str]],
) -> list[str]:
    """Make the calls as `ToolNode` would; return what each one answered or raised."""
    created: list[str] = []
    out: list[str] = []
    for which, args, extras, user in sequence:
        tool = manage if which == "manage" else search
        sent = {k: v for k, v in args.items() if v is not None}
        if isinstance(sent.get("id"), str) and sent["id"].startswith("@own"):
            index = int(sent["id"][4:])
            sent["id"] = created[index] if index < len(created) else "none-yet"
        sent.update(extras)
        try:
            message = tool.invoke(
                {"type": "tool_call", "id": "c", "name": tool.name, "args": sent}, config(user)
            )
        except (ValidationError, ConfigurationError) as e:
            out.append(f"raised {type(e).__name__}: {e}")
            continue
        text = str(message.content)
        if text.startswith("Created memory "):
            created.append(text.split()[2].rstrip("."))
        out.append(f"{message.status}: {text}")
    return out
