"""The maintenance passes at run time: reports with exactly their declared keys, and the
async twins running the same passes (long-tier stores on an in-process Chroma, no Redis).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, get_type_hints

from langgraph_tiered_memory import (
    AsyncTieredMemoryStore,
    TieredMemoryStore,
    create_forgetting_graph,
)
from langgraph_tiered_memory.store import (
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
    GCReport,
)
from langgraph_tiered_memory.store.maintenance import (
    aforget,
    agarbage_collect,
    consolidate,
    garbage_collect,
)
from tests.fakes import Clock, HashingEmbeddings

DIMS = 16
NS = ("users", "u1", "memories")


def _store(tmp_path: Path, clock: Clock) -> TieredMemoryStore:
    return TieredMemoryStore(
        chroma_path=str(tmp_path / "chroma"),
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)},
        clock=clock,
    )


def _keys(typed_dict: Any) -> set[str]:
    return set(get_type_hints(typed_dict))


def test_reports_at_run_time_are_dicts_with_exactly_the_declared_keys(tmp_path: Path) -> None:
    clock = Clock()
    with _store(tmp_path, clock) as store:
        store.put(NS, "weak", {"content": "said teh instead of the", "importance": 0.1})
        store.put(NS, "a", {"content": "Likes green tea in the morning."})
        store.put(NS, "b", {"content": "Likes green tea in the morning."})
        report = garbage_collect(store, dry_run=True)
        assert type(report) is dict and set(report) == _keys(GCReport)
        assert [d["id"] for d in report["details"]] == ["weak"]
        assert set(report["details"][0]) == _keys(ForgottenRow)
        (merged,) = consolidate(store, NS, dry_run=True)
        assert type(merged) is dict and set(merged) == _keys(ConsolidationRecord)
        assert sorted(merged["sources"]) == ["a", "b"]
        graph = create_forgetting_graph(store=store, consolidate=True, clock=clock).compile()
        out = graph.invoke({"dry_run": False})["report"]
        assert set(out) == _keys(ForgettingReport)
        assert [d["id"] for d in out["details"]] == ["weak"]
        assert [set(r) for r in out["consolidated"]] == [_keys(ConsolidationRecord)]


def test_async_twins_run_the_same_passes(tmp_path: Path) -> None:
    clock = Clock()

    async def run() -> tuple[Any, ...]:
        store = AsyncTieredMemoryStore(
            chroma_path=str(tmp_path / "chroma"),
            tiers={"default": "long"},
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)},
            clock=clock,
        )
        try:
            await store.aput(NS, "weak", {"content": "typo", "importance": 0.1})
            await store.aput(NS, "m", {"content": "likes tea", "importance": 0.5})
            raised = await store.aupdate_importance(NS, "m", 0.25)
            report = await agarbage_collect(store, dry_run=True)
            gone = await aforget(store, NS, ["weak", "m"])
            return raised, report, gone, await store.aget(NS, "weak")
        finally:
            store.close()

    raised, report, gone, weak = asyncio.run(run())
    assert raised == 0.75
    assert [d["id"] for d in report["details"]] == ["weak"] and report["dry_run"] is True
    assert [d["id"] for d in gone] == ["weak"] and weak is None
