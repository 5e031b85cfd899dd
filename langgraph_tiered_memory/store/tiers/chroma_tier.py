"""The long-term tier: Chroma, one collection per namespace.

Chroma's metadata filter, not its HNSW index, dominates search time on a large shared
collection, so each namespace gets its own collection and a search in one namespace
needs no `where` clause at all.

Layout, for a store with `key_prefix` P and embedding size D (0 without an index):

- collection `P-ns-<namespace id>`, cosine space, vectors of D + 1 dimensions:
  - `p:<key>` is the item's primary record. Its metadata `_d` holds the document
    (value, timestamps, TTL, number of vectors, write id) and `_e` its expiry time
    when it has a TTL. Its embedding is the item's first vector with a trailing 0,
    or `[0, ..., 0, 1]` when the item is not indexed: that vector is orthogonal to
    every query (queries also get a trailing 0), so unindexed items never outrank
    indexed ones.
  - `x:<i>:<write id>:<key>` holds the item's i-th extra vector (several fields or
    list values) of the write that made it.
- collection `P-registry`: one record per namespace, with metadata `p<d>` = id of
  the namespace's first d labels, so the namespaces under a prefix are one indexed
  metadata lookup, independent of how many items exist.

An item's vectors and document are written in one Chroma upsert; vectors left by an
interrupted update carry an older write id and are ignored. With an embedded Chroma,
`DocMirror` keeps a SQLite copy of the primary records that answers `get`.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
from chromadb.errors import NotFoundError

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store._common import (
    ItemWrite,
    Namespace,
    StoredItem,
    decode_namespace,
    encode_namespace,
    loads,
    matches_filter,
    namespace_id,
    rank_key,
)
from langgraph_tiered_memory.store.tiers.base import ScoredItem
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror, MemoryRow, MemoryStats

__all__ = ["ChromaTier", "Candidate"]


class Candidate(NamedTuple):
    """One retrieval candidate of the long-term tier."""

    item: StoredItem
    semantic: float | None
    """Cosine similarity, or None when dense retrieval did not return the item."""
    keyword: float | None
    """BM25 score, or None when keyword retrieval did not return the item."""
    stats: MemoryStats | None
    own: float | None = None
    """Best similarity among the item's own (field) vectors, when dense retrieval saw one."""
    context: float | None = None
    """Best similarity among its key vectors (contextual, sentence), when seen."""


_PAGE = 500


def _extra_ids(key: str, doc: dict[str, Any]) -> list[str]:
    """Ids of the extra vectors written with document `doc` of item `key`."""
    return [f"x:{i}:{doc['w']}:{key}" for i in range(1, int(doc["n"]))]


