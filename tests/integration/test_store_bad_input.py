"""Bad input fails loudly, names the fix, and leaves stored data intact."""

from __future__ import annotations

import math
import os
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError, PutOp

from langgraph_tiered_memory import (
    AsyncTieredMemoryStore,
    BackendUnavailableError,
    ConfigurationError,
    InvalidFilterError,
    InvalidItemError,
    TieredMemoryStore,
)
from langgraph_tiered_memory.store._validate import MAX_VALUE_DEPTH
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings


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


# --------------------------------------------------------------------------- atomic batches

LONE = "\ud800"  # a lone surrogate: a str Python accepts but UTF-8 cannot encode


def _snapshot(store: TieredMemoryStore, skip: tuple[tuple[str, ...], ...] = ()) -> list[object]:
    """Every namespace and every item (value and timestamps) the store shows."""
    namespaces = store.list_namespaces(limit=10_000)
    items = []
    for ns in namespaces:
        if ns in skip:
            continue
        for it in store.search(ns, limit=10_000):
            if it.namespace == ns:
                items.append((it.namespace, it.key, it.value, it.created_at, it.updated_at))
    return [namespaces, sorted(items, key=lambda x: (x[0], x[1]))]


def _nested(depth: int) -> dict:
    """A value with `depth` nested containers, alternating dicts and lists."""
    node: object = "leaf"
    for level in range(depth - 1):
        node = {"d": node} if level % 2 else [node]
    return {"d": node}


@pytest.mark.parametrize(
    "op, error",
    [
        (PutOp(("bad",), "k", {"text": "a" + LONE}), InvalidItemError),
        (PutOp(("bad",), "k", {"deep": [{"x": ["ok", LONE]}]}), InvalidItemError),
        (PutOp(("bad",), "k", {LONE: 1}), InvalidItemError),
        (PutOp(("bad",), "k" + LONE, {"v": 1}), InvalidItemError),
        (PutOp(("bad", LONE), "k", {"v": 1}), InvalidNamespaceError),
        (PutOp(("bad",), "k", {"v": 1}, index=["v" + LONE]), InvalidItemError),
        (PutOp(("ok",), "a" + LONE, None), InvalidItemError),
        (PutOp((LONE,), "a", None), InvalidNamespaceError),
    ],
    ids=["value", "nested-value", "dict-key", "key", "label", "index-path", "del-key", "del-ns"],
)
def test_unencodable_text_fails_the_whole_batch_before_any_write(
    store: TieredMemoryStore, op: PutOp, error: type[Exception]
) -> None:
    store.put(("ok",), "keep", {"v": 0})
    before = _snapshot(store)
    with pytest.raises(error, match="UTF-8") as err:
        store.batch([PutOp(("ok",), "a", {"v": 1}), PutOp(("ok",), "keep", None), op])
    assert "surrogate" in str(err.value)
    assert _snapshot(store) == before
    assert store.list_namespaces() == [("ok",)]


def test_value_depth_limit(store: TieredMemoryStore) -> None:
    assert MAX_VALUE_DEPTH == 100
    store.put(("d",), "limit", _nested(MAX_VALUE_DEPTH))
    assert store.get(("d",), "limit").value == _nested(MAX_VALUE_DEPTH)  # type: ignore[union-attr]
    for depth in (MAX_VALUE_DEPTH + 1, 1_000, 100_000):
        with pytest.raises(InvalidItemError, match=f"deeper than {MAX_VALUE_DEPTH}"):
            store.batch([PutOp(("d",), "first", {"v": 1}), PutOp(("d",), "k", _nested(depth))])
    assert [it.key for it in store.search(("d",))] == ["limit"]


def test_deep_value_fails_before_memory_validation(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store("long", scoring=None, index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)})
    with pytest.raises(InvalidItemError, match="deeper"):
        store.put(("m",), "k", {"content": "text", "memory_type": _nested(5_000)})
    assert store.list_namespaces() == []


def _other_dims_namespace(make_store, redis_url: str, tmp_path: Path, key_prefix: str) -> None:  # type: ignore[no-untyped-def]
    """Store ("old",) on the long tier with embeddings of DIMS * 2 dimensions."""
    other = make_store(
        "long",
        redis_url=redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        index={"dims": DIMS * 2, "embed": HashingEmbeddings(DIMS * 2), "fields": ["text"]},
    )
    other.put(("old",), "o", {"text": "stored with other dims"})
    other.close()


