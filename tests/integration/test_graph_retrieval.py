"""The knowledge-graph retrieval channel through a real store (graph=True, rule extractor)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.graph import graph_triples
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

U1 = ("users", "u1", "notes")
U2 = ("users", "u2", "notes")
KB = ("kb",)
QUESTION = "Which city is Anna's friend based in?"
# Fillers share the question's words, so dense and keyword retrieval prefer them.
FILLERS = [
    "The city council based its budget on new taxes.",
    "A friend said the city library is based downtown.",
    "The city marathon is based on a loop around the park.",
    "Our friend group is based on a shared love of chess.",
    "City buses are based at the north depot.",
    "The friend finder app is based on city districts.",
    "Every city festival is based on a local legend.",
    "A friend of the mayor based the city plan on old maps.",
]


def _graph_store(
    make_store: Callable[..., TieredMemoryStore], clock: Clock, **scoring: Any
) -> TieredMemoryStore:
    return make_store(
        "long",
        scoring={"graph_weight": 3.0, "candidates": 5, **scoring},
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        graph=True,
    )


def _fill(store: TieredMemoryStore, ns: tuple[str, ...], clock: Clock) -> None:
    store.put(ns, "met", {"content": "Anna met Tomas at the conference.", "topic": "work"})
    clock.now += 60
    for i, text in enumerate(FILLERS):
        store.put(ns, f"filler{i}", {"content": text, "topic": "work"})
        clock.now += 60
    # The answer shares no word with the question: only the graph links it to Anna
    # (anna -met-> tomas -lives_in-> lisbon).
    store.put(ns, "home", {"content": "Tomas lives in Lisbon.", "topic": "family"})
    clock.now += 60


def _keys(hits: list[Any]) -> list[str]:
    return [h.entry.id if hasattr(h, "entry") else h.key for h in hits]


def test_a_two_hop_answer_sharing_no_word_with_the_query_is_found_by_the_graph(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = _graph_store(make_store, clock)
    _fill(store, U1, clock)
    assert graph_triples(store, U1, subject="tomas")  # the extractor saw the fact
    hits = store.search_memories(U1, QUESTION, limit=5)
    found = {h.entry.id: h.breakdown for h in hits}
    assert "home" in found
    home = found["home"]
    assert home.graph_rank is not None
    assert home.semantic_rank is None and home.keyword_rank is None
    assert found["met"].graph_rank is not None  # reached directly from "anna"
    assert all(0.0 <= h.breakdown.relevance <= 1.0 for h in hits)
    # Without the channel (weight 0) the answer is not a candidate at all.
    store.scoring = dataclasses.replace(store.scoring, graph_weight=0.0)
    off = store.search_memories(U1, QUESTION, limit=5)
    assert "home" not in _keys(off)
    assert all(h.breakdown.graph_rank is None for h in off)
    # Plain `search` (LangGraph's API) ranks the same way.
    store.scoring = dataclasses.replace(store.scoring, graph_weight=3.0)
    assert "home" in _keys(store.search(U1, query=QUESTION, limit=5))


def test_weight_zero_ranks_bit_for_bit_like_a_store_without_a_graph(
    make_store: Callable[..., TieredMemoryStore], clock: Clock, tmp_path: Any
) -> None:
    graphed = _graph_store(make_store, clock, graph_weight=0.0)
    plain = make_store(
        "long",
        scoring={"candidates": 5},
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        chroma_path=str(tmp_path / "plain"),
    )
    start = clock.now
    _fill(graphed, U1, clock)
    clock.now = start
    _fill(plain, U1, clock)
    opts = {"$count_access": False}
    a = graphed.search_memories(U1, QUESTION, limit=10, filter=opts)
    b = plain.search_memories(U1, QUESTION, limit=10, filter=opts)
    assert [(h.entry.id, h.score, h.breakdown) for h in a] == [
        (h.entry.id, h.score, h.breakdown) for h in b
    ]


def test_a_user_scoped_search_never_gets_another_users_memory_through_the_graph(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = _graph_store(make_store, clock)
    _fill(store, U1, clock)
    # u2 knows the same people, and where Tomas lives for u2; a shared namespace holds
    # an experience (private to nobody, so hidden from users) and a fact (shared).
    store.put(U2, "met2", {"content": "Anna met Tomas at the conference."})
    store.put(U2, "home2", {"content": "Tomas lives in Porto."})
    store.put(KB, "exp", {"content": "Tomas lives in Madrid.", "memory_type": "experience"})
    store.put(KB, "fact", {"content": "Tomas lives in Oslo.", "memory_type": "fact"})
    clock.now += 60
    for mode in ("hybrid", "contextual"):
        hits = store.search_memories(("users",), QUESTION, limit=50, user_id="u1", retrieval=mode)
        where = {(h.entry.namespace, h.entry.id) for h in hits}
        home = next(h for h in hits if (h.entry.namespace, h.entry.id) == (U1, "home"))
        assert home.breakdown.graph_rank is not None  # the graph channel ran
        assert not any(ns[:2] == ("users", "u2") for ns, _ in where)
        assert (KB, "exp") not in where
        searched = store.search(("users",), query=QUESTION, limit=50, filter={"$user": "u1"})
        assert not any(it.namespace[:2] == ("users", "u2") for it in searched)
    # Over the whole store: the shared fact is visible, u2 and the experience are not.
    shared = store.search_memories((), QUESTION, limit=50, user_id="u1")
    where = {(h.entry.namespace, h.entry.id) for h in shared}
    assert (KB, "fact") in where and (KB, "exp") not in where
    assert all(h.entry.namespace[:2] != ("users", "u2") for h in shared)
    # u2's own search reaches u2's answer, never u1's.
    theirs = store.search_memories(("users",), QUESTION, limit=50, user_id="u2")
    where2 = {(h.entry.namespace, h.entry.id) for h in theirs}
    assert (U2, "home2") in where2 and not any(ns == U1 for ns, _ in where2)


def test_value_filters_apply_to_memories_the_graph_found(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = _graph_store(make_store, clock)
    _fill(store, U1, clock)
    work = store.search_memories(U1, QUESTION, limit=20, filter={"topic": "work"})
    assert "home" not in _keys(work) and "met" in _keys(work)
    family = store.search_memories(U1, QUESTION, limit=20, filter={"topic": "family"})
    assert _keys(family) == ["home"]
    assert family[0].breakdown.graph_rank == 1
    # A deleted (or expired) memory is not read back through the graph.
    store.delete(U1, "home")
    assert "home" not in _keys(store.search_memories(U1, QUESTION, limit=20))


@pytest.mark.parametrize("mode", ["semantic", "keyword"])
def test_dense_only_and_keyword_only_searches_do_not_use_the_graph(
    make_store: Callable[..., TieredMemoryStore], clock: Clock, mode: str
) -> None:
    store = _graph_store(make_store, clock)
    _fill(store, U1, clock)
    hits = store.search_memories(U1, QUESTION, limit=20, retrieval=mode)  # type: ignore[arg-type]
    assert hits and all(h.breakdown.graph_rank is None for h in hits)


def test_graph_hops_zero_follows_only_the_query_entities_own_triples(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = _graph_store(make_store, clock, graph_hops=0)
    _fill(store, U1, clock)
    found = {h.entry.id: h.breakdown for h in store.search_memories(U1, QUESTION, limit=5)}
    assert found["met"].graph_rank == 1
    assert "home" not in found


async def test_the_async_store_finds_the_two_hop_answer_too(
    redis_url: str, key_prefix: str, tmp_path: Any, clock: Clock
) -> None:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        scoring={"graph_weight": 3.0, "candidates": 5},
        clock=clock,
        graph=True,
    ) as store:
        await store.aput(U1, "met", {"content": "Anna met Tomas at the conference."})
        for i, text in enumerate(FILLERS):
            await store.aput(U1, f"filler{i}", {"content": text})
        await store.aput(U1, "home", {"content": "Tomas lives in Lisbon."})
        hits = await store.asearch_memories(U1, QUESTION, limit=5)
        found = {h.entry.id: h.breakdown for h in hits}
        assert "home" in found and found["home"].graph_rank is not None
