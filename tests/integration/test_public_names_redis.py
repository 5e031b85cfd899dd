"""Public names that need a real Redis: `SessionMeta` as the session APIs return it."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
import redis

from langgraph_tiered_memory.checkpoint.registry import SessionMeta, SessionRegistry
from tests.fakes import Clock


@pytest.fixture
def registry(redis_url: str) -> Iterator[tuple[SessionRegistry, Clock]]:
    client = redis.Redis.from_url(redis_url)
    prefix = "tmeta" + uuid.uuid4().hex[:10]
    clock = Clock(1_700_000_000.0)
    yield SessionRegistry(client, key_prefix=prefix, ttl=3600, clock=clock), clock
    stale = list(client.scan_iter(match=f"{prefix}:*"))
    if stale:
        client.delete(*stale)
    client.close()


def test_session_meta_fields_follow_the_session(
    registry: tuple[SessionRegistry, Clock],
) -> None:
    reg, clock = registry
    assert [f.name for f in dataclasses.fields(SessionMeta)] == [
        "session_id",
        "user_id",
        "created_at",
        "last_active",
        "message_count",
        "status",
        "participants",
    ]
    first = reg.touch("t1", user_id="ana", messages=2)
    assert first == SessionMeta(
        session_id="t1",
        user_id="ana",
        created_at=datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc),
        last_active=datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc),
        message_count=2,
        status="active",
    )
    clock.now += 90
    later = reg.touch("t1", user_id="ben", messages=3)  # the first user stays the owner
    assert later.user_id == "ana" and later.message_count == 5
    assert later.created_at == first.created_at
    assert later.last_active.timestamp() == clock.now
    assert reg.get_session("t1") == later
    assert reg.archive_session("t1") is True
    archived = reg.get_session("t1")
    assert archived is not None and archived.status == "archived"
    assert dataclasses.replace(archived, status="active") == later
    assert reg.list_sessions("ana") == [archived]
    with pytest.raises(dataclasses.FrozenInstanceError):
        archived.status = "active"  # type: ignore[misc]
    assert reg.get_session("unknown") is None
