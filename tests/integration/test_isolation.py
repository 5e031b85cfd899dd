"""Tenant isolation: a search on behalf of one user (`$user`) never returns another's items.

The rule: an item is visible to user U iff its namespace belongs to U (the label after
`"users"`, else the library's per-user layouts `("memories", U)`, `("profiles", U)`,
`("short_term", U)`), or it belongs to no user and the item is a shared memory type
(fact, skill). It
holds on every tier (long and short), with and without a query or an index, for every
retrieval mode, in `search` and `search_memories`, before limit and offset are applied.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import IndexConfig
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.ranking.scoring import RetrievalMode
from tests.conftest import DIMS, drop_redis_keys
from tests.fakes import HashingEmbeddings

INDEX: IndexConfig = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
SHARED = ("fact", "skill")


def _ctx(user: str, **extra: Any) -> dict[str, Any]:
    return {"$retrieval": "contextual", "$user": user, **extra}


def _owner(namespace: tuple[str, ...]) -> str | None:
    """Whose a namespace is, written out independently of the store's code."""
    for i in range(len(namespace) - 1):
        if namespace[i] == "users":
            return namespace[i + 1]
    if len(namespace) >= 2 and namespace[0] in ("memories", "profiles", "short_term"):
        return namespace[1]
    return None


def _visible(user: str, namespace: tuple[str, ...], value: dict[str, Any]) -> bool:
    """The isolation rule, written out independently of the store's code."""
    owner = _owner(namespace)
    if owner is not None:
        return owner == user
    return value.get("memory_type", "experience") in SHARED


def _fill(store: TieredMemoryStore) -> None:
    store.put(("users", "u1"), "mine", {"content": "my diary about green tea"})
    store.put(("users", "u2"), "theirs", {"content": "their diary about green tea"})
    store.put(("users", "u10"), "u10s", {"content": "a diary of green tea"})


@pytest.fixture
def memstore(make_store: Callable[..., TieredMemoryStore]) -> TieredMemoryStore:
    """Memory scoring, long tier, with an index."""
    return make_store("long", scoring=None, index=INDEX)


@pytest.mark.parametrize("query", [None, ""])
def test_contextual_search_without_a_query_lists_only_the_callers_items(
    memstore: TieredMemoryStore, query: str | None
) -> None:
    _fill(memstore)
    hits = memstore.search(("users",), query=query, filter=_ctx("u1"))
    assert [h.key for h in hits] == ["mine"]


