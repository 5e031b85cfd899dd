"""The item document: one encoder and one decoder, exact for every JSON value."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.store.tiers._document import Document, decode_document, encode_document
from langgraph_tiered_memory.store.tiers._items import StoredItem

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)
_TIME = st.floats(allow_nan=False, allow_infinity=False)


def _compact(value: Any) -> str:
    return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))


def _same(a: Any, b: Any) -> bool:
    """Equal, with floats equal bit for bit (-0.0 is not 0.0) and types kept."""
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and math.copysign(1, a) == math.copysign(1, b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(
    value=st.dictionaries(_TEXT, _JSON, max_size=5),
    created=_TIME,
    updated=_TIME,
    ttl=st.none() | st.floats(min_value=0, allow_infinity=False),
    vectors=st.none() | st.integers(min_value=0, max_value=1000),
    key_vectors=st.integers(min_value=0, max_value=5),
)
def test_round_trip_is_exact(
    value: dict[str, Any],
    created: float,
    updated: float,
    ttl: float | None,
    vectors: int | None,
    key_vectors: int,
) -> None:
    raw = encode_document(
        _compact(value),
        created_at=created,
        updated_at=updated,
        ttl=ttl,
        vectors=vectors,
        write_id=None if vectors is None else "0123abcd",
        key_vectors=key_vectors,
    )
    doc = decode_document(raw)
    assert _same(doc.value, value)
    assert _same(doc.created_at, created) and _same(doc.updated_at, updated)
    assert doc.ttl is None if ttl is None else _same(doc.ttl, ttl)
    assert doc.vectors == (vectors or 0) and doc.key_vectors == key_vectors
    assert doc.write_id == ("" if vectors is None else "0123abcd")
    assert decode_document(raw.encode("utf-8")) == doc  # bytes, as Redis returns them


def test_long_tier_documents_keep_their_format() -> None:
    # The spelling Chroma collections already hold: existing records stay readable and
    # new ones compare equal field for field.
    now, write_id, value = 1_700_000_000.25, "ab12cd34ef56", '{"a":[1,2.5,"x"]}'
    old = f'{{"c":{now!r},"u":{now!r},"t":30.0,"n":3,"w":"{write_id}","k":1,"value":{value}}}'
    new = encode_document(
        value, created_at=now, updated_at=now, ttl=30.0, vectors=3, write_id=write_id, key_vectors=1
    )
    assert new == old
    plain = encode_document("{}", created_at=now, updated_at=now, ttl=None, vectors=0, write_id="w")
    assert json.loads(plain) == {"c": now, "u": now, "t": None, "n": 0, "w": "w", "value": {}}


def test_documents_of_the_older_redis_format_decode() -> None:
    old = '{"c":1.5,"u":2.5,"t":1.0,"e":62.5,"value":{"text":"old"}}'
    assert decode_document(old) == Document({"text": "old"}, 1.5, 2.5, 1.0)
    spaced = json.dumps({"value": [1], "e": None, "t": None, "u": 2, "c": 1})
    assert decode_document(spaced) == Document([1], 1, 2, None)


def test_the_item_takes_its_expiry_from_the_tier() -> None:
    doc = decode_document(encode_document('{"v":1}', created_at=1.0, updated_at=2.0, ttl=1.0))
    assert doc.item(("a", "b"), "k", 61.0) == StoredItem(
        namespace=("a", "b"),
        key="k",
        value={"v": 1},
        created_at=1.0,
        updated_at=2.0,
        ttl=1.0,
        expires_at=61.0,
    )


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_non_finite_times_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        encode_document("{}", created_at=bad, updated_at=1.0, ttl=None)
    with pytest.raises(ValueError, match="finite"):
        encode_document("{}", created_at=1.0, updated_at=1.0, ttl=bad)
