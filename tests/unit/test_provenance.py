"""Provenance: memories the library writes outside a user's own namespaces name the user.

Erasing a user removes the user's namespaces whole; a memory anywhere else is found by
its `provenance` (`names_user`). These tests write through extraction, the memory
tools and the memory agent into such namespaces and read the field back.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory.agent.builder import create_memory_agent
from langgraph_tiered_memory.agent.extraction import aextract_memories, extract_memories
from langgraph_tiered_memory.agent.tools import create_manage_memory_tool
from langgraph_tiered_memory.agent.writer import MemoryWriter
from langgraph_tiered_memory.privacy.provenance import (
    PROVENANCE_FIELD,
    from_config,
    merged_provenance,
    names_user,
    needs_provenance,
    provenance_of,
    stamp,
)
from tests.fake_models import RecordingChatModel

SHARED = ("memories", "team")


def _cfg(user: str, thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


# ------------------------------------------------------------------ the field
def test_provenance_reads_the_field_and_the_legacy_fields() -> None:
    value = {
        "content": "x",
        "provenance": {"user_ids": ["u1", 7, ""], "session_ids": ["t1"]},
        "source_user": "u2",
        "thread_id": "t2",
        "user_id": ["not", "a", "string"],
    }
    found = provenance_of(value)
    assert found.user_ids == {"u1", "u2", "not", "a", "string"}
    assert found.session_ids == {"t1", "t2"}
    assert provenance_of(None) == provenance_of({"provenance": "junk"}) == provenance_of({})
    assert names_user(value, "u2") and names_user(value, "u9", session_ids={"t2"})
    assert not names_user(value, "u9", session_ids={"t9"})
    assert not names_user({"content": "u1 said so"}, "u1")  # text is not provenance


@pytest.mark.parametrize(
    ("namespace", "user", "session", "expected"),
    [
        (("users", "u1", "notes"), "u1", "t1", False),  # the user's scope
        (("memories", "u1"), "u1", "t1", False),  # the library's layout
        (("profiles", "u1", "x"), "u1", None, False),
        (("memories", "u10"), "u1", "t1", True),  # not a prefix of labels
        (("users", "u2"), "u1", None, True),
        (SHARED, "u1", None, True),
        (SHARED, None, "t1", True),  # the session alone
        (SHARED, None, None, False),  # nothing known
        (("team", " u1 "), " u1 ", None, True),  # an id the erasure rule refuses
    ],
)
def test_which_namespaces_record_provenance(
    namespace: tuple[str, ...], user: str | None, session: str | None, expected: bool
) -> None:
    assert needs_provenance(namespace, user, session) is expected


def test_stamp_adds_to_what_is_recorded_and_copies() -> None:
    value = {"content": "x", PROVENANCE_FIELD: {"user_ids": ["u2"], "session_ids": ["t2"]}}
    out = stamp(value, SHARED, "u1", "t1")
    assert out[PROVENANCE_FIELD] == {"user_ids": ["u1", "u2"], "session_ids": ["t1", "t2"]}
    assert value[PROVENANCE_FIELD] == {"user_ids": ["u2"], "session_ids": ["t2"]}
    assert stamp(out, SHARED, "u1", "t1") == out  # idempotent
    assert stamp({"content": "x"}, SHARED, "u1", None) == {
        "content": "x",
        PROVENANCE_FIELD: {"user_ids": ["u1"]},
    }
    assert stamp({"content": "x"}, ("users", "u1"), "u1", "t1") == {"content": "x"}
    assert merged_provenance([{"user_id": "u1"}, out, None]) == {
        "user_ids": ["u1", "u2"],
        "session_ids": ["t1", "t2"],
    }
    assert merged_provenance([{"content": "x"}]) == {}


def test_from_config() -> None:
    assert from_config(_cfg("u1", "t1")) == ("u1", "t1")
    assert from_config({"configurable": {"user_id": "", "thread_id": 3}}) == (None, None)
    assert from_config(None) == (None, None)
    assert from_config({"configurable": "junk"}) == (None, None)


# ------------------------------------------------------------------ extraction
def test_extraction_into_a_shared_namespace_names_user_and_session() -> None:
    store = InMemoryStore()
    first = extract_memories(
        store, SHARED, [("user", "I live in Berlin.")], user_id="u1", session_id="t1"
    )
    [key] = first.added
    item = store.get(SHARED, key)
    assert item is not None
    assert item.value[PROVENANCE_FIELD] == {"user_ids": ["u1"], "session_ids": ["t1"]}
    assert names_user(item.value, "u1")
    # Another user's statement replaces the fact: the new memory names that user only.
    moved = extract_memories(store, SHARED, [("user", "I moved to Lisbon!")], user_id="u2")
    [new] = moved.added
    value = store.get(SHARED, new).value  # type: ignore[union-attr]
    assert value[PROVENANCE_FIELD] == {"user_ids": ["u2"]}


def test_an_extraction_update_adds_its_user_to_the_provenance() -> None:
    store = InMemoryStore()
    said = "Remember that the office wifi password rotates {}."
    first = extract_memories(
        store, SHARED, [("user", said.format("monthly"))], user_id="u1", session_id="t1"
    )
    again = extract_memories(
        store,
        SHARED,
        [("user", said.format("every month"))],
        user_id="u2",
        session_id="t2",
        similarity_threshold=0.6,
    )
    assert again.updated == first.added
    value = store.get(SHARED, first.added[0]).value  # type: ignore[union-attr]
    assert value["content"].endswith("every month")
    assert value[PROVENANCE_FIELD] == {"user_ids": ["u1", "u2"], "session_ids": ["t1", "t2"]}


def test_extraction_into_the_users_own_namespace_adds_nothing() -> None:
    store = InMemoryStore()
    result = extract_memories(
        store, ("memories", "{user_id}"), "I live in Berlin.", user_id="u1", session_id="t1"
    )
    value = store.get(("memories", "u1"), result.added[0]).value  # type: ignore[union-attr]
    assert PROVENANCE_FIELD not in value


async def test_async_extraction_names_the_session() -> None:
    store = InMemoryStore()
    result = await aextract_memories(store, SHARED, "I work at Acme.", session_id="t7")
    value = store.get(SHARED, result.added[0]).value  # type: ignore[union-attr]
    assert value[PROVENANCE_FIELD] == {"session_ids": ["t7"]}


# ------------------------------------------------------------------ tools
def test_the_manage_tool_names_every_user_that_wrote_a_shared_memory() -> None:
    store = InMemoryStore()
    tool = create_manage_memory_tool(SHARED, store=store)
    reply = tool.invoke({"content": "The team prefers tea"}, _cfg("u1", "t1"))
    key = reply.split()[-1].rstrip(".")
    assert store.get(SHARED, key).value[PROVENANCE_FIELD] == {  # type: ignore[union-attr]
        "user_ids": ["u1"],
        "session_ids": ["t1"],
    }
    tool.invoke({"action": "update", "id": key, "content": "Green tea"}, _cfg("u2", "t2"))
    value = store.get(SHARED, key).value  # type: ignore[union-attr]
    assert value["content"] == "Green tea"
    assert value[PROVENANCE_FIELD] == {"user_ids": ["u1", "u2"], "session_ids": ["t1", "t2"]}
    assert names_user(value, "u1") and names_user(value, "u2")
    own = create_manage_memory_tool(store=store)  # ("memories", "{user_id}"): as it was
    reply = own.invoke({"content": "Prefers tea"}, _cfg("u1", "t1"))
    mine = store.get(("memories", "u1"), reply.split()[-1].rstrip("."))
    assert mine is not None and mine.value == {"content": "Prefers tea"}


# ------------------------------------------------------------------ the memory agent
def test_the_agent_names_user_and_thread_outside_the_users_namespaces() -> None:
    store = InMemoryStore()
    agent = create_memory_agent(
        RecordingChatModel(replies=["Noted."]),
        namespace=("team", "{user_id}"),  # a layout of the caller's: not the default rule
        writer=MemoryWriter(retry_wait=0.0),
        background=False,
    )
    graph = agent.compile(store=store, checkpointer=InMemorySaver())
    graph.invoke({"messages": "I live in Porto."}, _cfg("u1", "t1"))
    items = store.search(("team", "u1"), limit=10)
    assert {i.value.get("source") for i in items} == {"memory_agent", "extraction"}
    for item in items:
        assert item.value[PROVENANCE_FIELD] == {"user_ids": ["u1"], "session_ids": ["t1"]}