def test_contextual_search_without_an_index_returns_only_the_callers_items(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store("long", scoring=None)
    _fill(store)
    for query in (None, "", "???", "diary", "green tea"):
        keys = {h.key for h in store.search(("users",), query=query, filter=_ctx("u1"))}
        assert keys == (set() if query == "???" else {"mine"}), query


@pytest.mark.parametrize("index", [None, INDEX], ids=["no-index", "index"])
@pytest.mark.parametrize("query", [None, "", "diary"])
def test_contextual_search_never_returns_another_users_short_term_items(
    make_store: Callable[..., TieredMemoryStore], index: Any, query: str | None
) -> None:
    store = make_store(
        None, scoring=None, index=index, tiers={"default": "long", "short": [("users", "u2")]}
    )
    _fill(store)
    store.put(("users", "u2"), "scratch", {"content": "u2 short-term diary note"})
    assert store.tier_for(("users", "u2")) == "short"
    hits = store.search(("users",), query=query, filter=_ctx("u1"))
    assert {h.key for h in hits} == {"mine"}


@pytest.mark.parametrize("retrieval", ["hybrid", "semantic", "keyword"])
def test_user_scope_applies_to_every_retrieval_mode(
    memstore: TieredMemoryStore, retrieval: RetrievalMode
) -> None:
    _fill(memstore)
    hits = memstore.search(
        ("users",), query="green tea diary", filter={"$retrieval": retrieval, "$user": "u1"}
    )
    assert [h.key for h in hits] == ["mine"]
    explained = memstore.search_memories(
        ("users",),
        "green tea diary",
        retrieval=retrieval,
        user_id="u1",
    )
    assert [h.entry.id for h in explained] == ["mine"]
    assert explained[0].breakdown.user == 0.0  # only contextual retrieval boosts own items


def test_hidden_shared_items_never_shorten_a_page_of_visible_ones(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    # Ten experiences of a shared namespace sort (and match) before the caller's items.
    # No access boost, so the ranking stays the same from one page to the next.
    store = make_store("long", scoring={"candidates": 2, "access_weight": 0.0}, index=INDEX)
    for i in range(10):
        store.put(("a_shared",), f"exp{i}", {"content": "green tea green tea"})
    store.put(("a_shared",), "fact", {"content": "green tea", "memory_type": "fact"})
    for i in range(3):
        store.put(("users", "u1"), f"mine{i}", {"content": f"green tea {i}"})
    expected = {"fact", "mine0", "mine1", "mine2"}
    for query in (None, "green tea"):
        for retrieval in ("contextual", "keyword", "hybrid"):
            flt = {"$retrieval": retrieval, "$user": "u1"}
            assert {h.key for h in store.search((), query=query, filter=flt, limit=4)} == expected
            pages = [
                h.key
                for offset in range(5)
                for h in store.search((), query=query, filter=flt, limit=1, offset=offset)
            ]
            assert len(pages) == 4 and set(pages) == expected, (query, retrieval)
    hits = store.search_memories((), "green tea", user_id="u1", retrieval="keyword", limit=4)
    assert {h.entry.id for h in hits} == expected


# ----------------------------------------------------------------------------- accents


def test_keyword_search_folds_accents_in_the_query(memstore: TieredMemoryStore) -> None:
    # One namespace each: a memory's keyword context holds its predecessor's text.
    memstore.put(("m", "1"), "cafe", {"content": "we met at the cafe downtown"})
    memstore.put(("m", "2"), "zurich", {"content": "the trip to Zurich in May"})
    memstore.put(("m", "3"), "naive", {"content": "a naïve plan"})
    for query, key in [
        ("café", "cafe"),
        ("ZÜRICH", "zurich"),
        ("naïve", "naive"),
        ("NAIVE", "naive"),
    ]:
        hits = memstore.search(("m",), query=query, filter={"$retrieval": "keyword"})
        assert [h.key for h in hits] == [key], query
        explained = memstore.search_memories(("m",), query, retrieval="keyword")
        assert [h.entry.id for h in explained] == [key], query


@pytest.mark.parametrize("query", ["???", "!!!", " - "])
def test_a_keyword_query_without_words_finds_nothing(
    make_store: Callable[..., TieredMemoryStore], tmp_path: Path, query: str
) -> None:
    indexed = make_store("long", scoring=None, index=INDEX)
    plain = make_store(
        "long",
        scoring=None,
        key_prefix="p" + uuid.uuid4().hex[:10],
        chroma_path=str(tmp_path / "plain"),
    )
    ref = InMemoryStore()
    for store in (indexed, plain, ref):
        store.put(("m",), "a", {"content": "green tea"})
        store.put(("m",), "b", {"content": "black coffee"})
    assert indexed.search(("m",), query=query, filter={"$retrieval": "keyword"}) == []
    assert plain.search(("m",), query=query, filter={"$retrieval": "keyword"}) == []
    assert plain.search(("m",), query=query, filter=_ctx("u1")) == []
    assert indexed.search_memories(("m",), query, retrieval="keyword") == []
    # Without an index, hybrid (the default) keeps LangGraph's contract: a query that
    # cannot rank is ignored and the items are listed, as InMemoryStore does.
    assert [h.key for h in plain.search(("m",), query=query)] == [
        h.key for h in ref.search(("m",), query=query)
    ]


# ----------------------------------------------------------------------------- property

# Ids that are string prefixes of each other, on purpose.
USERS = ["u", "u1", "u10", "u2", "U1", "users"]
TYPES = ["experience", "preference", "fact", "skill"]
NAMESPACES = [
    *[("users", u) for u in USERS],
    ("users", "u1", "notes"),
    ("users", "u10", "notes"),
    ("users",),
    ("shared",),
    ("shared", "users"),
    # The library's per-user layouts (tools, agent, profile, promotion), and a user
    # whose id is the user label: `("memories", "users", "u1")` is u1's, not "users"'.
    ("memories", "u1"),
    ("memories", "u10"),
    ("memories", "users"),
    ("memories", "users", "u1"),
    ("profiles", "u2"),
    ("memories",),
]
QUERIES = [None, "", "???", "green", "tea diary", "u1"]
ROUTINGS = [
    {"default": "long"},
    {"default": "long", "short": [("users", "u1")]},
    {"default": "long", "short": [("users", "u2"), ("users", "u10"), ("shared",)]},
]

items = st.lists(
    st.tuples(
        st.sampled_from(NAMESPACES),
        st.sampled_from(TYPES),
        st.sampled_from(["green tea", "tea diary", "green diary entry", "nothing"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=items,
    routing=st.sampled_from(ROUTINGS),
    with_index=st.booleans(),
    searches=st.lists(
        st.tuples(
            st.sampled_from(USERS),
            st.sampled_from(QUERIES),
            st.sampled_from(["contextual", "hybrid", "keyword", "semantic"]),
            st.sampled_from(
                [(), ("users",), ("users", "u1"), ("shared",), ("memories",), ("memories", "users")]
            ),
            st.integers(min_value=1, max_value=5),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_no_search_ever_returns_an_item_outside_the_callers_scope(
    redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    items: list[tuple[tuple[str, ...], str, str]],
    routing: Any,
    with_index: bool,
    searches: list[tuple[str, str | None, RetrievalMode, tuple[str, ...], int]],
) -> None:
    prefix = "iso" + uuid.uuid4().hex[:10]
    path: Path = tmp_path_factory.mktemp("iso") / "chroma"
    store = TieredMemoryStore(
        redis_url=redis_url,
        chroma_path=str(path),
        key_prefix=prefix,
        scoring={"access_weight": 0.0},  # stable ranking from page to page
        tiers=routing,
        index=INDEX if with_index else None,
    )
    try:
        store.setup()
        stored: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
        for i, (ns, mtype, text) in enumerate(items):
            value = {"content": f"{text} {i}", "memory_type": mtype}
            store.put(ns, f"k{i}", value)
            stored[(ns, f"k{i}")] = value
        for user, query, retrieval, under, limit in searches:
            visible = {
                k
                for k, v in stored.items()
                if k[0][: len(under)] == under and _visible(user, k[0], v)
            }
            flt = {"$retrieval": retrieval, "$user": user}
            seen: list[tuple[tuple[str, ...], str]] = []
            for offset in range(0, len(stored) + 1, limit):
                page = store.search(under, query=query, filter=flt, limit=limit, offset=offset)
                assert len(page) <= limit
                seen.extend((h.namespace, h.key) for h in page)
            assert set(seen) <= visible, (user, query, retrieval, under)
            assert len(seen) == len(set(seen))  # pages do not overlap
            if not query:  # a listing pages through every visible item
                assert set(seen) == visible
            if query and query.strip():
                hits = store.search_memories(
                    under,
                    query,
                    user_id=user,
                    retrieval=retrieval,
                    limit=len(stored),
                )
                assert {(h.entry.namespace, h.entry.id) for h in hits} <= visible
    finally:
        store.close()
        drop_redis_keys(redis_url, prefix)
