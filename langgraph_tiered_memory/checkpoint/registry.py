"""Session registry: what the short-term tier knows about each thread (session).

One Redis hash per session holds its `SessionMeta` (owner, participants, creation and
last-activity times, message count, status), one string its running summary, and one
sorted set per user the ids of the sessions the user owns, scored by last activity.
The hash and the summary carry the session TTL (refreshed on every record and read) so
they never outlive the checkpoints; the user index keeps ids only and reports a session
whose hash is gone as `"expired"`.

Ownership: the first `user_id` recorded for a session owns it, for good. A later record
with another `user_id` never changes the owner: that user is added to the session's
participants (once; a warning is logged on `langgraph_tiered_memory.checkpoint`).
`list_sessions(user)` lists the sessions the user owns, not those they took part in.

User index: every record of a session with a known owner (whether or not the record
names a user) sets the session's score in the owner's index to the time of the record
and restarts the index key's expiry (2 x TTL). Entries idle for more than 2 x TTL are
pruned; a session in use therefore stays listed however old it is, and a session whose
owner is first named on a later turn is listed from that turn on.

Key layout, for a key prefix P (hash tags keep one session's keys in one cluster slot):

- `P:session:{<session id>}`: hash of the session's metadata; field `participant:<user>`
  holds when that user first wrote to the session;
- `P:summary:{<session id>}`: the running summary (JSON);
- `P:user:<user id>`: sorted set of session ids, score = last activity (epoch seconds).

The index lives in another cluster slot than the session, so a record takes two round
trips: one script per session (owner, participants, counts, TTLs; it returns the owner),
then the index writes of the owners, one pipeline per batch. Before the first, redis-py
checks in a round trip of its own that the script is loaded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import redis
import redis.asyncio as aredis

from langgraph_tiered_memory.checkpoint._outage import translate_outages
from langgraph_tiered_memory.checkpoint._registry_keys import (
    ARCHIVE_SCRIPT,
    PARTICIPANT,
    RECORD_SCRIPT,
    Keys,
    UserIds,
    check_id,
    check_status,
    check_ttl,
    decode_hash,
    index_entries,
    queue_index,
    record_args,
    record_owners,
    utc,
)

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


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """What the registry knows about one session (a LangGraph thread).

    `user_id` is the session's owner: the first user recorded for it, never replaced.
    `participants` are the other users who wrote to it, in the order they first did;
    the session is listed for its owner only. For an `"expired"` session only
    `session_id`, `user_id` and `last_active` are known; the other fields are None
    (`participants` is empty).
    """

    session_id: str
    user_id: str | None
    created_at: datetime | None
    last_active: datetime
    message_count: int | None
    status: SessionStatus
    participants: tuple[str, ...] = ()


def _meta(sid: str, fields: Mapping[str, str]) -> SessionMeta:
    joined = sorted(
        (float(since), name[len(PARTICIPANT) :])
        for name, since in fields.items()
        if name.startswith(PARTICIPANT)
    )
    return SessionMeta(
        session_id=sid,
        user_id=fields.get("user_id") or None,
        created_at=utc(float(fields["created_at"])),
        last_active=utc(float(fields["last_active"])),
        message_count=int(fields.get("message_count", 0)),
        status=fields.get("status", "active"),  # type: ignore[arg-type]
        participants=tuple(user for _, user in joined),
    )


class _Registry:
    """What both registries share: configuration, key names and the record script."""

    def __init__(
        self,
        client: Any,
        *,
        key_prefix: str = "tm_session",
        ttl: float | None = DEFAULT_SESSION_TTL,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.keys = Keys(key_prefix)
        self.ttl = check_ttl(ttl)
        self.clock = clock or time.time
        self._record: Any = None

    def session_keys(self, session_id: str) -> list[str]:
        """The registry keys of one session (metadata hash and summary)."""
        sid = check_id("session_id", session_id)
        return [self.keys.session(sid), self.keys.summary(sid)]

    def _pipeline(self) -> Any:
        return self.client.pipeline(transaction=False)

    def _checked_ids(self, records: Mapping[str, Any]) -> list[str]:
        return [check_id("session_id", sid) for sid in records]

    def _index_pipeline(self, owners: Mapping[str, Sequence[str]], now: float) -> Any:
        """The owners' user-index updates for a record at ``now`` (None: no owner)."""
        if not owners:
            return None
        pipe = self._pipeline()
        for owner, sids in owners.items():
            queue_index(pipe, self.keys.user(owner), sids, now, self.ttl)
        return pipe

    def _refresh_pipeline(self, session_id: str) -> Any:
        """Restarts of the session keys' TTL (None: sessions never expire)."""
        if self.ttl is None:
            return None
        pipe = self._pipeline()
        for key in self.session_keys(session_id):
            pipe.expire(key, int(self.ttl), xx=True)
        return pipe

    def _copy_pipeline(
        self, target: str, fields: Mapping[str, str], summary: Any, now: float
    ) -> Any:
        """The writes making ``target`` a copy of a session: metadata, summary, TTLs."""
        pipe = self._pipeline()
        copied = {**fields, "created_at": repr(now), "last_active": repr(now)}
        pipe.delete(self.keys.session(target))
        pipe.hset(self.keys.session(target), mapping=copied)
        if summary is not None:
            pipe.set(self.keys.summary(target), summary)
        if self.ttl is not None:
            for key in self.session_keys(target):
                pipe.expire(key, int(self.ttl))
        return pipe

    def _queue_record(
        self,
        pipe: Any,
        sid: str,
        now: float,
        user_ids: UserIds,
        count: int | None = None,
        add: int | None = None,
    ) -> Any:
        """Queue the record script of one session on ``pipe`` (awaitable if async)."""
        if self._record is None:
            self._record = self.client.register_script(RECORD_SCRIPT)
        args = record_args(now, self.ttl, user_ids, count, add)
        return self._record(keys=self.session_keys(sid), args=args, client=pipe)


