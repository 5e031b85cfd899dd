"""Pure planning helpers: filters, namespaces, routing (no backend)."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError, MatchCondition
from langgraph.store.memory import _compare_values

from langgraph_tiered_memory.config import DEFAULT_TIER_POLICY
from langgraph_tiered_memory.errors import ConfigurationError, InvalidFilterError
from langgraph_tiered_memory.store._validate import validate_namespace
from langgraph_tiered_memory.store.routing import TierRouter
from langgraph_tiered_memory.store.tiers._filters import matches_filter, validate_filter
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    has_prefix,
    namespace_id,
    select_namespaces,
)

# Labels lean on the characters that matter to the encodings: JSON escapes, the
# separator, a wildcard, non-ASCII (UTF-8 byte order differs from code point order).
label_chars = st.one_of(st.sampled_from('ab"\\, *é\u00ff\U0010ffff'), st.characters(codec="utf-8"))
labels = st.text(label_chars, min_size=1, max_size=6).filter(lambda s: "." not in s)
namespaces = st.lists(labels, min_size=1, max_size=4).map(tuple)


def _derive(draw: st.DrawFn, a: tuple[str, ...], labels: st.SearchStrategy[str]) -> tuple[str, ...]:
    """A namespace derived from `a` so that the two nearly collide."""
    i = draw(st.integers(0, len(a) - 1))
    how = draw(
        st.sampled_from(["extend", "truncate", "append", "drop", "share", "same", "unrelated"])
    )
    if how == "extend":  # ("a",) -> ("ab",): a label grows by characters
        tail = draw(st.sampled_from([(), a[i + 1 :]]))
        return (*a[:i], a[i] + draw(labels), *tail)
    if how == "truncate" and len(a[i]) > 1:  # ("ab",) -> ("a",)
        return (*a[:i], a[i][: draw(st.integers(1, len(a[i]) - 1))], *a[i + 1 :])
    if how == "append":  # ("a",) -> ("a", "b")
        return a + tuple(draw(st.lists(labels, min_size=1, max_size=2)))
    if how == "drop" and len(a) > 1:  # ("a", "b") -> ("a",)
        return a[: draw(st.integers(1, len(a) - 1))]
    if how == "share":  # ("a", "b") -> ("a", "c")
        return a[:i] + tuple(draw(st.lists(labels, min_size=1, max_size=2)))
    if how == "unrelated":
        return tuple(draw(st.lists(labels, min_size=1, max_size=4)))
    return a


@st.composite
def related_namespaces(
    draw: st.DrawFn, labels: st.SearchStrategy[str] = labels
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Two namespaces, the second derived from the first so that they nearly collide.

    The second one is the first with a label extended or truncated by characters
    (`("a",)` vs `("ab",)`), with labels appended or dropped, sharing only some leading
    labels, or equal; the pair comes in either order.
    """
    a = tuple(draw(st.lists(labels, min_size=1, max_size=4)))
    b = _derive(draw, a, labels)
    return (b, a) if draw(st.booleans()) else (a, b)


@st.composite
def namespace_families(
    draw: st.DrawFn, labels: st.SearchStrategy[str] = labels, max_size: int = 5
) -> list[tuple[str, ...]]:
    """Distinct namespaces all derived from one, so that they nearly collide pairwise."""
    base = tuple(draw(st.lists(labels, min_size=1, max_size=3)))
    family = {base}
    for _ in range(draw(st.integers(1, max_size - 1))):
        family.add(_derive(draw, draw(st.sampled_from(sorted(family))), labels))
    return sorted(family)


# Values where InMemoryStore's comparison has no Python quirks (no bools next to ints,
# ordering operators only on numbers).
scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", ""]), st.none())
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=300)
@given(related_namespaces())
def test_encoded_prefix_iff_namespace_prefix(pair: tuple[tuple[str, ...], ...]) -> None:
    a, b = pair
    assert decode_namespace(encode_namespace(a)) == a
    is_prefix = b[: len(a)] == a
    assert has_prefix(b, a) == is_prefix
    enc_a, enc_b = encode_namespace(a), encode_namespace(b)
    assert enc_b.startswith(enc_a) == is_prefix
    # The range scans the tiers run for a prefix select exactly the namespaces under it:
    # Redis ZRANGEBYLEX over UTF-8 bytes, SQLite's binary collation over the text.
    raw_a, raw_b = enc_a.encode("utf-8"), enc_b.encode("utf-8")
    assert (raw_a <= raw_b < raw_a + b"\xff") == is_prefix
    assert (enc_a <= enc_b < enc_a + "\U0010ffff") == is_prefix
    if "*" not in a:  # a "*" label is a wildcard in list_namespaces conditions
        matched = select_namespaces([b], (MatchCondition("prefix", a),), None, 10, 0)
        assert (matched == [b]) == is_prefix


@settings(max_examples=300)
@given(related_namespaces())
def test_namespace_ids_distinguish_namespaces(pair: tuple[tuple[str, ...], ...]) -> None:
    a, b = pair
    assert (namespace_id(a) == namespace_id(b)) == (a == b)
    assert len(namespace_id(a)) == 32


def test_related_pairs_cover_the_near_collisions() -> None:
    """The strategy does produce the pairs the properties above are about."""

    def label_prefix_only(pair: tuple[tuple[str, ...], ...]) -> bool:
        a, b = pair
        return len(a) == len(b) and a[:-1] == b[:-1] and a[-1] != b[-1] and b[-1].startswith(a[-1])

    def namespace_prefix(pair: tuple[tuple[str, ...], ...]) -> bool:
        a, b = pair
        return len(a) < len(b) and b[: len(a)] == a

    for condition in (label_prefix_only, namespace_prefix):
        find(related_namespaces(), condition, settings=settings(max_examples=200))


