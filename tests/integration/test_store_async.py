"""The async store: same behaviour, batched concurrent calls, no blocking of the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from blockbuster import BlockBuster, BlockingError, blockbuster_ctx

from langgraph_tiered_memory import AsyncTieredMemoryStore
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings


@pytest.fixture
async def astore(
    redis_url: str, key_prefix: str, tmp_path: Path, tier: str, clock: Clock
) -> AsyncIterator[AsyncTieredMemoryStore]:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        tiers={"default": tier},  # type: ignore[typeddict-item]
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
        clock=clock,
    ) as store:
        yield store


@pytest.fixture
def blockbuster() -> Iterator[BlockBuster]:
    """Fail on any blocking call made in the event loop, as `langgraph dev` does."""
    with blockbuster_ctx() as bb:
        yield bb


async def test_async_roundtrip_search_and_namespaces(astore: AsyncTieredMemoryStore) -> None:
    await astore.aput(("users", "u1"), "a", {"text": "green tea", "n": 1})
    await astore.aput(("users", "u2"), "b", {"text": "black coffee", "n": 2})
    item = await astore.aget(("users", "u1"), "a")
    assert item is not None and item.value == {"text": "green tea", "n": 1}
    hits = await astore.asearch(("users",), query="tea")
    assert hits[0].key == "a" and hits[0].score is not None
    assert [r.key for r in await astore.asearch(("users",), filter={"n": {"$gt": 1}})] == ["b"]
    assert await astore.alist_namespaces(prefix=("users",)) == [("users", "u1"), ("users", "u2")]
    await astore.adelete(("users", "u1"), "a")
    assert await astore.aget(("users", "u1"), "a") is None


async def test_concurrent_calls_are_batched_and_answered_in_order(
    astore: AsyncTieredMemoryStore,
) -> None:
    docs = {f"k{i}": {"text": f"document {i}", "i": i} for i in range(40)}
    await asyncio.gather(*(astore.aput(("c",), k, v) for k, v in docs.items()))
    await asyncio.gather(*(astore.adelete(("c",), k) for k in list(docs)[:10]))
    got = await asyncio.gather(*(astore.aget(("c",), k) for k in docs))
    for (k, v), item in zip(docs.items(), got, strict=True):
        if int(k[1:]) < 10:
            assert item is None
        else:
            assert item is not None and item.value == v
    searches = await asyncio.gather(
        *(astore.asearch(("c",), filter={"i": {"$gte": n}}, limit=100) for n in (0, 20, 35))
    )
    assert [len(s) for s in searches] == [30, 20, 5]


async def test_async_store_never_blocks_the_event_loop(
    astore: AsyncTieredMemoryStore, blockbuster: BlockBuster, clock: Clock
) -> None:
    await astore.aput(("b", "x"), "k", {"text": "hello"}, ttl=5)
    await astore.aput(("b", "y"), "gone", {"text": "hello there"}, ttl=1)
    assert (await astore.aget(("b", "x"), "k")) is not None
    clock.now += 120  # "gone" has expired, "k" has 3 of its 5 minutes left
    assert [r.key for r in await astore.asearch(("b",), query="hello")] == ["k"]
    assert await astore.asweep_ttl() == 1  # "gone", expired but not yet swept
    assert await astore.asweep_ttl() == 0
    assert await astore.alist_namespaces() == [("b", "x")]
    await astore.adelete(("b", "x"), "k")
    assert await astore.alist_namespaces() == []


def test_blockbuster_catches_a_blocking_store() -> None:
    """The guard above is real: the sync store's batch called in the loop is caught."""
    import time

    async def blocking() -> None:
        time.sleep(0.01)

    with blockbuster_ctx(), pytest.raises(BlockingError, match="Blocking call"):
        asyncio.run(blocking())


async def test_sync_api_of_async_store_from_a_worker_thread(
    astore: AsyncTieredMemoryStore,
) -> None:
    def work() -> object:
        astore.put(("t",), "k", {"text": "from a thread"})
        return astore.get(("t",), "k")

    item = await asyncio.to_thread(work)
    assert item is not None and item.value == {"text": "from a thread"}  # type: ignore[attr-defined]


async def test_async_memory_api_never_blocks(
    redis_url: str, key_prefix: str, tmp_path: Path, blockbuster: BlockBuster
) -> None:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma-mem"),
        key_prefix=key_prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    ) as store:
        await store.aput(("u",), "tea", {"content": "green tea", "importance": 0.9})
        await store.aput(("u",), "car", {"content": "red car", "memory_type": "fact"})
        hits = await store.asearch_memories(("u",), "green tea", limit=1)
        assert [h.entry.id for h in hits] == ["tea"] and hits[0].breakdown.importance == 0.9
        found = await store.asearch(("u",), query="car", filter={"$retrieval": "keyword"})
        assert [h.key for h in found] == ["car"]
        entry = await store.aget_memory(("u",), "tea")
        assert entry is not None and entry.access_count == 1
