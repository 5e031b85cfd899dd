"""Redis checkpointers for short-term (session) memory that follow LangGraph's checkpointer spec.

`AsyncRedisSessionSaver` and `RedisSessionSaver` extend the savers of
``langgraph-checkpoint-redis`` (0.5.x) and keep its storage layout, so data written by
either is readable by the other. They change what the upstream savers get wrong or
leave out, as checked by ``langgraph-checkpoint-conformance``:

* ``list``/``alist``: an explicit ``checkpoint_ns=""`` means the root namespace only
  (upstream lists every namespace); ``before`` compares checkpoint ids (upstream parses
  them as ULIDs, which LangGraph's uuid6 ids are not, and silently ignores the cursor);
  ``filter`` accepts any metadata key (upstream only ``source``, ``step``, ``run_id``
  and ``thread_id``); ``limit`` is applied after filtering (upstream truncates the
  search first). Only the thread id is passed to the upstream search, so a ``run_id``
  in ``config["configurable"]`` no longer narrows the listing (use
  ``filter={"run_id": ...}``), and, as upstream, at most 10,000 checkpoints per
  thread are considered.
* ``prune``/``aprune``: an empty list of threads is a no-op, threads of any size are
  pruned, and the latest-checkpoint pointers stay valid.
* ``delete_for_runs``/``adelete_for_runs`` and ``copy_thread``/``acopy_thread`` are
  added.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing, asynccontextmanager, closing, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, get_checkpoint_id
from langgraph.checkpoint.redis import RedisSaver
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.redis.ashallow import AsyncShallowRedisSaver
from langgraph.checkpoint.redis.base import REDIS_KEY_SEPARATOR
from langgraph.checkpoint.redis.key_registry import CheckpointKeyRegistry
from langgraph.checkpoint.redis.shallow import ShallowRedisSaver
from langgraph.checkpoint.redis.util import safely_decode, to_storage_safe_id
from redisvl.query import FilterQuery
from redisvl.query.filter import FilterExpression, Tag

from langgraph_tiered_memory._redact import mask_url
from langgraph_tiered_memory._redis_client import (
    DEFAULT_REDIS_TIMEOUT,
    aclient_options,
    check_redis_timeout,
    client_options,
)
from langgraph_tiered_memory.checkpoint._outage import translate_outages
from langgraph_tiered_memory.checkpoint._recorder import AsyncRecorder, Recorder
from langgraph_tiered_memory.checkpoint.modules import acheck_modules, check_modules
from langgraph_tiered_memory.checkpoint.registry import (
    DEFAULT_SESSION_TTL,
    AsyncSessionRegistry,
    SessionMeta,
    SessionRegistry,
    SessionStatus,
)
from langgraph_tiered_memory.errors import ConfigurationError

__all__ = [
    "AsyncRedisSessionSaver",
    "RedisSessionSaver",
    "AsyncShallowRedisSessionSaver",
    "ShallowRedisSessionSaver",
]

# Page size of the RediSearch queries that enumerate a thread's documents.
_PAGE_SIZE = 1000
# How many ids go into one ``@field:{a|b|...}`` tag query.
_TAG_CHUNK = 100
_PRUNE_STRATEGIES = {"keep_latest": 1, "delete": 0}

_CHECKPOINT_FIELDS = ["thread_id", "checkpoint_ns", "checkpoint_id"]
_WRITE_FIELDS = ["thread_id", "checkpoint_ns", "checkpoint_id"]
# `list` is shadowed inside `RedisSessionSaver`, whose `list` method is the checkpointer API.
_Fields = list[str]
_SessionList = list[SessionMeta]


# ---------------------------------------------------------------------------
# Session layer: TTL defaults and the session registry.
# ---------------------------------------------------------------------------

_DEFAULT = object()


def _ttl_seconds_of(ttl: Any) -> float | None:
    """Normalise the `ttl` option: seconds, a timedelta, an upstream dict, or None."""
    if ttl is _DEFAULT:
        return DEFAULT_SESSION_TTL
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        ttl = ttl.total_seconds()
    elif isinstance(ttl, Mapping):
        minutes = ttl.get("default_ttl")
        if minutes is None:
            return None
        ttl = float(minutes) * 60
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        raise ConfigurationError(
            f"ttl must be a positive number of seconds, a timedelta, or None (no expiry),"
            f" got {ttl!r}."
        )
    return float(ttl)


def _upstream_ttl(seconds: float | None) -> dict[str, Any] | None:
    if seconds is None:
        return None
    return {"default_ttl": seconds / 60.0, "refresh_on_read": True}


def _session_facts(
    config: RunnableConfig, checkpoint: Any, metadata: Any
) -> tuple[str, str | None, int | None] | None:
    """(thread id, user id, message count) of a root-namespace checkpoint, else None."""
    conf = config.get("configurable", {}) or {}
    thread_id = conf.get("thread_id")
    if thread_id is None or conf.get("checkpoint_ns", ""):
        return None
    user = conf.get("user_id") or (metadata or {}).get("user_id")
    messages = (checkpoint.get("channel_values") or {}).get("messages")
    count = len(messages) if isinstance(messages, (list, tuple)) else None
    return str(thread_id), (str(user) if user else None), count


# ---------------------------------------------------------------------------
# Pure helpers shared by the sync and async savers.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _ListScope:
    """What `list` must return, split into the part upstream handles and the rest."""

    upstream_config: RunnableConfig | None
    checkpoint_ns: str | None
    checkpoint_id: str | None
    before_id: str | None
    metadata_filter: dict[str, Any]

    @classmethod
    def build(
        cls,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> _ListScope:
        upstream: RunnableConfig | None = None
        ns: str | None = None
        checkpoint_id: str | None = None
        if config is not None:
            configurable = config.get("configurable", {})
            # Upstream filters correctly on the thread only; everything else is done here.
            upstream = {"configurable": {"thread_id": configurable["thread_id"]}}
            ns = configurable.get("checkpoint_ns")
            checkpoint_id = get_checkpoint_id(config) or None
        before_id = (get_checkpoint_id(before) or None) if before is not None else None
        return cls(upstream, ns, checkpoint_id, before_id, dict(filter or {}))

    def accepts(self, tup: CheckpointTuple) -> bool:
        configurable = tup.config["configurable"]
        if self.checkpoint_ns is not None and configurable.get("checkpoint_ns", "") != (
            self.checkpoint_ns
        ):
            return False
        tup_id = configurable.get("checkpoint_id") or tup.checkpoint["id"]
        if self.checkpoint_id is not None and tup_id != self.checkpoint_id:
            return False
        # Checkpoint ids are uuid6 strings: their string order is their time order.
        if self.before_id is not None and tup_id >= self.before_id:
            return False
        metadata = tup.metadata or {}
        return all(metadata.get(key) == value for key, value in self.metadata_filter.items())


def _chunks(items: Sequence[str], size: int = _TAG_CHUNK) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _keep_last(strategy: str, keep_last: int | None) -> int:
    if keep_last is None:
        if strategy not in _PRUNE_STRATEGIES:
            raise ValueError(
                f"Unknown prune strategy {strategy!r}; expected one of {sorted(_PRUNE_STRATEGIES)}"
            )
        keep_last = _PRUNE_STRATEGIES[strategy]
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    return keep_last


def _page_queries(
    expression: FilterExpression, return_fields: list[str], page_size: int
) -> Iterator[FilterQuery]:
    """Successive pages of one search (the caller stops when a page comes back short)."""
    offset = 0
    while True:
        query = FilterQuery(
            filter_expression=expression, return_fields=return_fields, num_results=page_size
        )
        query.paging(offset, page_size)
        yield query
        offset += page_size


@dataclass(frozen=True)
class _DocRef:
    """A checkpoint or write document found by a search, with storage-safe fields."""

    key: str
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str

    @classmethod
    def from_search(cls, doc: Any) -> _DocRef:
        return cls(
            key=safely_decode(doc.id),
            thread_id=safely_decode(getattr(doc, "thread_id", "")),
            checkpoint_ns=safely_decode(getattr(doc, "checkpoint_ns", "")),
            checkpoint_id=safely_decode(getattr(doc, "checkpoint_id", "")),
        )

    @property
    def checkpoint(self) -> tuple[str, str, str]:
        return (self.thread_id, self.checkpoint_ns, self.checkpoint_id)


_DocRefs = list[_DocRef]


@dataclass
class _DeletePlan:
    """Keys to delete and the (thread, namespace) pairs whose latest pointer must be fixed."""

    keys: list[str] = field(default_factory=list)
    pointers: set[tuple[str, str]] = field(default_factory=set)


def _plan_delete(checkpoints: Iterable[_DocRef], writes: Iterable[_DocRef]) -> _DeletePlan:
    """Delete the checkpoints, their writes and their write-key registries."""
    plan = _DeletePlan()
    doomed: set[tuple[str, str, str]] = set()
    for ref in checkpoints:
        doomed.add(ref.checkpoint)
        plan.keys.append(ref.key)
        plan.keys.append(CheckpointKeyRegistry.make_write_keys_zset_key(*ref.checkpoint))
        plan.pointers.add((ref.thread_id, ref.checkpoint_ns))
    plan.keys.extend(w.key for w in writes if w.checkpoint in doomed)
    return plan


def _plan_prune(checkpoints: Iterable[_DocRef], keep_last: int) -> list[_DocRef]:
    """The checkpoints outside the newest ``keep_last`` of each namespace."""
    by_ns: dict[tuple[str, str], list[_DocRef]] = defaultdict(list)
    for ref in checkpoints:
        by_ns[(ref.thread_id, ref.checkpoint_ns)].append(ref)
    evicted: list[_DocRef] = []
    for refs in by_ns.values():
        refs.sort(key=lambda r: r.checkpoint_id, reverse=True)
        evicted.extend(refs[keep_last:])
    return evicted


def _retarget(key: str, prefix: str, source: str, target: str) -> str:
    """Move ``key`` from the source thread's key space to the target's."""
    head = f"{prefix}{REDIS_KEY_SEPARATOR}{source}{REDIS_KEY_SEPARATOR}"
    if not key.startswith(head):
        raise ValueError(f"Key {key!r} does not belong to thread {source!r}")
    return f"{prefix}{REDIS_KEY_SEPARATOR}{target}{REDIS_KEY_SEPARATOR}{key[len(head) :]}"


@dataclass
class _CopyPlan:
    """Documents and registries to write for `copy_thread`."""

    documents: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    registries: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=set)


# ---------------------------------------------------------------------------
# Behaviour shared by both savers; subclasses supply the I/O.
# ---------------------------------------------------------------------------


class _SessionSaverLogic:
    """Key arithmetic used by both session savers (mixed into the upstream classes)."""

    _checkpoint_prefix: str
    _checkpoint_write_prefix: str
    ttl_config: dict[str, Any] | None

    def _ttl_seconds(self) -> int | None:
        if self.ttl_config and self.ttl_config.get("default_ttl") is not None:
            return int(self.ttl_config["default_ttl"] * 60)
        return None

    @staticmethod
    def _newest_query(thread_id: str, checkpoint_ns: str) -> FilterQuery:
        return FilterQuery(
            filter_expression=(Tag("thread_id") == thread_id)
            & (Tag("checkpoint_ns") == checkpoint_ns),
            return_fields=["checkpoint_id"],
            num_results=1,
            sort_by=("checkpoint_id", "DESC"),
        )

    def _plan_copy(
        self,
        source: str,
        target: str,
        checkpoint_docs: Sequence[tuple[_DocRef, Any]],
        write_docs: Sequence[tuple[_DocRef, Any]],
        registries: Sequence[tuple[_DocRef, Any]],
    ) -> _CopyPlan:
        """Rewrite the source thread's documents (storage-safe ids) for the target thread."""
        plan = _CopyPlan()
        for ref, doc in checkpoint_docs:
            if not isinstance(doc, dict):
                continue  # deleted between the search and the read
            new_key = _retarget(ref.key, self._checkpoint_prefix, source, target)
            plan.documents.append((new_key, {**doc, "thread_id": target}))
            plan.namespaces.add(ref.checkpoint_ns)
        write_keys: dict[str, str] = {}
        for ref, doc in write_docs:
            if not isinstance(doc, dict):
                continue
            new_key = _retarget(ref.key, self._checkpoint_write_prefix, source, target)
            write_keys[ref.key] = new_key
            plan.documents.append((new_key, {**doc, "thread_id": target}))
        for ref, members in registries:
            mapping = {
                write_keys[member]: float(score)
                for member, score in ((safely_decode(m), s) for m, s in (members or []))
                if member in write_keys
            }
            if mapping:
                zset_key = CheckpointKeyRegistry.make_write_keys_zset_key(
                    target, ref.checkpoint_ns, ref.checkpoint_id
                )
                plan.registries.append((zset_key, mapping))
        return plan


