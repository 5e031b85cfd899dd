"""NUL characters in namespace labels are refused, as LangGraph's own methods refuse them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError

from langgraph_tiered_memory.store._validate import check_labels, validate_namespace

# Labels that are valid apart from the NUL character inserted somewhere in them.
_clean = st.text(
    alphabet=st.characters(
        blacklist_characters=".\x00", blacklist_categories=("Cs",), min_codepoint=1
    ),
    max_size=10,
)
_with_nul = st.tuples(_clean, _clean).map(lambda parts: parts[0] + "\x00" + parts[1])


@given(
    before=st.lists(_clean.filter(bool), max_size=2),
    bad=_with_nul,
    after=st.lists(_clean.filter(bool), max_size=2),
)
def test_a_label_holding_nul_is_refused_for_writes_and_reads(
    before: list[str], bad: str, after: list[str]
) -> None:
    namespace = (*before, bad, *after)
    with pytest.raises(InvalidNamespaceError, match="NUL") as err:
        validate_namespace(namespace)
    assert repr(bad) in str(err.value)
    with pytest.raises(InvalidNamespaceError, match="NUL"):
        check_labels(namespace)
    with pytest.raises(InvalidNamespaceError, match=r"Namespace prefix label .* NUL"):
        check_labels(namespace, "Namespace prefix")


def test_the_message_names_the_fix() -> None:
    with pytest.raises(InvalidNamespaceError) as err:
        validate_namespace(("users", "u\x00"))
    assert "replace('\\x00', '')" in str(err.value)


def test_labels_without_nul_still_pass() -> None:
    assert validate_namespace(("users", "u\x01", "ü")) == ("users", "u\x01", "ü")
    check_labels(("users", "*", "u\x01"))
