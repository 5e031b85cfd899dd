"""Time questions through the store: memories that say when rank with the time bonus."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from langgraph_tiered_memory import TieredMemoryStore
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

NS = ("memories", "mel")


def _iso(y: int, m: int, d: int) -> str:
    return datetime(y, m, d, 12, tzinfo=timezone.utc).isoformat()


def _fill(store: TieredMemoryStore) -> None:
    store.put(
        NS,
        "dated",
        {
            "content": "Camping trip, two weekends ago.",
            "occurred_at": _iso(2023, 7, 17),
        },
    )
    store.put(
        NS,
        "undated",
        {
            "content": "We go camping at the lake.",
            "occurred_at": _iso(2023, 3, 2),
        },
    )
    store.put(NS, "other", {"content": "Pottery class was fun.", "occurred_at": _iso(2023, 3, 3)})


def _time(store: TieredMemoryStore, query: str) -> dict[str, float]:
    return {h.entry.id: h.breakdown.time for h in store.search_memories(NS, query, limit=10)}


def test_when_questions_and_named_periods_mark_the_memories_that_answer(
    mstore: TieredMemoryStore,
) -> None:
    _fill(mstore)
    assert _time(mstore, "When did Melanie go camping at the lake?") == {
        "dated": 1.0,
        "undated": 0.0,
        "other": 0.0,
    }
    # A named month: the memories that happened in it, whatever they say.
    assert _time(mstore, "camping at the lake in March")["undated"] == 1.0
    assert _time(mstore, "camping at the lake in March")["dated"] == 0.0
    # Neither: no memory gets the bonus.
    assert set(_time(mstore, "camping at the lake").values()) == {0.0}


def test_the_bonus_reorders_memories_of_close_relevance(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    def ranked(weight: float) -> list[str]:
        store = make_store(
            "long",
            scoring={"time_weight": weight},
            clock=clock,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        )
        _fill(store)
        hits = store.search_memories(NS, "When did we go camping at the lake?", limit=3)
        return [h.entry.id for h in hits]

    off, on = ranked(0.0), ranked(0.5)
    assert off[0] == "undated" and on[0] == "dated"
    assert off[-1] == on[-1] == "other"  # the unrelated memory stays last


def test_relative_periods_resolve_against_the_store_clock(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    clock.now = datetime(2024, 5, 15, 9, tzinfo=timezone.utc).timestamp()
    ns = ("memories", "ana")
    mstore.put(ns, "pasta", {"content": "Ana ate pasta.", "occurred_at": _iso(2024, 5, 14)})
    mstore.put(ns, "soup", {"content": "Ana ate soup.", "occurred_at": _iso(2024, 5, 2)})
    hits = mstore.search_memories(ns, "What did Ana eat yesterday?", limit=5)
    assert {h.entry.id: h.breakdown.time for h in hits} == {"pasta": 1.0, "soup": 0.0}
    hits = mstore.search_memories(ns, "What did Ana eat two weeks ago?", limit=5)
    assert {h.entry.id: h.breakdown.time for h in hits} == {"pasta": 0.0, "soup": 1.0}
    # A day later "yesterday" is another day.
    clock.now += 86_400
    hits = mstore.search_memories(ns, "What did Ana eat yesterday?", limit=5)
    assert {h.entry.id: h.breakdown.time for h in hits} == {"pasta": 0.0, "soup": 0.0}
