"""The one sync/async driver: a plan runs the same, blocking or awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_tiered_memory._drive import Call, adrive, drive


class _Numbers:
    """`half` and its async twin `ahalf`: odd numbers are refused."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def half(self, n: int) -> int:
        self.calls.append("half")
        if n % 2:
            raise ValueError(f"{n} is odd")
        return n // 2

    async def ahalf(self, n: int) -> int:
        self.calls.append("ahalf")
        if n % 2:
            raise ValueError(f"{n} is odd")
        return n // 2


def _plan(target: _Numbers, numbers: list[int]) -> Generator[Call, Any, list[int | str]]:
    out: list[int | str] = []
    for n in numbers:
        try:
            out.append((yield Call(target, "half", (n,))))
        except ValueError as e:  # the call's error, raised at the yield
            out.append(str(e))
    return out


@given(st.lists(st.integers(-50, 50), max_size=8))
def test_a_plan_gets_the_same_answers_and_errors_blocking_or_awaited(numbers: list[int]) -> None:
    sync, aio = _Numbers(), _Numbers()
    expected = [f"{n} is odd" if n % 2 else n // 2 for n in numbers]
    assert drive(_plan(sync, numbers)) == expected
    assert asyncio.run(adrive(_plan(aio, numbers))) == expected
    assert sync.calls == ["half"] * len(numbers) and aio.calls == ["ahalf"] * len(numbers)


def test_an_error_the_plan_does_not_catch_reaches_the_caller() -> None:
    def plan() -> Generator[Call, Any, None]:
        yield Call(_Numbers(), "half", (3,))

    with pytest.raises(ValueError, match="3 is odd"):
        drive(plan())
    with pytest.raises(ValueError, match="3 is odd"):
        asyncio.run(adrive(plan()))


def test_a_call_without_a_method_calls_its_target() -> None:
    async def atwice(n: int) -> int:
        return 2 * n

    def plan(fn: Any) -> Generator[Call, Any, int]:
        return (yield Call(fn, None, (21,)))

    assert drive(plan(lambda n: 2 * n)) == 42
    assert asyncio.run(adrive(plan(atwice))) == 42


def test_a_cancelled_call_still_runs_the_plans_cleanup_call() -> None:
    done: list[str] = []

    class Slow:
        async def ahang(self) -> None:
            await asyncio.Event().wait()

        async def aclean(self) -> None:
            done.append("cleaned")

    def plan() -> Generator[Call, Any, None]:
        try:
            yield Call(Slow(), "hang")
        finally:
            yield Call(Slow(), "clean")

    async def main() -> None:
        task = asyncio.create_task(adrive(plan()))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert done == ["cleaned"]
