"""Building the tiers from the constructor's connection options."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import redis
from redis.exceptions import RedisClusterException

from langgraph_tiered_memory._redis_client import DEFAULT_REDIS_TIMEOUT, is_cluster_url
from langgraph_tiered_memory._redis_client import redis_from_url as bounded_redis_from_url
from langgraph_tiered_memory.config import ChromaHnswConfig, TierName
from langgraph_tiered_memory.errors import BackendUnavailableError, ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.privacy._redact import mask_url, mask_urls_in
from langgraph_tiered_memory.store._config import (
    DEFAULT_CHROMA_PATH,
    GRAPH_EXTRA_HINT,
    GraphSpec,
    check_hnsw,
)
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.tiers._dirlock import lock_directory
from langgraph_tiered_memory.store.tiers.base import MemoryTier, Tier
from langgraph_tiered_memory.store.tiers.chroma_base import is_chroma_server
from langgraph_tiered_memory.store.tiers.chroma_tier import ChromaTier
from langgraph_tiered_memory.store.tiers.redis_tier import RedisTier

logger = logging.getLogger("langgraph_tiered_memory.store._backends")

CHROMA_URL_ENV = "TIERED_MEMORY_CHROMA_URL"
CHROMA_TOKEN_ENV = "TIERED_MEMORY_CHROMA_TOKEN"
CHROMA_HEADERS_ENV = "TIERED_MEMORY_CHROMA_HEADERS"
_ON = ("1", "true", "yes", "on")


def redis_from_url(url: str, timeout: float = DEFAULT_REDIS_TIMEOUT) -> Any:
    """A Redis client whose calls wait at most `timeout` seconds in all.

    Connection errors are retried (they are detected at once), timeouts never; the
    round trips of one store call share the `timeout` budget. A `?cluster=true` URL
    gives a `RedisCluster` client, which connects (to discover the nodes) here.
    """
    try:
        return bounded_redis_from_url(url, timeout)
    except ValueError as e:
        raise ConfigurationError(
            f"Invalid Redis URL {mask_url(url)!r} ({type(e).__name__}). Pass redis_url= (or"
            " set REDIS_URL) as redis://host[:port][/db], rediss://... or unix://path,"
            " with an optional user name and password before the host (followed by '@')"
            " and the password's special characters percent-encoded;"
            " add ?cluster=true for a Redis Cluster."
        ) from e
    except (redis.RedisError, RedisClusterException) as e:
        if not is_cluster_url(url):
            raise
        causes: list[str] = []
        cause: BaseException | None = e
        while cause is not None and len(causes) < 4:
            causes.append(f"{type(cause).__name__}: {mask_urls_in(str(cause))}")
            cause = cause.__cause__ or cause.__context__
        raise BackendUnavailableError(
            f"Cannot reach the Redis Cluster at {mask_url(url)!r} ({'; '.join(causes)})."
            " Check that a node answers at that address, that the cluster covers every"
            " slot (CLUSTER INFO: cluster_state:ok), and the user name and password."
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


def chroma_http_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    token_header: str = "Authorization",
    tenant: str | None = None,
    database: str | None = None,
) -> Any:
    """A `chromadb.HttpClient` for a Chroma server, sending auth headers on every request.

    Args:
        url: `http://host[:port]` or `https://host[:port]` (port defaults to 8000 for
            http, 443 for https); `?tenant=...&database=...` may name the tenant and
            database.
        headers: Extra HTTP headers (an API gateway's key, a proxy's auth).
        token: A token sent as `Authorization: Bearer <token>`, or, with
            `token_header="X-Chroma-Token"` (Chroma Cloud's header), as that header.
        token_header: The header carrying `token`.
        tenant: The tenant (overrides the URL's).
        database: The database (overrides the URL's).

    Raises:
        ConfigurationError: Not an http(s) URL.
        BackendUnavailableError: The server did not answer (URL shown masked).
    """
    import chromadb
    from chromadb.config import Settings

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"Not a Chroma server URL: {mask_url(url)!r}. Use http://host:port or"
            " https://host[:port] (set TIERED_MEMORY_CHROMA_URL, or pass chroma_client=)."
        )
    query = dict(parse_qsl(parts.query))
    ssl = parts.scheme == "https"
    sent = dict(headers or {})
    if token:
        sent[token_header] = f"Bearer {token}" if token_header.lower() == "authorization" else token
    try:
        return chromadb.HttpClient(
            host=parts.hostname,
            port=parts.port or (443 if ssl else 8000),
            ssl=ssl,
            headers=sent or None,
            settings=Settings(anonymized_telemetry=False),
            tenant=tenant or query.get("tenant") or "default_tenant",
            database=database or query.get("database") or "default_database",
        )
    except (ValueError, ConnectionError) as e:
        raise BackendUnavailableError(
            f"Cannot use the Chroma server at {mask_url(url)!r}: {mask_urls_in(str(e))}"
            " Check that it runs at that address and that the token or headers"
            f" ({CHROMA_TOKEN_ENV} / {CHROMA_HEADERS_ENV}) are accepted."
        ) from e


def chroma_from_env(
    environ: Mapping[str, str] | None = None,
) -> Callable[[], tuple[Any, Callable[[], None]]] | None:
    """A factory of the Chroma server client the environment names, or None.

    The server is `TIERED_MEMORY_CHROMA_URL` (`http(s)://host:port`), or
    `TIERED_MEMORY_CHROMA_HOST` with `_PORT` (8000) and `_SSL` (`true` for https).
    `TIERED_MEMORY_CHROMA_TOKEN` is sent as a bearer token and
    `TIERED_MEMORY_CHROMA_HEADERS` (a JSON object) as extra headers. The variables are
    read and checked now; the client connects when the factory is called.

    Args:
        environ: The variables (default: `os.environ`).
    """
    env = os.environ if environ is None else environ
    url = env.get(CHROMA_URL_ENV)
    host = env.get("TIERED_MEMORY_CHROMA_HOST")
    if url and host:
        raise ConfigurationError(
            f"Set {CHROMA_URL_ENV} or TIERED_MEMORY_CHROMA_HOST (with _PORT and _SSL), not both."
        )
    if host:  # the variables `langgraph_tiered_memory.server` reads too
        secure = env.get("TIERED_MEMORY_CHROMA_SSL", "").strip().lower() in _ON
        port = env.get("TIERED_MEMORY_CHROMA_PORT", "").strip() or "8000"
        url = f"{'https' if secure else 'http'}://{host.strip()}:{port}"
    if not url:
        return None
    raw = env.get(CHROMA_HEADERS_ENV)
    headers: dict[str, str] = {}
    if raw:
        try:
            loaded = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ConfigurationError(
                f"{CHROMA_HEADERS_ENV} must be a JSON object of header names to values"
                f" ({e.msg} at position {e.pos})."
            ) from None
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise ConfigurationError(
                f"{CHROMA_HEADERS_ENV} must be a JSON object of header names to values."
            )
        headers = loaded
    token = env.get(CHROMA_TOKEN_ENV) or None

    def open_client() -> tuple[Any, Callable[[], None]]:
        client = chroma_http_client(url, headers=headers, token=token)
        logger.info("long tier on the Chroma server at %s", mask_url(url))
        return client, lambda: None

    return open_client


_TIER_METHODS = (
    "setup", "get", "check_writes", "write", "refresh", "search", "namespaces", "sweep", "close"
)  # fmt: skip
"""The methods of the `Tier` protocol, which a tier passed as `short=` or `long=` needs."""


def _check_given_tier(
    name: TierName, tier: object, used: Iterable[TierName], **backend: object
) -> None:
    """A tier instance passed to the constructor: of use, alone, with the protocol's methods."""
    if tier is None:
        return
    option = f"{name}="
    if name not in used:
        raise ConfigurationError(
            f"{option} was given, but the tiers= policy routes no namespace to the"
            f" {name!r} tier; route some there (e.g. tiers={{'default': {name!r}}}) or drop"
            f" {option}."
        )
    clash = [k for k, v in backend.items() if v is not None]
    if clash:
        raise ConfigurationError(
            f"Pass either {option} (a tier instance) or {', '.join(clash)}, not both."
        )
    missing = [m for m in _TIER_METHODS if not callable(getattr(tier, m, None))]
    if missing or not isinstance(getattr(tier, "name", None), str):
        raise ConfigurationError(
            f"{option} must satisfy the Tier protocol (store.tiers.base.Tier): a `name`"
            f" string and the methods {', '.join(_TIER_METHODS)}; {type(tier).__name__}"
            f" lacks {', '.join(missing) or 'name'}."
        )


def build_tiers(
    *,
    router: TierRouter,
    key_prefix: str,
    dims: int,
    redis_client: redis.Redis | None,
    embedder: str | None = None,
    redis_url: str | None,
    chroma_client: Any | None,
    chroma_path: str | None,
    chroma_hnsw: ChromaHnswConfig | None = None,
    describe: Any = None,
    memory_index_path: str | None = None,
    redis_timeout: float = DEFAULT_REDIS_TIMEOUT,
    import_graph: Callable[[], GraphStore | None] | None = None,
    short: Tier | None = None,
    long: Tier | None = None,
) -> dict[TierName, Tier]:
    """Create the tiers the routing policy uses, owning the clients built here.

    The long tier is a `MemoryTier` (the store's `_long()` relies on it). On a Chroma
    server it gets the short tier's Redis client, or one from `redis_url`/`REDIS_URL`
    (its index and writer locks live there); beside an embedded Chroma it needs none.
    There, `memory_index_path` is a legacy file the tier imports when it opens, with
    the triples it holds going to `import_graph()` (the store's graph, made after the
    tiers).

    `embedder` names the embedding model (`embeddings.embedder_name`): the long tier
    records it with its collections and refuses collections that record another.
    """
    tiers: dict[TierName, Tier] = {}
    used = router.used_tiers
    if redis_client is not None and redis_url is not None:
        raise ConfigurationError("Pass either redis_client or redis_url, not both.")
    _check_given_tier("short", short, used, redis_client=redis_client, redis_url=redis_url)
    _check_given_tier(
        "long", long, used, chroma_client=chroma_client, chroma_path=chroma_path,
        memory_index_path=memory_index_path,
    )  # fmt: skip
    if short is not None:
        tiers["short"] = short
    elif "short" in used:
        owns = redis_client is None
        if redis_client is None:
            url = redis_url or os.environ.get("REDIS_URL")
            if not url:
                raise ConfigurationError(
                    "The short-term tier needs Redis: pass redis_url= or redis_client=, set"
                    " REDIS_URL, or start one with langgraph_tiered_memory.embedded.redis."
                    "EmbeddedRedis. To keep everything in Chroma pass tiers={'default': 'long'}."
                )
            redis_client = redis_from_url(url, redis_timeout)
        tiers["short"] = RedisTier(
            redis_client, key_prefix=key_prefix, owns_client=owns, dims=dims, embedder=embedder
        )
    if long is not None:
        tiers["long"] = long
    elif "long" in used:
        if chroma_client is not None and chroma_path is not None:
            raise ConfigurationError("Pass either chroma_client or chroma_path, not both.")
        path = chroma_path or os.environ.get("TIERED_MEMORY_CHROMA_PATH") or DEFAULT_CHROMA_PATH

        factory: Callable[[], tuple[Any, Callable[[], None]]] | None = None
        if chroma_client is None and chroma_path is None:
            factory = chroma_from_env()  # a Chroma server named by the environment
            if factory is not None and os.environ.get("TIERED_MEMORY_CHROMA_PATH"):
                raise ConfigurationError(
                    "Both a Chroma server (TIERED_MEMORY_CHROMA_URL or _HOST) and"
                    " TIERED_MEMORY_CHROMA_PATH are set: unset one."
                )
        server = factory is not None or (
            chroma_client is not None and is_chroma_server(chroma_client.get_settings())
        )
        if factory is None and chroma_client is None:

            def factory() -> tuple[Any, Callable[[], None]]:
                return chroma_from_path(path)

        long_redis, owns_redis = redis_client, False
        if server and long_redis is None:
            url = redis_url or os.environ.get("REDIS_URL")
            if not url:
                raise ConfigurationError(
                    "A long tier on a Chroma server keeps its index, memory history and"
                    " writer locks in Redis, so that every process using the server agrees:"
                    " pass redis_url='redis://host:6379' (or redis_client=, or set"
                    " REDIS_URL), a Redis with the search module (Redis 8 or Redis Stack)."
                )
            long_redis, owns_redis = redis_from_url(url, redis_timeout), True
        if server and memory_index_path is not None:
            logger.warning(
                "memory_index_path with a Chroma server names a legacy file: the long"
                " tier's index lives in Redis, and the file is imported into it once, when"
                " the tier opens. Once imported it is no longer read: remove the file and"
                " this option."
            )
        # The embedded client opens files, so it is created on first use (in a worker
        # thread for the async store), not in the constructor.
        long_tier: MemoryTier = ChromaTier(
            chroma_client,
            key_prefix=key_prefix,
            dims=dims,
            embedder=embedder,
            client_factory=factory,
            owns_client=chroma_client is None,
            hnsw=check_hnsw(chroma_hnsw),
            describe=describe,
            memory_index_path=memory_index_path,
            redis=long_redis if server else None,
            owns_redis=owns_redis,
            import_graph=import_graph if server else None,
        )
        tiers["long"] = long_tier
    return tiers


def chroma_is_server(chroma_client: Any | None, chroma_path: str | None) -> bool:
    """Whether the long tier's Chroma is a server, from the store's options alone.

    A server is a given `HttpClient` or `CloudClient` (its settings name the HTTP API),
    or, without `chroma_client` and `chroma_path`, the server the environment names
    (`chroma_from_env`). Nothing connects.
    """
    if chroma_client is not None:
        return is_chroma_server(chroma_client.get_settings())
    return chroma_path is None and chroma_from_env() is not None


def build_graph(
    spec: GraphSpec,
    long_tier: MemoryTier,
    *,
    chroma_server: bool = False,
    redis_client: Any = None,
) -> tuple[GraphStore, bool]:
    """The knowledge graph a checked `graph=` option names, and whether the store owns it.

    The default graph (`graph=True`) is the SQLite graph beside an embedded Chroma. With
    a Chroma server (`chroma_server`) it is FalkorDB on the store's Redis
    (`redis_client`, the short tier's), so that every process of a deployment shares
    it; its first call checks that this Redis has the FalkorDB module.

    Nothing connects here: the SQLite graph lives in the long tier's index file (opened
    on first use), FalkorDB clients connect on their first command.

    Raises:
        ConfigurationError: FalkorDB without the `graph` extra, the default graph on a
            Chroma server without a Redis of the store, or a caller's graph that claims
            to write in the tier's transaction.
    """
    backend = spec.backend
    if backend == "default" and chroma_server:
        shared = (
            "The knowledge graph of a store on a Chroma server needs a backend that every"
            " process of the deployment shares: graph=True keeps it in FalkorDB on the"
            " store's own Redis"
        )
        explicit = "graph={'backend': 'falkordb', 'url': 'redis://<FalkorDB server>:6379'}"
        if redis_client is None:
            raise ConfigurationError(
                f"{shared}, and this store has no Redis (its tiers= policy routes nothing to"
                f" 'short'). Pass {explicit}."
            )
        _import_falkordb(f"{shared}, which needs the FalkorDB client")
        from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph

        assert spec.graph_name is not None  # set in _config
        return FalkorDBGraph(redis_client=redis_client, graph_name=spec.graph_name), True
    if backend in ("default", "sqlite"):
        from langgraph_tiered_memory.graph.sqlite import SqliteGraph

        return SqliteGraph.for_tier(long_tier), True
    if backend == "falkordb":
        _import_falkordb("graph backend 'falkordb' needs the FalkorDB client")
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


def _import_falkordb(need: str) -> None:
    """Raise a `ConfigurationError` naming the extra when the FalkorDB client is missing."""
    try:
        import falkordb  # noqa: F401  (the client the backend needs)
    except ImportError as e:
        raise ConfigurationError(f"{need}: {GRAPH_EXTRA_HINT}.") from e
