"""Session ownership and the user index: who a session belongs to, and for how long it is listed.

- the first `user_id` seen for a thread owns it, whatever the timing of later records;
  another user who writes to it is recorded as a participant and logged, never the owner;
- the owner's index entry is written whenever the owner is known, so a thread whose
  `user_id` first appears on a later turn is listed;
- the index follows activity: a session in use stays listed past 2 x TTL after creation.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.checkpoint._recorder import (
    AsyncRecorder,
    Recorder,
    _merge,
    _Records,
    _requeue,
)
from langgraph_tiered_memory.checkpoint.registry import AsyncSessionRegistry, SessionRegistry
from tests.fakes import Clock

LOGGER = "langgraph_tiered_memory.checkpoint"
WINDOW = 3600.0  # a coalescing window no test outlives: every record lands in one batch
TTL = 600


def _graph() -> StateGraph:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    return g


def _cfg(thread: str, user: str | None = None) -> Any:
    conf = {"thread_id": thread}
    if user is not None:
        conf["user_id"] = user
    return {"configurable": conf}


def _ownership_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == LOGGER and r.levelno == logging.WARNING and "participant" in r.getMessage()
    ]


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
async def aclient(redis_url: str) -> AsyncIterator[aredis.Redis]:
    c = aredis.Redis.from_url(redis_url)
    yield c
    await c.aclose()


# --------------------------------------------------------------------- item 13: owner
def test_second_user_within_the_window_joins_as_participant_and_the_first_stays_owner(
    redis_url: str, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory")
    thread = f"t-{uuid.uuid4().hex}"
    with RedisSessionSaver.from_conn_string(redis_url, ttl=TTL, session_prefix=key_prefix) as saver:
        saver._recorder = Recorder(saver.sessions, interval=WINDOW)
        graph = _graph().compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "hello from ana")]}, _cfg(thread, "ana"))
        graph.invoke({"messages": [("user", "secret words of ben")]}, _cfg(thread, "ben"))
        try:
            meta = saver.get_session(thread)  # writes the one coalesced batch
            assert meta is not None and meta.user_id == "ana"
            assert meta.message_count == 4
            assert [s.session_id for s in saver.list_sessions("ana")] == [thread]
            assert saver.list_sessions("ben") == []  # the owner's list only
            assert meta.participants == ("ben",)
            (warning,) = _ownership_warnings(caplog)
            text = warning.getMessage()
            assert thread in text and "'ben'" in text and "'ana'" in text
            assert "secret" not in text and "hello" not in text  # no message content
            # Ben again, in a later batch: still a participant, no second warning.
            graph.invoke({"messages": [("user", "more")]}, _cfg(thread, "ben"))
            again = saver.get_session(thread)
            assert again is not None and again.user_id == "ana"
            assert again.participants == ("ben",) and again.message_count == 6
            assert len(_ownership_warnings(caplog)) == 1
        finally:
            saver.delete_session(thread)


async def test_async_second_user_within_the_window_joins_as_participant(
    redis_url: str, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory")
    thread = f"t-{uuid.uuid4().hex}"
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, ttl=TTL, session_prefix=key_prefix
    ) as saver:
        saver._recorder = AsyncRecorder(saver.sessions, interval=WINDOW)
        graph = _graph().compile(checkpointer=saver)
        await graph.ainvoke({"messages": [("user", "hi")]}, _cfg(thread, "ana"))
        await graph.ainvoke({"messages": [("user", "hi")]}, _cfg(thread, "ben"))
        await graph.ainvoke({"messages": [("user", "hi")]}, _cfg(thread, "cyd"))
        try:
            listed = await saver.alist_sessions("ana")
            assert [s.session_id for s in listed] == [thread]
            assert listed[0].user_id == "ana" and listed[0].participants == ("ben", "cyd")
            assert await saver.alist_sessions("ben") == []
            assert await saver.alist_sessions("cyd") == []
            logged = [r.getMessage() for r in _ownership_warnings(caplog)]
            assert len(logged) == 2 and "'ben'" in logged[0] and "'cyd'" in logged[1]
        finally:
            await saver.adelete_session(thread)


def test_a_failed_batch_put_back_keeps_its_first_user_ahead_of_newer_ones() -> None:
    pending: _Records = {}
    _merge(pending, "t", "ana", 2)
    batch, pending = pending, {}  # taken by a flush whose write then fails
    _merge(pending, "t", "ben", 4)  # submitted while the write was under way
    _merge(pending, "t", None, None)
    _requeue(pending, batch)
    assert pending == {"t": (("ana", "ben"), 4)}  # first user first, newest count


def test_touch_by_another_user_records_a_participant(client: redis.Redis, key_prefix: str) -> None:
    reg = SessionRegistry(client, key_prefix=key_prefix, ttl=TTL, clock=Clock())
    reg.touch("t1", user_id="ana", messages=1)
    meta = reg.touch("t1", user_id="ben", messages=1)
    assert meta.user_id == "ana" and meta.participants == ("ben",)
    assert meta.message_count == 2
    assert [s.session_id for s in reg.list_sessions("ana")] == ["t1"]
    assert reg.list_sessions("ben") == []


# --------------------------------------------------------- item 13: owner on a later turn
def test_owner_named_on_a_later_turn_is_listed(redis_url: str, key_prefix: str) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    with RedisSessionSaver.from_conn_string(redis_url, ttl=TTL, session_prefix=key_prefix) as saver:
        graph = _graph().compile(checkpointer=saver)
        try:
            graph.invoke({"messages": [("user", "one")]}, _cfg(thread))
            saver.flush_sessions()  # turn 1 recorded without a user
            assert saver.get_session(thread).user_id is None  # type: ignore[union-attr]
            graph.invoke({"messages": [("user", "two")]}, _cfg(thread, "ana"))
            listed = saver.list_sessions("ana")
            assert [s.session_id for s in listed] == [thread]
            assert listed[0].user_id == "ana" and listed[0].message_count == 4
        finally:
            saver.delete_session(thread)


async def test_async_owner_named_on_a_later_turn_is_listed(redis_url: str, key_prefix: str) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, ttl=TTL, session_prefix=key_prefix
    ) as saver:
        graph = _graph().compile(checkpointer=saver)
        try:
            await graph.ainvoke({"messages": [("user", "one")]}, _cfg(thread))
            await saver.aflush_sessions()
            await graph.ainvoke({"messages": [("user", "two")]}, _cfg(thread))
            await saver.aflush_sessions()
            await graph.ainvoke({"messages": [("user", "three")]}, _cfg(thread, "ana"))
            listed = await saver.alist_sessions("ana")
            assert [s.session_id for s in listed] == [thread]
            assert listed[0].user_id == "ana" and listed[0].participants == ()
        finally:
            await saver.adelete_session(thread)


# ------------------------------------------------------------ item 14: index follows activity
def test_a_session_in_use_stays_listed_past_twice_the_ttl_after_creation(
    client: redis.Redis, key_prefix: str
) -> None:
    clock = Clock()
    start = clock.now
    reg = SessionRegistry(client, key_prefix=key_prefix, ttl=TTL, clock=clock)
    user_key = f"{key_prefix}:user:ana"
    reg.record("idle", user_id="ana", message_count=2)  # never used again
    reg.record("long", user_id="ana", message_count=2)
    for turn in range(1, 6):  # used every 300 s, until 1,500 s (> 2 x TTL) after creation
        clock.now += 300
        # Only some turns name the user: the index follows the owner all the same.
        reg.record("long", user_id="ana" if turn % 2 else None, message_count=2 + 2 * turn)
    assert client.zscore(user_key, "long") == clock.now  # scored by last activity
    clock.now += 1
    reg.record("fresh", user_id="ana", message_count=1)  # prunes entries idle for 2 x TTL
    assert sorted(e.decode() for e in client.zrange(user_key, 0, -1)) == ["fresh", "long"]
    listed = reg.list_sessions("ana")
    assert [s.session_id for s in listed] == ["fresh", "long"]
    assert all(s.status == "active" for s in listed)
    assert listed[1].created_at.timestamp() == start  # type: ignore[union-attr]
    assert listed[1].message_count == 12
    # Every activity restarts the index key's expiry (2 x TTL), not only creation.
    client.expire(user_key, 5)
    clock.now += 10
    reg.record("long", message_count=14)
    assert client.ttl(user_key) > 2 * TTL - 5


async def test_async_session_in_use_stays_listed_past_twice_the_ttl_after_creation(
    aclient: aredis.Redis, client: redis.Redis, key_prefix: str
) -> None:
    clock = Clock()
    areg = AsyncSessionRegistry(aclient, key_prefix=key_prefix, ttl=TTL, clock=clock)
    await areg.record("long", user_id="ana", message_count=2)
    for _ in range(5):
        clock.now += 300
        await areg.record("long", message_count=4)
    assert client.zscore(f"{key_prefix}:user:ana", "long") == clock.now
    clock.now += 1
    await areg.record("fresh", user_id="ana")
    listed = await areg.list_sessions("ana")
    assert [s.session_id for s in listed] == ["fresh", "long"]
    # touch keeps the index too.
    client.expire(f"{key_prefix}:user:ana", 5)
    clock.now += 10
    await areg.touch("long")
    assert client.ttl(f"{key_prefix}:user:ana") > 2 * TTL - 5
