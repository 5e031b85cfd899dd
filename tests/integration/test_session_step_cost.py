"""A super-step costs what it costs with upstream's saver: counted, not timed.

Per super-step a graph stores one checkpoint (`put`) and its task's writes
(`put_writes`). Timing that on a shared machine is noisy (`tiered-memory bench
checkpoint`, docs/benchmarks.md); what the session layer could add is counted here
instead: Redis round trips, and the per-read work of the call budget (`redis_timeout`):
a changed socket timeout is a system call that releases the GIL (the checkpoint worker
thread then waits to take it back), an asyncio timeout a timer on the event loop.
The batched session records are written by the recorder's timer, off the step path.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.redis import RedisSaver
from langgraph.checkpoint.redis.aio import AsyncRedisSaver

from langgraph_tiered_memory._redis_client import aclient_options, client_options, redis_call
from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.checkpoint._session import session_ttl

# Upstream given the session savers' default TTL (7 days, refreshed on read), as the
# benchmark does, so both write the same keys with the same expiry.
_UPSTREAM_TTL = session_ttl(7 * 24 * 3600)[1]
ROUND_TRIPS, TIMEOUT_CHANGES = "round trips", "socket timeout changes"


def _off_step_path() -> bool:
    """Whether this is the session recorder writing its batched records (its timer)."""
    if isinstance(threading.current_thread(), threading.Timer):
        return True
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop in this thread
        return False
    return task is not None and task.get_coro().__qualname__ == "AsyncRecorder.flush"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Round trips (sync and async clients) and socket timeout changes, as they happen."""
    counts: Counter[str] = Counter()

    def counting(cls: type, name: str, what: str) -> None:
        original = getattr(cls, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not _off_step_path():
                counts[what] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    counting(redis.connection.AbstractConnection, "send_packed_command", ROUND_TRIPS)
    counting(aredis.connection.AbstractConnection, "send_packed_command", ROUND_TRIPS)
    counting(socket.socket, "settimeout", TIMEOUT_CHANGES)
    return counts


def _checkpoint_args(thread: str) -> tuple[dict[str, Any], Any, dict[str, Any], dict[str, Any]]:
    """A root-namespace checkpoint of a 20-message state, as the benchmark's graph writes."""
    messages = [
        (HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i}: an ordinary turn.")
        for i in range(20)
    ]
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages}
    checkpoint["channel_versions"] = {"messages": 1}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "user_id": USER}}
    return config, checkpoint, {"source": "loop", "step": 1, "user_id": USER}, {"messages": 1}


USER = "step-cost-user"
"""The sessions' owner: no other test's user, so their sessions are listed nowhere else."""

_WRITES = [("messages", [AIMessage(content="step 1: noted.")]), ("step", 1)]


def _step_cost(saver: Any, counts: Counter[str], thread: str) -> Counter[str]:
    """What one super-step's `put` and `put_writes` cost (after one uncounted step)."""
    for _ in range(2):
        counts.clear()
        stored = saver.put(*_checkpoint_args(thread))
        saver.put_writes(stored, _WRITES, "task-1")
    return Counter(counts)


async def _astep_cost(saver: Any, counts: Counter[str], thread: str) -> Counter[str]:
    for _ in range(2):
        counts.clear()
        stored = await saver.aput(*_checkpoint_args(thread))
        await saver.aput_writes(stored, _WRITES, "task-1")
    return Counter(counts)


@pytest.fixture
def upstream(redis_url: str) -> Iterator[RedisSaver]:
    with RedisSaver.from_conn_string(redis_url, ttl=_UPSTREAM_TTL) as saver:
        saver.setup()
        yield saver


def test_a_super_step_costs_no_more_round_trips_or_socket_changes_than_upstream(
    redis_url: str, key_prefix: str, upstream: RedisSaver, counted: Counter[str]
) -> None:
    baseline = _step_cost(upstream, counted, f"cost-{uuid.uuid4().hex}")
    thread = f"cost-{uuid.uuid4().hex}"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=key_prefix) as saver:
        ours = _step_cost(saver, counted, thread)
        meta = saver.get_session(thread)  # the records, written off the step path
    assert baseline[ROUND_TRIPS] > 0
    assert ours[ROUND_TRIPS] <= baseline[ROUND_TRIPS], (ours, baseline)
    # The call budget tightens no read of a healthy call: the socket is left as it is.
    assert ours[TIMEOUT_CHANGES] <= baseline[TIMEOUT_CHANGES], (ours, baseline)
    assert meta is not None and meta.user_id == USER


async def test_an_async_super_step_costs_no_more_round_trips_than_upstream(
    redis_url: str, key_prefix: str, counted: Counter[str]
) -> None:
    async with AsyncRedisSaver.from_conn_string(redis_url, ttl=_UPSTREAM_TTL) as upstream:
        await upstream.asetup()
        baseline = await _astep_cost(upstream, counted, f"cost-{uuid.uuid4().hex}")
    thread = f"cost-{uuid.uuid4().hex}"
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, session_prefix=key_prefix
    ) as saver:
        ours = await _astep_cost(saver, counted, thread)
        meta = await saver.aget_session(thread)
    assert baseline[ROUND_TRIPS] > 0
    assert ours[ROUND_TRIPS] <= baseline[ROUND_TRIPS], (ours, baseline)
    assert meta is not None and meta.user_id == USER


def test_reads_of_a_healthy_call_change_no_socket_timeout(
    redis_url: str, counted: Counter[str]
) -> None:
    plain = redis.Redis.from_url(redis_url)
    bounded = redis.Redis.from_url(redis_url, **client_options(redis_url, 5.0))
    try:
        for client in (plain, bounded):
            client.ping()  # connected before counting
        counted.clear()
        for _ in range(5):
            plain.ping()
        baseline = counted[TIMEOUT_CHANGES]
        counted.clear()
        with redis_call():
            for _ in range(5):
                bounded.ping()
        assert counted[ROUND_TRIPS] == 5
        assert counted[TIMEOUT_CHANGES] == baseline
    finally:
        plain.close()
        bounded.close()


async def test_reads_of_a_healthy_async_call_set_no_timer_of_their_own(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = aredis.Redis.from_url(redis_url, **aclient_options(redis_url, 5.0))
    loop = asyncio.get_running_loop()
    timers: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, *args: Any, **kwargs: Any) -> Any:
        timers.append(when)
        return call_at(when, *args, **kwargs)

    async def pings() -> int:
        timers.clear()
        for _ in range(5):
            assert await client.ping()
        return len(timers)

    try:
        await client.ping()
        monkeypatch.setattr(loop, "call_at", counting_call_at)
        outside = await pings()  # redis-py's own socket timeout
        with redis_call():
            inside = await pings()
        assert inside == outside
    finally:
        monkeypatch.undo()
        await client.aclose()
