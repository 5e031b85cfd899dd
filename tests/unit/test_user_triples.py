"""Export and erase take one set of knowledge-graph triples as a user's, for any graph."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.graph.types import MemoryTriples, Namespace, Triple
from langgraph_tiered_memory.store._erase import ErasePlan, user_graph_part, user_rule
from langgraph_tiered_memory.store._export import user_triples

_SPACES: list[Namespace] = [
    ("users", "u1", "mem"),
    ("memories", "u1"),
    ("users", "u2", "mem"),
    ("memories", "u2"),
    ("kb",),
    ("shared", "deep"),
]
_WORDS = ["u1", "ana", "u2", "tea", "user u1", "ana lopes"]
_memory = st.tuples(
    st.sampled_from(_SPACES),
    st.sampled_from(["k1", "k2", "k3"]),
    st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_WORDS)), max_size=3),
    st.sampled_from([None, "u1", "u2"]),  # the graph scope's user, where no "users" label
)


@settings(max_examples=60, deadline=None)
@given(
    memories=st.lists(_memory, max_size=10),
    names=st.lists(st.sampled_from(_WORDS), max_size=2),
    shared_keys=st.lists(st.sampled_from(["k1", "k2", "k3"]), max_size=2),
)
def test_export_and_erase_select_the_same_triples_of_any_graph(
    memories: list[tuple[Namespace, str, list[tuple[str, str]], str | None]],
    names: list[str],
    shared_keys: list[str],
) -> None:
    rule = user_rule("u1", "users")
    graph = SqliteGraph.open(":memory:")
    try:
        graph.replace(
            [
                MemoryTriples(
                    ns,
                    key,
                    tuple(sorted({Triple(s, "rel", o) for s, o in pairs})),
                    ns[1] if ns[0] == "users" else scope,
                )
                for ns, key, pairs, scope in {m[:2]: m for m in memories}.values()
            ]
        )
        shared = {ns: sorted(set(shared_keys)) for ns in _SPACES if rule.shared(ns)}
        plan = ErasePlan("u1", rule, (), tuple(names), shared={"long": shared})
        exported = {(r.namespace, r.triple) for r in user_triples(graph, plan)}

        def links() -> set[tuple[Namespace, str, Triple]]:
            return {
                (r.namespace, k, r.triple)
                for r in graph.triples((), limit=10_000)
                for k in r.memory_keys
            }

        before = links()
        user_graph_part(graph, plan, dry_run=False)
        after = links()
    finally:
        graph.close()
    assert exported == {(ns, t) for ns, _, t in before - after}
    assert not any("u2" in ns for ns, _, _ in before - after)  # never another user's
