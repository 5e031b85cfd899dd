"""The default knowledge graph (`graph=True`) of a store on a Chroma server.

With a Chroma server every process of a deployment is a replica, so the graph must be
shared: `graph=True` keeps it in FalkorDB on the store's own Redis (the session's
embedded Redis loads FalkorDB's module, `EmbeddedRedis`). Checked here: two replicas
see the same triples, the graph is named by the key prefix, erase and export reach
it, a Redis without the module gets an error naming both fixes, and a store on an
embedded Chroma keeps its SQLite graph.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
import redis
from chromadb.config import Settings
from typer.testing import CliRunner

from langgraph_tiered_memory import ConfigurationError, TieredMemoryStore
from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.embedded.redis import EmbeddedRedis
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph
from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.privacy import erase_user, export_user
from tests.conftest import DIMS, drop_graph
from tests.fakes import HashingEmbeddings
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401

ANNA = ("users", "anna", "memories")
BEN = ("users", "ben", "memories")


def _facts(store: TieredMemoryStore, prefix: tuple[str, ...] = ()) -> set[tuple[Any, ...]]:
    return {
        (r.namespace, r.subject, r.relation, r.object, r.memory_keys)
        for r in graph_triples(store, prefix)
    }


class Replicas:
    """Stores on one Chroma server and one Redis, as the processes of a deployment."""

    def __init__(self, server: tuple[str, int], redis_url: str, tmp_path: Path) -> None:
        self.server, self.redis_url, self.tmp_path = server, redis_url, tmp_path
        self.opened: list[TieredMemoryStore] = []

    def open(
        self, prefix: str, *, redis_url: str | None = None, **options: Any
    ) -> TieredMemoryStore:
        host, port = self.server
        client = chromadb.HttpClient(
            host=host, port=port, settings=Settings(anonymized_telemetry=False)
        )
        store = TieredMemoryStore(
            chroma_client=client,
            redis_url=redis_url or self.redis_url,
            key_prefix=prefix,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
            **{"graph": True, **options},
        )
        self.opened.append(store)
        return store


@pytest.fixture
def replicas(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    tmp_path: Path,
) -> Iterator[Replicas]:
    made = Replicas(chroma_server, redis_url, tmp_path)
    yield made
    for store in made.opened:
        store.close()


def _drop_graph(redis_url: str, name: str) -> None:
    drop_graph(redis_url, name)


@pytest.fixture
def prefixes(redis_url: str) -> Iterator[list[str]]:
    """Fresh key prefixes; their graphs are dropped after the test."""
    made: list[str] = []
    yield made
    for prefix in made:
        _drop_graph(redis_url, f"{prefix}_graph")


def _prefix(prefixes: list[str]) -> str:
    prefix = "g" + uuid.uuid4().hex[:10]
    prefixes.append(prefix)
    return prefix


def test_replicas_on_a_chroma_server_share_the_default_graph_in_the_stores_redis(
    replicas: Replicas, prefixes: list[str], redis_url: str
) -> None:
    prefix = _prefix(prefixes)
    one, two = replicas.open(prefix), replicas.open(prefix)
    one.setup()
    two.setup()
    assert isinstance(one.graph, FalkorDBGraph) and one.graph.graph_name == f"{prefix}_graph"
    one.put(ANNA, "m1", {"content": "Anna lives in Paris."})
    two.put(BEN, "m2", {"content": "Ben works at Acme."})
    expected = {
        (ANNA, "anna", "lives_in", "paris", ("m1",)),
        (BEN, "ben", "works_at", "acme", ("m2",)),
    }
    assert _facts(one) == _facts(two) == expected
    # The triples are in the store's own Redis, as the graph named by the key prefix.
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.type(f"{prefix}_graph") == b"graphdata"
    finally:
        client.close()
    # A replica's rewrite and delete reach the other one.
    two.put(ANNA, "m1", {"content": "Anna lives in Lisbon."})
    one.delete(BEN, "m2")
    assert _facts(one) == _facts(two) == {(ANNA, "anna", "lives_in", "lisbon", ("m1",))}


def test_stores_with_other_key_prefixes_on_one_redis_keep_their_graphs_apart(
    replicas: Replicas, prefixes: list[str], redis_url: str
) -> None:
    first, second = _prefix(prefixes), _prefix(prefixes)
    a, b = replicas.open(first), replicas.open(second)
    a.put(ANNA, "m1", {"content": "Anna lives in Paris."})
    b.put(ANNA, "m1", {"content": "Anna works at Acme."})
    assert _facts(a) == {(ANNA, "anna", "lives_in", "paris", ("m1",))}
    assert _facts(b) == {(ANNA, "anna", "works_at", "acme", ("m1",))}
    # Both graphs live in the one Redis, each under its store's key prefix.
    client = redis.Redis.from_url(redis_url)
    try:
        assert [client.type(f"{p}_graph") for p in (first, second)] == [b"graphdata"] * 2
    finally:
        client.close()


def test_export_and_erase_reach_the_users_triples_in_the_stores_redis(
    replicas: Replicas, prefixes: list[str]
) -> None:
    prefix = _prefix(prefixes)
    one, two = replicas.open(prefix), replicas.open(prefix)
    one.put(ANNA, "m1", {"content": "Anna lives in Paris."})
    one.put(BEN, "m2", {"content": "Ben works at Acme."})
    exported = export_user(two, "anna")["triples"]
    assert [(t["subject"], t["relation"], t["object"]) for t in exported] == [
        ("anna", "lives_in", "paris")
    ]
    erase_user(two, "anna")
    assert _facts(one) == {(BEN, "ben", "works_at", "acme", ("m2",))}
    assert export_user(one, "anna")["triples"] == []


def test_a_redis_without_falkordb_gets_an_error_naming_both_fixes(
    replicas: Replicas, prefixes: list[str]
) -> None:
    with EmbeddedRedis(graph=False) as plain:
        store = replicas.open(_prefix(prefixes), redis_url=plain.url)
        with pytest.raises(ConfigurationError) as err:
            store.setup()
        message = str(err.value)
        assert "no FalkorDB module" in message and "shares" in message
        assert "--loadmodule" in message and "falkordb.so" in message
        assert "graph={'backend': 'falkordb', 'url':" in message
        # Nothing was written to that Redis (no graph key, no half-made graph).
        client = redis.Redis.from_url(plain.url)
        try:
            assert client.keys("*_graph") == []
        finally:
            client.close()


def test_a_long_only_server_store_keeps_its_graph_in_the_redis_of_its_index(
    replicas: Replicas, prefixes: list[str]
) -> None:
    prefix = _prefix(prefixes)
    first = replicas.open(prefix, tiers={"default": "long"})
    assert isinstance(first.graph, FalkorDBGraph)
    first.put(ANNA, "m1", {"content": "Anna lives in Paris."})
    assert _facts(replicas.open(prefix, tiers={"default": "long"})) == _facts(first) != set()


def test_an_explicit_sqlite_graph_on_a_server_is_refused_naming_the_shared_default(
    replicas: Replicas, prefixes: list[str]
) -> None:
    with pytest.raises(ConfigurationError, match=r"graph=True \(FalkorDB on the store's own Redis"):
        replicas.open(_prefix(prefixes), graph="sqlite")


def test_the_default_graph_of_an_embedded_chroma_is_still_sqlite(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    with TieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        graph=True,
    ) as store:
        assert isinstance(store.graph, SqliteGraph) and store.graph.in_tier_transaction
        store.put(ANNA, "m1", {"content": "Anna lives in Paris."})
        assert _facts(store) == {(ANNA, "anna", "lives_in", "paris", ("m1",))}
        client = redis.Redis.from_url(redis_url)
        try:
            assert client.exists(f"{key_prefix}_graph") == 0
        finally:
            client.close()


def test_a_chroma_server_named_by_the_environment_also_gets_the_shared_graph(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    prefixes: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, port = chroma_server
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_URL", f"http://{host}:{port}")
    monkeypatch.delenv("TIERED_MEMORY_CHROMA_PATH", raising=False)
    prefix = _prefix(prefixes)
    with TieredMemoryStore.from_conn_string(
        redis_url,
        key_prefix=prefix,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        memory_index_path=str(tmp_path / "index.sqlite3"),
        graph={"extractor": "rules"},  # a GraphConfig without 'backend' is the default too
    ) as store:
        assert isinstance(store.graph, FalkorDBGraph)
        store.put(ANNA, "m1", {"content": "Anna lives in Paris."})
        assert _facts(store) == {(ANNA, "anna", "lives_in", "paris", ("m1",))}


def test_the_graph_command_reads_a_server_stores_graph_from_its_redis(
    replicas: Replicas, prefixes: list[str], redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    prefix = _prefix(prefixes)
    replicas.open(prefix).put(ANNA, "m1", {"content": "Anna lives in Paris."})
    host, port = replicas.server
    server = ["graph", "--namespace", "users/anna", "--key-prefix", prefix, "--format", "json"]
    server += ["--chroma-host", host, "--chroma-port", str(port)]
    result = CliRunner().invoke(app, [*server, "--falkordb-url", redis_url])
    assert result.exit_code == 0, result.output
    triples = json.loads(result.stdout)["triples"]
    assert [(t["subject"], t["relation"], t["object"]) for t in triples] == [
        ("anna", "lives_in", "paris")
    ]
    by_redis = CliRunner().invoke(app, [*server, "--redis-url", redis_url])
    assert by_redis.exit_code == 0, by_redis.output
    assert json.loads(by_redis.stdout)["triples"] == triples
    refused = CliRunner(env={"COLUMNS": "300"}).invoke(app, server)
    assert refused.exit_code == 2
    assert "--redis-url" in refused.output and "keeps its index and its graph" in refused.output


def test_a_redis_user_refused_module_list_gets_an_error_naming_the_falkordb_option(
    replicas: Replicas, prefixes: list[str]
) -> None:
    with EmbeddedRedis() as server:
        admin = redis.Redis.from_url(server.url)
        try:
            admin.acl_setuser(
                "app", enabled=True, passwords=["+s3cret"], keys=["*"], channels=["*"],
                commands=["+@all", "-module"],
            )  # fmt: skip
        finally:
            admin.close()
        url = server.url.replace("redis://", "redis://app:s3cret@")
        store = replicas.open(_prefix(prefixes), redis_url=url)
        with pytest.raises(ConfigurationError) as err:
            store.setup()
        message = str(err.value)
        assert "MODULE LIST failed" in message and "s3cret" not in message
        assert "graph={'backend': 'falkordb', 'url':" in message
