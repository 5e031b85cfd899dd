"""The memory agent's background writer: storage off the reply path, nothing lost.

The agent hands each turn's storage (the interaction memory, reinforcement of the
memories the reply used, extraction) to a `MemoryWriter` as a `WriteJob` the moment the
final reply exists, and carries on: the reply is returned and streamed while the job
runs. A deferred graph node waits for the job before the run ends.

How a job runs:

- **Lanes.** Jobs carry a lane (the user's memory namespace). Jobs of one lane run one
  at a time in submission order, so two turns of one user never extract against the
  same memories at once; different lanes run in parallel (sync runs: a thread pool of
  `max_workers` threads; async runs: one task per busy lane on the run's event loop,
  so an async run never blocks its loop).
- **Steps and retries.** A job is a list of steps. Each step is retried with `tenacity`
  (exponential backoff, `attempts` in all) while it raises a transient error
  (`is_transient`: connection errors, timeouts, `BackendUnavailableError`); a step that
  succeeded is never run again, so a retry resumes where the job failed.
- **Nothing is dropped before it is written.** A job leaves its lane only when every
  step succeeded. A job that fails (a non-transient error, or a transient one that
  outlasts its attempts) is logged and kept in `MemoryWriter.failed`; the graph's
  deferred node raises `MemoryWriteError` for its own job, `flush()` raises it for all
  of them, `retry_failed()` (threads) or `aretry_failed()` (the running event loop)
  runs them again and `discard_failed()` is the only way to drop one.
- **Flush.** `flush()` / `aflush()` wait for every pending job. At interpreter exit the
  thread pool finishes its queued jobs (Python joins executor threads first) and an
  `atexit` hook flushes every writer and logs what failed; `flush_memory_writes()` does
  the same on demand (call it before a worker process exits). An async job lives on its
  run's event loop: the deferred node awaits it, so a run that completes has written
  it; a job still pending when its loop stops is reported by the exit hook.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import logging
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from langgraph_tiered_memory.errors import TieredMemoryError

__all__ = [
    "FailedWrite",
    "MemoryWriteError",
    "MemoryWriter",
    "WriteJob",
    "WriteStep",
    "flush_memory_writes",
    "is_transient",
]

logger = logging.getLogger("langgraph_tiered_memory.agent")

_FINISHED_KEPT = 100_000
"""Succeeded job ids remembered for the deferred node to collect (oldest forgotten first)."""


def is_transient(error: BaseException) -> bool:
    """Whether a storage error is worth retrying: the backend was unreachable or slow.

    True for `ConnectionError` (`BackendUnavailableError` included), `TimeoutError`,
    and redis-py's connection and timeout errors. Anything else (a bad value, a
    configuration error, a bug) fails the job at once.
    """
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    try:
        import redis.exceptions as redis_errors
    except ImportError:  # pragma: no cover - redis is a dependency
        return False
    return isinstance(error, (redis_errors.ConnectionError, redis_errors.TimeoutError))


class WriteStep(NamedTuple):
    """One retryable part of a job, with a sync and an async implementation."""

    name: str
    run: Callable[[], Any]
    arun: Callable[[], Awaitable[Any]]


@dataclass(eq=False)
class WriteJob:
    """The storage of one turn: steps run in order, each at most once successfully.

    Attributes:
        lane: Jobs of one lane run one at a time, in submission order.
        steps: What to write.
        description: Shown in logs and errors (no memory content).
        id: Unique id (the graph state keeps it for the deferred node).
        done: Steps completed so far.
    """

    lane: str
    steps: Sequence[WriteStep]
    description: str = "memory write"
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    done: int = 0


@dataclass(frozen=True)
class FailedWrite:
    """A job that failed, kept until it is retried or discarded."""

    job: WriteJob
    step: str
    error: BaseException


class MemoryWriteError(TieredMemoryError, RuntimeError):
    """Background memory writes failed; the jobs are kept in `MemoryWriter.failed`.

    Retry them with `MemoryWriter.retry_failed()` once the cause is fixed, or drop them
    with `discard_failed()`.
    """

    def __init__(self, failures: Sequence[FailedWrite]) -> None:
        self.failures = list(failures)
        parts = [
            f"{f.job.description} (step {f.step!r}): {type(f.error).__name__}: {f.error}"
            for f in self.failures
        ]
        super().__init__(
            f"{len(parts)} memory write(s) failed and are kept for retry"
            " (MemoryWriter.retry_failed()): " + "; ".join(parts)
        )


class _Failed(NamedTuple):
    failure: FailedWrite


_WRITERS: weakref.WeakSet[MemoryWriter] = weakref.WeakSet()
_ATEXIT = threading.Lock()
_atexit_registered = False


def _register(writer: MemoryWriter) -> None:
    global _atexit_registered
    with _ATEXIT:
        _WRITERS.add(writer)
        if not _atexit_registered:
            atexit.register(_flush_at_exit)
            _atexit_registered = True


def flush_memory_writes(timeout: float | None = None) -> None:
    """Wait for the pending background writes of every memory agent in this process.

    Args:
        timeout: Seconds to wait per writer (None: until done).

    Raises:
        MemoryWriteError: Writes failed (they are kept for retry).
    """
    failures: list[FailedWrite] = []
    for writer in list(_WRITERS):
        try:
            writer.flush(timeout)
        except MemoryWriteError as e:
            failures.extend(e.failures)
    if failures:
        raise MemoryWriteError(failures)


def _flush_at_exit() -> None:
    for writer in list(_WRITERS):
        try:
            writer.flush(timeout=None, at_exit=True)
        except MemoryWriteError as e:
            logger.error("At exit: %s", e)


class MemoryWriter:
    """Runs memory writes in the background, retries transient errors, loses nothing.

    Args:
        max_workers: Threads for sync runs (lanes run in parallel up to this).
        attempts: Tries per step while it fails with a transient error.
        retry_wait: First backoff in seconds (doubling, at most `max_retry_wait`).
        max_retry_wait: Longest backoff in seconds.
        is_transient: Decides which errors are retried.

    Example:
        ```python
        from langgraph_tiered_memory.agent import MemoryWriter, WriteJob, WriteStep

        written = []


        async def awrite() -> None:
            written.append("async")


        writer = MemoryWriter()
        job = WriteJob("u1", [WriteStep("put", lambda: written.append("sync"), awrite)])
        writer.submit(job)
        writer.flush()
        assert written == ["sync"] and writer.pending == 0
        ```
    """

    def __init__(
        self,
        *,
        max_workers: int = 4,
        attempts: int = 5,
        retry_wait: float = 0.1,
        max_retry_wait: float = 5.0,
        is_transient: Callable[[BaseException], bool] = is_transient,
    ) -> None:
        if max_workers < 1 or attempts < 1:
            raise ValueError(
                f"max_workers and attempts must be >= 1, got {max_workers} and {attempts}."
            )
        if retry_wait < 0 or max_retry_wait < 0:
            raise ValueError("retry_wait and max_retry_wait must be >= 0 seconds.")
        self.max_workers = max_workers
        self.attempts = attempts
        self.retry_wait = retry_wait
        self.max_retry_wait = max_retry_wait
        self.is_transient = is_transient
        self._lock = threading.Lock()
        self._lanes: dict[str, collections.deque[WriteJob]] = {}
        self._futures: dict[str, concurrent.futures.Future[Any] | asyncio.Future[Any]] = {}
        self._finished: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._failed: dict[str, FailedWrite] = {}
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        _register(self)

    # ------------------------------------------------------------------ state
    @property
    def pending(self) -> int:
        """Jobs submitted and not yet written (running or queued)."""
        with self._lock:
            return sum(len(q) for q in self._lanes.values())

    @property
    def failed(self) -> list[FailedWrite]:
        """Jobs that failed, oldest first (kept until retried or discarded)."""
        with self._lock:
            return list(self._failed.values())

    # ------------------------------------------------------------------ submit
    def submit(self, job: WriteJob) -> str:
        """Queue a job for a worker thread (sync runs).

        Returns:
            The job id.
        """
        start = self._enqueue(job, concurrent.futures.Future())
        if start:
            self._pool().submit(self._drain, job.lane)
        return job.id

    def asubmit(self, job: WriteJob) -> str:
        """Queue a job on the running event loop (async runs; call from a coroutine).

        Returns:
            The job id.
        """
        loop = asyncio.get_running_loop()
        start = self._enqueue(job, loop.create_future())
        if start:
            task = loop.create_task(self._adrain(job.lane), name=f"memory-writer:{job.lane}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return job.id

    def _enqueue(self, job: WriteJob, future: Any) -> bool:
        """Add the job to its lane; True when the lane needs a drainer."""
        with self._lock:
            self._futures[job.id] = future
            queue = self._lanes.get(job.lane)
            if queue is None:
                self._lanes[job.lane] = collections.deque([job])
                return True
            queue.append(job)
            return False

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix="memory-writer"
                )
            return self._executor

    def _next(self, lane: str, finished: WriteJob | None) -> WriteJob | None:
        """Drop the finished job from its lane; the next one, or None (lane closed)."""
        with self._lock:
            queue = self._lanes[lane]
            if finished is not None:
                queue.popleft()
            if not queue:
                del self._lanes[lane]
                return None
            return queue[0]

    def _settle(self, job: WriteJob, failure: FailedWrite | None) -> Any:
        with self._lock:
            future = self._futures.pop(job.id, None)
            if failure is None:
                self._finished[job.id] = None
                while len(self._finished) > _FINISHED_KEPT:
                    self._finished.popitem(last=False)
            else:
                self._failed[job.id] = failure
        return future

    def _drain(self, lane: str) -> None:
        """Run the lane's next job, then queue the lane again behind the other lanes.

        A lane that keeps receiving jobs (one user, many sessions) would otherwise keep
        its worker thread while other users' lanes wait. Once the interpreter is
        shutting down the pool takes no new work, so the thread finishes the lane.
        """
        job = self._next(lane, None)
        while job is not None:
            failure = self._run_steps(job)
            future = self._settle(job, failure)
            if future is not None:
                future.set_result(None if failure is None else _Failed(failure))
            job = self._next(lane, job)
            if job is None:
                return
            try:
                self._pool().submit(self._drain, lane)
                return
            except RuntimeError:  # the pool is shutting down: finish the lane here
                continue

    async def _adrain(self, lane: str) -> None:
        job = self._next(lane, None)
        while job is not None:
            failure = await self._arun_steps(job)
            future = self._settle(job, failure)
            if future is not None and not future.done():
                future.set_result(None if failure is None else _Failed(failure))
            job = self._next(lane, job)

    # ------------------------------------------------------------------ running
    def _log_retry(self, job: WriteJob, step: str) -> Callable[[RetryCallState], None]:
        def log(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            logger.warning(
                "%s: step %r failed (attempt %d of %d), retrying: %r",
                job.description, step, state.attempt_number, self.attempts, error,
            )  # fmt: skip

        return log

    def _retry_options(self, job: WriteJob, step: str) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(self.attempts),
            "wait": wait_exponential(multiplier=self.retry_wait, max=self.max_retry_wait),
            "retry": retry_if_exception(self.is_transient),
            "reraise": True,
            "before_sleep": self._log_retry(job, step),
        }

    def _failure(self, job: WriteJob, step: str, error: BaseException) -> FailedWrite:
        logger.error(
            "%s: step %r failed, the job is kept for retry: %r", job.description, step, error,
            exc_info=error,
        )  # fmt: skip
        return FailedWrite(job, step, error)

    def _run_steps(self, job: WriteJob) -> FailedWrite | None:
        while job.done < len(job.steps):
            step = job.steps[job.done]
            try:
                for attempt in Retrying(**self._retry_options(job, step.name)):
                    with attempt:
                        step.run()
            except Exception as e:  # kept and raised by flush / the deferred node
                return self._failure(job, step.name, e)
            job.done += 1
        return None

    async def _arun_steps(self, job: WriteJob) -> FailedWrite | None:
        while job.done < len(job.steps):
            step = job.steps[job.done]
            try:
                async for attempt in AsyncRetrying(**self._retry_options(job, step.name)):
                    with attempt:
                        await step.arun()
            except Exception as e:  # kept and raised by flush / the deferred node
                return self._failure(job, step.name, e)
            job.done += 1
        return None

    def run(self, job: WriteJob) -> None:
        """Run a job now in this thread, with retries (no queue).

        Raises:
            MemoryWriteError: The job failed (it is kept in `failed`).
        """
        failure = self._run_steps(job)
        self._settle(job, failure)
        if failure is not None:
            raise MemoryWriteError([failure])

    async def arun(self, job: WriteJob) -> None:
        """Async `run`: run a job now on this event loop, with retries.

        Raises:
            MemoryWriteError: The job failed (it is kept in `failed`).
        """
        failure = await self._arun_steps(job)
        self._settle(job, failure)
        if failure is not None:
            raise MemoryWriteError([failure])

    # ------------------------------------------------------------------ waiting
    def _lookup(self, job_id: str) -> tuple[str, Any]:
        with self._lock:
            if job_id in self._futures:
                return "pending", self._futures[job_id]
            if job_id in self._failed:
                return "failed", self._failed[job_id]
            if job_id in self._finished:
                del self._finished[job_id]
                return "done", None
        return "unknown", None

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Wait for one job of a sync run.

        Returns:
            True when the job was written; False when this writer does not know it
            (e.g. the run resumed in another process): the caller writes it itself.

        Raises:
            MemoryWriteError: The job failed (it is kept in `failed`).
            RuntimeError: The job belongs to an async run.
            TimeoutError: Not finished within `timeout` seconds.
        """
        state, found = self._lookup(job_id)
        if state == "pending":
            if isinstance(found, asyncio.Future):
                raise RuntimeError("This job runs on an event loop: wait for it with await_job.")
            outcome = found.result(timeout)
            if isinstance(outcome, _Failed):
                raise MemoryWriteError([outcome.failure])
            self._lookup(job_id)  # collect the finished id
            return True
        if state == "failed":
            raise MemoryWriteError([found])
        return state == "done"

    async def await_job(self, job_id: str) -> bool:
        """Async `wait` (for jobs of async runs and of sync runs alike).

        Returns:
            True when the job was written; False when this writer does not know it.

        Raises:
            MemoryWriteError: The job failed (it is kept in `failed`).
        """
        state, found = self._lookup(job_id)
        if state == "pending":
            waiter = found if isinstance(found, asyncio.Future) else asyncio.wrap_future(found)
            outcome = await asyncio.shield(waiter)
            if isinstance(outcome, _Failed):
                raise MemoryWriteError([outcome.failure])
            self._lookup(job_id)
            return True
        if state == "failed":
            raise MemoryWriteError([found])
        return state == "done"

    def _raise_failed(self) -> None:
        failures = self.failed
        if failures:
            raise MemoryWriteError(failures)

    def flush(self, timeout: float | None = None, *, at_exit: bool = False) -> None:
        """Wait for every pending job of sync runs; report failures.

        Jobs of async runs cannot be waited for from a thread: use `aflush`. At exit
        (`at_exit=True`) they are logged as unwritten instead.

        Args:
            timeout: Seconds to wait in all (None: until done).
            at_exit: Called by the exit hook.

        Raises:
            MemoryWriteError: Jobs failed (kept in `failed`).
            TimeoutError: Jobs were still pending after `timeout`.
        """
        with self._lock:
            futures = list(self._futures.values())
        threads = [f for f in futures if isinstance(f, concurrent.futures.Future)]
        loops = [f for f in futures if isinstance(f, asyncio.Future)]
        _, not_done = concurrent.futures.wait(threads, timeout)
        if not_done:
            raise TimeoutError(f"{len(not_done)} memory write(s) still pending after {timeout}s.")
        if loops and at_exit:
            logger.error(
                "At exit: %d memory write(s) of async runs were never written (their event"
                " loop stopped first); await MemoryWriter.aflush() before closing the loop.",
                len(loops),
            )
        self._raise_failed()

    async def aflush(self) -> None:
        """Wait for every pending job (of async and sync runs); report failures.

        Raises:
            MemoryWriteError: Jobs failed (kept in `failed`).
        """
        while True:
            with self._lock:
                futures = list(self._futures.values())
            if not futures:
                break
            await asyncio.gather(
                *(
                    asyncio.shield(f if isinstance(f, asyncio.Future) else asyncio.wrap_future(f))
                    for f in futures
                )
            )
        self._raise_failed()

    def retry_failed(self) -> list[str]:
        """Queue the failed jobs again (on worker threads), resuming at their failed step.

        Returns:
            The ids of the requeued jobs.
        """
        with self._lock:
            jobs = [f.job for f in self._failed.values()]
            self._failed.clear()
        return [self.submit(job) for job in jobs]

    async def aretry_failed(self) -> list[str]:
        """Queue the failed jobs again on the running event loop (for async stores).

        Returns:
            The ids of the requeued jobs.
        """
        with self._lock:
            jobs = [f.job for f in self._failed.values()]
            self._failed.clear()
        return [self.asubmit(job) for job in jobs]

    def discard_failed(self) -> list[FailedWrite]:
        """Drop the failed jobs (the only way a job is dropped unwritten).

        Returns:
            What was dropped.
        """
        with self._lock:
            dropped = list(self._failed.values())
            self._failed.clear()
        for f in dropped:
            logger.warning("Discarded a failed memory write: %s", f.job.description)
        return dropped

    def close(self) -> None:
        """Flush, then stop the worker threads.

        Raises:
            MemoryWriteError: Jobs failed (kept in `failed`).
        """
        try:
            self.flush()
        finally:
            with self._lock:
                executor, self._executor = self._executor, None
            if executor is not None:
                executor.shutdown(wait=True)
