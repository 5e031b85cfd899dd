"""Session registry (metadata, user index, summary, TTL) on a real Redis."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
import redis.asyncio as aredis

from langgraph_tiered_memory.checkpoint.registry import (
    DEFAULT_SESSION_TTL,
    AsyncSessionRegistry,
    SessionRegistry,
)
from langgraph_tiered_memory.errors import ConfigurationError


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def prefix(client: redis.Redis) -> Iterator[str]:
    p = "treg" + uuid.uuid4().hex[:10]
    yield p
    keys = list(client.scan_iter(match=f"{p}:*"))
    if keys:
        client.delete(*keys)


def test_touch_creates_then_updates_and_refreshes_the_ttl(client: redis.Redis, prefix: str) -> None:
    clock = Clock()
    reg = SessionRegistry(client, key_prefix=prefix, ttl=600, clock=clock)
    first = reg.touch("t1", user_id="u1", messages=2)
    assert first.status == "active" and first.user_id == "u1" and first.message_count == 2
    clock.now += 30
    second = reg.touch("t1", user_id="someone-else", messages=3)
    assert second.user_id == "u1"  # the first owner stays
    assert second.message_count == 5 and second.created_at == first.created_at
    assert second.last_active.timestamp() == clock.now
    assert 590 < client.ttl(reg.session_keys("t1")[0]) <= 600
    assert reg.get_session("t1") == second
    assert reg.get_session("nope") is None


def test_list_archive_and_status_filter(client: redis.Redis, prefix: str) -> None:
    clock = Clock()
    reg = SessionRegistry(client, key_prefix=prefix, clock=clock)
    for sid in ("a", "b", "c"):
        reg.touch(sid, user_id="u1")
        clock.now += 10
    reg.touch("x", user_id="u2")
    assert [s.session_id for s in reg.list_sessions("u1")] == ["c", "b", "a"]
    assert [s.session_id for s in reg.list_sessions("u1", limit=2)] == ["c", "b"]
    assert reg.archive_session("b") is True
    assert reg.archive_session("missing") is False
    assert not client.exists(reg.session_keys("missing")[0])  # archive never creates keys
    assert [s.session_id for s in reg.list_sessions("u1", status="archived")] == ["b"]
    assert [s.session_id for s in reg.list_sessions("u1", status="active")] == ["c", "a"]
    with pytest.raises(ValueError, match="status"):
        reg.list_sessions("u1", status="gone")  # type: ignore[arg-type]


def test_summary_lives_and_dies_with_the_session(client: redis.Redis, prefix: str) -> None:
    reg = SessionRegistry(client, key_prefix=prefix, ttl=600)
    reg.touch("t1", user_id="u1")
    assert reg.get_summary("t1") is None
    reg.set_summary("t1", "User likes tea.")
    assert reg.get_summary("t1") == "User likes tea."
    assert 0 < client.ttl(reg.session_keys("t1")[1]) <= 600
    assert reg.delete_session("t1") is True
    assert all(not client.exists(k) for k in reg.session_keys("t1"))
    assert reg.list_sessions("u1") == []
    assert reg.delete_session("t1") is False


def test_expired_sessions_are_reported_as_expired(client: redis.Redis, prefix: str) -> None:
    reg = SessionRegistry(client, key_prefix=prefix, ttl=1)
    reg.touch("short", user_id="u1")
    reg.set_summary("short", "s")
    deadline = time.time() + 5
    while client.exists(*reg.session_keys("short")) and time.time() < deadline:
        time.sleep(0.1)
    assert not client.exists(*reg.session_keys("short"))
    (meta,) = reg.list_sessions("u1")
    assert meta.status == "expired" and meta.created_at is None
    assert reg.list_sessions("u1", status="active") == []


def test_ttl_none_never_expires_and_bad_ttl_is_refused(client: redis.Redis, prefix: str) -> None:
    reg = SessionRegistry(client, key_prefix=prefix, ttl=None)
    reg.touch("t", user_id="u")
    reg.set_summary("t", "x")
    assert client.ttl(reg.session_keys("t")[0]) == -1
    assert client.ttl(reg.session_keys("t")[1]) == -1
    assert SessionRegistry(client).ttl == DEFAULT_SESSION_TTL == 7 * 24 * 3600
    for bad in (0, -5, "1h", True):
        with pytest.raises(ConfigurationError, match="ttl"):
            SessionRegistry(client, ttl=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="session_id"):
        reg.touch("")


@pytest.fixture
async def aclient(redis_url: str) -> AsyncIterator[aredis.Redis]:
    c = aredis.Redis.from_url(redis_url)
    yield c
    await c.aclose()


async def test_async_registry_matches_the_sync_one(
    aclient: aredis.Redis, client: redis.Redis, prefix: str
) -> None:
    areg = AsyncSessionRegistry(aclient, key_prefix=prefix, ttl=600)
    reg = SessionRegistry(client, key_prefix=prefix, ttl=600)
    meta = await areg.touch("t1", user_id="u1", messages=4)
    assert reg.get_session("t1") == meta  # same keys, same format
    await areg.set_summary("t1", "hello")
    assert reg.get_summary("t1") == "hello" and await areg.get_summary("t1") == "hello"
    assert await areg.archive_session("t1") is True
    assert [s.status for s in await areg.list_sessions("u1")] == ["archived"]
    assert await areg.delete_session("t1") is True
    assert await areg.get_session("t1") is None
    assert not client.exists(*areg.session_keys("t1"))


def test_modules_check_names_what_is_missing_and_how_to_get_it(redis_url: str) -> None:
    import socket
    import subprocess

    from langgraph_tiered_memory.checkpoint.modules import (
        RedisModulesMissingError,
        check_modules,
    )
    from langgraph_tiered_memory.embedded.redis import find_binaries

    with redis.Redis.from_url(redis_url) as ok:
        check_modules(ok)  # the test server has both modules
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    plain = subprocess.Popen(
        [str(find_binaries().server), "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        deadline = time.time() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        with pytest.raises(RedisModulesMissingError) as info:
            check_modules(client)
        message = str(info.value)
        for needle in ("RediSearch", "RedisJSON", "Redis 8", "Redis Stack", "embedded"):
            assert needle in message
        client.close()
        # The savers check in setup(), before upstream's first FT/JSON command fails.
        from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver

        with pytest.raises(RedisModulesMissingError, match="RediSearch"):
            with RedisSessionSaver.from_conn_string(f"redis://127.0.0.1:{port}"):
                pass

        async def open_async() -> None:
            url = f"redis://127.0.0.1:{port}"
            async with AsyncRedisSessionSaver.from_conn_string(url):
                pass

        import asyncio

        with pytest.raises(RedisModulesMissingError, match="RedisJSON"):
            asyncio.run(open_async())
    finally:
        plain.terminate()
        plain.wait(timeout=10)
