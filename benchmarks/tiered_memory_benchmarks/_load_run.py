"""The running parts of the load benchmark: sessions, resources, snapshots, clean-up.

`run_async_sessions` and `run_thread_sessions` play session scripts through a compiled
graph, concurrently or one after another, timing each turn and its reply;
`RssSampler` follows this process's resident memory; `snapshot` reads back the state
the lost-update check compares (`_load_compare`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore

from tiered_memory_benchmarks._load_compare import UserState
from tiered_memory_benchmarks._load_script import SessionScript

__all__ = [
    "PhaseResult",
    "RssSampler",
    "drop_keys",
    "flush_writes",
    "memory_namespace",
    "rss_reader",
    "run_async_sessions",
    "run_thread_sessions",
    "snapshot",
    "turn_config",
]

logger = logging.getLogger("tiered_memory_benchmarks.load")

_REPLY_NODE = "agent"
"""The agent's model node: its update in the stream is the reply."""
_MAX_ERROR_EXAMPLES = 5
_RSS_EVERY_S = 0.1


@dataclass
class PhaseResult:
    """One pass over the scripts (the concurrent run, or the serial replay).

    Attributes:
        turn_ms: Latency of each completed turn (the graph run, deferred memory writes
            included), in completion order.
        reply_ms: Time from the start of each completed turn to the model's reply (the
            `agent` node's update in the stream), in completion order.
        errors: Turns (or the final flush) that raised.
        error_examples: The first few errors, as ``"Type: message"``.
        wall_s: Seconds from the first turn to the last turn's return.
        flush_s: Seconds the final flush of deferred writes took.
        peak_rss_bytes: Largest resident set size of this process seen meanwhile.
        state: Per user, the state the lost-update check compares.
        uncounted_profile_reads: Whether the store reads profiles without counting
            accesses (it has `get_user_profile`). Without it, every profile read counts
            an access on each memory of the user, a number that depends on the
            interleaving, so accesses are not comparable.
    """

    turn_ms: list[float] = field(default_factory=list)
    reply_ms: list[float] = field(default_factory=list)
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    flush_s: float = 0.0
    peak_rss_bytes: int | None = None
    state: dict[str, UserState] = field(default_factory=dict)
    uncounted_profile_reads: bool = True

    def add_turn(self, start: float, reply: float | None, end: float) -> None:
        """Record a completed turn from its `perf_counter` times."""
        self.turn_ms.append((end - start) * 1000.0)
        if reply is not None:
            self.reply_ms.append((reply - start) * 1000.0)

    def record_error(self, where: str, error: BaseException) -> None:
        """Count an error and keep its text if it is among the first few."""
        self.errors += 1
        logger.warning("load benchmark: %s raised %r", where, error, exc_info=error)
        if len(self.error_examples) < _MAX_ERROR_EXAMPLES:
            self.error_examples.append(f"{where}: {type(error).__name__}: {error}"[:300])


# --------------------------------------------------------------------------- resources


def rss_reader() -> Callable[[], int] | None:
    """A function returning this process's current RSS in bytes, or None without psutil."""
    try:
        import psutil
    except ImportError:
        return None
    process = psutil.Process()
    return lambda: int(process.memory_info().rss)


