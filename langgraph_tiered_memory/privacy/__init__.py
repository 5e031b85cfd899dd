"""What is held about whom: redaction, ownership, provenance, history and erasure rules.

The modules below are pure rules and records (no I/O): `redaction` masks personal data
before it is stored, `ownership` and `erasure` say which namespaces belong to a user,
`provenance` which users a memory came from, `history` the events of a memory and who
caused them.

What a store holds about a user is reached with functions of the store, re-exported
here: `erase_user(store, user_id)` removes everything the store (and, with
`checkpointer=`, the sessions) holds about a user and returns an `ErasureReceipt`;
`export_user` returns it as JSON-ready data; `memory_history(store, namespace, key)`
lists a long-term memory's events, `history_namespaces(store)` the namespaces with
history, `history_export` the events of selected memories as JSON-ready data and
`tombstone_history` makes them content-free tombstones. The `a…` twins run the store's
I/O in a worker thread.
"""

from langgraph_tiered_memory.store._erase import aerase_user, erase_user
from langgraph_tiered_memory.store._export import aexport_user, export_user
from langgraph_tiered_memory.store._history import (
    amemory_history,
    history_export,
    history_namespaces,
    memory_history,
    tombstone_history,
)

__all__ = [
    "aerase_user",
    "aexport_user",
    "amemory_history",
    "erase_user",
    "export_user",
    "history_export",
    "history_namespaces",
    "memory_history",
    "tombstone_history",
]