@pytest.mark.parametrize("last", ["put", "delete"])
def test_namespace_with_other_dims_fails_the_batch_before_any_write(
    make_store,
    redis_url: str,
    tmp_path: Path,
    key_prefix: str,
    last: str,  # type: ignore[no-untyped-def]
) -> None:
    _other_dims_namespace(make_store, redis_url, tmp_path, key_prefix)
    # Namespaces under ("s",) go to Redis, the rest to Chroma: the batch spans both tiers.
    store = make_store(
        tiers={"default": "long", "short": [("s",)]},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    store.put(("keep",), "k", {"text": "kept"})
    before = _snapshot(store, skip=(("old",),))
    bad = PutOp(("old",), "o", {"text": "x"} if last == "put" else None)
    with pytest.raises(ConfigurationError, match="dimensions"):
        store.batch(
            [
                PutOp(("new",), "n", {"text": "new"}),
                PutOp(("s", "x"), "n", {"text": "short"}),
                PutOp(("keep",), "k", None),
                bad,
            ]
        )
    assert _snapshot(store, skip=(("old",),)) == before
    assert store.list_namespaces() == [("keep",), ("old",)]


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda s: s.get(("r",), "k" + LONE), InvalidItemError),
        (lambda s: s.get(("r", LONE), "k"), InvalidNamespaceError),
        (lambda s: s.delete(("r",), "k" + LONE), InvalidItemError),
        (lambda s: s.delete(("r", LONE), "k"), InvalidNamespaceError),
        (lambda s: s.search(("r", LONE)), InvalidNamespaceError),
        (lambda s: s.search(("r",), query="tea" + LONE), InvalidFilterError),
        (lambda s: s.search(("r",), filter={"text": "tea" + LONE}), InvalidFilterError),
        (lambda s: s.search(("r",), filter={"text": {"$ne": [LONE]}}), InvalidFilterError),
        (lambda s: s.search(("r",), filter={"text" + LONE: 1}), InvalidFilterError),
        (lambda s: s.list_namespaces(prefix=("r", LONE)), InvalidNamespaceError),
        (lambda s: s.list_namespaces(suffix=(LONE,)), InvalidNamespaceError),
    ],
    ids=[
        "get-key",
        "get-label",
        "delete-key",
        "delete-label",
        "search-prefix",
        "search-query",
        "filter-value",
        "filter-nested-value",
        "filter-key",
        "list-prefix",
        "list-suffix",
    ],
)
def test_unencodable_text_in_reads_raises_a_package_error(
    vstore: TieredMemoryStore, call: object, error: type[Exception]
) -> None:
    vstore.put(("r",), "k", {"text": "tea"})
    with pytest.raises(error, match="UTF-8"):
        call(vstore)  # type: ignore[operator]
    assert [it.key for it in vstore.search(("r",))] == ["k"]


def test_unencodable_text_in_memory_calls_raises_a_package_error(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store("long", scoring=None, index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)})
    store.put(("u",), "k", {"content": "green tea"})
    for retrieval in ("hybrid", "keyword", "semantic"):
        with pytest.raises(InvalidFilterError, match="UTF-8"):
            store.search(("u",), query="tea" + LONE, filter={"$retrieval": retrieval})
    with pytest.raises(InvalidFilterError, match="UTF-8"):
        store.search(("u",), query="tea", filter={"$retrieval": "contextual", "$user": LONE})
    with pytest.raises(InvalidFilterError, match="UTF-8"):
        store.search_memories(("u",), "tea" + LONE)
    with pytest.raises(InvalidFilterError, match="UTF-8"):
        store.search_memories(("u",), "tea", retrieval="contextual", user_id=LONE)
    with pytest.raises(InvalidNamespaceError, match="UTF-8"):
        store.get_memory(("u", LONE), "k")
    with pytest.raises(InvalidNamespaceError, match="UTF-8"):
        store.update_importance(("u", LONE), "k", 0.1)


