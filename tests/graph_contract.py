"""The contract every knowledge-graph backend (`GraphStore`) passes.

Use: subclass `GraphStoreContract` in a test module (name the subclass `Test...`) and
provide two fixtures:

- `graph`: a fresh, empty `GraphStore` (`setup()` already called);
- `reopen`: a zero-argument callable that closes the current instance and returns a
  new one over the same data (a restart).

The tests call the protocol only. Besides `graph/protocol.py`, they pin these rules:

- `replace` normalises nothing it is not asked to: the tests pass normalised triples
  (`Triple.of`); query arguments (`subject`, `relation`, `object`, `entity`,
  `entities`) are normalised by the backend (`normalize_entity`, `normalize_relation`).
- Namespaces order like tuples (`("a",) < ("a", "b") < ("a b",)`), whatever the
  backend stores; strings order by code point.
- `neighbors`: among paths of the same length to an entity, the reported one is the
  smallest sequence of triples, each triple compared as (namespace, subject, relation,
  object). The start entity is never reported.
- `memories_for`: `entities` are normalised and de-duplicated (first position kept).
  One hit per (query entity, triple, memory), with the fewest hops it is reached by;
  hits are ordered by hops, the entity's position in `entities`, namespace, key, then
  the triple's subject, relation and object; `limit` cuts that list (after
  `namespace_filter`). A hop-1 triple is one that touches an entity which a hop-0
  triple of the same scope leads to (other than the query entity).
- `TripleRecord.memory_keys` lists every memory of its namespace supporting the triple,
  sorted.
- `erase` returns a `GraphErasure` with sorted lists; a dry run reports exactly what the
  real run then removes; a second run finds nothing. Scope and mentions reach only the
  namespaces `shared` accepts: another user's namespace is never touched.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langgraph_tiered_memory.graph.erase import GraphErasure, erase_user_graph
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Namespace,
    Neighbor,
    Triple,
    TripleRecord,
)
from langgraph_tiered_memory.privacy.erasure import ErasureReceipt, UserNamespaces, id_hash

__all__ = ["GraphStoreContract"]

T = Triple.of

U1: Namespace = ("users", "u1", "mem")
U2: Namespace = ("users", "u2", "mem")


def mt(ns: Namespace, key: str, *triples: Triple, user: str | None = "auto") -> MemoryTriples:
    """What memory `key` of `ns` supports; the user defaults to the label after "users"."""
    if user == "auto":
        user = ns[1] if ns[0] == "users" and len(ns) > 1 else None
    return MemoryTriples(ns, key, tuple(triples), user)


def rec(ns: Namespace, t: Triple, *keys: str, user: str | None = "auto") -> TripleRecord:
    """The record of triple `t` in `ns`, supported by `keys`."""
    if user == "auto":
        user = ns[1] if ns[0] == "users" and len(ns) > 1 else None
    return TripleRecord(t.subject, t.relation, t.object, ns, user, tuple(sorted(keys)))


def hit(ns: Namespace, key: str, hops: int, entity: str, record: TripleRecord) -> GraphHit:
    return GraphHit(ns, key, hops, entity, record)


def summary(neighbors: list[Neighbor]) -> list[tuple[str, int, list[tuple[str, ...]]]]:
    """(entity, hops, path triples) of each neighbour, in order."""
    return [(n.entity, n.hops, [tuple(r.triple) for r in n.path]) for n in neighbors]


WORKS = T("Alice", "works at", "Acme")
LOCATED = T("Acme", "located in", "Paris")
KNOWS = T("Bob", "knows", "Alice")
CAPITAL = T("Paris", "capital of", "France")
CAROL = T("Carol", "knows", "Bob")


class GraphStoreContract:
    """Backend-neutral tests; subclasses provide the `graph` and `reopen` fixtures."""

    @pytest.fixture
    def chain(self, graph: GraphStore) -> GraphStore:
        """u1: alice -works_at-> acme -located_in-> paris -capital_of-> france;
        bob -knows-> alice; carol -knows-> bob. One memory per triple."""
        graph.replace(
            [
                mt(U1, "m1", WORKS),
                mt(U1, "m2", LOCATED),
                mt(U1, "m3", KNOWS),
                mt(U1, "m4", CAPITAL),
                mt(U1, "m5", CAROL),
            ]
        )
        return graph

    # ------------------------------------------------------------------ replace
    def test_is_a_graph_store(self, graph: GraphStore) -> None:
        assert isinstance(graph, GraphStore)
        assert graph.triples(("users",)) == []
        assert graph.neighbors(("users",), "alice") == []
        assert graph.memories_for(("users",), ["alice"]) == []
        assert graph.memory_triples(U1, ["m1"]) == {}

    def test_replace_then_triples_by_pattern(self, graph: GraphStore) -> None:
        lives = T("Alice", "lives in", "Paris")
        graph.replace([mt(U1, "m1", WORKS, lives), mt(U1, "m2", KNOWS)])
        everything = [rec(U1, lives, "m1"), rec(U1, WORKS, "m1"), rec(U1, KNOWS, "m2")]
        assert graph.triples(("users", "u1")) == everything
        assert graph.triples(()) == everything
        assert graph.triples(U1, subject="  ALICE ") == everything[:2]
        assert graph.triples(U1, relation="Works At") == [everything[1]]
        assert graph.triples(U1, relation="works_at") == [everything[1]]
        assert graph.triples(U1, object="'Alice'") == [everything[2]]
        assert graph.triples(U1, subject="alice", object="acme") == [everything[1]]
        assert graph.triples(U1, subject="alice", relation="knows") == []
        assert graph.triples(U1, subject="nobody") == []
        assert graph.triples(U1, limit=2) == everything[:2]
        assert graph.triples(U2) == []

    def test_replace_is_idempotent_and_exact(self, graph: GraphStore) -> None:
        lives = T("Alice", "lives in", "Paris")
        change = [mt(U1, "m1", WORKS, lives), mt(U1, "m2", KNOWS)]
        graph.replace(change)
        graph.replace(change)
        assert graph.triples(U1) == [
            rec(U1, lives, "m1"),
            rec(U1, WORKS, "m1"),
            rec(U1, KNOWS, "m2"),
        ]
        graph.replace([mt(U1, "m1", WORKS)])  # the memory no longer supports `lives`
        assert graph.triples(U1) == [rec(U1, WORKS, "m1"), rec(U1, KNOWS, "m2")]
        assert graph.memory_triples(U1, ["m1", "m2"]) == {"m1": (WORKS,), "m2": (KNOWS,)}
        graph.replace([mt(U1, "m1")])  # deleted or forgotten: supports nothing
        assert graph.triples(U1) == [rec(U1, KNOWS, "m2")]
        assert graph.memory_triples(U1, ["m1", "m2"]) == {"m2": (KNOWS,)}
        graph.replace([mt(U1, "m2")])
        assert graph.triples(()) == []
        assert graph.neighbors(U1, "alice") == []

    def test_replace_is_all_or_nothing_per_call(self, graph: GraphStore) -> None:
        graph.replace([mt(U1, "m1", WORKS), mt(U2, "m1", KNOWS), mt(U1, "m2", LOCATED)])
        assert graph.triples(("users",)) == [
            rec(U1, LOCATED, "m2"),
            rec(U1, WORKS, "m1"),
            rec(U2, KNOWS, "m1"),
        ]

    def test_a_triple_lives_while_one_memory_supports_it(self, graph: GraphStore) -> None:
        graph.replace([mt(U1, "m1", WORKS), mt(U1, "m2", WORKS, KNOWS)])
        assert graph.triples(U1, subject="alice") == [rec(U1, WORKS, "m1", "m2")]
        graph.replace([mt(U1, "m1")])
        assert graph.triples(U1) == [rec(U1, WORKS, "m2"), rec(U1, KNOWS, "m2")]
        assert [n.path[0].memory_keys for n in graph.neighbors(U1, "acme")] == [("m2",)]
        graph.replace([mt(U1, "m2", KNOWS)])
        assert graph.triples(U1) == [rec(U1, KNOWS, "m2")]
        assert graph.neighbors(U1, "acme") == []

    def test_same_triple_in_two_namespaces_is_two_records(self, graph: GraphStore) -> None:
        other = ("users", "u1", "notes")
        graph.replace([mt(U1, "m1", WORKS), mt(other, "m1", WORKS)])
        assert graph.triples(("users", "u1")) == [rec(U1, WORKS, "m1"), rec(other, WORKS, "m1")]
        graph.replace([mt(U1, "m1")])
        assert graph.triples(("users", "u1")) == [rec(other, WORKS, "m1")]

    # ------------------------------------------------------------------ prefixes
    def test_prefix_covers_deeper_namespaces_never_longer_labels(self, graph: GraphStore) -> None:
        spaces: list[Namespace] = [
            ("users", "u1"),
            ("users", "u1", "a"),
            ("users", "u1", "a b"),
            ("users", "u1", "a", "z"),
            ("users", "u10"),
            ("users", "u10", "x"),
            ("users", "u1 "),
        ]
        graph.replace([mt(ns, "k", WORKS, user="u1") for ns in spaces])
        inside = [
            ("users", "u1"),
            ("users", "u1", "a"),
            ("users", "u1", "a", "z"),
            ("users", "u1", "a b"),
        ]
        assert [r.namespace for r in graph.triples(("users", "u1"))] == inside
        assert [r.namespace for r in graph.triples(("users", "u1", "a"))] == inside[1:3]
        assert [r.namespace for r in graph.triples(("users",))] == sorted(spaces)
        assert [r.namespace for r in graph.triples(("users", "u"))] == []
        acme = graph.neighbors(("users", "u1"), "alice")
        assert [(n.entity, n.path[0].namespace) for n in acme] == [("acme", ("users", "u1"))]
        hits = graph.memories_for(("users", "u1"), ["alice"], hops=0)
        assert [h.namespace for h in hits] == inside
        assert [h.namespace for h in graph.memories_for(("users", "u10"), ["acme"])] == [
            ("users", "u10"),
            ("users", "u10", "x"),
        ]

    # ------------------------------------------------------------------ neighbors
    def test_neighbors_one_and_two_hops_both_directions(self, chain: GraphStore) -> None:
        works, located, knows = tuple(WORKS), tuple(LOCATED), tuple(KNOWS)
        assert summary(chain.neighbors(U1, "Alice")) == [
            ("acme", 1, [works]),
            ("bob", 1, [knows]),
        ]
        assert summary(chain.neighbors(("users", "u1"), "alice", hops=2)) == [
            ("acme", 1, [works]),
            ("bob", 1, [knows]),
            ("carol", 2, [knows, tuple(CAROL)]),
            ("paris", 2, [works, located]),
        ]
        assert summary(chain.neighbors(U1, "paris")) == [
            ("acme", 1, [located]),
            ("france", 1, [tuple(CAPITAL)]),
        ]
        full = chain.neighbors(U1, "paris", hops=2)
        assert summary(full)[2:] == [("alice", 2, [located, works])]
        assert full[2].path == (rec(U1, LOCATED, "m2"), rec(U1, WORKS, "m1"))
        assert full[2].memory_keys == ((U1, "m2"), (U1, "m1"))

    def test_neighbors_relation_filter_and_limit(self, chain: GraphStore) -> None:
        assert summary(chain.neighbors(U1, "alice", hops=2, relation="Knows")) == [
            ("bob", 1, [tuple(KNOWS)]),
            ("carol", 2, [tuple(KNOWS), tuple(CAROL)]),
        ]
        assert chain.neighbors(U1, "alice", relation="likes") == []
        assert [n.entity for n in chain.neighbors(U1, "alice", hops=2, limit=3)] == [
            "acme",
            "bob",
            "carol",
        ]
        assert chain.neighbors(U1, "nobody", hops=2) == []

    def test_neighbors_reports_the_shortest_path_once(self, graph: GraphStore) -> None:
        direct = T("alice", "knows", "dave")
        via = T("acme", "employs", "dave")
        loop = T("dave", "knows", "alice")
        graph.replace([mt(U1, "m1", WORKS, direct), mt(U1, "m2", via, loop)])
        assert summary(graph.neighbors(U1, "alice", hops=2)) == [
            ("acme", 1, [tuple(WORKS)]),
            ("dave", 1, [tuple(direct)]),  # the smaller of alice-knows-dave, dave-knows-alice
        ]

    def test_neighbors_breaks_ties_by_the_smallest_triples(self, graph: GraphStore) -> None:
        a = T("alice", "likes", "jazz")
        b = T("alice", "likes", "blues")
        to_z_from_jazz = T("jazz", "is", "music")
        to_z_from_blues = T("blues", "is", "music")
        graph.replace([mt(U1, "m1", a, b), mt(U1, "m2", to_z_from_jazz, to_z_from_blues)])
        assert summary(graph.neighbors(U1, "alice", hops=2)) == [
            ("blues", 1, [tuple(b)]),
            ("jazz", 1, [tuple(b)[:2] + ("jazz",)]),
            ("music", 2, [tuple(b), tuple(to_z_from_blues)]),
        ]

    # ------------------------------------------------------------------ tenants
    def test_no_path_crosses_users(self, graph: GraphStore) -> None:
        eve = T("alice", "knows", "eve")
        rome = T("eve", "lives in", "rome")
        graph.replace([mt(U1, "m1", T("alice", "knows", "bob")), mt(U2, "m1", eve, rome)])
        from_bob = graph.neighbors(("users",), "bob", hops=2)
        assert summary(from_bob) == [("alice", 1, [("alice", "knows", "bob")])]
        assert {r.user_id for n in from_bob for r in n.path} == {"u1"}
        from_alice = graph.neighbors(("users",), "alice", hops=2)
        assert summary(from_alice) == [
            ("bob", 1, [("alice", "knows", "bob")]),
            ("eve", 1, [tuple(eve)]),
            ("rome", 2, [tuple(eve), tuple(rome)]),
        ]
        assert [[r.namespace for r in n.path] for n in from_alice] == [[U1], [U2], [U2, U2]]
        hits = graph.memories_for(("users",), ["bob"], hops=1)
        assert {(h.namespace, h.key) for h in hits} == {(U1, "m1")}
        assert all(h.triple.user_id == "u1" for h in hits)
        assert graph.neighbors(("users", "u1"), "alice", hops=2)[0].entity == "bob"
        assert len(graph.neighbors(("users", "u1"), "alice", hops=2)) == 1

    def test_namespaces_of_one_user_join(self, graph: GraphStore) -> None:
        notes = ("users", "u1", "notes")
        graph.replace(
            [mt(U1, "m1", T("alice", "knows", "bob")), mt(notes, "n1", T("bob", "likes", "jazz"))]
        )
        assert summary(graph.neighbors(("users", "u1"), "alice", hops=2)) == [
            ("bob", 1, [("alice", "knows", "bob")]),
            ("jazz", 2, [("alice", "knows", "bob"), ("bob", "likes", "jazz")]),
        ]

    def test_shared_namespaces_do_not_join_each_other(self, graph: GraphStore) -> None:
        a, b = ("shared", "a"), ("shared", "b")
        graph.replace(
            [
                mt(a, "k", T("alice", "knows", "bob"), user=None),
                mt(b, "k", T("bob", "likes", "jazz"), user=None),
            ]
        )
        assert graph.triples(("shared",))[0].user_id is None
        assert summary(graph.neighbors(("shared",), "alice", hops=2)) == [
            ("bob", 1, [("alice", "knows", "bob")])
        ]
        both = graph.neighbors(("shared",), "bob", hops=2)
        assert sorted((n.entity, n.path[0].namespace) for n in both) == [("alice", a), ("jazz", b)]
        hits = graph.memories_for(("shared",), ["alice"], hops=1)
        assert [(h.namespace, h.key, h.hops) for h in hits] == [(a, "k", 0)]

    # ------------------------------------------------------------------ memories
    def test_memory_triples(self, graph: GraphStore) -> None:
        lives = T("Alice", "lives in", "Paris")
        graph.replace([mt(U1, "m1", WORKS, lives), mt(U2, "m1", KNOWS), mt(U1, "m2")])
        assert graph.memory_triples(U1, ["m1", "m2", "nope"]) == {"m1": (lives, WORKS)}
        assert graph.memory_triples(U2, ["m1"]) == {"m1": (KNOWS,)}
        assert graph.memory_triples(("users", "u1"), ["m1"]) == {}
        assert graph.memory_triples(U1, []) == {}

    def test_repoint_moves_support_to_the_target(self, graph: GraphStore) -> None:
        graph.replace(
            [mt(U1, "m1", WORKS, KNOWS), mt(U1, "m2", KNOWS, LOCATED), mt(U1, "m3", CAPITAL)]
        )
        graph.repoint(U1, ["m1", "m2", "m3"], "m3")
        assert graph.memory_triples(U1, ["m1", "m2", "m3"]) == {
            "m3": tuple(sorted((WORKS, KNOWS, LOCATED, CAPITAL)))
        }
        assert graph.triples(U1) == [
            rec(U1, LOCATED, "m3"),
            rec(U1, WORKS, "m3"),
            rec(U1, KNOWS, "m3"),
            rec(U1, CAPITAL, "m3"),
        ]
        graph.repoint(U2, ["m3"], "m9")  # another namespace: nothing moves
        assert graph.memory_triples(U1, ["m3"])["m3"][0] == LOCATED

    def test_memories_for_hops(self, chain: GraphStore) -> None:
        works, located, knows = rec(U1, WORKS, "m1"), rec(U1, LOCATED, "m2"), rec(U1, KNOWS, "m3")
        capital = rec(U1, CAPITAL, "m4")
        assert chain.memories_for(("users", "u1"), ["Alice"], hops=0) == [
            hit(U1, "m1", 0, "alice", works),
            hit(U1, "m3", 0, "alice", knows),
        ]
        assert chain.memories_for(U1, ["alice"]) == [
            hit(U1, "m1", 0, "alice", works),
            hit(U1, "m3", 0, "alice", knows),
            hit(U1, "m2", 1, "alice", located),
            hit(U1, "m5", 1, "alice", rec(U1, CAROL, "m5")),
        ]
        assert chain.memories_for(U1, ["Paris", "alice", "PARIS"], hops=1) == [
            hit(U1, "m2", 0, "paris", located),
            hit(U1, "m4", 0, "paris", capital),
            hit(U1, "m1", 0, "alice", works),
            hit(U1, "m3", 0, "alice", knows),
            hit(U1, "m1", 1, "paris", works),
            hit(U1, "m2", 1, "alice", located),
            hit(U1, "m5", 1, "alice", rec(U1, CAROL, "m5")),
        ]
        assert chain.memories_for(U1, ["france", "alice"], hops=0, limit=2) == [
            hit(U1, "m4", 0, "france", capital),
            hit(U1, "m1", 0, "alice", works),
        ]
        assert chain.memories_for(U1, ["nobody"]) == []
        assert chain.memories_for(U1, []) == []

    def test_memories_for_one_hit_per_entity_triple_and_memory(self, graph: GraphStore) -> None:
        shared = rec(U1, WORKS, "m1", "m2")
        graph.replace([mt(U1, "m1", WORKS, KNOWS), mt(U1, "m2", WORKS)])
        assert graph.memories_for(U1, ["alice", "acme"], hops=1) == [
            hit(U1, "m1", 0, "alice", shared),
            hit(U1, "m1", 0, "alice", rec(U1, KNOWS, "m1")),
            hit(U1, "m2", 0, "alice", shared),
            hit(U1, "m1", 0, "acme", shared),
            hit(U1, "m2", 0, "acme", shared),
            hit(U1, "m1", 1, "acme", rec(U1, KNOWS, "m1")),
        ]

    def test_memories_for_namespace_filter_and_limit(self, chain: GraphStore) -> None:
        other = ("users", "u1", "other")
        chain.replace([mt(other, "o1", T("alice", "likes", "tea"))])
        everything = chain.memories_for(("users", "u1"), ["alice"], hops=0)
        assert [(h.namespace, h.key) for h in everything] == [(U1, "m1"), (U1, "m3"), (other, "o1")]
        seen: list[Namespace] = []

        def only_mem(ns: Namespace) -> bool:
            seen.append(ns)
            return ns[-1] == "mem"

        kept = chain.memories_for(("users", "u1"), ["alice"], hops=1, namespace_filter=only_mem)
        assert [(h.key, h.hops) for h in kept] == [("m1", 0), ("m3", 0), ("m2", 1), ("m5", 1)]
        assert set(seen) <= {U1, other} and other in seen
        limited = chain.memories_for(
            ("users", "u1"), ["alice"], hops=1, namespace_filter=lambda ns: ns == other, limit=1
        )
        assert [(h.namespace, h.key) for h in limited] == [(other, "o1")]
        assert chain.memories_for(("users", "u1"), ["alice"], limit=2) == everything[:2]

    # ------------------------------------------------------------------ durability, text
    def test_triples_survive_a_restart(
        self, chain: GraphStore, reopen: Callable[[], GraphStore]
    ) -> None:
        before = chain.triples(("users",))
        again = reopen()
        assert again.triples(("users",)) == before
        assert [n.entity for n in again.neighbors(U1, "alice", hops=2)] == [
            "acme",
            "bob",
            "carol",
            "paris",
        ]
        again.replace([mt(U1, "m1")])
        assert again.triples(U1, subject="alice") == []
        assert reopen().memory_triples(U1, ["m1", "m2"]) == {"m2": (LOCATED,)}

    def test_unicode_quotes_and_query_syntax_in_names(self, graph: GraphStore) -> None:
        ns: Namespace = ("users", "zoë \"q\" 'x' \\ %_", "mem")
        odd = T("Zoë O'Brien", "likes", 'the "Big" Apple')
        sneaky = T("x'}) MATCH (n) DETACH DELETE n //", "is", "100%_sure\\")
        cjk = T("東京", "位于", "日本")
        graph.replace([mt(ns, "k'1\"", odd, sneaky, cjk, user="zoë")])
        assert graph.triples(ns, subject="ZOË O'BRIEN") == [rec(ns, odd, "k'1\"", user="zoë")]
        assert graph.triples(ns, object="100%_sure\\") == [rec(ns, sneaky, "k'1\"", user="zoë")]
        assert graph.triples(ns, object="100%xsure\\") == []
        assert (
            graph.triples(ns, subject="x'}) MATCH (n) DETACH DELETE n //")[0].object
            == "100%_sure\\"
        )
        assert summary(graph.neighbors(("users",), "東京")) == [("日本", 1, [tuple(cjk)])]
        assert [n.entity for n in graph.neighbors(("users",), 'The "big" apple')] == ["zoë o'brien"]
        assert graph.memory_triples(ns, ["k'1\""]) == {"k'1\"": tuple(sorted((odd, sneaky, cjk)))}
        hits = graph.memories_for(("users", "zoë \"q\" 'x' \\ %_"), ["zoë o'brien"], hops=0)
        assert [(h.namespace, h.key) for h in hits] == [(ns, "k'1\"")]
        assert graph.triples(("users", "zoë")) == []

    # ------------------------------------------------------------------ erase
    @pytest.fixture
    def tenants(self, graph: GraphStore) -> GraphStore:
        """u1's data in every layout, u10's and u2's beside it, and shared namespaces."""
        graph.replace(
            [
                mt(U1, "m1", WORKS, KNOWS),
                mt(("users", "u1", "notes"), "n1", LOCATED),
                mt(("memories", "u1"), "a1", T("u1", "likes", "tea")),  # agent layout
                mt(("tenants", "t9"), "x1", CAPITAL, user="u1"),  # u1's scope, other layout
                mt(("users", "u10", "mem"), "m1", WORKS),
                mt(U2, "m1", KNOWS, CAROL),
                mt(("memories", "u2"), "a1", T("u2", "met", "u1")),  # another user's memory
                mt(("shared",), "s1", T("user u1", "likes", "tea"), CAROL, user=None),
                mt(("shared",), "s2", T("bob", "likes", "u10"), user=None),
                mt(("shared", "deep"), "s3", T("U1 SMITH", "is", "nice"), user=None),
            ]
        )
        return graph

    def _left(self, graph: GraphStore) -> list[tuple[Namespace, tuple[str, ...], tuple[str, ...]]]:
        return [(r.namespace, tuple(r.triple), r.memory_keys) for r in graph.triples(())]

    def test_erase_removes_the_users_namespaces_scope_and_mentions(
        self, tenants: GraphStore
    ) -> None:
        user = UserNamespaces("u1")
        before = self._left(tenants)
        planned = erase_user_graph(tenants, user, dry_run=True, names=["u1"])
        assert self._left(tenants) == before  # a dry run removes nothing
        done = erase_user_graph(tenants, user, names=["u1"])
        assert done == planned
        assert done.triples == sorted(
            [
                (*U1, *WORKS),
                (*U1, *KNOWS),
                ("users", "u1", "notes", *LOCATED),
                ("memories", "u1", "u1", "likes", "tea"),
                ("tenants", "t9", *CAPITAL),
                ("shared", "user u1", "likes", "tea"),
                ("shared", "deep", "u1 smith", "is", "nice"),
            ]
        )
        assert done.supports == sorted(
            [
                (*U1, "m1", *WORKS),
                (*U1, "m1", *KNOWS),
                ("users", "u1", "notes", "n1", *LOCATED),
                ("memories", "u1", "a1", "u1", "likes", "tea"),
                ("tenants", "t9", "x1", *CAPITAL),
                ("shared", "s1", "user u1", "likes", "tea"),
                ("shared", "deep", "s3", "u1 smith", "is", "nice"),
            ]
        )
        assert done.pending == []
        # Memories of shared namespaces that lost triples: reported, kept.
        assert done.mentioned == [
            (("shared",), "s1"),
            (("shared", "deep"), "s3"),
            (("tenants", "t9"), "x1"),
        ]
        assert self._left(tenants) == [
            (("memories", "u2"), ("u2", "met", "u1"), ("a1",)),  # u2's, whatever it names
            (("shared",), ("bob", "likes", "u10"), ("s2",)),  # u10 is not u1
            (("shared",), tuple(CAROL), ("s1",)),
            (("users", "u10", "mem"), tuple(WORKS), ("m1",)),
            (U2, tuple(KNOWS), ("m1",)),
            (U2, tuple(CAROL), ("m1",)),
        ]
        assert tenants.memory_triples(U1, ["m1"]) == {}
        assert tenants.memory_triples(("shared",), ["s1"]) == {"s1": (CAROL,)}
        assert tenants.neighbors(("users", "u1"), "alice", hops=2) == []
        assert tenants.memories_for((), ["tea"], hops=1) == []
        assert [n.entity for n in tenants.neighbors(("users",), "alice", hops=2)] == [
            "acme",
            "bob",
            "carol",
        ]
        assert erase_user_graph(tenants, user) == GraphErasure()  # idempotent

    def test_erase_then_write_the_user_again(self, tenants: GraphStore) -> None:
        erase_user_graph(tenants, UserNamespaces("u1"), names=["u1"])
        tenants.replace([mt(U1, "m1", WORKS), mt(("shared",), "s4", T("u1", "is", "back"))])
        assert tenants.triples(("users", "u1")) == [rec(U1, WORKS, "m1")]
        assert [n.entity for n in tenants.neighbors(("shared",), "u1")] == ["back"]

    def test_erase_by_rule_alone_and_into_a_receipt(self, tenants: GraphStore) -> None:
        only_notes = tenants.erase(lambda ns: ns[-1:] == ("notes",), dry_run=False)
        assert only_notes.triples == [("users", "u1", "notes", *LOCATED)]
        assert only_notes.mentioned == []
        everywhere = tenants.erase(lambda ns: False, user_id="u1", mentions=["u1"], dry_run=True)
        assert everywhere == GraphErasure()  # no `shared` rule: nothing outside `owns`
        rest = tenants.erase(
            lambda ns: False, user_id="u1", mentions=["  'U1' "], shared=lambda ns: True
        )
        assert ("tenants", "t9", *CAPITAL) in rest.triples
        assert (*U1, *WORKS) in rest.triples  # scope u:u1
        assert ("memories", "u1", "u1", "likes", "tea") in rest.triples  # mention
        receipt = rest.record(ErasureReceipt.for_user("u1"))
        assert receipt.counts == {
            "graph.triples": len(rest.triples),
            "graph.supports": len(rest.supports),
            "graph.pending": 0,
        }
        assert id_hash(*U1, "m1", *WORKS) in receipt.removed["graph.supports"]
        assert receipt.kept  # memories that lost triples are named as kept
        assert tenants.erase(
            lambda ns: False, user_id="nobody", mentions=["nobody"], shared=lambda ns: True
        ) == (GraphErasure())

    def test_erase_of_an_empty_graph(self, graph: GraphStore) -> None:
        assert erase_user_graph(graph, UserNamespaces("u1"), dry_run=True) == GraphErasure()
        assert erase_user_graph(graph, UserNamespaces("u1")).total == 0