# ---------------------------------------------------------------------------
# The session layer, mixed into the full and the shallow savers.
# ---------------------------------------------------------------------------

if TYPE_CHECKING:
    _AsyncBase = AsyncRedisSaver
    _SyncBase = RedisSaver
else:
    _AsyncBase = object
    _SyncBase = object


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
        **upstream: Options of the upstream saver (`checkpoint_prefix`, ...).
    """

    _registry_cls: Any
    _recorder_cls: Any
    _client_options: Any

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
        **upstream: Any,
    ) -> None:
        seconds = _ttl_seconds_of(ttl)
        self._tm_timeout: float | None = check_redis_timeout(redis_timeout)
        self._tm_where: str | None = None
        if redis_client is None:
            url = redis_url or os.environ.get("REDIS_URL")
            if url:
                self._tm_where = mask_url(url)
                defaults = type(self)._client_options(url, self._tm_timeout)
                connection_args = {**defaults, **(connection_args or {})}
        else:
            self._tm_timeout = None  # the caller's client keeps its own timeouts
        cast(Any, super()).__init__(  # the upstream saver, next in the MRO
            redis_url=redis_url,
            redis_client=redis_client,
            connection_args=connection_args,
            ttl=_upstream_ttl(seconds),
            **upstream,
        )
        self.sessions = self._registry_cls(
            cast(Any, self)._redis, key_prefix=session_prefix, ttl=seconds, clock=clock
        )
        self._recorder = self._recorder_cls(self.sessions)


class _AsyncSessionLayer(_SessionInit, _AsyncBase):
    """TTL defaults, session registry, module check and outage errors (asyncio)."""

    _registry_cls = AsyncSessionRegistry
    _recorder_cls = AsyncRecorder
    _client_options = staticmethod(aclient_options)
    sessions: AsyncSessionRegistry
    _recorder: AsyncRecorder

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, redis_url: str | None = None, **config: Any
    ) -> AsyncIterator[Any]:
        """Open a saver on `redis_url`, set it up, and close its client on exit.

        Args:
            redis_url: Redis URL (a server with RediSearch and RedisJSON).
            **config: Any constructor option (`ttl`, `session_prefix`, ...).
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
        await acheck_modules(self._redis)
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
        facts = _session_facts(config, checkpoint, metadata)
        if facts is not None:
            self._recorder.submit(*facts)
        return stored

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes."""
        await super().aput_writes(config, writes, task_id, task_path)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Read a checkpoint; refreshes the session's TTL (checkpoints and registry)."""
        found = await super().aget_tuple(config)
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if found is not None and thread_id is not None:
            await self.sessions.refresh(str(thread_id))
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
        """A user's sessions, most recently active first.

        Args:
            user_id: The user.
            status: Only sessions with this status.
            limit: Most sessions to return.
        """
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
        """Store the session's running summary (under the session TTL)."""
        await self.sessions.set_summary(session_id, summary)