@translate_outages
class SessionRegistry(_Registry):
    """Session metadata and running summaries in Redis (synchronous).

    Args:
        client: A `redis.Redis` client (any Redis; no modules needed).
        key_prefix: Prefix of the registry's keys.
        ttl: Seconds a session lives after its last activity; None keeps it forever.
        clock: Current time in epoch seconds (for tests).
    """

    client: redis.Redis

    def touch(
        self, session_id: str, *, user_id: str | None = None, messages: int = 0
    ) -> SessionMeta:
        """Record activity: create the session if new, add `messages`, refresh the TTL.

        Ownership and the user index follow the same rules as `record`.

        Args:
            session_id: The thread id.
            user_id: A user of the session: its owner if it has none yet, else a
                participant when it differs from the owner.
            messages: Messages added by this activity.
        """
        sid = check_id("session_id", session_id)
        now = self.clock()
        pipe = self.client.pipeline(transaction=False)
        self._queue_record(pipe, sid, now, user_id, add=messages)
        pipe.hgetall(self.keys.session(sid))
        reply, raw = pipe.execute()
        self._index(record_owners([sid], [reply]), now)
        return _meta(sid, decode_hash(raw))

    def record(
        self, session_id: str, *, user_id: UserIds = None, message_count: int | None = None
    ) -> None:
        """Record activity (what the savers do, batched, for every checkpoint).

        The first user id ever recorded owns the session and is never replaced; another
        one is added to the session's participants (a warning is logged the first time).
        When the session has an owner, its entry in the owner's index is scored with
        this activity and the index's expiry restarts, whether or not this record names
        the user.

        Args:
            session_id: The thread id.
            user_id: The session's user, or the users seen since the last record,
                oldest first.
            message_count: The session's current number of messages, if known.
        """
        self.record_many({session_id: (user_id, message_count)})

    def record_many(self, records: Mapping[str, tuple[UserIds, int | None]]) -> None:
        """`record` several sessions: one round trip, plus one for the owners' indexes.

        redis-py checks first, in a round trip of its own, that the script is loaded.

        Args:
            records: Session id -> (user id or ids, message count).
        """
        if not records:
            return
        now, sids, pipe = self.clock(), self._checked_ids(records), self._pipeline()
        for sid, (user_ids, count) in zip(sids, records.values(), strict=True):
            self._queue_record(pipe, sid, now, user_ids, count)
        self._index(record_owners(sids, pipe.execute()), now)

    def _index(self, owners: Mapping[str, Sequence[str]], now: float) -> None:
        if (pipe := self._index_pipeline(owners, now)) is not None:
            pipe.execute()

    def refresh(self, session_id: str) -> None:
        """Restart the TTL of the session's registry keys (on reads)."""
        if (pipe := self._refresh_pipeline(session_id)) is not None:
            pipe.execute()

    def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is unknown or has expired."""
        sid = check_id("session_id", session_id)
        fields = decode_hash(self.client.hgetall(self.keys.session(sid)))
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
        uid = check_id("user_id", user_id)
        check_status(status)
        if limit <= 0:
            return []
        entries = self.client.zrevrange(self.keys.user(uid), 0, -1, withscores=True)
        pipe = self.client.pipeline(transaction=False)
        ids = index_entries(entries)
        for sid, _ in ids:
            pipe.hgetall(self.keys.session(sid))
        return _select(uid, ids, pipe.execute() if ids else [], status, limit)

    def archive_session(self, session_id: str) -> bool:
        """Mark a session archived (its TTL keeps running). False if it is unknown."""
        sid = check_id("session_id", session_id)
        return bool(self.client.eval(ARCHIVE_SCRIPT, 1, self.keys.session(sid)))

    def delete_session(self, session_id: str) -> bool:
        """Remove the session's metadata, summary and user-index entry.

        Returns:
            Whether anything of the session existed.
        """
        sid = check_id("session_id", session_id)
        fields = decode_hash(self.client.hgetall(self.keys.session(sid)))
        removed = self.client.delete(self.keys.session(sid), self.keys.summary(sid))
        if fields.get("user_id"):
            removed += self.client.zrem(self.keys.user(fields["user_id"]), sid)
        return bool(removed)

    def copy_session(self, source_id: str, target_id: str) -> bool:
        """Make ``target_id`` a copy of a session (what `copy_thread` does to the registry).

        The copy has the source's owner, participants, message count, status and
        summary, is created and active now, carries the session TTL and is listed for
        its owner. False (nothing written) when the source is unknown or expired.
        """
        src, dst = check_id("session_id", source_id), check_id("session_id", target_id)
        if src == dst:
            return False
        pipe = self._pipeline()
        pipe.hgetall(self.keys.session(src))
        pipe.get(self.keys.summary(src))
        raw, summary = pipe.execute()
        fields = decode_hash(raw)
        if not fields:
            return False
        now = self.clock()
        self._copy_pipeline(dst, fields, summary, now).execute()
        if fields.get("user_id"):
            self._index({fields["user_id"]: [dst]}, now)
        return True

    def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        raw = self.client.get(self.keys.summary(check_id("session_id", session_id)))
        return None if raw is None else str(json.loads(raw)["summary"])

    def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary under the session TTL."""
        sid = check_id("session_id", session_id)
        if not isinstance(summary, str):
            raise ValueError(f"summary must be a string, got {type(summary).__name__}.")
        payload = json.dumps({"summary": summary, "updated_at": self.clock()})
        ex = int(self.ttl) if self.ttl is not None else None
        self.client.set(self.keys.summary(sid), payload, ex=ex)


