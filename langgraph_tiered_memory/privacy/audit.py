"""The memory history of a tiered store, read and erased: functions of the store.

`memory_history(store, namespace, key)` lists a long-term memory's events;
`history_namespaces(store)` the namespaces with history; `history_export(store, ...)`
the events of selected memories as JSON-ready data; `tombstone_history(store, ...)`
makes them content-free tombstones (what `erase_user` does to the user's history).
"""

from langgraph_tiered_memory.store._history import (
    amemory_history,
    history_export,
    history_namespaces,
    memory_history,
    tombstone_history,
)

__all__ = [
    "amemory_history",
    "history_export",
    "history_namespaces",
    "memory_history",
    "tombstone_history",
]