class _SyncSessionLayer(_SessionInit, _SyncBase):
    """TTL defaults, session registry, module check and outage errors (sync)."""

    _registry_cls = SessionRegistry
    _recorder_cls = Recorder
    _client_options = staticmethod(client_options)
    sessions: SessionRegistry
    _recorder: Recorder

    @classmethod
    @contextmanager
    def from_conn_string(cls, redis_url: str | None = None, **config: Any) -> Iterator[Any]:
        """Open a saver on `redis_url`, set it up, and close its client on exit.

        Args:
            redis_url: Redis URL (a server with RediSearch and RedisJSON).
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
                if saver._owns_its_client:
                    saver._redis.close()

    def close(self) -> None:
        """Write the pending session records (see `flush_sessions`)."""
        self._recorder.close()

    def flush_sessions(self) -> None:
        """Write pending session records now.

        Checkpoints are recorded in the session registry at most once a second (the
        latest activity of each session, in one round trip plus one for the owners'
        user indexes), so the registry adds no
        round trip to a graph's super-steps. This saver's own reads flush first.
        """
        self._recorder.flush()

    def setup(self) -> None:
        """Check the server's modules, then create the search indexes (idempotent)."""
        check_modules(self._redis)
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
        facts = _session_facts(config, checkpoint, metadata)
        if facts is not None:
            self._recorder.submit(*facts)
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes."""
        super().put_writes(config, writes, task_id, task_path)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Read a checkpoint; refreshes the session's TTL (checkpoints and registry)."""
        found = super().get_tuple(config)
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if found is not None and thread_id is not None:
            self.sessions.refresh(str(thread_id))
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
        """Store the session's running summary (under the session TTL)."""
        self.sessions.set_summary(session_id, summary)


