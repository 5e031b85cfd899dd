"""Which short-tier namespaces hold a live item, without one Redis call per namespace.

`list_namespaces` must skip namespaces whose items all expired or were deleted. Asking
each namespace's key set (one ZCOUNT each) costs about 15 µs per namespace in the
client, so 150 ms at 10,000 namespaces. This module keeps, next to the namespace
registry (all in the `{registry}` hash slot, so its scripts stay within one Redis
Cluster slot):

- `<prefix>:{registry}:live`  sorted set: namespace -> upper bound of the latest expiry
  of its items, in epoch ms (`+inf` when an item has no TTL; 0 when it holds nothing).
  A namespace whose bound has passed holds no live item.
- `<prefix>:{registry}:busy`  hash: namespace -> writes begun and not yet finished.
- `<prefix>:{registry}:dirty` set: namespaces that lost items since their bound was
  last made exact (a delete can leave the bound too high).
- `<prefix>:{registry}:ver`   hash: namespace -> number of finished writes.

A listing trusts the bound of a namespace that is neither busy nor dirty and has a
bound; it checks every other namespace's key set and then makes its bound exact, but
only if no write began or finished in between (`busy` empty and `ver` unchanged), so
a concurrent write never loses its raise. A write marks itself busy before it
touches the namespace and raises the bound (ZADD GT) after, so a crash in between
leaves the namespace busy, and so checked, never hidden. Stores written before this
index existed have no bounds: their namespaces are checked and given one on the
first listing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Liveness"]

# KEYS: registry, busy. ARGV: namespace, register (1/0).
_BEGIN_LUA = """
if ARGV[2] == '1' then redis.call('ZADD', KEYS[1], 0, ARGV[1]) end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
"""

# KEYS: live, busy, dirty, ver. ARGV: namespace, bound ('' for none), deleted (1/0).
_FINISH_LUA = """
if ARGV[2] ~= '' then redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1]) end
if ARGV[3] == '1' then redis.call('SADD', KEYS[3], ARGV[1]) end
redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
if redis.call('HINCRBY', KEYS[2], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[1]) end
return 1
"""

# KEYS: live, busy, dirty, ver. ARGV: namespace, exact bound, version read before the check.
_SETTLE_LUA = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
if (redis.call('HGET', KEYS[4], ARGV[1]) or '0') ~= ARGV[3] then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
"""


# KEYS: registry, live, busy, dirty, ver. ARGV: lex range low, high, now (ms).
# Returns: the trusted live namespaces joined by newlines (a JSON-encoded namespace has
# none), the namespaces to check, and their write versions.
_LIST_LUA = """
local members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2])
local busy = {}
local flat = redis.call('HGETALL', KEYS[3])
for i = 1, #flat, 2 do busy[flat[i]] = true end
local dirty = {}
for _, m in ipairs(redis.call('SMEMBERS', KEYS[4])) do dirty[m] = true end
local now = tonumber(ARGV[3])
local live, check, vers = {}, {}, {}
for at = 1, #members, 4000 do
  local chunk = {}
  for i = at, math.min(at + 3999, #members) do chunk[#chunk + 1] = members[i] end
  local bounds = redis.call('ZMSCORE', KEYS[2], unpack(chunk))
  for i, m in ipairs(chunk) do
    local b = bounds[i]
    if b == false or busy[m] or dirty[m] then
      check[#check + 1] = m
      vers[#vers + 1] = redis.call('HGET', KEYS[5], m) or '0'
    elseif b == 'inf' or tonumber(b) > now then
      live[#live + 1] = m
    end
  end
end
return {table.concat(live, '\\n'), check, vers}
"""


def _score(bound: float) -> str:
    return "+inf" if bound == float("inf") else repr(float(bound))


class Liveness:
    """The liveness index of one key prefix (see the module docstring)."""

    def __init__(self, client: Any, key_prefix: str) -> None:
        self.client = client
        self.registry = f"{key_prefix}:{{registry}}:ns"
        self._live = f"{key_prefix}:{{registry}}:live"
        self._busy = f"{key_prefix}:{{registry}}:busy"
        self._dirty = f"{key_prefix}:{{registry}}:dirty"
        self._ver = f"{key_prefix}:{{registry}}:ver"

    @property
    def keys(self) -> tuple[str, ...]:
        """Every Redis key of the index (with the registry)."""
        return (self.registry, self._live, self._busy, self._dirty, self._ver)

    # ----------------------------------------------------------------- writes
    def begin(self, enc: str, *, register: bool, pipe: Any) -> None:
        """Queue on `pipe`: a write to namespace `enc` begins (and registers it)."""
        # EVAL by name: a cluster pipeline has no `eval` method but routes the command.
        pipe.execute_command(
            "EVAL", _BEGIN_LUA, 2, self.registry, self._busy, enc, "1" if register else "0"
        )

    def finish_all(self, done: Sequence[tuple[str, float | None, bool]]) -> None:
        """Writes are done: (namespace, bound to raise to or None, items deleted)."""
        if not done:
            return
        pipe = self.client.pipeline(transaction=False)
        for enc, bound, deleted in done:
            pipe.execute_command(
                "EVAL",
                _FINISH_LUA,
                4,
                self._live,
                self._busy,
                self._dirty,
                self._ver,
                enc,
                "" if bound is None else _score(bound),
                "1" if deleted else "0",
            )
        pipe.execute()

    def raise_bounds(self, pipe: Any, bounds: dict[str, float]) -> None:
        """Queue raising bounds on `pipe` (before TTLs are extended: never too low)."""
        if bounds:
            pipe.zadd(self._live, {e: b for e, b in bounds.items()}, gt=True)

    def mark_dirty(self, encs: Sequence[str]) -> None:
        """Namespaces whose bound may be too high (an extended item was already gone)."""
        if encs:
            self.client.sadd(self._dirty, *encs)

    # ----------------------------------------------------------------- listing
    def live(
        self,
        low: bytes,
        high: bytes,
        key_set: Callable[[str], str],
        now_ms: float,
    ) -> list[str]:
        """Encoded namespaces in the registry range [`low`, `high`] holding a live item.

        One script answers for every namespace whose bound can be trusted; the others'
        key sets (`key_set(enc)` names one) are counted, and their bounds made exact.
        """
        joined, check, vers = self.client.eval(
            _LIST_LUA,
            5,
            self.registry,
            self._live,
            self._busy,
            self._dirty,
            self._ver,
            low,
            high,
            _score(now_ms),
        )
        out = [e for e in _text(joined).split("\n") if e]
        if not check:
            return out
        encs = [_text(e) for e in check]
        pipe = self.client.pipeline(transaction=False)
        for enc in encs:
            pipe.zcount(key_set(enc), f"({now_ms}", "+inf")
            pipe.zrevrange(key_set(enc), 0, 0, withscores=True)
        res = pipe.execute()
        pipe = self.client.pipeline(transaction=False)
        for n, enc in enumerate(encs):
            count, top = res[2 * n], res[2 * n + 1]
            if count:
                out.append(enc)
            exact = float(top[0][1]) if top else 0.0
            pipe.execute_command(
                "EVAL",
                _SETTLE_LUA,
                4,
                self._live,
                self._busy,
                self._dirty,
                self._ver,
                enc,
                _score(exact),
                _text(vers[n]),
            )
        pipe.execute()
        return out


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
