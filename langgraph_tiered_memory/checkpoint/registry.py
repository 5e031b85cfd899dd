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
import logging
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

import redis
import redis.asyncio as aredis

from langgraph_tiered_memory._drive import adrive, drive
from langgraph_tiered_memory.checkpoint._base import Batch, _cmd
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
MAX_SESSION_TTL_SECONDS = 100 * 365 * 86_400.0
"""Longest session TTL: 100 years, far within what Redis `EXPIRE` accepts."""
STATUSES = ("active", "archived", "expired")
PARTICIPANT = "participant:"
"""Prefix of the session-hash fields that record a participant (value: when it joined)."""
_log = logging.getLogger("langgraph_tiered_memory.checkpoint")

UserIds = str | Sequence[str] | None
"""The user of a record: one id, or the ids seen in a batch, oldest first (or None)."""
T = TypeVar("T")
_Plan = Generator[Any, Any, T]
"""A registry plan (see `_drive`): yields a `_cmd` (one client call) or a `Batch` (one
pipeline, whose `_RECORD` commands run `RECORD_SCRIPT`), is sent the reply."""
_RECORD = "record"

# KEYS: session hash, summary. ARGV: now, ttl seconds ("" = none), message count
# ("" = unknown), messages to add ("" = none), then the user ids seen, oldest first.
# The first user id ever recorded owns the session; any other becomes a participant.
# Returns {created (0/1), owner ("" = none), the users who just became participants...}.
RECORD_SCRIPT = """
local created = redis.call('HSETNX', KEYS[1], 'created_at', ARGV[1])
if created == 1 then
    redis.call('HSET', KEYS[1], 'status', 'active', 'message_count', 0)
end
redis.call('HSET', KEYS[1], 'last_active', ARGV[1])
if ARGV[3] ~= '' then
    redis.call('HSET', KEYS[1], 'message_count', ARGV[3])
end
if ARGV[4] ~= '' then
    redis.call('HINCRBY', KEYS[1], 'message_count', ARGV[4])
end
local reply = {created, ''}
for i = 5, #ARGV do
    if redis.call('HSETNX', KEYS[1], 'user_id', ARGV[i]) == 0
        and redis.call('HGET', KEYS[1], 'user_id') ~= ARGV[i]
        and redis.call('HSETNX', KEYS[1], 'participant:' .. ARGV[i], ARGV[1]) == 1 then
        table.insert(reply, ARGV[i])
    end
end
reply[2] = redis.call('HGET', KEYS[1], 'user_id') or ''
if ARGV[2] ~= '' then
    redis.call('EXPIRE', KEYS[1], ARGV[2])
    redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return reply
"""


def _users(user_ids: UserIds) -> list[str]:
    """The distinct non-empty user ids of a record, oldest first."""
    seen = [user_ids] if isinstance(user_ids, str) else list(user_ids or ())
    return [u for i, u in enumerate(seen) if u and u not in seen[:i]]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def record_owners(sids: Sequence[str], replies: Sequence[Any]) -> dict[str, list[str]]:
    """Owner -> the owner's sessions among `replies` of `RECORD_SCRIPT`; logs new participants."""
    owners: dict[str, list[str]] = {}
    for sid, reply in zip(sids, replies, strict=True):
        owner = _text(reply[1])
        for joined in reply[2:]:
            _log.warning(
                "Session %r belongs to user %r; user %r also wrote to it and is recorded as"
                " a participant (the owner does not change).",
                sid,
                owner,
                _text(joined),
            )
        if owner:
            owners.setdefault(owner, []).append(sid)
    return owners


# Set the status only on a live session: a plain HSET would recreate an expired hash
# without its TTL.
ARCHIVE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
    redis.call('HSET', KEYS[1], 'status', 'archived')
    return 1
end
return 0
"""


def utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def check_ttl(ttl: Any) -> float | None:
    """A session TTL in seconds (None: no expiry), or `ConfigurationError` naming the fix."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise ConfigurationError(
            f"Session ttl must be a positive number of seconds or None (no expiry), got {ttl!r}."
        )
    if not ttl <= MAX_SESSION_TTL_SECONDS:  # also refuses infinity
        raise ConfigurationError(
            f"Session ttl {ttl!r} is longer than the maximum, {MAX_SESSION_TTL_SECONDS:,.0f}"
            " seconds (100 years): pass None for sessions that never expire."
        )
    return float(ttl)


def check_id(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}.")
    return value


class Keys:
    """The registry's key names under one prefix (layout in `registry`)."""

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


