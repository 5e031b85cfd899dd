"""Opening, cleaning up and sizing the stores the store benchmarks compare.

A `StoreSpec` holds everything needed to open one store except the embedder, and is
plain data, so a child process can open the same store from it (the namespace
benchmark measures cold searches that way). Every store is reached only through its
public API, plus the files of its Chroma directory and Redis's ``INFO memory``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore

from tiered_memory_benchmarks._store_data import StoreBenchmarkError

__all__ = [
    "REDIS_STORES",
    "STORE_CHOICES",
    "STORE_LABELS",
    "StoreSpec",
    "checked_stores",
    "directory_footprint",
    "drop_chroma_collections",
    "drop_redis_keys",
    "open_store",
    "redis_for_run",
    "redis_used_memory",
]

STORE_CHOICES: tuple[str, ...] = ("long", "hybrid", "short", "inmemory", "redisstore")
"""Names accepted in `StoreBenchConfig.stores`, in the default order."""

STORE_LABELS: dict[str, str] = {
    "long": "tiered, long tier (Chroma), semantic",
    "hybrid": "tiered, long tier, memory ranking, hybrid",
    "short": "tiered, short tier (Redis)",
    "inmemory": "InMemoryStore",
    "redisstore": "RedisStore (upstream)",
}
"""Human-readable name of each benchmarked store."""

REDIS_STORES = frozenset({"short", "redisstore"})
"""The stores that need a Redis server."""


def checked_stores(stores: list[str]) -> list[str]:
    """`stores` without repeats, after checking every name is in `STORE_CHOICES`.

    Args:
        stores: Store names.

    Returns:
        The names, each once, in the order given.

    Raises:
        StoreBenchmarkError: A name is unknown, or none is given.
    """
    unknown = [s for s in stores if s not in STORE_CHOICES]
    if unknown or not stores:
        raise StoreBenchmarkError(
            f"Unknown store(s) {unknown or stores}; choose from {', '.join(STORE_CHOICES)}."
        )
    return list(dict.fromkeys(stores))


@dataclass(frozen=True)
class StoreSpec:
    """How to open one benchmarked store (plain data: it crosses process boundaries).

    Attributes:
        name: A name from `STORE_CHOICES`.
        dims: Size of the embeddings; the indexed field is ``content``.
        prefix: Prefix of the run's Redis keys and Chroma collections (``bench_<run id>``).
        redis_url: Redis for the ``short`` and ``redisstore`` stores.
        chroma_path: Chroma directory for the ``long`` and ``hybrid`` stores; with
            `chroma_host`, the directory of their memory index.
        chroma_host: A Chroma server (`chroma run`) for them instead of `chroma_path`.
        chroma_port: Its port.
    """

    name: str
    dims: int
    prefix: str
    redis_url: str | None = None
    chroma_path: str | None = None
    chroma_host: str | None = None
    chroma_port: int = 8000

    def redis_patterns(self) -> tuple[list[str], list[str]]:
        """The key patterns and search indexes this store writes to Redis.

        Returns:
            ``(key patterns, index names)``; both empty for stores without Redis.
        """
        if self.name == "short":
            return [f"{self.prefix}_short:*"], []
        if self.name == "redisstore":
            store, vectors = f"{self.prefix}_store", f"{self.prefix}_vectors"
            return [f"{store}:*", f"{vectors}:*"], [store, vectors]
        if self.name in ("long", "hybrid") and self.chroma_host is not None:
            # A long tier on a Chroma server keeps its index and locks in Redis.
            prefix = f"{self.prefix}_{self.name}"
            return [f"{prefix}:*"], [f"{prefix}:lt:kw"]
        return [], []


@contextlib.contextmanager
def open_store(spec: StoreSpec, embeddings: Embeddings) -> Iterator[BaseStore]:
    """Open one store, set it up, and close it at the end (its data stays).

    Args:
        spec: Which store, and where its data lives.
        embeddings: The embedder of its index.

    Yields:
        The store, set up.

    Raises:
        StoreBenchmarkError: `spec.name` is unknown.
    """
    index: dict[str, Any] = {"dims": spec.dims, "embed": embeddings, "fields": ["content"]}
    if spec.name == "inmemory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=index)  # type: ignore[arg-type]
        return
    if spec.name in ("long", "hybrid", "short"):
        from langgraph_tiered_memory import ScoringConfig, TieredMemoryStore, TierPolicy

        short = spec.name == "short"
        policy: TierPolicy = {"default": "short"} if short else {"default": "long"}
        # "long" measures dense search alone (compared with RedisStore); "hybrid" the
        # default memory ranking: dense + keyword retrieval, fusion, memory factors.
        scoring: ScoringConfig = (
            {"mode": "memory", "retrieval": "hybrid"}
            if spec.name == "hybrid"
            else {"mode": "similarity"}
        )
        chroma: dict[str, Any] = {"chroma_path": None if short else spec.chroma_path}
        if spec.chroma_host is not None and not short:
            import chromadb
            from chromadb.config import Settings

            if spec.redis_url is None:
                raise StoreBenchmarkError(
                    "A store on a Chroma server keeps its index in Redis: give a Redis URL."
                )
            chroma = {
                "chroma_client": chromadb.HttpClient(
                    host=spec.chroma_host,
                    port=spec.chroma_port,
                    settings=Settings(anonymized_telemetry=False),
                ),
            }
        store = TieredMemoryStore(
            redis_url=spec.redis_url if short or spec.chroma_host is not None else None,
            **chroma,
            index=index,  # type: ignore[arg-type]
            tiers=policy,
            key_prefix=f"{spec.prefix}_{spec.name}",
            scoring=scoring,
        )
        try:
            store.setup()
            yield store
        finally:
            store.close()
        return
    if spec.name == "redisstore":
        from langgraph.store.redis import RedisStore

        if spec.redis_url is None:
            raise StoreBenchmarkError("redisstore needs a Redis URL.")
        index["distance_type"] = "cosine"
        with RedisStore.from_conn_string(
            spec.redis_url,
            index=index,  # type: ignore[arg-type]
            store_prefix=f"{spec.prefix}_store",
            vector_prefix=f"{spec.prefix}_vectors",
        ) as upstream:
            upstream.setup()
            yield upstream
        return
    raise StoreBenchmarkError(
        f"Unknown store {spec.name!r}; choose from {', '.join(STORE_CHOICES)}."
    )


def drop_redis_keys(spec: StoreSpec) -> None:
    """Delete the keys and indexes `spec`'s store wrote (for a shared Redis).

    Args:
        spec: The store; nothing happens when it has no Redis.
    """
    import redis

    patterns, indexes = spec.redis_patterns()
    if spec.redis_url is None or not patterns:
        return
    client = redis.Redis.from_url(spec.redis_url)
    try:
        for name in indexes:
            with contextlib.suppress(redis.ResponseError):  # already gone
                client.execute_command("FT.DROPINDEX", name)
        for pattern in patterns:
            batch: list[bytes] = []
            for key in client.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    client.unlink(*batch)
                    batch.clear()
            if batch:
                client.unlink(*batch)
    finally:
        client.close()


def drop_chroma_collections(path: str, name_prefix: str) -> None:
    """Delete the collections whose name starts with `name_prefix` in a Chroma directory.

    Args:
        path: The Chroma directory; nothing happens when it does not exist.
        name_prefix: Prefix of the collections to delete.
    """
    if not os.path.isdir(path):
        return
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    for col in client.list_collections():
        if col.name.startswith(name_prefix):
            client.delete_collection(col.name)


def redis_for_run(stack: ExitStack, given: str | None, needed: bool) -> tuple[str | None, str]:
    """The Redis of a benchmark run, and whether its keys must be cleaned up.

    Args:
        stack: Holds an embedded server until the run ends.
        given: A URL chosen by the caller, or `None`.
        needed: Whether any benchmarked store uses Redis.

    Returns:
        ``(url, origin)``: origin is ``"given"``, ``"REDIS_URL"``, ``"embedded"`` or
        ``""`` when Redis is not needed (then the URL is `given`).
    """
    if not needed:
        return given, ""
    if given is not None:
        return given, "given"
    from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

    origin = "REDIS_URL" if os.environ.get("REDIS_URL") else "embedded"
    return stack.enter_context(redis_url_or_embedded()), origin


def redis_used_memory(url: str) -> int:
    """Redis's ``used_memory`` (bytes), from ``INFO memory``.

    Args:
        url: The server.

    Returns:
        The bytes the server's data and overhead use.
    """
    import redis

    client = redis.Redis.from_url(url)
    try:
        info = client.info("memory")
        return int(info["used_memory"])
    finally:
        client.close()


def directory_footprint(path: str) -> tuple[int, int]:
    """Bytes (apparent file sizes) and number of regular files under `path`.

    Args:
        path: A directory; a missing one counts as empty.

    Returns:
        ``(bytes, files)``.
    """
    size = files = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                size += os.path.getsize(full)
                files += 1
    return size, files
