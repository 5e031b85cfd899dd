"""The short-term tier: plain Redis data structures, no modules.

Key layout (every key of one namespace shares the hash tag `{<namespace id>}`, so
the keys written together live in one Redis Cluster slot):

- `<prefix>:{<nsid>}:i:<key>`  the item document (JSON string, see `store._document`),
  with native expiry;
- `<prefix>:{<nsid>}:v:<key>`  its embeddings as float32 bytes, same expiry;
- `<prefix>:{<nsid>}:z`        sorted set of the namespace's keys, scored by expiry
  time in whole epoch milliseconds (`+inf` for items without TTL). The score is the
  item's expiry as reads report it; a TTL item missing from the set (swept) is expired.
- `<prefix>:{registry}:ns`     sorted set (all scores 0) of encoded namespaces, read
  by lexicographic range to find the namespaces under a prefix;
- `<prefix>:{registry}:live`, `:busy`, `:dirty`, `:ver`  which namespaces hold a live
  item, so listing them needs no call per namespace (see `redis_liveness`);
- `<prefix>:{registry}:model`  the size and model name of the vectors the tier holds
  (JSON, set by the first write with vectors; stores of another size or model are
  refused before they write or search).

Search ranks in-process: it loads every live item of the matching namespaces, so
it is meant for session-sized namespaces (up to a few thousand items each).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ParamSpec, TypeVar

import numpy as np
import redis
from redis.exceptions import AuthenticationError as RedisAuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from langgraph_tiered_memory._redis_client import client_budget, describe_client, redis_call
from langgraph_tiered_memory.errors import BackendUnavailableError, ConfigurationError
from langgraph_tiered_memory.privacy._redact import mask_url
from langgraph_tiered_memory.store.tiers._document import (
    VERSION_PATTERN,
    decode_document,
    encode_document,
    item_version,
)
from langgraph_tiered_memory.store.tiers._filters import matches_filter
from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace, StoredItem
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    namespace_id,
)
from langgraph_tiered_memory.store.tiers._vectors import cosine_similarities
from langgraph_tiered_memory.store.tiers.base import ScoredItem
from langgraph_tiered_memory.store.tiers.redis_erase import RedisErase
from langgraph_tiered_memory.store.tiers.redis_liveness import Liveness

__all__ = ["RedisTier"]

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def redis_errors(where: str, timeout: float | None = None) -> Iterator[None]:
    """Turn connection failures into `BackendUnavailableError` naming the fix."""
    try:
        yield
    except RedisAuthenticationError as e:
        raise BackendUnavailableError(
            f"Redis at {mask_url(where)} refused the credentials: {e}. Check the user name"
            " and password in redis_url / REDIS_URL (or the ACL of that user)."
        ) from e
    except (RedisConnectionError, RedisTimeoutError) as e:
        bound = f" (each store call waits on Redis at most {timeout:g} s)" if timeout else ""
        raise BackendUnavailableError(
            f"Redis is unreachable at {mask_url(where)}: {e}{bound}. Check that the server"
            " is running, accepts connections at that address and is not paused or"
            " overloaded; check the URL given as redis_url / REDIS_URL. Without a server,"
            " use langgraph_tiered_memory.embedded.redis.EmbeddedRedis."
        ) from e


def _one_call(method: Callable[P, R]) -> Callable[P, R]:
    """Run a tier operation as one Redis call: its round trips share one time budget."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with redis_call():
            return method(*args, **kwargs)

    return wrapper


