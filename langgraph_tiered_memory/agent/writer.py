"""The memory agent's background writer: storage off the reply path, in order, nothing lost.

The agent hands each turn's storage to a `MemoryWriter` as a `WriteJob` the moment the
final reply exists; the deferred graph node waits for the job before the run ends.

- **Lanes.** Jobs of one lane (the user's memory namespace) run one at a time in
  submission order; lanes run in parallel: on `max_workers` threads (`submit`), or as a
  task on the run's event loop (`asubmit`: an async run never blocks its loop).
- **Steps.** Each step is retried with `tenacity` while it raises a transient error
  (`is_transient`); a step that succeeded never runs again.
- **A failed job holds its lane.** It is kept in `failed`, with the lane's later jobs
  (held), until the lane's next job or `retry_failed()` runs them again in order, or
  `discard_failed()` drops them. Waiting for a kept job raises `MemoryWriteError`.
- **Bounded.** A writer holds at most `max_jobs` unwritten jobs (pending or kept);
  `submit` raises `MemoryWriterFullError` past that, so the turn stays in the graph
  state and nothing the writer accepted is lost.
- **Erasure.** `erasing_writes(user)` drops the user's jobs in every writer, waits for a
  running one to end its current step, and drops the user's jobs submitted meanwhile.
- **Exit.** A lane whose event loop shuts down (`asyncio.run` ends) moves to the
  worker threads. Worker threads finish their lanes at interpreter exit; an `atexit`
  hook then flushes every writer and logs failures and jobs left on a stopped loop.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import logging
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

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
    "HELD_STEP",
    "FailedWrite",
    "MemoryWriteError",
    "MemoryWriter",
    "MemoryWriterFullError",
    "WriteJob",
    "WriteStep",
    "erasing_writes",
    "flush_memory_writes",
    "is_transient",
]

logger = logging.getLogger("langgraph_tiered_memory.agent.builder")

HELD_STEP = "(held)"
"""The `FailedWrite.step` of a job kept behind a failed job of its lane."""


def is_transient(error: BaseException) -> bool:
    """Whether a storage error is worth retrying: the backend was unreachable or slow.

    True for `ConnectionError` (`BackendUnavailableError` included), `TimeoutError`,
    and redis-py's connection and timeout errors. Anything else (a bad value, a
    configuration error, a bug) fails the job at once.
    """
    import redis.exceptions as redis_errors

    transient = (
        ConnectionError,
        TimeoutError,
        redis_errors.ConnectionError,
        redis_errors.TimeoutError,
    )
    return isinstance(error, transient)


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
        user: The user whose data the job writes: `erase_user` drops the job.
    """

    lane: str
    steps: Sequence[WriteStep]
    description: str = "memory write"
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    done: int = 0
    user: str | None = None


@dataclass(frozen=True)
class FailedWrite:
    """A job that failed (or is held behind one), kept until it is retried or discarded."""

    job: WriteJob
    step: str
    """The step that failed, or `HELD_STEP`."""
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


class MemoryWriterFullError(TieredMemoryError, RuntimeError):
    """The writer already holds `max_jobs` unwritten jobs; the new one was not accepted."""


@dataclass
class _Lane:
    loop: asyncio.AbstractEventLoop | None
    """The event loop whose task drains the lane (None: worker threads)."""
    jobs: collections.deque[WriteJob]

    def alive(self) -> bool:
        """Whether its drainer can still run (an event loop's: the loop is open)."""
        return self.loop is None or not self.loop.is_closed()


_WRITERS: weakref.WeakSet[MemoryWriter] = weakref.WeakSet()
_REGISTRY = threading.Lock()
_ERASING: dict[str, list[int]] = {}
"""User ids being erased -> [erasures in progress, jobs dropped meanwhile]."""


def _erased(job: WriteJob) -> bool:
    """Whether the job's user is being erased (its job must not write)."""
    return job.user is not None and job.user in _ERASING


def _count_dropped(user: str | None, n: int = 1) -> None:
    with _REGISTRY:
        entry = _ERASING.get(user or "")
        if entry is not None:
            entry[1] += n


