"""The maintenance methods: one definition for both stores, typed reports, no graph import.

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
)
from langgraph_tiered_memory.store.promotion import Promoted
from tests.unit.test_import_graph import import_graph

SYNC = ("update_importance", "garbage_collect", "forget", "consolidate", "promote")


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
