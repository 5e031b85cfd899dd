"""Session registry: what the short-term tier knows about each thread (session).

One Redis hash per session holds its `SessionMeta` (user, creation and last-activity
times, message count, status), one string its running summary, and one sorted set
per user the user's session ids scored by last activity. The hash and the summary
carry the session TTL (refreshed on every touch and read) so they never outlive the
checkpoints; the user index keeps ids only and reports a session whose hash is gone
as `"expired"`.

Key layout, for a key prefix P (hash tags keep one session's keys in one cluster slot):

- `P:session:{<session id>}`: hash of the session's metadata;
- `P:summary:{<session id>}`: the running summary (JSON);
- `P:user:<user id>`: sorted set of session ids, score = last activity (epoch seconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

import redis
import redis.asyncio as aredis

from langgraph_tiered_memory.checkpoint._outage import translate_outages
from langgraph_tiered_memory.errors import ConfigurationError

__all__ = [
    "SessionMeta",
    "SessionStatus",
    "SessionRegistry",
    "AsyncSessionRegistry",
    "DEFAULT_SESSION_TTL",
]

SessionStatus = Literal["active", "archived", "expired"]
DEFAULT_SESSION_TTL = 7 * 24 * 3600.0
"""Seconds a session lives after its last activity (7 days)."""
_STATUSES = ("active", "archived", "expired")

# KEYS: session hash, summary. ARGV: now, ttl seconds ("" = none), user id ("" = none),
# message count ("" = unknown). Returns 1 when the session was created.
_RECORD = """
local created = redis.call('HSETNX', KEYS[1], 'created_at', ARGV[1])
if created == 1 then
    redis.call('HSET', KEYS[1], 'status', 'active', 'message_count', 0)
end
redis.call('HSET', KEYS[1], 'last_active', ARGV[1])
if ARGV[4] ~= '' then
    redis.call('HSET', KEYS[1], 'message_count', ARGV[4])
end
if ARGV[3] ~= '' then
    redis.call('HSETNX', KEYS[1], 'user_id', ARGV[3])
end
if ARGV[2] ~= '' then
    redis.call('EXPIRE', KEYS[1], ARGV[2])
    redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return created
"""


def _record_args(
    now: float, ttl: float | None, user_id: str | None, message_count: int | None
) -> list[str]:
    return [
        repr(now),
        "" if ttl is None else str(int(ttl)),
        user_id or "",
        "" if message_count is None else str(int(message_count)),
    ]


# Set the status only on a live session: a plain HSET would recreate an expired hash
# without its TTL.
_ARCHIVE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
    redis.call('HSET', KEYS[1], 'status', 'archived')
    return 1
end
return 0
"""


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """What the registry knows about one session (a LangGraph thread).

    For an `"expired"` session only `session_id`, `user_id` and `last_active` are
    known; the other fields are None.
    """

    session_id: str
    user_id: str | None
    created_at: datetime | None
    last_active: datetime
    message_count: int | None
    status: SessionStatus


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def _check_ttl(ttl: float | None) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise ConfigurationError(
            f"Session ttl must be a positive number of seconds or None (no expiry), got {ttl!r}."
        )
    return float(ttl)


def _check_id(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}.")
    return value


class _Keys:
    def __init__(self, prefix: str) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ConfigurationError(f"key_prefix must be a non-empty string, got {prefix!r}.")
        self.prefix = prefix

    def session(self, sid: str) -> str:
        return f"{self.prefix}:session:{{{sid}}}"

    def summary(self, sid: str) -> str:
        return f"{self.prefix}:summary:{{{sid}}}"

    def user(self, uid: str) -> str:
        return f"{self.prefix}:user:{uid}"


def _decode(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in raw.items()
    }


def _meta(sid: str, fields: Mapping[str, str]) -> SessionMeta:
    return SessionMeta(
        session_id=sid,
        user_id=fields.get("user_id") or None,
        created_at=_dt(float(fields["created_at"])),
        last_active=_dt(float(fields["last_active"])),
        message_count=int(fields.get("message_count", 0)),
        status=fields.get("status", "active"),  # type: ignore[arg-type]
    )


def _check_status(status: str | None) -> None:
    if status is not None and status not in _STATUSES:
        raise ValueError(f"status must be one of {list(_STATUSES)} or None, got {status!r}.")


