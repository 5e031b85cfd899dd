"""Redis clients whose calls end in bounded time, for the store and the session savers.

A client built here from a URL:

- retries connection errors only (refused, reset: detected at once), never timeouts,
  so a frozen server costs one timeout, not one per retry;
- charges every round trip to the current *call* (see `redis_call`): inside one call
  the reads together wait at most `timeout` seconds, however many round trips the
  call makes; a round trip started after that fails at once with a `TimeoutError`.
  One round trip waits at most the socket timeout, `timeout` less a slack (10%, at
  most 1 s); only a call that has already waited longer than the slack gives its
  reads the shorter timeout it has left.

The store opens a call around each batch and each tier operation, the savers around
each public method (and each step of a listing).
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
import redis.asyncio as aredis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from langgraph_tiered_memory.errors import ConfigurationError

if sys.version_info >= (3, 11):
    from asyncio import timeout as async_timeout
else:  # pragma: no cover - redis-py depends on async-timeout before 3.11
    from async_timeout import timeout as async_timeout

DEFAULT_REDIS_TIMEOUT = 15.0
"""Seconds one store or saver call waits on Redis at most, by default."""

_CONNECT_TIMEOUT = 5.0
_SLACK = 1.0
_BOUNDED_SCHEMES = ("redis://", "rediss://", "unix://")


def check_redis_timeout(value: Any) -> float:
    """The `redis_timeout` option (seconds, a finite number > 0) as a float."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigurationError(
            f"redis_timeout must be a finite number of seconds > 0, got {value!r}. It bounds"
            f" how long one call waits on Redis (default {DEFAULT_REDIS_TIMEOUT:g})."
        )
    return float(value)


@dataclass(slots=True)
class _Call:
    """Time the round trips of one call have spent waiting on Redis."""

    spent: float = 0.0
    depth: int = 0


_CALL: ContextVar[_Call | None] = ContextVar("tiered_memory_redis_call", default=None)


@contextmanager
def redis_call() -> Iterator[None]:
    """Make the round trips inside the block share one time budget.

    A block inside another joins the outer call. Outside any call each round trip
    is bounded on its own.
    """
    if _CALL.get() is not None:
        yield
        return
    token = _CALL.set(_Call())
    try:
        yield
    finally:
        _CALL.reset(token)


_OUTSIDE: tuple[None, float, None] = (None, 0.0, None)


def _begin(budget: float) -> tuple[_Call | None, float, float | None]:
    """Start a round trip: (the call to charge, its start time, the time the call has left).

    Outside a call: (None, 0, None). A round trip inside one already charged (a health
    check redis-py sends within a command) is checked but not charged twice (call None).
    Plain calls rather than a context manager: this runs twice per round trip.

    Raises:
        TimeoutError: The call has already spent its budget.
    """
    call = _CALL.get()
    if call is None:
        return _OUTSIDE
    left = budget - call.spent
    if left <= 0:
        raise RedisTimeoutError(
            f"this call has already waited {call.spent:.1f} s on Redis (redis_timeout={budget:g})"
        )
    if call.depth:
        return None, 0.0, left
    call.depth += 1
    return call, time.monotonic(), left


def _end(call: _Call | None, start: float) -> None:
    """Charge the round trip started by `_begin` to its call."""
    if call is not None:
        call.depth -= 1
        call.spent += time.monotonic() - start


def _tightened(conn: Any, left: float | None) -> bool:
    """Whether a read must wait less than the socket's own timeout: what the call has left."""
    own = conn.socket_timeout
    return left is not None and (own is None or left < own)


def _round_trip_bound(budget: float) -> float:
    """The socket timeout of a bounded connection: the budget less a slack.

    A read needs a timeout of its own only once its call has less time left than
    this, i.e. has waited longer than the slack, so the reads of a healthy call leave
    the socket as it is. A read with its own timeout sets the socket's timeout and
    restores it: two system calls that each release the GIL (a thread writing
    checkpoints then waits to take it back), or an asyncio timer per read.
    """
    return budget - min(_SLACK, budget * 0.1)


