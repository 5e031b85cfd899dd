"""`export_user(store, ...)`: everything held about a user, as JSON, and nothing of anyone else."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from langchain_core.messages import RemoveMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory import (
    AsyncRedisSessionSaver,
    AsyncTieredMemoryStore,
    RedisSessionSaver,
    TieredMemoryStore,
)
from langgraph_tiered_memory.agent.profile import get_user_profile
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.graph.types import Namespace, Triple
from langgraph_tiered_memory.privacy import aexport_user, erase_user, export_user
from tests.conftest import DIMS, drop_redis_keys
from tests.fakes import Clock, HashingEmbeddings

SHARED = ("shared", "facts")


def _options(redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock) -> dict[str, Any]:
    return {
        "redis_url": redis_url,
        "chroma_path": str(tmp_path / "chroma"),
        "key_prefix": key_prefix,
        "clock": clock,
        "index": {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        "graph": True,
    }


@pytest.fixture
def users() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"ana-{tag}", f"bob-{tag}"


@pytest.fixture
def xstore(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> Iterator[TieredMemoryStore]:
    store = TieredMemoryStore(**_options(redis_url, key_prefix, tmp_path, clock))
    store.setup()
    yield store
    store.close()


@pytest.fixture
def saver(redis_url: str, key_prefix: str) -> Iterator[RedisSessionSaver]:
    prefix = f"{key_prefix}s"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as s:
        yield s
    drop_redis_keys(redis_url, prefix)


def _fill(store: TieredMemoryStore, user: str, other: str) -> None:
    store.put(("users", user, "memories"), "home", {"content": "I live in Porto"})
    store.put(("users", user, "memories"), "tea", {"content": "I like green tea"})
    store.put(("short_term", "users", user), "turn", {"content": "draft"}, ttl=60)
    store.put(("users", other, "memories"), "home", {"content": "I live in Oslo"})
    store.put(SHARED, "from-user", {"content": "trivia", "provenance": {"user_ids": [user]}})
    store.put(SHARED, "plain", {"content": "water boils at 100 C"})
    get_user_profile(store, user)


def test_export_holds_every_kind_of_data_as_json(
    xstore: TieredMemoryStore, saver: RedisSessionSaver, users: tuple[str, str]
) -> None:
    user, other = users
    _fill(xstore, user, other)
    ns = ("users", user, "memories")
    xstore.search(ns, query="tea")  # one access each for the hits
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=saver)
    graph.invoke(
        {"messages": [("user", "hi")]},
        {"configurable": {"thread_id": f"t-{user}", "user_id": user}},
    )
    saver.flush_sessions()
    saver.set_summary(f"t-{user}", "the user said hi")

    data = export_user(xstore, user, checkpointer=saver)

    text = json.dumps(data, allow_nan=False)  # JSON as is
    assert other not in text and "Oslo" not in text
    assert data["user_id"] == user
    memories = {(tuple(m["namespace"]), m["key"]): m for m in data["memories"]}
    assert set(memories) == {(ns, "home"), (ns, "tea")}
    tea = memories[(ns, "tea")]
    assert tea["value"]["content"] == "I like green tea"
    assert tea["statistics"]["access_count"] >= 1
    assert tea["statistics"]["memory_type"]
    assert [i["key"] for i in data["short_items"]] == ["turn"]
    assert [m["key"] for m in data["shared_memories"]] == ["from-user"]
    assert data["profile"] and all(p["namespace"][0] == "profiles" for p in data["profile"])
    assert any(t["object"] == "porto" for t in data["triples"])
    assert [s["session_id"] for s in data["sessions"]] == [f"t-{user}"]
    assert data["sessions"][0]["summary"] == "the user said hi"
    history = {(tuple(h["namespace"]), h["key"]): h["events"] for h in data["history"]}
    assert history[(ns, "tea")][0]["event"] == "add"
    assert history[(ns, "tea")][0]["content"] == "I like green tea"
    assert history[(SHARED, "from-user")][0]["content"] == "trivia"  # by provenance
    assert (SHARED, "plain") not in history


def test_export_counts_no_access(xstore: TieredMemoryStore, users: tuple[str, str]) -> None:
    user, other = users
    _fill(xstore, user, other)
    ns = ("users", user, "memories")
    export_user(xstore, user)
    second = export_user(xstore, user)
    assert all(m["statistics"]["access_count"] == 0 for m in second["memories"])
    entry = xstore.get_memory(ns, "home")
    assert entry is not None and entry.access_count == 0


def test_export_after_erase_is_empty(xstore: TieredMemoryStore, users: tuple[str, str]) -> None:
    user, other = users
    _fill(xstore, user, other)
    erase_user(xstore, user)
    data = export_user(xstore, user)
    for name in ("memories", "shared_memories", "short_items", "profile", "triples"):
        assert data[name] == [], name
    assert data["sessions"] is None  # no checkpointer given
    assert all(e["event"] == "erased" for h in data["history"] for e in h["events"])
    assert "Porto" not in json.dumps(data)


def test_async_export_matches_the_sync_one(
    xstore: TieredMemoryStore,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    clock: Clock,
    users: tuple[str, str],
) -> None:
    user, other = users
    _fill(xstore, user, other)
    expected = export_user(xstore, user)

    async def main() -> dict[str, Any]:
        async with AsyncTieredMemoryStore.from_conn_string(
            **_options(redis_url, key_prefix, tmp_path, clock)
        ) as store:
            return await aexport_user(store, user)

    data = asyncio.run(main())
    assert expected["memories"] and expected["triples"]  # the comparison covers real data
    assert data == expected


def test_async_export_reads_sessions_of_an_async_saver(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock, users: tuple[str, str]
) -> None:
    user, _ = users
    prefix = f"{key_prefix}s"

    async def main() -> dict[str, Any]:
        async with (
            AsyncTieredMemoryStore.from_conn_string(
                **_options(redis_url, key_prefix, tmp_path, clock)
            ) as store,
            AsyncRedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver,
        ):
            builder = StateGraph(MessagesState)
            builder.add_node("reply", lambda state: {"messages": [("ai", "ok")]})
            builder.add_edge(START, "reply")
            config = {"configurable": {"thread_id": f"t-{user}", "user_id": user}}
            await builder.compile(checkpointer=saver).ainvoke(
                {"messages": [("user", "hi")]}, config
            )
            await saver.aflush_sessions()
            await saver.aset_summary(f"t-{user}", "said hi")
            return await aexport_user(store, user, checkpointer=saver)

    try:
        data = asyncio.run(main())
    finally:
        drop_redis_keys(redis_url, prefix)
    assert [(s["session_id"], s["summary"]) for s in data["sessions"]] == [(f"t-{user}", "said hi")]
    assert data["sessions"][0]["message_count"] >= 1
    said = [(m["type"], m["content"]) for m in data["sessions"][0]["messages"]]
    assert said == [("human", "hi"), ("ai", "ok")]


def test_export_holds_the_messages_of_every_session_erase_removes(
    xstore: TieredMemoryStore, saver: RedisSessionSaver, users: tuple[str, str], redis_url: str
) -> None:
    user, _ = users

    class State(MessagesState):
        summary: str

    builder = StateGraph(State)

    def reply(state: State) -> dict[str, Any]:
        # The second turn folds the first one away into the summary, as a summarizer
        # does: only the older checkpoints still hold it.
        if len(state["messages"]) <= 2:
            return {"messages": [("ai", "noted")]}
        folded = [RemoveMessage(id=m.id) for m in state["messages"][:2] if m.id]
        return {"messages": [*folded, ("ai", "noted")], "summary": "said where they live"}

    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=saver)
    threads = [f"t1-{user}", f"t2-{user}"]
    for thread in threads:
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        graph.invoke({"messages": [("user", f"I live in Porto ({thread})")]}, config)
        graph.invoke({"messages": [("user", "and I like tea")]}, config)
    saver.flush_sessions()
    saver.set_summary(threads[0], "lives in Porto")
    # A session erase still finds by the user's index after its registry entry is gone.
    with redis.Redis.from_url(redis_url) as client:
        client.delete(saver.sessions.keys.session(threads[1]))
    assert sorted(saver.user_sessions(user)) == threads

    data = export_user(xstore, user, checkpointer=saver)

    json.dumps(data, allow_nan=False)
    sessions = {s["session_id"]: s for s in data["sessions"]}
    assert sorted(sessions) == threads  # what erase removes
    for thread in threads:
        said = [(m["type"], m["content"]) for m in sessions[thread]["messages"]]
        assert said == [
            ("human", f"I live in Porto ({thread})"),  # folded away, still in old checkpoints
            ("ai", "noted"),
            ("human", "and I like tea"),
            ("ai", "noted"),
        ]
    assert sessions[threads[0]]["summary"] == "lives in Porto"  # the saver's
    assert sessions[threads[1]]["summary"] == "said where they live"  # the state's
    assert sessions[threads[1]]["status"] is None  # no registry entry left
    receipt = erase_user(xstore, user, checkpointer=saver)
    assert receipt.counts["sessions"] == 1 and receipt.counts["checkpoints"] >= 2 * 2
    assert export_user(xstore, user, checkpointer=saver)["sessions"] == []


# ----------------------------------------------------------------- one rule of triples
KB = ("kb",)


def _links(store: TieredMemoryStore) -> set[tuple[Namespace, str, Triple]]:
    """Every (namespace, memory key, triple) support link of the store's graph."""
    return {
        (r.namespace, key, r.triple)
        for r in graph_triples(store, (), limit=10_000)
        for key in r.memory_keys
    }


