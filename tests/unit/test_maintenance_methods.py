"""The maintenance methods: one definition for both stores, typed reports, no graph import.

Long-tier stores only (no Redis): every pass here runs on an in-process Chroma.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from langgraph_tiered_memory import (
    AsyncTieredMemoryStore,
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
    GCReport,
    PromotionSkip,
    TieredMemoryStore,
    create_forgetting_graph,
)
from langgraph_tiered_memory.store.promotion import Promoted
from tests.fakes import Clock, HashingEmbeddings
from tests.unit.test_import_graph import import_graph

DIMS = 16
NS = ("users", "u1", "memories")
SYNC = ("update_importance", "garbage_collect", "forget", "consolidate", "promote")


def _store(tmp_path: Path, clock: Clock) -> TieredMemoryStore:
    return TieredMemoryStore(
        chroma_path=str(tmp_path / "chroma"),
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)},
        clock=clock,
    )


def _keys(typed_dict: Any) -> set[str]:
    return set(get_type_hints(typed_dict))


@pytest.mark.parametrize("store_class", [TieredMemoryStore, AsyncTieredMemoryStore])
@pytest.mark.parametrize("name", SYNC)
def test_every_maintenance_method_has_an_async_twin_with_its_signature(
    store_class: type, name: str
) -> None:
    twin = getattr(store_class, f"a{name}")
    assert inspect.iscoroutinefunction(twin)
    sync = inspect.signature(getattr(TieredMemoryStore, name))
    signature = inspect.signature(twin)
    assert list(signature.parameters.values())[1:] == list(sync.parameters.values())[1:]
    assert signature.return_annotation == sync.return_annotation
    assert name in (twin.__doc__ or "")  # the twin's docstring names the sync method
    # One definition: both stores share the same function objects.
    assert twin is getattr(AsyncTieredMemoryStore, f"a{name}")


def test_the_async_store_has_no_blocking_maintenance_methods() -> None:
    for name in SYNC:
        assert not hasattr(AsyncTieredMemoryStore, name), name


def test_maintenance_methods_declare_their_reports() -> None:
    hints = {name: get_type_hints(getattr(TieredMemoryStore, name)) for name in SYNC}
    assert hints["garbage_collect"]["return"] is GCReport
    assert hints["forget"]["return"] == list[ForgottenRow]
    assert hints["consolidate"]["return"] == list[ConsolidationRecord]
    assert hints["promote"]["return"] is Promoted
    assert get_type_hints(Promoted)["skipped"] == list[PromotionSkip]
    assert _keys(ForgettingReport) == _keys(GCReport) | {"consolidated", "now"}


def test_reports_at_run_time_are_dicts_with_exactly_the_declared_keys(tmp_path: Path) -> None:
    clock = Clock()
    with _store(tmp_path, clock) as store:
        store.put(NS, "weak", {"content": "said teh instead of the", "importance": 0.1})
        store.put(NS, "a", {"content": "Likes green tea in the morning."})
        store.put(NS, "b", {"content": "Likes green tea in the morning."})
        report = store.garbage_collect(dry_run=True)
        assert type(report) is dict and set(report) == _keys(GCReport)
        assert [d["id"] for d in report["details"]] == ["weak"]
        assert set(report["details"][0]) == _keys(ForgottenRow)
        (merged,) = store.consolidate(NS, dry_run=True)
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
            report = await store.agarbage_collect(dry_run=True)
            gone = await store.aforget(NS, ["weak", "m"])
            return raised, report, gone, await store.aget(NS, "weak")
        finally:
            store.close()

    raised, report, gone, weak = asyncio.run(run())
    assert raised == 0.75
    assert [d["id"] for d in report["details"]] == ["weak"] and report["dry_run"] is True
    assert [d["id"] for d in gone] == ["weak"] and weak is None


def test_the_store_imports_no_prebuilt_graph() -> None:
    graph = import_graph()
    prebuilt = {"langgraph_tiered_memory.summarizer", "langgraph_tiered_memory.forgetting_graph"}
    store_modules = [m for m in graph if m.startswith("langgraph_tiered_memory.store")]
    assert store_modules
    for module in store_modules:
        assert not graph[module] & prebuilt, module