def test_label_prefixes_are_not_namespace_prefixes() -> None:
    """Hand-picked near collisions, in case the strategy above ever drifts."""
    cases = [
        (("a",), ("ab",)),
        (("a", "b"), ("a", "bc")),
        (("a",), ("a", "b")),
        (('a"',), ("a",)),
        (("a,",), ("a", "")),
        (("é",), ("\u00e9x",)),
        (("\u00ff",), ("\u00ff\U0010ffff",)),
    ]
    for a, b in cases:
        for x, y in ((a, b), (b, a)):
            expected = y[: len(x)] == x
            assert encode_namespace(y).startswith(encode_namespace(x)) == expected, (x, y)
            assert has_prefix(y, x) == expected


@given(
    st.dictionaries(st.sampled_from(["x", "y", "z"]), json_values, max_size=3),
    st.sampled_from(["x", "y", "w"]),
    json_values,
)
def test_equality_filters_agree_with_inmemory_store(value: dict, key: str, cond: object) -> None:
    assert matches_filter(value, {key: cond}) == _compare_values(value.get(key), cond)
    assert matches_filter(value, {key: {"$eq": cond}}) == (value.get(key) == cond)
    assert matches_filter(value, {key: {"$ne": cond}}) == (value.get(key) != cond)


@given(st.integers(-5, 5), st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), st.floats(-6, 6))
def test_range_filters_agree_with_inmemory_store(x: int, op: str, bound: float) -> None:
    assert matches_filter({"x": x}, {"x": {op: bound}}) == _compare_values(x, {op: bound})


def test_filter_semantics_beyond_inmemory() -> None:
    v = {"a": {"b": {"c": 3}}, "flag": True, "one": 1, "s": "m", "dotted.key": 5}
    assert matches_filter(v, {"a.b.c": 3})
    assert matches_filter(v, {"a.b.c": {"$gte": 3, "$lt": 4}})
    assert not matches_filter(v, {"a.b.x": 3})
    assert matches_filter(v, {"dotted.key": 5})  # an exact top-level key wins
    assert matches_filter(v, {"flag": True}) and not matches_filter(v, {"flag": 1})
    assert matches_filter(v, {"one": 1.0}) and not matches_filter(v, {"one": True})
    assert matches_filter(v, {"s": {"$gt": "a", "$lt": "z"}})
    assert not matches_filter(v, {"s": {"$gt": 1}})  # string vs number: no match
    assert not matches_filter(v, {"missing": {"$lt": 10}})


def test_validate_filter_errors() -> None:
    with pytest.raises(InvalidFilterError, match="operator"):
        validate_filter({"x": {"$regex": "a"}}, allow_non_finite=False)
    with pytest.raises(InvalidFilterError, match="finite"):
        validate_filter({"x": {"$lt": float("inf")}}, allow_non_finite=False)
    validate_filter({"x": {"$lt": float("inf")}}, allow_non_finite=True)
    with pytest.raises(InvalidFilterError, match="Invalid filter key"):
        validate_filter({"a b": 1}, allow_non_finite=False)
    validate_filter({"user.access-level": 1, "123abc": 2, "ключ": 3}, allow_non_finite=False)


@pytest.mark.parametrize("bad", [(), ("a", "b.c"), ("a", ""), ("a", 3), "abc", ("x" * 257,)])
def test_validate_namespace_rejects(bad: object) -> None:
    with pytest.raises(InvalidNamespaceError):
        validate_namespace(bad)


def test_select_namespaces_wildcards_depth_paging() -> None:
    nss = [("a", "b", "c"), ("a", "x", "c"), ("b", "c"), ("a",)]
    prefix = (MatchCondition("prefix", ("a", "*")),)
    assert select_namespaces(nss, prefix, None, 10, 0) == [("a", "b", "c"), ("a", "x", "c")]
    suffix = (MatchCondition("suffix", ("c",)),)
    assert select_namespaces(nss, suffix, 1, 10, 0) == [("a",), ("b",)]
    assert select_namespaces(nss, None, None, 2, 1) == [("a", "b", "c"), ("a", "x", "c")]


def test_router_default_policy_and_overrides() -> None:
    r = TierRouter(None)
    assert r.tier_for(("short_term", "s1")) == "short"
    assert r.tier_for(("shortterm",)) == "long"
    assert r.tier_for(("users", "short_term")) == "long"
    assert r.tiers_for_prefix(()) == ["long", "short"]
    assert r.tiers_for_prefix(("short_term",)) == ["short"]
    assert r.tiers_for_prefix(("users",)) == ["long"]
    assert TierRouter({"default": "long"}).tier_for(("short_term", "x")) == "long"
    assert TierRouter({"default": "short"}).tier_for(("users",)) == "short"
    nested = TierRouter({"default": "long", "short": [("s",)], "long": [("s", "keep")]})
    assert nested.tier_for(("s", "keep", "x")) == "long"
    assert nested.tier_for(("s", "other")) == "short"
    assert nested.tiers_for_prefix(("s",)) == ["long", "short"]
    assert nested.tiers_for_prefix(("s", "other")) == ["short"]
    assert DEFAULT_TIER_POLICY["short"] == [("short_term",)]
    with pytest.raises(ConfigurationError):
        TierRouter({"default": "long", "short": [()]})


def test_stored_json_parsing_keeps_huge_integers() -> None:
    from langgraph_tiered_memory.store.tiers._items import loads

    assert loads('{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert loads('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