class _BoundedConnection:
    """Mixed into a `redis.Connection` class: charge and bound each round trip."""

    budget: float = DEFAULT_REDIS_TIMEOUT

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        call, start, _ = _begin(self.budget)
        try:
            super().send_packed_command(command, check_health)  # type: ignore[misc]
        finally:
            _end(call, start)

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            call, start, left = _begin(self.budget)
        except RedisTimeoutError:
            self.disconnect()  # type: ignore[attr-defined]  # a reply is still pending
            raise
        # An explicit timeout (pub/sub) is kept.
        if "timeout" not in kwargs and _tightened(self, left):
            kwargs["timeout"] = left
        try:
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        finally:
            _end(call, start)


class _AsyncBoundedConnection:
    """Mixed into a `redis.asyncio.Connection` class: charge and bound each round trip."""

    budget: float = DEFAULT_REDIS_TIMEOUT

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        call, start, _ = _begin(self.budget)
        try:
            await super().send_packed_command(command, check_health)  # type: ignore[misc]
        finally:
            _end(call, start)

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        # An explicit timeout (pub/sub) is kept. Passing one would also change what a
        # timeout does (redis-py then returns None), so the budget is applied around it.
        if kwargs.get("timeout") is not None or len(args) >= 2:
            return await super().read_response(*args, **kwargs)  # type: ignore[misc]
        try:
            call, start, left = _begin(self.budget)
        except RedisTimeoutError:
            await self.disconnect(nowait=True)  # type: ignore[attr-defined]  # reply pending
            raise
        try:
            if not _tightened(self, left):
                return await super().read_response(*args, **kwargs)  # type: ignore[misc]
            try:
                async with async_timeout(left):
                    return await super().read_response(*args, **kwargs)  # type: ignore[misc]
            except asyncio.TimeoutError as e:
                await self.disconnect(nowait=True)  # type: ignore[attr-defined]
                raise RedisTimeoutError(
                    f"Timeout reading from {self._host_error()}"  # type: ignore[attr-defined]
                ) from e
        finally:
            _end(call, start)


def _driver_options() -> dict[str, Any]:
    """Client metadata made once, at import.

    redis-py 8 builds it for every new connection by asking `importlib.metadata` for
    its own version, which stats the disk: inside an event loop that is a blocking
    call (`langgraph dev` fails the run with `BlockingError`). Older versions read the
    version once and take no `driver_info` option.
    """
    try:
        from redis.driver_info import DriverInfo
    except ImportError:
        return {}
    return {"driver_info": DriverInfo()}


_DRIVER_OPTIONS = _driver_options()


def _bounded_class(base: type, mixin: type, budget: float) -> type:
    return type(f"Bounded{base.__name__}", (mixin, base), {"budget": budget})


def _options(url: str, timeout: float, connection: ModuleType, mixin: type) -> dict[str, Any]:
    """`connection` is `redis.connection` or `redis.asyncio.connection`, `mixin` its bound."""
    options: dict[str, Any] = {
        "socket_connect_timeout": min(_CONNECT_TIMEOUT, timeout),
        "socket_timeout": _round_trip_bound(timeout),
        "health_check_interval": 30,
        # Connection errors only: a timeout is never retried.
        "retry": Retry(
            ExponentialBackoff(cap=0.5, base=0.05),
            retries=3,
            supported_errors=(RedisConnectionError,),
        ),
        **_DRIVER_OPTIONS,
    }
    if url.startswith(_BOUNDED_SCHEMES):
        base = connection.parse_url(url).get("connection_class") or connection.Connection
        options["connection_class"] = _bounded_class(base, mixin, timeout)
    return options


def bounded_async_class(base: type, timeout: float = DEFAULT_REDIS_TIMEOUT) -> type:
    """`base` (a `redis.asyncio` connection class) bounded like `aclient_options` does.

    `redis.asyncio`'s `from_url` lets the URL's connection class (`SSLConnection` for
    `rediss://`, the Unix socket class for `unix://`) win over the one passed in
    `aclient_options`, so a pool rebuilt from such a client should pass its class
    through this function. A class that is already bounded is returned as it is.
    """
    if issubclass(base, _AsyncBoundedConnection):
        return base
    return _bounded_class(base, _AsyncBoundedConnection, timeout)


