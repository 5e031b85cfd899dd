"""Planning is pure: a batch and a `PlanConfig` in, a validated `Plan` out."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langgraph_tiered_memory.errors import InvalidFilterError, InvalidItemError
from langgraph_tiered_memory.store.planning import (
    PlanConfig,
    index_texts,
    keep_expiries,
    keyword_text,
    plan,
)
from langgraph_tiered_memory.store.routing import TierRouter

ROUTER = TierRouter({"default": "long", "short": [("short_term",)]})
INDEXED = PlanConfig(
    tier_for=ROUTER.tier_for, memory_mode=True, indexed=True, fields=[("content", ["content"])]
)
PLAIN = PlanConfig(tier_for=ROUTER.tier_for)


def test_last_put_of_a_key_wins_and_takes_its_position() -> None:
    ops = [
        PutOp(("a",), "k1", {"content": "first"}),
        PutOp(("a",), "k2", {"content": "other"}),
        PutOp(("a",), "k1", {"content": "second"}),
    ]
    p = plan(ops, PLAIN)
    assert p.size == 3
    assert [(w.key, w.value) for w in p.writes] == [
        ("k2", {"content": "other"}),
        ("k1", {"content": "second"}),
    ]
    assert p.writes[1].encoded == '{"content":"second"}'


def test_ops_are_sorted_by_kind_with_their_batch_positions() -> None:
    ops = [
        SearchOp(("a",), query=None, limit=10, offset=0),
        GetOp(("a",), "k"),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a",)),)),
        PutOp(("a",), "k", None),
    ]
    p = plan(ops, PLAIN)
    assert [i for i, _ in p.gets] == [1]
    assert [s[0] for s in p.searches] == [0]
    assert [i for i, _ in p.lists] == [2]
    assert [(w.key, w.value, w.encoded) for w in p.writes] == [("k", None, None)]
    assert p.slots == [[]]


def test_texts_are_embedded_once_and_each_write_points_at_its_slots() -> None:
    ops = [
        PutOp(("a",), "k1", {"content": "same", "title": "t1"}, index=["content", "title"]),
        PutOp(("a",), "k2", {"content": "same"}),
        PutOp(("a",), "k3", {"content": "skipped"}, index=False),
        PutOp(("a",), "k4", None),
    ]
    p = plan(ops, INDEXED)
    assert p.texts == ["same", "t1"]
    assert p.slots == [[0, 1], [0], [], []]


def test_without_an_index_nothing_is_embedded() -> None:
    ops = [
        PutOp(("a",), "k", {"content": "x"}),
        SearchOp(("a",), query="query", limit=10, offset=0),
    ]
    p = plan(ops, PLAIN)
    assert p.texts == [] and p.slots == [[]] and p.queries == []


def test_queries_are_deduplicated_in_order_and_empty_ones_skipped() -> None:
    ops = [
        SearchOp(("a",), query="q2", limit=10, offset=0),
        SearchOp(("a",), query="q1", limit=10, offset=0),
        SearchOp(("a",), query="q2", limit=5, offset=0),
        SearchOp(("a",), query=None, limit=5, offset=0),
    ]
    assert plan(ops, INDEXED).queries == ["q2", "q1"]


def test_search_options_are_split_from_the_value_filter() -> None:
    op = SearchOp(
        ("a",), query="q", limit=10, offset=0, filter={"$retrieval": "keyword", "topic": "x"}
    )
    (_, _, options, value_filter) = plan([op], INDEXED).searches[0]
    assert options == {"$retrieval": "keyword"}
    assert value_filter == {"topic": "x"}


def test_search_options_need_memory_scoring() -> None:
    op = SearchOp(("a",), query="q", limit=10, offset=0, filter={"$retrieval": "keyword"})
    with pytest.raises(InvalidFilterError, match="need scoring"):
        plan([op], PLAIN)


def test_memory_fields_only_for_long_tier_puts_in_memory_mode() -> None:
    ops = [
        PutOp(("a",), "long", {"content": "hello there", "importance": 0.9}),
        PutOp(("short_term",), "short", {"content": "hello"}),
        PutOp(("a",), "unindexed", {"content": "hidden"}, index=False),
    ]
    long, short, unindexed = plan(ops, INDEXED).writes
    assert long.memory is not None and long.memory.importance == 0.9
    assert long.keyword_text == "hello there"
    assert short.memory is None and short.keyword_text is None
    assert unindexed.memory is not None and unindexed.keyword_text == ""
    similarity = PlanConfig(tier_for=ROUTER.tier_for, indexed=True)
    assert plan(ops[:1], similarity).writes[0].memory is None


def test_keyword_text_is_the_content_without_an_index() -> None:
    no_index = PlanConfig(tier_for=ROUTER.tier_for, memory_mode=True)
    assert keyword_text(no_index, {"content": "plain", "x": "y"}, None) == "plain"
    assert keyword_text(no_index, {"content": 3}, None) == ""
    assert keyword_text(INDEXED, {"content": "a", "b": "c"}, ["content", "b"]) == "a\nc"


def test_index_texts_read_the_item_paths_or_the_default_fields() -> None:
    value: dict[str, Any] = {"content": "c", "tags": ["t1", "t2"]}
    assert index_texts(value, None, INDEXED.fields) == ["c"]
    assert index_texts(value, ["tags[*]"], INDEXED.fields) == ["t1", "t2"]


@pytest.mark.parametrize(
    ("op", "error"),
    [
        (PutOp(("a",), "k", {"content": "x"}, index="content"), InvalidItemError),  # type: ignore[arg-type]
        (PutOp(("a",), 5, {"content": "x"}), InvalidItemError),  # type: ignore[arg-type]
        (SearchOp(("a",), query=None, limit=-1, offset=0), ValueError),
        (
            SearchOp(("a",), query=None, limit=10, offset=0, filter={"$bogus": 1}),
            InvalidFilterError,
        ),
        ("not an op", ValueError),
    ],
)
def test_a_bad_op_fails_the_whole_batch(op: Any, error: type[Exception]) -> None:
    cfg = INDEXED
    with pytest.raises(error):
        plan([PutOp(("a",), "good", {"content": "x"}), op], cfg)


def test_rewrites_keep_the_stored_expiry_but_deletes_and_other_keys_do_not() -> None:
    ops = [
        PutOp(("a",), "kept", {"content": "x"}, ttl=5),
        PutOp(("a",), "deleted", None),
        PutOp(("a",), "new", {"content": "y"}, ttl=5),
    ]
    p = plan(ops, PLAIN)
    stored = SimpleNamespace(ttl=60.0, expires_at=1234.0)
    keep_expiries(p, {(("a",), "kept"): stored, (("a",), "deleted"): stored})
    kept, deleted, new = p.writes
    assert (kept.ttl, kept.expires_at) == (60.0, 1234.0)
    assert (deleted.ttl, deleted.expires_at) == (None, None)
    assert (new.ttl, new.expires_at) == (5, None)