def _future(result: bool | None = None, error: BaseException | None = None) -> Any:
    """A job's future; running, so that no waiter's cancellation can cancel it."""
    future: concurrent.futures.Future[bool] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    if error is not None:
        future.set_exception(error)
    elif result is not None:
        future.set_result(result)
    return future


def _running_loop() -> asyncio.AbstractEventLoop | None:
    with contextlib.suppress(RuntimeError):
        return asyncio.get_running_loop()
    return None


@contextlib.contextmanager
def erasing_writes(user_id: str, *, dry_run: bool = False) -> Iterator[Callable[[], int]]:
    """While erasing `user_id`: no writer of this process writes the user's data.

    On entry every writer drops the user's kept and queued jobs and waits for its
    running ones to stop (they stop at their next step); until exit, jobs of the user
    are dropped when submitted. Yields a function returning how many jobs were dropped
    so far (with `dry_run`: how many would be dropped now; nothing is dropped).

    Raises:
        RuntimeError: A job of the user runs on the event loop of this thread, which
            cannot advance while this waits (use `privacy.aerase_user`).
    """
    writers = list(_WRITERS)
    if dry_run:
        found = sum(w._user_jobs(user_id) for w in writers)
        yield lambda: found
        return
    with _REGISTRY:
        entry = _ERASING.setdefault(user_id, [0, 0])
        entry[0] += 1
    try:
        for writer in writers:
            writer._drop_user(user_id)
        yield lambda: entry[1]
    finally:
        with _REGISTRY:
            entry[0] -= 1
            if entry[0] == 0:
                del _ERASING[user_id]


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


@atexit.register
def _flush_at_exit() -> None:
    for writer in list(_WRITERS):
        try:
            writer.flush(timeout=None, at_exit=True)
        except MemoryWriteError as e:
            logger.error("At exit: %s", e)


