"""Where the long-term tier keeps each namespace: a shared bucket or its own collection.

A Chroma collection costs about 228 KB and 4 files on disk and ~38 ms to load its HNSW
index on the first query of a process, so one collection per namespace stops scaling at
a few thousand namespaces. Small namespaces therefore share a fixed number of bucket
collections, `P-ns-bucket-<D>d-<i>`: D is the embedding size, i a stable hash of the
namespace id mod the prefix's bucket count, recorded with the registry. A bucket record's
id is `<namespace id>:<record id>` and its metadata carries `_ns` = namespace id, so ids
never collide across namespaces. Searches in a bucketed namespace are exact (numpy over
the namespace's vectors); a bucket's HNSW index is never queried.

A namespace that grows past `graduate_at` records moves to its own collection
`P-ns-<namespace id>` (the name the one-collection-per-namespace layout always used):
copy, flip the registry entry, delete from the bucket. The registry entry's `b` field is
the bucket; an entry without it means "own collection", which is how stores written
before buckets existed keep working. `m` marks a move whose bucket clean-up is not done.

The registry is in the tier's index (`use_index`): beside an embedded or in-memory
Chroma its SQLite file (`doc_mirror`), which a write registers its namespaces in
with its intents; with a Chroma server Redis (`RedisIndex.registry`), which a write's
begin script registers them in. A store whose registry was the Chroma collection
`P-registry` (earlier versions; with a server, it kept the namespaces moved to their own
collection) has it copied there once. Entries are dicts either way: `ns` (encoded), `b`,
`m`, `ttl`, `d` (embedding size of a bucketed namespace).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from chromadb.errors import InternalError, NotFoundError
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    namespace_id,
)

__all__ = [
    "BUCKET_HNSW",
    "MIN_BUCKET_NEIGHBORS",
    "DEFAULT_BUCKETS",
    "DEFAULT_GRADUATE_AT",
    "PAGE",
    "SERVER_BUCKETS",
    "Collections",
    "NamespaceView",
    "bucket_of",
    "read",
    "strip_ns",
]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.chroma_layout")

DEFAULT_BUCKETS = 4
"""Bucket collections per store prefix beside an embedded Chroma (fixed once recorded).

