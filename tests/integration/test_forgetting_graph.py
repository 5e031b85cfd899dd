"""The forgetting graph and the store passes under it, on a real Chroma + SQLite index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from blockbuster import BlockBuster, blockbuster_ctx
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory import (
    AsyncTieredMemoryStore,
    ConfigurationError,
    TieredMemoryStore,
    create_forgetting_graph,
)
from langgraph_tiered_memory.store.maintenance import consolidate, forget, garbage_collect
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

DAY = 86_400.0


def _fill(store: TieredMemoryStore, clock: Clock) -> None:
    """Two users' memories: some forgettable, one pinned, two near-duplicates."""
    store.put(("users", "u1"), "typo", {"content": "said teh instead of the", "importance": 0.1})
    store.put(("users", "u1"), "old", {"content": "parked on level 3 in March"})
    store.put(("users", "u2"), "pin", {"content": "passport number", "importance": 0, "pinned": 1})
    store.put(("users", "u2"), "pin2", {"content": "visa number", "importance": 0, "pinned": True})
    clock.now += 100 * DAY
    store.put(("users", "u1"), "tea", {"content": "Ana likes green tea.", "importance": 0.6})
    store.put(("users", "u1"), "tea2", {"content": "Ana likes green tea.", "importance": 0.9})
    store.put(("users", "u2"), "car", {"content": "Ben drives a red car.", "importance": 0.8})


def test_dry_run_reports_and_changes_nothing(mstore: TieredMemoryStore, clock: Clock) -> None:
    _fill(mstore, clock)
    graph = create_forgetting_graph(clock=lambda: clock.now + DAY)
    out = graph.compile(store=mstore).invoke({"dry_run": True})
    assert set(out) == {"report"}  # the report is the output
    report = out["report"]
    assert report["dry_run"] is True and report["scanned"] == 7
    assert {d["id"] for d in report["details"]} == {"typo", "old", "pin"}  # "pin" is not True
    assert report["forgotten_count"] == 3 and report["consolidated"] == []
    assert report["now"] == clock.now + DAY
    for key in ("typo", "old", "tea", "tea2"):
        assert mstore.get_memory(("users", "u1"), key) is not None


def test_real_run_consolidates_then_forgets(mstore: TieredMemoryStore, clock: Clock) -> None:
    _fill(mstore, clock)
    graph = create_forgetting_graph(namespace=("users",), clock=lambda: clock.now + DAY)
    report = graph.compile(store=mstore).invoke({})["report"]
    assert report["dry_run"] is False
    assert {d["id"] for d in report["details"]} == {"typo", "old", "pin"}
    (merged,) = report["consolidated"]
    assert sorted(merged["sources"]) == ["tea", "tea2"] and merged["importance"] == 0.9
    assert mstore.get(("users", "u1"), "typo") is None
    assert mstore.get(("users", "u1"), "tea") is None  # merged away
    entry = mstore.get_memory(("users", "u1"), merged["key"])
    assert entry is not None and entry.content == "Ana likes green tea."
    assert sorted(entry.metadata["consolidated_from"]) == ["tea", "tea2"]
    assert mstore.get(("users", "u2"), "pin2") is not None  # pinned
    assert mstore.get(("users", "u2"), "car") is not None
    again = graph.compile(store=mstore).invoke({})["report"]
    assert again["forgotten_count"] == 0 and again["consolidated"] == []


