"""The session layer every session saver (full or shallow, sync or async) adds upstream.

- TTL: one option in seconds (or a timedelta), converted once by `session_ttl` into
  the seconds this package uses and upstream's ``ttl`` config (minutes);
- the session registry: each root-namespace checkpoint is recorded (batched by a
  `Recorder`), reads refresh the session's TTL, deleting a thread deletes its entry;
- `setup()` checks the server's modules first (`RedisModulesMissingError`);
- client defaults: a client created from a URL gets bounded timeouts, and the server
  it talks to is remembered (credentials masked) for the outage errors that
  `translate_outages` raises on the concrete savers;
- redaction (`redactor=`): the running summary is redacted before it is stored in the
  registry. The other registry fields are identifiers, times and counts: the session
  and user ids key the registry and its ownership, so they are kept as given (two users
  whose ids both redact to `[email]` would otherwise share sessions). Checkpoints are
  stored as the graph wrote them: redact personal data before it enters the state.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import redis.asyncio as aredis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from langgraph_tiered_memory._redis_client import (
    DEFAULT_REDIS_TIMEOUT,
    aclient_options,
    bounded_async_class,
    check_redis_timeout,
    client_options,
)
from langgraph_tiered_memory.checkpoint._base import Query, Request
from langgraph_tiered_memory.checkpoint._recorder import AsyncRecorder, Recorder
from langgraph_tiered_memory.checkpoint.modules import acheck_modules, check_modules
from langgraph_tiered_memory.checkpoint.registry import (
    DEFAULT_SESSION_TTL,
    AsyncSessionRegistry,
    SessionMeta,
    SessionRegistry,
    SessionStatus,
    check_ttl,
)
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy._redact import mask_url
from langgraph_tiered_memory.privacy.redaction import Redactor, redact_text, resolve_redactor

if TYPE_CHECKING:
    from langgraph.checkpoint.redis import RedisSaver
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver

    _AsyncBase = AsyncRedisSaver
    _SyncBase = RedisSaver
else:
    _AsyncBase = object
    _SyncBase = object

_DEFAULT = object()
_SECONDS_PER_MINUTE = 60.0
# `list` is shadowed inside the savers, whose `list` method is the checkpointer API.
_SessionList = list[SessionMeta]


def session_ttl(ttl: Any) -> tuple[float | None, dict[str, Any] | None]:
    """The ``ttl`` option in seconds and as upstream's config: the one TTL unit conversion.

    Args:
        ttl: Seconds, a timedelta, upstream's own config (``{"default_ttl": minutes}``),
            None (no expiry), or the default (7 days).

    Returns:
        The seconds a session lives after its last activity (None: forever), used by
        the registry and every key this package writes, and the ``ttl`` config of the
        upstream saver (its ``default_ttl`` is in minutes; None: no expiry).

    Raises:
        ConfigurationError: ``ttl`` is not a positive duration.
    """
    seconds: Any = ttl
    if ttl is _DEFAULT:
        seconds = DEFAULT_SESSION_TTL
    elif isinstance(ttl, timedelta):
        seconds = ttl.total_seconds()
    elif isinstance(ttl, Mapping):
        minutes = ttl.get("default_ttl")
        seconds = None if minutes is None else float(minutes) * _SECONDS_PER_MINUTE
    if seconds is None:
        return None, None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ConfigurationError(
            f"ttl must be a positive number of seconds, a timedelta, or None (no expiry),"
            f" got {seconds!r}."
        )
    seconds = check_ttl(seconds)  # at most 100 years (no infinity)
    assert seconds is not None
    upstream = {"default_ttl": seconds / _SECONDS_PER_MINUTE, "refresh_on_read": True}
    return float(seconds), upstream


class _Flavour(NamedTuple):
    """What a session layer builds on: its registry, recorder and client defaults."""

    registry: Callable[..., Any]
    recorder: Callable[..., Any]
    client_options: Callable[[str, float], dict[str, Any]]
    queue_connections: Callable[[Any, float | None], None] = lambda client, timeout: None


def _queue_async_connections(client: Any, timeout: float | None) -> None:
    """Make the async client made from a URL wait for a free connection.

    redis-py's asyncio pool fails at once with `MaxConnectionsError` when all its
    connections are busy (100 by default), so many concurrent graph runs could fail a
    checkpoint write. The same connections, in a pool that queues callers for up to the
    call bound, replace it before any connection is opened.
    """
    old = client.connection_pool
    # `from_url` keeps the URL's own class for rediss:// and unix://: bound it here too.
    cls = (
        old.connection_class
        if timeout is None
        else bounded_async_class(old.connection_class, timeout)
    )
    client.connection_pool = aredis.BlockingConnectionPool(
        connection_class=cls,
        max_connections=old.max_connections,
        timeout=timeout,
        **old.connection_kwargs,
    )


class _SessionInit:
    """The constructor both session layers share: TTL defaults, timeouts, registry.

    Args:
        redis_url: Redis URL (a server with RediSearch and RedisJSON); defaults to
            `REDIS_URL`.
        redis_client: An existing client instead of `redis_url` (its own timeouts apply).
        connection_args: Options of the client created from `redis_url`; they override
            the bounded defaults.
        ttl: Seconds (or a timedelta) a session lives after its last activity; None
            keeps it forever. Default 7 days.
        session_prefix: Prefix of the session registry's keys.
        clock: Current time in epoch seconds (for tests).
        redis_timeout: The most one call waits on Redis, in seconds (default 15), with
            a client created from `redis_url`: a frozen or unreachable server raises
            `BackendUnavailableError` within this bound. Timeouts are never retried.
        redactor: Redact personal data from the session summary before it is stored
            (`set_summary`): None (default) stores it as given, True uses
            `PatternRedactor()`, or any `Redactor`. Session and user ids are kept;
            checkpoints are not redacted.
        **upstream: Options of the upstream saver (`checkpoint_prefix`, ...).
    """

    _flavour: _Flavour
    _recorder: Recorder | AsyncRecorder

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        redis_client: Any = None,
        connection_args: dict[str, Any] | None = None,
        ttl: Any = _DEFAULT,
        session_prefix: str = "tm_session",
        clock: Any = None,
        redis_timeout: float = DEFAULT_REDIS_TIMEOUT,
        redactor: Any = None,
        **upstream: Any,
    ) -> None:
        self.redactor: Redactor | None = resolve_redactor(redactor)
        seconds, upstream_ttl = session_ttl(ttl)
        self._tm_ttl: float | None = seconds
        timeout = check_redis_timeout(redis_timeout)
        self._tm_timeout: float | None = timeout
        self._tm_where: str | None = None
        self._tm_owns_client = redis_client is None
        if redis_client is None:
            redis_url = redis_url or os.environ.get("REDIS_URL")
            if not redis_url:
                raise ConfigurationError(
                    "The session saver needs Redis (with RediSearch and RedisJSON): pass"
                    " redis_url= or redis_client=, or set REDIS_URL."
                )
            self._tm_where = mask_url(redis_url)
            defaults = self._flavour.client_options(redis_url, timeout)
            connection_args = {**defaults, **(connection_args or {})}
        else:
            self._tm_timeout = None  # the caller's client keeps its own timeouts
        cast(Any, super()).__init__(  # the upstream saver, next in the MRO
            redis_url=redis_url,
            redis_client=redis_client,
            connection_args=connection_args,
            ttl=upstream_ttl,
            **upstream,
        )
        if self._tm_owns_client:
            self._flavour.queue_connections(self._tm_client, timeout)
        self.sessions = self._flavour.registry(
            self._tm_client, key_prefix=session_prefix, ttl=seconds, clock=clock
        )
        self._recorder = self._flavour.recorder(self.sessions)

    @property
    def _tm_client(self) -> Any:
        """The saver's Redis client (upstream keeps it in `_redis`, with no public accessor)."""
        return cast(Any, self)._redis

    def _record_put(self, config: RunnableConfig, checkpoint: Any, metadata: Any) -> None:
        """Queue the session record of a stored checkpoint (root namespace only)."""
        conf = config.get("configurable", {}) or {}
        thread_id = conf.get("thread_id")
        if thread_id is None or conf.get("checkpoint_ns", ""):
            return
        user = conf.get("user_id") or (metadata or {}).get("user_id")
        messages = (checkpoint.get("channel_values") or {}).get("messages")
        count = len(messages) if isinstance(messages, (list, tuple)) else None
        self._recorder.submit(str(thread_id), str(user) if user else None, count)

    def _redacted(self, summary: str) -> str:
        """The summary as the registry may store it (redacted when a redactor is set)."""
        if self.redactor is None or not isinstance(summary, str):
            return summary  # the registry refuses a non-str summary itself
        return redact_text(summary, self.redactor).text

    def _call(self, request: Request) -> Any:
        """The client call that serves a plan's request (for an async saver, an awaitable)."""
        if isinstance(request, Query) and request.index == "checkpoints":
            return self.checkpoints_index.search(request.query)  # type: ignore[attr-defined]
        if isinstance(request, Query):
            return self.checkpoint_writes_index.search(request.query)  # type: ignore[attr-defined]
        return request.queue(self._tm_client.pipeline(transaction=False)).execute()

    @staticmethod
    def _read_session(config: RunnableConfig, found: CheckpointTuple | None) -> str | None:
        """The session whose TTL a read refreshes: the thread read, if it had a checkpoint."""
        thread_id = (config.get("configurable") or {}).get("thread_id")
        return str(thread_id) if found is not None and thread_id is not None else None


