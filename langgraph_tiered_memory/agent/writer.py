"""The memory agent's background writer: storage off the reply path, in order, nothing lost.

The agent hands each turn's storage (the interaction memory, reinforcement of the
memories the reply used, extraction) to a `MemoryWriter` as a `WriteJob` the moment the
final reply exists, and carries on: the reply is returned and streamed while the job
runs. A deferred graph node waits for the job before the run ends.

How a job runs:

- **Lanes.** Jobs carry a lane (the user's memory namespace). Jobs of one lane run one
  at a time in submission order, so a user's turns are stored in the order they were
  said and never extract against the same memories at once; different lanes run in
  parallel (sync runs: a thread pool of `max_workers` threads; async runs: one task per
  busy lane on the run's event loop, so an async run never blocks its loop).
- **Steps and retries.** A job is a list of steps. Each step is retried with `tenacity`
  (exponential backoff, `attempts` in all) while it raises a transient error
  (`is_transient`: connection errors, timeouts, `BackendUnavailableError`); a step that
  succeeded is never run again, so a retry resumes where the job failed.
- **A failed job holds its lane.** A job that fails (a non-transient error, or a
  transient one that outlasts its attempts) is logged and kept in `MemoryWriter.failed`
  together with the jobs of its lane queued behind it (kept as *held*), so a newer turn
  of the user is never written before an older one. The next job submitted to the lane
  first runs the kept jobs again, in order (a passing outage heals by itself);
  `retry_failed()` (threads) or `aretry_failed()` (the running event loop) does so at
  once, and `discard_failed()` is the only way to drop one. The graph's deferred node
  raises `MemoryWriteError` for its own job when it failed or is held; `flush()` raises
  it for all of them.
- **Erasure.** `store.erase_user(user_id)` drops the user's kept and queued jobs in
  every writer of the process, waits for a running job of the user to end its current
  step (it runs no further step), and drops jobs of the user submitted until the
  erasure ends; the receipt counts them (`"writer.jobs"`).
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
    "WriteJob",
    "WriteStep",
    "erasing_writes",
    "flush_memory_writes",
    "is_transient",
]

logger = logging.getLogger("langgraph_tiered_memory.agent.builder")

_FINISHED_KEPT = 100_000
"""Settled job ids remembered for `status` and the deferred node (oldest forgotten first)."""

HELD_STEP = "(held)"
"""The `FailedWrite.step` of a job kept behind a failed job of its lane."""


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


class _Failed(NamedTuple):
    failure: FailedWrite


_Outcome = FailedWrite | Literal["dropped"] | None
"""How a run of a job ended: None (written), kept as failed, or dropped by an erasure."""

_WRITERS: weakref.WeakSet[MemoryWriter] = weakref.WeakSet()
_REGISTRY = threading.Lock()
_atexit_registered = False
_ERASING: dict[str, list[int]] = {}
"""User ids being erased -> [erasures in progress, jobs dropped meanwhile]."""


def _register(writer: MemoryWriter) -> None:
    global _atexit_registered
    with _REGISTRY:
        _WRITERS.add(writer)
        if not _atexit_registered:
            atexit.register(_flush_at_exit)
            _atexit_registered = True


def _erased(job: WriteJob) -> bool:
    """Whether the job's user is being erased (its job must not write)."""
    return job.user is not None and job.user in _ERASING


def _count_dropped(user: str | None, n: int = 1) -> None:
    with _REGISTRY:
        entry = _ERASING.get(user or "")
        if entry is not None:
            entry[1] += n


def _resolve(future: Any, outcome: Any) -> None:
    """Settle a job's future from any thread (an event loop's future through its loop)."""
    if isinstance(future, concurrent.futures.Future):
        future.set_result(outcome)
    elif not future.get_loop().is_closed():
        future.get_loop().call_soon_threadsafe(lambda: future.done() or future.set_result(outcome))