def test_consolidation_leaves_memories_about_to_be_forgotten_alone(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(("u",), "a", {"content": "invoice XK-1 was paid", "importance": 0.1})
    mstore.put(("u",), "b", {"content": "invoice XK-1 was paid", "importance": 0.1})
    report = create_forgetting_graph(clock=clock).compile(store=mstore).invoke({})["report"]
    assert report["consolidated"] == []  # both were forgotten, not merged into a survivor
    assert {d["id"] for d in report["details"]} == {"a", "b"}
    assert mstore.search(("u",)) == []


def test_delete_judges_again_so_a_memory_used_since_the_scan_stays(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(("u",), "idle", {"content": "the wifi password is on the fridge"})
    mstore.put(("u",), "used", {"content": "the door code is 4711"})
    clock.now += 100 * DAY
    report = garbage_collect(mstore, ("u",), dry_run=True)
    assert {d["id"] for d in report["details"]} == {"idle", "used"}
    assert mstore.get(("u",), "used") is not None  # used after the scan
    gone = forget(mstore, ("u",), ["idle", "used", "missing"])
    assert [d["id"] for d in gone] == ["idle"]
    assert mstore.get(("u",), "used") is not None and mstore.get(("u",), "idle") is None


def test_themes_merge_what_is_about_them(mstore: TieredMemoryStore, clock: Clock) -> None:
    mstore.put(("u",), "t1", {"content": "green tea in the morning", "importance": 0.7})
    mstore.put(("u",), "t2", {"content": "green tea after lunch", "importance": 0.5})
    mstore.put(("u",), "x", {"content": "invoice XK-9 was paid on Monday"})
    plan = consolidate(mstore, ("u",), query="green tea", min_similarity=0.6, dry_run=True)
    assert [sorted(r["sources"]) for r in plan] == [["t1", "t2"]]
    assert consolidate(mstore, ("u",), query="green tea", min_similarity=0.99) == []
    graph = create_forgetting_graph(consolidate=False, min_similarity=0.6, clock=clock)
    report = graph.compile(store=mstore).invoke({"themes": ["green tea"]})["report"]
    (merged,) = report["consolidated"]
    assert sorted(merged["sources"]) == ["t1", "t2"]
    content = mstore.get_memory(("u",), merged["key"]).content  # type: ignore[union-attr]
    assert "morning" in content and "lunch" in content
    assert mstore.get(("u",), "x") is not None
    with pytest.raises(ValueError, match="theme"):
        consolidate(mstore, ("u",), query="  ")


def test_a_model_merges_and_originals_can_be_downweighted(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(("u",), "a", {"content": "Ben likes jazz.", "importance": 0.8})
    mstore.put(("u",), "b", {"content": "Ben likes jazz.", "importance": 0.4})
    model = FakeMessagesListChatModel(responses=[AIMessage(content="Ben loves jazz.")])
    graph = create_forgetting_graph(model, originals="downweight", clock=clock)
    (merged,) = graph.compile(store=mstore).invoke({})["report"]["consolidated"]
    assert merged["content"] == "Ben loves jazz."
    kept = mstore.get_memory(("u",), "a")
    assert kept is not None and kept.importance == 0.4
    assert kept.metadata["consolidated_into"] == merged["key"]


def test_the_graph_needs_a_tiered_store(mstore: TieredMemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="needs a store"):
        create_forgetting_graph().compile().invoke({})
    with pytest.raises(ConfigurationError, match="TieredMemoryStore"):
        create_forgetting_graph().compile(store=InMemoryStore()).invoke({})
    with pytest.raises(ConfigurationError, match="forgetting policy"):
        create_forgetting_graph(policy={"half_life": 3})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ConfigurationError, match="originals"):
        create_forgetting_graph(originals="archive")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="page_size"):
        garbage_collect(mstore, page_size=0)


def test_progress_counts_every_scanned_memory(mstore: TieredMemoryStore, clock: Clock) -> None:
    for i in range(5):
        mstore.put(("p", str(i % 2)), f"k{i}", {"content": f"note {i}"})
    seen: list[int] = []
    graph = create_forgetting_graph(dry_run=True, page_size=2, progress=seen.append)
    report = graph.compile(store=mstore).invoke({})["report"]
    assert sum(seen) == report["scanned"] == 5 and max(seen) <= 2


async def test_async_store_runs_the_graph_without_blocking(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    clock = Clock()
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma-async"),
        key_prefix=key_prefix,
        tiers={"default": "long"},
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    ) as store:
        await store.aput(("u",), "low", {"content": "said hi", "importance": 0.05})
        await store.aput(("u",), "a", {"content": "Cara swims on Fridays.", "importance": 0.7})
        await store.aput(("u",), "b", {"content": "Cara swims on Fridays.", "importance": 0.6})
        graph = create_forgetting_graph(clock=clock).compile(store=store)
        with blockbuster_ctx() as bb:
            assert isinstance(bb, BlockBuster)
            report = (await graph.ainvoke({}))["report"]
        assert [d["id"] for d in report["details"]] == ["low"]
        assert [sorted(m["sources"]) for m in report["consolidated"]] == [["a", "b"]]
        assert await store.aget(("u",), "low") is None
        with pytest.raises(ConfigurationError, match="ainvoke"):
            await __import__("asyncio").to_thread(graph.invoke, {})


def test_a_crash_after_the_merge_loses_nothing(
    mstore: TieredMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.base import PutOp

    mstore.put(("u",), "a", {"content": "Eli is allergic to nuts.", "importance": 0.9})
    mstore.put(("u",), "b", {"content": "Eli is allergic to nuts.", "importance": 0.3})
    real = mstore._run_batch

    def crash_on_delete(ops: Any, **kwargs: Any) -> Any:
        ops = list(ops)
        if any(isinstance(op, PutOp) and op.value is None for op in ops):
            raise RuntimeError("power cut")
        return real(ops, **kwargs)

    monkeypatch.setattr(mstore, "_run_batch", crash_on_delete)
    with pytest.raises(RuntimeError, match="power cut"):
        consolidate(mstore, ("u",))
    monkeypatch.undo()
    keys = {item.key for item in mstore.search(("u",))}
    assert {"a", "b"} <= keys and len(keys) == 3  # the merged memory and both sources
    (record,) = consolidate(mstore, ("u",))  # a rerun finishes the job
    assert {item.key for item in mstore.search(("u",))} == {record["key"]}
    merged = mstore.get_memory(("u",), record["key"])
    assert merged is not None and merged.importance == 0.9
    assert merged.metadata["consolidated_from"] == ["a", "b"]  # the originals, not the copy
    assert merged.metadata["source_count"] == 2


def test_consolidation_limit_keeps_the_newest_memories(mstore: TieredMemoryStore) -> None:
    mstore.put(("u",), "a", {"content": "Finn owns a kayak."})
    mstore.put(("u",), "b", {"content": "Finn owns a kayak."})
    mstore.put(("u",), "c", {"content": "Gus grows tomatoes."})
    mstore.put(("u",), "d", {"content": "Gus grows tomatoes."})
    plan = consolidate(mstore, ("u",), limit=2, dry_run=True)
    assert [r["sources"] for r in plan] == [["c", "d"]]
    with pytest.raises(ValueError, match="limit"):
        consolidate(mstore, ("u",), limit=1)


def test_max_memories_keeps_the_least_decayed_of_each_namespace(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    for i in range(5):  # k0 is the oldest and most decayed, k4 the freshest
        mstore.put(("cap", "a"), f"k{i}", {"content": f"fact number {i}", "importance": 0.9})
        clock.now += 10 * DAY
    mstore.put(("cap", "b"), "only", {"content": "a lone fact", "importance": 0.9})
    mstore.put(("cap", "a"), "pin", {"content": "kept", "importance": 0.9, "pinned": True})
    clock.now -= 60 * DAY  # "pin" is now the oldest memory...
    mstore.put(("cap", "a"), "old", {"content": "the oldest", "importance": 0.9})
    clock.now += 60 * DAY
    policy: Any = {"max_memories": 3}
    report = garbage_collect(mstore, ("cap",), policy=policy)
    reasons = {d["id"]: d["reason"] for d in report["details"]}
    assert set(reasons) == {"old", "k0", "k1", "k2"}  # "pin" is pinned: never forgotten
    assert all(r.startswith("beyond max_memories 3") for r in reasons.values())
    mstore.get(("cap", "a"), "k0")  # used since the scan: now among the freshest
    gone = forget(mstore, ("cap", "a"), list(reasons), policy=policy)
    assert {d["id"] for d in gone} == {"old", "k1", "k2", "k3"} & set(reasons)

    def left() -> set[str]:  # get_memory is not an access, so it changes no ranking
        keys = ["old", "pin", *(f"k{i}" for i in range(5))]
        return {k for k in keys if mstore.get_memory(("cap", "a"), k) is not None}

    assert left() == {"k0", "k3", "k4", "pin"}
    graph = create_forgetting_graph(policy=policy, consolidate=False, clock=clock)
    again = graph.compile(store=mstore).invoke({})["report"]
    assert [d["id"] for d in again["details"]] == ["k3"]  # the most decayed of the four
    assert left() == {"k0", "k4", "pin"}
    assert mstore.get_memory(("cap", "b"), "only") is not None
    with pytest.raises(ConfigurationError, match="max_memories"):
        garbage_collect(mstore, policy={"max_memories": 0})


def test_a_forgotten_memory_leaves_the_keyword_index_entirely(mstore: TieredMemoryStore) -> None:
    ns = ("kw",)
    mstore.put(ns, "a", {"content": "Hana adopted a greyhound."})
    mstore.put(ns, "b", {"content": "The clinic code is zebracactus."})
    mstore.put(ns, "c", {"content": "Ivo bought a kayak."})

    def keyword(query: str) -> list[str]:
        hits = mstore.search(ns, query=query, filter={"$retrieval": "keyword"})
        return [h.key for h in hits]

    def context_vectors(key: str) -> int:  # white-box: the extra vectors of `key`
        col = mstore._long()._collection(ns, create=False)
        return len(col.get(where={"_k": key}, include=[])["ids"])

    assert keyword("zebracactus") == ["b", "c"]  # c's context key holds b's text
    assert context_vectors("c") == 1
    mstore.delete(ns, "b")
    assert keyword("zebracactus") == []  # gone from c's context too
    assert keyword("greyhound") == ["a", "c"]  # c now follows a
    assert context_vectors("c") == 0  # the vector embedded with b's text is gone
    hits = mstore.search(ns, query="Ivo bought a kayak.", filter={"$retrieval": "semantic"})
    assert hits[0].key == "c"  # c is still found by its own vector
    mstore.put(ns, "c", {"content": "Ivo bought a kayak."})  # a rewrite keys it again
    assert context_vectors("c") == 1 and keyword("greyhound") == ["a", "c"]
    mstore.delete(ns, "c")
    assert context_vectors("c") == 0 and mstore.get(ns, "c") is None