@pytest.mark.parametrize("by_name", [False, True])
def test_export_lists_exactly_the_triples_erase_takes(
    xstore: TieredMemoryStore, users: tuple[str, str], by_name: bool
) -> None:
    user, other = users
    xstore.put(("users", user, "memories"), "home", {"content": "I live in Porto"})
    xstore.put(("memories", user), "cat", {"content": "My cat eats tuna"})
    xstore.put(KB, "tea", {"content": "I like green tea", "speaker": user})
    xstore.put(KB, "carol", {"content": f"Carol met {user}"})
    xstore.put(KB, "trip", {"content": "Bob lives in Oslo", "provenance": {"user_ids": [user]}})
    xstore.put(KB, "plain", {"content": "Dave lives in Rome"})
    theirs = ("users", other, "memories")
    xstore.put(theirs, "met", {"content": f"I met {user} at the market", "speaker": other})
    names = {"names": [user]} if by_name else {}

    exported = {
        (tuple(t["namespace"]), Triple(t["subject"], t["relation"], t["object"]))
        for t in export_user(xstore, user, **names)["triples"]
    }
    before = _links(xstore)
    erase_user(xstore, user, **names)
    taken = {(ns, t) for ns, _, t in before - _links(xstore)}

    assert exported == taken
    assert (KB, Triple("bob", "lives_in", "oslo")) in taken  # by provenance
    assert ((KB, Triple(user, "likes", "green tea")) in taken) is by_name  # by name only
    assert (KB, Triple("dave", "lives_in", "rome")) not in taken
    assert (theirs, Triple(other, "met", user)) not in taken  # another user's, always kept
    assert not any(ns[:2] == ("users", user) for ns, _, _ in _links(xstore))
