"""A user's rights over a tiered store: erasure and export, functions of the store.

`erase_user(store, user_id, ...)` removes everything the store (and, with
`checkpointer=`, the sessions) holds about a user and returns an `ErasureReceipt`;
`export_user(store, user_id, ...)` returns it as JSON-ready data. Their `a…` twins run
the store's I/O in a worker thread. The session savers keep their own `erase_user`.
"""

from langgraph_tiered_memory.store._erase import aerase_user, erase_user
from langgraph_tiered_memory.store._export import aexport_user, export_user

__all__ = ["aerase_user", "aexport_user", "erase_user", "export_user"]