def decode_hash(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in raw.items()
    }


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
    """What both registries share: configuration, key names and the plans of their methods."""

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

    def _script(self) -> Any:
        if self._record is None:
            self._record = self.client.register_script(RECORD_SCRIPT)
        return self._record

    def _record_cmd(
        self, sid: str, now: float, users: UserIds, count: int | None = None, add: int | None = None
    ) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        """Run `RECORD_SCRIPT` on the session (ARGV as the script's comment says)."""
        args = [
            repr(now),
            "" if self.ttl is None else str(int(self.ttl)),
            "" if count is None else str(int(count)),
            "" if add is None else str(int(add)),
            *_users(users),
        ]
        return _cmd(_RECORD, keys=self.session_keys(sid), args=args)

    def _touch_plan(
        self, session_id: str, user_id: str | None, messages: int
    ) -> _Plan[SessionMeta]:
        sid = check_id("session_id", session_id)
        now = self.clock()
        reply, raw = yield Batch(
            (
                self._record_cmd(sid, now, user_id, add=messages),
                _cmd("hgetall", self.keys.session(sid)),
            )
        )
        yield from self._index_plan(record_owners([sid], [reply]), now)
        return _meta(sid, decode_hash(raw))

    def _record_many_plan(self, records: Mapping[str, tuple[UserIds, int | None]]) -> _Plan[None]:
        if not records:
            return
        now, sids = self.clock(), [check_id("session_id", sid) for sid in records]
        replies = yield Batch(
            tuple(
                self._record_cmd(sid, now, user_ids, count)
                for sid, (user_ids, count) in zip(sids, records.values(), strict=True)
            )
        )
        yield from self._index_plan(record_owners(sids, replies), now)

    def _index_plan(self, owners: Mapping[str, Sequence[str]], now: float) -> _Plan[None]:
        """Score the owners' sessions in their index with this activity; restart its expiry."""
        commands = []
        for owner, sids in owners.items():
            key = self.keys.user(owner)
            commands.append(_cmd("zadd", key, dict.fromkeys(sids, now)))
            if self.ttl is not None:
                # Ids of sessions idle for longer than twice the TTL are dropped for good.
                commands.append(_cmd("zremrangebyscore", key, "-inf", now - 2 * self.ttl))
                commands.append(_cmd("expire", key, int(2 * self.ttl)))
        if commands:
            yield Batch(tuple(commands))

    def _refresh_plan(self, session_id: str) -> _Plan[None]:
        if self.ttl is not None:  # else sessions never expire
            keys = self.session_keys(session_id)
            yield Batch(tuple(_cmd("expire", key, int(self.ttl), xx=True) for key in keys))

    def _get_session_plan(self, session_id: str) -> _Plan[SessionMeta | None]:
        sid = check_id("session_id", session_id)
        fields = decode_hash((yield _cmd("hgetall", self.keys.session(sid))))
        return _meta(sid, fields) if fields else None

    def _list_sessions_plan(
        self, user_id: str, status: SessionStatus | None, limit: int
    ) -> _Plan[list[SessionMeta]]:
        uid = check_id("user_id", user_id)
        if status is not None and status not in STATUSES:
            raise ValueError(f"status must be one of {list(STATUSES)} or None, got {status!r}.")
        if limit <= 0:
            return []
        entries = yield _cmd("zrevrange", self.keys.user(uid), 0, -1, withscores=True)
        ids = [(_text(member), float(score)) for member, score in entries]
        found = []
        if ids:
            found = yield Batch(tuple(_cmd("hgetall", self.keys.session(sid)) for sid, _ in ids))
        return _select(uid, ids, found, status, limit)

    def _archive_plan(self, session_id: str) -> _Plan[bool]:
        sid = check_id("session_id", session_id)
        return bool((yield _cmd("eval", ARCHIVE_SCRIPT, 1, self.keys.session(sid))))

    def _delete_session_plan(self, session_id: str) -> _Plan[bool]:
        sid = check_id("session_id", session_id)
        fields = decode_hash((yield _cmd("hgetall", self.keys.session(sid))))
        removed = yield _cmd("delete", self.keys.session(sid), self.keys.summary(sid))
        if fields.get("user_id"):
            removed += yield _cmd("zrem", self.keys.user(fields["user_id"]), sid)
        return bool(removed)

    def _copy_session_plan(self, source_id: str, target_id: str) -> _Plan[bool]:
        src, dst = check_id("session_id", source_id), check_id("session_id", target_id)
        if src == dst:
            return False
        raw, summary = yield Batch(
            (_cmd("hgetall", self.keys.session(src)), _cmd("get", self.keys.summary(src)))
        )
        fields = decode_hash(raw)
        if not fields:
            return False
        now = self.clock()
        copied = {**fields, "created_at": repr(now), "last_active": repr(now)}
        commands = [
            _cmd("delete", self.keys.session(dst)),
            _cmd("hset", self.keys.session(dst), mapping=copied),
        ]
        if summary is not None:
            commands.append(_cmd("set", self.keys.summary(dst), summary))
        if self.ttl is not None:
            commands += [_cmd("expire", key, int(self.ttl)) for key in self.session_keys(dst)]
        yield Batch(tuple(commands))
        if fields.get("user_id"):
            yield from self._index_plan({fields["user_id"]: [dst]}, now)
        return True

    def _get_summary_plan(self, session_id: str) -> _Plan[str | None]:
        raw = yield _cmd("get", self.keys.summary(check_id("session_id", session_id)))
        return None if raw is None else str(json.loads(raw)["summary"])

    def _set_summary_plan(self, session_id: str, summary: str) -> _Plan[None]:
        sid = check_id("session_id", session_id)
        if not isinstance(summary, str):
            raise ValueError(f"summary must be a string, got {type(summary).__name__}.")
        payload = json.dumps({"summary": summary, "updated_at": self.clock()})
        ex = int(self.ttl) if self.ttl is not None else None
        yield _cmd("set", self.keys.summary(sid), payload, ex=ex)


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

    def _serve(self, request: Any) -> Any:
        if not isinstance(request, Batch):
            name, args, kwargs = request
            return getattr(self.client, name)(*args, **kwargs)
        pipe = self._pipeline()
        for name, args, kwargs in request.commands:
            if name == _RECORD:
                self._script()(client=pipe, **kwargs)
            else:
                getattr(pipe, name)(*args, **kwargs)
        return pipe.execute()

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
        return drive(self._touch_plan(session_id, user_id, messages), self._serve)

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
        drive(self._record_many_plan(records), self._serve)

    def refresh(self, session_id: str) -> None:
        """Restart the TTL of the session's registry keys (on reads)."""
        drive(self._refresh_plan(session_id), self._serve)

    def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is unknown or has expired."""
        return drive(self._get_session_plan(session_id), self._serve)

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
        return drive(self._list_sessions_plan(user_id, status, limit), self._serve)

    def archive_session(self, session_id: str) -> bool:
        """Mark a session archived (its TTL keeps running). False if it is unknown."""
        return drive(self._archive_plan(session_id), self._serve)

    def delete_session(self, session_id: str) -> bool:
        """Remove the session's metadata, summary and user-index entry.

        Returns:
            Whether anything of the session existed.
        """
        return drive(self._delete_session_plan(session_id), self._serve)

    def copy_session(self, source_id: str, target_id: str) -> bool:
        """Make ``target_id`` a copy of a session (what `copy_thread` does to the registry).

        The copy has the source's owner, participants, message count, status and
        summary, is created and active now, carries the session TTL and is listed for
        its owner. False (nothing written) when the source is unknown or expired.
        """
        return drive(self._copy_session_plan(source_id, target_id), self._serve)

    def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        return drive(self._get_summary_plan(session_id), self._serve)

    def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary under the session TTL."""
        drive(self._set_summary_plan(session_id, summary), self._serve)


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

    async def _serve(self, request: Any) -> Any:
        if not isinstance(request, Batch):
            name, args, kwargs = request
            return await getattr(self.client, name)(*args, **kwargs)
        pipe = self._pipeline()
        for name, args, kwargs in request.commands:
            if name == _RECORD:  # queued on `pipe` in order: awaited now
                await self._script()(client=pipe, **kwargs)
            else:
                getattr(pipe, name)(*args, **kwargs)
        return await pipe.execute()

    async def touch(
        self, session_id: str, *, user_id: str | None = None, messages: int = 0
    ) -> SessionMeta:
        """Record activity (see `SessionRegistry.touch`: same arguments and rules)."""
        return await adrive(self._touch_plan(session_id, user_id, messages), self._serve)

    async def record(
        self, session_id: str, *, user_id: UserIds = None, message_count: int | None = None
    ) -> None:
        """Record activity (see `SessionRegistry.record`: ownership, participants, index)."""
        await self.record_many({session_id: (user_id, message_count)})

    async def record_many(self, records: Mapping[str, tuple[UserIds, int | None]]) -> None:
        """`record` several sessions (see `SessionRegistry.record_many`)."""
        await adrive(self._record_many_plan(records), self._serve)

    async def refresh(self, session_id: str) -> None:
        """Restart the TTL of the session's registry keys (on reads)."""
        await adrive(self._refresh_plan(session_id), self._serve)

    async def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's metadata, or None when it is unknown or has expired."""
        return await adrive(self._get_session_plan(session_id), self._serve)

    async def list_sessions(
        self, user_id: str, status: SessionStatus | None = None, limit: int = 50
    ) -> list[SessionMeta]:
        """A user's sessions, most recently active first (see `SessionRegistry`).

        Args:
            user_id: The user.
            status: Only sessions with this status.
            limit: Most sessions to return.
        """
        return await adrive(self._list_sessions_plan(user_id, status, limit), self._serve)

    async def archive_session(self, session_id: str) -> bool:
        """Mark a session archived. False if it is unknown."""
        return await adrive(self._archive_plan(session_id), self._serve)

    async def delete_session(self, session_id: str) -> bool:
        """Remove the session's metadata, summary and user-index entry."""
        return await adrive(self._delete_session_plan(session_id), self._serve)

    async def copy_session(self, source_id: str, target_id: str) -> bool:
        """Make ``target_id`` a copy of a session (see `SessionRegistry.copy_session`)."""
        return await adrive(self._copy_session_plan(source_id, target_id), self._serve)

    async def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        return await adrive(self._get_summary_plan(session_id), self._serve)

    async def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary under the session TTL."""
        await adrive(self._set_summary_plan(session_id, summary), self._serve)


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
