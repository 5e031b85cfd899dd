"""The one way sync and async code is shared: a plan generator, driven twice.

A plan makes every decision and does no I/O: it yields requests and is sent their
replies; an exception raised serving a request (cancellation included) is raised in the
plan at its `yield`, so a plan catches what it can handle and runs its `finally` blocks
as if it had made the call. `drive` serves each request with a blocking call, `adrive`
awaits it. By default a request is a `Call`: `drive` runs `target.method(...)` and
`adrive` awaits `target.a<method>(...)` (the naming of LangGraph stores, LangChain
runnables and embeddings); a plan whose requests need other serving (Redis clients,
whose sync and async methods share names) is driven with its own `serve`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class Call(NamedTuple):
    """Call `target.method(*args, **kwargs)` (or `target` itself when `method` is None)."""

    target: Any
    method: str | None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = MappingProxyType({})


def _call(call: Call) -> Any:
    fn = call.target if call.method is None else getattr(call.target, call.method)
    return fn(*call.args, **call.kwargs)


def _acall(call: Call) -> Awaitable[Any]:
    fn = call.target if call.method is None else getattr(call.target, "a" + call.method)
    return fn(*call.args, **call.kwargs)


def drive(plan: Generator[Any, Any, T], serve: Callable[[Any], Any] = _call) -> T:
    """Answer each request of `plan` with `serve(request)`; return what `plan` returns."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = plan.send(reply) if error is None else plan.throw(error)
        except StopIteration as done:
            return done.value
        try:
            reply, error = serve(request), None
        except BaseException as e:  # raised in the plan at its yield
            reply, error = None, e


async def adrive(
    plan: Generator[Any, Any, T], serve: Callable[[Any], Awaitable[Any]] = _acall
) -> T:
    """`drive` with an async `serve`."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = plan.send(reply) if error is None else plan.throw(error)
        except StopIteration as done:
            return done.value
        try:
            reply, error = await serve(request), None
        except BaseException as e:
            reply, error = None, e
