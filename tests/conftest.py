"""Shared fixtures: one real Redis (REDIS_URL or an embedded server) per test session.

Every test under tests/integration carries the `integration` marker (set here, by path).

Tests of the FalkorDB graph backend share one FalkorDB (FALKORDB_URL or an embedded
server), started the first time a test asks for it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import redis

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded
from tests.fakes import Clock, HashingEmbeddings

DIMS = 64
# Rich renders the CLI's tables at the terminal's width, which differs between a console,
# CI and pytest-xdist workers (80 columns): tests that read table text see one width.
os.environ["COLUMNS"] = "160"

INTEGRATION = Path(__file__).parent / "integration"
UNIT = Path(__file__).parent / "unit"
SERVERS = {"redis_url", "falkordb_server"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/integration `integration` (one place, not per file).

    A tests/unit test that asks for a server fixture is refused: it belongs there.
    """
    misplaced = []
    for item in items:
        if INTEGRATION in item.path.parents:
            item.add_marker(pytest.mark.integration)
        elif UNIT in item.path.parents:
            used = SERVERS.intersection(getattr(item, "fixturenames", ()))
            if used:
                misplaced.append(f"{item.nodeid} ({', '.join(sorted(used))})")
    if misplaced:
        raise pytest.UsageError(
            "tests/unit tests must not need a server; move these to tests/integration: "
            + "; ".join(misplaced)
        )


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """`REDIS_URL` if set, else a private Redis with modules for the whole session."""
    with redis_url_or_embedded() as url:
        yield url


class FalkorDBServer(NamedTuple):
    """The session's FalkorDB server."""

    url: str
    restart: Callable[[], None] | None
    """Restarts the server keeping its data; None for a server given by FALKORDB_URL."""


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorDBServer]:
    """`FALKORDB_URL` if set, else a private, persistent FalkorDB for the rest of the session.

    Like every fixture it is set up only when a test needs it, so sessions without
    FalkorDB tests never start the server (nor import the `graph` extra).
    """
    url = os.environ.get("FALKORDB_URL")
    if url:
        yield FalkorDBServer(url, None)
        return
    from langgraph_tiered_memory.embedded.falkordb import EmbeddedFalkorDB

    with EmbeddedFalkorDB(tmp_path_factory.mktemp("falkordb")) as server:
        yield FalkorDBServer(server.url, server.restart)


@pytest.fixture(scope="session")
def falkordb_url(falkordb_server: FalkorDBServer) -> str:
    """The URL of the session's FalkorDB server (`falkordb_server`)."""
    return falkordb_server.url


@pytest.fixture
def key_prefix(redis_url: str) -> Iterator[str]:
    """A fresh key prefix; its Redis keys are removed after the test."""
    prefix = "t" + uuid.uuid4().hex[:12]
    yield prefix
    drop_redis_keys(redis_url, prefix)


def delete_keys(client: Any, keys: Sequence[Any]) -> None:
    """Delete `keys`; knowledge graphs (FalkorDB keys) through `GRAPH.DELETE`.

    A plain `DEL` of a graph key can crash FalkorDB 4.16's server (a segfault in
    `Globals_RemoveGraphByName`, seen on DEL of a graph and its telemetry stream), and
    with it the session's Redis and every later test of that worker.
    """
    rest = []
    for key in keys:
        kind = client.type(key)
        if kind in (b"graphdata", "graphdata"):
            client.execute_command("GRAPH.DELETE", key)
        elif kind not in (b"none", "none"):
            rest.append(key)
    if rest:
        client.delete(*rest)


def drop_graph(redis_url: str, name: str) -> None:
    """Delete the FalkorDB graph `name` and its telemetry stream, if they exist."""
    client = redis.Redis.from_url(redis_url)
    try:
        delete_keys(client, [name, f"telemetry{{{name}}}"])
    finally:
        client.close()


def drop_redis_keys(redis_url: str, prefix: str) -> None:
    """Delete every Redis key a store with `prefix` created."""
    client = redis.Redis.from_url(redis_url)
    try:
        delete_keys(client, list(client.scan_iter(match=f"{prefix}:*", count=1000)))
    finally:
        client.close()


@pytest.fixture
def embeddings() -> HashingEmbeddings:
    return HashingEmbeddings(dims=DIMS)


@pytest.fixture(params=["short", "long"])
def tier(request: pytest.FixtureRequest) -> str:
    """Run the test once against each tier."""
    return str(request.param)


@pytest.fixture
def make_store(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> Iterator[Callable[..., TieredMemoryStore]]:
    """Build stores on the session's Redis and a per-test Chroma directory."""
    made: list[TieredMemoryStore] = []

    def make(tier: str | None = None, **kwargs: Any) -> TieredMemoryStore:
        kwargs.setdefault("redis_url", redis_url)
        kwargs.setdefault("chroma_path", str(tmp_path / "chroma"))
        kwargs.setdefault("key_prefix", key_prefix)
        # The contract tests check LangGraph's semantics (score = cosine similarity);
        # memory-ranking tests pass scoring=None (the default, "memory") explicitly.
        kwargs.setdefault("scoring", {"mode": "similarity"})
        if tier is not None:
            kwargs.setdefault("tiers", {"default": tier})
        store = TieredMemoryStore(**kwargs)
        store.setup()
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., TieredMemoryStore], tier: str) -> TieredMemoryStore:
    """A store without an index on the tier under test."""
    return make_store(tier)


@pytest.fixture
def vstore(
    make_store: Callable[..., TieredMemoryStore], tier: str, embeddings: HashingEmbeddings
) -> TieredMemoryStore:
    """A store with semantic search on the tier under test."""
    return make_store(tier, index={"dims": DIMS, "embed": embeddings, "fields": ["text"]})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_options(redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock) -> dict[str, Any]:
    """Options of a memory-mode store (default scoring) with an index and the settable clock."""
    return {
        "redis_url": redis_url,
        "chroma_path": str(tmp_path / "chroma"),
        "key_prefix": key_prefix,
        "clock": clock,
        "index": {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    }


@pytest.fixture
def mstore(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    """A memory-mode long-term store (the default scoring) with a settable clock."""
    return make_store(
        "long",
        scoring=None,
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    )
