"""`interop.memory_key`: every Chroma id gets a key of its own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from langgraph_tiered_memory.interop import memory_key
from langgraph_tiered_memory.store._validate import MAX_KEY_BYTES, validate_key

_long = st.text(min_size=MAX_KEY_BYTES + 1, max_size=MAX_KEY_BYTES + 40)  # hashed
_odd = st.text(st.characters(categories=["Cs", "Cc", "Ll"]), max_size=8)  # surrogates, NUL
_hashed_form = st.from_regex(r"lc-[0-9a-f]{32}", fullmatch=True)
_ids = st.one_of(st.text(max_size=40), _odd, _long, _hashed_form)


@given(st.lists(_ids, min_size=1, max_size=6))
def test_distinct_ids_get_distinct_stable_valid_keys(drawn: list[str]) -> None:
    # Each id's key is an id too: a document may be named exactly like another's hash.
    ids = list(dict.fromkeys(drawn + [memory_key(i) for i in drawn]))
    keys = [memory_key(i) for i in ids]
    assert len(set(keys)) == len(ids)
    assert keys == [memory_key(i) for i in ids]  # the same on every run
    for key in keys:
        assert key and validate_key(key) == key and "\x00" not in key
