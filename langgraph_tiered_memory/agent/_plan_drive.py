"""Run a planning generator: the one loop behind the sync and async twins.

Extraction (`agent._extract_plan.plan_extraction`) and user profiles
(`agent._profile_plan.build_profile`) make every decision in a generator that does no I/O: it
yields requests and receives their answers. `drive` serves the requests with a sync
function, `adrive` with an async one; that function is the only part the twins differ in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar, cast

R = TypeVar("R")
T = TypeVar("T")


def _step(plan: Generator[R, Any, T], answer: Any) -> tuple[bool, Any]:
    """Send `answer`: (True, the next request), or (False, what `plan` returned)."""
    try:
        return True, plan.send(answer)
    except StopIteration as done:
        return False, done.value


def drive(plan: Generator[R, Any, T], serve: Callable[[R], Any]) -> T:
    """Answer each request of `plan` with `serve(request)`; return what `plan` returns."""
    more, out = _step(plan, None)
    while more:
        more, out = _step(plan, serve(out))
    return cast(T, out)


async def adrive(plan: Generator[R, Any, T], serve: Callable[[R], Awaitable[Any]]) -> T:
    """`drive` with an async `serve`."""
    more, out = _step(plan, None)
    while more:
        more, out = _step(plan, await serve(out))
    return cast(T, out)