class RedisTier(RedisErase):
    """Stores namespaces routed to `"short"` in Redis."""

    name = "short"

    def __init__(
        self,
        client: redis.Redis,
        *,
        key_prefix: str,
        owns_client: bool = False,
        dims: int = 0,
        embedder: str | None = None,
    ):
        self.client = client
        self.prefix = key_prefix
        self.dims = dims
        """The store's embedding size; 0 (no index): nothing is recorded or checked."""
        self.embedder = embedder
        """The embedding model's name (`embeddings.embedder_name`); None records none."""
        self._model_checked = dims == 0
        self._owns_client = owns_client
        self._where = describe_client(client)
        # The per-call bound of clients made from a URL (see `_redis_client`), for messages.
        self._timeout: float | None = client_budget(client)
        # A Redis Cluster client: reads spanning namespaces go through `mget_nonatomic`
        # (one MGET per slot); everything else already stays in one slot per command.
        self._cluster = hasattr(client, "mget_nonatomic")
        self._liveness = Liveness(client, key_prefix)
        self._registry = self._liveness.registry
        self._decoded: dict[str, Namespace] = {}

    # ----------------------------------------------------------------- key names
    def _base(self, namespace: Namespace) -> str:
        return f"{self.prefix}:{{{namespace_id(namespace)}}}"

    @_one_call
    def setup(self) -> None:
        """Check that Redis answers."""
        with redis_errors(self._where, self._timeout):
            self.client.ping()

    def _check_model(self, *, record: bool) -> None:
        """Refuse a store of another size or model than the vectors the tier holds.

        The first write with vectors records the size and the model's name (a model
        that names none is compared by size only); until a match, each check is one
        round trip, after it none.
        """
        if self._model_checked:
            return
        key = f"{self.prefix}:{{registry}}:model"
        with redis_errors(self._where, self._timeout):
            pipe = self.client.pipeline(transaction=False)
            if record:
                pipe.set(key, json.dumps({"dims": self.dims, "model": self.embedder}), nx=True)
            pipe.get(key)
            raw = pipe.execute()[-1]
        if raw is None:
            return  # nothing embedded yet
        stored = json.loads(raw)
        found, size = stored.get("model"), stored.get("dims")
        if size != self.dims:
            raise ConfigurationError(
                f"The short-term tier under key_prefix {self.prefix!r} holds embeddings of"
                f" {size} dimensions, but this store's are {self.dims}: open the store with"
                " the index configuration it was written with, or use another key_prefix."
            )
        if found is not None and self.embedder is not None and found != self.embedder:
            raise ConfigurationError(
                f"The short-term tier under key_prefix {self.prefix!r} holds embeddings of"
                f" the model {found!r}, but this store embeds with {self.embedder!r}:"
                " vectors of two models do not compare. Open the store with the embedder"
                " it was written with, or use another key_prefix for the new model."
            )
        self._model_checked = True

    def _erase_errors(self) -> AbstractContextManager[None]:
        """`redis_errors` for the erase methods (`redis_erase.RedisErase`)."""
        return redis_errors(self._where, self._timeout)

    def close(self) -> None:
        """Close the client if the tier created it."""
        if self._owns_client:
            self.client.close()

    # ----------------------------------------------------------------- decoding
    @staticmethod
    def _live_item(
        namespace: Namespace, key: str, raw: bytes | str, score: float | None, now: float
    ) -> StoredItem | None:
        """The item of document `raw` if live at `now`; its expiry is its key-set `score`."""
        doc = decode_document(raw)
        if score is None and doc.ttl is not None:
            return None  # swept from the key set: expired
        expires_at = None if score is None or score == math.inf else score / 1000
        item = doc.item(namespace, key, expires_at)
        return None if item.expired(now) else item

    # ----------------------------------------------------------------- reads
    @_one_call
    def get(
        self, namespace: Namespace, keys: Sequence[str], *, now: float
    ) -> dict[str, StoredItem]:
        """Live items of `namespace` with the given keys."""
        if not keys:
            return {}
        base = self._base(namespace)
        with redis_errors(self._where, self._timeout):
            pipe = self.client.pipeline(transaction=True)  # one slot: the hash tag
            # MGET by name: cluster pipelines block `mget`; these keys share one slot.
            pipe.execute_command("MGET", *[f"{base}:i:{k}" for k in keys])
            pipe.zmscore(f"{base}:z", list(keys))
            raws, scores = pipe.execute()
        out: dict[str, StoredItem] = {}
        for key, raw, score in zip(keys, raws, scores, strict=True):
            item = None if raw is None else self._live_item(namespace, key, raw, score, now)
            if item is not None:
                out[key] = item
        return out

    def _range(self, prefix: Namespace) -> tuple[bytes, bytes]:
        """The registry's lexicographic range of the namespaces under `prefix`."""
        if not prefix:
            return b"-", b"+"
        enc = encode_namespace(prefix).encode("utf-8")
        return b"[" + enc, b"[" + enc + b"\xff"

    def _registered(self, prefix: Namespace) -> list[Namespace]:
        with redis_errors(self._where, self._timeout):
            members: list[Any] = self.client.zrangebylex(self._registry, *self._range(prefix))
        return [
            self._decode(m.decode("utf-8") if isinstance(m, bytes) else str(m)) for m in members
        ]

    def _decode(self, enc: str) -> Namespace:
        """`decode_namespace`, remembered (listing decodes every namespace each time)."""
        ns = self._decoded.get(enc)
        if ns is None:
            if len(self._decoded) >= _DECODED_MAX:
                self._decoded.clear()
            ns = self._decoded[enc] = decode_namespace(enc)
        return ns

    @_one_call
    def namespaces(self, prefix: Namespace, *, now: float) -> list[Namespace]:
        """Namespaces under `prefix` with at least one live item."""
        with redis_errors(self._where, self._timeout):
            live = self._liveness.live(
                *self._range(prefix),
                lambda enc: f"{self._base(decode_namespace(enc))}:z",
                now * 1000,
            )
        return [self._decode(enc) for enc in live]  # the store sorts

    def _live(self, namespaces: list[Namespace], now: float) -> list[dict[str, float]]:
        """Key-set scores (expiry in ms) of the live keys of each namespace, in key order."""
        now_ms = now * 1000
        with redis_errors(self._where, self._timeout):
            pipe = self.client.pipeline(transaction=False)
            for ns in namespaces:
                pipe.zrangebyscore(f"{self._base(ns)}:z", f"({now_ms}", "+inf", withscores=True)
            res = pipe.execute()
        return [
            dict(sorted((m.decode("utf-8") if isinstance(m, bytes) else m, sc) for m, sc in pairs))
            for pairs in res
        ]

    def _live_keys(self, namespaces: list[Namespace], now: float) -> list[list[str]]:
        """The live keys of each namespace, sorted."""
        return [list(scores) for scores in self._live(namespaces, now)]

    @_one_call
    def search(
        self,
        prefix: Namespace,
        *,
        query_vector: Sequence[float] | None,
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[ScoredItem]:
        """Rank the live items under `prefix` in-process.

        With a query, only the vectors of every live item are read; documents are
        then fetched in rank order until `limit` items pass the filter. With
        `namespace_filter`, only the namespaces it accepts are read.
        """
        namespaces = sorted(
            ns
            for ns in self._registered(prefix)
            if namespace_filter is None or namespace_filter(ns)
        )
        if not namespaces:
            return []
        live = {
            (ns, k): score
            for ns, scores in zip(namespaces, self._live(namespaces, now), strict=True)
            for k, score in scores.items()
        }
        pairs = list(live)
        if not pairs or limit <= 0:
            return []
        if query_vector is None:
            return [(item, None) for item in self._take(pairs, live, filter, limit, now)]
        self._check_model(record=False)
        blobs = self._mget([f"{self._base(ns)}:v:{k}" for ns, k in pairs])
        dims = len(query_vector)
        rows: list[np.ndarray] = []
        owners: list[int] = []
        unindexed: list[tuple[Namespace, str]] = []
        for idx, blob in enumerate(blobs):
            if blob:
                matrix = np.frombuffer(blob, dtype=np.float32).reshape(-1, dims)
                rows.append(matrix)
                owners.extend([idx] * matrix.shape[0])
            else:
                unindexed.append(pairs[idx])
        ranked: list[tuple[Namespace, str]] = []
        best: dict[int, float] = {}
        if rows:
            sims = cosine_similarities(query_vector, np.vstack(rows).astype(np.float64))
            for owner, sim in zip(owners, sims.tolist(), strict=True):
                if sim > best.get(owner, -np.inf):
                    best[owner] = sim
            order = sorted(best, key=lambda o: (-best[o], pairs[o]))
            ranked = [pairs[o] for o in order]
        scores = {pairs[o]: s for o, s in best.items()}
        out: list[ScoredItem] = [
            (item, scores[(item.namespace, item.key)])
            for item in self._take(ranked, live, filter, limit, now)
        ]
        if len(out) < limit and unindexed:
            out.extend(
                (item, None) for item in self._take(unindexed, live, filter, limit - len(out), now)
            )
        return out

    def _mget(self, names: list[str], chunk: int = 2000) -> list[Any]:
        out: list[Any] = []
        with redis_errors(self._where, self._timeout):
            for start in range(0, len(names), chunk):
                part = names[start : start + chunk]
                if self._cluster:  # the keys span namespaces, so hash slots
                    out.extend(self.client.mget_nonatomic(part))  # type: ignore[attr-defined]
                else:
                    out.extend(self.client.mget(part))
        return out

    def _take(
        self,
        pairs: list[tuple[Namespace, str]],
        scores: dict[tuple[Namespace, str], float],
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
    ) -> list[StoredItem]:
        """Documents of `pairs`, in order, that are live and match, up to `limit`.

        `scores` holds the key-set score (expiry) of each pair.
        """
        found: list[StoredItem] = []
        step = max(limit * 2, 64)
        for start in range(0, len(pairs), step):
            chunk = pairs[start : start + step]
            raws = self._mget([f"{self._base(ns)}:i:{k}" for ns, k in chunk])
            for (ns, k), raw in zip(chunk, raws, strict=True):
                if raw is None:
                    continue
                item = self._live_item(ns, k, raw, scores.get((ns, k)), now)
                if item is not None and matches_filter(item.value, filter):
                    found.append(item)
                    if len(found) >= limit:
                        return found
        return found

    # ----------------------------------------------------------------- writes
    def check_writes(self, namespaces: Sequence[Namespace]) -> None:
        """Refuse a store of another embedding size or model (reads; see `_check_model`).

        Before any tier of a batch writes, so a refused batch writes nothing anywhere.
        """
        self._check_model(record=False)

    @_one_call
    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        """Write each namespace's changes in one MULTI/EXEC transaction.

        Round trips: one to mark every namespace busy (registering new ones) and read
        the documents being replaced, one transaction per namespace, and one to raise
        the namespaces' liveness bounds.
        """
        if any(w.vectors for w in writes):
            self._check_model(record=True)  # checked by `check_writes`: this records
        by_ns: dict[Namespace, list[ItemWrite]] = {}
        for w in writes:
            by_ns.setdefault(w.namespace, []).append(w)
        groups = [(ns, encode_namespace(ns), group) for ns, group in by_ns.items()]
        finished: list[tuple[str, float | None, bool]] = []
        with redis_errors(self._where, self._timeout):
            # Mark busy (and register) first: a crash after this leaves a namespace that
            # list_namespaces checks (and skips if empty), never an item it cannot find.
            pipe = self.client.pipeline(transaction=False)
            for ns, enc, group in groups:
                upserts = [w for w in group if w.value is not None]
                self._liveness.begin(enc, register=bool(upserts), pipe=pipe)
                if upserts:
                    pipe.execute_command("MGET", *[f"{self._base(ns)}:i:{w.key}" for w in upserts])
            replies = iter(pipe.execute())
            try:
                for ns, enc, group in groups:
                    next(replies)  # the begin script
                    upserts = [w for w in group if w.value is not None]
                    created: dict[str, float] = {}
                    if upserts:
                        for w, old in zip(upserts, next(replies), strict=True):
                            if old is not None:
                                created[w.key] = decode_document(old).created_at
                    bound, deleted = self._write_namespace(ns, group, created, now)
                    # Replacing an item by one with a TTL can lower the namespace's
                    # latest expiry, like a delete: its bound must be made exact again.
                    shortened = any(w.key in created and w.ttl is not None for w in upserts)
                    finished.append((enc, bound, deleted or shortened))
            finally:
                # Namespaces written before a failure are finished; the failed one stays
                # busy, so listings keep checking it.
                self._liveness.finish_all(finished)

    def _write_namespace(
        self, ns: Namespace, group: list[ItemWrite], created: dict[str, float], now: float
    ) -> tuple[float | None, bool]:
        """One namespace's transaction; returns the latest expiry written, and deletes."""
        base = self._base(ns)
        pipe = self.client.pipeline(transaction=True)
        bound: float | None = None
        deleted = False
        for w in group:
            item_key, vec_key = f"{base}:i:{w.key}", f"{base}:v:{w.key}"
            if w.value is None:
                pipe.delete(item_key, vec_key)
                pipe.zrem(f"{base}:z", w.key)
                deleted = True
                continue
            score = math.inf
            px = None
            if w.ttl is not None:
                expires = w.expires_at if w.expires_at is not None else now + w.ttl * 60
                score = _expiry_ms(expires)
                px = max(1, int((expires - now) * 1000))
            assert w.encoded is not None  # an upsert
            doc = encode_document(
                w.encoded, created_at=created.get(w.key, now), updated_at=now, ttl=w.ttl
            )
            pipe.set(item_key, doc, px=px)
            if w.vectors:
                blob = np.asarray(w.vectors, dtype=np.float32).tobytes()
                pipe.set(vec_key, blob, px=px)
            else:
                pipe.delete(vec_key)
            pipe.zadd(f"{base}:z", {w.key: score})
            bound = score if bound is None else max(bound, score)
        pipe.execute()
        return bound, deleted

    @_one_call
    def refresh(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Restart the TTL clock of items that have one (document, vectors and index)."""
        todo = [it for it in items if it.ttl is not None]
        if not todo:
            return
        bounds: dict[str, float] = {}
        for it in todo:
            assert it.ttl is not None
            enc = encode_namespace(it.namespace)
            bounds[enc] = max(bounds.get(enc, 0.0), _expiry_ms(now + it.ttl * 60))
        with redis_errors(self._where, self._timeout):
            pipe = self.client.pipeline(transaction=False)
            # Raise the namespaces' bounds before the expiries they must cover.
            self._liveness.raise_bounds(pipe, bounds)
            for it in todo:
                base = self._base(it.namespace)
                assert it.ttl is not None
                ms = max(1, int(it.ttl * 60_000))
                # Reads take the expiry from the key set, so the document stays as it is.
                # EVAL by name: a cluster pipeline has no `eval` method, but routes the
                # command by its keys (here all in one namespace's slot).
                pipe.execute_command(
                    "EVAL",
                    _REFRESH_LUA,
                    3,
                    f"{base}:i:{it.key}",
                    f"{base}:v:{it.key}",
                    f"{base}:z",
                    ms,
                    _expiry_ms(now + it.ttl * 60),
                    it.key,
                    *item_version(it),
                    VERSION_PATTERN,
                )
            done = pipe.execute()[1:]
            # An item gone before its refresh leaves its namespace's bound too high.
            self._liveness.mark_dirty(
                sorted(
                    {
                        encode_namespace(it.namespace)
                        for it, ok in zip(todo, done, strict=True)
                        if not ok
                    }
                )
            )

    @_one_call
    def delete_unchanged(self, items: Sequence[StoredItem]) -> list[bool]:
        """Delete each item only while it is the version read (compare and delete).

        An item written since it was read (another value or TTL) stays, and so does
        one already gone. Each check and delete is one script, so no write lands in
        between.

        Returns:
            Per item, whether it was deleted.
        """
        if not items:
            return []
        with redis_errors(self._where, self._timeout):
            pipe = self.client.pipeline(transaction=False)
            for it in items:
                base = self._base(it.namespace)
                pipe.execute_command(
                    "EVAL",
                    _DELETE_UNCHANGED_LUA,
                    3,
                    f"{base}:i:{it.key}",
                    f"{base}:v:{it.key}",
                    f"{base}:z",
                    it.key,
                    *item_version(it),
                    VERSION_PATTERN,
                )
            done = [bool(ok) for ok in pipe.execute()]
            # A namespace may have lost its last item: its liveness bound is re-checked.
            self._liveness.mark_dirty(
                sorted(
                    {
                        encode_namespace(it.namespace)
                        for it, ok in zip(items, done, strict=True)
                        if ok
                    }
                )
            )
        return done

    @_one_call
    def sweep(self, *, now: float) -> int:
        """Drop expired members from the per-namespace key sets (Redis expires the items)."""
        removed = 0
        now_ms = now * 1000
        with redis_errors(self._where, self._timeout):
            for ns in self._registered(()):
                removed += int(self.client.zremrangebyscore(f"{self._base(ns)}:z", "-inf", now_ms))
        return removed


_DECODED_MAX = 200_000
"""Decoded namespaces a tier remembers before it starts over."""


def _expiry_ms(expires: float) -> int:
    """Key-set score of an expiry: whole epoch milliseconds.

    Whole numbers make the score a fixed point of reading (`score / 1000`) and writing
    back, so a rewrite that keeps an item's expiry keeps it exactly.
    """
    return round(expires * 1000)


# Keys: item, vectors, key set. Args: ttl ms, new expiry (ms), key, the read version's
# update time and TTL (as `encode_document` wrote them), the document head's pattern.
# Only touches an item that still exists (and is still in the key set, i.e. not swept),
# so a refresh never resurrects a deleted or swept one, and only the version that was
# read, so a write since then (a put without a TTL, say) keeps its own expiry.
_REFRESH_LUA = """
if not redis.call('ZSCORE', KEYS[3], ARGV[3]) then return 0 end
local head = redis.call('GETRANGE', KEYS[1], 0, 255)
local u, t = string.match(head, ARGV[6])
if u and (u ~= ARGV[4] or t ~= ARGV[5]) then return 0 end
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], ARGV[3])
return 1
"""


# Keys: item, vectors, key set. Args: key, the read version's update time and TTL (as
# `encode_document` wrote them), the document head's pattern.
_DELETE_UNCHANGED_LUA = """
if not redis.call('ZSCORE', KEYS[3], ARGV[1]) then return 0 end
local head = redis.call('GETRANGE', KEYS[1], 0, 255)
local u, t = string.match(head, ARGV[4])
if not u or u ~= ARGV[2] or t ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""