@contextlib.contextmanager
def erasing_writes(user_id: str, *, dry_run: bool = False) -> Iterator[Callable[[], int]]:
    """While erasing `user_id`: no writer of this process writes the user's data.

    On entry every writer drops the user's kept and queued jobs and waits for its
    running ones to stop (they stop at their next step); until exit, jobs of the user
    are dropped when submitted. Yields a function returning how many jobs were dropped
    so far (with `dry_run`: how many would be dropped now; nothing is dropped).

    Raises:
        RuntimeError: A job of the user runs on the event loop of this thread, which
            cannot advance while this waits (use the store's `aerase_user`).
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
        self._settled = threading.Condition(self._lock)
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
        """Jobs that failed or are held behind one, oldest first (kept until retried)."""
        with self._lock:
            return list(self._failed.values())

    def status(self, job_id: str) -> Literal["pending", "failed", "done", "unknown"]:
        """Where a job is: queued or running, kept (failed or held), settled, or unknown.

        "done" is a job written, discarded or dropped by an erasure; "unknown" a job
        this writer never had (e.g. it was submitted in another process).
        """
        return self._lookup(job_id)[0]

    # ------------------------------------------------------------------ submit
    def submit(self, job: WriteJob) -> str:
        """Queue a job for a worker thread (sync runs).

        The lane's kept jobs (failed or held) are queued again first, in order.

        Returns:
            The job id.
        """
        if self._enqueue(job, concurrent.futures.Future):
            self._pool().submit(self._drain, job.lane)
        return job.id

    def asubmit(self, job: WriteJob) -> str:
        """Queue a job on the running event loop (async runs; call from a coroutine).

        Returns:
            The job id.
        """
        loop = asyncio.get_running_loop()
        if self._enqueue(job, loop.create_future):
            task = loop.create_task(self._adrain(job.lane), name=f"memory-writer:{job.lane}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return job.id

    def _enqueue(self, job: WriteJob, new_future: Callable[[], Any]) -> bool:
        """Add the job (after its lane's kept jobs) to its lane; True when it needs a drainer."""
        with self._lock:
            if _erased(job):
                self._finish(job.id)
                _count_dropped(job.user)
                return False
            queue = self._lanes.get(job.lane)
            if queue is not None:
                queue.append(job)
                self._futures[job.id] = new_future()
                return False
            kept = [f.job for f in self._failed.values() if f.job.lane == job.lane]
            for earlier in [*kept, job]:
                self._failed.pop(earlier.id, None)
                self._futures[earlier.id] = new_future()
            self._lanes[job.lane] = collections.deque([*kept, job])
            return True

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix="memory-writer"
                )
            return self._executor

    def _head(self, lane: str) -> WriteJob | None:
        """The lane's next job, or None (the lane is closed)."""
        with self._lock:
            queue = self._lanes.get(lane)
            if queue:
                return queue[0]
            self._lanes.pop(lane, None)
            return None

    def _finish(self, job_id: str) -> None:
        """Remember a settled job (lock held)."""
        self._finished[job_id] = None
        while len(self._finished) > _FINISHED_KEPT:
            self._finished.popitem(last=False)

    def _settle(self, job: WriteJob, outcome: _Outcome) -> None:
        """End the lane's head job: written or dropped, or kept with the jobs behind it."""
        with self._lock:
            queue = self._lanes[job.lane]
            queue.popleft()
            settled: list[tuple[str, Any]] = []
            if isinstance(outcome, FailedWrite):
                self._failed[job.id] = outcome
                settled.append((job.id, _Failed(outcome)))
                held = RuntimeError(f"held behind the failed {job.description}")
                for later in queue:
                    failure = FailedWrite(later, HELD_STEP, held)
                    self._failed[later.id] = failure
                    settled.append((later.id, _Failed(failure)))
                del self._lanes[job.lane]  # a later submit opens it again, kept jobs first
            else:
                self._finish(job.id)
                settled.append((job.id, None))
            futures = [(self._futures.pop(i, None), result) for i, result in settled]
            if outcome == "dropped":
                _count_dropped(job.user)
            self._settled.notify_all()
        for future, result in futures:
            if future is not None:
                _resolve(future, result)

    def _drain(self, lane: str) -> None:
        """Run the lane's next job, then queue the lane again behind the other lanes.

        A lane that keeps receiving jobs (one user, many sessions) would otherwise keep
        its worker thread while other users' lanes wait. Once the interpreter is
        shutting down the pool takes no new work, so the thread finishes the lane.
        """
        job = self._head(lane)
        while job is not None:
            outcome = self._run_steps(job)
            self._settle(job, outcome)
            if isinstance(outcome, FailedWrite):
                return  # the lane closed with it
            job = self._head(lane)
            if job is None:
                return
            try:
                self._pool().submit(self._drain, lane)
                return
            except RuntimeError:  # the pool is shutting down: finish the lane here
                continue

    async def _adrain(self, lane: str) -> None:
        job = self._head(lane)
        while job is not None:
            outcome = await self._arun_steps(job)
            self._settle(job, outcome)
            job = None if isinstance(outcome, FailedWrite) else self._head(lane)

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

    def _failure(self, job: WriteJob, step: str, error: BaseException) -> _Outcome:
        if _erased(job):
            return "dropped"
        logger.error(
            "%s: step %r failed, the job is kept for retry: %r", job.description, step, error,
            exc_info=error,
        )  # fmt: skip
        return FailedWrite(job, step, error)

    def _run_steps(self, job: WriteJob) -> _Outcome:
        while job.done < len(job.steps):
            if _erased(job):
                return "dropped"
            step = job.steps[job.done]
            try:
                for attempt in Retrying(**self._retry_options(job, step.name)):
                    with attempt:
                        step.run()
            except Exception as e:  # kept and raised by flush / the deferred node
                return self._failure(job, step.name, e)
            job.done += 1
        return None

    async def _arun_steps(self, job: WriteJob) -> _Outcome:
        while job.done < len(job.steps):
            if _erased(job):
                return "dropped"
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
        """Submit a job and wait for it (behind the jobs of its lane).

        Raises:
            MemoryWriteError: The job failed or is held (it is kept in `failed`).
        """
        self.wait(self.submit(job))

    async def arun(self, job: WriteJob) -> None:
        """Async `run`: submit a job on this event loop and await it.

        Raises:
            MemoryWriteError: The job failed or is held (it is kept in `failed`).
        """
        await self.await_job(self.asubmit(job))

    # ------------------------------------------------------------------ erasure
    def _user_jobs(self, user: str) -> int:
        """The user's jobs, pending or kept."""
        with self._lock:
            queued = [j for q in self._lanes.values() for j in q]
            kept = [f.job for f in self._failed.values()]
        return sum(j.user == user for j in [*queued, *kept])

    def _drop_user(self, user: str) -> None:
        """Drop the user's kept and queued jobs; wait for its running ones to stop."""
        with self._lock:
            heads = [q[0] for q in self._lanes.values() if q[0].user == user]
            running = [j.id for j in heads if _in_flight(self._futures[j.id])]
            _check_loop([self._futures[i] for i in running])
            dropped = [i for i, f in self._failed.items() if f.job.user == user]
            for i in dropped:
                del self._failed[i]
            futures = []
            for lane, queue in list(self._lanes.items()):
                for job in [j for j in queue if j.user == user and j.id not in running]:
                    queue.remove(job)
                    dropped.append(job.id)
                    futures.append(self._futures.pop(job.id))
                if not queue:
                    del self._lanes[lane]  # its drainer's event loop is closed
            for i in dropped:
                self._finish(i)
            _count_dropped(user, len(dropped))
        for future in futures:
            _resolve(future, None)
        with self._lock:  # a running job stops at its next step (see `_run_steps`)
            self._settled.wait_for(lambda: not any(i in self._futures for i in running))

    # ------------------------------------------------------------------ waiting
    def _lookup(self, job_id: str) -> tuple[Literal["pending", "failed", "done", "unknown"], Any]:
        with self._lock:
            if job_id in self._futures:
                return "pending", self._futures[job_id]
            if job_id in self._failed:
                return "failed", self._failed[job_id]
            return ("done" if job_id in self._finished else "unknown"), None

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Wait for one job of a sync run.

        Returns:
            True when the job was settled (written, or dropped by an erasure); False
            when this writer does not know it (e.g. the run resumed in another
            process): the caller writes it itself.

        Raises:
            MemoryWriteError: The job failed or is held (it is kept in `failed`).
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
            return True
        if state == "failed":
            raise MemoryWriteError([found])
        return state == "done"

    async def await_job(self, job_id: str) -> bool:
        """Async `wait` (for jobs of async runs and of sync runs alike).

        Returns:
            True when the job was settled; False when this writer does not know it.

        Raises:
            MemoryWriteError: The job failed or is held (it is kept in `failed`).
        """
        state, found = self._lookup(job_id)
        if state == "pending":
            waiter = found if isinstance(found, asyncio.Future) else asyncio.wrap_future(found)
            outcome = await asyncio.shield(waiter)
            if isinstance(outcome, _Failed):
                raise MemoryWriteError([outcome.failure])
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

    def _take_failed(self) -> list[WriteJob]:
        with self._lock:
            jobs = [f.job for f in self._failed.values()]
            self._failed.clear()
        return jobs

    def retry_failed(self) -> list[str]:
        """Queue the kept jobs again (on worker threads), in order, at their failed step.

        Returns:
            The ids of the requeued jobs.
        """
        return [self.submit(job) for job in self._take_failed()]

    async def aretry_failed(self) -> list[str]:
        """Queue the kept jobs again on the running event loop (for async stores).

        Returns:
            The ids of the requeued jobs.
        """
        return [self.asubmit(job) for job in self._take_failed()]

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


def _in_flight(future: Any) -> bool:
    """Whether a job's drainer can still run it (an event loop's job: the loop is open)."""
    return not isinstance(future, asyncio.Future) or not future.get_loop().is_closed()


def _check_loop(futures: Sequence[Any]) -> None:
    """Refuse to wait, on an event loop, for a job that only this loop can advance."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return
    if any(isinstance(f, asyncio.Future) and f.get_loop() is running for f in futures):
        raise RuntimeError(
            "erase_user would wait for a memory write of this user that runs on this"
            " event loop: call `await store.aerase_user(...)` instead."
        )
