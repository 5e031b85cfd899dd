"""Per-namespace writer locks and layout generations of the long tier, in Redis.

With a Chroma server, several processes (replicas) write one long tier. Each namespace
then has a lock in Redis, `P:lt:{<namespace id>}:lock`: a random token set with NX and
a lease, deleted only by a script that finds the holder's token. On top of that:

- reentrancy within a thread: a thread that holds a namespace's lock takes it again
  without waiting (`exclusive(ns)` around a read and the write built from it);
- all or nothing: the namespaces of a batch are taken by one script, in sorted order,
  or none is (the script gives back what it took), so two writers of the same
  namespaces never wait on each other in a circle;
- a bound: a lock not taken within `wait` seconds raises `NamespaceLockedError`
  naming the namespace. The lease (`lease` seconds, 30 by default) is renewed by
  `keepalive` while a long write runs, so only a dead holder makes others wait, for
  at most the lease.

Taking the locks is also the first of a write's two Redis round trips (`hold` with
`intents`): the same script returns the layout counts below, the item headers and the
record count the write needs (`P:lt:{n}:h`, `recs` in `P:lt:{n}:s`, kept by
`RedisIndex.commit`), the keys a dead writer left in the namespace's intent set (when
the lock was free), and records the write's keys as intents. The second round trip is
the index commit, which releases the locks of their outermost holder (`handoff`).
The begin script also enters the namespaces a write creates in the Redis namespace
registry (`register`: in their bucket), so a namespace's first write costs no extra round
trip.

`P:lt:{<namespace id>}:layout` counts the changes of where a namespace lives (a move
from a bucket to its own collection, its registry entry removed), and `P:lt:erased`
the namespaces erased. A process caches the layout; before it writes a namespace,
under that namespace's lock, it compares both counts with the ones it cached and reads
the registry again when they differ.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import LockNotOwnedError

from langgraph_tiered_memory.errors import NamespaceLockedError

__all__ = ["DEFAULT_LEASE", "DEFAULT_WAIT", "Begun", "NamespaceLocks"]

DEFAULT_LEASE = 30.0
"""Seconds a namespace lock lives without renewal (a dead holder blocks this long)."""

DEFAULT_WAIT = 40.0
"""Seconds a writer waits for a namespace lock before it gives up (past one lease)."""

_SLEEP = 0.01
"""Seconds between attempts to take a busy lock."""

_BEGIN = """
local P, lease, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local taken, specs = {}, {}
for j = 1, n do
  local at = 5 * j - 1
  local nsid, token, mine, keys = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  local lk = P .. ':lt:{' .. nsid .. '}:lock'
  if mine == '1' then
    if redis.call('GET', lk) == token then redis.call('PEXPIRE', lk, lease) end
  elseif redis.call('SET', lk, token, 'NX', 'PX', lease) then
    taken[#taken + 1] = {lk, token}
  else
    for _, t in ipairs(taken) do
      if redis.call('GET', t[1]) == t[2] then redis.call('DEL', t[1]) end
    end
    return cjson.encode({busy = j})
  end
  specs[j] = {nsid, mine, keys, ARGV[at + 4]}
end
local out = {epoch = tonumber(redis.call('GET', P .. ':lt:erased') or '0'), ns = {}}
for j, s in ipairs(specs) do
  local nsid, mine = s[1], s[2]
  local base = P .. ':lt:{' .. nsid .. '}'
  local r = {layout = tonumber(redis.call('GET', base .. ':layout') or '0'), left = {}}
  if mine ~= '1' then r.left = redis.call('SMEMBERS', base .. ':i') end
  if s[3] ~= '' then
    local keys = cjson.decode(s[3])
    local h = {}
    for i, k in ipairs(keys) do h[i] = redis.call('HGET', base .. ':h', k) end
    r.h, r.recs = h, redis.call('HGET', base .. ':s', 'recs')
    if #r.left == 0 and #keys > 0 then
      for _, k in ipairs(keys) do redis.call('SADD', base .. ':i', k) end
      redis.call('SADD', P .. ':lt:intents', nsid)
      r.rec = 1
    end
  end
  if s[4] ~= '' then
    local g = cjson.decode(s[4])
    local cur = redis.call('HGET', base .. ':s', 'reg')
    r.reg = cur or ''
    if not cur or (g[2] == 1 and cur == '0') then
      local flag = tostring(g[2])
      redis.call('HSET', base .. ':s', 'reg', flag)
      if not cur then redis.call('HSET', base .. ':s', 'ns', g[1], 'b', g[4], 'd', g[3]) end
      redis.call('HSET', P .. ':lt:reg', g[1], flag)
      redis.call('ZADD', P .. ':lt:regp', 0, g[1])
    end
  end
  out.ns[j] = r
end
return cjson.encode(out)
"""

_RELEASE = """
local lost = 0
for i = 1, #ARGV, 2 do
  if redis.call('GET', ARGV[i]) == ARGV[i + 1] then redis.call('DEL', ARGV[i])
  else lost = lost + 1 end
end
return lost
"""

_EXTEND = """
local lost = 0
for i = 2, #ARGV, 2 do
  if redis.call('GET', ARGV[i]) == ARGV[i + 1] then redis.call('PEXPIRE', ARGV[i], ARGV[1])
  else lost = lost + 1 end
end
return lost
"""


@dataclass
class Begun:
    """What taking the locks read (see the module docstring), by namespace id."""

    epoch: int = 0
    """The prefix's erase count."""
    layout: dict[str, int] = field(default_factory=dict)
    """Layout change count of each namespace (0: never changed)."""
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    """Stored item headers of the keys asked for (a key without one is left out)."""
    recs: dict[str, int | None] = field(default_factory=dict)
    """Records the namespace's headers count (None: its headers are not complete)."""
    left: dict[str, list[str]] = field(default_factory=dict)
    """Keys a dead writer left as intents, in namespaces whose lock was free."""
    recorded: set[str] = field(default_factory=set)
    """Namespaces whose keys were recorded as intents (not those with `left` keys)."""
    registered: dict[str, str | None] = field(default_factory=dict)
    """Of the namespaces asked to register: their registry flag before ("0", "1": has
    held TTL items; None: new, registered by this call)."""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []  # cjson encodes {} for an empty list


class NamespaceLocks:
    """The namespace locks and layout generations of one store prefix in Redis.

    Args:
        client: A Redis client.
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
        self._begin = client.register_script(_BEGIN)
        self._release = client.register_script(_RELEASE)
        self._extend = client.register_script(_EXTEND)

    def _mine(self) -> dict[str, list[Any]]:
        """This thread's held locks: namespace id -> [token, depth, handed off]."""
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
    def hold(
        self,
        nsids: Iterable[str],
        names: Sequence[object] = (),
        *,
        intents: Mapping[str, Sequence[str]] | None = None,
        register: Mapping[str, tuple[str, bool, int, int]] | None = None,
        wait: float | None = None,
    ) -> Iterator[Begun]:
        """Hold the locks of `nsids` for the block; yields what taking them read.

        Args:
            nsids: Namespace ids; those this thread already holds are taken again
                without waiting.
            names: The namespaces, for the error message (matched by position).
            intents: Keys about to be written, by namespace id: their headers are
                read and they are recorded as intents (unless `Begun.left`).
            register: Namespaces to enter in the Redis registry (`RedisIndex.registry`),
                by namespace id: (encoded namespace, has TTL items, embedding size,
                bucket).
                The registry flag each had before is in `Begun.registered`.
            wait: Seconds to wait instead of the configured `wait` (0: one attempt).

        Raises:
            NamespaceLockedError: A lock was not free within `wait` seconds.
        """
        given = list(nsids)
        wanted = sorted(set(given))
        label = dict(zip(given, names, strict=False))
        held = self._mine()
        fresh = {n: os.urandom(16).hex() for n in wanted if n not in held}
        args: list[Any] = [self._prefix, int(self.lease * 1000), len(wanted)]
        for nsid in wanted:
            keys = None if intents is None else intents.get(nsid)
            token = fresh.get(nsid) or held[nsid][0]
            args += [nsid, token, "0" if nsid in fresh else "1"]
            args.append("" if keys is None else json.dumps(list(keys), ensure_ascii=False))
            reg = None if register is None else register.get(nsid)
            args.append(
                ""
                if reg is None
                else json.dumps([reg[0], int(reg[1]), int(reg[2]), int(reg[3])], ensure_ascii=False)
            )
        deadline = time.monotonic() + (self.wait if wait is None else wait)
        while True:
            reply = json.loads(_s(self._begin(args=args)))
            if "busy" not in reply:
                break
            if time.monotonic() >= deadline:
                busy = wanted[int(reply["busy"]) - 1]
                what = label.get(busy, busy)
                raise NamespaceLockedError(
                    f"The long-term namespace {what!r} is locked by another writer"
                    f" (Redis key {self._key(busy, 'lock')!r}) for more than"
                    f" {self.wait:g} s. A writer that died leaves its lock for at"
                    f" most {self.lease:g} s; retry the call, or check which"
                    " process holds the namespace."
                )
            time.sleep(_SLEEP)
        begun = Begun(epoch=int(reply["epoch"]))
        for nsid, r in zip(wanted, _list(reply["ns"]), strict=True):
            begun.layout[nsid] = int(r["layout"])
            if _list(r.get("left")):
                begun.left[nsid] = sorted(_s(k) for k in r["left"])
            if r.get("rec"):
                begun.recorded.add(nsid)
            if intents is not None and nsid in intents:
                found = _list(r.get("h"))
                begun.headers[nsid] = {k: h for k, h in zip(intents[nsid], found, strict=True) if h}
                begun.recs[nsid] = int(r["recs"]) if r.get("recs") else None
            if register is not None and nsid in register:
                begun.registered[nsid] = _s(r["reg"]) or None
        for nsid in wanted:
            if nsid in fresh:
                held[nsid] = [fresh[nsid], 1, False]
            else:
                held[nsid][1] += 1
        try:
            yield begun
        finally:
            done: list[str] = []
            for nsid in wanted:
                entry = held[nsid]
                entry[1] -= 1
                if entry[1] == 0:
                    del held[nsid]
                    if not entry[2]:
                        done += [self._key(nsid, "lock"), entry[0]]
            if done and self._release(args=done):
                raise LockNotOwnedError(
                    "A long-term namespace lock expired before its holder released it"
                    f" (lease {self.lease:g} s): another writer may have written meanwhile."
                )

    def holds(self, nsid: str) -> bool:
        """Whether this thread holds the namespace's lock."""
        return nsid in self._mine()

    def handoff(self, nsids: Iterable[str]) -> list[str]:
        """Release arguments of the locks of `nsids` this thread holds outermost.

        For a commit that releases them in its own round trip: the
        enclosing `hold` then leaves them alone. Locks also held by an outer block
        are not handed off.
        """
        held = self._mine()
        out: list[str] = []
        for nsid in dict.fromkeys(nsids):
            entry = held.get(nsid)
            if entry is not None and entry[1] == 1 and not entry[2]:
                entry[2] = True
                out += [self._key(nsid, "lock"), entry[0]]
        return out

    def handback(self, handed: Sequence[str]) -> None:
        """Undo `handoff` (its commit failed): the enclosing `hold` releases them."""
        keys = set(handed[::2])
        for nsid, entry in self._mine().items():
            if self._key(nsid, "lock") in keys:
                entry[2] = False

    def keepalive(self) -> None:
        """Give every lock this thread holds a full lease again (during a long write).

        Raises:
            LockNotOwnedError: A lock expired and was taken by another writer.
        """
        args: list[Any] = [int(self.lease * 1000)]
        for nsid, (token, _, handed) in self._mine().items():
            if not handed:
                args += [self._key(nsid, "lock"), token]
        if len(args) > 1 and self._extend(args=args):
            raise LockNotOwnedError(
                "A long-term namespace lock expired during a long write: another writer"
                " may have taken it."
            )

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
