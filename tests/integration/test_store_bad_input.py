"""Bad input fails loudly, names the fix, and leaves stored data intact."""

from __future__ import annotations

import math
import os
from datetime import datetime
from pathlib import Path

import pytest
import redis
from langgraph.store.base import PutOp

from langgraph_tiered_memory import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidFilterError,
    InvalidItemError,
    TieredMemoryStore,
)
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "value",
    [
        {"when": datetime(2024, 1, 1)},
        {"raw": b"bytes"},
        {"s": {1, 2}},
        {"x": float("nan")},
        {"x": [1, float("inf")]},
        {1: "non-string key"},
        ["not", "a", "dict"],
    ],
)
def test_unserialisable_values_fail_the_whole_batch(
    store: TieredMemoryStore, value: object
) -> None:
    store.put(("ns",), "keep", {"v": 1})
    with pytest.raises(InvalidItemError, match="JSON|dict"):
        store.batch(
            [
                PutOp(("ns",), "new", {"v": 2}),
                PutOp(("ns",), "keep", None),
                PutOp(("ns",), "bad", value),  # type: ignore[arg-type]
            ]
        )
    # Nothing of the failed batch was applied.
    assert store.get(("ns",), "keep").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(("ns",), "new") is None


@pytest.mark.parametrize(
    "flt",
    [
        {"x": float("nan")},
        {"x": {"$lt": float("inf")}},
        {"x": {"$gt": -math.inf}},
        {"x": {"$in": [1]}},
        {"x') OR 1=1 --": 1},
        {"has space": 1},
    ],
)
def test_bad_filters_raise(store: TieredMemoryStore, flt: dict) -> None:
    store.put(("f",), "k", {"x": 1})
    with pytest.raises(InvalidFilterError) as err:
        store.search(("f",), filter=flt)
    assert "filter" in str(err.value).lower()


def test_non_finite_filters_allowed_when_asked(make_store, tier: str) -> None:  # type: ignore[no-untyped-def]
    store = make_store(tier, allow_non_finite_filters=True)
    for i, price in enumerate([10, 20, 30]):
        store.put(("items",), str(i), {"price": price})
    assert len(store.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": -math.inf}})) == 3
    assert store.search(("items",), filter={"price": {"$eq": float("nan")}}) == []


def test_key_length_limit(store: TieredMemoryStore) -> None:
    store.put(("k",), "a" * 1024, {"v": 1})
    assert store.get(("k",), "a" * 1024) is not None
    with pytest.raises(InvalidItemError, match="1024 bytes"):
        store.put(("k",), "a" * 1025, {"v": 1})
    with pytest.raises(InvalidItemError, match="1024 bytes"):
        store.put(("k",), "é" * 513, {"v": 1})  # 1026 bytes in UTF-8
    with pytest.raises(InvalidItemError, match="string"):
        store.batch([PutOp(("k",), 5, {"v": 1})])  # type: ignore[arg-type]


def test_bad_ttl_is_rejected(store: TieredMemoryStore) -> None:
    for ttl in (0, -1, float("nan"), "5"):
        with pytest.raises(InvalidItemError, match="TTL"):
            store.put(("t",), "k", {"v": 1}, ttl=ttl)  # type: ignore[arg-type]
    assert store.get(("t",), "k") is None


def test_wrong_embedding_size_writes_nothing(make_store, tier: str) -> None:  # type: ignore[no-untyped-def]
    store = make_store(tier, index={"dims": DIMS + 1, "embed": HashingEmbeddings(DIMS)})
    with pytest.raises(ConfigurationError, match="dims"):
        store.put(("e",), "k", {"text": "x"})
    assert store.get(("e",), "k") is None
    assert store.list_namespaces() == []


def test_embedding_failure_writes_nothing(make_store, tier: str) -> None:  # type: ignore[no-untyped-def]
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model server down")

    store = make_store(tier, index={"dims": 4, "embed": broken})
    store.put(("e",), "keep", {"text": "x"}, index=False)
    with pytest.raises(RuntimeError, match="model server down"):
        store.batch([PutOp(("e",), "keep", None), PutOp(("e",), "new", {"text": "y"})])
    assert store.get(("e",), "keep") is not None
    assert store.get(("e",), "new") is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scoring": {"mode": "bm25"}}, "scoring"),
        ({"tiers": {"default": "medium"}}, "default"),
        ({"tiers": {"short": [("a",)], "long": [("a",)]}}, "both"),
        ({"key_prefix": "has space"}, "key_prefix"),
        ({"index": {"embed": HashingEmbeddings(4)}}, "dims"),
        ({"ttl": {"default_ttl": -5}}, "default_ttl"),
        ({"ttl": {"sweep_every": 1}}, "Unknown TTLConfig"),
    ],
)
def test_bad_configuration_is_named(
    tmp_path: Path, redis_url: str, kwargs: dict, match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        TieredMemoryStore(redis_url=redis_url, chroma_path=str(tmp_path), **kwargs)


def test_unreachable_redis_fails_fast_with_the_fix(tmp_path: Path) -> None:
    store = TieredMemoryStore(
        redis_url="redis://127.0.0.1:1/0", chroma_path=str(tmp_path), tiers={"default": "short"}
    )
    with pytest.raises(BackendUnavailableError, match="REDIS_URL"):
        store.setup()
    with pytest.raises(BackendUnavailableError, match="unreachable"):
        store.put(("a",), "k", {"v": 1})


def test_missing_redis_configuration_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        TieredMemoryStore(chroma_path=str(tmp_path))
    # A store routed entirely to Chroma needs no Redis.
    store = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    store.put(("a",), "k", {"v": 1})
    assert store.get(("a",), "k") is not None
    store.close()


def test_chroma_path_that_is_a_file_is_named(tmp_path: Path) -> None:
    afile = tmp_path / "not-a-dir"
    afile.write_text("x")
    store = TieredMemoryStore(chroma_path=str(afile / "db"), tiers={"default": "long"})
    with pytest.raises(ConfigurationError, match="chroma_path"):
        store.setup()


def test_readonly_chroma_dir_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root ignores permission bits, so simulate the check's answer for a read-only dir."""
    real_access = os.access
    target = str(tmp_path / "ro")

    def fake_access(path: str, mode: int) -> bool:
        if os.path.abspath(path) == os.path.abspath(target):
            return False
        return real_access(path, mode)

    monkeypatch.setattr(os, "access", fake_access)
    store = TieredMemoryStore(chroma_path=target, tiers={"default": "long"})
    with pytest.raises(ConfigurationError, match="not writable"):
        store.setup()


def test_store_routed_to_redis_works_without_modules(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The Redis tier uses only core commands: no FT.* or JSON.* call is ever made."""
    client = redis.Redis.from_url(redis_url)
    store = TieredMemoryStore(
        redis_client=client,
        key_prefix=key_prefix,
        tiers={"default": "short"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)},
    )
    calls: list[str] = []
    original = client.execute_command

    def spy(*args: object, **kw: object) -> object:
        calls.append(str(args[0]).upper())
        return original(*args, **kw)

    client.execute_command = spy  # type: ignore[method-assign]
    store.put(("a",), "k", {"text": "x"}, ttl=5)
    store.get(("a",), "k")
    store.search(("a",), query="x")
    store.list_namespaces()
    store.delete(("a",), "k")
    client.execute_command = original  # type: ignore[method-assign]
    assert calls and not any(c.startswith(("FT.", "JSON.")) for c in calls)
