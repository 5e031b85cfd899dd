"""The embedded graph's `memories_for` on graphs with hub entities: exact, and bounded work.

A hub (a speaker named in most memories) reaches most of a user's graph in one hop.
The answer is the first `limit` hits in a fixed order, so the backend reads no more
than that order needs: no hop when the entities' own triples fill the limit, and
no hit past the limit, with or without a namespace filter. The answers are compared
with a plain-Python reading of the contract.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Namespace,
    Triple,
    TripleRecord,
    graph_scope,
)
from langgraph_tiered_memory.store.tiers import sqlite_graph
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile
from langgraph_tiered_memory.store.tiers.sqlite_graph import GraphTables, ns_key

P = "t"
NOTES = ("users", "u1", "notes")

Hit = tuple[int, str, Namespace, str, str, str, str, tuple[str, ...]]


def _flat(hits: Sequence[GraphHit]) -> list[Hit]:
    return [
        (h.hops, h.entity, h.namespace, h.key, *h.triple.triple, h.triple.memory_keys) for h in hits
    ]


def _reference(
    memories: Sequence[MemoryTriples],
    under: Namespace,
    entities: Sequence[str],
    hops: int,
    limit: int,
    keep: Callable[[Namespace], bool] | None = None,
) -> list[Hit]:
    """The contract of `memories_for`, read literally, over every stored triple."""
    support: dict[tuple[Namespace, Triple], set[str]] = {}
    scope: dict[Namespace, str] = {}
    for m in memories:
        scope[m.namespace] = graph_scope(m.namespace, m.user_id)
        for t in m.triples:
            support.setdefault((m.namespace, t), set()).add(m.key)
    stored = [(ns, t) for ns, t in support if ns[: len(under)] == under]
    out = []
    for pos, e in enumerate(dict.fromkeys(entities)):
        own = [(ns, t) for ns, t in stored if e in (t.subject, t.object)]
        best = dict.fromkeys(own, 0)
        if hops:
            ends = {(scope[ns], t.object if t.subject == e else t.subject) for ns, t in own}
            ends = {(sc, x) for sc, x in ends if x != e}
            for ns, t in stored:
                if (scope[ns], t.subject) in ends or (scope[ns], t.object) in ends:
                    best.setdefault((ns, t), 1)
        for (ns, t), h in best.items():
            keys = tuple(sorted(support[(ns, t)]))
            for key in keys:
                out.append(((h, pos, ns_key(ns), key, *t), (h, e, ns, key, *t, keys)))
    out.sort(key=lambda x: x[0])
    hits = [hit for _, hit in out if keep is None or keep(hit[2])]
    return hits[:limit]


def _random_graph(seed: int) -> list[MemoryTriples]:
    """Two users and a shared namespace; "hub" (a speaker) is in most memories."""
    rng = random.Random(seed)
    places, people = [f"place{i}" for i in range(5)], [f"p{i}" for i in range(25)]
    spaces = [(("users", "u1", "a"), "u1"), (("users", "u1", "b"), "u1")]
    spaces += [(("users", "u2", "a"), "u2"), (("kb",), None)]
    out = []
    for i in range(300):
        ns, user = spaces[i % len(spaces)]
        who, other = rng.choice(people), rng.choice(people)
        facts = [
            Triple("hub", "met", who),
            Triple(who, "lives_in", rng.choice(places)),
            Triple(who, "knows", other),
            Triple("hub", "likes", rng.choice(places)),
        ]
        picked = [facts[0]] if rng.random() < 0.6 else []
        picked += rng.sample(facts[1:], rng.randint(1, 2))
        out.append(MemoryTriples(ns, f"m{i:03d}", tuple(picked), user))
    return out


def _tables(memories: Sequence[MemoryTriples]) -> tuple[SqliteFile, GraphTables]:
    db = SqliteFile(":memory:")
    tables = GraphTables(db)
    by_ns: dict[Namespace, list[MemoryTriples]] = {}
    for m in memories:
        by_ns.setdefault(m.namespace, []).append(m)
    for ns, group in by_ns.items():
        tables.apply(P, namespace_id(ns), group)
    return db, tables


def _steps(db: SqliteFile, run: Callable[[], Any]) -> tuple[int, Any]:
    """SQLite virtual-machine steps (in thousands) that `run` costs, and its result."""
    ticks = [0]

    def tick() -> int:
        ticks[0] += 1
        return 0

    db.conn.set_progress_handler(tick, 1000)
    try:
        result = run()
    finally:
        db.conn.set_progress_handler(None, 0)
    return ticks[0], result


def test_no_hop_is_walked_when_the_entities_own_triples_fill_the_limit() -> None:
    # "anna" names 30 triples; one of them leads to a hub with 3,000 triples.
    memories = [
        MemoryTriples(NOTES, f"a{i:02d}", (Triple("anna", "likes", f"t{i}"),), "u1")
        for i in range(30)
    ]
    memories.append(MemoryTriples(NOTES, "a99", (Triple("anna", "knows", "carol"),), "u1"))
    memories += [
        MemoryTriples(NOTES, f"c{i:04d}", (Triple("carol", "met", f"q{i}"),), "u1")
        for i in range(3000)
    ]
    db, tables = _tables(memories)
    own, hits0 = _steps(db, lambda: tables.memories(P, ("users",), ["anna"], 0, 20))
    walk, hits1 = _steps(db, lambda: tables.memories(P, ("users",), ["anna"], 1, 20))
    assert _flat(hits1) == _flat(hits0) == _reference(memories, ("users",), ["anna"], 1, 20)
    assert walk <= own + 2  # the hub's 3,000 triples were not read
    # A limit the own triples do not fill walks the hop, exactly as the contract says.
    more = tables.memories(P, ("users",), ["anna"], 1, 100)
    assert _flat(more) == _reference(memories, ("users",), ["anna"], 1, 100)
    assert [h.hops for h in more].count(1) == 100 - 31


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_answers_follow_the_contract_on_a_graph_with_hubs(tmp_path: Path, seed: int) -> None:
    memories = _random_graph(seed)
    graph = SqliteGraph.open(tmp_path, prefix=P)
    try:
        graph.replace(memories)
        filters: list[Callable[[Namespace], bool] | None] = [
            None,
            lambda ns: True,
            lambda ns: ns[-1] != "a",  # rejects the first namespaces: asks again
        ]
        for under in [("users",), ("users", "u1"), ("kb",), ()]:
            for entities in (["hub"], ["p3", "hub", "place1"], ["place2", "p7"], ["nobody"]):
                for hops in (0, 1):
                    for limit in (1, 7, 60, 5000):
                        for keep in filters:
                            got = graph.memories_for(
                                under, entities, hops=hops, limit=limit, namespace_filter=keep
                            )
                            want = _reference(memories, under, entities, hops, limit, keep)
                            assert _flat(got) == want, (under, entities, hops, limit)
    finally:
        graph.close()


def test_a_namespace_filter_reads_no_hit_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hub named by 500 different triples, each in its own memory.
    memories = [
        MemoryTriples(NOTES, f"m{i:03d}", (Triple("carol", "met", f"q{i:03d}"),), "u1")
        for i in range(500)
    ]
    graph = SqliteGraph.open(tmp_path, prefix=P)
    try:
        graph.replace(memories)
        made: list[Any] = []

        def record(*parts: Any) -> TripleRecord:
            made.append(parts)
            return TripleRecord(*parts)

        monkeypatch.setattr(sqlite_graph, "TripleRecord", record)
        seen: list[Namespace] = []

        def keep(ns: Namespace) -> bool:
            seen.append(ns)
            return True

        hits = graph.memories_for(
            ("users", "u1"), ["carol"], hops=1, namespace_filter=keep, limit=10
        )
        assert _flat(hits) == _reference(memories, ("users", "u1"), ["carol"], 1, 10)
        assert len(made) <= 10  # not one record per triple the hub names
        assert seen == [NOTES]
    finally:
        graph.close()
