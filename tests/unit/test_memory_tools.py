"""The memory tools: manage and search inside the run's own namespace, never another's."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore
from pydantic import ValidationError

from langgraph_tiered_memory.agent.tools import (
    MemoryToolError,
    NamespaceTemplate,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langgraph_tiered_memory.errors import ConfigurationError
from tests.fakes import HashingEmbeddings
from tests.memory_tools_support import EmailRedactor, config, snapshot

A = ("memories", "A")
B = ("memories", "B")


def call(tool: BaseTool, args: dict[str, Any], user: Any = "A") -> ToolMessage:
    """Invoke a tool the way `ToolNode` does: with a tool call, so errors come back."""
    out = tool.invoke(
        {"type": "tool_call", "id": "c1", "name": tool.name, "args": args}, config(user)
    )
    assert isinstance(out, ToolMessage)
    return out


def created_key(message: ToolMessage) -> str:
    assert message.status == "success", message.content
    text = str(message.content)
    assert text.startswith(("Created memory ", "Updated memory "))
    return text.split()[2].rstrip(".")


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def manage(store: InMemoryStore) -> BaseTool:
    return create_manage_memory_tool(store=store)


@pytest.fixture
def search(store: InMemoryStore) -> BaseTool:
    return create_search_memory_tool(store=store)


# ------------------------------------------------------------------ manage


def test_create_stores_the_memory_fields_under_the_run_users_namespace(
    store: InMemoryStore, manage: BaseTool
) -> None:
    reply = call(
        manage, {"content": "  Prefers green tea ", "memory_type": "preference", "importance": 0.8}
    )
    key = created_key(reply)
    assert store.get(A, key).value == {  # type: ignore[union-attr]
        "content": "Prefers green tea",
        "memory_type": "preference",
        "importance": 0.8,
    }
    assert store.list_namespaces() == [A]
    # Without type or importance, the store's defaults apply (nothing is written for them).
    plain = created_key(call(manage, {"content": "Lives in Berlin"}))
    assert store.get(A, plain).value == {"content": "Lives in Berlin"}  # type: ignore[union-attr]
    assert plain != key


def test_update_replaces_what_it_is_given_and_keeps_the_rest(
    store: InMemoryStore, manage: BaseTool
) -> None:
    store.put(A, "m1", {"content": "Lives in Berlin", "memory_type": "fact", "source": "chat 3"})
    reply = call(manage, {"action": "update", "id": "m1", "content": "Lives in Lisbon"})
    assert reply.content == "Updated memory m1."
    assert store.get(A, "m1").value == {  # type: ignore[union-attr]
        "content": "Lives in Lisbon",
        "memory_type": "fact",
        "source": "chat 3",
    }
    call(manage, {"action": "update", "id": "m1", "importance": 1.0})
    assert store.get(A, "m1").value["importance"] == 1.0  # type: ignore[union-attr]
    assert store.get(A, "m1").value["content"] == "Lives in Lisbon"  # type: ignore[union-attr]


def test_delete_removes_the_memory(store: InMemoryStore, manage: BaseTool) -> None:
    store.put(A, "m1", {"content": "Lives in Berlin"})
    assert call(manage, {"action": "delete", "id": "m1"}).content == "Deleted memory m1."
    assert store.get(A, "m1") is None


def test_another_users_key_reads_as_unknown_and_nothing_changes(store: InMemoryStore) -> None:
    empty = InMemoryStore()
    store.put(B, "secret", {"content": "B's diary"})
    before = snapshot(store, ("memories",))
    for action in ("update", "delete"):
        args = {"action": action, "id": "secret", "content": "overwritten"}
        got = call(create_manage_memory_tool(store=store), args)
        # The same answer as on a store where no namespace holds the key.
        same = call(create_manage_memory_tool(store=empty), args)
        assert got.status == same.status == "error"
        assert got.content == same.content
        assert "no memory with id 'secret'" in str(got.content)
    assert snapshot(store, ("memories",)) == before
    assert snapshot(empty, ("memories",)) == []


@pytest.mark.parametrize(
    "key",
    [
        "../B/secret",
        "memories/B/secret",
        "memories.B.secret",
        "('memories', 'B')/secret",
        "B:secret",
        "*",
        "secret\x00",
    ],
)
def test_path_tricks_in_ids_stay_inside_the_callers_namespace(
    store: InMemoryStore, manage: BaseTool, key: str
) -> None:
    store.put(B, "secret", {"content": "B's diary"})
    before = snapshot(store, ("memories",))
    for action in ("update", "delete"):
        reply = call(manage, {"action": action, "id": key, "content": "x"})
        assert reply.status == "error"
    assert snapshot(store, ("memories",)) == before


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"content": "x", "id": "m1"}, "Do not pass an id when creating"),
        ({"action": "update", "content": "x"}, "needs the id"),
        ({"action": "delete"}, "needs the id"),
        ({"action": "update", "id": "m1"}, "Nothing to update"),
        ({"content": "   "}, "content is empty"),
        ({}, "needs its content"),
        ({"content": "x" * 4001}, "at most 4000"),
        ({"content": "bad \ud800 text"}, "surrogate"),
        ({"action": "delete", "id": "k" * 300}, "is not a memory id"),
    ],
)
def test_bad_calls_come_back_to_the_model_and_write_nothing(
    store: InMemoryStore, manage: BaseTool, args: dict[str, Any], fragment: str
) -> None:
    store.put(A, "m1", {"content": "Lives in Berlin"})
    reply = call(manage, args)
    assert reply.status == "error"
    assert fragment in str(reply.content)
    assert [row[:3] for row in snapshot(store, ("memories",))] == [
        (A, "m1", repr({"content": "Lives in Berlin"}))
    ]
    # Called directly, the same mistake raises the tool error.
    with pytest.raises(MemoryToolError, match=re.escape(fragment)):
        manage.func(config=config("A"), **args)  # type: ignore[misc]


@pytest.mark.parametrize(
    "extra",
    [
        {"namespace": ["memories", "B"]},
        {"user_id": "B"},
        {"config": {"configurable": {"user_id": "B"}}},
        {"store": None},
    ],
)
def test_injected_namespace_fields_are_refused(
    store: InMemoryStore, manage: BaseTool, search: BaseTool, extra: dict[str, Any]
) -> None:
    store.put(B, "secret", {"content": "B's diary"})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        call(manage, {"content": "planted", **extra})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        call(search, {"query": "diary", **extra})
    assert store.list_namespaces() == [B]


@pytest.mark.parametrize("importance", [-0.1, 1.5, float("nan"), "high"])
def test_invalid_memory_fields_are_refused_by_the_schema(
    store: InMemoryStore, manage: BaseTool, importance: Any
) -> None:
    with pytest.raises(ValidationError):
        call(manage, {"content": "x", "importance": importance})
    with pytest.raises(ValidationError):
        call(manage, {"content": "x", "memory_type": "secret"})
    assert store.list_namespaces() == []


def test_schema_offers_only_the_memory_arguments(manage: BaseTool, search: BaseTool) -> None:
    params = convert_to_openai_tool(manage)["function"]["parameters"]
    assert set(params["properties"]) == {"content", "action", "id", "memory_type", "importance"}
    assert params["properties"]["action"]["enum"] == ["create", "update", "delete"]
    assert set(convert_to_openai_tool(search)["function"]["parameters"]["properties"]) == {
        "query",
        "limit",
    }
    assert manage.name == "manage_memory" and search.name == "search_memory"
    custom = create_manage_memory_tool(name="remember", instructions="Only when told to.")
    assert custom.name == "remember" and custom.description.endswith("Only when told to.")


# ------------------------------------------------------------------ redaction


def test_redactor_masks_content_and_records_counts(store: InMemoryStore) -> None:
    redactor = EmailRedactor()
    manage = create_manage_memory_tool(store=store, redactor=redactor)
    reply = call(manage, {"content": "Mail me at ann@example.com or a.b@x.org"})
    key = created_key(reply)
    assert "Redacted before storing: 2 email" in str(reply.content)
    assert store.get(A, key).value == {  # type: ignore[union-attr]
        "content": "Mail me at [email] or [email]",
        "redactions": {"email": 2},
    }
    # An update re-redacts the new text; counts describing the old text go away.
    call(manage, {"action": "update", "id": key, "content": "Prefers phone calls"})
    assert store.get(A, key).value == {"content": "Prefers phone calls"}  # type: ignore[union-attr]
    assert redactor.seen == ["Mail me at ann@example.com or a.b@x.org", "Prefers phone calls"]


def test_redactor_true_uses_the_package_default(store: InMemoryStore) -> None:
    manage = create_manage_memory_tool(store=store, redactor=True)
    key = created_key(call(manage, {"content": "Write to ann@example.com"}))
    value = store.get(A, key).value  # type: ignore[union-attr]
    assert "ann@example.com" not in value["content"]
    assert value["redactions"] == {"email": 1}


# ------------------------------------------------------------------ namespaces


def test_namespace_template_fills_every_placeholder_from_the_config() -> None:
    template = NamespaceTemplate(("org", "{org_id}", "user-{user_id}", "{{raw}}"))
    assert template.placeholders == ("org_id", "user_id")
    filled = template.fill({"configurable": {"org_id": "acme", "user_id": "u1", "x": 1}})
    assert filled == ("org", "acme", "user-u1", "{raw}")


def test_a_custom_template_decides_where_both_tools_work(store: InMemoryStore) -> None:
    template = ("orgs", "{org_id}", "users", "{user_id}")
    manage = create_manage_memory_tool(template, store=store)
    search = create_search_memory_tool(template, store=store)
    run = {"configurable": {"org_id": "acme", "user_id": "u1"}}
    key = manage.invoke({"content": "Team lead"}, run).split()[2].rstrip(".")
    assert store.get(("orgs", "acme", "users", "u1"), key) is not None
    assert [h["key"] for h in search.invoke({"query": "lead"}, run)] == [key]
    other_org = {"configurable": {"org_id": "globex", "user_id": "u1"}}
    assert search.invoke({"query": "lead"}, other_org) == []
    with pytest.raises(ConfigurationError, match=r"\['org_id'\]"):
        manage.invoke({"content": "x"}, {"configurable": {"user_id": "u1"}})


@pytest.mark.parametrize(
    ("configurable", "fragment"),
    [
        ({}, "needs config['configurable']['user_id']"),
        ({"user_id": None}, "must be a non-empty string"),
        ({"user_id": 7}, "must be a non-empty string"),
        ({"user_id": ""}, "must be a non-empty string"),
        ({"user_id": "a.b"}, "periods"),
        ({"user_id": "a\x00b"}, "NUL"),
        ({"user_id": "\udc80"}, "UTF-8"),
    ],
)
def test_a_missing_or_invalid_config_value_is_a_clear_error(
    store: InMemoryStore, manage: BaseTool, configurable: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigurationError, match=fragment.replace("[", r"\[")):
        manage.invoke({"content": "x"}, {"configurable": configurable})
    with pytest.raises(ConfigurationError, match=fragment.replace("[", r"\[")):
        create_search_memory_tool(store=store).invoke(
            {"query": "x"}, {"configurable": configurable}
        )
    assert store.list_namespaces() == []


@pytest.mark.parametrize(
    "template",
    [
        (),
        "memories",
        ("a.b", "{user_id}"),
        ("{user_id.name}",),
        ("{0}",),
        ("{}",),
        ("{user_id!r}",),
        ("{user_id:>5}",),
        ("a{b",),
        ("langgraph", "{user_id}"),
        ("ok", 3),
    ],
)
def test_an_invalid_template_fails_at_creation(template: Any) -> None:
    with pytest.raises(ConfigurationError):
        create_manage_memory_tool(template)
    with pytest.raises(ConfigurationError):
        create_search_memory_tool(template)


def test_without_a_store_the_tools_say_how_to_provide_one() -> None:
    manage = create_manage_memory_tool()
    with pytest.raises(ConfigurationError, match=r"pass store=\.\.\."):
        manage.invoke({"content": "x"}, config("A"))

    def node(state: MessagesState) -> dict[str, Any]:
        manage.invoke({"content": "x"})
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    with pytest.raises(ConfigurationError, match="compiled without a store"):
        graph.compile().invoke({"messages": []}, config("A"))


# ------------------------------------------------------------------ search


def test_search_returns_only_the_callers_own_namespace(store: InMemoryStore) -> None:
    store.put(A, "a1", {"content": "Prefers tea", "memory_type": "preference"})
    store.put(B, "b1", {"content": "Prefers coffee"})
    store.put((*A, "drafts"), "d1", {"content": "nested"})
    store.put(("memories", "AB"), "x", {"content": "lookalike"})
    hits = create_search_memory_tool(store=store).invoke({"query": "prefers"}, config("A"))
    assert hits == [
        {"key": "a1", "content": "Prefers tea", "memory_type": "preference", "score": None}
    ]
    assert json.loads(json.dumps(hits)) == hits


def test_search_ranks_by_score_and_caps_the_limit() -> None:
    store = InMemoryStore(index={"dims": 64, "embed": HashingEmbeddings(64), "fields": ["content"]})
    for i in range(30):
        store.put(A, f"m{i:02}", {"content": f"note number {i}"})
    store.put(A, "tea", {"content": "Prefers green tea", "memory_type": "preference"})
    tool = create_search_memory_tool(store=store, limit=3, max_limit=10)
    hits = tool.invoke({"query": "green tea"}, config("A"))
    assert len(hits) == 3 and hits[0]["key"] == "tea"
    scores = [h["score"] for h in hits]
    assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)
    assert len(tool.invoke({"query": "note", "limit": 1000}, config("A"))) == 10
    assert len(tool.invoke({"query": "note", "limit": 2}, config("A"))) == 2
    with pytest.raises(ValidationError):
        tool.invoke({"query": "note", "limit": 0}, config("A"))


def test_search_pages_past_nested_namespaces_to_fill_the_limit(store: InMemoryStore) -> None:
    for i in range(12):
        store.put((*A, "drafts"), f"d{i:02}", {"content": f"draft {i}"})
    for i in range(3):
        store.put(A, f"m{i}", {"content": f"memory {i}"})
    hits = create_search_memory_tool(store=store, limit=3).invoke({"query": ""}, config("A"))
    assert sorted(h["key"] for h in hits) == ["m0", "m1", "m2"]


async def test_an_empty_result_reaches_the_model_as_an_empty_json_list(search: BaseTool) -> None:
    # LangChain would turn a bare [] into a message without content.
    assert search.invoke({"query": "anything"}, config("A")) == []
    assert call(search, {"query": "anything"}).content == "[]"
    message = await search.ainvoke(
        {"type": "tool_call", "id": "c", "name": search.name, "args": {"query": "x"}},
        config("A"),
    )
    assert isinstance(message, ToolMessage) and message.content == "[]"


def test_search_refuses_unusable_queries(store: InMemoryStore, search: BaseTool) -> None:
    assert call(search, {"query": "q" * 2001}).status == "error"
    assert call(search, {"query": "\ud800"}).status == "error"


@pytest.mark.parametrize(("limit", "max_limit"), [(0, None), (5, 4), (-1, 3)])
def test_search_limits_are_checked_at_creation(limit: int, max_limit: int | None) -> None:
    with pytest.raises(ConfigurationError, match="limit"):
        create_search_memory_tool(limit=limit, max_limit=max_limit)


# ------------------------------------------------------------------ async


async def test_async_bodies_manage_and_search(store: InMemoryStore) -> None:
    manage = create_manage_memory_tool(store=store)
    search = create_search_memory_tool(store=store)
    reply = await manage.ainvoke({"content": "Prefers tea"}, config("A"))
    key = reply.split()[2].rstrip(".")
    await manage.ainvoke({"action": "update", "id": key, "content": "Prefers oolong"}, config("A"))
    hits = await search.ainvoke({"query": "oolong"}, config("A"))
    assert [h["content"] for h in hits] == ["Prefers oolong"]
    assert await search.ainvoke({"query": "oolong"}, config("B")) == []
    miss = await manage.ainvoke(
        {
            "type": "tool_call",
            "id": "c",
            "name": manage.name,
            "args": {"action": "delete", "id": key},
        },
        config("B"),
    )
    assert miss.status == "error" and store.get(A, key) is not None
    await manage.ainvoke({"action": "delete", "id": key}, config("A"))
    assert store.get(A, key) is None


async def test_async_bodies_never_call_the_sync_store_api() -> None:
    class AsyncOnly(InMemoryStore):
        def batch(self, ops: Any) -> Any:
            raise AssertionError("the async tool body used the sync store API")

    store = AsyncOnly()
    manage = create_manage_memory_tool(store=store)
    search = create_search_memory_tool(store=store)
    results = await asyncio.gather(
        *(manage.ainvoke({"content": f"fact {i}"}, config("A")) for i in range(5))
    )
    assert len({r.split()[2] for r in results}) == 5
    assert len(await search.ainvoke({"query": "fact"}, config("A"))) == 5
