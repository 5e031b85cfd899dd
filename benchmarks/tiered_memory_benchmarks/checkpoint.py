"""Checkpoint benchmark: per-super-step latency of a small graph, adapter vs upstream.

The graph is a `StateGraph` over `MessagesState` with one node that appends a message
and loops until `steps` super-steps have run. Every run starts a new thread whose
state already holds `messages` messages, so each super-step writes a checkpoint of a
realistic size. The same graph is compiled with each saver (upstream `RedisSaver`
and the session-aware `RedisSessionSaver`); runs alternate between them, in
alternating order, so both see the same machine load. The figure is the wall time
of `graph.invoke` divided by the number of super-steps.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.graph import END, START, MessagesState, StateGraph

from langgraph_tiered_memory.checkpoint.registry import DEFAULT_SESSION_TTL


class BenchState(MessagesState):
    """The benchmark graph's state: messages and a step counter."""

    step: int


__all__ = [
    "CheckpointBenchConfig",
    "CheckpointBenchReport",
    "SAVER_CHOICES",
    "build_graph",
    "run_checkpoint_benchmark",
]

SAVER_CHOICES: tuple[str, ...] = ("upstream", "adapter")
"""`upstream`: langgraph-checkpoint-redis `RedisSaver` with the same 7-day TTL (refreshed
on read); `adapter`: `RedisSessionSaver` with its defaults."""


@dataclass
class CheckpointBenchConfig:
    """What the checkpoint benchmark measures.

    Attributes:
        runs: Graph runs per saver (one new thread each).
        steps: Super-steps per run.
        messages: Messages in the state when a run starts.
        warmup: Untimed runs per saver first.
        savers: Savers to compare, from `SAVER_CHOICES`.
        redis_url: Redis with RediSearch and RedisJSON; None uses `REDIS_URL` or an
            embedded server.
    """

    runs: int = 30
    steps: int = 10
    messages: int = 20
    warmup: int = 3
    savers: list[str] = field(default_factory=lambda: list(SAVER_CHOICES))
    redis_url: str | None = None

    def validate(self) -> CheckpointBenchConfig:
        """Check the options.

        Returns:
            This config.

        Raises:
            ValueError: An option is out of range or a saver is unknown.
        """
        for name in ("runs", "steps", "messages"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup}.")
        unknown = [s for s in self.savers if s not in SAVER_CHOICES]
        if unknown or not self.savers:
            raise ValueError(f"savers must be among {', '.join(SAVER_CHOICES)}, got {unknown}.")
        return self


@dataclass
class CheckpointBenchReport:
    """Per-super-step latency (ms) of each saver, and the adapter's overhead."""

    config: CheckpointBenchConfig
    step_ms: dict[str, list[float]]

    def p50(self, saver: str) -> float:
        """Median per-super-step latency of `saver`, in ms."""
        return statistics.median(self.step_ms[saver])

    def overhead_percent(self) -> float | None:
        """(adapter - upstream) / upstream at the median, in percent."""
        if not {"upstream", "adapter"} <= set(self.step_ms):
            return None
        base = self.p50("upstream")
        return (self.p50("adapter") - base) / base * 100.0

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-serialisable data."""
        out: dict[str, Any] = {"benchmark": "checkpoint", "config": asdict(self.config)}
        for saver, values in self.step_ms.items():
            out[saver] = {
                "step_p50_ms": round(self.p50(saver), 4),
                "step_p95_ms": round(statistics.quantiles(values, n=20)[-1], 4)
                if len(values) >= 2
                else round(values[0], 4),
                "runs": len(values),
            }
        overhead = self.overhead_percent()
        out["overhead_percent"] = None if overhead is None else round(overhead, 2)
        return out


def build_graph(steps: int) -> Any:
    """The benchmark graph: one node appending a message, looping `steps` times.

    Args:
        steps: Super-steps per run.

    Returns:
        An uncompiled `StateGraph`.
    """
    from langchain_core.messages import AIMessage

    def act(state: BenchState) -> dict[str, Any]:
        n = state.get("step", 0) + 1
        return {"messages": [AIMessage(content=f"step {n}: noted.")], "step": n}

    def route(state: BenchState) -> str:
        return END if state.get("step", 0) >= steps else "act"

    graph = StateGraph(BenchState)
    graph.add_node("act", act)
    graph.add_edge(START, "act")
    graph.add_conditional_edges("act", route, ["act", END])
    return graph


def _initial_messages(count: int) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            content=f"message {i}: a few sentences of an ordinary conversation turn."
        )
        for i in range(count)
    ]


@contextmanager
def _open_saver(name: str, redis_url: str) -> Iterator[Any]:
    if name == "upstream":
        from langgraph.checkpoint.redis import RedisSaver

        # The same 7-day TTL with refresh on read as the adapter's default, so the
        # comparison measures the session layer, not upstream's TTL handling.
        ttl = {"default_ttl": DEFAULT_SESSION_TTL / 60, "refresh_on_read": True}
        with RedisSaver.from_conn_string(redis_url, ttl=ttl) as saver:
            saver.setup()
            yield saver
        return
    from langgraph_tiered_memory.checkpoint import RedisSessionSaver

    with RedisSessionSaver.from_conn_string(redis_url) as saver:
        saver.setup()
        yield saver


def run_checkpoint_benchmark(
    config: CheckpointBenchConfig,
    *,
    on_run: Callable[[str, int], None] | None = None,
) -> CheckpointBenchReport:
    """Run the benchmark.

    Args:
        config: What to measure.
        on_run: Called after each timed run with the saver name and run number.

    Returns:
        The report.
    """
    config.validate()
    graph = build_graph(config.steps)
    recursion = config.steps * 2 + 10
    step_ms: dict[str, list[float]] = {name: [] for name in config.savers}
    with ExitStack() as stack:
        url = config.redis_url
        if url is None:
            from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

            url = stack.enter_context(redis_url_or_embedded())
        compiled = {}
        for name in config.savers:
            opened: AbstractContextManager[Any] = _open_saver(name, url)
            compiled[name] = graph.compile(checkpointer=stack.enter_context(opened))
        initial = _initial_messages(config.messages)
        for run in range(config.warmup + config.runs):
            # Alternate the order so neither saver always runs right after the other.
            order = config.savers if run % 2 == 0 else config.savers[::-1]
            for name in order:
                thread = f"bench-{name}-{uuid.uuid4().hex}"
                cfg = {
                    "configurable": {"thread_id": thread, "user_id": "bench"},
                    "recursion_limit": recursion,
                }
                start = time.perf_counter()
                compiled[name].invoke({"messages": initial, "step": 0}, cfg)
                elapsed = time.perf_counter() - start
                if run >= config.warmup:
                    step_ms[name].append(elapsed / config.steps * 1000.0)
                    if on_run is not None:
                        on_run(name, run - config.warmup + 1)
    return CheckpointBenchReport(config=config, step_ms=step_ms)
