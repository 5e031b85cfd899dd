"""One place that turns Redis outages into `BackendUnavailableError` for the savers.

`translate_outages` wraps every public method of a class (and its constructor and
context-manager methods): a Redis connection error or timeout, raised directly or
wrapped by a library (redisvl's `RedisSearchError`, ...), becomes a
`BackendUnavailableError` naming the server (credentials masked) and what to check.
Generators and async generators are translated on every step of the iteration,
context managers on entry and exit. Each call (each step of a listing) is also one
Redis call in the sense of `_redis_client.redis_call`: its round trips share one
time budget.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from redis.exceptions import AuthenticationError as RedisAuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from langgraph_tiered_memory._redis_client import redis_call
from langgraph_tiered_memory.errors import BackendUnavailableError, TieredMemoryError
from langgraph_tiered_memory.privacy._redact import mask_url

_OUTAGES = (RedisConnectionError, RedisTimeoutError)
_DUNDERS = {"__init__", "__enter__", "__exit__", "__aenter__", "__aexit__"}
_EXITS = {"__exit__", "__aexit__"}
_MARK = "__translates_redis_outages__"

C = TypeVar("C", bound=type)


def outage_cause(error: BaseException) -> BaseException | None:
    """The Redis connection error or timeout behind `error`, if any.

    Follows `__cause__` and (unless suppressed) `__context__`, so an outage wrapped by
    another library is found too.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, _OUTAGES):
            return current
        seen.add(id(current))
        nxt = current.__cause__
        if nxt is None and not current.__suppress_context__:
            nxt = current.__context__
        current = nxt
    return None


def describe_redis(client: Any) -> str:
    """Where a Redis client connects, as a URL without credentials ("?" if unknown)."""
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None) or {}
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}"
    if kwargs.get("host"):
        return f"redis://{kwargs['host']}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
    return "?"


def _where(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, float | None]:
    """The server (masked) and the call bound, from the call's `self`/`cls` or URL."""
    target = args[0] if args else None
    where = getattr(target, "_tm_where", None) if not isinstance(target, type) else None
    client = getattr(target, "_redis", None) or getattr(target, "client", None)
    if where is None:
        url = kwargs.get("redis_url")
        constructing = isinstance(target, type) or client is None
        if url is None and constructing and len(args) > 1 and isinstance(args[1], str):
            url = args[1]  # a constructor's or from_conn_string's positional redis_url
        where = url if isinstance(url, str) else describe_redis(client)
    timeout = None
    if not isinstance(target, type):
        pool = getattr(client, "connection_pool", None)
        timeout = getattr(target, "_tm_timeout", None) or getattr(
            getattr(pool, "connection_class", None), "budget", None
        )
    return mask_url(where), timeout


def _unavailable(
    op: str, where: str, timeout: float | None, error: BaseException, cause: BaseException
) -> BackendUnavailableError:
    if isinstance(cause, RedisAuthenticationError):
        return BackendUnavailableError(
            f"Redis at {where} refused the credentials during {op}: {cause}. Check the user"
            " name and password in the Redis URL (or the ACL of that user)."
        )
    bound = f"; each call waits on Redis at most {timeout:g} s (redis_timeout)" if timeout else ""
    return BackendUnavailableError(
        f"Redis is unreachable at {where} during {op} ({type(cause).__name__}: {cause}"
        f"{bound}). Check that the server is running, accepts connections at that address"
        " and is not paused or overloaded. Nothing of this call was acknowledged; once Redis"
        " answers again, retry it (invoking the graph again resumes the thread from its"
        " last checkpoint)."
    )


@contextmanager
def _translated(
    op: str, args: tuple[Any, ...], kwargs: dict[str, Any], passthrough: Any = None
) -> Iterator[None]:
    try:
        yield
    except TieredMemoryError:
        raise
    except Exception as e:
        cause = outage_cause(e)
        if cause is None or e is passthrough:
            raise
        where, timeout = _where(args, kwargs)
        raise _unavailable(op, where, timeout, e, cause) from e