@translate_outages
class SessionRegistry:
    """Session metadata and running summaries in Redis (synchronous).

    Args:
        client: A `redis.Redis` client (any Redis; no modules needed).
        key_prefix: Prefix of the registry's keys.
        ttl: Seconds a session lives after its last activity; None keeps it forever.
        clock: Current time in epoch seconds (for tests).
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        key_prefix: str = "tm_session",
        ttl: float | None = DEFAULT_SESSION_TTL,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.keys = _Keys(key_prefix)
        self.ttl = _check_ttl(ttl)
        self.clock = clock or time.time
        self._record: Any = None

    def touch(
        self, session_id: str, *, user_id: str | None = None, messages: int = 0
    ) -> SessionMeta:
        """Record activity: create the session if new, add `messages`, refresh the TTL.

        Args:
            session_id: The thread id.
            user_id: The session's user (kept from the first touch that names one).
            messages: Messages added by this activity.
        """
        sid = _check_id("session_id", session_id)
        now = self.clock()
        key = self.keys.session(sid)
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(key, "created_at", repr(now))
        pipe.hsetnx(key, "status", "active")
        if user_id:
            pipe.hsetnx(key, "user_id", user_id)
        pipe.hset(key, "last_active", repr(now))
        pipe.hincrby(key, "message_count", int(messages))
        if self.ttl is not None:
            pipe.expire(key, int(self.ttl))
            pipe.expire(self.keys.summary(sid), int(self.ttl))
        pipe.hgetall(key)
        fields = _decode(pipe.execute()[-1])
        owner = fields.get("user_id")
        if owner:
            self._index(owner, sid, now)
        return _meta(sid, fields)

    def record(
        self, session_id: str, *, user_id: str | None = None, message_count: int | None = None
    ) -> None:
        """Record activity in one round trip (what the savers call on every checkpoint).

        One server-side script updates the session hash and the TTLs; the user index
        is written only when the session is created.

        Args:
            session_id: The thread id.
            user_id: The session's user (the first one recorded stays the owner).
            message_count: The session's current number of messages, if known.
        """
        self.record_many({session_id: (user_id, message_count)})

    def record_many(self, records: Mapping[str, tuple[str | None, int | None]]) -> None:
        """`record` several sessions in one round trip.

        Args:
            records: Session id -> (user id, message count).
        """
        if not records:
            return
        if self._record is None:
            self._record = self.client.register_script(_RECORD)
        now = self.clock()
        pipe = self.client.pipeline(transaction=False)
        items = list(records.items())
        for sid, (user_id, count) in items:
            sid = _check_id("session_id", sid)
            self._record(
                keys=[self.keys.session(sid), self.keys.summary(sid)],
                args=_record_args(now, self.ttl, user_id, count),
                client=pipe,
            )
        created = pipe.execute()
        for (sid, (user_id, _)), new in zip(items, created, strict=True):
            if new and user_id:
                self._index(user_id, sid, now)

    def refresh(self, session_id: str) -> None:
        """Restart the TTL of the session's registry keys (on reads)."""
        if self.ttl is None:
            return
        pipe = self.client.pipeline(transaction=False)
        for key in self.session_keys(session_id):
            pipe.expire(key, int(self.ttl), xx=True)
        pipe.execute()

    def _index(self, user_id: str, sid: str, now: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        _queue_index(pipe, self.keys.user(user_id), sid, now, self.ttl)
        pipe.execute()

    def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is unknown or has expired."""
        sid = _check_id("session_id", session_id)
        fields = _decode(self.client.hgetall(self.keys.session(sid)))
        return _meta(sid, fields) if fields else None

    def list_sessions(
        self, user_id: str, status: SessionStatus | None = None, limit: int = 50
    ) -> list[SessionMeta]:
        """A user's sessions, most recently active first.

        Args:
            user_id: The user.
            status: Only sessions with this status (`"expired"`: those whose keys
                have timed out).
            limit: Most sessions to return.
        """
        uid = _check_id("user_id", user_id)
        _check_status(status)
        if limit <= 0:
            return []
        entries = self.client.zrevrange(self.keys.user(uid), 0, -1, withscores=True)
        pipe = self.client.pipeline(transaction=False)
        ids = _ids(entries)
        for sid, _ in ids:
            pipe.hgetall(self.keys.session(sid))
        return _select(uid, ids, pipe.execute() if ids else [], status, limit)

    def archive_session(self, session_id: str) -> bool:
        """Mark a session archived (its TTL keeps running). False if it is unknown."""
        sid = _check_id("session_id", session_id)
        return bool(self.client.eval(_ARCHIVE, 1, self.keys.session(sid)))

    def delete_session(self, session_id: str) -> bool:
        """Remove the session's metadata, summary and user-index entry.

        Returns:
            Whether anything of the session existed.
        """
        sid = _check_id("session_id", session_id)
        fields = _decode(self.client.hgetall(self.keys.session(sid)))
        removed = self.client.delete(self.keys.session(sid), self.keys.summary(sid))
        if fields.get("user_id"):
            removed += self.client.zrem(self.keys.user(fields["user_id"]), sid)
        return bool(removed)

    def session_keys(self, session_id: str) -> list[str]:
        """The registry keys of one session (metadata hash and summary)."""
        sid = _check_id("session_id", session_id)
        return [self.keys.session(sid), self.keys.summary(sid)]

    def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        raw = self.client.get(self.keys.summary(_check_id("session_id", session_id)))
        return None if raw is None else str(json.loads(raw)["summary"])

    def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary under the session TTL."""
        sid = _check_id("session_id", session_id)
        if not isinstance(summary, str):
            raise ValueError(f"summary must be a string, got {type(summary).__name__}.")
        payload = json.dumps({"summary": summary, "updated_at": self.clock()})
        ex = int(self.ttl) if self.ttl is not None else None
        self.client.set(self.keys.summary(sid), payload, ex=ex)


@translate_outages
class AsyncSessionRegistry:
    """The asyncio twin of `SessionRegistry` (same keys, same behaviour).

    Args:
        client: A `redis.asyncio.Redis` client.
        key_prefix: Prefix of the registry's keys.
        ttl: Seconds a session lives after its last activity; None keeps it forever.
        clock: Current time in epoch seconds (for tests).
    """

    def __init__(
        self,
        client: aredis.Redis,
        *,
        key_prefix: str = "tm_session",
        ttl: float | None = DEFAULT_SESSION_TTL,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.keys = _Keys(key_prefix)
        self.ttl = _check_ttl(ttl)
        self.clock = clock or time.time
        self._record: Any = None

    async def touch(
        self, session_id: str, *, user_id: str | None = None, messages: int = 0
    ) -> SessionMeta:
        """Record activity (see `SessionRegistry.touch`).

        Args:
            session_id: The thread id.
            user_id: The session's user (kept from the first touch that names one).
            messages: Messages added by this activity.
        """
        sid = _check_id("session_id", session_id)
        now = self.clock()
        key = self.keys.session(sid)
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(key, "created_at", repr(now))
        pipe.hsetnx(key, "status", "active")
        if user_id:
            pipe.hsetnx(key, "user_id", user_id)
        pipe.hset(key, "last_active", repr(now))
        pipe.hincrby(key, "message_count", int(messages))
        if self.ttl is not None:
            pipe.expire(key, int(self.ttl))
            pipe.expire(self.keys.summary(sid), int(self.ttl))
        pipe.hgetall(key)
        fields = _decode((await pipe.execute())[-1])
        owner = fields.get("user_id")
        if owner:
            await self._index(owner, sid, now)
        return _meta(sid, fields)

    async def _index(self, user_id: str, sid: str, now: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        _queue_index(pipe, self.keys.user(user_id), sid, now, self.ttl)
        await pipe.execute()

    async def record(
        self, session_id: str, *, user_id: str | None = None, message_count: int | None = None
    ) -> None:
        """Record activity in one round trip (see `SessionRegistry.record`).

        Args:
            session_id: The thread id.
            user_id: The session's user (the first one recorded stays the owner).
            message_count: The session's current number of messages, if known.
        """
        await self.record_many({session_id: (user_id, message_count)})

    async def record_many(self, records: Mapping[str, tuple[str | None, int | None]]) -> None:
        """`record` several sessions in one round trip.

        Args:
            records: Session id -> (user id, message count).
        """
        if not records:
            return
        if self._record is None:
            self._record = self.client.register_script(_RECORD)
        now = self.clock()
        pipe = self.client.pipeline(transaction=False)
        items = list(records.items())
        for sid, (user_id, count) in items:
            sid = _check_id("session_id", sid)
            await self._record(
                keys=[self.keys.session(sid), self.keys.summary(sid)],
                args=_record_args(now, self.ttl, user_id, count),
                client=pipe,
            )
        created = await pipe.execute()
        for (sid, (user_id, _)), new in zip(items, created, strict=True):
            if new and user_id:
                await self._index(user_id, sid, now)

    async def refresh(self, session_id: str) -> None:
        """Restart the TTL of the session's registry keys (on reads)."""
        if self.ttl is None:
            return
        pipe = self.client.pipeline(transaction=False)
        for key in self.session_keys(session_id):
            pipe.expire(key, int(self.ttl), xx=True)
        await pipe.execute()

    async def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is unknown or has expired."""
        sid = _check_id("session_id", session_id)
        fields = _decode(await self.client.hgetall(self.keys.session(sid)))
        return _meta(sid, fields) if fields else None

    async def list_sessions(
        self, user_id: str, status: SessionStatus | None = None, limit: int = 50
    ) -> list[SessionMeta]:
        """A user's sessions, most recently active first (see `SessionRegistry`).

        Args:
            user_id: The user.
            status: Only sessions with this status.
            limit: Most sessions to return.
        """
        uid = _check_id("user_id", user_id)
        _check_status(status)
        if limit <= 0:
            return []
        entries = await self.client.zrevrange(self.keys.user(uid), 0, -1, withscores=True)
        ids = _ids(entries)
        pipe = self.client.pipeline(transaction=False)
        for sid, _ in ids:
            pipe.hgetall(self.keys.session(sid))
        return _select(uid, ids, await pipe.execute() if ids else [], status, limit)

    async def archive_session(self, session_id: str) -> bool:
        """Mark a session archived. False if it is unknown."""
        sid = _check_id("session_id", session_id)
        return bool(await self.client.eval(_ARCHIVE, 1, self.keys.session(sid)))

    async def delete_session(self, session_id: str) -> bool:
        """Remove the session's metadata, summary and user-index entry."""
        sid = _check_id("session_id", session_id)
        fields = _decode(await self.client.hgetall(self.keys.session(sid)))
        removed = await self.client.delete(self.keys.session(sid), self.keys.summary(sid))
        if fields.get("user_id"):
            removed += await self.client.zrem(self.keys.user(fields["user_id"]), sid)
        return bool(removed)

    def session_keys(self, session_id: str) -> list[str]:
        """The registry keys of one session (metadata hash and summary)."""
        sid = _check_id("session_id", session_id)
        return [self.keys.session(sid), self.keys.summary(sid)]

    async def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        raw = await self.client.get(self.keys.summary(_check_id("session_id", session_id)))
        return None if raw is None else str(json.loads(raw)["summary"])

    async def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary under the session TTL."""
        sid = _check_id("session_id", session_id)
        if not isinstance(summary, str):
            raise ValueError(f"summary must be a string, got {type(summary).__name__}.")
        payload = json.dumps({"summary": summary, "updated_at": self.clock()})
        ex = int(self.ttl) if self.ttl is not None else None
        await self.client.set(self.keys.summary(sid), payload, ex=ex)


def _queue_index(pipe: Any, user_key: str, sid: str, now: float, ttl: float | None) -> None:
    """Queue the user-index update of a session on `pipe`."""
    pipe.zadd(user_key, {sid: now})
    if ttl is not None:
        # Ids of sessions idle for longer than twice the TTL are dropped for good.
        pipe.zremrangebyscore(user_key, "-inf", now - 2 * ttl)
        pipe.expire(user_key, int(2 * ttl))


def _ids(entries: Any) -> list[tuple[str, float]]:
    """Session ids and scores of a ZREVRANGE ... WITHSCORES reply."""
    out: list[tuple[str, float]] = []
    for member, score in entries:
        out.append((member.decode() if isinstance(member, bytes) else str(member), float(score)))
    return out


def _select(
    uid: str,
    ids: list[tuple[str, float]],
    found: list[Any],
    status: str | None,
    limit: int,
) -> list[SessionMeta]:
    """Sessions of the user index, newest activity first.

    The index's score is when the session was indexed; the hash holds its last activity.
    """
    out: list[SessionMeta] = []
    for (sid, indexed), raw in zip(ids, found, strict=True):
        fields = _decode(raw)
        if fields and fields.get("user_id") not in (None, "", uid):
            continue  # indexed under a user who is not its owner
        if fields:
            meta = _meta(sid, fields)
        else:
            meta = SessionMeta(sid, uid, None, _dt(indexed), None, "expired")
        if status is None or meta.status == status:
            out.append(meta)
    out.sort(key=lambda m: m.last_active, reverse=True)
    return out[:limit]