class RssSampler:
    """Samples this process's resident set size on a thread until stopped."""

    def __init__(self) -> None:
        self._read = rss_reader()
        self._stop = threading.Event()
        self.peak: int | None = None
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        assert self._read is not None
        value = self._read()
        self.peak = value if self.peak is None else max(self.peak, value)

    def _loop(self) -> None:
        while not self._stop.wait(_RSS_EVERY_S):
            self._sample()

    def __enter__(self) -> RssSampler:
        if self._read is not None:
            self._sample()
            self._thread = threading.Thread(target=self._loop, name="load-rss", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._sample()
        else:
            # Without psutil: the process's lifetime peak (Linux reports KiB).
            with contextlib.suppress(ImportError):
                import resource

                self.peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_namespace(user_id: str) -> tuple[str, ...]:
    """The agent's memory namespace of a user (its default template)."""
    return ("memories", user_id)


def turn_config(script: SessionScript) -> dict[str, Any]:
    """The run config of a session's turns: its thread and its user."""
    return {"configurable": {"thread_id": script.thread_id, "user_id": script.user_id}}


# --------------------------------------------------------------------------- snapshots


async def snapshot(store: BaseStore, users: list[str], most: int) -> dict[str, UserState]:
    """The compared state of each user: memory contents and the sum of access counts.

    Each user's namespace is listed with one search (a search counts one access per
    listed memory, so paging could reorder what it lists; the listing's own access is
    subtracted), then each memory's statistics are read, which is not an access.

    Args:
        store: The phase's store, after its writes have finished.
        users: The users of the phase.
        most: More than the memories any user can have.

    Raises:
        RuntimeError: A user has `most` memories or more (the listing may be cut).
    """
    from langgraph_tiered_memory import AsyncTieredMemoryStore

    out: dict[str, UserState] = {}
    for user in users:
        listed = await store.asearch(memory_namespace(user), limit=most)
        if len(listed) >= most:
            raise RuntimeError(f"{user} has {len(listed)} memories, more than expected.")
        contents: Counter[str] = Counter()
        accesses = 0
        for item in listed:
            if isinstance(store, AsyncTieredMemoryStore):
                entry = await store.aget_memory(item.namespace, item.key)
            else:
                entry = await asyncio.to_thread(
                    store.get_memory,  # type: ignore[attr-defined]
                    item.namespace,
                    item.key,
                )
            if entry is None or not isinstance(item.value.get("content"), str):
                continue
            contents[entry.content] += 1
            accesses += entry.access_count - 1
        out[user] = UserState(contents, accesses)
    return out


# --------------------------------------------------------------------------- running


async def run_async_sessions(
    graph: Any, scripts: list[SessionScript], serial: bool, result: PhaseResult
) -> None:
    """Play the scripts through `graph.astream`: all sessions at once, or one by one.

    Turns of a session run in order. Each completed turn is timed into `result`; a turn
    that raises is counted as an error there and the session goes on.
    """

    async def session(script: SessionScript) -> None:
        cfg = turn_config(script)
        for turn, text in enumerate(script.messages):
            start = time.perf_counter()
            reply = None
            try:
                async for update in graph.astream(
                    {"messages": [HumanMessage(text)]}, cfg, stream_mode="updates"
                ):
                    if reply is None and _REPLY_NODE in update:
                        reply = time.perf_counter()
            except Exception as e:  # counted and reported as the benchmark's errors
                result.record_error(f"{script.thread_id} turn {turn}", e)
            else:
                result.add_turn(start, reply, time.perf_counter())

    if serial:
        for script in scripts:
            await session(script)
    else:
        await asyncio.gather(*(session(s) for s in scripts))


def run_thread_sessions(
    graph: Any,
    scripts: list[SessionScript],
    serial: bool,
    result: PhaseResult,
    workers: int,
) -> None:
    """`run_async_sessions` with `graph.stream`, concurrent sessions on a thread pool.

    Args:
        graph: The compiled graph (sync store and saver).
        scripts: The sessions.
        serial: Run the sessions one after another in this thread instead.
        result: Collects timings and errors.
        workers: Threads of the pool.
    """
    lock = threading.Lock()

    def session(script: SessionScript) -> None:
        cfg = turn_config(script)
        for turn, text in enumerate(script.messages):
            start = time.perf_counter()
            reply = None
            try:
                for update in graph.stream(
                    {"messages": [HumanMessage(text)]}, cfg, stream_mode="updates"
                ):
                    if reply is None and _REPLY_NODE in update:
                        reply = time.perf_counter()
            except Exception as e:  # counted and reported as the benchmark's errors
                with lock:
                    result.record_error(f"{script.thread_id} turn {turn}", e)
            else:
                end = time.perf_counter()
                with lock:
                    result.add_turn(start, reply, end)

    if serial:
        for script in scripts:
            session(script)
        return
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=workers, thread_name_prefix="load-session"
    ) as pool:
        for future in [pool.submit(session, s) for s in scripts]:
            future.result()


async def flush_writes(result: PhaseResult) -> None:
    """Wait for the agent's deferred memory writes (every writer of the process)."""
    from langgraph_tiered_memory.agent.builder import flush_memory_writes

    start = time.perf_counter()
    try:
        await asyncio.to_thread(flush_memory_writes)
    except Exception as e:  # failed writes are errors of the run
        result.record_error("flush of deferred memory writes", e)
    result.flush_s = time.perf_counter() - start


def drop_keys(url: str, patterns: list[str]) -> None:
    """Delete the phase's remaining Redis keys (a shared server keeps nothing of the run)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        for pattern in patterns:
            keys = list(client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(keys), 1000):
                client.unlink(*keys[start : start + 1000])
    finally:
        client.close()
