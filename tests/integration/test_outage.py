"""Redis outages: every call ends within its bound and raises `BackendUnavailableError`.

Private servers are started per test so they can be frozen (SIGSTOP) or stopped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory import (
    AsyncTieredMemoryStore,
    BackendUnavailableError,
    ConfigurationError,
    TieredMemoryStore,
)
from langgraph_tiered_memory._redis_client import redis_call, redis_from_url
from langgraph_tiered_memory.checkpoint import (
    AsyncRedisSessionSaver,
    AsyncShallowRedisSessionSaver,
    RedisSessionSaver,
    ShallowRedisSessionSaver,
)
from langgraph_tiered_memory.checkpoint._outage import is_translated, public_methods
from langgraph_tiered_memory.checkpoint.registry import AsyncSessionRegistry, SessionRegistry
from langgraph_tiered_memory.embedded.redis import EmbeddedRedis
from tests.net import free_port

BOUND = 1.0
MARGIN = 1.5  # scheduling slack on a busy machine


@pytest.fixture
def server() -> Iterator[EmbeddedRedis]:
    """A private Redis with modules on a fixed port (so it can be restarted there)."""
    with EmbeddedRedis(port=free_port()) as srv:
        yield srv


@contextmanager
def frozen(srv: EmbeddedRedis) -> Iterator[None]:
    """The server process is stopped (SIGSTOP): connections open, nothing answers."""
    assert srv.pid is not None
    pid = srv.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _graph() -> StateGraph:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    return g


def _fails_in_time(call: Callable[[], Any], port: int, bound: float) -> BackendUnavailableError:
    start = time.monotonic()
    with pytest.raises(BackendUnavailableError) as info:
        call()
    elapsed = time.monotonic() - start
    assert elapsed < bound + MARGIN, f"took {elapsed:.1f} s"
    assert f"127.0.0.1:{port}" in str(info.value)
    assert info.value.__cause__ is not None
    return info.value


def _each_fails_in_time(
    calls: dict[str, Callable[[], Any]], port: int, bound: float
) -> dict[str, BackendUnavailableError]:
    """`_fails_in_time` for every call, all at once (threads), by name.

    A frozen server costs each call its timeout, a stopped one its connection retries'
    backoff (0.7 s): at once, the calls cost that once instead of once each.
    """

    def attempt(name: str) -> BackendUnavailableError:
        try:
            return _fails_in_time(calls[name], port, bound)
        except BaseException as exc:  # pytest's failures are BaseExceptions
            raise AssertionError(f"{name} did not fail as an outage should") from exc

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return dict(zip(calls, pool.map(attempt, calls), strict=True))


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:g} s"
        time.sleep(0.02)


async def _await_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """`_wait_until` on the event loop (the loop keeps running the recorder's timer)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:g} s"
        await asyncio.sleep(0.02)


# ----------------------------------------------------------------------------- store
def test_a_frozen_redis_fails_each_store_call_within_redis_timeout(
    server: EmbeddedRedis, tmp_path: Path
) -> None:
    ns = ("short_term", "s1")
    with TieredMemoryStore.from_conn_string(
        server.url, chroma_path=str(tmp_path / "chroma"), redis_timeout=BOUND
    ) as store:
        store.put(ns, "k1", {"text": "hello"})
        calls: dict[str, Callable[[], Any]] = {
            "get": lambda: store.get(ns, "k1"),
            "put": lambda: store.put(ns, "k2", {"text": "lost"}),
            "search": lambda: store.search(("short_term",)),
            "list_namespaces": lambda: store.list_namespaces(prefix=("short_term",)),
        }
        with frozen(server):
            for name, error in _each_fails_in_time(calls, server.port, BOUND).items():
                assert "unreachable" in str(error), name
                assert f"{BOUND:g} s" in str(error), name
        # Once the server runs again, the same store works.
        item = store.get(ns, "k1")
        assert item is not None and item.value == {"text": "hello"}
        store.put(ns, "k3", {"text": "back"})
        assert store.get(ns, "k3") is not None


async def test_a_frozen_redis_fails_async_store_calls_within_redis_timeout(
    server: EmbeddedRedis, tmp_path: Path
) -> None:
    ns = ("short_term", "s1")
    async with AsyncTieredMemoryStore.from_conn_string(
        server.url, chroma_path=str(tmp_path / "chroma"), redis_timeout=BOUND
    ) as store:
        await store.aput(ns, "k1", {"text": "hello"})
        with frozen(server):
            start = time.monotonic()
            with pytest.raises(BackendUnavailableError, match="unreachable"):
                await store.aget(ns, "k1")
            assert time.monotonic() - start < BOUND + MARGIN
        assert (await store.aget(ns, "k1")) is not None


def test_round_trips_of_one_call_share_the_redis_timeout(redis_url: str) -> None:
    client = redis_from_url(redis_url, timeout=1.0)
    key = f"empty-{uuid.uuid4().hex}"
    try:
        # Outside a call each round trip has the whole bound: three 0.4 s waits pass.
        for _ in range(3):
            assert client.blpop([key], timeout=0.4) is None
        # Inside one call they share it: the third wait runs out of time.
        start = time.monotonic()
        with redis_call():
            assert client.blpop([key], timeout=0.4) is None
            assert client.blpop([key], timeout=0.4) is None
            with pytest.raises(redis.exceptions.TimeoutError):
                client.blpop([key], timeout=0.4)
        assert time.monotonic() - start < 1.0 + 0.5
        assert client.ping()  # the client recovers for the next call
    finally:
        client.close()


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "15"])
def test_redis_timeout_must_be_a_positive_number(bad: Any, redis_url: str) -> None:
    with pytest.raises(ConfigurationError, match="redis_timeout"):
        TieredMemoryStore(redis_url=redis_url, tiers={"default": "short"}, redis_timeout=bad)
    with pytest.raises(ConfigurationError, match="redis_timeout"):
        RedisSessionSaver(redis_url=redis_url, redis_timeout=bad)