async def test_async_batch_with_a_bad_op_writes_nothing(
    redis_url: str, key_prefix: str, tmp_path: Path, tier: str
) -> None:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        tiers={"default": tier},  # type: ignore[typeddict-item]
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    ) as store:
        with pytest.raises(InvalidItemError, match="UTF-8"):
            await store.abatch(
                [PutOp(("a",), "ok", {"text": "fine"}), PutOp(("a",), "bad", {"text": LONE})]
            )
        with pytest.raises(InvalidItemError, match="deeper"):
            await store.aput(("a",), "deep", _nested(2_000))
        assert await store.alist_namespaces() == []
        assert await store.aget(("a",), "ok") is None


async def test_async_batch_reaching_other_dims_writes_nothing(
    make_store,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    _other_dims_namespace(make_store, redis_url, tmp_path, key_prefix)
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        tiers={"default": "long"},
        scoring={"mode": "similarity"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    ) as store:
        with pytest.raises(ConfigurationError, match="dimensions"):
            await store.abatch(
                [PutOp(("new",), "n", {"text": "new"}), PutOp(("old",), "o", {"text": "x"})]
            )
        assert await store.alist_namespaces() == [("old",)]


# A batch of good puts and deletes with one poisoned op anywhere changes nothing.
_POISON = {
    "value": PutOp(("p",), "k", {"text": LONE}),
    "dict-key": PutOp(("p",), "k", {"text": "x", "n": {LONE: [1]}}),
    "key": PutOp(("p",), LONE, {"text": "x"}),
    "label": PutOp(("s", LONE), "k", {"text": "x"}),
    "index-path": PutOp(("p",), "k", {"text": "x"}, index=[LONE]),
    "depth": PutOp(("p",), "k", _nested(MAX_VALUE_DEPTH + 1)),
    "nan": PutOp(("p",), "k", {"x": float("nan")}),
    "other-dims-put": PutOp(("alien",), "k", {"text": "x"}),
    "other-dims-delete": PutOp(("alien",), "k", None),
}
_NAMESPACES = [("p",), ("q", "1"), ("s",), ("s", "2")]


def _batches_around(poison: PutOp) -> st.SearchStrategy[list[PutOp]]:
    value = st.fixed_dictionaries({"text": st.text(max_size=8), "n": st.integers(0, 9)})
    good = st.builds(
        PutOp,
        namespace=st.sampled_from(_NAMESPACES),
        key=st.sampled_from(["a", "b", "c"]),
        value=st.one_of(value, value, st.none()),  # mostly upserts
    )
    return st.tuples(st.lists(good, min_size=1, max_size=6), st.integers(0, 6)).map(
        lambda drawn: [*drawn[0][: drawn[1]], poison, *drawn[0][drawn[1] :]]
    )


@pytest.mark.parametrize("poison", list(_POISON), ids=list(_POISON))
def test_any_batch_with_one_poisoned_op_leaves_the_store_unchanged(
    make_store,
    poison: str,  # type: ignore[no-untyped-def]
) -> None:
    """Ops of both tiers around the bad one: ("s", ...) goes to Redis, the rest to Chroma."""
    # ("alien",) was stored by a store without an index (0 dimensions).
    alien = make_store("long")
    alien.put(("alien",), "k", {"text": "other"})
    alien.close()
    store = make_store(
        tiers={"default": "long", "short": [("s",)]},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    store.batch([PutOp(ns, "a", {"text": "seed", "n": 0}) for ns in _NAMESPACES])
    skip = (("alien",),)

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
    @given(batch=_batches_around(_POISON[poison]))
    def check(batch: list[PutOp]) -> None:
        before = _snapshot(store, skip)
        with pytest.raises((InvalidItemError, InvalidNamespaceError, ConfigurationError)):
            store.batch(batch)
        assert _snapshot(store, skip) == before

    check()


def test_batch_above_chromas_batch_size_is_written_whole(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store("long")
    size = int(store.tiers["long"].client.get_max_batch_size()) + 1  # type: ignore[attr-defined]
    store.batch(
        [PutOp(("a",), "x", {"v": 0})] + [PutOp(("b",), f"k{i}", {"v": i}) for i in range(size)]
    )
    assert store.get(("a",), "x") is not None
    assert len(store.search(("b",), limit=size + 1)) == size
