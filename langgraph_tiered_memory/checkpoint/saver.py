"""Redis checkpointers for short-term (session) memory that follow LangGraph's checkpointer spec.

`AsyncRedisSessionSaver` and `RedisSessionSaver` extend the savers of
``langgraph-checkpoint-redis`` (0.5.x) and keep its storage layout, so data written by
either is readable by the other. They change what the upstream savers get wrong or
leave out, as checked by ``langgraph-checkpoint-conformance``:

* ``list``/``alist``: an explicit ``checkpoint_ns=""`` means the root namespace only
  (upstream lists every namespace); ``before`` compares checkpoint ids (upstream parses
  them as ULIDs, which LangGraph's uuid6 ids are not, and silently ignores the cursor);
  ``filter`` accepts any metadata key (upstream only ``source``, ``step``, ``run_id``
  and ``thread_id``); ``limit`` is applied after filtering (upstream truncates the
  search first). Only the thread id is passed to the upstream search, so a ``run_id``
  in ``config["configurable"]`` no longer narrows the listing (use
  ``filter={"run_id": ...}``), and, as upstream, at most 10,000 checkpoints per
  thread are considered.
* ``prune``/``aprune``: an empty list of threads is a no-op, threads of any size are
  pruned, and the latest-checkpoint pointers stay valid.
* ``delete_for_runs``/``adelete_for_runs`` and ``copy_thread``/``acopy_thread`` are
  added.

`ShallowRedisSessionSaver` and `AsyncShallowRedisSessionSaver` add the same session
layer (TTL, session registry, module check, outage errors) to upstream's shallow savers.

This module gathers the savers; they live in `checkpoint.sync`, `checkpoint.aio` and
`checkpoint.shallow`, on the planning shared by sync and async (`checkpoint._base`) and
the session layer (`checkpoint._session`).
"""

from __future__ import annotations

from langgraph_tiered_memory.checkpoint.aio import AsyncRedisSessionSaver
from langgraph_tiered_memory.checkpoint.registry import (
    DEFAULT_SESSION_TTL as DEFAULT_SESSION_TTL,
)
from langgraph_tiered_memory.checkpoint.registry import (
    AsyncSessionRegistry as AsyncSessionRegistry,
)
from langgraph_tiered_memory.checkpoint.registry import SessionMeta as SessionMeta
from langgraph_tiered_memory.checkpoint.registry import SessionRegistry as SessionRegistry
from langgraph_tiered_memory.checkpoint.registry import SessionStatus as SessionStatus
from langgraph_tiered_memory.checkpoint.shallow import (
    AsyncShallowRedisSessionSaver,
    ShallowRedisSessionSaver,
)
from langgraph_tiered_memory.checkpoint.sync import RedisSessionSaver

__all__ = [
    "AsyncRedisSessionSaver",
    "RedisSessionSaver",
    "AsyncShallowRedisSessionSaver",
    "ShallowRedisSessionSaver",
]
