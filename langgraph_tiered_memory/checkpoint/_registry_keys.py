"""Key layout, Lua scripts and I/O-free helpers of the session registry (`registry`).

The scripts run on the session's own keys (one cluster slot); the helpers build their
arguments, read their replies and check the registry's inputs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph_tiered_memory.errors import ConfigurationError

STATUSES = ("active", "archived", "expired")
PARTICIPANT = "participant:"
"""Prefix of the session-hash fields that record a participant (value: when it joined)."""
_log = logging.getLogger("langgraph_tiered_memory.checkpoint")

UserIds = str | Sequence[str] | None
"""The user of a record: one id, or the ids seen in a batch, oldest first (or None)."""

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


def record_args(
    now: float,
    ttl: float | None,
    user_ids: UserIds,
    message_count: int | None = None,
    add: int | None = None,
) -> list[str]:
    return [
        repr(now),
        "" if ttl is None else str(int(ttl)),
        "" if message_count is None else str(int(message_count)),
        "" if add is None else str(int(add)),
        *_users(user_ids),
    ]


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


def queue_index(
    pipe: Any, user_key: str, sids: Sequence[str], now: float, ttl: float | None
) -> None:
    """Queue the owner's index update: score = this activity, expiry restarted."""
    pipe.zadd(user_key, dict.fromkeys(sids, now))
    if ttl is not None:
        # Ids of sessions idle for longer than twice the TTL are dropped for good.
        pipe.zremrangebyscore(user_key, "-inf", now - 2 * ttl)
        pipe.expire(user_key, int(2 * ttl))


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


MAX_SESSION_TTL_SECONDS = 100 * 365 * 86_400.0
"""Longest session TTL: 100 years, far within what Redis `EXPIRE` accepts."""


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


def check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {list(STATUSES)} or None, got {status!r}.")


def index_entries(entries: Any) -> list[tuple[str, float]]:
    """Session ids and scores of a ZREVRANGE ... WITHSCORES reply."""
    out: list[tuple[str, float]] = []
    for member, score in entries:
        out.append((member.decode() if isinstance(member, bytes) else str(member), float(score)))
    return out
