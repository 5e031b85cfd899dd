"""Per-namespace writer locks and layout generations of the long tier, in Redis.

With a Chroma server, several processes (replicas) write one long tier. Each namespace
then has a lock in Redis, `P:lt:{<namespace id>}:lock`: a `redis.lock.Lock` (a random
token, SET NX with a lease, released by a script that deletes the key only while it
still holds the holder's token). This module adds what that class lacks:

- reentrancy within a thread: a thread that holds a namespace's lock takes it again
  without waiting (`exclusive(ns)` around a read and the write built from it);
- one order: the namespaces of a batch are locked sorted by id, so two writers of the
  same namespaces never wait on each other in a circle;
- a bound: a lock not taken within `wait` seconds raises `NamespaceLockedError`
  naming the namespace. The lease (`lease` seconds, 30 by default) is renewed by
  `keepalive` while a long write runs, so only a dead holder makes others wait, for
  at most the lease.

`P:lt:{<namespace id>}:layout` counts the changes of where a namespace lives (a move
from a bucket to its own collection, its registry entry removed), and `P:lt:erased`
the namespaces erased. A process caches the layout; before it writes a namespace,
under that namespace's lock, it compares both counts with the ones it cached and reads
the registry again when they differ (one pipelined round trip).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from redis.lock import Lock

from langgraph_tiered_memory.errors import NamespaceLockedError

__all__ = ["DEFAULT_LEASE", "DEFAULT_WAIT", "NamespaceLocks"]

DEFAULT_LEASE = 30.0
"""Seconds a namespace lock lives without renewal (a dead holder blocks this long)."""

DEFAULT_WAIT = 40.0
"""Seconds a writer waits for a namespace lock before it gives up (past one lease)."""

_SLEEP = 0.01
"""Seconds between attempts to take a busy lock."""


class NamespaceLocks:
    """The namespace locks and layout generations of one store prefix in Redis.

    Args:
        client: A Redis client (standalone or cluster: every key names one namespace).
        prefix: The store's key prefix.
        lease: Seconds a lock lives unless renewed.
        wait: Seconds to wait for a busy lock before `NamespaceLockedError`.
    """

    def __init__(
        self,
        client: Any,
        prefix: str,
        *,
        lease: float = DEFAULT_LEASE,
        wait: float = DEFAULT_WAIT,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self.lease = lease
        self.wait = wait
        self._held = threading.local()

    def _mine(self) -> dict[str, list[Any]]:
        """This thread's held locks: namespace id -> [Lock, depth]."""
        held: dict[str, list[Any]] | None = getattr(self._held, "locks", None)
        if held is None:
            held = self._held.locks = {}
        return held

    @property
    def _epoch(self) -> str:
        return f"{self._prefix}:lt:erased"

    def _key(self, nsid: str, what: str) -> str:
        return f"{self._prefix}:lt:{{{nsid}}}:{what}"

    @contextmanager
    def hold(self, nsids: Iterable[str], names: Sequence[object] = ()) -> Iterator[None]:
        """Hold the locks of `nsids` (taken in sorted order) for the block.

        Args:
            nsids: Namespace ids; those this thread already holds are taken again
                without waiting.
            names: The namespaces, for the error message (same order as `nsids` is
                not required: matched by position when given).

        Raises:
            NamespaceLockedError: A lock was not free within `wait` seconds.
        """
        wanted = list(nsids)
        label = dict(zip(wanted, names, strict=False))
        held = self._mine()
        taken: list[str] = []
        try:
            for nsid in sorted(set(wanted)):
                entry = held.get(nsid)
                if entry is None:
                    lock = Lock(
                        self._client,
                        self._key(nsid, "lock"),
                        timeout=self.lease,
                        sleep=_SLEEP,
                        thread_local=False,
                    )
                    if not lock.acquire(blocking_timeout=self.wait):
                        what = label.get(nsid, nsid)
                        raise NamespaceLockedError(
                            f"The long-term namespace {what!r} is locked by another writer"
                            f" (Redis key {self._key(nsid, 'lock')!r}) for more than"
                            f" {self.wait:g} s. A writer that died leaves its lock for at"
                            f" most {self.lease:g} s; retry the call, or check which"
                            " process holds the namespace."
                        )
                    held[nsid] = [lock, 1]
                else:
                    entry[1] += 1
                taken.append(nsid)
            yield
        finally:
            for nsid in reversed(taken):
                entry = held[nsid]
                entry[1] -= 1
                if entry[1] == 0:
                    del held[nsid]
                    entry[0].release()

    def holds(self, nsid: str) -> bool:
        """Whether this thread holds the namespace's lock."""
        return nsid in self._mine()

    def keepalive(self) -> None:
        """Give every lock this thread holds a full lease again (during a long write)."""
        for lock, _ in self._mine().values():
            lock.reacquire()

    # ------------------------------------------------------------- layout generations
    def generations(self, nsids: Sequence[str]) -> tuple[int, list[int]]:
        """The prefix's erase count and the layout change counts of `nsids` (one round trip).

        A count is 0 for what never changed.
        """
        pipe = self._client.pipeline(transaction=False)
        for key in (self._epoch, *(self._key(nsid, "layout") for nsid in nsids)):
            pipe.get(key)
        values = [int(v or 0) for v in pipe.execute()]
        return values[0], values[1:]

    def changed(self, nsid: str) -> None:
        """Count a change of where the namespace lives (before the change is made)."""
        self._client.incr(self._key(nsid, "layout"))

    def erased(self, nsid: str) -> None:
        """The namespace is erased: its count goes, the prefix's erase count rises.

        No key names the namespace afterwards; every process reads the registry
        again for the namespaces it cached.
        """
        pipe = self._client.pipeline(transaction=False)
        pipe.incr(self._epoch)
        pipe.delete(self._key(nsid, "layout"))
        pipe.execute()