@translate_outages
class AsyncSessionRegistry(_Registry):
    """The asyncio twin of `SessionRegistry` (same keys, same behaviour).

    Args:
        client: A `redis.asyncio.Redis` client.
        key_prefix: Prefix of the registry's keys.
        ttl: Seconds a session lives after its last activity; None keeps it forever.
        clock: Current time in epoch seconds (for tests).
    """

    client: aredis.Redis

    async def touch(
        self, session_id: str, *, user_id: str | None = None, messages: int = 0
    ) -> SessionMeta:
        """Record activity (see `SessionRegistry.touch`: same arguments and rules)."""
        sid = check_id("session_id", session_id)
        now = self.clock()
        pipe = self.client.pipeline(transaction=False)
        await self._queue_record(pipe, sid, now, user_id, add=messages)
        pipe.hgetall(self.keys.session(sid))
        reply, raw = await pipe.execute()
        await self._index(record_owners([sid], [reply]), now)
        return _meta(sid, decode_hash(raw))

    async def record(
        self, session_id: str, *, user_id: UserIds = None, message_count: int | None = None
    ) -> None:
        """Record activity (see `SessionRegistry.record`: ownership, participants, index)."""
        await self.record_many({session_id: (user_id, message_count)})

    async def record_many(self, records: Mapping[str, tuple[UserIds, int | None]]) -> None:
        """`record` several sessions (see `SessionRegistry.record_many`)."""
        if not records:
            return
        now, sids, pipe = self.clock(), self._checked_ids(records), self._pipeline()
        for sid, (user_ids, count) in zip(sids, records.values(), strict=True):
            await self._queue_record(pipe, sid, now, user_ids, count)
        await self._index(record_owners(sids, await pipe.execute()), now)

    async def _index(self, owners: Mapping[str, Sequence[str]], now: float) -> None:
        if (pipe := self._index_pipeline(owners, now)) is not None:
            await pipe.execute()

    async def refresh(self, session_id: str) -> None:
        """Restart the TTL of the session's registry keys (on reads)."""
        if (pipe := self._refresh_pipeline(session_id)) is not None:
            await pipe.execute()

    async def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is unknown or has expired."""
        sid = check_id("session_id", session_id)
        fields = decode_hash(await self.client.hgetall(self.keys.session(sid)))
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
        uid = check_id("user_id", user_id)
        check_status(status)
        if limit <= 0:
            return []
        entries = await self.client.zrevrange(self.keys.user(uid), 0, -1, withscores=True)
        ids = index_entries(entries)
        pipe = self.client.pipeline(transaction=False)
        for sid, _ in ids:
            pipe.hgetall(self.keys.session(sid))
        return _select(uid, ids, await pipe.execute() if ids else [], status, limit)

    async def archive_session(self, session_id: str) -> bool:
        """Mark a session archived. False if it is unknown."""
        sid = check_id("session_id", session_id)
        return bool(await self.client.eval(ARCHIVE_SCRIPT, 1, self.keys.session(sid)))

    async def delete_session(self, session_id: str) -> bool:
        """Remove the session's metadata, summary and user-index entry."""
        sid = check_id("session_id", session_id)
        fields = decode_hash(await self.client.hgetall(self.keys.session(sid)))
        removed = await self.client.delete(self.keys.session(sid), self.keys.summary(sid))
        if fields.get("user_id"):
            removed += await self.client.zrem(self.keys.user(fields["user_id"]), sid)
        return bool(removed)

    async def copy_session(self, source_id: str, target_id: str) -> bool:
        """Make ``target_id`` a copy of a session (see `SessionRegistry.copy_session`)."""
        src, dst = check_id("session_id", source_id), check_id("session_id", target_id)
        if src == dst:
            return False
        pipe = self._pipeline()
        pipe.hgetall(self.keys.session(src))
        pipe.get(self.keys.summary(src))
        raw, summary = await pipe.execute()
        fields = decode_hash(raw)
        if not fields:
            return False
        now = self.clock()
        await self._copy_pipeline(dst, fields, summary, now).execute()
        if fields.get("user_id"):
            await self._index({fields["user_id"]: [dst]}, now)
        return True

    async def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        raw = await self.client.get(self.keys.summary(check_id("session_id", session_id)))
        return None if raw is None else str(json.loads(raw)["summary"])

    async def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary under the session TTL."""
        sid = check_id("session_id", session_id)
        if not isinstance(summary, str):
            raise ValueError(f"summary must be a string, got {type(summary).__name__}.")
        payload = json.dumps({"summary": summary, "updated_at": self.clock()})
        ex = int(self.ttl) if self.ttl is not None else None
        await self.client.set(self.keys.summary(sid), payload, ex=ex)


def _select(
    uid: str,
    ids: list[tuple[str, float]],
    found: list[Any],
    status: str | None,
    limit: int,
) -> list[SessionMeta]:
    """The owner's sessions among those of the user index, newest activity first.

    The index's score is the last activity recorded; an entry whose hash is gone is
    reported as `"expired"` with that time.
    """
    out: list[SessionMeta] = []
    for (sid, indexed), raw in zip(ids, found, strict=True):
        fields = decode_hash(raw)
        if fields and fields.get("user_id") not in (None, "", uid):
            continue  # indexed under a user who is not its owner
        if fields:
            meta = _meta(sid, fields)
        else:
            meta = SessionMeta(sid, uid, None, utc(indexed), None, "expired")
        if status is None or meta.status == status:
            out.append(meta)
    out.sort(key=lambda m: m.last_active, reverse=True)
    return out[:limit]
