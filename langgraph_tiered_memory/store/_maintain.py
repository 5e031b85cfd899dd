"""The stores' maintenance methods, each written once for both stores.

Every method is a pass of `maintenance` (or `promotion`) whose first parameter is the
store: assigned in a class body it becomes a method, with the pass's own signature,
defaults and docstring. `TieredMemoryStore` inherits `MaintenanceMethods`; both stores
inherit `AsyncMaintenanceMethods`, whose twins `_in_thread` derives from the same
passes (they are synchronous I/O, so each twin runs its pass in a worker thread and
the event loop never blocks). `aupdate_importance` is the one twin written out: it
embeds the rewritten memory with the model's async API, as `abatch` does.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from langgraph_tiered_memory.privacy.history import Actor, acting
from langgraph_tiered_memory.store import maintenance
from langgraph_tiered_memory.store._protocols import StoreCore

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _in_thread(
    method: Callable[Concatenate[StoreCore, _P], _R],
) -> Callable[Concatenate[StoreCore, _P], Coroutine[Any, Any, _R]]:
    """The async twin of a maintenance pass: the same call, in a worker thread.

    The twin has the pass's signature and, under a first line naming it, its docstring.
    """

    async def twin(self: StoreCore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    functools.update_wrapper(twin, method)
    twin.__name__ = twin.__qualname__ = f"a{method.__name__}"
    twin.__doc__ = (
        f"Async `{method.__name__}`: the same pass, run in a worker thread (callbacks such"
        " as `progress` are called from that thread).\n\n" + inspect.cleandoc(method.__doc__ or "")
    )
    return twin


def _acting(
    method: Callable[Concatenate[StoreCore, _P], _R], actor: Actor, reason: str
) -> Callable[Concatenate[StoreCore, _P], _R]:
    """The pass with its writes attributed to `actor` in the memory history."""

    def run(self: StoreCore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with acting(actor, reason):
            return method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


_promote = _acting(maintenance.promote, "system", "promoted from the short-term tier")


class MaintenanceMethods:
    """Reinforcement, forgetting, consolidation and promotion (the sync store)."""

    update_importance = maintenance.update_importance
    garbage_collect = maintenance.garbage_collect
    forget = maintenance.forget
    consolidate = maintenance.consolidate
    promote = _promote


class AsyncMaintenanceMethods:
    """The `a…` twins of the maintenance methods (both stores)."""

    aupdate_importance = maintenance.aupdate_importance
    agarbage_collect = _in_thread(maintenance.garbage_collect)
    aforget = _in_thread(maintenance.forget)
    aconsolidate = _in_thread(maintenance.consolidate)
    apromote = _in_thread(_promote)
