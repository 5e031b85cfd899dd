"""The session TTL is converted once: keys the savers write themselves get it to the second.

Upstream's config holds the TTL in minutes; a TTL such as 123 s (2.05 min) does not survive
seconds -> minutes -> seconds in floating point (it comes back as 122). The keys this
package writes (copied threads, refreshed latest pointers, the registry) use the seconds
the caller gave.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.checkpoint._session import session_ttl
from langgraph_tiered_memory.errors import ConfigurationError

TTL = 123  # int(123 / 60 * 60) == 122
assert int(TTL / 60 * 60) != TTL


def _graph() -> StateGraph:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="ok")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    return g


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


def _assert_exact_ttl(client: redis.Redis, prefix: str, thread: str) -> None:
    keys = [k for k in client.scan_iter(match=f"{prefix}*:{thread}:*", count=1000)]
    assert keys
    for key in keys:
        # Written a moment ago with EXPIRE 123: more than 122 s left (122 s if rounded).
        assert TTL * 1000 - 1000 < client.pttl(key) <= TTL * 1000, key


def test_session_ttl_is_the_one_conversion() -> None:
    assert session_ttl(TTL) == (123.0, {"default_ttl": 2.05, "refresh_on_read": True})
    seconds, upstream = session_ttl({"default_ttl": 2.5})
    assert seconds == 150.0 and upstream == {"default_ttl": 2.5, "refresh_on_read": True}
    assert session_ttl(None) == (None, None)
    assert session_ttl({"default_ttl": None}) == (None, None)
    with pytest.raises(ConfigurationError, match="ttl"):
        session_ttl(0)


def test_copied_thread_and_pointers_keep_the_exact_ttl(redis_url: str, client: redis.Redis) -> None:
    tag = uuid.uuid4().hex[:8]
    prefix = f"ck{tag}"
    with RedisSessionSaver.from_conn_string(
        redis_url, ttl=TTL, checkpoint_prefix=prefix, checkpoint_write_prefix=f"{prefix}w"
    ) as saver:
        graph = _graph().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": f"a{tag}", "user_id": "u"}}
        graph.invoke({"messages": [("user", "hi")]}, config)
        graph.invoke({"messages": [("user", "again")]}, config)
        saver.copy_thread(f"a{tag}", f"b{tag}")
        _assert_exact_ttl(client, prefix, f"b{tag}")
        assert [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": f"b{tag}"}})]


async def test_async_pruned_pointer_keeps_the_exact_ttl(
    redis_url: str, client: redis.Redis
) -> None:
    tag = uuid.uuid4().hex[:8]
    prefix = f"ak{tag}"
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, ttl=TTL, checkpoint_prefix=prefix, checkpoint_write_prefix=f"{prefix}w"
    ) as saver:
        graph = _graph().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": f"a{tag}", "user_id": "u"}}
        await graph.ainvoke({"messages": [("user", "hi")]}, config)
        await saver.acopy_thread(f"a{tag}", f"b{tag}")
        await saver.aprune([f"b{tag}"], keep_last=1)
        _assert_exact_ttl(client, f"{prefix}_latest", f"b{tag}")
        _assert_exact_ttl(client, prefix, f"b{tag}")
