"""What `langgraph dev` needs of the session savers: REDIS_URL default, thread copies."""

from __future__ import annotations

import asyncio
import uuid
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


def test_sync_saver_defaults_to_redis_url(redis_url: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    thread = f"t-{uuid.uuid4().hex}"
    with RedisSessionSaver.from_conn_string(session_prefix=f"s{uuid.uuid4().hex[:8]}") as saver:
        graph = _graph().compile(checkpointer=saver)
        graph.invoke({"messages": "hi"}, {"configurable": {"thread_id": thread, "user_id": "u"}})
        assert saver.get_session(thread).message_count == 2  # type: ignore[union-attr]
        saver.delete_thread(thread)


def test_async_saver_defaults_to_redis_url(redis_url: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    thread = f"t-{uuid.uuid4().hex}"

    async def main() -> None:
        async with AsyncRedisSessionSaver.from_conn_string() as saver:
            graph = _graph().compile(checkpointer=saver)
            cfg = {"configurable": {"thread_id": thread, "user_id": "u"}}
            await graph.ainvoke({"messages": "hi"}, cfg)
            meta = await saver.aget_session(thread)
            assert meta is not None and meta.user_id == "u"
            await saver.adelete_thread(thread)

    asyncio.run(main())


def test_savers_without_any_url_name_redis_url(monkeypatch: Any) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        with RedisSessionSaver.from_conn_string():
            pass

    async def main() -> None:
        async with AsyncRedisSessionSaver.from_conn_string():
            pass

    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        asyncio.run(main())


def _copied(client: redis.Redis, prefix: str, source: str, target: str) -> None:
    assert client.ttl(f"{prefix}:session:{{{target}}}") > 0
    assert client.ttl(f"{prefix}:summary:{{{target}}}") > 0
    owned = {m.decode() for m in client.zrange(f"{prefix}:user:u1", 0, -1)}
    assert owned == {source, target}


def test_copy_thread_copies_the_registry_entry(redis_url: str) -> None:
    source, target = f"t-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    prefix = f"s{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)
    with RedisSessionSaver.from_conn_string(redis_url, ttl=3600, session_prefix=prefix) as saver:
        graph = _graph().compile(checkpointer=saver)
        graph.invoke({"messages": "hi"}, {"configurable": {"thread_id": source, "user_id": "u1"}})
        saver.set_summary(source, "User said hi.")
        saver.copy_thread(source, target)
        meta = saver.get_session(target)
        assert meta is not None and meta.user_id == "u1" and meta.message_count == 2
        assert saver.get_summary(target) == "User said hi."
        assert {s.session_id for s in saver.list_sessions("u1")} == {source, target}
        _copied(client, prefix, source, target)
        state = graph.get_state({"configurable": {"thread_id": target}})
        assert [m.content for m in state.values["messages"]] == ["hi", "reply 1"]
        saver.delete_thread(target)
        assert saver.get_session(target) is None and saver.get_session(source) is not None
        saver.delete_thread(source)
    client.close()


def test_async_copy_thread_copies_the_registry_entry(redis_url: str) -> None:
    source, target = f"t-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    prefix = f"s{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)

    async def main() -> None:
        async with AsyncRedisSessionSaver.from_conn_string(
            redis_url, ttl=3600, session_prefix=prefix
        ) as saver:
            graph = _graph().compile(checkpointer=saver)
            cfg = {"configurable": {"thread_id": source, "user_id": "u1"}}
            await graph.ainvoke({"messages": "hi"}, cfg)
            await saver.aset_summary(source, "User said hi.")
            await saver.acopy_thread(source, target)
            meta = await saver.aget_session(target)
            assert meta is not None and meta.user_id == "u1" and meta.message_count == 2
            assert await saver.aget_summary(target) == "User said hi."
            _copied(client, prefix, source, target)
            await saver.adelete_thread(target)
            await saver.adelete_thread(source)

    asyncio.run(main())
    client.close()


def test_copy_of_an_unknown_thread_writes_nothing(redis_url: str) -> None:
    prefix = f"s{uuid.uuid4().hex[:8]}"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver:
        saver.copy_thread("missing-thread", "other-thread")
        assert saver.get_session("other-thread") is None
        assert saver.sessions.copy_session("missing-thread", "other-thread") is False