class MemoryWriter:
    """Runs memory writes in the background, in order per lane, retries, loses nothing.

    Args:
        max_workers: Threads for sync runs (lanes run in parallel up to this).
        max_jobs: Unwritten jobs (pending or kept) the writer holds at most; `submit`
            raises `MemoryWriterFullError` past it. Also how many settled job ids
            `status` remembers.
        attempts: Tries per step while it fails with a transient error.
        retry_wait: First backoff in seconds (doubling, at most `max_retry_wait`).
        max_retry_wait: Longest backoff in seconds.
        is_transient: Decides which errors are retried.

    Example:
        ```python
        from langgraph_tiered_memory.agent.builder import MemoryWriter, WriteJob, WriteStep

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
        max_jobs: int = 10_000,
        attempts: int = 5,
        retry_wait: float = 0.1,
        max_retry_wait: float = 5.0,
        is_transient: Callable[[BaseException], bool] = is_transient,
    ) -> None:
        if min(max_workers, max_jobs, attempts) < 1:
            raise ValueError(
                "max_workers, max_jobs and attempts must be >= 1, got"
                f" {max_workers}, {max_jobs} and {attempts}."
            )
        if retry_wait < 0 or max_retry_wait < 0:
            raise ValueError("retry_wait and max_retry_wait must be >= 0 seconds.")
        self.max_workers = max_workers
        self.max_jobs = max_jobs
        self.attempts = attempts
        self.retry_wait = retry_wait
        self.max_retry_wait = max_retry_wait
        self.is_transient = is_transient
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._lanes: dict[str, _Lane] = {}
        self._pending: dict[str, tuple[WriteJob, concurrent.futures.Future[bool]]] = {}
        self._failed: dict[str, FailedWrite] = {}
        self._finished: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        with _REGISTRY:
            _WRITERS.add(self)

    # ------------------------------------------------------------------ state
    @property
    def pending(self) -> int:
        """Jobs submitted and not yet written (running or queued)."""
        with self._lock:
            return len(self._pending)

    @property
    def failed(self) -> list[FailedWrite]:
        """Jobs that failed or are held behind one, oldest first (kept until retried)."""
        with self._lock:
            return list(self._failed.values())

    def status(self, job_id: str) -> Literal["pending", "failed", "done", "unknown"]:
        """Where a job is: queued or running, kept (failed or held), settled, or unknown.

        "done" is a job written, discarded or dropped by an erasure (among the last
        `max_jobs` settled); "unknown" a job this writer never had (e.g. it was
        submitted in another process).
        """
        with self._lock:
            if job_id in self._pending:
                return "pending"
            if job_id in self._failed:
                return "failed"
            return "done" if job_id in self._finished else "unknown"

    # ------------------------------------------------------------------ submit
    def submit(self, job: WriteJob) -> str:
        """Queue a job for a worker thread (sync runs); the lane's kept jobs go first.

        Returns:
            The job id.

        Raises:
            MemoryWriterFullError: The writer holds `max_jobs` unwritten jobs.
        """
        self._queue(job.lane, None, job)
        return job.id

    def asubmit(self, job: WriteJob) -> str:
        """`submit` for async runs: the job runs on the running event loop (call it there)."""
        self._queue(job.lane, asyncio.get_running_loop(), job)
        return job.id

    def _queue(self, name: str, loop: Any, job: WriteJob | None) -> list[str]:
        """Queue `job` in lane `name` (an idle lane: behind its kept jobs, with a drainer)."""
        with self._lock:
            if job is not None and _erased(job):
                self._finish(job.id)
                _count_dropped(job.user)
                return []
            if job is not None and len(self._pending) + len(self._failed) >= self.max_jobs:
                raise MemoryWriterFullError(
                    f"The memory writer holds {self.max_jobs} unwritten jobs (max_jobs): the"
                    " store is not keeping up or keeps failing (see MemoryWriter.failed)."
                    " Fix the store and call retry_failed() or discard_failed(), or create"
                    " the writer with a larger max_jobs."
                )
            lane = self._lanes.get(name)
            jobs = [f.job for f in self._failed.values() if f.job.lane == name and lane is None]
            jobs += [job] if job is not None else []
            for queued in jobs:
                self._failed.pop(queued.id, None)
                self._pending[queued.id] = (queued, _future())
            if lane is not None:
                lane.jobs.extend(jobs)
            elif jobs:
                self._lanes[name] = _Lane(loop, collections.deque(jobs))
        if lane is None and jobs:
            if loop is None:
                self._pool().submit(self._drain, name)
            else:
                task = loop.create_task(self._adrain(name), name=f"memory-writer:{name}")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        return [queued.id for queued in jobs]

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:  # made at first use: `close` ends it, a later submit makes a new one
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix="memory-writer"
                )
            return self._executor

    # ------------------------------------------------------------------ running
    def _head(self, name: str) -> WriteJob | None:
        """The lane's next job, or None (the lane is closed)."""
        with self._lock:
            lane = self._lanes.get(name)
            if lane is not None and lane.jobs:
                return lane.jobs[0]
            self._lanes.pop(name, None)
            return None

    def _finish(self, job_id: str) -> None:
        """Remember a settled job (lock held)."""
        self._finished[job_id] = None
        while len(self._finished) > self.max_jobs:
            self._finished.popitem(last=False)

    def _settle(self, job: WriteJob, failure: FailedWrite | None) -> bool:
        """End the lane's head job (a failure keeps it, and closes the lane); False: closed."""
        with self._lock:
            lane = self._lanes[job.lane]
            lane.jobs.popleft()
            if failure is not None:
                held = RuntimeError(f"held behind the failed {job.description}")
                kept = [failure, *(FailedWrite(later, HELD_STEP, held) for later in lane.jobs)]
                self._failed.update((f.job.id, f) for f in kept)
                del self._lanes[job.lane]  # a later submit opens it again, kept jobs first
                ends: list[tuple[Any, MemoryWriteError | None]] = [
                    (self._pending.pop(f.job.id)[1], MemoryWriteError([f])) for f in kept
                ]
            else:
                self._finish(job.id)
                if job.done < len(job.steps):  # stopped by an erasure
                    _count_dropped(job.user)
                ends = [(self._pending.pop(job.id)[1], None)]
            self._settled.notify_all()
        for future, error in ends:
            future.set_exception(error) if error else future.set_result(True)
        return failure is None

    def _drain(self, name: str) -> None:
        """Run the lane's next job, then queue the lane behind the other lanes (fairness)."""
        while (job := self._head(name)) is not None:
            if not self._settle(job, self._run_steps(job)):
                return
            try:
                self._pool().submit(self._drain, name)
                return
            except RuntimeError:  # the pool is shutting down: finish the lane here
                continue

    async def _adrain(self, name: str) -> None:
        try:
            while (job := self._head(name)) is not None:
                if not self._settle(job, await self._arun_steps(job)):
                    return
        except asyncio.CancelledError:  # the loop shuts down: worker threads finish the lane
            with self._lock:
                self._lanes[name].loop = None
            self._pool().submit(self._drain, name)
            raise

    def _retrying(self, job: WriteJob, step: str, kind: type[Retrying | AsyncRetrying]) -> Any:
        def log(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            logger.warning(
                "%s: step %r failed (attempt %d of %d), retrying: %r",
                job.description, step, state.attempt_number, self.attempts, error,
            )  # fmt: skip

        return kind(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.retry_wait, max=self.max_retry_wait),
            retry=retry_if_exception(self.is_transient),
            reraise=True,
            before_sleep=log,
        )

    def _next_step(self, job: WriteJob) -> WriteStep | None:
        """The job's next step; None when it is written or its user is being erased."""
        return None if job.done == len(job.steps) or _erased(job) else job.steps[job.done]

    def _failure(self, job: WriteJob, step: str, error: Exception) -> FailedWrite | None:
        if _erased(job):
            return None  # dropped: `_settle` counts it
        logger.error(
            "%s: step %r failed, the job is kept for retry: %r", job.description, step, error,
            exc_info=error,
        )  # fmt: skip
        return FailedWrite(job, step, error)

    def _run_steps(self, job: WriteJob) -> FailedWrite | None:
        while (step := self._next_step(job)) is not None:
            try:
                self._retrying(job, step.name, Retrying)(step.run)
            except Exception as e:  # kept and raised by flush / the deferred node
                return self._failure(job, step.name, e)
            job.done += 1
        return None

    async def _arun_steps(self, job: WriteJob) -> FailedWrite | None:
        while (step := self._next_step(job)) is not None:
            try:
                await self._retrying(job, step.name, AsyncRetrying)(step.arun)
            except Exception as e:  # kept and raised by flush / the deferred node
                return self._failure(job, step.name, e)
            job.done += 1
        return None

    # ------------------------------------------------------------------ erasure
    def _user_jobs(self, user: str) -> int:
        """The user's jobs, pending or kept."""
        with self._lock:
            jobs = [j for j, _ in self._pending.values()] + [f.job for f in self._failed.values()]
        return sum(j.user == user for j in jobs)

    def _drop_user(self, user: str) -> None:
        """Drop the user's kept and queued jobs; wait for its running ones to stop."""
        with self._lock:
            lanes = [lane for lane in self._lanes.values() if lane.jobs]
            running = [lane.jobs[0] for lane in lanes if lane.jobs[0].user == user and lane.alive()]
            if any(self._lanes[j.lane].loop is _running_loop() is not None for j in running):
                raise RuntimeError(
                    "erase_user would wait for a memory write of this user that runs on this"
                    " event loop: call `await aerase_user(store, ...)` instead."
                )
            dropped = [i for i, f in self._failed.items() if f.job.user == user]
            for i in dropped:
                del self._failed[i]
            for name, lane in list(self._lanes.items()):
                for job in [j for j in lane.jobs if j.user == user and j not in running]:
                    lane.jobs.remove(job)
                    dropped.append(job.id)
                if not lane.jobs and not lane.alive():
                    del self._lanes[name]
            futures = [self._pending.pop(i)[1] for i in dropped if i in self._pending]
            for i in dropped:
                self._finish(i)
            _count_dropped(user, len(dropped))
        for future in futures:
            future.set_result(True)
        with self._lock:  # a running job stops at its next step (see `_next_step`)
            self._settled.wait_for(lambda: not any(j.id in self._pending for j in running))

    # ------------------------------------------------------------------ waiting
    def _lookup(self, job_id: str) -> tuple[Any, asyncio.AbstractEventLoop | None]:
        """The job's future (settled ones: done at once) and the loop that runs it."""
        with self._lock:
            if job_id in self._pending:
                job, future = self._pending[job_id]
                return future, self._lanes[job.lane].loop
            if job_id in self._failed:
                return _future(error=MemoryWriteError([self._failed[job_id]])), None
            return _future(job_id in self._finished), None

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Wait for one job (on an event loop: `await_job`).

        Returns:
            True when the job was settled (written, or dropped by an erasure); False
            when this writer does not know it (e.g. it was submitted in another process).

        Raises:
            MemoryWriteError: The job failed or is held (it is kept in `failed`).
            RuntimeError: The job runs on the event loop of this thread.
            TimeoutError: Not finished within `timeout` seconds.
        """
        future, loop = self._lookup(job_id)
        if loop is not None and loop is _running_loop():
            raise RuntimeError("This job runs on this event loop: wait for it with await_job.")
        return bool(future.result(timeout))

    async def await_job(self, job_id: str) -> bool:
        """`wait` without blocking the running event loop (for jobs of any run)."""
        return bool(await asyncio.wrap_future(self._lookup(job_id)[0]))

    def _raise_failed(self) -> None:
        failures = self.failed
        if failures:
            raise MemoryWriteError(failures)

    def flush(self, timeout: float | None = None, *, at_exit: bool = False) -> None:
        """Wait for every pending job; report failures.

        Jobs on an event loop that is stopped or runs in this thread cannot advance
        while this waits: they are not waited for (`await aflush()` on that loop); at
        exit (`at_exit=True`) they are logged as unwritten.

        Args:
            timeout: Seconds to wait in all (None: until done).
            at_exit: Called by the exit hook.

        Raises:
            MemoryWriteError: Jobs failed (kept in `failed`).
            TimeoutError: Jobs were still pending after `timeout`.
        """
        here = _running_loop()
        with self._lock:
            jobs = [(f, self._lanes[j.lane].loop) for j, f in self._pending.values()]
        waited = [f for f, loop in jobs if loop is None or (loop.is_running() and loop is not here)]
        _, not_done = concurrent.futures.wait(waited, timeout)
        if not_done:
            raise TimeoutError(f"{len(not_done)} memory write(s) still pending after {timeout}s.")
        if at_exit and len(waited) < len(jobs):
            logger.error(
                "At exit: %d memory write(s) of async runs were never written (their event"
                " loop stopped first); await MemoryWriter.aflush() before closing the loop.",
                len(jobs) - len(waited),
            )
        self._raise_failed()

    async def aflush(self) -> None:
        """`flush` without blocking the running event loop (no timeout)."""
        await asyncio.to_thread(self.flush)

    def retry_failed(self) -> list[str]:
        """Queue the kept jobs again (on worker threads), in order; returns their ids."""
        return self._requeue(None)

    async def aretry_failed(self) -> list[str]:
        """`retry_failed` on the running event loop (for async stores)."""
        return self._requeue(asyncio.get_running_loop())

    def _requeue(self, loop: asyncio.AbstractEventLoop | None) -> list[str]:
        with self._lock:
            lanes = dict.fromkeys(f.job.lane for f in self._failed.values())
        return [i for name in lanes for i in self._queue(name, loop, None)]

    def discard_failed(self, job_ids: Collection[str] | None = None) -> list[FailedWrite]:
        """Drop kept jobs (the only way a job is dropped unwritten, besides erasure).

        Args:
            job_ids: The jobs to drop (None: every kept job). Jobs held behind a
                dropped one run with the next job of their lane, or `retry_failed()`.

        Returns:
            What was dropped.
        """
        with self._lock:
            dropped = [f for i, f in self._failed.items() if job_ids is None or i in job_ids]
            for f in dropped:
                del self._failed[f.job.id]
                self._finish(f.job.id)
        for f in dropped:
            logger.warning("Discarded a failed memory write: %s", f.job.description)
        return dropped

    def close(self) -> None:
        """`flush`, then stop the worker threads."""
        try:
            self.flush()
        finally:
            with self._lock:
                executor, self._executor = self._executor, None
            if executor is not None:
                executor.shutdown(wait=True)