Each Chroma upsert call costs ~9 ms whatever its size (~0.1 ms per record on top), and a
batch writes one upsert per bucket it touches, so few buckets keep puts fast; searches
read the SQLite vector copy and never the bucket."""

SERVER_BUCKETS = 32
"""Bucket count for a Chroma server (or an in-memory Chroma): without a vector copy a
search reads its namespace with a `where` on the bucket, which costs ~1 µs per record
of the bucket, so more, smaller buckets."""

DEFAULT_GRADUATE_AT = 2000
"""Records (vectors) past which a bucketed namespace moves to its own collection."""

PAGE = 500

BUCKET_HNSW = {"space": "cosine", "ef_construction": 16, "max_neighbors": 8, "ef_search": 4}
"""HNSW settings of the buckets. Nothing queries a bucket's index (searches there are
exact), but Chroma builds one for every collection, so a small graph keeps inserts fast.
Not the smallest: with `max_neighbors` 2 (maxM0 4), embedded Chroma 1.5.9 crashed
(SIGSEGV, or "Failed to apply logs to the hnsw segment writer") in an add or upsert
after many deletes, in a quarter of the runs of a simulated year of weekly puts and
forgetting passes; with 4 or 8 it never did (chroma-core/chroma#6979, #6895). 8/16
inserts at ~90% of the speed of 2/4 (5,200-5,700 vs 5,800-6,500 records/s in batches
of 60 on a 2-core machine) and ~1.2x the default settings. The setting is fixed when a
bucket is created: older buckets keep theirs (`MIN_BUCKET_NEIGHBORS`)."""

MIN_BUCKET_NEIGHBORS = 4
"""Buckets created with fewer HNSW neighbours than this risk the crash above (logged)."""

_NSID_LEN = 32  # namespace_id() is 32 hex digits

READ_ATTEMPTS = 4
"""Tries of a Chroma read that the server fails with "Error finding id"."""


def _finding_id(e: BaseException) -> bool:
    return isinstance(e, InternalError) and "Error finding id" in str(e)


_READ_RETRY = Retrying(
    retry=retry_if_exception(_finding_id),
    stop=stop_after_attempt(READ_ATTEMPTS),
    wait=wait_exponential(multiplier=0.01, max=0.2),
    before_sleep=before_sleep_log(logger, logging.WARNING),
    reraise=True,
)


def read(call: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run a Chroma read (`get`, `query`), again when it fails with "Error finding id".

    A Chroma 1.5.9 server now and then fails a read that runs while another client
    upserts and deletes in the collection with `InternalError: Error finding id` (56
    of 3,842 bucket reads in a test); the read a moment later succeeds. Up to
    `READ_ATTEMPTS` tries, each retry logged as a warning; any other error is raised
    at once.
    """
    return _READ_RETRY(call, *args, **kwargs)


def bucket_of(nsid: str, buckets: int) -> int:
    """Stable bucket of a namespace id (its leading hex digits, mod the bucket count)."""
    return int(nsid[:8], 16) % buckets


def strip_ns(rid: str) -> str:
    """The record id inside its namespace, from a bucket record id."""
    return rid[_NSID_LEN + 1 :]


_EMBED_HINTS = {
    "all-MiniLM-L6-v2": " (index={'embed': 'local:minilm', ...})",
    "multilingual-e5-small-q4-raw": " (index={'embed': 'local', ...})",
    "multilingual-e5-small-q4": " (index={'embed': 'local:e5-centred', ...})",
}
"""How to select each offline embedder, for the model-mismatch message."""


class _Dims:
    """Stands for a collection whose metadata records `tm_dims` (for `_check_dims`)."""

    def __init__(self, dims: int):
        self.metadata = {"tm_dims": dims}


def _scoped(where: dict[str, Any] | None, nsid: str) -> dict[str, Any]:
    if not where:
        return {"_ns": nsid}
    return {"$and": [{"_ns": nsid}, where]}


class NamespaceView:
    """One namespace's records inside a bucket, with the interface of its own collection.

    Ids are translated (`p:k` <-> `<nsid>:p:k`), `where` clauses are scoped to the
    namespace and written metadata gets `_ns`, so the write, TTL and maintenance paths
    treat both layouts alike.
    """

    def __init__(self, col: Any, nsid: str, bucket: int):
        self.col = col
        self.nsid = nsid
        self.bucket = bucket

    @property
    def name(self) -> str:
        """The bucket collection's name."""
        return str(self.col.name)

    @property
    def metadata(self) -> Any:
        """The bucket collection's metadata."""
        return self.col.metadata

    @property
    def configuration(self) -> Any:
        """The bucket collection's configuration."""
        return self.col.configuration

    def _ids(self, ids: Sequence[str]) -> list[str]:
        return [f"{self.nsid}:{rid}" for rid in ids]

    def get(
        self,
        ids: Sequence[str] | None = None,
        *,
        where: dict[str, Any] | None = None,
        include: Sequence[str] = ("metadatas",),
        limit: int | None = None,
        offset: int | None = None,
    ) -> dict[str, Any]:
        """`Collection.get` restricted to the namespace, with namespace-local ids."""
        got = read(
            self.col.get,
            ids=self._ids(ids) if ids is not None else None,
            where=_scoped(where, self.nsid),
            include=list(include),
            limit=limit,
            offset=offset,
        )
        got["ids"] = [strip_ns(rid) for rid in got["ids"]]
        return dict(got)

    def count(self) -> int:
        """Records of the namespace."""
        return len(read(self.col.get, where={"_ns": self.nsid}, include=[])["ids"])

    def upsert(self, *, ids: Sequence[str], embeddings: Any, metadatas: Sequence[Any]) -> None:
        """`Collection.upsert` of namespace-local ids."""
        metas = [{**m, "_ns": self.nsid} for m in metadatas]
        self.col.upsert(ids=self._ids(ids), embeddings=embeddings, metadatas=metas)

    def update(self, *, ids: Sequence[str], metadatas: Sequence[Any]) -> None:
        """`Collection.update` of namespace-local ids."""
        self.col.update(ids=self._ids(ids), metadatas=list(metadatas))

    def delete(self, ids: Sequence[str]) -> None:
        """`Collection.delete` of namespace-local ids."""
        if ids:
            self.col.delete(ids=self._ids(ids))


class Collections:
    """The registry and the namespace -> collection mapping of one store prefix."""

    def __init__(
        self,
        client: Callable[[], Any],
        *,
        prefix: str,
        dims: int,
        hnsw: dict[str, Any],
        embedder: str | None = None,
        buckets: int | None = None,
        graduate_at: int = DEFAULT_GRADUATE_AT,
    ):
        self._client = client
        self.prefix = prefix
        self.dims = dims
        self.embedder = embedder
        """The embedding model's name, recorded as `tm_model` by new collections."""
        self._unnamed_logged = False  # the warning about collections naming no model
        self._hnsw = hnsw
        self._wanted_buckets = buckets
        self.graduate_at = graduate_at
        self._registry: Any = None
        self._buckets: int | None = None
        self._bucket_cols: dict[int, Any] = {}
        self._own: dict[str, Any] = {}
        self._views: dict[str, NamespaceView] = {}
        # nsid -> bucket (None: own collection); a missing nsid is not cached yet.
        self._where: dict[str, int | None] = {}
        self._moving: dict[str, int] = {}
        self._dims_of: dict[str, int] = {}  # embedding size of bucketed namespaces
        self._ttl: set[str] = set()  # cached entries that say "has held TTL items"
        self.index: Any = None
        """The tier's index, holding the registry (`use_index`)."""
        self._probed = False  # whether an old registry collection was looked for

    # ------------------------------------------------------------- registry
    def _wanted(self) -> int:
        if self._wanted_buckets is not None:
            return self._wanted_buckets
        local = getattr(self._client().get_settings(), "is_persistent", False)
        return DEFAULT_BUCKETS if local else SERVER_BUCKETS

    def use_index(self, index: Any) -> None:
        """Keep the registry in `index` (`DocMirror` or `RedisIndex`), set up once.

        A store written by an earlier version has its namespaces in the registry
        collection (with a Chroma server, those moved to their own collection or
        registered before Redis listed them; Redis lists the others, in their bucket):
        its entries and bucket count are copied in one transaction, which also marks
        the prefix's registry set up. The collection is not written again; it is only
        read here and cleared by erasures (`chroma_registry`).
        """
        self.index, self._probed = index, False
        buckets = index.registry_buckets(self.prefix)
        if buckets is None:
            old = self.chroma_registry()
            buckets = self._wanted()
            copied: dict[str, dict[str, Any]] = {}
            if old is not None:
                buckets = int((old.metadata or {}).get("tm_buckets", buckets))
                for offset in range(0, int(old.count()) + 1, 1000):
                    page = read(old.get, include=["metadatas"], limit=1000, offset=offset)
                    got = zip(page["ids"], page["metadatas"], strict=True)
                    copied.update((n, m) for n, m in got if m and "ns" in m)  # no placeholder
            entries = list(copied.items())
            for nsid, meta in index.registry(self.prefix):  # in Redis before its buckets
                if nsid in copied:
                    copied[nsid]["ttl"] = bool(copied[nsid].get("ttl") or meta["ttl"])
                else:
                    entries.append((nsid, {"b": bucket_of(nsid, buckets), **meta}))
            self._check_listed(index, {n for n, _ in entries})
            index.set_up_registry(self.prefix, buckets, entries)
            if entries:
                logger.info(
                    "namespace registry of %s set up in %s from an earlier version's (%d)",
                    self.prefix,
                    index.path,
                    len(entries),
                )
        self._buckets = buckets

    def _check_listed(self, index: Any, nsids: set[str]) -> None:
        """Refuse a registry that lacks namespaces Chroma holds items of (a lost file).

        Raises:
            ConfigurationError: The file was deleted or replaced.
        """
        head = f"{self.prefix}-ns-"
        unlisted = 0
        for col in self._client().list_collections():
            rest = str(col.name)[len(head) :] if str(col.name).startswith(head) else ""
            if rest.startswith("bucket-"):
                where = {"_ns": {"$nin": sorted(nsids)}} if nsids else None
                unlisted += len(read(col.get, where=where, limit=1, include=[])["ids"])
            elif len(rest) == _NSID_LEN and rest not in nsids:
                unlisted += 1
        if unlisted:
            raise ConfigurationError(
                f"The namespace registry of key_prefix {self.prefix!r} is kept in"
                f" {index.path}, which lacks namespaces whose items Chroma holds (it was"
                " deleted, replaced or emptied). Restore it together with the Chroma data"
                " it was backed up with, or use another key_prefix."
            )

    def chroma_registry(self) -> Any | None:
        """The registry collection an earlier version wrote, if the store has one.

        Copied once (`use_index`); erasures still remove entries from it.
        """
        if not self._probed:
            self._probed = True
            try:
                self._registry = self._client().get_collection(
                    f"{self.prefix}-registry", embedding_function=None
                )
            except NotFoundError:
                pass
        return self._registry

    @property
    def buckets(self) -> int:
        """The bucket count recorded for this prefix (`use_index`)."""
        assert self._buckets is not None, "the tier opens its index first"
        return self._buckets

    def forget(self) -> None:
        """Drop every cached handle (on close)."""
        self._registry = self.index = self._buckets = None
        self._probed = False
        self._bucket_cols.clear()
        self._own.clear()
        self._views.clear()
        self._where.clear()
        self._moving.clear()
        self._dims_of.clear()
        self._ttl.clear()

    def _remember(self, nsid: str, meta: dict[str, Any]) -> None:
        b = meta.get("b")
        self._where[nsid] = None if b is None else int(b)
        if b is not None:
            self._dims_of[nsid] = int(meta.get("d", self.dims))
        if meta.get("m") is not None:
            self._moving[nsid] = int(meta["m"])
        if meta.get("ttl"):
            self._ttl.add(nsid)

    def entries(self, prefix: Namespace = ()) -> Iterator[tuple[Namespace, bool, int | None]]:
        """(namespace, has held TTL items, bucket or None) of registered namespaces."""
        for nsid, meta in self.index.registry(self.prefix, under=encode_namespace(prefix)):
            self._remember(nsid, meta)
            b = meta.get("b")
            yield decode_namespace(meta["ns"]), bool(meta.get("ttl")), None if b is None else int(b)

    def lookup(self, nsid: str) -> tuple[bool, int | None]:
        """(registered, bucket or None) of a namespace id, cached after the first read."""
        self.prefetch([nsid])
        if nsid not in self._where:
            return False, None
        return True, self._where[nsid]

    def forget_namespace(self, nsid: str) -> None:
        """Drop the cached layout of a namespace (read the registry again next time)."""
        self._where.pop(nsid, None)
        self._dims_of.pop(nsid, None)
        self._views.pop(nsid, None)
        self._own.pop(nsid, None)
        self._ttl.discard(nsid)

    def forget_namespaces(self) -> None:
        """Drop the cached layout of every namespace (keep the collection handles)."""
        self._where.clear()
        self._dims_of.clear()
        self._views.clear()
        self._own.clear()
        self._moving.clear()
        self._ttl.clear()

    def cached(self, nsid: str) -> bool:
        """Whether the namespace's registry entry is cached (after `prefetch`: exists)."""
        return nsid in self._where

    def prefetch(self, nsids: Sequence[str]) -> None:
        """Read the registry entries of the namespace ids not cached yet, in one call."""
        unknown = [n for n in dict.fromkeys(nsids) if n not in self._where]
        if unknown:
            for nsid, meta in self.index.registry(self.prefix, nsids=unknown):
                self._remember(nsid, meta)

    def adopt(self, nsid: str) -> None:
        """Cache a namespace a write just registered (in Redis): in its bucket."""
        self._where[nsid] = bucket_of(nsid, self.buckets)
        self._dims_of[nsid] = self.dims

    @staticmethod
    def _entry(ns: Namespace, ttl: bool) -> dict[str, Any]:
        return {"ns": encode_namespace(ns), "ttl": ttl}

    def plan(self, entries: Sequence[tuple[Namespace, bool]]) -> dict[str, dict[str, Any]]:
        """The registry entries of namespaces about to be registered: nsid -> entry.

        New namespaces get their bucket. For `put`, or a write's intents
        (`DocMirror.begin`).
        """
        self.prefetch([namespace_id(ns) for ns, _ in entries])
        out: dict[str, dict[str, Any]] = {}
        for ns, ttl in entries:
            nsid = namespace_id(ns)
            bucket = self._where[nsid] if nsid in self._where else bucket_of(nsid, self.buckets)
            meta = out[nsid] = self._entry(ns, ttl)
            if bucket is not None:
                meta["b"] = bucket
                meta["d"] = self._dims_of.get(nsid, self.dims)
            if nsid in self._moving:
                meta["m"] = self._moving[nsid]
        return out

    def put(self, entries: dict[str, dict[str, Any]]) -> None:
        """Write whole registry entries (nsid -> entry) in the index."""
        self.index.registry_put(self.prefix, entries)
        for nsid, meta in entries.items():
            self.remember(nsid, meta)

    def remember(self, nsid: str, meta: dict[str, Any]) -> None:
        """Cache an entry just written (a move flag it lacks is cleared)."""
        self._moving.pop(nsid, None)
        self._ttl.discard(nsid)
        self._dims_of.pop(nsid, None)
        self._remember(nsid, meta)

    def unregister(self, nsid: str) -> None:
        """Remove a namespace's registry entry (from an earlier version's collection too)."""
        self.index.registry_drop(self.prefix, nsid)
        reg = self.chroma_registry()
        if reg is not None:
            reg.delete(ids=[nsid])
        self.forget_namespace(nsid)

    # ------------------------------------------------------------- collections
    def _stamp(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """A new collection's metadata, with the embedding model's name when known."""
        if self.embedder is not None:
            metadata["tm_model"] = self.embedder
        return metadata

    def _check_dims(self, what: str, col: Any) -> Any:
        meta = col.metadata or {}
        found = meta.get("tm_dims")
        if found is not None and int(found) != self.dims:
            raise ConfigurationError(
                f"Namespace {what} was stored with embeddings of {found} dimensions, but"
                " this store is configured with"
                f" {self.dims}. Open the store with the index configuration it was created"
                " with, or use another key_prefix for the new embedding model."
            )
        model = meta.get("tm_model")
        if model is None and self.embedder is not None and not self._unnamed_logged:
            self._unnamed_logged = True
            logger.warning(
                "Collection %s records no embedding model, so a change of model cannot be"
                " detected there. Stores written before models were recorded with"
                " embed='local' hold all-MiniLM-L6-v2 vectors: open them with"
                " embed='local:minilm', not with this store's %r.",
                getattr(col, "name", what),
                self.embedder,
            )
        if model is not None and self.embedder is not None and model != self.embedder:
            raise ConfigurationError(
                f"Namespace {what} was stored with embeddings of the model {model!r}, but"
                f" this store embeds with {self.embedder!r}: vectors of two models do not"
                " compare. Open the store with the embedder it was written with"
                f"{_EMBED_HINTS.get(model, '')}, or use another key_prefix for the new model."
            )
        return col

    def bucket_name(self, i: int) -> str:
        """Name of bucket collection `i` (stores of another embedding size have others)."""
        return f"{self.prefix}-ns-bucket-{self.dims}d-{i}"

    def bucket(self, i: int) -> Any:
        """Bucket collection `i` (created on first use)."""
        col = self._bucket_cols.get(i)
        if col is None:
            col = self._client().get_or_create_collection(
                self.bucket_name(i),
                embedding_function=None,
                metadata=self._stamp({"tm_dims": self.dims, "tm_kind": "bucket"}),
                configuration={"hnsw": BUCKET_HNSW},
            )
            self._check_dims(f"bucket {i}", col)
            self._warn_small_graph(i, col)
            self._bucket_cols[i] = col
        return col

    def _warn_small_graph(self, i: int, col: Any) -> None:
        """Log a bucket created with an HNSW graph small enough to crash Chroma."""
        hnsw = (col.configuration or {}).get("hnsw") or {}
        neighbors = hnsw.get("max_neighbors")
        if isinstance(neighbors, int) and neighbors < MIN_BUCKET_NEIGHBORS:
            logger.warning(
                "Bucket %s (%s) has an HNSW graph with max_neighbors=%d: embedded Chroma"
                " can crash adding to it after many deletes (new buckets get"
                " max_neighbors=%d; existing ones are not rebuilt).",
                i,
                self.bucket_name(i),
                neighbors,
                BUCKET_HNSW["max_neighbors"],
            )

    def own_name(self, nsid: str) -> str:
        """Name of a namespace's own collection."""
        return f"{self.prefix}-ns-{nsid}"

    def own(self, ns: Namespace | None, nsid: str, *, create: bool) -> Any | None:
        """A namespace's own collection (None when it does not exist and not `create`)."""
        col = self._own.get(nsid)
        if col is not None:
            return col
        client = self._client()
        if create:
            assert ns is not None
            col = client.get_or_create_collection(
                self.own_name(nsid),
                embedding_function=None,
                metadata=self._stamp({"tm_dims": self.dims, "tm_ns": encode_namespace(ns)}),
                configuration={"hnsw": self._hnsw},
            )
        else:
            try:
                col = client.get_collection(self.own_name(nsid), embedding_function=None)
            except NotFoundError:
                return None
        self._check_dims(str(ns) if ns is not None else nsid, col)
        self._own[nsid] = col
        return col

    def resolve(self, nsid: str, ns: Namespace | None = None, *, create: bool = False) -> Any:
        """The namespace's collection: its own, or a view of its bucket (None: none)."""
        view = self._views.get(nsid)
        if view is not None:
            return view
        known, bucket = self.lookup(nsid)
        if not known:
            if not create:
                return None
            bucket = bucket_of(nsid, self.buckets)
        if bucket is None:
            return self.own(ns, nsid, create=create)
        found = self._dims_of.get(nsid, self.dims)
        if found != self.dims:
            self._check_dims(str(ns) if ns is not None else nsid, _Dims(found))
        view = NamespaceView(self.bucket(bucket), nsid, bucket)
        self._views[nsid] = view
        return view

    def existing_buckets(self) -> Iterator[tuple[int, Any]]:
        """The bucket collections that exist (without creating the others)."""
        client = self._client()
        for i in range(self.buckets):
            if i in self._bucket_cols:
                yield i, self._bucket_cols[i]
                continue
            try:
                col = client.get_collection(self.bucket_name(i), embedding_function=None)
            except NotFoundError:
                continue
            self._bucket_cols[i] = self._check_dims(f"bucket {i}", col)
            yield i, col

    # ------------------------------------------------------------- moves
    def moving(self) -> dict[str, int]:
        """Namespaces whose move to their own collection left records in the bucket."""
        for nsid, meta in self.index.registry(self.prefix, moving=True):
            self._remember(nsid, meta)
        return dict(self._moving)

    def move_left(self, nsid: str) -> int | None:
        """The bucket an unfinished move of the namespace left records in, read afresh."""
        self.forget_namespace(nsid)
        self._moving.pop(nsid, None)
        self.prefetch([nsid])
        return self._moving.get(nsid)

    def copy_to_own(self, ns: Namespace, view: NamespaceView) -> Any:
        """Step 1 of a move: a fresh own collection holding the bucket's records."""
        nsid = view.nsid
        self._own.pop(nsid, None)
        try:  # a copy left by an interrupted move may be stale: start over
            self._client().delete_collection(self.own_name(nsid))
        except (NotFoundError, ValueError):
            pass
        own = self.own(ns, nsid, create=True)
        assert own is not None
        offset = 0
        while True:
            page = view.get(include=["embeddings", "metadatas"], limit=PAGE, offset=offset)
            if page["ids"]:
                own.upsert(
                    ids=page["ids"],
                    embeddings=page["embeddings"],
                    metadatas=[
                        {k: v for k, v in m.items() if k != "_ns"} for m in page["metadatas"]
                    ],
                )
            if len(page["ids"]) < PAGE:
                return own
            offset += PAGE

    def flip(self, ns: Namespace, bucket: int) -> None:
        """Step 2: the registry entry now names the own collection (`m`: clean-up due)."""
        nsid = namespace_id(ns)
        self.put({nsid: {**self._entry(ns, nsid in self._ttl), "b": None, "m": bucket}})
        self._views.pop(nsid, None)

    def clear_bucket(self, nsid: str, bucket: int) -> None:
        """Step 3: delete the namespace's records from its old bucket, then clear `m`."""
        col = self.bucket(bucket)
        step = max(1, int(self._client().get_max_batch_size()))
        while True:
            ids = col.get(where={"_ns": nsid}, include=[], limit=step)["ids"]
            if not ids:
                break
            col.delete(ids=ids)
        for n, meta in self.index.registry(self.prefix, nsids=[nsid]):
            meta.pop("m", None)
            self.put({n: meta})
        self._moving.pop(nsid, None)
        logger.info("namespace %s moved out of bucket %d", nsid, bucket)
