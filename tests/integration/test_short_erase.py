"""Erasing a user's namespaces from the short (Redis) tier: items, vectors, key sets, and
the registry and liveness entries whose encoded namespaces name the user."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.privacy.erasure import UserNamespaces
from langgraph_tiered_memory.store.tiers._namespaces import encode_namespace, namespace_id
from langgraph_tiered_memory.store.tiers.redis_tier import RedisTier
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings
from tests.integration.test_redis_cluster import (  # the cluster fixtures
    _keys_per_node,
    _short_store,
    cluster_ports,  # noqa: F401
    cluster_url,  # noqa: F401
)

MARKER = "zebra-" + uuid.uuid4().hex[:8]


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def store(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    return make_store(
        "short",
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )


def _tier(store: TieredMemoryStore) -> RedisTier:
    tier = store._tiers["short"]
    assert isinstance(tier, RedisTier)
    return tier


def _raw(client: redis.Redis, prefix: str) -> list[bytes]:
    """Every key name under `prefix` and everything stored in it, as bytes."""
    out: list[bytes] = []
    for name in client.scan_iter(match=f"{prefix}:*", count=1000):
        out.append(name)
        kind = client.type(name).decode()
        if kind == "string":
            out.append(client.get(name) or b"")
        elif kind == "hash":
            for k, v in client.hgetall(name).items():
                out += [k, v]
        elif kind == "zset":
            out += list(client.zrange(name, 0, -1))
        elif kind == "set":
            out += list(client.smembers(name))
        else:  # pragma: no cover - the tier writes no other type
            raise AssertionError(f"unexpected key type {kind} for {name!r}")
    return out


def _holds(client: redis.Redis, prefix: str, needle: str) -> list[bytes]:
    return [b for b in _raw(client, prefix) if needle.encode() in b]


def _fill(store: TieredMemoryStore, user: str, other: str) -> list[tuple[str, ...]]:
    mine = [("short_term", "users", user, "notes"), ("short_term", "users", user, "scratch")]
    for ns in mine:
        store.put(ns, "forever", {"text": f"{MARKER} said by {user}"})
        store.put(ns, "brief", {"text": f"{MARKER} briefly"}, ttl=1.0)
    store.put(("short_term", "users", other, "notes"), "k", {"text": "other user"})
    store.put(("short_term", "shared"), "k", {"text": "shared"})
    return mine


def test_user_namespaces_are_found_and_erased_with_every_trace(
    store: TieredMemoryStore, client: redis.Redis, key_prefix: str, clock: Clock
) -> None:
    user, other = "u" + uuid.uuid4().hex[:8], "v" + uuid.uuid4().hex[:8]
    mine = _fill(store, user, other)
    tier = _tier(store)
    rule = UserNamespaces(user)
    assert tier.user_namespaces(rule) == sorted(mine)
    assert _holds(client, key_prefix, user) and _holds(client, key_prefix, MARKER)
    clock.now += 120  # the brief items expired for the store, and are swept from the key
    assert store.sweep_ttl() == 2  # sets; Redis (real time) still holds their documents

    planned = tier.erase_namespaces(mine, dry_run=True)
    expected_items = sorted((*ns, k) for ns in mine for k in ("brief", "forever"))
    assert sorted(planned["short.items"]) == expected_items
    assert sorted(planned["short.namespaces"]) == sorted(mine)
    assert _holds(client, key_prefix, user)  # the dry run removed nothing
    assert store.get(mine[0], "forever") is not None

    done = tier.erase_namespaces(mine)
    assert sorted(done["short.items"]) == sorted(planned["short.items"])
    assert sorted(done["short.namespaces"]) == sorted(planned["short.namespaces"])
    assert _holds(client, key_prefix, user) == []
    assert _holds(client, key_prefix, MARKER) == []
    assert tier.user_namespaces(rule) == []
    assert store.list_namespaces(prefix=("short_term", "users", user)) == []
    # The other user's and the shared data are intact and still listed.
    assert store.get(("short_term", "users", other, "notes"), "k") is not None
    assert store.get(("short_term", "shared"), "k") is not None
    assert sorted(store.list_namespaces(prefix=("short_term",))) == [
        ("short_term", "shared"),
        ("short_term", "users", other, "notes"),
    ]
    # Idempotent: a second run finds nothing.
    assert tier.erase_namespaces(mine) == {"short.items": [], "short.namespaces": []}


def test_a_run_stopped_before_the_registry_step_is_finished_by_a_rerun(
    store: TieredMemoryStore,
    client: redis.Redis,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user, other = "u" + uuid.uuid4().hex[:8], "v" + uuid.uuid4().hex[:8]
    mine = _fill(store, user, other)
    tier = _tier(store)

    def crash(encs: Any) -> None:
        raise RuntimeError("injected crash before the registry step")

    monkeypatch.setattr(tier, "_unregister", crash)
    with pytest.raises(RuntimeError, match="^injected crash before the registry step$"):
        tier.erase_namespaces(tier.user_namespaces(UserNamespaces(user)))
    monkeypatch.undo()
    # The items went first; the registry still names the namespaces, so a re-run finds them.
    assert _holds(client, key_prefix, MARKER) == []
    assert tier.user_namespaces(UserNamespaces(user)) == sorted(mine)
    again = tier.erase_namespaces(tier.user_namespaces(UserNamespaces(user)))
    assert again["short.items"] == []
    assert sorted(again["short.namespaces"]) == sorted(mine)
    assert _holds(client, key_prefix, user) == []


def test_orphans_are_found_documents_without_key_set_and_liveness_only_namespaces(
    store: TieredMemoryStore, client: redis.Redis, key_prefix: str
) -> None:
    user = "u" + uuid.uuid4().hex[:8]
    ns = ("short_term", "users", user, "notes")
    store.put(ns, "lost", {"text": MARKER})
    base = f"{key_prefix}:{{{namespace_id(ns)}}}"
    client.zrem(f"{base}:z", "lost")  # a document whose key-set entry is gone
    # A write that crashed after marking its namespace busy, never registered.
    ghost = ("short_term", "users", user, "ghost")
    client.hincrby(f"{key_prefix}:{{registry}}:busy", encode_namespace(ghost), 1)
    tier = _tier(store)
    assert tier.user_namespaces(UserNamespaces(user)) == sorted([ns, ghost])
    done = tier.erase_namespaces(tier.user_namespaces(UserNamespaces(user)))
    assert done["short.items"] == [(*ns, "lost")]
    assert sorted(done["short.namespaces"]) == sorted([ns, ghost])
    assert _holds(client, key_prefix, user) == []
    assert _holds(client, key_prefix, MARKER) == []


def test_erase_keys_removes_items_of_a_shared_namespace_only(
    store: TieredMemoryStore, client: redis.Redis, key_prefix: str
) -> None:
    shared = ("short_term", "shared")
    store.put(shared, "from-user", {"text": MARKER})
    store.put(shared, "from-other", {"text": "kept"})
    tier = _tier(store)
    keys = {shared: ["from-user", "never-written"]}
    assert tier.erase_keys(keys, dry_run=True) == {"short.items": [(*shared, "from-user")]}
    assert store.get(shared, "from-user") is not None
    assert tier.erase_keys(keys) == {"short.items": [(*shared, "from-user")]}
    assert store.get(shared, "from-user") is None
    assert store.get(shared, "from-other") is not None
    assert _holds(client, key_prefix, MARKER) == []
    assert store.list_namespaces(prefix=("short_term",)) == [shared]
    assert tier.erase_keys(keys) == {"short.items": []}


def test_erase_on_a_redis_cluster(cluster_ports: list[int], cluster_url: str) -> None:  # noqa: F811
    """Item keys spread over the nodes' slots; the registry lives in one slot."""
    store = _short_store(cluster_url, "clerase", Clock())
    try:
        user = "u" + uuid.uuid4().hex[:8]
        mine = [("short_term", "users", user, f"n{i}") for i in range(12)]
        for ns in mine:
            store.put(ns, "k", {"text": MARKER})
        store.put(("short_term", "users", "someone-else"), "k", {"text": "kept"})
        assert sum(1 for n in _keys_per_node(cluster_ports, "clerase") if n) > 1
        tier = _tier(store)
        found = tier.user_namespaces(UserNamespaces(user))
        assert found == sorted(mine)
        done = tier.erase_namespaces(found)
        assert len(done["short.items"]) == 12 and len(done["short.namespaces"]) == 12
        for port in cluster_ports:
            with redis.Redis(port=port) as node:
                assert _holds(node, "clerase", user) == []
                assert _holds(node, "clerase", MARKER) == []
        assert store.list_namespaces(prefix=("short_term",)) == [
            ("short_term", "users", "someone-else")
        ]
    finally:
        store.close()
