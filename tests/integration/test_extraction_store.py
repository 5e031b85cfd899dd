"""Extraction on the real tiered stores: memory and similarity scoring, both tiers, async."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from blockbuster import BlockBuster, blockbuster_ctx

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.extraction import aextract_memories, extract_memories
from tests.conftest import DIMS
from tests.fake_models import RecordedChatModel
from tests.fakes import Clock, HashingEmbeddings
from tests.memory_tools_support import async_store

NS = ("memories", "u1")
INDEX = {"fields": ["content"]}


def _memories(*items: tuple[str, str, float]) -> dict[str, Any]:
    return {"memories": [{"content": c, "memory_type": t, "importance": i} for c, t, i in items]}


def _contents(store: Any, ns: tuple[str, ...] = NS) -> list[str]:
    return sorted(i.value["content"] for i in store.search(ns, limit=50) if i.namespace == ns)


@pytest.fixture(params=["indexed", "no-index"])
def memory_store(
    request: pytest.FixtureRequest, make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> TieredMemoryStore:
    """A memory-mode long-term store (the default scoring), with and without an index."""
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), **INDEX}
    return make_store(
        "long", scoring=None, clock=clock, index=index if request.param == "indexed" else None
    )


def test_heuristic_on_memory_mode_store_keeps_one_memory_per_fact(
    memory_store: TieredMemoryStore, clock: Clock
) -> None:
    berlin = extract_memories(memory_store, NS, "I live in Berlin. I like green tea.").added
    assert len(berlin) == 2
    clock.now += 3600
    again = extract_memories(memory_store, NS, "i live in berlin! I really like green tea")
    assert again.added == again.updated == again.deleted == []
    assert sorted(again.unchanged) == sorted(berlin)  # same text; same slot and value

    code = extract_memories(memory_store, NS, "Remember that the gate code is 4512").added
    clock.now += 3600
    # Cosine 0.93 with the test embeddings; 0.86 as normalised text (no index).
    garden = extract_memories(
        memory_store, NS, "Remember that the garden gate code is 4512", similarity_threshold=0.85
    )
    assert garden.updated == code and garden.added == []
    entry = memory_store.get_memory(NS, code[0])
    assert entry is not None and entry.content == "The garden gate code is 4512"
    assert entry.importance == 0.8 and entry.metadata["source"] == "extraction"
    assert entry.created_at.timestamp() == clock.now - 3600  # the key (and its stats) kept
    assert entry.metadata["replaced"][0]["action"] == "UPDATE"
    when = datetime.fromtimestamp(clock.now, tz=timezone.utc).isoformat()
    assert entry.metadata["replaced"][0]["replaced_at"] == when  # the store's clock

    moved = extract_memories(memory_store, NS, "I moved to Lisbon")
    assert len(moved.deleted) == 1 and moved.deleted[0] in berlin
    assert _contents(memory_store) == [
        "I like green tea",
        "I moved to Lisbon",
        "The garden gate code is 4512",
    ]
    assert memory_store.get_memory(NS, moved.added[0]).memory_type == "fact"  # type: ignore[union-attr]


def test_model_path_on_similarity_store_both_tiers(
    make_store: Callable[..., TieredMemoryStore], tier: str
) -> None:
    ns = ("short_term", "u1") if tier == "short" else NS
    store = make_store(tier, index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), **INDEX})
    store.put((ns[0], "u2"), "other", {"content": "The user lives in Paris"})
    model = RecordedChatModel(structured=[_memories(("The user lives in Berlin", "fact", 0.6))])
    berlin = extract_memories(store, ns, "I live in Berlin", model=model).added[0]
    model.structured.extend(
        [
            _memories(("User lives in Berlin, Germany", "fact", 0.6)),
            {"action": "NOOP", "memory_id": berlin},
            _memories(("The user moved to Lisbon", "fact", 0.7)),
            {"action": "UPDATE", "memory_id": "other", "content": "The user lives in Lisbon"},
        ]
    )
    twice = extract_memories(store, ns, "I live in Berlin, Germany", model=model)
    assert twice.unchanged == [berlin] and _contents(store, ns) == ["The user lives in Berlin"]
    moved = extract_memories(store, ns, "I moved to Lisbon", model=model)
    assert [d.memory_id for d in moved.rejected] == ["other"]  # another user's memory
    assert moved.deleted == [berlin]  # the heuristic decided: same residence slot
    assert _contents(store, ns) == ["The user moved to Lisbon"]
    other = store.get((ns[0], "u2"), "other")
    assert other is not None and other.value == {"content": "The user lives in Paris"}


def test_store_with_contextual_retrieval_needs_no_user_for_extraction(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store(
        "long",
        scoring={"mode": "memory", "retrieval": "contextual"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), **INDEX},
    )
    ns = ("users", "u1", "memories")
    berlin = extract_memories(store, ns, "I live in Berlin").added
    moved = extract_memories(store, ns, "I moved to Lisbon")
    assert moved.deleted == berlin and len(moved.added) == 1


@pytest.fixture
async def astore(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> AsyncIterator[AsyncTieredMemoryStore]:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), **INDEX}
    async with async_store(redis_url, key_prefix, tmp_path, "long", index=index, clock=clock) as s:
        yield s


async def test_async_extraction_never_blocks_the_event_loop(
    astore: AsyncTieredMemoryStore,
) -> None:
    model = RecordedChatModel(
        structured=[_memories(("The user's favourite colour is green", "preference", 0.5))]
    )
    bb: BlockBuster
    with blockbuster_ctx() as bb:
        assert bb is not None
        first = await aextract_memories(astore, NS, "My favourite colour is green", model=model)
        model.structured.extend(
            [
                _memories(("The user's favourite colour is blue", "preference", 0.6)),
                {"action": "DELETE", "memory_id": first.added[0]},
            ]
        )
        second = await aextract_memories(astore, NS, "My favourite colour is blue", model=model)
        third = await aextract_memories(astore, NS, "my favourite colour is BLUE")
    assert second.deleted == first.added and len(second.added) == 1
    assert third.unchanged == second.added
    items = await astore.asearch(NS, limit=10)
    assert [i.value["content"] for i in items] == ["The user's favourite colour is blue"]