def _iterate(gen: Iterator[Any], op: str, args: Any, kwargs: Any) -> Iterator[Any]:
    try:
        while True:
            with redis_call(), _translated(op, args, kwargs):
                try:
                    item = next(gen)
                except StopIteration:
                    return
            yield item
    finally:
        close = getattr(gen, "close", None)
        if close is not None:
            with _translated(op, args, kwargs):
                close()


async def _aiterate(agen: Any, op: str, args: Any, kwargs: Any) -> AsyncIterator[Any]:
    try:
        while True:
            with redis_call(), _translated(op, args, kwargs):
                try:
                    item = await agen.__anext__()
                except StopAsyncIteration:
                    return
            yield item
    finally:
        with _translated(op, args, kwargs):
            await agen.aclose()


class _TranslatedContext:
    """A context manager (sync or async) whose entry and exit are translated."""

    def __init__(self, inner: Any, op: str, args: Any, kwargs: Any) -> None:
        self._inner, self._op, self._args, self._kwargs = inner, op, args, kwargs

    def __enter__(self) -> Any:
        with redis_call(), _translated(self._op, self._args, self._kwargs):
            return self._inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        with redis_call(), _translated(self._op, self._args, self._kwargs, exc[1]):
            return self._inner.__exit__(*exc)

    async def __aenter__(self) -> Any:
        with redis_call(), _translated(self._op, self._args, self._kwargs):
            return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        with redis_call(), _translated(self._op, self._args, self._kwargs, exc[1]):
            return await self._inner.__aexit__(*exc)


def _wrap(fn: Callable[..., Any], op: str, owner: type) -> Callable[..., Any]:
    exits = fn.__name__ in _EXITS

    def finish(result: Any, args: Any, kwargs: Any) -> Any:
        if inspect.isgenerator(result):
            return _iterate(result, op, args, kwargs)
        if inspect.isasyncgen(result):
            return _aiterate(result, op, args, kwargs)
        if (hasattr(result, "__enter__") or hasattr(result, "__aenter__")) and not isinstance(
            result, owner
        ):
            return _TranslatedContext(result, op, args, kwargs)
        return result

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            passthrough = args[2] if exits and len(args) > 2 else None
            with redis_call(), _translated(op, args, kwargs, passthrough):
                return await fn(*args, **kwargs)

        setattr(awrapper, _MARK, True)
        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        passthrough = args[2] if exits and len(args) > 2 else None
        with redis_call(), _translated(op, args, kwargs, passthrough):
            result = fn(*args, **kwargs)
        return finish(result, args, kwargs)

    setattr(wrapper, _MARK, True)
    return wrapper


def _function(cls: type, name: str) -> Any:
    attr = inspect.getattr_static(cls, name)
    return attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr


def public_methods(cls: type) -> list[str]:
    """Names of the methods `translate_outages` wraps: every public one and the dunders."""
    return [
        name
        for name in dir(cls)
        if (not name.startswith("_") or name in _DUNDERS)
        and inspect.isfunction(_function(cls, name))
    ]


def is_translated(cls: type, name: str) -> bool:
    """Whether `cls.<name>` translates Redis outages."""
    return bool(getattr(_function(cls, name), _MARK, False))


def translate_outages(cls: C) -> C:
    """Class decorator: every public method of `cls` (inherited ones too) translates outages.

    Args:
        cls: The class to patch in place.

    Returns:
        The same class.
    """
    for name in public_methods(cls):
        attr = inspect.getattr_static(cls, name)
        kind = type(attr) if isinstance(attr, (classmethod, staticmethod)) else None
        fn = _function(cls, name)
        if getattr(fn, _MARK, False):
            continue
        op = f"{cls.__name__}.{name}"
        wrapped = _wrap(fn, op, cls)
        setattr(cls, name, kind(wrapped) if kind is not None else wrapped)
    return cls
