"""What is held about whom: redaction, ownership, provenance, history and erasure rules.

The modules below are pure rules and records (no I/O): `redaction` masks personal data
before it is stored, `ownership` and `erasure` say which namespaces belong to a user,
`provenance` which users a memory came from, `history` the events of a memory and who
caused them.

What a store holds about a user is reached with functions of the store, re-exported
here: `erase_user(store, user_id)` and `export_user` (`privacy.user_data`), and
`memory_history(store, namespace, key)` and the other history reads (`privacy.audit`).
"""

from langgraph_tiered_memory.privacy.audit import (
    amemory_history,
    history_export,
    history_namespaces,
    memory_history,
    tombstone_history,
)
from langgraph_tiered_memory.privacy.user_data import (
    aerase_user,
    aexport_user,
    erase_user,
    export_user,
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
