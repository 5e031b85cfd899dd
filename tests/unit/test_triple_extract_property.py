"""Property: rule extraction never raises and only returns normalised triples."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.graph.extract import RuleExtractor, query_entities
from langgraph_tiered_memory.graph.types import normalize_entity, normalize_relation

_WORDS = [
    "I", "my", "sister", "Anna", "lives", "in", "Berlin", "don't", "like", "is", "a",
    "the", "of", "capital", "was", "written", "by", "on", "8", "May", "2023", "last",
    "week", "and", "she", "He", "visited", "Caroline", "said,", '"', "?", ".", "named",
    "dog", "Max", "has", "works", "at", "who", "not", "'s", "\u2019s", "Dr.", "with",
]  # fmt: skip

_texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(_WORDS), max_size=30).map(" ".join),
)


@settings(max_examples=300, deadline=None)
@given(
    text=_texts,
    speaker=st.one_of(st.none(), st.text(max_size=20)),
    mentions=st.booleans(),
)
def test_extraction_never_raises_and_triples_are_normalised(
    text: str, speaker: str | None, mentions: bool
) -> None:
    [found] = RuleExtractor(mentions=mentions).extract([text], speakers=[speaker])
    assert len(found) == len(set(found))
    for triple in found:
        for entity in (triple.subject, triple.object):
            assert entity and normalize_entity(entity) == entity
        assert triple.relation and normalize_relation(triple.relation) == triple.relation
        assert triple.subject != triple.object


@settings(max_examples=200, deadline=None)
@given(text=_texts)
def test_query_entities_are_normalised_unique_and_longest_first(text: str) -> None:
    found = query_entities(text)
    assert len(found) == len(set(found))
    assert all(name and normalize_entity(name) == name for name in found)
    assert found == sorted(found, key=lambda n: (-len(n.split(" ")), -len(n)))