class ChromaTier:
    """Stores namespaces routed to `"long"` in Chroma."""

    name = "long"

    def __init__(
        self,
        client: Any = None,
        *,
        key_prefix: str,
        dims: int,
        client_factory: Callable[[], tuple[Any, Callable[[], None]]] | None = None,
        owns_client: bool = False,
        hnsw: Mapping[str, int] | None = None,
        describe: Callable[[dict[str, Any]], tuple[str, str, Any] | None] | None = None,
        memory_index_path: str | None = None,
    ):
        if client is None and client_factory is None:
            raise ValueError("ChromaTier needs a client or a client_factory.")
        self._client = client
        self._client_factory = client_factory
        self._close_client: Callable[[], None] | None = None
        self._lock = threading.RLock()
        self.prefix = key_prefix
        self.dims = dims
        self._owns_client = owns_client
        self._collections: dict[Namespace, Any] = {}
        self._registry: Any = None
        self._blank = [0.0] * dims + [1.0]
        self._hnsw = {"space": "cosine", **(hnsw or {})}
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tiered-memory-chroma")
        self._mirror: DocMirror | None = None
        self._mirror_ready = False
        self._describe = describe
        self._memory_index_path = memory_index_path
        self._memindex: DocMirror | None = None

    @property
    def client(self) -> Any:
        """The Chroma client, created on first use when the tier owns it.

        `client_factory` returns the client and the function that closes it (for an
        embedded Chroma, that also releases the directory's inter-process lock).
        """
        if self._client is None:
            with self._lock:
                if self._client is None:
                    assert self._client_factory is not None
                    self._client, self._close_client = self._client_factory()
        return self._client

    @property
    def mirror(self) -> DocMirror | None:
        """The SQLite copy of item documents, for an embedded (persistent) Chroma only."""
        if not self._mirror_ready:
            with self._lock:
                if not self._mirror_ready:
                    self._mirror = self._open_mirror()
                    self._mirror_ready = True
        return self._mirror

    def _open_mirror(self) -> DocMirror | None:
        settings = self.client.get_settings()
        directory = getattr(settings, "persist_directory", None)
        if not getattr(settings, "is_persistent", False) or not directory:
            return None
        mirror = DocMirror(directory)
        mirror.move_legacy_keyword_index(self.prefix)
        mirror.recover(self.prefix, self._read_primaries, self._row_of_meta)
        # The Chroma registry is small and authoritative: copy it on every open.
        registry = self._registered_in_chroma(())
        mirror.replace_namespaces(
            self.prefix, [(encode_namespace(ns), ttl) for ns, ttl in registry]
        )
        if not mirror.is_filled(self.prefix):
            # First use of this mirror for the prefix: copy what Chroma already holds.
            for ns, _ in registry:
                col = self._collection(ns, create=False)
                offset = 0
                while col is not None:
                    page = col.get(include=["metadatas"], limit=_PAGE, offset=offset)
                    rows = {
                        rid[2:]: meta
                        for rid, meta in zip(page["ids"], page["metadatas"], strict=True)
                        if rid.startswith("p:")
                    }
                    mirror.commit(self.prefix, namespace_id(ns), upserts=rows)
                    if len(page["ids"]) < _PAGE:
                        break
                    offset += _PAGE
            mirror.mark_filled(self.prefix)
        if self._describe is not None:
            self._fill_memories(mirror, registry)
        return mirror

    @property
    def memindex(self) -> DocMirror | None:
        """The memory index (keyword index and access statistics), when memory mode is on.

        It lives in the SQLite copy beside an embedded Chroma; with another client it is
        the SQLite file `memory_index_path` (in memory when that is not given).
        """
        if self._describe is None:
            return None
        mirror = self.mirror
        if mirror is not None:
            return mirror
        if self._memindex is None:
            with self._lock:
                if self._memindex is None:
                    settings = self.client.get_settings()
                    remote = "fastapi" in str(getattr(settings, "chroma_api_impl", "")).lower()
                    if remote and not self._memory_index_path:
                        raise ConfigurationError(
                            "Memory scoring keeps its keyword index and access statistics in"
                            " SQLite; with a Chroma server (HttpClient) pass"
                            " memory_index_path='/path/memory-index.sqlite3', or use"
                            " scoring={'mode': 'similarity'}."
                        )
                    idx = DocMirror(self._memory_index_path or ":memory:")
                    idx.move_legacy_keyword_index(self.prefix)
                    idx.recover(self.prefix, self._read_primaries, self._row_of_meta, docs=False)
                    self._fill_memories(idx, self._registered_in_chroma(()))
                    self._memindex = idx
        return self._memindex

    def _row_of_meta(self, meta: dict[str, Any]) -> MemoryRow | None:
        if self._describe is None:
            return None
        doc = json.loads(meta["_d"])
        described = self._describe(doc["value"])
        if described is None:
            return None
        text, time_text, fields = described
        # The contextual column is rebuilt empty here: the write order that defines it
        # is not kept in Chroma.
        return MemoryRow(
            text,
            "",
            time_text,
            fields.memory_type,
            fields.importance,
            fields.occurred_at,
            float(doc["c"]),
        )

    def _fill_memories(self, idx: DocMirror, registry: list[tuple[Namespace, bool]]) -> None:
        """Build the memory rows of items already in Chroma (first use of the index)."""
        marker = f"{self.prefix}/mem"
        if idx.is_filled(marker):
            return
        for ns, _ in registry:
            col = self._collection(ns, create=False)
            offset = 0
            while col is not None:
                page = col.get(include=["metadatas"], limit=_PAGE, offset=offset)
                rows: dict[str, MemoryRow] = {}
                for rid, meta in zip(page["ids"], page["metadatas"], strict=True):
                    if rid.startswith("p:"):
                        row = self._row_of_meta(meta)
                        if row is not None:
                            rows[rid[2:]] = row
                idx.commit(self.prefix, namespace_id(ns), memories=rows, docs=False)
                if len(page["ids"]) < _PAGE:
                    break
                offset += _PAGE
        idx.mark_filled(marker)

    def _read_primaries(self, nsid: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        try:
            col = self.client.get_collection(f"{self.prefix}-ns-{nsid}", embedding_function=None)
        except NotFoundError:
            return {}
        got = col.get(ids=[f"p:{k}" for k in keys], include=["metadatas"])
        return {rid[2:]: meta for rid, meta in zip(got["ids"], got["metadatas"], strict=True)}

    # ----------------------------------------------------------------- collections
    def _name(self, namespace: Namespace) -> str:
        return f"{self.prefix}-ns-{namespace_id(namespace)}"

    def setup(self) -> None:
        """Create the namespace registry collection (idempotent)."""
        self._registry_collection()

    def close(self) -> None:
        """Forget cached collections, stop the worker threads, close the mirror.

        A client the tier created is closed too, which releases the embedded Chroma
        directory for other processes; a client passed in is left open.
        """
        self._pool.shutdown(wait=True)
        if self._mirror is not None:
            self._mirror.close()
            self._mirror = None
            self._mirror_ready = False
        if self._memindex is not None:
            self._memindex.close()
            self._memindex = None
        self._collections.clear()
        self._registry = None
        with self._lock:
            close, self._close_client = self._close_client, None
            if close is not None:
                self._client = None
                close()

    def _registry_collection(self) -> Any:
        if self._registry is None:
            self._registry = self.client.get_or_create_collection(
                f"{self.prefix}-registry", embedding_function=None, metadata={"tm_kind": "registry"}
            )
        return self._registry

    def _check_dims(self, namespace: Namespace, col: Any) -> Any:
        found = (col.metadata or {}).get("tm_dims")
        if found is not None and int(found) != self.dims:
            raise ConfigurationError(
                f"Namespace {namespace} was stored with embeddings of {found} dimensions, but"
                f" this store is configured with {self.dims}. Open the store with the index"
                " configuration it was created with, or use another key_prefix for the new"
                " embedding model."
            )
        return col

    def _collection(self, namespace: Namespace, *, create: bool) -> Any | None:
        col = self._collections.get(namespace)
        if col is not None:
            return col
        name = self._name(namespace)
        if create:
            col = self.client.get_or_create_collection(
                name,
                embedding_function=None,
                metadata={"tm_dims": self.dims, "tm_ns": encode_namespace(namespace)},
                configuration={"hnsw": self._hnsw},
            )
        else:
            try:
                col = self.client.get_collection(name, embedding_function=None)
            except NotFoundError:
                return None
        self._check_dims(namespace, col)
        self._collections[namespace] = col
        return col

    # ----------------------------------------------------------------- registry
    def _register(self, namespace: Namespace, *, ttl: bool) -> None:
        meta: dict[str, Any] = {"ns": encode_namespace(namespace), "depth": len(namespace)}
        for d in range(1, len(namespace) + 1):
            meta[f"p{d}"] = namespace_id(namespace[:d])
        if ttl:
            meta["ttl"] = True
        reg = self._registry_collection()
        nsid = namespace_id(namespace)
        mirror = self.mirror
        if mirror is not None:
            known = {n: t for n, t in mirror.registered(self.prefix, meta["ns"])}
            if meta["ns"] in known and (known[meta["ns"]] or not ttl):
                return
        elif not ttl and reg.get(ids=[nsid], include=[])["ids"]:
            return
        reg.upsert(ids=[nsid], embeddings=[[1.0]], metadatas=[meta])
        if mirror is not None:
            mirror.register(self.prefix, meta["ns"], ttl=ttl)

    def _unregister_if_empty(self, namespace: Namespace, col: Any) -> None:
        mirror = self.mirror
        if mirror is not None:  # the mirror holds every item: no Chroma read needed
            empty = not mirror.has_docs(self.prefix, namespace_id(namespace))
        else:
            empty = not col.get(limit=1, include=[])["ids"]
        if empty:
            self._unregister(namespace)

    def _unregister(self, namespace: Namespace) -> None:
        self._registry_collection().delete(ids=[namespace_id(namespace)])
        if self.mirror is not None:
            self.mirror.unregister(self.prefix, encode_namespace(namespace))

    def _registered(self, prefix: Namespace) -> list[tuple[Namespace, bool]]:
        mirror = self.mirror
        if mirror is not None:
            return [
                (decode_namespace(enc), ttl)
                for enc, ttl in mirror.registered(self.prefix, encode_namespace(prefix))
            ]
        return self._registered_in_chroma(prefix)

    def _registered_in_chroma(self, prefix: Namespace) -> list[tuple[Namespace, bool]]:
        reg = self._registry_collection()
        out: list[tuple[Namespace, bool]] = []
        offset = 0
        where = {f"p{len(prefix)}": namespace_id(prefix)} if prefix else None
        while True:
            page = reg.get(where=where, include=["metadatas"], limit=1000, offset=offset)
            for meta in page["metadatas"]:
                out.append((decode_namespace(meta["ns"]), bool(meta.get("ttl"))))
            if len(page["ids"]) < 1000:
                return out
            offset += 1000

    # ----------------------------------------------------------------- decoding
    @staticmethod
    def _decode(
        namespace: Namespace, key: str, meta: dict[str, Any]
    ) -> tuple[StoredItem, int, str, int]:
        """Item, number of vectors, write id, number of key vectors (the last ones)."""
        doc = loads(meta["_d"])
        item = StoredItem(
            namespace=namespace,
            key=key,
            value=doc["value"],
            created_at=doc["c"],
            updated_at=doc["u"],
            ttl=doc.get("t"),
            expires_at=meta.get("_e"),
        )
        return item, int(doc["n"]), doc["w"], int(doc.get("k", 0))

    # ----------------------------------------------------------------- reads
    def get(
        self, namespace: Namespace, keys: Sequence[str], *, now: float
    ) -> dict[str, StoredItem]:
        """Live items of `namespace` with the given keys (from the mirror when there is one)."""
        if not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        mirror = self.mirror
        if mirror is not None:
            metas = mirror.get(self.prefix, namespace_id(namespace), unique)
            if metas:
                self._collection(namespace, create=False)  # cached; checks the dimensions
        else:
            col = self._collection(namespace, create=False)
            if col is None:
                return {}
            res = col.get(ids=[f"p:{k}" for k in unique], include=["metadatas"])
            metas = {rid[2:]: meta for rid, meta in zip(res["ids"], res["metadatas"], strict=True)}
        out: dict[str, StoredItem] = {}
        for key, meta in metas.items():
            item = self._decode(namespace, key, meta)[0]
            if not item.expired(now):
                out[key] = item
        return out

    def namespaces(self, prefix: Namespace, *, now: float | None) -> list[Namespace]:
        """Registered namespaces under `prefix` holding a live item at `now`.

        A read only: expired items are left for `sweep` (or a garbage collection that is
        not a dry run) to delete, so listing never writes, whatever `now` is. With
        `now=None`, every registered namespace, also those holding only expired items.
        """
        out = []
        for ns, has_ttl in self._registered(prefix):
            if has_ttl and now is not None:
                col = self._collection(ns, create=False)
                if col is None:
                    continue
                if not self._has_live(ns, col, now):
                    continue
            out.append(ns)
        return out

    def _has_live(self, ns: Namespace, col: Any, now: float) -> bool:
        mirror = self.mirror
        if mirror is not None:
            return mirror.has_docs(self.prefix, namespace_id(ns), live_at=now)
        expired = len(col.get(where={"_e": {"$lte": now}}, include=[])["ids"])
        if not expired:
            return bool(col.get(limit=1, include=[])["ids"])
        # A Chroma `where` cannot ask for a missing key: count the item records.
        items = sum(rid.startswith("p:") for rid in col.get(include=[])["ids"])
        return items > expired

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
        """Search each matching namespace's collection and merge the results.

        With a query, the collection of `prefix` itself is searched while the registry
        lookup for deeper namespaces runs in a worker thread (Chroma releases the GIL),
        so the common single-namespace search costs one HNSW query. With
        `namespace_filter`, only the namespaces it accepts are searched.
        """
        if limit <= 0:
            return []
        results: list[ScoredItem] = []
        done: set[Namespace] = set()
        keep = namespace_filter or (lambda ns: True)
        if query_vector is not None and prefix and self.mirror is None and keep(prefix):
            own = self._collection(prefix, create=False)
            if own is not None:
                pending = self._pool.submit(self._registered, prefix)
                try:
                    results.extend(self._query(prefix, own, query_vector, filter, limit, now))
                finally:
                    registered = pending.result()
                done.add(prefix)
            else:
                registered = self._registered(prefix)
        else:
            registered = self._registered(prefix)
        for ns in sorted(ns for ns, _ in registered if ns not in done and keep(ns)):
            col = self._collection(ns, create=False)
            if col is None:
                continue
            if query_vector is None:
                results.extend(self._scan(ns, col, filter, limit - len(results), now))
                if len(results) >= limit:
                    break
            else:
                results.extend(self._query(ns, col, query_vector, filter, limit, now))
        if query_vector is not None:
            scored = sorted((r for r in results if r[1] is not None), key=rank_key)
            results = scored + [r for r in results if r[1] is None]
        return results[:limit]

    def retrieve(
        self,
        prefix: Namespace,
        *,
        query_vector: Sequence[float] | None,
        match: Sequence[str] | None,
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[Candidate]:
        """Candidates for memory ranking: the best `limit` of each retrieval channel.

        Args:
            prefix: Namespace prefix searched.
            query_vector: Query embedding for dense retrieval (None: no dense channel).
            match: Query terms for keyword retrieval (None or empty: no keyword channel).
            filter: Value filter every candidate must match.
            limit: Candidates per channel.
            now: Current time (epoch seconds).
            namespace_filter: When given, only the namespaces it accepts are searched.

        Returns:
            Live candidates with their dense similarity and BM25 score (None when the
            channel did not find them) and their memory statistics.
        """
        idx = self.memindex
        if idx is None:
            raise ConfigurationError("Memory retrieval needs scoring={'mode': 'memory'}.")
        dense: list[tuple[StoredItem, float, float | None, float | None]] = []
        keyword: list[tuple[StoredItem, float]] = []
        for ns in sorted(
            ns
            for ns, _ in self._registered(prefix)
            if namespace_filter is None or namespace_filter(ns)
        ):
            col = self._collection(ns, create=False)
            if col is None:
                continue
            cache: dict[str, tuple[StoredItem, int, str, int]] = {}
            if query_vector is not None and self.dims:
                dense.extend(self._dense_pool(ns, col, query_vector, filter, limit, now, cache))
            if match:
                keyword.extend(self._keyword(idx, ns, col, match, filter, limit, now, cache))
        found: dict[tuple[Namespace, str], list[Any]] = {}

        def top(column: int) -> list[tuple[StoredItem, float, float | None, float | None]]:
            scored = [d for d in dense if d[column] is not None]
            scored.sort(key=lambda d: (-d[column], d[0].namespace, d[0].key))  # type: ignore[operator]
            return scored[:limit]

        for column in (1, 2):  # ranked by the best of all vectors, and by own vectors
            for item, best, own, ctx in top(column):
                found[(item.namespace, item.key)] = [item, best, None, None, own, ctx]
        for item, score in sorted(keyword, key=rank_key)[:limit]:
            entry = found.setdefault(
                (item.namespace, item.key), [item, None, None, None, None, None]
            )
            entry[2] = score
        by_ns: dict[Namespace, list[str]] = {}
        for ns, key in found:
            by_ns.setdefault(ns, []).append(key)
        for ns, keys in by_ns.items():
            for key, stats in idx.memory_stats(self.prefix, namespace_id(ns), keys).items():
                found[(ns, key)][3] = stats
        return [Candidate(*entry) for entry in found.values()]

    def _dense_pool(
        self,
        ns: Namespace,
        col: Any,
        query_vector: Sequence[float],
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        cache: dict[str, tuple[StoredItem, int, str, int]],
    ) -> list[tuple[StoredItem, float, float | None, float | None]]:
        """Dense candidates of one collection: (item, best, own-vector, key-vector score).

        One Chroma query of `4 * limit` vectors: items have several vectors, and the
        own-vector and key-vector lists should each reach about `limit` items.
        """
        qv = [*map(float, query_vector), 0.0]
        include = ["distances"] if self.mirror is not None else ["metadatas", "distances"]
        res = col.query(query_embeddings=[qv], n_results=4 * limit, include=include)
        ids, dists = res["ids"][0], res["distances"][0]
        metas = res["metadatas"][0] if "metadatas" in include else [None] * len(ids)
        hits: dict[str, list[tuple[float, int, str | None]]] = {}
        docs = cache
        for rid, meta, dist in zip(ids, metas, dists, strict=True):
            score = 1.0 - float(dist)
            if rid.startswith("p:"):
                key = rid[2:]
                if meta is not None:
                    docs[key] = self._decode(ns, key, meta)
                hits.setdefault(key, []).append((score, 0, None))
            else:
                _, i, write_id, key = rid.split(":", 3)
                hits.setdefault(key, []).append((score, int(i), write_id))
        missing = [k for k in hits if k not in docs]
        if missing:
            docs.update(self._load_docs(ns, col, missing))
        out: list[tuple[StoredItem, float, float | None, float | None]] = []
        for key, found in hits.items():
            entry = docs.get(key)
            if entry is None:
                continue
            item, nvec, write_id, nkeys = entry
            valid = [(s, i) for s, i, w in found if w is None or w == write_id]
            if nvec == 0 or not valid:
                continue
            if item.expired(now) or not matches_filter(item.value, filter):
                continue
            own = [s for s, i in valid if i < nvec - nkeys]
            keys = [s for s, i in valid if i >= nvec - nkeys]
            out.append(
                (
                    item,
                    max(s for s, _ in valid),
                    max(own) if own else None,
                    max(keys) if keys else None,
                )
            )
        return out

    def _keyword(
        self,
        idx: DocMirror,
        ns: Namespace,
        col: Any,
        match: Sequence[str],
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        cache: dict[str, tuple[StoredItem, int, str, int]],
    ) -> list[tuple[StoredItem, float]]:
        nsid = namespace_id(ns)
        n = limit + 5
        while True:
            hits = idx.keyword_search(self.prefix, nsid, match, n)
            missing = [k for k, _ in hits if k not in cache]
            if missing:
                cache.update(self._load_docs(ns, col, missing))
            docs = cache
            out = []
            for key, score in hits:
                entry = docs.get(key)
                if entry is None:
                    continue
                item = entry[0]
                if not item.expired(now) and matches_filter(item.value, filter):
                    out.append((item, score))
            if len(out) >= limit or len(hits) < n:
                return out[:limit]
            n *= 4

    def memory_stats(self, namespace: Namespace, keys: Sequence[str]) -> dict[str, MemoryStats]:
        """Memory fields and access statistics of the given keys (memory mode only)."""
        idx = self.memindex
        if idx is None:
            return {}
        return idx.memory_stats(self.prefix, namespace_id(namespace), list(keys))

    def previous_text(self, namespace: Namespace, key: str) -> str | None:
        """Own text of the memory written before `key` in `namespace` (memory mode only)."""
        idx = self.memindex
        if idx is None:
            return None
        return idx.previous_text(self.prefix, namespace_id(namespace), key)

    def iter_memory_stats(
        self, namespace: Namespace, page_size: int = 1000
    ) -> Iterator[list[tuple[str, MemoryStats]]]:
        """Pages of (key, stats) of a namespace's memories, from the memory index."""
        idx = self.memindex
        if idx is None:
            return
        nsid = namespace_id(namespace)
        after = 0
        while True:
            page = idx.memory_page(self.prefix, nsid, after, page_size)
            if not page:
                return
            yield [(key, stats) for _, key, stats in page]
            after = page[-1][0]

    def primary_vectors(
        self, namespace: Namespace, keys: Sequence[str]
    ) -> tuple[list[str], np.ndarray]:
        """The keys that have a primary (own-text) vector, and those vectors as rows.

        The tier's extra dimension is dropped; unindexed items are left out.
        """
        col = self._collection(namespace, create=False)
        if col is None or not keys:
            return [], np.zeros((0, self.dims), dtype=np.float32)
        got = col.get(ids=[f"p:{k}" for k in keys], include=["embeddings"])
        matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(got["ids"]), -1)
        indexed = matrix[:, -1] == 0.0  # indexed items end with 0; unindexed ones with 1
        found = [rid[2:] for rid, ok in zip(got["ids"], indexed, strict=True) if ok]
        return found, matrix[indexed, :-1]

    def touch(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Count an access of each item (one atomic SQLite update)."""
        idx = self.memindex
        if idx is None or not items:
            return
        idx.touch(self.prefix, [(namespace_id(it.namespace), it.key) for it in items], now)

    def _scan(
        self, ns: Namespace, col: Any, filter: dict[str, Any] | None, limit: int, now: float
    ) -> list[ScoredItem]:
        out: list[ScoredItem] = []
        offset = 0
        page_size = max(limit * 2, 100) if not filter else _PAGE
        while len(out) < limit:
            page = col.get(include=["metadatas"], limit=page_size, offset=offset)
            for rid, meta in zip(page["ids"], page["metadatas"], strict=True):
                if not rid.startswith("p:"):
                    continue
                item = self._decode(ns, rid[2:], meta)[0]
                if not item.expired(now) and matches_filter(item.value, filter):
                    out.append((item, None))
                    if len(out) >= limit:
                        break
            if len(page["ids"]) < page_size:
                break
            offset += page_size
            page_size = _PAGE
        return out

    def _query(
        self,
        ns: Namespace,
        col: Any,
        query_vector: Sequence[float],
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
    ) -> list[ScoredItem]:
        """The `limit` best items of one collection, by their best vector."""
        qv = [*map(float, query_vector), 0.0]
        # With the SQLite copy, documents come from it and Chroma returns ids only.
        include = ["distances"] if self.mirror is not None else ["metadatas", "distances"]
        # A few spares for filtered-out or stale records; grows below.
        n = limit + 5
        while True:
            res = col.query(query_embeddings=[qv], n_results=n, include=include)
            ids, dists = res["ids"][0], res["distances"][0]
            metas = res["metadatas"][0] if "metadatas" in include else [None] * len(ids)
            exhausted = len(ids) < n
            cands: dict[str, list[tuple[float, str | None]]] = {}
            docs: dict[str, tuple[StoredItem, int, str, int]] = {}
            for rid, meta, dist in zip(ids, metas, dists, strict=True):
                score = 1.0 - float(dist)
                if rid.startswith("p:"):
                    key = rid[2:]
                    if meta is not None:
                        docs[key] = self._decode(ns, key, meta)
                    cands.setdefault(key, []).append((score, None))
                else:
                    _, _, write_id, key = rid.split(":", 3)
                    cands.setdefault(key, []).append((score, write_id))
            missing = [k for k in cands if k not in docs]
            if missing:
                docs.update(self._load_docs(ns, col, missing))
            scored: list[ScoredItem] = []
            for key, found in cands.items():
                entry = docs.get(key)
                if entry is None:
                    continue  # extra vectors of a deleted item
                item, nvec, write_id, _ = entry
                # Extra vectors left by an interrupted update carry another write id.
                valid = [s for s, w in found if w is None or w == write_id]
                if nvec == 0 or not valid:
                    continue
                if item.expired(now) or not matches_filter(item.value, filter):
                    continue
                scored.append((item, max(valid)))
            scored.sort(key=rank_key)
            if exhausted:
                break
            # Stop once `limit` items are found, unless items tied with the last one
            # may lie beyond what was fetched (then a wider query decides the tie).
            lowest = 1.0 - float(max(dists)) if dists else float("inf")
            if len(scored) >= limit and lowest < scored[limit - 1][1] - 1e-9:  # type: ignore[operator]
                break
            n *= 4
        if len(scored) >= limit:
            return scored[:limit]
        # Every record was seen: unindexed items follow the scored ones.
        filler = [
            (item, None)
            for item, nvec, _, _ in docs.values()
            if nvec == 0 and not item.expired(now) and matches_filter(item.value, filter)
        ]
        return scored + filler[: limit - len(scored)]

    def _load_docs(
        self, ns: Namespace, col: Any, keys: list[str]
    ) -> dict[str, tuple[StoredItem, int, str, int]]:
        mirror = self.mirror
        if mirror is not None:
            metas = mirror.get(self.prefix, namespace_id(ns), keys)
        else:
            got = col.get(ids=[f"p:{k}" for k in keys], include=["metadatas"])
            metas = {rid[2:]: m for rid, m in zip(got["ids"], got["metadatas"], strict=True)}
        return {k: self._decode(ns, k, m) for k, m in metas.items()}

    # ----------------------------------------------------------------- writes
    def check_writes(self, namespaces: Sequence[Namespace]) -> None:
        """Check the embedding size each existing target namespace was stored with.

        Loads (and caches) the namespaces' collections without creating any, so a
        batch reaching a namespace of other dimensions fails before its first write.

        Raises:
            ConfigurationError: a namespace was stored with other dimensions.
        """
        with self._lock:
            for ns in namespaces:
                self._collection(ns, create=False)

    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        """Apply upserts and deletes namespace by namespace."""
        by_ns: dict[Namespace, list[ItemWrite]] = {}
        for w in writes:
            by_ns.setdefault(w.namespace, []).append(w)
        with self._lock:
            for ns, group in by_ns.items():
                self._write_namespace(ns, group, now)

    def _write_namespace(self, ns: Namespace, group: list[ItemWrite], now: float) -> None:
        upserts = [w for w in group if w.value is not None]
        deletes = [w for w in group if w.value is None]
        col = self._collection(ns, create=bool(upserts))
        if col is None:
            return  # deleting from a namespace that never existed
        if upserts:
            self._register(ns, ttl=any(w.ttl is not None for w in upserts))
        keys = [w.key for w in group]
        nsid = namespace_id(ns)
        mirror = self.mirror
        memindex = self.memindex
        unkeyed = self._unkey_successors(ns, col, [w.key for w in deletes], keys)
        if mirror is not None:
            old_docs = {
                k: json.loads(m["_d"]) for k, m in mirror.get(self.prefix, nsid, keys).items()
            }
            mirror.begin(self.prefix, nsid, keys)
        else:
            old = col.get(ids=[f"p:{k}" for k in keys], include=["metadatas"])
            old_docs = {
                rid[2:]: json.loads(m["_d"])
                for rid, m in zip(old["ids"], old["metadatas"], strict=True)
            }
        if memindex is not None and memindex is not mirror:
            memindex.begin(self.prefix, nsid, keys)
        memories: dict[str, MemoryRow] = {}
        mirrored: dict[str, dict[str, Any]] = {}
        ids: list[str] = []
        embeddings: list[list[float]] = []
        metadatas: list[dict[str, Any]] = []
        stale: list[str] = []
        for w in upserts:
            prev = old_docs.get(w.key)
            vectors = w.vectors or []
            write_id = uuid.uuid4().hex[:12]
            doc = (
                f'{{"c":{prev["c"] if prev else now!r},"u":{now!r},"t":{json.dumps(w.ttl)},'
                f'"n":{len(vectors)},"w":"{write_id}",'
                + (f'"k":{w.key_vectors},' if w.key_vectors else "")
                + f'"value":{w.encoded}}}'
            )
            meta: dict[str, Any] = {"_d": doc}
            if w.ttl is not None:
                meta["_e"] = w.expires_at if w.expires_at is not None else now + w.ttl * 60
            elif prev is not None and prev.get("t") is not None:
                meta["_e"] = None  # Chroma drops a metadata key set to None
            if memindex is not None and w.memory is not None:
                f = w.memory
                created = float(prev["c"]) if prev else now
                memories[w.key] = MemoryRow(
                    w.keyword_text or "",
                    w.context_text or "",
                    w.time_text or "",
                    f.memory_type,
                    f.importance,
                    f.occurred_at,
                    created,
                )
            ids.append(f"p:{w.key}")
            embeddings.append([*vectors[0], 0.0] if vectors else self._blank)
            metadatas.append(meta)
            mirrored[w.key] = meta
            for i, vec in enumerate(vectors[1:], start=1):
                ids.append(f"x:{i}:{write_id}:{w.key}")
                embeddings.append([*vec, 0.0])
                metadatas.append({"_k": w.key, "_w": write_id})
            if prev is not None:  # every extra vector of the previous write is stale now
                stale.extend(_extra_ids(w.key, prev))
        # Chroma refuses upserts above its batch size (5,461 ids embedded): send chunks.
        step = max(1, int(self.client.get_max_batch_size())) if ids else 1
        for at in range(0, len(ids), step):
            end = at + step
            col.upsert(ids=ids[at:end], embeddings=embeddings[at:end], metadatas=metadatas[at:end])
        for w in deletes:
            prev = old_docs.get(w.key)
            if prev is not None:
                stale.append(f"p:{w.key}")
                stale.extend(_extra_ids(w.key, prev))
        # A deleted memory's successor loses the context vector made with its text. Its
        # record still counts that vector; readers and later deletes take a missing
        # vector as no hit (a rewrite of the successor gives it a new one).
        stale.extend(unkeyed)
        if stale:
            col.delete(ids=stale)
        # Items rewritten without memory fields leave the memory index too.
        unindexed = [w.key for w in upserts if w.key not in memories]
        if mirror is not None:
            mirror.commit(
                self.prefix,
                nsid,
                upserts=mirrored,
                deletes=[w.key for w in deletes],
                done=keys,
                memories=memories if mirror is memindex else None,
                forget=unindexed if mirror is memindex else (),
            )
        if memindex is not None and memindex is not mirror:
            memindex.commit(
                self.prefix,
                nsid,
                deletes=[w.key for w in deletes],
                done=keys,
                memories=memories,
                forget=unindexed,
                docs=False,
            )
        if deletes and not upserts:
            self._unregister_if_empty(ns, col)

    def _unkey_successors(
        self, ns: Namespace, col: Any, deleted: list[str], batch: list[str]
    ) -> list[str]:
        """Ids of the context vectors made with the text of memories about to be deleted.

        They belong to the memories written right after the deleted ones (memory mode
        only); a context vector is always its memory's last vector.
        """
        memindex = self.memindex
        if not deleted or memindex is None:
            return []
        nsid = namespace_id(ns)
        successors = memindex.context_successors(self.prefix, nsid, deleted, batch)
        if not successors:
            return []
        mirror = self.mirror
        if mirror is not None:
            metas = mirror.get(self.prefix, nsid, successors)
        else:
            got = col.get(ids=[f"p:{k}" for k in successors], include=["metadatas"])
            metas = {rid[2:]: m for rid, m in zip(got["ids"], got["metadatas"], strict=True)}
        out = []
        for key, meta in metas.items():
            doc = loads(meta["_d"])
            if int(doc.get("k", 0)) >= 1 and int(doc["n"]) >= 2:
                out.append(f"x:{int(doc['n']) - 1}:{doc['w']}:{key}")
        return out

    def refresh(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Restart the TTL of items that have one (metadata update only)."""
        by_ns: dict[Namespace, list[StoredItem]] = {}
        for it in items:
            if it.ttl is not None:
                by_ns.setdefault(it.namespace, []).append(it)
        with self._lock:
            for ns, group in by_ns.items():
                col = self._collection(ns, create=False)
                if col is None:
                    continue
                expiries = {it.key: now + it.ttl * 60 for it in group}  # type: ignore[operator]
                mirror = self.mirror
                if mirror is not None:
                    mirror.begin(self.prefix, namespace_id(ns), expiries)
                # Only refresh records that still exist: update() of a missing id is a no-op.
                col.update(
                    ids=[f"p:{k}" for k in expiries],
                    metadatas=[{"_e": e} for e in expiries.values()],
                )
                if mirror is not None:
                    mirror.commit(
                        self.prefix, namespace_id(ns), expiries=expiries, done=list(expiries)
                    )

    def expired(
        self, namespace: Namespace, *, now: float, delete: bool, keys: Sequence[str] | None = None
    ) -> list[StoredItem]:
        """Items of `namespace` (or of its `keys`) whose TTL ran out at `now`.

        With `delete`, they are swept: removed with everything a delete removes (extra
        vectors, the document copy, keyword rows, and the context vector their text
        gave the memory written after them). Without it, nothing is written.
        """
        col = self._collection(namespace, create=False)
        if col is None or (keys is not None and not keys):
            return []
        with self._lock:
            if delete:
                items = self._sweep_collection(namespace, col, now, keys)
                if items:
                    self._unregister_if_empty(namespace, col)
                return items
            return [item for item, _ in self._expired_records(namespace, col, now, keys)]

    def _expired_records(
        self, ns: Namespace, col: Any, now: float, keys: Sequence[str] | None = None
    ) -> list[tuple[StoredItem, list[str]]]:
        """(item, record ids) of each expired item of a collection (locked)."""
        where = {"_e": {"$lte": now}}
        if keys is None:
            res = col.get(where=where, include=["metadatas"])
        else:
            res = col.get(ids=[f"p:{k}" for k in keys], where=where, include=["metadatas"])
        out = []
        for rid, meta in zip(res["ids"], res["metadatas"], strict=True):
            item = self._decode(ns, rid[2:], meta)[0]
            out.append((item, [rid, *_extra_ids(rid[2:], json.loads(meta["_d"]))]))
        return out

    def _sweep_collection(
        self, ns: Namespace, col: Any, now: float, keys: Sequence[str] | None = None
    ) -> list[StoredItem]:
        records = self._expired_records(ns, col, now, keys)
        if not records:
            return []
        gone = [item.key for item, _ in records]
        doomed = [rid for _, ids in records for rid in ids]
        # Like a delete: the next memory's context vector was made with the swept text.
        doomed.extend(self._unkey_successors(ns, col, gone, gone))
        nsid = namespace_id(ns)
        indexes = {id(x): x for x in (self.mirror, self.memindex) if x is not None}.values()
        for idx in indexes:
            idx.begin(self.prefix, nsid, gone)
        col.delete(ids=doomed)
        for idx in indexes:
            idx.commit(self.prefix, nsid, deletes=gone, done=gone, docs=idx is self.mirror)
        return [item for item, _ in records]

    def sweep(self, *, now: float) -> int:
        """Delete expired items from every namespace that has held TTL items."""
        removed = 0
        with self._lock:
            for ns, has_ttl in self._registered(()):
                if not has_ttl:
                    continue
                col = self._collection(ns, create=False)
                if col is None:
                    continue
                removed += len(self._sweep_collection(ns, col, now))
                self._unregister_if_empty(ns, col)
        return removed