class _AsyncSessionLayer(_SessionInit, _AsyncBase):
    """TTL defaults, session registry, module check and outage errors (asyncio)."""

    _flavour = _Flavour(
        AsyncSessionRegistry, AsyncRecorder, aclient_options, _queue_async_connections
    )
    sessions: AsyncSessionRegistry
    _recorder: AsyncRecorder

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, redis_url: str | None = None, **config: Any
    ) -> AsyncIterator[Any]:
        """Open a saver on `redis_url`, run `asetup()`, and close its client on exit.

        `redis_url` defaults to the `REDIS_URL` environment variable (a
        `ConfigurationError` when neither is given). ``config`` takes any constructor
        option (``ttl``, ``session_prefix``, ...).
        """
        async with cls(redis_url=redis_url, **config) as saver:
            await saver.asetup()
            yield saver

    async def __aexit__(self, *exc: Any) -> None:
        """Write pending session records, then close the client the saver owns."""
        try:
            await self._recorder.close()
        finally:
            await super().__aexit__(*exc)

    async def aflush_sessions(self) -> None:
        """Write pending session records now (they are batched, at most once a second)."""
        await self._recorder.flush()

    async def asetup(self) -> None:
        """Check the server's modules, then create the search indexes (idempotent)."""
        await acheck_modules(self._tm_client)
        await super().asetup()

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Any,
        metadata: Any,
        new_versions: Any,
        stream_mode: str = "values",
    ) -> RunnableConfig:
        """Store a checkpoint and record the session's activity in the registry."""
        extra = {} if stream_mode == "values" else {"stream_mode": stream_mode}
        stored = await super().aput(config, checkpoint, metadata, new_versions, **extra)
        self._record_put(config, checkpoint, metadata)
        return stored

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Read a checkpoint; refreshes the session's TTL (checkpoints and registry)."""
        found = await super().aget_tuple(config)
        if (session := self._read_session(config, found)) is not None:
            await self.sessions.refresh(session)
        return found

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes, and its registry entry and summary."""
        await self._recorder.flush()
        await super().adelete_thread(thread_id)
        await self.sessions.delete_session(str(thread_id))

    async def aget_session(self, session_id: str) -> SessionMeta | None:
        """The session's `SessionMeta`, or None when unknown or expired."""
        await self._recorder.flush()
        return await self.sessions.get_session(session_id)

    async def alist_sessions(
        self, user_id: str, status: SessionStatus | None = None, limit: int = 50
    ) -> list[SessionMeta]:
        """A user's sessions, newest activity first (see `SessionRegistry.list_sessions`)."""
        await self._recorder.flush()
        return await self.sessions.list_sessions(user_id, status=status, limit=limit)

    async def aarchive_session(self, session_id: str) -> bool:
        """Mark a session archived; False when it is unknown."""
        await self._recorder.flush()
        return await self.sessions.archive_session(session_id)

    async def adelete_session(self, session_id: str) -> None:
        """Delete everything of a session: checkpoints, writes, registry entry, summary."""
        await self.adelete_thread(session_id)

    async def aget_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        return await self.sessions.get_summary(session_id)

    async def aset_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary (under the session TTL), redacted."""
        await self.sessions.set_summary(session_id, self._redacted(summary))


class _SyncSessionLayer(_SessionInit, _SyncBase):
    """TTL defaults, session registry, module check and outage errors (sync)."""

    _flavour = _Flavour(SessionRegistry, Recorder, client_options)
    sessions: SessionRegistry
    _recorder: Recorder

    @classmethod
    @contextmanager
    def from_conn_string(cls, redis_url: str | None = None, **config: Any) -> Iterator[Any]:
        """Open a saver on `redis_url`, set it up, and close its client on exit.

        Args:
            redis_url: Redis URL (a server with RediSearch and RedisJSON); defaults to
                `REDIS_URL` (a `ConfigurationError` when neither is given).
            **config: Any constructor option (`ttl`, `session_prefix`, ...).
        """
        saver = cls(redis_url=redis_url, **config)
        try:
            saver.setup()
            yield saver
        finally:
            try:
                saver.close()
            finally:
                if saver._tm_owns_client:
                    saver._tm_client.close()

    def close(self) -> None:
        """Write the pending session records (see `flush_sessions`)."""
        self._recorder.close()

    def flush_sessions(self) -> None:
        """Write pending session records now.

        Checkpoints are recorded in the session registry at most once a second (the
        latest activity of each session, in one round trip plus one for the owners'
        user indexes and redis-py's script check), by a timer, so the registry adds no
        round trip to a graph's super-steps. This saver's own reads flush first.
        """
        self._recorder.flush()

    def setup(self) -> None:
        """Check the server's modules, then create the search indexes (idempotent)."""
        check_modules(self._tm_client)
        super().setup()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Any,
        metadata: Any,
        new_versions: Any,
    ) -> RunnableConfig:
        """Store a checkpoint and record the session's activity in the registry."""
        stored = super().put(config, checkpoint, metadata, new_versions)
        self._record_put(config, checkpoint, metadata)
        return stored

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Read a checkpoint; refreshes the session's TTL (checkpoints and registry)."""
        found = super().get_tuple(config)
        if (session := self._read_session(config, found)) is not None:
            self.sessions.refresh(session)
        return found

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes, and its registry entry and summary."""
        self._recorder.flush()
        super().delete_thread(thread_id)
        self.sessions.delete_session(str(thread_id))

    def get_session(self, session_id: str) -> SessionMeta | None:
        """The session's `SessionMeta`, or None when unknown or expired."""
        self._recorder.flush()
        return self.sessions.get_session(session_id)

    def list_sessions(
        self, user_id: str, status: SessionStatus | None = None, limit: int = 50
    ) -> _SessionList:
        """A user's sessions, most recently active first.

        Args:
            user_id: The user.
            status: Only sessions with this status.
            limit: Most sessions to return.
        """
        self._recorder.flush()
        return self.sessions.list_sessions(user_id, status=status, limit=limit)

    def archive_session(self, session_id: str) -> bool:
        """Mark a session archived; False when it is unknown."""
        self._recorder.flush()
        return self.sessions.archive_session(session_id)

    def delete_session(self, session_id: str) -> None:
        """Delete everything of a session: checkpoints, writes, registry entry, summary."""
        self.delete_thread(session_id)

    def get_summary(self, session_id: str) -> str | None:
        """The session's running summary, or None."""
        return self.sessions.get_summary(session_id)

    def set_summary(self, session_id: str, summary: str) -> None:
        """Store the session's running summary (under the session TTL), redacted."""
        self.sessions.set_summary(session_id, self._redacted(summary))
