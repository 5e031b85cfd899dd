"""The long tier's memory index in Redis (with RediSearch), shared by every replica.

With a Chroma server, several processes serve one store; a memory index in a file of each
process would make them disagree. `RedisIndex` keeps the same roles as `DocMirror` with
`docs=False` (keyword index, memory statistics and write order, intents, memory history,
namespace registry), with the same methods and meaning, in the store's Redis:

    P:ltm:{n}:<key>    HASH, one per memory: ns (TAG), seq, type, imp, occ, created,
                       raw (own text), text / context / time (keyword tokens), nt / nc / nm
                       (their counts), ctx ("1": written with a context), ac, la
    P:lt:kw            the RediSearch index over P:ltm: (every namespace; `setup`)
    P:lt:{n}:ord       ZSET key -> seq (write order)
    P:lt:{n}:s         HASH rows, tokens (the namespace's BM25 statistics)
    P:lt:{n}:i         SET keys being written;  P:lt:intents  SET of their namespace ids
    P:lt:{n}:h         HASH key -> item header (the tier's; `HeaderChange`), and `recs`
                       in P:lt:{n}:s: records the headers count (only once all are held)
    P:lth:{n}:<key>    LIST of the memory's history events;  P:lt:{n}:hk  SET of those keys
    P:lt:hns           HASH namespace id -> labels;  P:lt:hs:<subject>  SET of "nsid:key"
    P:lth:t:<hash>     LIST of tombstones;  P:lt:hseq  counter of events (their order)
    P:lt:reg, P:lt:regp  namespace registry (HASH encoded namespace -> TTL flag, and ZSET
                       for prefix ranges); the entry in P:lt:{n}:s: `ns` (encoded), `reg`
                       (TTL flag), `b` (bucket; none: own collection), `m` (bucket a move
                       left records in), `d` (embedding size in a bucket)
    P:lt:regm          SET of the namespace ids with `m`;  P:lt:buckets  bucket count
    P:lt:filled        SET of one-off jobs done

`P` is the store's key prefix and `{n}` the namespace id as a hash tag. Every change is
one Lua script (a commit, a touch, a tombstone, an erase), so writers in N processes never
lose an update: access counts add up, `last_accessed` is the latest, and a rewrite keeps
both. The scripts touch keys of several namespaces (the global sets), so a Redis Cluster
is refused: the index needs a standalone Redis.

Keyword search is one script (`_KEYWORDS`): it counts the namespace's document
frequencies of the query's words with RediSearch, then fetches the matches phrase by
phrase, rarest first, and counts each phrase in each column of every memory fetched. It
stops once the phrases left cannot lift a memory holding only them into the top `limit`
(each adds less than (k1 + 1) * idf: MaxScore). `ranking.bm25` then ranks the memories
fetched: FTS5's `bm25()` with the namespace's own row count, token count and document
frequencies, so results and scores equal the SQLite index's. A RediSearch query that hits
its time limit (FT.CONFIG TIMEOUT) fails the search (BackendUnavailableError) rather than
rank partial results: the script reads RediSearch's warnings in RESP3.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from langgraph_tiered_memory.checkpoint.erase import collect_search_garbage
from langgraph_tiered_memory.errors import (
    BackendUnavailableError,
    ConfigurationError,
    NamespaceLockedError,
)
from langgraph_tiered_memory.graph.types import MemoryTriples, Namespace
from langgraph_tiered_memory.ranking.bm25 import (
    BM25_PARAMS,
    FTS_WEIGHTS,
    PRUNE_FROM,
    kept_terms,
    query_stems,
    rank,
)
from langgraph_tiered_memory.ranking.terms import fts_terms_many
from langgraph_tiered_memory.store.tiers._namespaces import decode_namespace, namespace_id
from langgraph_tiered_memory.store.tiers.redis_locks import NamespaceLocks
from langgraph_tiered_memory.store.tiers.sqlite_graph import PendingGraph
from langgraph_tiered_memory.store.tiers.sqlite_history import (
    TOMBSTONE,
    HistoryRow,
    RecoveredHistory,
    Selection,
    StoredEvent,
)
from langgraph_tiered_memory.store.tiers.sqlite_stats import ContextInputs, MemoryRow, MemoryStats

__all__ = ["HeaderChange", "RedisHistory", "RedisIndex"]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.index_redis")

_PLAIN = re.compile("[a-z0-9]{1,100}")

_COMMIT = """
local P, lost = ARGV[1], 0
for arg = 2, #ARGV, 2 do
local nsid = ARGV[arg]
local a = cjson.decode(ARGV[arg + 1])
local base = P .. ':lt:{' .. nsid .. '}'
local mb, ord, st = P .. ':ltm:{' .. nsid .. '}:', base .. ':ord', base .. ':s'
local function mk(k) return mb .. k end
local gone = {}
for _, k in ipairs(a.drop) do
  local v = redis.call('HMGET', mk(k), 'seq', 'n')
  if v[1] then
    redis.call('DEL', mk(k)); redis.call('ZREM', ord, k)
    redis.call('HINCRBY', st, 'rows', -1); redis.call('HINCRBY', st, 'tokens', -tonumber(v[2]))
    gone[#gone + 1] = v[1]
  end
end
local succ = {}
for _, s in ipairs(gone) do
  local nxt = redis.call('ZRANGEBYSCORE', ord, '(' .. s, '+inf', 'LIMIT', 0, 1)
  if nxt[1] and redis.call('HGET', mk(nxt[1]), 'ctx') == '1' then succ[nxt[1]] = true end
end
for k in pairs(succ) do
  local seq = redis.call('ZSCORE', ord, k)
  local prev = redis.call('ZREVRANGEBYSCORE', ord, '(' .. seq, '-inf', 'LIMIT', 0, 1)
  local toks, cnt, flag = '', 0, '0'
  if prev[1] then
    local pv = redis.call('HMGET', mk(prev[1]), 'text', 'nt', 'raw')
    toks, cnt = pv[1], tonumber(pv[2])
    if pv[3] ~= '' then flag = '1' end
  end
  local v = redis.call('HMGET', mk(k), 'nc', 'n')
  local n = tonumber(v[2]) - tonumber(v[1]) + cnt
  redis.call('HSET', mk(k), 'context', toks, 'nc', cnt, 'ctx', flag, 'n', n)
  redis.call('HINCRBY', st, 'tokens', n - tonumber(v[2]))
end
for _, r in ipairs(a.rows) do
  local key = r[1]
  local v = redis.call('HMGET', mk(key), 'seq', 'n')
  if not (a.keep and v[1]) then
    local n = r[6] + r[7] + r[8]
    local f = {'ns', nsid, 'raw', r[2], 'text', r[3], 'context', r[4], 'time', r[5], 'nt', r[6],
      'nc', r[7], 'nm', r[8], 'n', n, 'ctx', r[9], 'type', r[10], 'imp', r[11], 'created', r[13]}
    if r[12] ~= cjson.null then f[#f + 1] = 'occ'; f[#f + 1] = r[12] end
    if v[1] then
      if r[12] == cjson.null then redis.call('HDEL', mk(key), 'occ') end
      redis.call('HINCRBY', st, 'tokens', n - tonumber(v[2]))
    else
      local top = redis.call('ZREVRANGE', ord, 0, 0, 'WITHSCORES')
      local seq = 1
      if top[2] then seq = tonumber(top[2]) + 1 end
      if r[14] and r[14] > seq then seq = r[14] end
      redis.call('ZADD', ord, seq, key)
      redis.call('HINCRBY', st, 'rows', 1)
      redis.call('HINCRBY', st, 'tokens', n)
      f[#f + 1] = 'seq'; f[#f + 1] = seq; f[#f + 1] = 'ac'; f[#f + 1] = 0
    end
    redis.call('HSET', mk(key), unpack(f))
  end
end
if a.hdr then
  if a.hdr.reset then redis.call('DEL', base .. ':h') end
  for _, k in ipairs(a.hdr.drop) do redis.call('HDEL', base .. ':h', k) end
  for _, kv in ipairs(a.hdr.put) do redis.call('HSET', base .. ':h', kv[1], kv[2]) end
  if a.hdr.recs ~= cjson.null then redis.call('HSET', st, 'recs', a.hdr.recs)
  elseif a.hdr.unsure then redis.call('HDEL', st, 'recs')
  elseif a.hdr.add ~= 0 and redis.call('HEXISTS', st, 'recs') == 1 then
    redis.call('HINCRBY', st, 'recs', a.hdr.add)
  end
end
if #a.done > 0 then
  redis.call('SREM', base .. ':i', unpack(a.done))
  if redis.call('SCARD', base .. ':i') == 0 then redis.call('SREM', P .. ':lt:intents', nsid) end
end
if a.hist ~= cjson.null and #a.hist.ev > 0 then
  redis.call('HSET', P .. ':lt:hns', nsid, a.hist.ns)
  local h = redis.call('INCRBY', P .. ':lt:hseq', #a.hist.ev) - #a.hist.ev
  for _, e in ipairs(a.hist.ev) do
    h = h + 1
    local lk = P .. ':lth:{' .. nsid .. '}:' .. e[1]
    local seq = redis.call('LLEN', lk) + 1
    redis.call('RPUSH', lk, seq .. ' ' .. h .. ' ' .. e[2] .. ' ' .. e[3])
    redis.call('SADD', base .. ':hk', e[1])
    for s in string.gmatch(e[4], '%S+') do
      redis.call('SADD', P .. ':lt:hs:' .. s, nsid .. ':' .. e[1])
    end
  end
end
if a.rel then
  for j = 1, #a.rel, 2 do
    if redis.call('GET', a.rel[j]) == a.rel[j + 1] then redis.call('DEL', a.rel[j])
    else lost = lost + 1 end
  end
end
end
return lost
"""

_KEYWORDS = """
local P, idx, nsid, prune, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local K1, B, W = tonumber(ARGV[6]), tonumber(ARGV[7]), {tonumber(ARGV[8]), tonumber(ARGV[9]),
  tonumber(ARGV[10])}
local base, mb = P .. ':lt:{' .. nsid .. '}', P .. ':ltm:{' .. nsid .. '}:'
local top = redis.call('ZREVRANGE', base .. ':ord', 0, 0, 'WITHSCORES')
local st = redis.call('HMGET', base .. ':s', 'rows', 'tokens')
if not top[2] or not st[1] then return {} end
local function str(x) if type(x) == 'table' then return x['ok'] or x['err'] end return x end
local function map(x)
  local o = {}
  for k, v in pairs(x['map']) do o[str(k)] = v end
  return o
end
local function search(q, ...)
  redis.setresp(3)  -- RESP3 replies carry RediSearch's warnings (a timeout's partial results)
  local r = map(redis.call('FT.SEARCH', idx, '@ns:{' .. nsid .. '} ' .. q, 'VERBATIM', ...))
  redis.setresp(2)
  if r['warning'] and #r['warning'] > 0 then
    error({err = 'PARTIAL keyword search of namespace ' .. nsid .. ': ' .. str(r['warning'][1])})
  end
  return r
end
local df, last, found, phrases, query, idf = {}, tonumber(top[2]), {}, {}, {}, {}
for i = 11, #ARGV do
  local t = ARGV[i]
  if t ~= '' and not df[t] then
    df[t] = search(t, 'NOCONTENT', 'LIMIT', 0, 0, 'DIALECT', 2)['total_results']
  end
  found[#found + 1] = df[t] or 0
end
local rows, avgdl = tonumber(st[1]), tonumber(st[2]) / tonumber(st[1])
for i = 11, #ARGV, 2 do
  local n, p = df[ARGV[i]] or 0, ARGV[i + 1]
  if n > 0 and p ~= '' and (last < prune or n * 2 < last) then
    if not idf[p] then
      idf[p] = math.max(math.log((rows - df[p] + 0.5) / (df[p] + 0.5)), 1e-6)
      query[#query + 1] = p
    end
    phrases[#phrases + 1] = p
  end
end
local out = {st[1], st[2], tostring(last), table.concat(found, ' '), ''}
-- MaxScore: rarest phrases first; a memory holding only phrases not searched yet scores
-- below K1 + 1 times their idfs, so once that is below the limit-th score found, stop.
table.sort(query, function(a, b) return idf[a] > idf[b] end)
local rest = 0
for _, p in ipairs(phrases) do rest = rest + idf[p] * (K1 + 1) end
local seen, scores, nums = {}, {}, {}
for _, q in ipairs(query) do
  local r = search(q, 'NOCONTENT', 'LIMIT', 0, df[q], 'DIALECT', 2)
  for _, doc in ipairs(r['results']) do
    local id = str(map(doc)['id'])
    local v = not seen[id] and redis.call('HMGET', id, 'seq', 'n', 'text', 'context', 'time')
    seen[id] = true
    if v and v[1] then
      out[#out + 1] = string.sub(id, #mb + 1)
      nums[#nums + 1] = v[1]; nums[#nums + 1] = v[2]
      local cols = {}
      for c = 3, 5 do cols[c - 2] = ' ' .. (v[c] or '') .. ' ' end
      local norm, score = K1 * (1 - B + B * tonumber(v[2]) / avgdl), 0
      for _, p in ipairs(phrases) do
        local pat, freq = ' ' .. p .. ' ', 0
        for c, s in ipairs(cols) do
          local n, at = 0, 1
          while true do
            local _, e = string.find(s, pat, at, true)
            if not e then break end
            n, at = n + 1, e
          end
          nums[#nums + 1] = n
          freq = freq + n * W[c]
        end
        score = score + idf[p] * ((freq * (K1 + 1)) / (freq + norm))
      end
      scores[#scores + 1] = score
    end
  end
  for _, p in ipairs(phrases) do if p == q then rest = rest - idf[p] * (K1 + 1) end end
  if #scores >= limit then
    table.sort(scores, function(a, b) return a > b end)
    if rest < scores[limit] * (1 - 1e-9) then break end
  end
end
out[5] = table.concat(nums, ' ')
return out
"""

_TOUCH = """
local P, now = ARGV[1], ARGV[2]
for i = 3, #ARGV, 2 do
  local k = P .. ':ltm:{' .. ARGV[i] .. '}:' .. ARGV[i + 1]
  if redis.call('EXISTS', k) == 1 then
    redis.call('HINCRBY', k, 'ac', 1)
    local la = redis.call('HGET', k, 'la')
    if not la or tonumber(la) < tonumber(now) then redis.call('HSET', k, 'la', now) end
  end
end
return 1
"""

_ADD_ACCESS = """
local P, nsid, once = ARGV[1], ARGV[2], ARGV[3]
if once ~= '' and redis.call('SADD', once, nsid) == 0 then return 0 end
for i = 4, #ARGV, 3 do
  local k = P .. ':ltm:{' .. nsid .. '}:' .. ARGV[i]
  if redis.call('EXISTS', k) == 1 then
    redis.call('HINCRBY', k, 'ac', ARGV[i + 1])
    local la, last = redis.call('HGET', k, 'la'), ARGV[i + 2]
    if last ~= '' and (not la or tonumber(la) < tonumber(last)) then
      redis.call('HSET', k, 'la', last)
    end
  end
end
return 1
"""

_MERGE_EVENTS = """
local P, nsid, labels = ARGV[1], ARGV[2], ARGV[3]
local lists, changed, added = {}, {}, 0
for _, e in ipairs(cjson.decode(ARGV[4])) do
  local lk = P .. ':lth:t:' .. e[1]
  if nsid ~= '' then lk = P .. ':lth:{' .. nsid .. '}:' .. e[1] end
  local l = lists[lk]
  if not l then
    l = {}
    for i, x in ipairs(redis.call('LRANGE', lk, 0, -1)) do
      local _, h, at, rest = string.match(x, '^(%S+) (%S+) (%S+) (.*)$')
      l[i] = {h, at, rest, i}
    end
    lists[lk] = l
  end
  local r, dup = cjson.decode(e[3]), false
  for _, c in ipairs(l) do
    local cr = cjson.decode(c[3])
    if tonumber(c[2]) == tonumber(e[2]) and cr[1] == r[1] and cr[5] == r[5] then dup = true end
  end
  if not dup then
    l[#l + 1] = {redis.call('INCR', P .. ':lt:hseq'), e[2], e[3], #l + 1}
    changed[lk], added = true, added + 1
    if nsid ~= '' then
      redis.call('HSET', P .. ':lt:hns', nsid, labels)
      redis.call('SADD', P .. ':lt:{' .. nsid .. '}:hk', e[1])
      for s in string.gmatch(e[4], '%S+') do
        redis.call('SADD', P .. ':lt:hs:' .. s, nsid .. ':' .. e[1])
      end
    end
  end
end
for lk in pairs(changed) do
  local l = lists[lk]
  table.sort(l, function(a, b)
    local x, y = tonumber(a[2]), tonumber(b[2])
    if x ~= y then return x < y end
    return a[4] < b[4]
  end)
  redis.call('DEL', lk)
  for i, c in ipairs(l) do
    redis.call('RPUSH', lk, i .. ' ' .. c[1] .. ' ' .. c[2] .. ' ' .. c[3])
  end
end
return added
"""

_NEIGHBOURS = """
local P, nsid, mode = ARGV[1], ARGV[2], ARGV[3]
local mb, ord = P .. ':ltm:{' .. nsid .. '}:', P .. ':lt:{' .. nsid .. '}:ord'
local out = {}
if mode == 'prev' or mode == 'inputs' then
  for i = 4, #ARGV do
    local seq = redis.call('ZSCORE', ord, ARGV[i])
    local prev = redis.call('ZREVRANGEBYSCORE', ord, '(' .. (seq or '+inf'), '-inf', 'LIMIT', 0, 1)
    local text = prev[1] and redis.call('HGET', mb .. prev[1], 'raw') or false
    if mode == 'prev' then return text end
    local m = redis.call('HMGET', mb .. ARGV[i], 'seq', 'created')
    out[#out + 1] = (m[1] and m[2]) and 1 or 0
    out[#out + 1] = text
  end
  return out
end
for i = 4, #ARGV do
  local seq = redis.call('ZSCORE', ord, ARGV[i])
  if seq then
    local nxt = redis.call('ZRANGEBYSCORE', ord, '(' .. seq, '+inf', 'LIMIT', 0, 1)
    if nxt[1] and redis.call('HGET', mb .. nxt[1], 'ctx') == '1' then out[#out + 1] = nxt[1] end
  end
end
return out
"""

_ERASE = """
local P, nsid, enc = ARGV[1], ARGV[2], ARGV[3]
local base = P .. ':lt:{' .. nsid .. '}'
local keys = redis.call('ZRANGE', base .. ':ord', 0, -1)
for _, k in ipairs(keys) do redis.call('DEL', P .. ':ltm:{' .. nsid .. '}:' .. k) end
redis.call('DEL', base .. ':ord', base .. ':s', base .. ':i', base .. ':h')
redis.call('SREM', P .. ':lt:intents', nsid)
redis.call('HDEL', P .. ':lt:reg', enc)
redis.call('ZREM', P .. ':lt:regp', enc)
redis.call('SREM', P .. ':lt:regm', nsid)
return #keys
"""

_TOMBSTONE = """
local P = ARGV[1]
local out = {}
for i = 2, #ARGV, 4 do
  local nsid, key, hashed, idx = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local lk = P .. ':lth:{' .. nsid .. '}:' .. key
  local tk = P .. ':lth:t:' .. hashed
  for _, e in ipairs(redis.call('LRANGE', lk, 0, -1)) do
    local seq, h, at, rest = string.match(e, '^(%S+) (%S+) (%S+) (.*)$')
    local subjects = cjson.decode(rest)[7]
    if type(subjects) == 'string' then
      for s in string.gmatch(subjects, '%S+') do
        redis.call('SREM', P .. ':lt:hs:' .. s, nsid .. ':' .. key)
      end
    end
    redis.call('RPUSH', tk, seq .. ' ' .. h .. ' ' .. at .. ' ' ..
      '["erased",null,null,null,null,null,null]')
    out[#out + 1] = h .. ' ' .. idx
  end
  redis.call('DEL', lk)
  local hk = P .. ':lt:{' .. nsid .. '}:hk'
  redis.call('SREM', hk, key)
  if redis.call('SCARD', hk) == 0 then redis.call('HDEL', P .. ':lt:hns', nsid) end
end
return out
"""


_ENTRY = ("ns", "reg", "b", "m", "d")
"""Registry entry fields in P:lt:{n}:s."""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def encode_token(token: str) -> str:
    """A keyword token as RediSearch indexes it unchanged (one word, at most 128 bytes).

    Short ASCII tokens stay as they are; any other becomes `_` and a hash (FTS5 tokens
    never hold `_`, so the two forms cannot meet).
    """
    if _PLAIN.fullmatch(token):
        return token
    return "_" + hashlib.blake2b(token.encode(), digest_size=16).hexdigest()


def _float(value: Any) -> float | None:
    return None if value is None else float(_s(value))


def _search_reply(reply: Any) -> tuple[int, list[tuple[str, dict[str, str]]]]:
    """(total, [(doc id, fields)]) of an FT.SEARCH reply, RESP2 or RESP3."""
    if isinstance(reply, dict):
        reply = {_s(k): v for k, v in reply.items()}
        docs = []
        for row in reply.get("results", []):
            row = {_s(k): v for k, v in row.items()}
            attrs = row.get("extra_attributes") or {}
            docs.append((_s(row["id"]), {_s(k): _s(v) for k, v in attrs.items()}))
        return int(reply["total_results"]), docs
    total, rest = int(reply[0]), list(reply[1:])
    docs = []
    for i in range(0, len(rest), 2):
        flat = [_s(x) for x in rest[i + 1]]
        docs.append((_s(rest[i]), dict(zip(flat[::2], flat[1::2], strict=True))))
    return total, docs


class HeaderChange(NamedTuple):
    """A commit's change to the item headers (`P:lt:{n}:h`) and record count (`recs`).

    A header is an opaque string the tier packs; `recs` counts the records the
    namespace's headers describe, and is present only when every item has a header.
    """

    put: Mapping[str, str] = {}
    """Headers written, by key."""
    drop: Sequence[str] = ()
    """Keys whose headers go."""
    recs: int | None = None
    """The record count after the commit (None: `add` to the count, if kept)."""
    add: int = 0
    """Records added (negative: removed), when `recs` is None."""
    reset: bool = False
    """Drop every header of the namespace first (a backfill from Chroma)."""
    unsure: bool = False
    """Forget the record count (a repair): the next write reads the headers again."""


class RedisIndex:
    """The memory index of one store's long tier in Redis; see the module docstring.

    Methods have the signatures and meaning of `DocMirror`'s (with `docs=False`). Each
    takes the key prefix, which must be the one given here.

    Args:
        client: A synchronous, standalone `redis.Redis` with RediSearch.
        prefix: The store's key prefix.

    Raises:
        ConfigurationError: `client` is a Redis Cluster client.
    """

    def __init__(self, client: Any, prefix: str) -> None:
        if isinstance(client, RedisCluster):
            raise ConfigurationError(
                "The long tier's memory index runs Lua scripts over keys of several"
                " namespaces, which a Redis Cluster refuses. Give the store a standalone"
                " Redis (with the RediSearch module) for its long tier."
            )
        self._r = client
        self.prefix = prefix
        self.index_name = f"{prefix}:lt:kw"
        self._commit = client.register_script(_COMMIT)
        self._touch = client.register_script(_TOUCH)
        self._near = client.register_script(_NEIGHBOURS)
        self._erase = client.register_script(_ERASE)
        self._add_access = client.register_script(_ADD_ACCESS)
        self._keywords = client.register_script(_KEYWORDS)
        tombstone = client.register_script(_TOMBSTONE)
        self.history = RedisHistory(client, prefix, self._commit, tombstone)
        """Memory history, appended to by `commit`."""
        self.client = client
        """The Redis client (the store's)."""
        self.path = f"Redis ({prefix}:lt:reg)"
        """Where the namespace registry is (for messages)."""

    def setup(self) -> None:
        """Create the RediSearch index of the prefix (idempotent)."""
        c, t = "context", "TEXT"
        try:
            self._r.execute_command(
                "FT.CREATE", self.index_name, "ON", "HASH", "PREFIX", "1",
                f"{self.prefix}:ltm:", "STOPWORDS", "0", "SCHEMA", "ns", "TAG",
                "text", t, "NOSTEM", "WEIGHT", FTS_WEIGHTS[0], c, t, "NOSTEM", "WEIGHT",
                FTS_WEIGHTS[1], "time", t, "NOSTEM", "WEIGHT", FTS_WEIGHTS[2],
            )  # fmt: skip
        except ResponseError as e:
            if "already exists" not in str(e).lower():
                raise
        self._check_durability()

    def _check_durability(self) -> None:
        """Warn when Redis may drop the index: an eviction policy, or no persistence.

        Counts, history and the keyword index exist only in this Redis, so a policy that
        evicts keys under memory pressure loses them silently, and a Redis that persists
        nothing loses them on restart. A Redis that refuses CONFIG (a managed service)
        is not checked.
        """
        try:
            got = {
                _s(k): _s(v)
                for name in ("maxmemory-policy", "appendonly", "save")
                for k, v in self._r.config_get(name).items()
            }
        except ResponseError as e:
            logger.info("Redis refused CONFIG GET (%s): durability settings not checked", e)
            return
        policy = got.get("maxmemory-policy", "noeviction")
        if policy != "noeviction":
            logger.warning(
                "Redis maxmemory-policy is %r: under memory pressure it evicts the long"
                " tier's index (keyword index, access counts, history) without an error."
                " Set maxmemory-policy noeviction.",
                policy,
            )
        if got.get("appendonly", "no") != "yes" and not got.get("save", "").strip():
            logger.warning(
                "Redis persists nothing (appendonly no, no save points): a restart loses the"
                " long tier's index (keyword index, access counts, history) while Chroma"
                " keeps the memories. Set appendonly yes (appendfsync everysec)."
            )

    def close(self) -> None:
        """Nothing to release: the Redis client belongs to the store."""

    def _check(self, prefix: str) -> None:
        if prefix != self.prefix:
            raise ValueError(
                f"This RedisIndex serves key prefix {self.prefix!r}, not {prefix!r}:"
                " make one RedisIndex per store prefix."
            )

    def _base(self, nsid: str) -> str:
        return f"{self.prefix}:lt:{{{nsid}}}"

    def _mem(self, nsid: str, key: str) -> str:
        return f"{self.prefix}:ltm:{{{nsid}}}:{key}"

    # ------------------------------------------------------------- intent log
    def begin(
        self, prefix: str, nsid: str, keys: Iterable[str], graph: Sequence[PendingGraph] = ()
    ) -> None:
        """Record that these keys are about to change in Chroma (one transaction).

        Raises:
            ConfigurationError: `graph` holds triples; with a Chroma server the graph
                lives in a graph store, not in this index.
        """
        self._check(prefix)
        _no_graph(graph)
        keys = list(keys)
        if not keys:
            return
        pipe = self._r.pipeline(transaction=True)
        pipe.sadd(f"{self._base(nsid)}:i", *keys)
        pipe.sadd(f"{self.prefix}:lt:intents", nsid)
        pipe.execute()

    def commit(
        self,
        prefix: str,
        nsid: str,
        *,
        upserts: Mapping[str, Mapping[str, Any]] | None = None,
        deletes: Iterable[str] = (),
        expiries: Mapping[str, float] | None = None,
        done: Iterable[str] = (),
        memories: Mapping[str, MemoryRow] | None = None,
        forget: Iterable[str] = (),
        docs: bool = True,
        graph: Sequence[MemoryTriples] | None = None,
        history: tuple[Namespace, Sequence[HistoryRow]] | None = None,
        headers: HeaderChange | None = None,
        defer: list[tuple[str, dict[str, Any]]] | None = None,
    ) -> None:
        """Apply a batch and clear its pending keys, in one Lua script (`DocMirror.commit`).

        `upserts` and `expiries` concern the document copy, which this index does not
        keep: they are ignored, and `docs` must be False. `headers` changes the item
        headers and record count (`HeaderChange`). With `defer`, the script's part is
        appended there, for `apply` to run with other namespaces' parts.

        Raises:
            ConfigurationError: `docs` is True, or `graph` holds triples.
        """
        self._check(prefix)
        if docs:
            raise ConfigurationError(
                "RedisIndex keeps no document copy (Chroma holds the documents): commit"
                " with docs=False."
            )
        _no_graph(graph)
        rows = dict(memories or {})
        drop = [k for k in [*deletes, *forget] if k not in rows]
        done = list(dict.fromkeys(done))
        payload: dict[str, Any] = {"drop": drop, "rows": _rows(rows), "done": done, "hist": None}
        if history is not None and history[1]:
            payload["hist"] = _history_payload(*history)
        if headers is not None:
            payload["hdr"] = {
                "put": [[k, h] for k, h in headers.put.items()],
                "drop": list(headers.drop),
                "recs": headers.recs,
                "add": headers.add,
                "reset": headers.reset,
                "unsure": headers.unsure,
            }
        if not (drop or rows or done or payload["hist"] or headers is not None):
            return
        if defer is not None:
            defer.append((nsid, payload))
        else:
            self.apply([(nsid, payload)])

    def apply(
        self, parts: Sequence[tuple[str, dict[str, Any]]], release: Sequence[str] = ()
    ) -> int:
        """Run commit payloads of several namespaces, then release locks: one script call.

        Args:
            parts: (namespace id, payload) pairs, payloads as `commit` builds them.
            release: Lock keys and tokens to release (`NamespaceLocks.handoff`).

        Returns:
            How many of the locks were no longer held by their token.
        """
        parts = [(n, dict(p)) for n, p in parts]
        if release:
            if not parts:
                parts = [("", {"drop": [], "rows": [], "done": [], "hist": None})]
            parts[-1][1]["rel"] = list(release)
        if not parts:
            return 0
        args: list[Any] = [self.prefix]
        for nsid, payload in parts:
            args += [nsid, json.dumps(payload, ensure_ascii=False)]
        return int(self._commit(args=args))

    def recover(
        self,
        prefix: str,
        read: Callable[[str, list[str]], dict[str, dict[str, Any]]],
        describe: Callable[[dict[str, Any]], MemoryRow | None] | None = None,
        *,
        docs: bool = True,
        write_id: Callable[[dict[str, Any]], str] | None = None,
        history: RecoveredHistory | None = None,
        locks: NamespaceLocks | None = None,
    ) -> int:
        """Replay interrupted writes of `prefix` from Chroma's records (`DocMirror.recover`).

        No triples are recorded with intents here (see `begin`), so `write_id` is unused.
        The records before are unknown (no document copy): `history` gets `{}` for them.
        With `locks`, only namespaces whose lock is free are repaired, under their lock:
        the intents of a namespace another replica is writing are that write's.

        Returns:
            How many keys were repaired.
        """
        self._check(prefix)
        if docs:
            raise ConfigurationError("RedisIndex keeps no document copy: recover with docs=False.")
        nsids = sorted(_s(n) for n in self._r.smembers(f"{self.prefix}:lt:intents"))
        repaired = 0
        for nsid in nsids:
            if locks is None:
                keys = sorted(_s(k) for k in self._r.smembers(f"{self._base(nsid)}:i"))
                repaired += self.repair(nsid, keys, read, describe, history)
                continue
            try:  # a namespace another writer holds is that writer's (or its repairer's)
                with locks.hold([nsid], wait=0) as begun:
                    keys = begun.left.get(nsid, [])
                    repaired += self.repair(nsid, keys, read, describe, history)
            except NamespaceLockedError:
                logger.debug("intents of namespace %s left to its lock holder", nsid)
        return repaired

    def repair(
        self,
        nsid: str,
        keys: Sequence[str],
        read: Callable[[str, list[str]], dict[str, dict[str, Any]]],
        describe: Callable[[dict[str, Any]], MemoryRow | None] | None = None,
        history: RecoveredHistory | None = None,
    ) -> int:
        """Rebuild the index entries of `keys` (a dead writer's intents) from Chroma.

        The caller holds the namespace's lock. The keys' headers and the namespace's
        record count are dropped: the next write reads them again from Chroma.

        Returns:
            How many keys were repaired.
        """
        keys = list(keys)
        if not keys:
            return 0
        current = read(nsid, keys)
        rows = {} if describe is None else {k: describe(m) for k, m in current.items()}
        events = None if history is None else history(nsid, keys, current, {})
        self.commit(
            self.prefix,
            nsid,
            deletes=[k for k in keys if k not in current],
            done=keys,
            memories={k: row for k, row in rows.items() if row is not None},
            forget=[k for k, row in rows.items() if row is None],
            docs=False,
            history=events,
            headers=HeaderChange(drop=keys, unsure=True),
        )
        logger.info("repaired %d keys an interrupted write left in namespace %s", len(keys), nsid)
        return len(keys)

    def add_rows(
        self, prefix: str, nsid: str, rows: Mapping[str, MemoryRow], seqs: Mapping[str, int]
    ) -> None:
        """Add the memories the namespace does not hold yet, after its last, in one script.

        Rows the namespace already holds are left as they are (an import: what is there
        is newer). New rows come in the order of `rows`, without accesses, each at the
        write position `seqs` gives it when that is past the namespace's last (else
        right after it).
        """
        self._check(prefix)
        if rows:
            found = [[*r, seqs[r[0]]] for r in _rows(rows)]
            payload = {"drop": [], "rows": found, "done": [], "hist": None, "keep": True}
            self._commit(args=[self.prefix, nsid, json.dumps(payload, ensure_ascii=False)])

    def add_access(
        self,
        prefix: str,
        nsid: str,
        counts: Mapping[str, tuple[int, float | None]],
        *,
        once: str | None = None,
    ) -> bool:
        """Add access counts (and a latest access time) to memories, in one script.

        `counts` maps keys to (accesses, last access or None). Counts add up, the last
        access only moves forward, keys that are not memories are left alone.

        Args:
            prefix: The store's key prefix.
            nsid: Namespace id.
            counts: The accesses to add per key.
            once: A Redis set recording namespaces done: when it already holds `nsid`
                nothing is added (so an interrupted import can run again).

        Returns:
            Whether the counts were added.
        """
        self._check(prefix)
        args: list[Any] = [self.prefix, nsid, once or ""]
        for key, (count, last) in counts.items():
            args += [key, int(count), "" if last is None else repr(float(last))]
        return bool(self._add_access(args=args))

    # ------------------------------------------------------------- registry
    def is_filled(self, prefix: str) -> bool:
        """Whether the one-off job named `prefix` (a marker like "P/mem") is done."""
        return bool(self._r.sismember(f"{self.prefix}:lt:filled", prefix))

    def mark_filled(self, prefix: str) -> None:
        """Record that the one-off job named `prefix` is done."""
        self._r.sadd(f"{self.prefix}:lt:filled", prefix)

    def registry(
        self,
        prefix: str,
        *,
        nsids: Sequence[str] | None = None,
        under: str = "",
        moving: bool = False,
    ) -> list[tuple[str, dict[str, Any]]]:
        """(namespace id, entry) of the given namespace ids, else of those under `under`.

        `moving`: only namespaces whose move left records in a bucket. Entries are
        those of `DocMirror.registry` (`ns`, `ttl`, `b`, `m`, `d`).
        """
        self._check(prefix)
        named: list[tuple[str, str | None]]
        if nsids is not None:
            named = [(n, None) for n in nsids]
        elif moving:
            named = [(_s(n), None) for n in sorted(self._r.smembers(f"{prefix}:lt:regm"))]
        else:
            found = self._r.zrangebylex(f"{prefix}:lt:regp", f"[{under}", f"({under}\U0010ffff")
            named = [(namespace_id(decode_namespace(_s(e))), _s(e)) for e in found]
        pipe = self._r.pipeline(transaction=False)
        for nsid, _ in named:
            pipe.hmget(f"{self._base(nsid)}:s", *_ENTRY)
        out: list[tuple[str, dict[str, Any]]] = []
        for (nsid, enc), values in zip(named, pipe.execute() if named else [], strict=True):
            ns, flag, *rest = (None if v is None else _s(v) for v in values)
            if flag is None or (ns or enc) is None:
                continue
            entry: dict[str, Any] = {"ns": ns or enc, "ttl": flag == "1"}
            entry.update((k, int(v)) for k, v in zip(_ENTRY[2:], rest, strict=True) if v)
            out.append((nsid, entry))
        return out

    def registry_put(self, prefix: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Write whole registry entries (namespace id -> entry) in one transaction.

        A TTL flag already set stays set (another process may have set it meanwhile).
        """
        self._check(prefix)
        if entries:
            pipe = self._r.pipeline(transaction=True)
            self._put(pipe, entries)
            pipe.execute()

    def _put(self, pipe: Any, entries: Mapping[str, Mapping[str, Any]]) -> None:
        for nsid, m in entries.items():
            base, enc = f"{self._base(nsid)}:s", m["ns"]
            kept = {k: m[k] for k in _ENTRY[2:] if m.get(k) is not None}
            pipe.hset(base, mapping={"ns": enc, **kept})
            if len(kept) < len(_ENTRY) - 2:
                pipe.hdel(base, *(k for k in _ENTRY[2:] if k not in kept))
            flag = "1" if m.get("ttl") else "0"
            for key, field in ((f"{self.prefix}:lt:reg", enc), (base, "reg")):
                (pipe.hset if m.get("ttl") else pipe.hsetnx)(key, field, flag)
            pipe.zadd(f"{self.prefix}:lt:regp", {enc: 0})
            (pipe.sadd if "m" in kept else pipe.srem)(f"{self.prefix}:lt:regm", nsid)

    def registry_drop(self, prefix: str, nsid: str) -> None:
        """Remove a namespace's registry entry."""
        self._check(prefix)
        base = f"{self._base(nsid)}:s"
        enc = self._r.hget(base, "ns")
        pipe = self._r.pipeline(transaction=True)
        if enc is not None:
            pipe.zrem(f"{prefix}:lt:regp", _s(enc))
            pipe.hdel(f"{prefix}:lt:reg", _s(enc))
        pipe.hdel(base, *_ENTRY)
        pipe.srem(f"{prefix}:lt:regm", nsid)
        pipe.execute()

    def registry_buckets(self, prefix: str) -> int | None:
        """The prefix's bucket count (None: its registry is not set up yet)."""
        self._check(prefix)
        found = self._r.get(f"{prefix}:lt:buckets")
        return None if found is None else int(found)

    def set_up_registry(
        self, prefix: str, buckets: int, entries: Iterable[tuple[str, Mapping[str, Any]]] = ()
    ) -> None:
        """Record the prefix's bucket count and first entries, in one transaction.

        Nothing is written if another process recorded the bucket count first (its
        copy stands: writes and erasures may have followed it).
        """
        self._check(prefix)
        marker = f"{prefix}:lt:buckets"

        def set_up(pipe: Any) -> None:
            if pipe.exists(marker):
                return
            pipe.multi()
            self._put(pipe, dict(entries))
            pipe.set(marker, buckets)

        self._r.transaction(set_up, marker)

    def registered(self, prefix: str, under: str) -> list[tuple[str, bool]]:
        """Encoded namespaces starting with the encoded prefix `under`, with their TTL flag."""
        self._check(prefix)
        names = [
            _s(n)
            for n in self._r.zrangebylex(f"{prefix}:lt:regp", f"[{under}", f"({under}\U0010ffff")
        ]
        flags = self._r.hmget(f"{prefix}:lt:reg", names) if names else []
        return [(n, _s(f) == "1") for n, f in zip(names, flags, strict=True) if f is not None]

    # ------------------------------------------------------------- memory statistics
    def memory_stats(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, MemoryStats]:
        """Ranking fields and access statistics of the given keys that are memories."""
        self._check(prefix)
        keys = list(dict.fromkeys(keys))
        pipe = self._r.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(self._mem(nsid, key), "seq", "type", "imp", "occ", "created", "ac", "la")
        return {k: s for k, v in zip(keys, pipe.execute(), strict=True) if (s := _stats(v))}

    def memory_page(
        self, prefix: str, nsid: str, after: int, limit: int
    ) -> list[tuple[int, str, MemoryStats]]:
        """One page of a namespace's memories in write order: (seq, key, stats).

        Args:
            prefix: The store's key prefix.
            nsid: Namespace id.
            after: Return memories written after this position (0 for the first page).
            limit: Page size.
        """
        self._check(prefix)
        keys = [
            _s(k)
            for k in self._r.zrangebyscore(
                f"{self._base(nsid)}:ord", f"({after}", "+inf", start=0, num=limit
            )
        ]
        stats = self.memory_stats(prefix, nsid, keys)
        return [(stats[k].seq, k, stats[k]) for k in keys if k in stats]

    def touch(self, prefix: str, hits: Sequence[tuple[str, str]], now: float) -> None:
        """Count one access of each (namespace id, key) at time `now`, atomically.

        Counts from every process add up (HINCRBY), `last_accessed` only moves forward,
        and a key no longer a memory is left alone.
        """
        self._check(prefix)
        if hits:
            self._touch(args=[prefix, repr(float(now)), *[x for hit in hits for x in hit]])

    # ------------------------------------------------------------- keyword index
    def keyword_search(
        self, prefix: str, nsid: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, float]]:
        """BM25 search of one namespace for any of `terms` (see `DocMirror.keyword_search`).

        Args:
            prefix: The store's key prefix.
            nsid: Namespace id.
            terms: Lower-cased query words (not stemmed), one word each.
            limit: Most results to return.

        Returns:
            (key, BM25 score) pairs, best first; higher scores are better.
        """
        self._check(prefix)
        if limit <= 0 or not terms:
            return []
        terms = list(dict.fromkeys(terms))
        firsts = [found[:1] for found in fts_terms_many(terms)]
        args: list[Any] = [prefix, self.index_name, nsid, PRUNE_FROM, limit, *BM25_PARAMS]
        for stem, first in zip(query_stems(terms), firsts, strict=True):
            args += [encode_token(stem) if stem else "", encode_token(first[0]) if first else ""]
        try:
            reply = [_s(x) for x in self._keywords(args=args)]
        except ResponseError as e:
            # The script says PARTIAL when a search returned cut results; RediSearch
            # itself raises "Timeout limit was reached" when the limit hits elsewhere.
            if not str(e).startswith(("PARTIAL", "Timeout limit")):
                raise
            raise BackendUnavailableError(
                f"RediSearch stopped the keyword search of namespace {nsid} at its time limit"
                " (FT.CONFIG GET TIMEOUT), so its results would be partial. Raise the"
                " limit (FT.CONFIG SET TIMEOUT <ms>, 0: none) or search a smaller namespace."
            ) from e
        if not reply:
            return []
        rows, tokens, last, found, counts, *keys = reply
        df = dict(zip(args[10:], map(int, found.split()), strict=True))
        by_stem = {s: df[encode_token(s)] for s in query_stems(terms) if s}
        phrases = [
            encode_token(f[0])
            for t, f in zip(terms, firsts, strict=True)
            if f and t in kept_terms(terms, by_stem, int(last))
        ]
        nums = list(map(int, counts.split()))
        width = 2 + 3 * len(phrases)
        found_rows = [
            (key, nums[i * width], nums[i * width + 1], nums[i * width + 2 : (i + 1) * width])
            for i, key in enumerate(keys)
        ]
        return rank(found_rows, phrases, int(rows), int(tokens), df, limit)

    def context_successors(
        self, prefix: str, nsid: str, keys: Sequence[str], skip: Iterable[str]
    ) -> list[str]:
        """The memories written right after `keys` that carry a context key made with one.

        Memories in `keys` or `skip` are left out.
        """
        self._check(prefix)
        if not keys:
            return []
        gone = {*keys, *skip}
        found = self._near(args=[prefix, nsid, "next", *keys])
        return list(dict.fromkeys(k for k in map(_s, found) if k not in gone))

    def previous_text(self, prefix: str, nsid: str, key: str) -> str | None:
        """Own text of the memory written just before `key` (the last one, when new)."""
        self._check(prefix)
        found = self._near(args=[prefix, nsid, "prev", key])
        return None if found is None else _s(found)

    def context_inputs(self, prefix: str, nsid: str, keys: Sequence[str]) -> ContextInputs:
        """Which of `keys` are memories, and the text before each, in one round trip."""
        self._check(prefix)
        keys = list(dict.fromkeys(keys))
        if not keys:
            return ContextInputs(frozenset(), {})
        found = self._near(args=[prefix, nsid, "inputs", *keys])
        memories = frozenset(k for k, flag in zip(keys, found[0::2], strict=True) if int(flag))
        previous = {k: None if t is None else _s(t) for k, t in zip(keys, found[1::2], strict=True)}
        return ContextInputs(memories, previous)

    # ------------------------------------------------------------- erasure
    def namespace_keys(self, prefix: str, nsid: str) -> set[str]:
        """Keys the index holds anything of in a namespace (memories, intents)."""
        self._check(prefix)
        pipe = self._r.pipeline(transaction=False)
        pipe.zrange(f"{self._base(nsid)}:ord", 0, -1)
        pipe.smembers(f"{self._base(nsid)}:i")
        members, pending = pipe.execute()
        return {_s(k) for k in [*members, *pending]}

    def erase_namespace(self, prefix: str, nsid: str, ns: str) -> None:
        """Remove a namespace's memories, intents and registry entry `ns`, then scrub.

        The memory history stays (its events become tombstones through `history`).
        """
        self._check(prefix)
        self._erase(args=[prefix, nsid, ns])
        self.scrub()

    def scrub(self) -> None:
        """Run RediSearch's garbage collector, so deleted memories' terms leave the index.

        What Redis itself keeps of deleted keys (AOF, RDB snapshots) needs its own
        steps: BGREWRITEAOF, a new snapshot.
        """
        collect_search_garbage(self._r, [self.index_name])


def _history_payload(ns: Namespace, events: Sequence[HistoryRow]) -> dict[str, Any]:
    """The events of a commit as the commit script takes them."""
    return {
        "ns": json.dumps(list(ns), ensure_ascii=False),
        "ev": [
            [e.key, repr(float(e.at)), json.dumps(list(e[2:]), ensure_ascii=False)]
            + [e.subjects or ""]
            for e in events
        ],
    }


def _rows(rows: Mapping[str, MemoryRow]) -> list[list[Any]]:
    """Memory rows as the commit script takes them (texts tokenised in one pass)."""
    texts = [t for row in rows.values() for t in (row.text, row.context, row.time_text)]
    tokens = [[encode_token(t) for t in found] for found in fts_terms_many(texts)]
    out = []
    for i, (key, row) in enumerate(rows.items()):
        text, context, time_ = tokens[3 * i : 3 * i + 3]
        out.append(
            [key, row.text, " ".join(text), " ".join(context), " ".join(time_)]
            + [len(text), len(context), len(time_), "1" if row.context else "0"]
            + [row.memory_type, repr(float(row.importance))]
            + [None if row.occurred_at is None else repr(float(row.occurred_at))]
            + [repr(float(row.created_at))]
        )
    return out


def _no_graph(graph: Sequence[Any] | None) -> None:
    if graph:
        raise ConfigurationError(
            "RedisIndex keeps no knowledge graph: with a Chroma server the graph lives in a"
            " graph store (graph={'backend': 'falkordb', ...}); pass no triples to the index."
        )


def _stats(values: Sequence[Any]) -> MemoryStats | None:
    seq, mtype, imp, occ, created, ac, la = values
    if seq is None or created is None:
        return None
    return MemoryStats(
        int(_s(seq)),
        _s(mtype),
        float(_s(imp)),
        _float(occ),
        float(_s(created)),
        int(_s(ac or 0)),
        _float(la),
    )


class _Event(NamedTuple):
    seq: int
    order: int
    at: float
    rest: list[Any]


def _parse(entry: Any) -> _Event:
    seq, order, at, rest = _s(entry).split(" ", 3)
    return _Event(int(seq), int(order), float(at), json.loads(rest))


class RedisHistory:
    """Memory history in Redis, with the methods and meaning of `HistoryTable`.

    `commit` appends events in the script that applies the memories' change.
    """

    def __init__(self, client: Any, prefix: str, commit: Any, tombstone: Any) -> None:
        self._r = client
        self._p = prefix
        self._commit = commit
        self._tomb = tombstone
        self._merge = client.register_script(_MERGE_EVENTS)

    def _list(self, nsid: str, key: str) -> str:
        return f"{self._p}:lth:{{{nsid}}}:{key}"

    def append(self, prefix: str, nsid: str, ns: Namespace, rows: Sequence[HistoryRow]) -> None:
        """Append events of one namespace's memories, each numbered after its key's last."""
        if rows:
            payload = {"drop": [], "rows": [], "done": [], "hist": _history_payload(ns, rows)}
            self._commit(args=[self._p, nsid, json.dumps(payload, ensure_ascii=False)])

    def merge(self, nsid: str, ns: Namespace | None, rows: Sequence[HistoryRow]) -> int:
        """Add events of one namespace (or tombstones: `nsid` TOMBSTONE, `ns` None) once.

        An event already held (same key, time, event and content hash) is skipped, and
        each memory's events are put in time order (events of one time keep their order),
        then renumbered. One script, so a concurrent writer loses nothing.

        Returns:
            How many events were added.
        """
        if not rows:
            return 0
        labels = "" if ns is None else json.dumps(list(ns), ensure_ascii=False)
        events = _history_payload(ns or (), rows)["ev"]
        return int(
            self._merge(args=[self._p, nsid, labels, json.dumps(events, ensure_ascii=False)])
        )

    def _pairs(self, selection: Selection) -> list[tuple[str, str]]:
        """(namespace id, key) of every memory the selection names that has events."""
        pairs = dict.fromkeys((n, k) for n, k in selection.pairs if n != TOMBSTONE)
        for subject in dict.fromkeys(selection.subjects):
            for m in sorted(_s(x) for x in self._r.smembers(f"{self._p}:lt:hs:{subject}")):
                nsid, _, key = m.partition(":")
                pairs[(nsid, key)] = None
        for nsid in dict.fromkeys(selection.nsids):
            if nsid != TOMBSTONE:
                keys = self._r.smembers(f"{self._p}:lt:{{{nsid}}}:hk")
                pairs.update(dict.fromkeys((nsid, _s(k)) for k in sorted(keys, key=_s)))
        return list(pairs)

    def _read(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, _Event]]:
        pipe = self._r.pipeline(transaction=False)
        for nsid, key in pairs:
            pipe.lrange(self._list(nsid, key), 0, -1)
        return [
            (nsid, key, _parse(e))
            for (nsid, key), found in zip(pairs, pipe.execute(), strict=True)
            for e in found
        ]

    def _labels(self, nsids: Iterable[str]) -> dict[str, Namespace]:
        nsids = list(dict.fromkeys(nsids))
        found = self._r.hmget(f"{self._p}:lt:hns", nsids) if nsids else []
        return {n: tuple(json.loads(_s(v))) for n, v in zip(nsids, found, strict=True) if v}

    def tombstone(
        self,
        prefix: str,
        selection: Selection,
        hashed: Callable[[Namespace, str], str],
        *,
        dry_run: bool = False,
    ) -> list[tuple[Namespace, str]]:
        """Make every selected event content-free; the (namespace, key) of each.

        One script moves each selected memory's events to its tombstone list (`hashed`
        names it), so a crash leaves a memory's events either all moved or none.
        """
        pairs = self._pairs(selection)
        labels = self._labels(n for n, _ in pairs)
        pairs = [p for p in pairs if p[0] in labels]
        if dry_run:
            found = sorted(self._read(pairs), key=lambda r: r[2].order)
            return [(labels[n], k) for n, k, _ in found]
        if not pairs:
            return []
        args: list[Any] = [self._p]
        for i, (nsid, key) in enumerate(pairs):
            args += [nsid, key, hashed(labels[nsid], key), i]
        moved = sorted(tuple(map(int, _s(x).split())) for x in self._tomb(args=args))
        return [(labels[pairs[i][0]], pairs[i][1]) for _, i in moved]

    def events(self, prefix: str, nsid: str, key: str, tombstone: str) -> list[StoredEvent]:
        """Events of one memory: its tombstones (key `tombstone`) first, then its own."""
        pipe = self._r.pipeline(transaction=False)
        pipe.lrange(f"{self._p}:lth:t:{tombstone}", 0, -1)
        pipe.lrange(self._list(nsid, key), 0, -1)
        pipe.hget(f"{self._p}:lt:hns", nsid)
        tombs, own, labels = pipe.execute()
        ns = None if labels is None else tuple(json.loads(_s(labels)))
        out = [_stored(None, tombstone, e) for e in sorted(map(_parse, tombs), key=_seq)]
        return out + [_stored(ns, key, _parse(e)) for e in own]

    def select(self, prefix: str, selection: Selection) -> list[StoredEvent]:
        """The selected events, by namespace id, key and position."""
        found = self._read(self._pairs(selection))
        labels = self._labels(n for n, _, _ in found)
        found.sort(key=lambda r: (r[0], r[1], r[2].seq))
        return [_stored(labels.get(n), k, e) for n, k, e in found]

    def last(
        self, prefix: str, nsid: str, keys: Sequence[str]
    ) -> dict[str, tuple[str, str | None]]:
        """(event, content hash) of the last event of each of `keys` that has one."""
        pipe = self._r.pipeline(transaction=False)
        for key in keys:
            pipe.lindex(self._list(nsid, key), -1)
        out = {}
        for key, entry in zip(keys, pipe.execute(), strict=True):
            if entry is not None:
                e = _parse(entry)
                out[key] = (str(e.rest[0]), e.rest[4])
        return out

    def namespace_of(self, prefix: str, nsid: str) -> Namespace | None:
        """The namespace of a namespace id that has events (None: it has none)."""
        found = self._r.hget(f"{self._p}:lt:hns", nsid)
        return None if found is None else tuple(json.loads(_s(found)))

    def namespaces(self, prefix: str) -> list[Namespace]:
        """Every namespace with events (memories deleted since included)."""
        return sorted(tuple(json.loads(_s(v))) for v in self._r.hvals(f"{self._p}:lt:hns"))


def _seq(e: _Event) -> int:
    return e.seq


def _stored(ns: Namespace | None, key: str, e: _Event) -> StoredEvent:
    r = e.rest
    return StoredEvent(ns, key, e.seq, e.at, r[0], r[1], r[2], r[3], r[4], r[5])