@translate_outages
class AsyncRedisSessionSaver(_AsyncSessionLayer, _SessionSaverLogic, AsyncRedisSaver):
    """Async Redis checkpointer that passes the full LangGraph checkpointer conformance suite.

    Drop-in replacement for `langgraph.checkpoint.redis.aio.AsyncRedisSaver`; see the
    module docstring for what differs.

    Example:
        ```python
        import asyncio

        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph_tiered_memory import AsyncRedisSessionSaver
        from langgraph_tiered_memory.embedded import redis_url_or_embedded

        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
        builder.add_edge(START, "reply")


        async def main(redis_url: str) -> None:
            async with AsyncRedisSessionSaver.from_conn_string(redis_url) as saver:
                graph = builder.compile(checkpointer=saver)
                config = {"configurable": {"thread_id": "chat-1", "user_id": "u1"}}
                await graph.ainvoke({"messages": [("user", "hello")]}, config)
                session = await saver.aget_session("chat-1")
                assert session is not None and session.user_id == "u1"


        with redis_url_or_embedded() as url:  # $REDIS_URL, or a private server
            asyncio.run(main(url))
        ```
    """

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """List checkpoints, newest first.

        Args:
            config: Restricts the listing to ``thread_id``; to one namespace if
                ``checkpoint_ns`` is present (``""`` is the root namespace; absent means
                every namespace); to one checkpoint if ``checkpoint_id`` is present.
                ``None`` lists every thread.
            filter: Metadata that must match exactly; any metadata key may be used.
            before: Only checkpoints whose id is older than this config's ``checkpoint_id``.
            limit: Maximum number of checkpoints returned, counted after filtering.

        Yields:
            The matching checkpoint tuples, newest checkpoint id first.
        """
        if limit is not None and limit <= 0:
            return
        scope = _ListScope.build(config, filter, before)
        returned = 0
        upstream = cast(
            "AsyncGenerator[CheckpointTuple, None]", super().alist(scope.upstream_config)
        )
        async with aclosing(upstream) as tuples:
            async for tup in tuples:
                if not scope.accepts(tup):
                    continue
                yield tup
                returned += 1
                if limit is not None and returned >= limit:
                    return

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
        max_results: int = _PAGE_SIZE,
    ) -> None:
        """Delete old checkpoints of the given threads, namespace by namespace.

        Each namespace (the root ``""`` and every subgraph namespace) keeps its newest
        checkpoints; the others are deleted with their pending writes. Beware that this
        cuts the parent chain that ``DeltaChannel`` state is rebuilt from.

        Args:
            thread_ids: Threads to prune; an empty sequence does nothing.
            strategy: ``"keep_latest"`` keeps the newest checkpoint of each namespace;
                ``"delete"`` deletes every checkpoint.
            keep_last: If given, the number of newest checkpoints kept per namespace;
                overrides ``strategy``.
            max_results: Page size of the searches that enumerate a thread.

        Raises:
            ValueError: On an unknown strategy, a negative ``keep_last`` or a
                ``max_results`` below 1.
        """
        keep = _keep_last(strategy, keep_last)
        if max_results < 1:
            raise ValueError(f"max_results must be >= 1, got {max_results}")
        for thread_id in dict.fromkeys(thread_ids):
            safe_thread = to_storage_safe_id(thread_id)
            checkpoints = await self._asearch(
                self.checkpoints_index,
                Tag("thread_id") == safe_thread,
                _CHECKPOINT_FIELDS,
                max_results,
            )
            await self._adelete_checkpoints(_plan_prune(checkpoints, keep))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint created by the given runs, with its pending writes.

        Checkpoints are matched on the run id recorded when they were stored (the
        ``run_id`` of the config or else of the metadata), in every thread and namespace.
        A thread whose latest checkpoint is deleted falls back to its newest remaining one.

        Args:
            run_ids: The runs to delete; unknown ids and an empty sequence do nothing.
        """
        safe_ids = [to_storage_safe_id(r) for r in dict.fromkeys(run_ids) if r]
        checkpoints: _DocRefs = []
        for chunk in _chunks(safe_ids):
            checkpoints.extend(await self._asearch(self.checkpoints_index, Tag("run_id") == chunk))
        await self._adelete_checkpoints(checkpoints)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, namespace and pending write of a thread to another thread.

        Checkpoint ids, metadata, parents and writes are kept as they are, so the target
        thread has the same history as the source. Existing checkpoints of the target
        thread are kept; its latest checkpoint becomes the newest of both.

        Args:
            source_thread_id: The thread to copy; if it has no checkpoints nothing happens.
            target_thread_id: The thread to copy to.
        """
        source = to_storage_safe_id(source_thread_id)
        target = to_storage_safe_id(target_thread_id)
        if source == target:
            return
        checkpoints = await self._asearch(self.checkpoints_index, Tag("thread_id") == source)
        if not checkpoints:
            return
        writes = await self._asearch(
            self.checkpoint_writes_index, Tag("thread_id") == source, _WRITE_FIELDS
        )
        pipe: Any = self._redis.pipeline(transaction=False)
        for ref in (*checkpoints, *writes):
            pipe.json().get(ref.key)
        for ref in checkpoints:
            zset = CheckpointKeyRegistry.make_write_keys_zset_key(*ref.checkpoint)
            pipe.zrange(zset, 0, -1, withscores=True)
        results = await pipe.execute()
        n_cp, n_w = len(checkpoints), len(writes)
        plan = self._plan_copy(
            source,
            target,
            list(zip(checkpoints, results[:n_cp], strict=True)),
            list(zip(writes, results[n_cp : n_cp + n_w], strict=True)),
            list(zip(checkpoints, results[n_cp + n_w :], strict=True)),
        )
        ttl = self._ttl_seconds()
        pipe = self._redis.pipeline(transaction=False)
        for key, doc in plan.documents:
            pipe.json().set(key, "$", doc)
        for zset_key, mapping in plan.registries:
            pipe.zadd(zset_key, mapping)
        if ttl is not None:
            for key in [k for k, _ in plan.documents] + [k for k, _ in plan.registries]:
                pipe.expire(key, ttl)
        await pipe.execute()
        for ns in plan.namespaces:
            await self._arefresh_latest(target, ns)

    async def _asearch(
        self,
        index: Any,
        expression: FilterExpression,
        return_fields: _Fields = _CHECKPOINT_FIELDS,
        page_size: int = _PAGE_SIZE,
    ) -> _DocRefs:
        """All documents matching ``expression``, read page by page."""
        found: _DocRefs = []
        for query in _page_queries(expression, return_fields, page_size):
            result = await index.search(query)
            found.extend(_DocRef.from_search(doc) for doc in result.docs)
            if len(result.docs) < page_size:
                return found
        return found  # pragma: no cover - the generator never ends

    async def _adelete_checkpoints(self, checkpoints: Sequence[_DocRef]) -> None:
        """Delete checkpoints with their writes and registries, then fix latest pointers."""
        if not checkpoints:
            return
        by_thread: dict[str, list[str]] = defaultdict(list)
        for ref in checkpoints:
            by_thread[ref.thread_id].append(ref.checkpoint_id)
        writes: _DocRefs = []
        for thread_id, checkpoint_ids in by_thread.items():
            for chunk in _chunks(sorted(set(checkpoint_ids))):
                writes.extend(
                    await self._asearch(
                        self.checkpoint_writes_index,
                        (Tag("thread_id") == thread_id) & (Tag("checkpoint_id") == chunk),
                        _WRITE_FIELDS,
                    )
                )
        plan = _plan_delete(checkpoints, writes)
        pipe: Any = self._redis.pipeline(transaction=False)
        for key in plan.keys:
            pipe.delete(key)
        await pipe.execute()
        for thread_id, ns in plan.pointers:
            await self._arefresh_latest(thread_id, ns)

    async def _arefresh_latest(self, thread_id: str, checkpoint_ns: str) -> None:
        """Point the namespace's latest pointer at its newest checkpoint, or drop it."""
        result = await self.checkpoints_index.search(self._newest_query(thread_id, checkpoint_ns))
        pointer = self._make_redis_checkpoint_latest_key(thread_id, checkpoint_ns)
        if not result.docs:
            await self._redis.delete(pointer)
            return
        await self._redis.set(pointer, safely_decode(result.docs[0].id))
        ttl = self._ttl_seconds()
        if ttl is not None:
            await self._redis.expire(pointer, ttl)


