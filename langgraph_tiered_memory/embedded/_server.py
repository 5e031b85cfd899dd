"""The lifecycle both embedded servers share: directory, ports, ``atexit``, lock, stop.

`EmbeddedServer` runs one server process (spawned, awaited and stopped by
`embedded._process`) in a temporary working directory of its own or in a given one,
picks a free loopback port (trying another if it is taken before the server binds
it), stops the server at interpreter exit, and serialises start, restart and stop
with a lock. `EmbeddedRedis` (in `embedded`) and `EmbeddedFalkorDB` (in
`embedded.falkordb`) subclass it and supply only what differs: the files the server
is started from and the modules it must report (`_spec`), the wording of its errors
(`_flavor`), its log file and directory names, its URL, port and repr.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import IO, ClassVar, NamedTuple, TypeVar

from langgraph_tiered_memory.embedded._process import (
    HOST,
    PortTakenError,
    ServerFlavor,
    pick_free_port,
    server_command,
    shutdown,
    spawn,
    wait_ready,
)

PORT_ATTEMPTS = 5
"""How many free ports a server without a fixed port tries before giving up."""

_Server = TypeVar("_Server", bound="EmbeddedServer")


class ServerSpec(NamedTuple):
    """What one start of a server needs from its subclass.

    Attributes:
        executable: The server binary.
        modules: The modules to load, in order.
        required_modules: Module names (as ``MODULE LIST`` prints them) it must report.
    """

    executable: Path
    modules: tuple[Path, ...]
    required_modules: tuple[str, ...]


class EmbeddedServer(abc.ABC):
    """A private Redis-protocol server process on a loopback port (a base class).

    Subclasses set `_flavor`, `_log_name` and `_dir_prefix` and implement `_spec`;
    the constructor is `EmbeddedRedis`'s (`EmbeddedFalkorDB` has its own).
    """

    _flavor: ClassVar[ServerFlavor]
    """How the server's errors name it, its extra and the way around it."""
    _log_name: ClassVar[str]
    """The server's log file, in its working directory."""
    _dir_prefix: ClassVar[str]
    """The prefix of the temporary working directory."""

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

    # ------------------------------------------------------------- for subclasses

    @abc.abstractmethod
    def _spec(self) -> ServerSpec:
        """Locate the server's files; called on every start and restart.

        Raises:
            EmbeddedRedisError: A file is missing (as the flavor's error class).
        """

    def _on_started(self) -> None:
        """Called by :meth:`start` once the server answers; does nothing by default."""
        return None

    def _running_url(self) -> str:
        """``redis://127.0.0.1:<port>`` of the running server.

        Raises:
            EmbeddedRedisError: The server is not running (as the flavor's error class).
        """
        if not self.is_running:
            raise self._flavor.error(f"The {self._flavor.label} is not running; call start().")
        return f"redis://{HOST}:{self._port}"

    # ------------------------------------------------------------------ properties

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
        return self._workdir / self._log_name if self._workdir is not None else None

    @property
    def persistence(self) -> bool:
        """Whether data is kept in an append-only file."""
        return self._persistence

    # ------------------------------------------------------------------- lifecycle

    def start(self: _Server) -> _Server:
        """Start the server and wait until it answers PING with its modules loaded.

        Calling it on a running server does nothing.

        Returns:
            This instance, for chaining.

        Raises:
            EmbeddedRedisError: The binaries are missing, the process exited early,
                did not answer within ``startup_timeout`` or lacks a module (for
                FalkorDB an `EmbeddedFalkorDBError`). The message includes the tail
                of the server log and the fix.
        """
        with self._lock:
            if self.is_running:
                return self
            spec = self._spec()
            fresh_dir = self._workdir is None
            if fresh_dir:
                self._make_workdir()
            if not self._atexit_registered:
                atexit.register(self._atexit_stop)
                self._atexit_registered = True
            try:
                self._stop_process()  # reap a server that died on its own, if any
                self._launch(spec, fixed_port=self._requested_port)
            except BaseException:
                self._stop_process()
                if fresh_dir:
                    self._remove_workdir()
                    self._unregister_atexit()
                raise
            self._on_started()
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

        With persistence the data survives. Starts the server if it was never started.

        Raises:
            EmbeddedRedisError: The server could not be started again.
        """
        with self._lock:
            if self._workdir is None:
                self.start()
                return
            self._stop_process()
            self._launch(self._spec(), fixed_port=self._port)

    def __enter__(self: _Server) -> _Server:
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

    # -------------------------------------------------------------------- internals

    def _make_workdir(self) -> None:
        if self._user_data_dir is not None:
            self._user_data_dir.mkdir(parents=True, exist_ok=True)
            self._workdir = self._user_data_dir.resolve()
            self._owns_workdir = False
        else:
            self._workdir = Path(tempfile.mkdtemp(prefix=self._dir_prefix))
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

    def _launch(self, spec: ServerSpec, fixed_port: int | None) -> None:
        attempts = 1 if fixed_port is not None else PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            port = fixed_port if fixed_port is not None else pick_free_port()
            try:
                self._spawn_and_wait(spec, port)
                return
            except PortTakenError as e:
                self._stop_process()
                if attempt < attempts:
                    continue
                if isinstance(e, self._flavor.error):
                    raise
                raise self._flavor.error(str(e)) from e  # FalkorDB's error class

    def _spawn_and_wait(self, spec: ServerSpec, port: int) -> None:
        assert self._workdir is not None
        log_path = self._workdir / self._log_name
        log_offset = log_path.stat().st_size if log_path.exists() else 0
        self._log_handle = open(log_path, "ab")  # closed in _stop_process
        command = server_command(
            spec.executable,
            spec.modules,
            port,
            self._workdir,
            persistence=self._persistence,
            log_name=self._log_name,
        )
        self._proc = spawn(command, self._workdir, self._log_handle, flavor=self._flavor)
        self._port = port
        wait_ready(
            self._proc,
            port,
            timeout=self._startup_timeout,
            required_modules=spec.required_modules,
            log_path=log_path,
            log_offset=log_offset,
            flavor=self._flavor,
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