# ----------------------------------------------------------------------------- savers
SAVER_CLASSES = [
    RedisSessionSaver,
    ShallowRedisSessionSaver,
    AsyncRedisSessionSaver,
    AsyncShallowRedisSessionSaver,
    SessionRegistry,
    AsyncSessionRegistry,
]


@pytest.mark.parametrize("cls", SAVER_CLASSES, ids=lambda c: c.__name__)
def test_every_public_saver_method_translates_outages(cls: type) -> None:
    names = public_methods(cls)
    assert "__init__" in names
    if "Registry" not in cls.__name__:
        assert {"from_conn_string", "put", "get_tuple", "list", "setup"} <= set(names)
    missing = [n for n in names if not is_translated(cls, n)]
    assert missing == []


def _sync_calls(saver: Any, thread: str) -> dict[str, Callable[[], Any]]:
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    calls: dict[str, Callable[[], Any]] = {
        "get_session": lambda: saver.get_session(thread),
        "list_sessions": lambda: saver.list_sessions("u1"),
        "list": lambda: list(saver.list({"configurable": {"thread_id": thread}})),
        "get_tuple": lambda: saver.get_tuple(cfg),
        "get_summary": lambda: saver.get_summary(thread),
        "set_summary": lambda: saver.set_summary(thread, "s"),
        "archive_session": lambda: saver.archive_session(thread),
        "delete_thread": lambda: saver.delete_thread(thread),
        "setup": saver.setup,
        "sessions.touch": lambda: saver.sessions.touch(thread),
    }
    if isinstance(saver, RedisSessionSaver):
        calls["prune"] = lambda: saver.prune([thread])
        calls["copy_thread"] = lambda: saver.copy_thread(thread, f"{thread}-copy")
        calls["delete_for_runs"] = lambda: saver.delete_for_runs(["run-1"])
    return calls


