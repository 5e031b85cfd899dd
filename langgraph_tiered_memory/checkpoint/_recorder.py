"""Batched session records: what the savers write to the session registry.

A graph writes a checkpoint per super-step; the registry only needs the latest
activity of each session, so records are coalesced and written by a timer `interval`
seconds after the first pending one, in one round trip (plus one for the owners'
indexes and redis-py's check that the record script is loaded). Reads of the registry,
deletes and `close()` write pending records first, so they see every acknowledged
checkpoint.

Coalescing never decides ownership by timing: a pending record keeps every user id it
saw, oldest first, so the registry gives the session to the first one (if it has no
owner yet) and records the others as participants. The newest known message count wins.

Records whose write fails stay pending and are retried every `interval` seconds.
A background failure is logged on `langgraph_tiered_memory.checkpoint`: one warning
per streak of failures, one info record when the pending records are written again.
A synchronous flush raises the failure as well.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from langgraph_tiered_memory.checkpoint._outage import outage_cause
from langgraph_tiered_memory.checkpoint.registry import AsyncSessionRegistry, SessionRegistry
from langgraph_tiered_memory.errors import BackendUnavailableError
from langgraph_tiered_memory.privacy._redact import mask_urls_in

_log = logging.getLogger("langgraph_tiered_memory.checkpoint")

_Pending = tuple[tuple[str, ...], int | None]
"""A pending record: the user ids seen, oldest first, and the newest known message count."""
_Records = dict[str, _Pending]


class _Streak:
    """Logs failed registry writes once per streak, and the recovery."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.failures = 0

    def failed(self, records: int, error: BaseException) -> None:
        self.failures += 1
        if self.failures == 1:
            _log.warning(
                "Could not record %d session(s) in the session registry: %s. The checkpoints"
                " are stored; the records stay pending and are retried every %g s.",
                records,
                mask_urls_in(str(error)),
                self.interval,
            )

    def succeeded(self, records: int) -> None:
        if self.failures:
            _log.info(
                "Recorded %d pending session(s) in the session registry after %d failed"
                " attempt(s).",
                records,
                self.failures,
            )
            self.failures = 0


def _combined(older: _Pending, newer: _Pending) -> _Pending:
    """One record of two: the older one's users first, the newer known count."""
    users = older[0] + tuple(u for u in newer[0] if u not in older[0])
    return users, (older[1] if newer[1] is None else newer[1])


def _merge(pending: _Records, session_id: str, user_id: str | None, count: int | None) -> None:
    """Coalesce a record into `pending`: a later user never displaces an earlier one."""
    record: _Pending = ((user_id,) if user_id else (), count)
    previous = pending.get(session_id)
    pending[session_id] = record if previous is None else _combined(previous, record)


def _requeue(pending: _Records, batch: _Records) -> None:
    """Put a failed batch back: its users come first, records queued since are newer."""
    for sid, rec in batch.items():
        newer = pending.get(sid)
        pending[sid] = rec if newer is None else _combined(rec, newer)


def _failed(streak: _Streak, count: int, error: BaseException, raise_errors: bool) -> None:
    """Count a failed write in the streak, then re-raise it when the caller waits for it."""
    streak.failed(count, error)
    if not raise_errors:
        return
    cause = outage_cause(error)
    if cause is None:
        raise error
    raise BackendUnavailableError(
        f"Redis is unreachable while recording sessions ({type(cause).__name__}: {cause})."
        " The checkpoints are stored; the records stay pending and are written once Redis"
        " answers."
    ) from error


class Recorder:
    """Batches session records: at most one registry write per `interval` seconds."""

    def __init__(self, registry: SessionRegistry, interval: float = 1.0) -> None:
        self._registry = registry
        self._interval = interval
        self._pending: _Records = {}
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._timer: threading.Timer | None = None
        self._streak = _Streak(interval)

    def _start_timer(self) -> None:
        # Called with self._lock held.
        self._timer = threading.Timer(self._interval, self._on_timer)
        self._timer.daemon = True
        self._timer.start()

    def submit(self, session_id: str, user_id: str | None, message_count: int | None) -> None:
        """Queue a record; the timer writes it within `interval` seconds."""
        with self._lock:
            _merge(self._pending, session_id, user_id, message_count)
            if self._timer is None:
                self._start_timer()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        self.flush(raise_errors=False)

    def flush(self, *, raise_errors: bool = True) -> None:
        """Write every pending record now (one pipeline).

        On failure the records stay pending (a timer retries them); the error is raised
        unless this is the timer's background flush.
        """
        with self._flushing:
            with self._lock:
                batch, self._pending = self._pending, {}
            if not batch:
                return
            try:
                self._registry.record_many(batch)
            except BaseException as e:
                with self._lock:
                    _requeue(self._pending, batch)
                    if self._timer is None:  # retry later even if nothing else is written
                        self._start_timer()
                _failed(self._streak, len(batch), e, raise_errors)
                return
            self._streak.succeeded(len(batch))

    def close(self) -> None:
        """Stop the timer and write what is pending."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self.flush()


class AsyncRecorder:
    """The asyncio twin of `Recorder`: records batched by a loop timer."""

    def __init__(self, registry: AsyncSessionRegistry, interval: float = 1.0) -> None:
        self._registry = registry
        self._interval = interval
        self._pending: _Records = {}
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._flushing = asyncio.Lock()
        self._streak = _Streak(interval)

    def submit(self, session_id: str, user_id: str | None, message_count: int | None) -> None:
        """Queue a record; the loop timer writes it within `interval` seconds."""
        _merge(self._pending, session_id, user_id, message_count)
        self._schedule()

    def _schedule(self) -> None:
        if self._handle is None:
            loop = asyncio.get_running_loop()
            self._handle = loop.call_later(self._interval, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        self._task = asyncio.get_running_loop().create_task(self.flush(raise_errors=False))

    async def flush(self, *, raise_errors: bool = True) -> None:
        """Write every pending record now; failed records stay pending and are retried."""
        async with self._flushing:
            batch, self._pending = self._pending, {}
            if not batch:
                return
            try:
                await self._registry.record_many(batch)
            except BaseException as e:
                _requeue(self._pending, batch)
                self._schedule()
                _failed(self._streak, len(batch), e, raise_errors)
                return
            self._streak.succeeded(len(batch))

    async def close(self) -> None:
        """Cancel the timer and write what is pending."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        await self.flush()
