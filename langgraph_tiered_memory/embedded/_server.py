"""The embedded servers' shared machinery: their files, process and lifecycle.

`EmbeddedServer` runs one server process in a temporary working directory of its own or
in a given one, picks a free loopback port (trying another if it is taken before the
server binds it), waits until it answers PING with its modules loaded, stops it at
interpreter exit (and, on Linux, when the parent dies), and serialises start, restart
and stop with a lock. `EmbeddedRedis` (in `embedded.redis`) and `EmbeddedFalkorDB` (in
`embedded.falkordb`) subclass it and supply only what differs: the files the server is
started from and the modules it must report (`_spec`), the wording of its errors
(`_flavor`), its log file and directory names, its URL, port and repr.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, ClassVar, NamedTuple, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

HOST = "127.0.0.1"
"""The loopback address the server binds."""

LOG_TAIL_LINES = 40
"""How many log lines an error message quotes."""

PORT_ATTEMPTS = 5
"""How many free ports a server without a fixed port tries before giving up."""

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

_Server = TypeVar("_Server", bound="EmbeddedServer")


class EmbeddedRedisError(RuntimeError):
    """The embedded Redis server could not be found, started or verified."""


class PortTakenError(EmbeddedRedisError):
    """The chosen port was taken before the server could bind it."""


@dataclass(frozen=True)
class ServerFlavor:
    """What the error messages about one kind of embedded server say.

    Attributes:
        label: The server's name in a sentence ("embedded Redis server").
        extra: The extra its wheels come from, in a sentence ("the embedded extra").
        install_hint: The command installing that extra.
        instead: What to do instead of starting it, after "or" in a sentence.
        alternative: The same as a full sentence, for the end of a message.
        error: The exception class raised (PortTakenError aside).
    """

    label: str
    extra: str
    install_hint: str
    instead: str
    alternative: str
    error: type[EmbeddedRedisError] = EmbeddedRedisError

    def missing(self, what: str) -> EmbeddedRedisError:
        """The error for a server that cannot be started because `what` is missing."""
        return self.error(
            f"The {self.label} is not available: {what}. "
            f"Install {self.extra}: {self.install_hint}. {self.alternative}"
        )


class ServerSpec(NamedTuple):
    """What one start of a server needs from its subclass.

    The server binary, the modules to load (in order) and the module names (as
    ``MODULE LIST`` prints them) it must report.
    """

    executable: Path
    modules: tuple[Path, ...]
    required_modules: tuple[str, ...]


def package_dir(name: str) -> Path | None:
    """The directory of the installed top-level package `name`, without importing it."""
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


def check_files(flavor: ServerFlavor, server: Path, *others: Path) -> None:
    """Raise `flavor.missing(...)` unless `server` and `others` exist, `server` executable."""
    for path in (server, *others):
        if not path.is_file():
            raise flavor.missing(f"{path} does not exist")
    if not os.access(server, os.X_OK):
        raise flavor.missing(f"{server} is not executable")


def pick_free_port() -> int:
    """A loopback port nothing listens on right now (it may be taken before it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def parent_death_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies, or None.

    Linux only (``prctl(PR_SET_PDEATHSIG)``); None elsewhere or if libc cannot be
    loaded. The signal fires when the *thread* that forked the child exits, so it is
    only used when the server is started from the main thread.
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        # Resolve the symbol in the parent: loading libraries after fork is unsafe.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    parent_pid = os.getpid()
    sigterm = int(signal.SIGTERM)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def log_tail(path: Path, offset: int = 0) -> str:
    """The last lines of the log at `path` written after byte `offset`."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as e:
        return f"(log {path} unreadable: {e})"
    lines = text.strip().splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(lines) if lines else "(log is empty)"


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
        """Configure the server (arguments as `EmbeddedRedis`'s); nothing starts yet."""
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
        """``redis://127.0.0.1:<port>`` of the running server (the flavor's error if not)."""
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
        """Start the server; returns this instance."""
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
        flavor = self._flavor
        log_path = self._workdir / self._log_name
        log_offset = log_path.stat().st_size if log_path.exists() else 0
        self._log_handle = open(log_path, "ab")  # closed in _stop_process
        command = [
            str(spec.executable),
            "--bind", HOST,
            "--port", str(port),
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--dir", str(self._workdir),
            "--logfile", self._log_name,
            "--loglevel", "notice",
            "--save", "",
        ]  # fmt: skip
        if self._persistence:
            command += ["--appendonly", "yes", "--appendfsync", "everysec"]
        else:
            command += ["--appendonly", "no"]
        for module in spec.modules:
            command += ["--loadmodule", str(module)]
        try:
            self._proc = subprocess.Popen(
                command,
                cwd=self._workdir,
                stdin=subprocess.DEVNULL,
                stdout=self._log_handle,
                stderr=subprocess.STDOUT,
                preexec_fn=parent_death_preexec(),
                close_fds=True,
            )
        except OSError as e:
            raise flavor.error(
                f"Could not run {command[0]}: {e}. "
                f"Reinstall {flavor.extra}: {flavor.install_hint}. {flavor.alternative}"
            ) from e
        self._port = port
        self._wait_ready(self._proc, port, spec.required_modules, log_path, log_offset)

    def _wait_ready(
        self,
        proc: subprocess.Popen[bytes],
        port: int,
        required_modules: Sequence[str],
        log_path: Path,
        log_offset: int,
    ) -> None:
        """Wait until `proc` answers PING on `port` with `required_modules` loaded.

        Raises:
            PortTakenError: Another process holds or serves the port.
            EmbeddedRedisError: The process exited, did not answer within the startup
                timeout, misbehaved or lacks a module; the message ends with the tail of
                its log written since `log_offset`. Raised as the flavor's error class.
        """
        flavor, timeout = self._flavor, self._startup_timeout

        def failure(message: str) -> str:
            return f"{message}\n--- tail of {log_path} ---\n{log_tail(log_path, log_offset)}"

        deadline = time.monotonic() + timeout
        # One attempt per call (no client-side retries) and short timeouts: if another
        # process owns the port, its backlog may accept the connection and never answer.
        client = redis.Redis(
            host=HOST,
            port=port,
            socket_connect_timeout=1.0,
            socket_timeout=2.0,
            retry=Retry(NoBackoff(), 0),
            decode_responses=True,
        )
        try:
            last_error: Exception | None = None
            while True:
                code = proc.poll()
                if code is not None:
                    tail = log_tail(log_path, log_offset)
                    if "already in use" in tail:
                        raise PortTakenError(failure(f"Port {port} is in use."))
                    raise flavor.error(
                        failure(
                            f"The {flavor.label} exited with code {code} during startup. "
                            f"Reinstall {flavor.extra} ({flavor.install_hint}) or "
                            f"{flavor.instead}."
                        )
                    )
                if time.monotonic() > deadline:
                    raise flavor.error(
                        failure(
                            f"The {flavor.label} did not answer PING on port {port} "
                            f"within {timeout:g} s (last error: {last_error!r}). "
                            f"Raise startup_timeout or {flavor.instead}."
                        )
                    ) from last_error
                try:
                    client.ping()
                    info: dict[str, Any] = client.info("server")
                    modules = client.module_list()
                except (redis.ConnectionError, redis.TimeoutError) as e:
                    # Includes BusyLoadingError while an append-only file is loaded.
                    last_error = e
                    time.sleep(0.05)
                    continue
                except redis.RedisError as e:
                    raise flavor.error(failure(f"The {flavor.label} misbehaved: {e}")) from e
                break

            if int(info.get("process_id", -1)) != proc.pid:
                # Someone else's server answered on this port; ours cannot bind it.
                raise PortTakenError(
                    failure(
                        f"Port {port} is served by another process (pid {info.get('process_id')})."
                    )
                )
            names = {str(m.get("name", "")) for m in modules}
            missing = [m for m in required_modules if m.lower() not in {n.lower() for n in names}]
            if missing:
                raise flavor.error(
                    failure(
                        f"The {flavor.label} started without module(s) "
                        f"{', '.join(missing)} (MODULE LIST: {sorted(names)}). Reinstall "
                        f"{flavor.extra}: {flavor.install_hint}. {flavor.alternative}"
                    )
                )
        finally:
            client.close()

    def _stop_process(self) -> None:
        # SIGTERM makes the server shut down like SHUTDOWN NOSAVE here: no RDB save
        # points are configured, and an append-only file is flushed and fsynced. A
        # signal (unlike a SHUTDOWN command sent to the port) can never reach a server
        # that is not ours. SIGKILL if it has not exited after the shutdown timeout.
        proc = self._proc
        try:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
                try:
                    proc.wait(timeout=self._shutdown_timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=self._shutdown_timeout)
        finally:
            self._proc = None
            if self._log_handle is not None:
                self._log_handle.close()
                self._log_handle = None
