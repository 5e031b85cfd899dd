"""Building the tiers from the constructor's connection options."""

from __future__ import annotations

import os
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from langgraph_tiered_memory.config import DEFAULT_CHROMA_HNSW, ChromaHnswConfig, TierName
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store.base import DEFAULT_CHROMA_PATH
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.tiers.base import Tier
from langgraph_tiered_memory.store.tiers.chroma_tier import ChromaTier
from langgraph_tiered_memory.store.tiers.redis_tier import RedisTier

__all__ = ["build_tiers", "redis_from_url", "chroma_from_path", "check_hnsw"]


def redis_from_url(url: str) -> redis.Redis:
    """A Redis client with bounded timeouts and retries on transient errors."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=5,
        socket_timeout=10,
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
        retry_on_timeout=True,
    )


def chroma_from_path(path: str) -> Any:
    """An embedded Chroma client at `path`, checking the directory is writable first."""
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
    return chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))


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
) -> dict[TierName, Tier]:
    """Create the tiers the routing policy uses, owning the clients built here."""
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
            redis_client = redis_from_url(url)
        tiers["short"] = RedisTier(redis_client, key_prefix=key_prefix, owns_client=owns)
    if "long" in used:
        if chroma_client is not None and chroma_path is not None:
            raise ConfigurationError("Pass either chroma_client or chroma_path, not both.")
        path = chroma_path or os.environ.get("TIERED_MEMORY_CHROMA_PATH") or DEFAULT_CHROMA_PATH
        # The embedded client opens files, so it is created on first use (in a worker
        # thread for the async store), not in the constructor.
        tiers["long"] = ChromaTier(
            chroma_client,
            key_prefix=key_prefix,
            dims=dims,
            client_factory=None if chroma_client is not None else lambda: chroma_from_path(path),
            owns_client=chroma_client is None,
            hnsw=check_hnsw(chroma_hnsw),
            describe=describe,
            memory_index_path=memory_index_path,
        )
    return tiers


def check_hnsw(hnsw: ChromaHnswConfig | None) -> dict[str, int]:
    """Validate `chroma_hnsw` and fill in the defaults."""
    if hnsw is None:
        return dict(DEFAULT_CHROMA_HNSW)  # type: ignore[arg-type]
    if not isinstance(hnsw, dict):
        raise ConfigurationError(f"chroma_hnsw must be a dict, got {hnsw!r}.")
    unknown = set(hnsw) - set(DEFAULT_CHROMA_HNSW)
    if unknown:
        raise ConfigurationError(
            f"Unknown chroma_hnsw keys {sorted(unknown)}; use {sorted(DEFAULT_CHROMA_HNSW)}."
        )
    out = {**DEFAULT_CHROMA_HNSW, **hnsw}
    for key, value in out.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise ConfigurationError(f"chroma_hnsw[{key!r}] must be an int >= 2, got {value!r}.")
    return out  # type: ignore[return-value]
