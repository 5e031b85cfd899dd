"""The BaseStore contract, checked on both tiers (Redis and Chroma)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.errors import InvalidFilterError
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings


def cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.asarray(a), np.asarray(b)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


# --------------------------------------------------------------------------- get / put


def test_put_get_roundtrip_keeps_created_at_and_advances_updated_at(
    store: TieredMemoryStore,
) -> None:
    ns = ("docs", "u1")
    store.put(ns, "k", {"title": "first", "nested": {"a": [1, 2, {"b": None}]}})
    first = store.get(ns, "k")
    assert first is not None
    assert first.value == {"title": "first", "nested": {"a": [1, 2, {"b": None}]}}
    assert first.namespace == ns and first.key == "k"
    time.sleep(0.01)
    store.put(ns, "k", {"title": "second"})
    second = store.get(ns, "k")
    assert second is not None and second.value == {"title": "second"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_get_missing_key_or_other_namespace_is_none(store: TieredMemoryStore) -> None:
    store.put(("a", "b"), "k", {"v": 1})
    assert store.get(("a", "b"), "other") is None
    assert store.get(("a", "c"), "k") is None
    assert store.get(("a",), "k") is None
    assert store.get(("never", "written"), "k") is None


def test_delete_removes_item_and_namespace(store: TieredMemoryStore) -> None:
    store.put(("a", "b"), "k", {"v": 1})
    store.put(("a", "c"), "k", {"v": 2})
    store.delete(("a", "b"), "k")
    assert store.get(("a", "b"), "k") is None
    assert store.search(("a", "b")) == []
    assert store.list_namespaces(prefix=("a",)) == [("a", "c")]
    store.delete(("a", "b"), "never-existed")  # deleting nothing is not an error
    store.delete(("zzz",), "k")


def test_keys_and_values_with_unusual_characters(store: TieredMemoryStore) -> None:
    ns = ("naïve", "ns with spaces", "{brace}", "a:b", "*")
    keys = ["", "p:x", "x:1:k", "{tag}", "emoji 😀", "key#1", "a" * 300]
    for i, key in enumerate(keys):
        store.put(ns, key, {"i": i, "text": "日本語 " + key})
    for i, key in enumerate(keys):
        item = store.get(ns, key)
        assert item is not None and item.value["i"] == i
    assert sorted(r.key for r in store.search(ns, limit=100)) == sorted(keys)
    assert store.list_namespaces(prefix=ns[:2]) == [ns]


def test_batch_results_follow_op_order_and_reads_see_state_before_writes(
    store: TieredMemoryStore,
) -> None:
    store.put(("t", "foo"), "k1", {"d": "v1"})
    store.put(("t", "bar"), "k2", {"d": "v2"})
    results = store.batch(
        [
            GetOp(("t", "foo"), "k1"),
            PutOp(("t", "bar"), "k2", {"d": "new"}),
            SearchOp(("t",), filter={"d": "v1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("t",), "k3"),
            GetOp(("t", "bar"), "k2"),
            PutOp(("t", "baz"), "k3", {"d": "v3"}),
        ]
    )
    assert len(results) == 7
    assert isinstance(results[0], Item) and results[0].value == {"d": "v1"}
    assert results[1] is None
    assert [r.key for r in results[2]] == ["k1"]  # type: ignore[union-attr]
    assert set(results[3]) == {("t", "foo"), ("t", "bar")}  # type: ignore[arg-type]
    assert results[4] is None
    assert results[5].value == {"d": "v2"}  # type: ignore[union-attr]
    assert results[6] is None
    assert store.get(("t", "bar"), "k2").value == {"d": "new"}  # type: ignore[union-attr]
    assert store.get(("t", "baz"), "k3").value == {"d": "v3"}  # type: ignore[union-attr]


def test_last_write_wins_within_a_batch(store: TieredMemoryStore) -> None:
    store.batch(
        [
            PutOp(("w",), "a", {"n": 1}),
            PutOp(("w",), "a", {"n": 2}),
            PutOp(("w",), "b", {"n": 1}),
            PutOp(("w",), "b", None),
            PutOp(("w",), "c", None),
            PutOp(("w",), "c", {"n": 3}),
        ]
    )
    assert store.get(("w",), "a").value == {"n": 2}  # type: ignore[union-attr]
    assert store.get(("w",), "b") is None
    assert store.get(("w",), "c").value == {"n": 3}  # type: ignore[union-attr]


def test_invalid_namespaces_are_rejected(store: TieredMemoryStore) -> None:
    for bad in [(), ("a", "b.c"), ("a", ""), ("a", 1)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})  # type: ignore[arg-type]
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"v": 1})])  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    # The reserved root is refused by the public put only, as in LangGraph's stores.
    store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])
    assert store.get(("langgraph", "x"), "k").value == {"v": 1}  # type: ignore[union-attr]
    store.put(("x", "langgraph"), "k", {"v": 2})
    assert store.get(("x", "langgraph"), "k").value == {"v": 2}  # type: ignore[union-attr]


# --------------------------------------------------------------------------- search


def _seed_namespaces(store: TieredMemoryStore) -> None:
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
        ("Foo",),
        ("user_1",),
        ("userX1",),
        ("star*",),
        ("starX",),
    ]:
        store.put(ns, "k", {"ns": list(ns)})


def test_search_prefix_stops_at_label_boundaries_and_is_literal(store: TieredMemoryStore) -> None:
    _seed_namespaces(store)

    def found(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {r.namespace for r in store.search(prefix, limit=100)}

    assert found(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert found(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert found(("fo",)) == set()
    assert found(("Foo",)) == {("Foo",)}
    assert found(("user_1",)) == {("user_1",)}
    assert found(("star*",)) == {("star*",)}
    assert len(found(())) == 11


def test_search_filters(store: TieredMemoryStore) -> None:
    ns = ("items",)
    data = {
        "a": {"price": 10, "color": "red", "tags": ["x"], "meta": {"lang": "en", "n": 1}},
        "b": {"price": 20.5, "color": "blue", "tags": ["x", "y"], "meta": {"lang": "fr"}},
        "c": {"price": 30, "color": "red", "active": True, "access-level": "hi"},
        "d": {"price": -5, "color": None, "active": 1, "O'Brien": "q"},
    }
    for k, v in data.items():
        store.put(ns, k, v)

    def keys(flt: dict) -> set[str]:
        return {r.key for r in store.search(ns, filter=flt, limit=100)}

    assert keys({"color": "red"}) == {"a", "c"}
    assert keys({"color": {"$eq": "red"}}) == {"a", "c"}
    assert keys({"color": {"$ne": "red"}}) == {"b", "d"}
    assert keys({"price": {"$gt": 10}}) == {"b", "c"}
    assert keys({"price": {"$gte": 10}}) == {"a", "b", "c"}
    assert keys({"price": {"$lt": 10}}) == {"d"}
    assert keys({"price": {"$lte": 20.5, "$gt": 0}}) == {"a", "b"}
    assert keys({"price": {"$gte": 10}, "color": "red"}) == {"a", "c"}
    assert keys({"meta.lang": "fr"}) == {"b"}
    assert keys({"meta": {"lang": "en"}}) == {"a"}
    assert keys({"tags": ["x"]}) == {"a"}
    assert keys({"active": True}) == {"c"}  # booleans never equal numbers
    assert keys({"active": 1}) == {"d"}
    assert keys({"access-level": "hi"}) == {"c"}
    assert keys({"color": "public' OR '1'='1"}) == set()
    assert keys({"missing": {"$ne": 1}}) == {"a", "b", "c", "d"}
    assert keys({"missing": {"$gt": 1}}) == set()


def test_search_pagination_is_disjoint_and_complete(store: TieredMemoryStore) -> None:
    for i in range(23):
        store.put(("p", str(i % 3)), f"k{i:02d}", {"i": i})
    pages = [store.search(("p",), limit=5, offset=o) for o in range(0, 30, 5)]
    keys = [r.key for page in pages for r in page]
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3, 0]
    assert sorted(keys) == sorted(f"k{i:02d}" for i in range(23))
    # Stable order: asking again gives the same pages.
    assert [r.key for r in store.search(("p",), limit=5, offset=5)] == [r.key for r in pages[1]]


def test_search_with_query_but_no_index_filters_only(store: TieredMemoryStore) -> None:
    store.put(("n",), "a", {"text": "hello"})
    results = store.search(("n",), query="hello")
    assert [r.key for r in results] == ["a"]
    assert results[0].score is None


# --------------------------------------------------------------------------- vectors


def test_similarity_score_is_cosine_similarity(
    vstore: TieredMemoryStore, embeddings: HashingEmbeddings
) -> None:
    texts = {"a": "red apple pie", "b": "blue sports car", "c": "green apple", "d": "apple"}
    for k, t in texts.items():
        vstore.put(("v",), k, {"text": t})
    for query in ["apple", "car", "zzz", "日本"]:
        results = vstore.search(("v",), query=query, limit=10)
        qv = embeddings.embed_query(query)
        expected = {k: cosine(qv, embeddings.embed_query(t)) for k, t in texts.items()}
        assert [r.key for r in results] == sorted(expected, key=lambda k: -expected[k])
        for r in results:
            assert r.score == pytest.approx(expected[r.key], abs=1e-4)


def test_query_with_filter_and_pagination(vstore: TieredMemoryStore) -> None:
    for i in range(12):
        vstore.put(("v", "x"), f"k{i}", {"text": f"document number {i}", "even": i % 2 == 0})
    page1 = vstore.search(("v",), query="document", filter={"even": True}, limit=4)
    page2 = vstore.search(("v",), query="document", filter={"even": True}, limit=4, offset=4)
    assert len(page1) == 4 and len(page2) == 2
    assert {r.key for r in page1}.isdisjoint({r.key for r in page2})
    assert all(r.value["even"] for r in page1 + page2)
    scores = [r.score for r in page1 + page2]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_update_reembeds_and_index_false_is_unscored(
    vstore: TieredMemoryStore, embeddings: HashingEmbeddings
) -> None:
    ns = ("v",)
    vstore.put(ns, "doc1", {"text": "zany zebra xerxes"})
    vstore.put(ns, "doc2", {"text": "something about dogs"})
    before = {r.key: r.score for r in vstore.search(ns, query="zany zebra xerxes")}
    vstore.put(ns, "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in vstore.search(ns, query="zany zebra xerxes")}
    assert after["doc1"] < before["doc1"]  # type: ignore[operator]
    vstore.put(ns, "doc3", {"text": "zany zebra xerxes"}, index=False)
    results = vstore.search(ns, query="zany zebra xerxes", limit=10)
    assert [r.key for r in results][-1] == "doc3" and results[-1].score is None
    assert all(r.score is not None for r in results[:-1])
    top2 = vstore.search(ns, query="zany zebra xerxes", limit=2)
    assert "doc3" not in {r.key for r in top2}
    # Turning indexing back on scores it again.
    vstore.put(ns, "doc3", {"text": "zany zebra xerxes"})
    assert vstore.search(ns, query="zany zebra xerxes", limit=1)[0].key == "doc3"


def test_multi_field_and_list_values_score_by_best_vector(
    make_store: Callable[..., TieredMemoryStore], tier: str, embeddings: HashingEmbeddings
) -> None:
    store = make_store(
        tier, index={"dims": DIMS, "embed": embeddings, "fields": ["title", "tags[*]"]}
    )
    ns = ("m",)
    store.put(ns, "a", {"title": "quantum physics", "tags": ["cooking", "pasta"], "x": "zebra"})
    store.put(ns, "b", {"title": "italian food", "tags": ["travel"]})
    store.put(ns, "c", {"title": "gardening"}, index=["x"])  # per-put fields
    store.put(ns, "d", {"x": "zebra"}, index=["x"])
    for query, best in [("pasta", "a"), ("quantum physics", "a"), ("travel", "b"), ("zebra", "d")]:
        results = store.search(ns, query=query, limit=10)
        qv = embeddings.embed_query(query)
        assert results[0].key == best
        top = results[0]
        texts = {
            "a": ["quantum physics", "cooking", "pasta"],
            "b": ["italian food", "travel"],
            "d": ["zebra"],
        }[best]
        assert top.score == pytest.approx(
            max(cosine(qv, embeddings.embed_query(t)) for t in texts), abs=1e-4
        )
    # "c" was indexed on a missing field: it has no vectors and comes last, unscored.
    results = store.search(ns, query="gardening", limit=10)
    assert results[-1].key == "c" and results[-1].score is None
    # Updating to fewer vectors drops the old extra vectors.
    store.put(ns, "a", {"title": "quantum physics", "tags": []})
    results = store.search(ns, query="pasta", limit=10)
    a = next(r for r in results if r.key == "a")
    qv = embeddings.embed_query("pasta")
    assert a.score == pytest.approx(cosine(qv, embeddings.embed_query("quantum physics")), abs=1e-4)


def test_non_ascii_queries_find_their_documents(vstore: TieredMemoryStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, t in enumerate(texts):
        vstore.put(("u", "mem"), str(i), {"text": t})
    for i, t in enumerate(texts):
        assert vstore.search(("u", "mem"), query=t)[0].key == str(i)


def test_search_ranks_across_namespaces_under_a_prefix(vstore: TieredMemoryStore) -> None:
    vstore.put(("users", "u1"), "a", {"text": "tea"})
    vstore.put(("users", "u1", "deep"), "b", {"text": "tea with milk"})
    vstore.put(("users", "u10"), "c", {"text": "tea"})
    results = vstore.search(("users", "u1"), query="tea")
    assert [(r.namespace, r.key) for r in results] == [
        (("users", "u1"), "a"),
        (("users", "u1", "deep"), "b"),
    ]


# --------------------------------------------------------------------------- namespaces


def test_list_namespaces_matching_depth_and_paging(store: TieredMemoryStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("users", "alice\n"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id{i}", {"i": i})
    assert store.list_namespaces(prefix=("a", "b")) == sorted(namespaces[:4])
    assert set(store.list_namespaces(suffix=("f",))) == {
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    }
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == sorted(namespaces[:4])[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == sorted(namespaces[:4])[2:]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(suffix=("alice",)) == [("uid", "users", "alice")]
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
        ("users", "alice\n"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("uid",), ("users",)]
    assert store.list_namespaces(limit=100) == sorted(namespaces)
    raw = store.batch(
        [
            ListNamespacesOp(
                match_conditions=(MatchCondition("suffix", ("settings",)),),
                max_depth=None,
                limit=10,
                offset=0,
            )
        ]
    )
    assert raw == [[("users", "456", "settings")]]


def test_empty_store_lists_nothing(store: TieredMemoryStore) -> None:
    assert store.list_namespaces() == []
    assert store.search(()) == []


# --------------------------------------------------------------------------- non-finite filters

_INF, _NAN = math.inf, math.nan
_ORDERING = ("$gt", "$gte", "$lt", "$lte")
_MISSING = object()
_GRID_VALUES: dict[str, Any] = {
    "int": 5,
    "neg": -3,
    "zero": 0,
    "float": 2.5,
    "tiny": -1e-300,
    "max": 1.7976931348623157e308,
    "huge": 10**30,
    "str": "abc",
    "numstr": "1.5",
    "true": True,
    "false": False,
    "none": None,
    "list": [1, 2],
    "dict": {"a": 1},
    "missing": _MISSING,
}


def _grid_filters() -> list[dict[str, Any]]:
    """Every operator and plain equality with +inf, -inf and NaN, top-level and nested."""
    out: list[dict[str, Any]] = []
    for key in ("x", "o.x"):
        for operand in (_INF, -_INF, _NAN):
            out.append({key: operand})
            out.extend({key: {op: operand}} for op in ("$eq", "$ne", *_ORDERING))
    out += [
        {"x": {"$gt": -_INF, "$lt": _INF}},
        {"x": {"$gte": 0, "$lt": _INF}},
        {"x": {"$ne": _NAN}, "o.x": {"$lte": _INF}},
        {"o": {"x": _INF}},
        {"x": [1, _INF]},
    ]
    return out


def _grid_value(name: str) -> dict[str, Any]:
    stored = _GRID_VALUES[name]
    value: dict[str, Any] = {"content": f"apple note {name}"}
    if stored is not _MISSING:
        value.update(x=stored, o={"x": stored})
    return value


def _inmemory_keys(filter: dict[str, Any]) -> set[str]:
    """Keys `InMemoryStore` returns, except where this store documents a difference.

    InMemoryStore reads a dotted key as a literal top-level key, so its copy of each
    item also holds the nested field under `"o.x"`. It applies `float()` to both sides
    of an ordering operator: it raises on None, lists, dicts and most strings, and
    orders booleans and numeric strings as numbers.
    This store orders numbers only with numbers (bools are not numbers) and strings
    only with strings; anything else does not match.
    """
    ref = InMemoryStore()
    for name, stored in _GRID_VALUES.items():
        flat = {} if stored is _MISSING else {"o.x": stored}
        ref.put(("ref", name), "k", {**_grid_value(name), **flat})
    keys = set()
    for name, stored in _GRID_VALUES.items():
        verdicts = []
        for key, cond in filter.items():
            ordering = isinstance(cond, dict) and any(op in _ORDERING for op in cond)
            if ordering and (isinstance(stored, bool) or not isinstance(stored, (int, float))):
                verdicts.append(False)
                continue
            verdicts.append(bool(ref.search(("ref", name), filter={key: cond})))
        if all(verdicts):
            keys.add(name)
    return keys


def test_non_finite_filters_agree_with_inmemory_store(
    make_store: Callable[..., TieredMemoryStore],
    tier: str,
    embeddings: HashingEmbeddings,
    tmp_path: Path,
) -> None:
    index = {"dims": DIMS, "embed": embeddings, "fields": ["content"]}
    similarity = make_store(tier, index=index)
    memory = make_store(tier, index=index, scoring=None, chroma_path=str(tmp_path / "mem"))
    ns = ("grid", "u1")
    for store in (similarity, memory):
        store.batch([PutOp(ns, name, _grid_value(name)) for name in _GRID_VALUES])
    checked = 0
    for flt in _grid_filters():
        expected = _inmemory_keys(flt)
        for store in (similarity, memory):
            for query in (None, "apple note"):
                found = store.search(("grid",), query=query, filter=flt, limit=100)
                assert {r.key for r in found} == expected, (flt, query, store.scoring)
                checked += 1
        if tier == "long":  # memories live on the long tier only
            hits = memory.search_memories(("grid",), "apple note", filter=flt, limit=100)
            assert {h.entry.id for h in hits} == expected, flt
    assert checked == 4 * len(_grid_filters())
    # The grid is not vacuous: infinite bounds keep every number, NaN keeps nothing.
    numbers = {"int", "neg", "zero", "float", "tiny", "max", "huge"}
    assert _inmemory_keys({"x": {"$lt": _INF}}) == numbers
    assert _inmemory_keys({"x": {"$gte": _NAN}}) == set()
    assert _inmemory_keys({"x": {"$ne": _NAN}}) == set(_GRID_VALUES)


def test_strict_filter_mode_refuses_non_finite_numbers_before_writing(
    make_store: Callable[..., TieredMemoryStore], tier: str, tmp_path: Path
) -> None:
    default = make_store(tier)
    strict = make_store(tier, allow_non_finite_filters=False, chroma_path=str(tmp_path / "s"))
    ns = ("items",)
    for store in (default, strict):
        for i, price in enumerate([10, 20, 30]):
            store.put(ns, str(i), {"price": price, "meta": {"n": i}})
    flts: list[dict[str, Any]] = [
        {"price": {"$lt": _INF}},
        {"price": {"$gt": -_INF}},
        {"price": {"$eq": _NAN}},
        {"price": _NAN},
        {"price": {"$ne": _NAN}},
        {"meta": {"n": {"$lte": _INF}}},
        {"meta.n": [_INF]},
    ]
    for flt in flts:
        default.search(ns, filter=flt)  # accepted by default
        with pytest.raises(InvalidFilterError) as err:
            strict.search(ns, filter=flt)
        message = str(err.value)
        assert "strict mode" in message and "allow_non_finite_filters=True" in message
        assert repr(next(iter(flt))) in message  # names the filter key
    assert len(default.search(ns, filter={"price": {"$lt": _INF}})) == 3
    assert len(strict.search(ns, filter={"price": {"$lt": 10**400}})) == 3  # finite: fine
    # The refusal happens while planning, so the batch's earlier put is not written.
    with pytest.raises(InvalidFilterError):
        strict.batch([PutOp(ns, "new", {"price": 1}), SearchOp(ns, {"price": {"$lt": _INF}})])
    assert strict.get(ns, "new") is None


# --------------------------------------------------------------------------- graphs


def test_store_works_inside_a_compiled_graph(vstore: TieredMemoryStore) -> None:
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.store.base import BaseStore

    def remember(state: MessagesState, *, store: BaseStore) -> dict:
        text = state["messages"][-1].content
        store.put(("users", "u1", "memories"), "latest", {"text": text})
        hits = store.search(("users", "u1", "memories"), query=text)
        return {"messages": [("ai", f"I recall: {hits[0].value['text']}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=vstore)
    out = graph.invoke({"messages": [("user", "I like green tea")]})
    assert out["messages"][-1].content == "I recall: I like green tea"
    item = vstore.get(("users", "u1", "memories"), "latest")
    assert item is not None and item.value == {"text": "I like green tea"}
    assert math.isclose(
        vstore.search(("users",), query="I like green tea")[0].score or 0, 1.0, abs_tol=1e-4
    )