@pytest.mark.parametrize("cls", [RedisSessionSaver, ShallowRedisSessionSaver])
def test_sync_savers_raise_backend_unavailable_when_redis_is_down_or_frozen(
    cls: Any, server: EmbeddedRedis
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    url, port = server.url, server.port
    with cls.from_conn_string(url, redis_timeout=BOUND) as saver:
        graph = _graph().compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": thread}})
        saver.flush_sessions()
        calls = _sync_calls(saver, thread)
        reads = ("get_session", "list_sessions", "list", "get_tuple")
        with frozen(server):
            _each_fails_in_time({name: calls[name] for name in reads}, port, BOUND)
        server.stop()  # nothing listens on the port any more
        for name, error in _each_fails_in_time(calls, port, BOUND).items():
            assert "unreachable" in str(error), name
        with pytest.raises(BackendUnavailableError, match="unreachable"):
            graph.invoke({"messages": [("user", "lost")]}, {"configurable": {"thread_id": thread}})
    # Constructors and from_conn_string on a dead server.
    with pytest.raises(BackendUnavailableError, match=f"127.0.0.1:{port}"):
        cls(redis_url=url)
    with pytest.raises(BackendUnavailableError, match=f"127.0.0.1:{port}"):
        with cls.from_conn_string(url):
            pass


@pytest.mark.parametrize("cls", [AsyncRedisSessionSaver, AsyncShallowRedisSessionSaver])
async def test_async_savers_raise_backend_unavailable_when_redis_is_down_or_frozen(
    cls: Any, server: EmbeddedRedis
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    url, port = server.url, server.port
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}

    async def alist() -> list[Any]:
        return [t async for t in saver.alist({"configurable": {"thread_id": thread}})]

    async with cls.from_conn_string(url, redis_timeout=BOUND) as saver:
        graph = _graph().compile(checkpointer=saver)
        await graph.ainvoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": thread}})
        await saver.aflush_sessions()
        calls: dict[str, Callable[[], Any]] = {
            "aget_session": lambda: saver.aget_session(thread),
            "alist_sessions": lambda: saver.alist_sessions("u1"),
            "alist": alist,
            "aget_tuple": lambda: saver.aget_tuple(cfg),
            "aget_summary": lambda: saver.aget_summary(thread),
            "aset_summary": lambda: saver.aset_summary(thread, "s"),
            "aarchive_session": lambda: saver.aarchive_session(thread),
            "adelete_thread": lambda: saver.adelete_thread(thread),
            "asetup": saver.asetup,
        }

        async def fails(name: str, call: Callable[[], Any]) -> None:
            start = time.monotonic()
            with pytest.raises(BackendUnavailableError, match=f"127.0.0.1:{port}"):
                await call()
            assert time.monotonic() - start < BOUND + MARGIN, name

        async def each_fails(names: Iterable[str]) -> None:
            """Every call at once: each costs its timeout or backoff, together once."""
            await asyncio.gather(*(fails(name, calls[name]) for name in names))

        with frozen(server):
            await each_fails(("aget_session", "alist", "aget_tuple"))
        server.stop()
        await each_fails(calls)
    with pytest.raises(BackendUnavailableError, match=f"127.0.0.1:{port}"):
        async with cls.from_conn_string(url):
            pass


def test_an_error_inside_the_with_block_is_not_rewritten(server: EmbeddedRedis) -> None:
    own = redis.exceptions.ConnectionError("the caller's own connection error")
    with pytest.raises(redis.exceptions.ConnectionError) as info:
        with RedisSessionSaver.from_conn_string(server.url):
            raise own
    assert info.value is own


# ----------------------------------------------------------------------------- logging
def test_failed_registry_writes_warn_once_and_land_after_recovery(
    server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory")
    thread, port = f"t-{uuid.uuid4().hex}", server.port
    with RedisSessionSaver.from_conn_string(server.url, redis_timeout=BOUND) as saver:
        key = saver.sessions.session_keys(thread)[0]
        server.stop()
        # What `put` submits after a checkpoint; the timer writes it in the background.
        saver._recorder._interval = 0.1  # retry sooner than the default second
        saver._recorder.submit(thread, "u1", 2)
        _wait_until(lambda: saver._recorder._streak.failures >= 3, "three failed attempts")
        records = [r for r in caplog.records if r.name == "langgraph_tiered_memory.checkpoint"]
        warnings = [r for r in records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in records]
        assert f"127.0.0.1:{port}" in warnings[0].getMessage()
        server.start()  # same port
        client = redis.Redis(port=port)
        try:
            _wait_until(lambda: bool(client.exists(key)), "session record")
            assert client.hget(key, "message_count") == b"2"
            assert client.hget(key, "user_id") == b"u1"
        finally:
            client.close()
        _wait_until(
            lambda: any(
                r.levelno == logging.INFO and "after" in r.getMessage() for r in caplog.records
            ),
            "recovery record",
        )
        infos = [
            r
            for r in caplog.records
            if r.name == "langgraph_tiered_memory.checkpoint" and r.levelno == logging.INFO
        ]
        assert len(infos) == 1 and "failed attempt" in infos[0].getMessage()
        assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_the_ttl_sweeper_survives_failures_warns_once_and_sweeps_again(
    redis_url: str, key_prefix: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory")
    store = TieredMemoryStore(
        redis_url=redis_url,
        key_prefix=key_prefix,
        chroma_path=str(tmp_path / "chroma"),
        ttl={"sweep_interval_minutes": 0.001},  # every 0.06 s
    )
    tier = store.tiers["long"]
    real_sweep = tier.sweep
    state = {"fail": True, "failed": 0, "swept": 0}

    def flaky_sweep(*, now: float) -> int:
        if state["fail"]:
            state["failed"] += 1
            raise BackendUnavailableError("injected outage")
        state["swept"] += 1
        return real_sweep(now=now)

    def wait_for(what: str, count: int) -> None:
        _wait_until(lambda: state[what] >= count, f"{count} {what} sweeps ({state})")

    tier.sweep = flaky_sweep  # type: ignore[method-assign]
    try:
        wait_for("failed", 5)
        state["fail"] = False
        wait_for("swept", 3)
        store_records = [r for r in caplog.records if r.name == "langgraph_tiered_memory.store"]
        warnings = [r for r in store_records if r.levelno == logging.WARNING]
        infos = [r for r in store_records if r.levelno == logging.INFO]
        assert len(warnings) == 1 and "injected outage" in warnings[0].getMessage()
        assert len(infos) == 1 and "again" in infos[0].getMessage()
        # A new streak of failures warns again, once.
        state["fail"], before = True, state["failed"]
        wait_for("failed", before + 3)
        state["fail"] = False
        wait_for("swept", state["swept"] + 2)
        warnings = [
            r
            for r in caplog.records
            if r.name == "langgraph_tiered_memory.store" and r.levelno == logging.WARNING
        ]
        assert len(warnings) == 2
        assert store._sweeper is not None and store._sweeper.is_alive()
    finally:
        store.close()


def test_async_recorder_logs_one_warning_per_streak(
    server: EmbeddedRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory")
    thread, port = f"t-{uuid.uuid4().hex}", server.port

    async def scenario() -> None:
        async with AsyncRedisSessionSaver.from_conn_string(server.url, redis_timeout=BOUND) as s:
            server.stop()
            s._recorder._interval = 0.1  # retry sooner than the default second
            s._recorder.submit(thread, "u2", 4)
            await _await_until(lambda: s._recorder._streak.failures >= 3, "three failed attempts")
            warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
            assert len(warnings) == 1 and f"127.0.0.1:{port}" in warnings[0].getMessage()
            server.start()
            await _await_until(lambda: s._recorder._streak.failures == 0, "the records written")
            meta = await s.sessions.get_session(thread)
            assert meta is not None and meta.message_count == 4

    asyncio.run(scenario())
    infos = [r for r in caplog.records if r.levelno == logging.INFO and "pending" in r.getMessage()]
    assert len(infos) == 1
