"""Building the tiers from the constructor's connection options."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import redis

from langgraph_tiered_memory._redact import mask_url
from langgraph_tiered_memory._redis_client import DEFAULT_REDIS_TIMEOUT
from langgraph_tiered_memory._redis_client import redis_from_url as bounded_redis_from_url
from langgraph_tiered_memory.config import ChromaHnswConfig, TierName
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.store._config import (
    DEFAULT_CHROMA_PATH,
    GRAPH_EXTRA_HINT,
    GraphSpec,
    check_hnsw,
)
from langgraph_tiered_memory.store._dirlock import lock_directory
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.tiers.base import MemoryTier, Tier
from langgraph_tiered_memory.store.tiers.chroma_tier import ChromaTier
from langgraph_tiered_memory.store.tiers.redis_tier import RedisTier

__all__ = ["build_graph", "build_tiers", "redis_from_url", "chroma_from_path", "check_hnsw"]


def redis_from_url(url: str, timeout: float = DEFAULT_REDIS_TIMEOUT) -> redis.Redis:
    """A Redis client whose calls wait at most `timeout` seconds in all.

    Connection errors are retried (they are detected at once), timeouts never; the
    round trips of one store call share the `timeout` budget.
    """
    try:
        return bounded_redis_from_url(url, timeout)
    except ValueError as e:
        raise ConfigurationError(
            f"Invalid Redis URL {mask_url(url)!r} ({type(e).__name__}). Pass redis_url= (or"
            " set REDIS_URL) as redis://[[user]:password@]host[:port][/db], rediss://..."
            " or unix://path, with special characters of the password percent-encoded."
        ) from e


def chroma_from_path(path: str) -> tuple[Any, Callable[[], None]]:
    """An embedded Chroma client at `path`, and the function that closes it.

    The directory is checked to be writable, then locked against other processes
    (see `_dirlock`) until the returned function is called: several processes writing
    one embedded Chroma directory lose vectors.

    Raises:
        ChromaDirectoryInUseError: Another process has a store open on `path`.
        ConfigurationError: The directory cannot be created, written or locked.
    """
    import chromadb
    from chromadb.config import Settings

    path = os.path.abspath(os.path.expanduser(path))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise ConfigurationError(
            f"Cannot create the Chroma directory {path!r}: {e}. Pass chroma_path= a writable"
            " directory (or set TIERED_MEMORY_CHROMA_PATH), or pass chroma_client=."
        ) from e
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigurationError(
            f"The Chroma directory {path!r} is not writable. Pass chroma_path= a writable"
            " directory (or set TIERED_MEMORY_CHROMA_PATH), or fix its permissions."
        )
    lock = lock_directory(path)
    try:
        client: Any = chromadb.PersistentClient(
            path=path, settings=Settings(anonymized_telemetry=False)
        )
    except BaseException:
        lock.release()
        raise

    def close() -> None:
        try:
            # Stops Chroma's shared system of `path` once no client of it is left, so a
            # later open reads what other processes wrote meanwhile (chromadb >= 1.5.x).
            if hasattr(client, "close"):
                client.close()
        finally:
            lock.release()

    return client, close


def build_tiers(
    *,
    router: TierRouter,
    key_prefix: str,
    dims: int,
    redis_client: redis.Redis | None,
    redis_url: str | None,
    chroma_client: Any | None,
    chroma_path: str | None,
    chroma_hnsw: ChromaHnswConfig | None = None,
    describe: Any = None,
    memory_index_path: str | None = None,
    redis_timeout: float = DEFAULT_REDIS_TIMEOUT,
) -> dict[TierName, Tier]:
    """Create the tiers the routing policy uses, owning the clients built here.

    The long tier is a `MemoryTier` (the store's `_long()` relies on it).
    """
    tiers: dict[TierName, Tier] = {}
    used = router.used_tiers
    if "short" in used:
        if redis_client is not None and redis_url is not None:
            raise ConfigurationError("Pass either redis_client or redis_url, not both.")
        owns = redis_client is None
        if redis_client is None:
            url = redis_url or os.environ.get("REDIS_URL")
            if not url:
                raise ConfigurationError(
                    "The short-term tier needs Redis: pass redis_url= or redis_client=, set"
                    " REDIS_URL, or start one with langgraph_tiered_memory.embedded."
                    "EmbeddedRedis. To keep everything in Chroma pass tiers={'default': 'long'}."
                )
            redis_client = redis_from_url(url, redis_timeout)
        tiers["short"] = RedisTier(redis_client, key_prefix=key_prefix, owns_client=owns)
    if "long" in used:
        if chroma_client is not None and chroma_path is not None:
            raise ConfigurationError("Pass either chroma_client or chroma_path, not both.")
        path = chroma_path or os.environ.get("TIERED_MEMORY_CHROMA_PATH") or DEFAULT_CHROMA_PATH
        # The embedded client opens files, so it is created on first use (in a worker
        # thread for the async store), not in the constructor.
        long_tier: MemoryTier = ChromaTier(
            chroma_client,
            key_prefix=key_prefix,
            dims=dims,
            client_factory=None if chroma_client is not None else lambda: chroma_from_path(path),
            owns_client=chroma_client is None,
            hnsw=check_hnsw(chroma_hnsw),
            describe=describe,
            memory_index_path=memory_index_path,
        )
        tiers["long"] = long_tier
    return tiers


def build_graph(spec: GraphSpec, long_tier: MemoryTier) -> tuple[GraphStore, bool]:
    """The knowledge graph a checked `graph=` option names, and whether the store owns it.

    Nothing connects here: the SQLite graph lives in the long tier's index file (opened
    on first use), FalkorDB clients connect on their first command.

    Raises:
        ConfigurationError: FalkorDB without the `graph` extra, or a caller's graph
            that claims to write in the tier's transaction.
    """
    backend = spec.backend
    if backend == "sqlite":
        from langgraph_tiered_memory.graph.sqlite import SqliteGraph

        return SqliteGraph.for_tier(long_tier), True
    if backend == "falkordb":
        try:
            import falkordb  # noqa: F401  (the client the backend needs)
        except ImportError as e:
            raise ConfigurationError(
                f"graph backend 'falkordb' needs the FalkorDB client: {GRAPH_EXTRA_HINT}."
            ) from e
        from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph

        assert spec.url is not None and spec.graph_name is not None  # checked in _config
        return FalkorDBGraph(url=spec.url, graph_name=spec.graph_name), True
    assert not isinstance(backend, str)
    if backend.in_tier_transaction:
        raise ConfigurationError(
            f"The GraphStore {type(backend).__name__} writes in a tier's transaction"
            " (in_tier_transaction=True), so it belongs to the tier that made it: pass"
            " graph='sqlite' for the embedded graph of this store's long tier."
        )
    return backend, False