def client_options(url: str, timeout: float = DEFAULT_REDIS_TIMEOUT) -> dict[str, Any]:
    """Options for `redis.Redis.from_url(url, ...)`: a call waits `timeout` s at most.

    The URL's scheme picks the connection class.
    """
    return _options(url, timeout, redis.connection, _BoundedConnection)


def aclient_options(url: str, timeout: float = DEFAULT_REDIS_TIMEOUT) -> dict[str, Any]:
    """Options for `redis.asyncio.Redis.from_url(url, ...)`, as `client_options`."""
    return _options(url, timeout, aredis.connection, _AsyncBoundedConnection)


_TRUE = ("1", "true", "yes", "on")


def _split_cluster(url: str) -> tuple[str, bool]:
    """`url` without its `cluster=` query parameter, and whether that asked for a cluster."""
    parts = urlsplit(url)
    if not parts.query:
        return url, False
    query = parse_qsl(parts.query, keep_blank_values=True)
    flags = [v for k, v in query if k.lower() == "cluster"]
    if not flags:
        return url, False
    rest = urlencode([(k, v) for k, v in query if k.lower() != "cluster"])
    return urlunsplit(parts._replace(query=rest)), flags[-1].strip().lower() in _TRUE


def is_cluster_url(url: str) -> bool:
    """Whether `url` names a Redis Cluster: `redis[s]://host:port?cluster=true`.

    The same query parameter the upstream savers (`langgraph-checkpoint-redis`, through
    `redisvl`) read, so one URL serves the store and the savers.
    """
    return _split_cluster(url)[1]


def redis_from_url(url: str, timeout: float = DEFAULT_REDIS_TIMEOUT) -> Any:
    """A client on `url` whose calls (see `redis_call`) wait at most `timeout` seconds.

    `redis://` and `rediss://` URLs keep their user name, password, database and `ssl_*`
    query options (`ssl_cert_reqs`, `ssl_ca_certs`, `ssl_certfile`, ...). With
    `?cluster=true` the client is a `redis.cluster.RedisCluster` that discovers the
    other nodes from the one named (its connections are bounded the same way).
    """
    plain, cluster = _split_cluster(url)
    if cluster:
        from redis.cluster import RedisCluster

        if not plain.startswith(("redis://", "rediss://")):
            raise ValueError("a Redis Cluster URL is redis://... or rediss://...")
        options = client_options(plain, timeout)
        # RedisCluster retries MOVED/ASK itself; its connections keep the bounded class.
        options.pop("health_check_interval")
        return RedisCluster.from_url(plain, **options)
    return redis.Redis.from_url(plain, **client_options(plain, timeout))


def describe_client(client: Any) -> str:
    """Where a `redis.Redis` or `RedisCluster` client connects, as a URL without secrets.

    Keeps the scheme (`rediss` for TLS) and the user name; never the password.
    """
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        node = client.get_default_node()
        kwargs = dict(node.redis_connection.connection_pool.connection_kwargs) if node else {}
        kwargs.setdefault("host", getattr(node, "host", "?"))
        kwargs.setdefault("port", getattr(node, "port", "?"))
        connection_class = node.redis_connection.connection_pool.connection_class if node else None
        suffix = "?cluster=true"
    else:
        kwargs = client.connection_pool.connection_kwargs
        connection_class = client.connection_pool.connection_class
        suffix = ""
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    secure = connection_class is not None and issubclass(
        connection_class, (redis.SSLConnection, aredis.SSLConnection)
    )
    user = f"{kwargs['username']}@" if kwargs.get("username") else ""
    host = f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
    db = "" if suffix else f"/{kwargs.get('db', 0)}"
    return f"{'rediss' if secure else 'redis'}://{user}{host}{db}{suffix}"


def client_budget(client: Any) -> float | None:
    """The per-call bound of a client made by `redis_from_url` (None for other clients)."""
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        node = client.get_default_node()
        if node is None or node.redis_connection is None:
            return None
        pool = node.redis_connection.connection_pool
    else:
        pool = client.connection_pool
    return getattr(pool.connection_class, "budget", None)
