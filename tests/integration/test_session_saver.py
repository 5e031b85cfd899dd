"""Session savers in a compiled graph: registry, TTL on every key, delete_session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.errors import ConfigurationError


def _graph() -> StateGraph:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    return g


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


def _thread_keys(client: redis.Redis, thread_id: str) -> list[bytes]:
    return [k for k in client.scan_iter(match=f"*{thread_id}*", count=1000)]


def test_graph_runs_record_the_session_and_every_key_has_the_ttl(
    redis_url: str, client: redis.Redis
) -> None:
    thread, prefix = f"t-{uuid.uuid4().hex}", f"sess{uuid.uuid4().hex[:8]}"
    with RedisSessionSaver.from_conn_string(redis_url, ttl=3600, session_prefix=prefix) as saver:
        graph = _graph().compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": thread, "user_id": "u1"}}
        graph.invoke({"messages": [("user", "hi")]}, cfg)
        graph.invoke({"messages": [("user", "again")]}, cfg)
        saver.set_summary(thread, "User said hi twice.")
        meta = saver.get_session(thread)
        assert meta is not None and meta.user_id == "u1" and meta.status == "active"
        assert meta.message_count == 4
        assert [s.session_id for s in saver.list_sessions("u1")] == [thread]
        assert saver.get_summary(thread) == "User said hi twice."
        keys = _thread_keys(client, thread)
        assert len(keys) >= 4  # checkpoints, writes, registry, summary
        for key in keys:
            assert 0 < client.ttl(key) <= 3600, key
        assert saver.archive_session(thread) is True
        assert saver.get_session(thread).status == "archived"  # type: ignore[union-attr]
        saver.delete_session(thread)
        assert _thread_keys(client, thread) == []
        assert saver.get_session(thread) is None and saver.list_sessions("u1") == []
        assert graph.get_state(cfg).values == {}


def test_ttl_none_keeps_sessions_and_bad_ttl_is_refused(
    redis_url: str, client: redis.Redis
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    with RedisSessionSaver.from_conn_string(redis_url, ttl=None) as saver:
        _graph().compile(checkpointer=saver).invoke(
            {"messages": [("user", "hi")]}, {"configurable": {"thread_id": thread}}
        )
        keys = _thread_keys(client, thread)
        assert keys and all(client.ttl(k) == -1 for k in keys)
        saver.delete_session(thread)
        assert _thread_keys(client, thread) == []
    with pytest.raises(ConfigurationError, match="ttl"):
        RedisSessionSaver(redis_url, ttl=-1)


async def test_async_saver_records_sessions_in_a_graph(redis_url: str, client: redis.Redis) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    async with AsyncRedisSessionSaver.from_conn_string(redis_url, ttl=600) as saver:
        graph = _graph().compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": thread, "user_id": "u2"}}
        await graph.ainvoke({"messages": [("user", "hi")]}, cfg)
        meta = await saver.aget_session(thread)
        assert meta is not None and meta.user_id == "u2" and meta.message_count == 2
        await saver.aset_summary(thread, "short")
        assert await saver.aget_summary(thread) == "short"
        assert [s.session_id for s in await saver.alist_sessions("u2")] == [thread]
        for key in _thread_keys(client, thread):
            assert 0 < client.ttl(key) <= 600, key
        await saver.adelete_session(thread)
        assert _thread_keys(client, thread) == []


def test_redis_outage_fails_fast_and_the_thread_resumes_after_restart(tmp_path: Any) -> None:
    import os
    import signal
    import time

    from langgraph_tiered_memory import BackendUnavailableError
    from langgraph_tiered_memory.embedded.redis import EmbeddedRedis

    thread = f"t-{uuid.uuid4().hex}"
    cfg = {"configurable": {"thread_id": thread, "user_id": "u1"}}
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with EmbeddedRedis(persistence=True, data_dir=tmp_path / "redis", port=port) as server:
        saver_cm = RedisSessionSaver.from_conn_string(
            server.url, connection_args={"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
        )
        with saver_cm as saver:
            graph = _graph().compile(checkpointer=saver)
            graph.invoke({"messages": [("user", "first")]}, cfg)
            # A frozen server: the call times out instead of hanging.
            assert server.pid is not None
            os.kill(server.pid, signal.SIGSTOP)
            try:
                start = time.monotonic()
                with pytest.raises(BackendUnavailableError, match="unreachable"):
                    graph.invoke({"messages": [("user", "lost")]}, cfg)
                assert time.monotonic() - start < 15
            finally:
                os.kill(server.pid, signal.SIGCONT)
            # A dead server: the error comes at once and says what to do.
            server.stop()
            start = time.monotonic()
            with pytest.raises(BackendUnavailableError, match="resumes the thread"):
                graph.invoke({"messages": [("user", "lost too")]}, cfg)
            assert time.monotonic() - start < 15
            server.start()  # same port and data directory
            result = graph.invoke({"messages": [("user", "second")]}, cfg)
            texts = [m.content for m in result["messages"]]
            assert texts[:2] == ["first", "reply 1"]
            assert texts[-2:] == ["second", f"reply {len(texts) - 1}"]
            assert saver.get_session(thread).user_id == "u1"  # type: ignore[union-attr]


def test_session_records_are_batched_and_written_within_a_second(
    redis_url: str, client: redis.Redis
) -> None:
    import time

    thread, prefix = f"t-{uuid.uuid4().hex}", f"sess{uuid.uuid4().hex[:8]}"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver:
        graph = _graph().compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": thread}})
        key = saver.sessions.session_keys(thread)[0]
        deadline = time.time() + 5
        while not client.exists(key) and time.time() < deadline:
            time.sleep(0.05)
        # Written by the timer, without any read of the registry through the saver.
        assert client.hget(key, "message_count") == b"2"
        graph.invoke({"messages": [("user", "more")]}, {"configurable": {"thread_id": thread}})
    # Closing the saver wrote the pending record.
    assert client.hget(key, "message_count") == b"4"
    client.delete(*saver.sessions.session_keys(thread))


async def test_async_session_records_are_batched_and_flushed_on_exit(
    redis_url: str, client: redis.Redis
) -> None:
    import asyncio

    thread, prefix = f"t-{uuid.uuid4().hex}", f"sess{uuid.uuid4().hex[:8]}"
    cfg = {"configurable": {"thread_id": thread, "user_id": "u9"}}
    async with AsyncRedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver:
        graph = _graph().compile(checkpointer=saver)
        await graph.ainvoke({"messages": [("user", "hi")]}, cfg)
        key = saver.sessions.session_keys(thread)[0]
        for _ in range(100):  # the loop timer writes it within about a second
            if client.exists(key):
                break
            await asyncio.sleep(0.05)
        assert client.hget(key, "message_count") == b"2"
        await graph.ainvoke({"messages": [("user", "more")]}, cfg)
    assert client.hget(key, "message_count") == b"4"  # written when the saver closed
    assert client.zscore(f"{prefix}:user:u9", thread) is not None
    client.delete(*saver.sessions.session_keys(thread), f"{prefix}:user:u9")


def test_shallow_session_saver_keeps_the_latest_checkpoint_and_the_registry(
    redis_url: str, client: redis.Redis
) -> None:
    from langgraph_tiered_memory.checkpoint import ShallowRedisSessionSaver

    thread = f"t-{uuid.uuid4().hex}"
    cfg = {"configurable": {"thread_id": thread, "user_id": "u3"}}
    with ShallowRedisSessionSaver.from_conn_string(redis_url, ttl=900) as saver:
        graph = _graph().compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "one")]}, cfg)
        graph.invoke({"messages": [("user", "two")]}, cfg)
        assert len(list(saver.list({"configurable": {"thread_id": thread}}))) == 1
        meta = saver.get_session(thread)
        assert meta is not None and meta.user_id == "u3" and meta.message_count == 4
        for key in _thread_keys(client, thread):
            assert 0 < client.ttl(key) <= 900, key
        saver.delete_session(thread)
        assert _thread_keys(client, thread) == []


async def test_async_shallow_session_saver_records_sessions(redis_url: str) -> None:
    from langgraph_tiered_memory.checkpoint import AsyncShallowRedisSessionSaver

    thread = f"t-{uuid.uuid4().hex}"
    cfg = {"configurable": {"thread_id": thread, "user_id": "u4"}}
    async with AsyncShallowRedisSessionSaver.from_conn_string(redis_url) as saver:
        await _graph().compile(checkpointer=saver).ainvoke({"messages": [("user", "x")]}, cfg)
        meta = await saver.aget_session(thread)
        assert meta is not None and meta.message_count == 2
        await saver.adelete_session(thread)
        assert await saver.aget_session(thread) is None


async def test_async_saver_outage_fails_fast_and_resumes(tmp_path: Any) -> None:
    import socket
    import time

    from langgraph_tiered_memory import BackendUnavailableError
    from langgraph_tiered_memory.embedded.redis import EmbeddedRedis

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    thread = f"t-{uuid.uuid4().hex}"
    cfg = {"configurable": {"thread_id": thread, "user_id": "u1"}}
    with EmbeddedRedis(persistence=True, data_dir=tmp_path / "aredis", port=port) as server:
        async with AsyncRedisSessionSaver.from_conn_string(server.url) as saver:
            graph = _graph().compile(checkpointer=saver)
            await graph.ainvoke({"messages": [("user", "first")]}, cfg)
            await saver.aflush_sessions()
            server.stop()
            start = time.monotonic()
            with pytest.raises(BackendUnavailableError, match="unreachable"):
                await graph.ainvoke({"messages": [("user", "lost")]}, cfg)
            assert time.monotonic() - start < 15
            server.start()
            result = await graph.ainvoke({"messages": [("user", "second")]}, cfg)
            texts = [m.content for m in result["messages"]]
            assert texts[:2] == ["first", "reply 1"] and texts[-2] == "second"


def test_summary_is_written_to_the_session_and_survives_a_new_saver(redis_url: str) -> None:
    from langgraph_tiered_memory import create_summarizer_graph
    from langgraph_tiered_memory.agent.summarizer import SummaryState

    thread = f"t-{uuid.uuid4().hex}"
    cfg = {"configurable": {"thread_id": thread, "user_id": "u5"}}

    def build(saver: RedisSessionSaver) -> Any:
        def chat(state: SummaryState) -> dict[str, Any]:
            return {"messages": [AIMessage(content=f"Noted: {state['messages'][-1].content}")]}

        builder = StateGraph(SummaryState)
        builder.add_node("chat", chat)
        summarizer = create_summarizer_graph(max_messages=3, keep_last=2, sessions=saver)
        builder.add_node("summarize", summarizer.compile())
        builder.add_edge(START, "chat")
        builder.add_edge("chat", "summarize")
        return builder.compile(checkpointer=saver)

    with RedisSessionSaver.from_conn_string(redis_url) as saver:
        graph = build(saver)
        graph.invoke({"messages": [("user", "I moved to Porto last spring.")]}, cfg)
        graph.invoke({"messages": [("user", "My cat is called Miso.")]}, cfg)
        assert "Porto" in (saver.get_summary(thread) or "")
    # A new saver (another process after a restart) reads the same summary and state.
    with RedisSessionSaver.from_conn_string(redis_url) as again:
        assert "Porto" in (again.get_summary(thread) or "")
        state = build(again).get_state(cfg)
        assert "Porto" in state.values["summary"] and len(state.values["messages"]) == 2
        again.delete_session(thread)
