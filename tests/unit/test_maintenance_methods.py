"""The maintenance passes: functions of either store with async twins, typed reports.

Signatures and types only; the passes run on Chroma in
tests/integration/test_maintenance_reports.py.
"""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.store import (
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
    GCReport,
    PromotionSkip,
    maintenance,
)
from langgraph_tiered_memory.store.maintenance import Promoted
from tests.unit.test_import_graph import import_graph

SYNC = ("garbage_collect", "forget", "consolidate", "promote")


def _keys(typed_dict: Any) -> set[str]:
    return set(get_type_hints(typed_dict))


@pytest.mark.parametrize("name", SYNC)
def test_every_maintenance_pass_has_an_async_twin_with_its_signature(name: str) -> None:
    twin = getattr(maintenance, f"a{name}")
    assert inspect.iscoroutinefunction(twin)
    sync = inspect.signature(getattr(maintenance, name))
    signature = inspect.signature(twin)
    assert list(signature.parameters) == list(sync.parameters)
    assert list(signature.parameters)[0] == "store"
    assert signature.return_annotation == sync.return_annotation
    assert name in (twin.__doc__ or "")  # the twin's docstring names the sync pass


def test_reinforcement_stays_a_method_with_an_async_twin_on_both_stores() -> None:
    sync = inspect.signature(TieredMemoryStore.update_importance)
    for store_class in (TieredMemoryStore, AsyncTieredMemoryStore):
        twin = store_class.aupdate_importance
        assert inspect.iscoroutinefunction(twin)
        assert inspect.signature(twin).parameters.keys() == sync.parameters.keys()
    assert not hasattr(AsyncTieredMemoryStore, "update_importance")  # it would block


def test_maintenance_passes_declare_their_reports() -> None:
    hints = {name: get_type_hints(getattr(maintenance, name)) for name in SYNC}
    assert hints["garbage_collect"]["return"] is GCReport
    assert hints["forget"]["return"] == list[ForgottenRow]
    assert hints["consolidate"]["return"] == list[ConsolidationRecord]
    assert hints["promote"]["return"] is Promoted
    assert get_type_hints(Promoted)["skipped"] == list[PromotionSkip]
    assert _keys(ForgettingReport) == _keys(GCReport) | {"consolidated", "now"}


def test_the_store_imports_no_prebuilt_graph() -> None:
    graph = import_graph()
    prebuilt = {
        "langgraph_tiered_memory.agent.summarizer",
        "langgraph_tiered_memory.agent.forgetting_graph",
    }
    store_modules = [m for m in graph if m.startswith("langgraph_tiered_memory.store")]
    assert store_modules
    for module in store_modules:
        assert not graph[module] & prebuilt, module
