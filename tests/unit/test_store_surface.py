"""The tiered stores keep `BaseStore` and their memory methods; capabilities are functions."""

from __future__ import annotations

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore, privacy

MOVED = {
    "get_user_profile": "langgraph_tiered_memory.agent.profile.get_user_profile",
    "garbage_collect": "langgraph_tiered_memory.store.maintenance.garbage_collect",
    "forget": "langgraph_tiered_memory.store.maintenance.forget",
    "consolidate": "langgraph_tiered_memory.store.maintenance.consolidate",
    "promote": "langgraph_tiered_memory.store.maintenance.promote",
    "graph_triples": "langgraph_tiered_memory.graph.graph_triples",
    "graph_neighbors": "langgraph_tiered_memory.graph.graph_neighbors",
    "rebuild_graph": "langgraph_tiered_memory.graph.rebuild_graph",
    "erase_user": "langgraph_tiered_memory.privacy.erase_user",
    "export_user": "langgraph_tiered_memory.privacy.export_user",
    "memory_history": "langgraph_tiered_memory.privacy.memory_history",
}
"""Each former store method and the function that replaces it (the `a…` twin likewise)."""


@pytest.mark.parametrize("store_class", [TieredMemoryStore, AsyncTieredMemoryStore])
@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_capability_is_a_function_of_the_store_not_a_method(store_class: type, name: str) -> None:
    module_name, _, function = MOVED[name].rpartition(".")
    module = __import__(module_name, fromlist=[function])
    assert callable(getattr(module, function)) and callable(getattr(module, "a" + function))
    assert not hasattr(store_class, name) and not hasattr(store_class, "a" + name)


def test_the_memory_methods_and_the_retriever_stay_on_the_stores() -> None:
    for name in ("search_memories", "get_memory", "update_importance"):
        assert callable(getattr(TieredMemoryStore, name)), name
        assert callable(getattr(AsyncTieredMemoryStore, "a" + name)), name
    assert callable(TieredMemoryStore.as_retriever) and callable(
        AsyncTieredMemoryStore.as_retriever
    )


@pytest.mark.parametrize("store_class", [TieredMemoryStore, AsyncTieredMemoryStore])
def test_the_history_reads_are_functions_of_the_store(store_class: type) -> None:
    for name in ("history_export", "history_namespaces", "tombstone_history"):
        assert callable(getattr(privacy, name)) and not hasattr(store_class, name), name
