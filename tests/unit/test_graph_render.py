"""The text views of graph triples: the indented tree and Mermaid flowchart text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.graph.render import (
    mermaid_id,
    mermaid_label,
    mermaid_text,
    render_tree,
    to_mermaid,
    unique_triples,
)
from langgraph_tiered_memory.graph.types import Neighbor, Triple, TripleRecord

FACTS = [
    Triple("user", "sister", "anna"),
    Triple("anna", "lives_in", "porto"),
    Triple("porto", "located_in", "portugal"),
    Triple("portugal", "has_city", "porto"),
    Triple("user", "likes", "green tea"),
]


def _record(t: Triple, *keys: str) -> TripleRecord:
    return TripleRecord(*t, ("users", "u1"), "u1", tuple(keys) or ("m1",))


def test_the_forest_groups_each_subjects_relations_and_objects_in_order() -> None:
    assert render_tree(reversed(FACTS)) == "\n".join(
        [
            "anna",
            "└── lives_in",
            "    └── porto",
            "porto",
            "└── located_in",
            "    └── portugal",
            "portugal",
            "└── has_city",
            "    └── porto",
            "user",
            "├── likes",
            "│   └── green tea",
            "└── sister",
            "    └── anna",
        ]
    )


def test_a_neighbourhood_follows_triples_both_ways_and_nests_the_second_hop() -> None:
    tree = render_tree(FACTS, root="anna", hops=2)
    assert tree.splitlines() == [
        "anna",
        "├── lives_in",
        "│   └── porto",
        "│       ├── located_in",
        "│       │   └── portugal",
        "│       └── ← has_city",
        "│           └── portugal",
        "└── ← sister",
        "    └── user",  # not back along `user sister anna`: only its other triple
        "        └── likes",
        "            └── green tea",
    ]
    one_hop = render_tree(FACTS, root="anna")
    assert one_hop.splitlines() == [
        "anna",
        "├── lives_in",
        "│   └── porto",
        "└── ← sister",
        "    └── user",
    ]


def test_cycles_are_cut_and_subtrees_are_not_repeated() -> None:
    triples = [
        Triple("a", "knows", "b"),
        Triple("b", "knows", "a"),
        Triple("a", "likes", "a"),
        Triple("a", "works_with", "b"),
    ]
    lines = render_tree(triples, root="a", hops=2).splitlines()
    assert lines == [
        "a",
        "├── knows",
        "│   └── b",
        "│       ├── knows",
        "│       │   └── a ↺",
        "│       └── ← works_with",
        "│           └── a ↺",
        "├── likes",
        "│   └── a ↺",
        "├── works_with",
        "│   └── b …",
        "└── ← knows",
        "    └── b …",
    ]


def test_stable_order_whatever_the_input_order_and_duplicates_dropped() -> None:
    records = [_record(t) for t in FACTS]
    shuffled = [records[3], records[0], records[4], records[1], records[2], records[0]]
    assert render_tree(shuffled, root="porto", hops=2) == render_tree(FACTS, root="porto", hops=2)
    assert unique_triples(shuffled) == sorted(FACTS)


def test_neighbours_are_rendered_through_their_paths() -> None:
    first, second = _record(FACTS[1]), _record(FACTS[2])
    neighbours = [Neighbor("porto", 1, (first,)), Neighbor("portugal", 2, (first, second))]
    assert unique_triples(neighbours) == [FACTS[1], FACTS[2]]
    assert "portugal" in render_tree(neighbours, root="anna", hops=2)
    assert "portugal" not in render_tree(neighbours, root="anna", hops=1)


def test_an_unknown_root_or_nothing_reads_no_triples_and_bad_hops_raise() -> None:
    assert render_tree([]) == "(no triples)"
    assert render_tree(FACTS, root="bob") == "(no triples)"
    with pytest.raises(ValueError, match="hops"):
        render_tree(FACTS, root="anna", hops=3)


def test_control_characters_cannot_break_a_tree_line() -> None:
    tree = render_tree([Triple("a\nb", "rel\tx", "c\x1b[31m")])
    assert tree.splitlines() == ["a\\nb", "└── rel\\tx", "    └── c\\x1b[31m"]


def test_mermaid_text_has_one_node_per_entity_and_one_edge_per_triple() -> None:
    text = mermaid_text([*FACTS, FACTS[0]], root="anna")
    lines = text.splitlines()
    assert lines[0] == "graph LR"
    nodes = [ln for ln in lines if re.fullmatch(r"    n_\w+\[\".*\"\]", ln)]
    edges = [ln for ln in lines if "-->" in ln]
    assert len(nodes) == 5 and len(edges) == 5
    assert f'    {mermaid_id("green tea")}["green tea"]' in lines
    assert f'    {mermaid_id("user")} -->|"sister"| {mermaid_id("anna")}' in lines
    assert lines[-1] == f"    class {mermaid_id('anna')} root"
    assert "class " not in mermaid_text(FACTS, root="nobody")


def test_to_mermaid_displays_as_a_mermaid_block_in_notebooks() -> None:
    chart = to_mermaid(FACTS)
    assert str(chart) == mermaid_text(FACTS)
    assert chart._repr_markdown_() == f"```mermaid\n{mermaid_text(FACTS)}\n```"


def test_hostile_names_are_escaped() -> None:
    assert mermaid_label('a "b" [c] |d| #e; <f>') == (
        "a #34;b#34; #91;c#93; #124;d#124; #35;e#59; #60;f#62;"
    )
    assert mermaid_label("São Paulo") == "São Paulo"
    assert mermaid_id("end").startswith("n_end_")
    assert mermaid_id("Anna") != mermaid_id("anna")


_ENTITY_CODE = re.compile(r"#(\d+);")
_SAFE_LABEL = re.compile(r"(?:[^\W_]|[ \-_.,:'()/]|#\d+;)*")


def _decode(label: str) -> str:
    return _ENTITY_CODE.sub(lambda m: chr(int(m.group(1))), label)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_entity_text_yields_a_safe_id_and_a_safe_reversible_label(text: str) -> None:
    ident = mermaid_id(text)
    assert re.fullmatch(r"n_[a-z0-9_]+", ident), ident
    label = mermaid_label(text)
    # nothing that ends a quoted label, starts a shape or edge text, or breaks a line
    assert _SAFE_LABEL.fullmatch(label), label
    assert not set(label) & set('"[]{}|<>`\n\r\t')
    assert _decode(label) == text
    label.encode("utf-8")  # printable: no lone surrogates left


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.text(max_size=8), st.text(max_size=12)),
        max_size=8,
    )
)
def test_every_mermaid_line_is_a_node_an_edge_or_the_header(parts: list[tuple[str, ...]]) -> None:
    triples = [Triple(*p) for p in parts]
    label = r"\"(?:[^\"\[\]|\n])*\""
    node = rf"    n_[a-z0-9_]+\[{label}\]"
    edge = rf"    n_[a-z0-9_]+ -->\|{label}\| n_[a-z0-9_]+"
    lines = mermaid_text(triples).split("\n")
    assert lines[0] == "graph LR"
    for line in lines[1:]:
        assert re.fullmatch(node, line) or re.fullmatch(edge, line), line
    entities = {t.subject for t in triples} | {t.object for t in triples}
    assert len({mermaid_id(e) for e in entities}) == len(entities)