@translate_outages
class RedisSessionSaver(_SyncSessionLayer, _SessionSaverLogic, RedisSaver):
    """Sync Redis checkpointer with the same semantics as `AsyncRedisSessionSaver`.

    Drop-in replacement for `langgraph.checkpoint.redis.RedisSaver`; call `setup()`
    once before use.

    Example:
        ```python
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph_tiered_memory import RedisSessionSaver
        from langgraph_tiered_memory.embedded import redis_url_or_embedded

        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
        builder.add_edge(START, "reply")

        with (
            redis_url_or_embedded() as url,  # $REDIS_URL, or a private server
            RedisSessionSaver.from_conn_string(url) as saver,  # calls setup()
        ):
            graph = builder.compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "chat-2", "user_id": "u1"}}
            graph.invoke({"messages": [("user", "hello")]}, config)
            assert saver.get_session("chat-2").user_id == "u1"
        ```
    """

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first.

        Args:
            config: Restricts the listing to ``thread_id``; to one namespace if
                ``checkpoint_ns`` is present (``""`` is the root namespace; absent means
                every namespace); to one checkpoint if ``checkpoint_id`` is present.
                ``None`` lists every thread.
            filter: Metadata that must match exactly; any metadata key may be used.
            before: Only checkpoints whose id is older than this config's ``checkpoint_id``.
            limit: Maximum number of checkpoints returned, counted after filtering.

        Yields:
            The matching checkpoint tuples, newest checkpoint id first.
        """
        if limit is not None and limit <= 0:
            return
        scope = _ListScope.build(config, filter, before)
        returned = 0
        upstream = cast(
            "Generator[CheckpointTuple, None, None]", super().list(scope.upstream_config)
        )
        with closing(upstream) as tuples:
            for tup in tuples:
                if not scope.accepts(tup):
                    continue
                yield tup
                returned += 1
                if limit is not None and returned >= limit:
                    return

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
        max_results: int = _PAGE_SIZE,
    ) -> None:
        """Delete old checkpoints of the given threads, namespace by namespace.

        Each namespace (the root ``""`` and every subgraph namespace) keeps its newest
        checkpoints; the others are deleted with their pending writes. Beware that this
        cuts the parent chain that ``DeltaChannel`` state is rebuilt from.

        Args:
            thread_ids: Threads to prune; an empty sequence does nothing.
            strategy: ``"keep_latest"`` keeps the newest checkpoint of each namespace;
                ``"delete"`` deletes every checkpoint.
            keep_last: If given, the number of newest checkpoints kept per namespace;
                overrides ``strategy``.
            max_results: Page size of the searches that enumerate a thread.

        Raises:
            ValueError: On an unknown strategy, a negative ``keep_last`` or a
                ``max_results`` below 1.
        """
        keep = _keep_last(strategy, keep_last)
        if max_results < 1:
            raise ValueError(f"max_results must be >= 1, got {max_results}")
        for thread_id in dict.fromkeys(thread_ids):
            safe_thread = to_storage_safe_id(thread_id)
            checkpoints = self._search(
                self.checkpoints_index,
                Tag("thread_id") == safe_thread,
                _CHECKPOINT_FIELDS,
                max_results,
            )
            self._delete_checkpoints(_plan_prune(checkpoints, keep))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint created by the given runs, with its pending writes.

        Checkpoints are matched on the run id recorded when they were stored (the
        ``run_id`` of the config or else of the metadata), in every thread and namespace.
        A thread whose latest checkpoint is deleted falls back to its newest remaining one.

        Args:
            run_ids: The runs to delete; unknown ids and an empty sequence do nothing.
        """
        safe_ids = [to_storage_safe_id(r) for r in dict.fromkeys(run_ids) if r]
        checkpoints: _DocRefs = []
        for chunk in _chunks(safe_ids):
            checkpoints.extend(self._search(self.checkpoints_index, Tag("run_id") == chunk))
        self._delete_checkpoints(checkpoints)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, namespace and pending write of a thread to another thread.

        Checkpoint ids, metadata, parents and writes are kept as they are, so the target
        thread has the same history as the source. Existing checkpoints of the target
        thread are kept; its latest checkpoint becomes the newest of both.

        Args:
            source_thread_id: The thread to copy; if it has no checkpoints nothing happens.
            target_thread_id: The thread to copy to.
        """
        source = to_storage_safe_id(source_thread_id)
        target = to_storage_safe_id(target_thread_id)
        if source == target:
            return
        checkpoints = self._search(self.checkpoints_index, Tag("thread_id") == source)
        if not checkpoints:
            return
        writes = self._search(
            self.checkpoint_writes_index, Tag("thread_id") == source, _WRITE_FIELDS
        )
        pipe: Any = self._redis.pipeline(transaction=False)
        for ref in (*checkpoints, *writes):
            pipe.json().get(ref.key)
        for ref in checkpoints:
            zset = CheckpointKeyRegistry.make_write_keys_zset_key(*ref.checkpoint)
            pipe.zrange(zset, 0, -1, withscores=True)
        results = pipe.execute()
        n_cp, n_w = len(checkpoints), len(writes)
        plan = self._plan_copy(
            source,
            target,
            list(zip(checkpoints, results[:n_cp], strict=True)),
            list(zip(writes, results[n_cp : n_cp + n_w], strict=True)),
            list(zip(checkpoints, results[n_cp + n_w :], strict=True)),
        )
        ttl = self._ttl_seconds()
        pipe = self._redis.pipeline(transaction=False)
        for key, doc in plan.documents:
            pipe.json().set(key, "$", doc)
        for zset_key, mapping in plan.registries:
            pipe.zadd(zset_key, mapping)
        if ttl is not None:
            for key in [k for k, _ in plan.documents] + [k for k, _ in plan.registries]:
                pipe.expire(key, ttl)
        pipe.execute()
        for ns in plan.namespaces:
            self._refresh_latest(target, ns)

    def _search(
        self,
        index: Any,
        expression: FilterExpression,
        return_fields: _Fields = _CHECKPOINT_FIELDS,
        page_size: int = _PAGE_SIZE,
    ) -> _DocRefs:
        """All documents matching ``expression``, read page by page."""
        found: _DocRefs = []
        for query in _page_queries(expression, return_fields, page_size):
            result = index.search(query)
            found.extend(_DocRef.from_search(doc) for doc in result.docs)
            if len(result.docs) < page_size:
                return found
        return found  # pragma: no cover - the generator never ends

    def _delete_checkpoints(self, checkpoints: Sequence[_DocRef]) -> None:
        """Delete checkpoints with their writes and registries, then fix latest pointers."""
        if not checkpoints:
            return
        by_thread: dict[str, list[str]] = defaultdict(list)
        for ref in checkpoints:
            by_thread[ref.thread_id].append(ref.checkpoint_id)
        writes: _DocRefs = []
        for thread_id, checkpoint_ids in by_thread.items():
            for chunk in _chunks(sorted(set(checkpoint_ids))):
                writes.extend(
                    self._search(
                        self.checkpoint_writes_index,
                        (Tag("thread_id") == thread_id) & (Tag("checkpoint_id") == chunk),
                        _WRITE_FIELDS,
                    )
                )
        plan = _plan_delete(checkpoints, writes)
        pipe: Any = self._redis.pipeline(transaction=False)
        for key in plan.keys:
            pipe.delete(key)
        pipe.execute()
        for thread_id, ns in plan.pointers:
            self._refresh_latest(thread_id, ns)

    def _refresh_latest(self, thread_id: str, checkpoint_ns: str) -> None:
        """Point the namespace's latest pointer at its newest checkpoint, or drop it."""
        result = self.checkpoints_index.search(self._newest_query(thread_id, checkpoint_ns))
        pointer = self._make_redis_checkpoint_latest_key(thread_id, checkpoint_ns)
        if not result.docs:
            self._redis.delete(pointer)
            return
        self._redis.set(pointer, safely_decode(result.docs[0].id))
        ttl = self._ttl_seconds()
        if ttl is not None:
            self._redis.expire(pointer, ttl)


@translate_outages
class AsyncShallowRedisSessionSaver(_AsyncSessionLayer, AsyncShallowRedisSaver):  # type: ignore[misc]
    """`AsyncRedisSessionSaver`'s session layer on upstream's shallow saver.

    Keeps only the latest checkpoint of each thread (upstream `AsyncShallowRedisSaver`),
    with the same TTL, session registry, module check and outage errors. Listing and
    pruning are upstream's; the conformance fixes apply to the full savers.
    """


@translate_outages
class ShallowRedisSessionSaver(_SyncSessionLayer, ShallowRedisSaver):  # type: ignore[misc]
    """`RedisSessionSaver`'s session layer on upstream's shallow saver.

    Keeps only the latest checkpoint of each thread (upstream `ShallowRedisSaver`), with
    the same TTL, session registry, module check and outage errors. Listing and pruning
    are upstream's; the conformance fixes apply to the full savers.
    """
