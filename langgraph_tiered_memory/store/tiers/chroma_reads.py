"""Reads of the long-term tier: get, list, search and memory retrieval.

Every dense read goes through one loop, `_ranked`: a namespace with its own collection
asks its HNSW index for the `n` nearest records; a bucketed namespace scores all of its
records exactly (cosine, numpy) and takes the `n` best. `_aggregate` then turns those
records into items (best, own-vector and key-vector scores), dropping stale vectors,
expired items and filtered-out values; search and retrieval differ only in how many
records they ask for. Key vectors are records like any other, in the bucket or the own
collection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.ranking.select import ChannelHits, DenseHit, KeywordHit
from langgraph_tiered_memory.store.tiers._filters import matches_filter
from langgraph_tiered_memory.store.tiers._items import Namespace, StoredItem
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers._vectors import rank_key
from langgraph_tiered_memory.store.tiers.base import Candidate, RetrievalHits, ScoredItem
from langgraph_tiered_memory.store.tiers.chroma_base import ChromaBase, LongIndex
from langgraph_tiered_memory.store.tiers.chroma_layout import PAGE, NamespaceView, read
from langgraph_tiered_memory.store.tiers.doc_mirror import MemoryStats
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex
from langgraph_tiered_memory.store.tiers.sqlite_stats import ContextInputs

__all__ = ["Candidate", "ChromaReads"]

Doc = tuple[StoredItem, int, str, int]
"""A decoded primary record: item, number of vectors, write id, number of key vectors."""

Hits = tuple[list[tuple[str, float]], bool]
"""Records best first as (record id, cosine similarity), and whether none are left out."""

Ranked = Callable[[int], tuple[Hits, dict[str, Doc]]]
"""Gives the `n` best records, and the documents read along."""

Dense = tuple[StoredItem, float, float | None, float | None]
"""An item with its best, best own-vector and best key-vector similarity."""


class ChromaReads(ChromaBase):
    """The read side of the Chroma tier."""

    # ----------------------------------------------------------------- documents
    def _load_docs(self, ns: Namespace, col: Any, keys: list[str]) -> dict[str, Doc]:
        metas = self._read_docs(ns, col, keys)
        return {k: self._decode(ns, k, m) for k, m in metas.items()}

    def get(
        self, namespace: Namespace, keys: Sequence[str], *, now: float
    ) -> dict[str, StoredItem]:
        """Live items of `namespace` with the given keys (from the mirror when there is one)."""
        if not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        col = self._collection(namespace, create=False)  # cached; checks the dimensions
        metas = self._read_docs(namespace, col, unique)
        out: dict[str, StoredItem] = {}
        for key, meta in metas.items():
            item = self._decode(namespace, key, meta)[0]
            if not item.expired(now):
                out[key] = item
        return out

    def _registered(self, prefix: Namespace) -> list[tuple[Namespace, bool]]:
        return self._docs.registered(prefix)

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
                if col is None or not self._docs.has_docs(namespace_id(ns), col, live_at=now):
                    continue
            out.append(ns)
        return out

    # ----------------------------------------------------------------- dense records
    def _ranked(self, ns: Namespace, col: Any, query_vector: Sequence[float]) -> Ranked:
        """A function giving the `n` records most similar to the query, best first."""
        qv = [*map(float, query_vector), 0.0]
        if isinstance(col, NamespaceView):
            records = self._vectors.records(self.prefix, col.nsid, col, self.dims)
            if not records.ids:  # moved to its own collection by another store object?
                self._layout.forget_namespace(col.nsid)
                moved = self._collection(ns, create=False)
                if moved is not None and not isinstance(moved, NamespaceView):
                    return self._ranked(ns, moved, query_vector)
            docs = {k: self._decode(ns, k, m) for k, m in (records.metas or {}).items()}
            q = np.asarray(qv, dtype=np.float64)
            matrix = records.matrix.astype(np.float64)
            norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(q))
            sims = np.divide(matrix @ q, norms, out=np.zeros(len(norms)), where=norms > 0)
            order = np.argsort(-sims, kind="stable")
            ranked = [(records.ids[i], float(sims[i])) for i in order]

            def exact(n: int) -> tuple[Hits, dict[str, Doc]]:
                return (ranked[:n], n >= len(ranked)), docs

            return exact

        include = ["metadatas", "distances"] if self._docs.with_metadata else ["distances"]

        def nearest(n: int) -> tuple[Hits, dict[str, Doc]]:
            res = read(col.query, query_embeddings=[qv], n_results=n, include=include)
            ids = res["ids"][0]
            found: dict[str, Doc] = {}
            if "metadatas" in include:
                for rid, meta in zip(ids, res["metadatas"][0], strict=True):
                    if rid.startswith("p:"):
                        found[rid[2:]] = self._decode(ns, rid[2:], meta)
            hits = [(rid, 1.0 - float(d)) for rid, d in zip(ids, res["distances"][0], strict=True)]
            return (hits, len(ids) < n), found

        return nearest

    def _aggregate(
        self,
        ns: Namespace,
        col: Any,
        hits: list[tuple[str, float]],
        docs: dict[str, Doc],
        filter: dict[str, Any] | None,
        now: float,
    ) -> list[Dense]:
        """Items of the records `hits` (reading missing documents into `docs`)."""
        by_key: dict[str, list[tuple[float, int, str | None]]] = {}
        for rid, score in hits:
            if rid.startswith("p:"):
                by_key.setdefault(rid[2:], []).append((score, 0, None))
            else:
                _, i, write_id, key = rid.split(":", 3)
                by_key.setdefault(key, []).append((score, int(i), write_id))
        missing = [k for k in by_key if k not in docs]
        if missing:
            docs.update(self._load_docs(ns, col, missing))
        out: list[Dense] = []
        for key, found in by_key.items():
            entry = docs.get(key)
            if entry is None:
                continue  # extra vectors of a deleted item
            item, nvec, write_id, nkeys = entry
            # Extra vectors left by an interrupted update carry another write id.
            valid = [(s, i) for s, i, w in found if w is None or w == write_id]
            if nvec == 0 or not valid:
                continue
            if item.expired(now) or not matches_filter(item.value, filter):
                continue
            own = [s for s, i in valid if i < nvec - nkeys]
            keyed = [s for s, i in valid if i >= nvec - nkeys]
            out.append(
                (
                    item,
                    max(s for s, _ in valid),
                    max(own) if own else None,
                    max(keyed) if keyed else None,
                )
            )
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
        """The `limit` best items of one namespace, by their best vector."""
        ranked = self._ranked(ns, col, query_vector)
        n = limit + 5  # a few spares for filtered-out or stale records; grows below
        while True:
            (hits, exhausted), docs = ranked(n)
            dense = self._aggregate(ns, col, hits, docs, filter, now)
            scored: list[ScoredItem] = sorted(((d[0], d[1]) for d in dense), key=rank_key)
            if exhausted:
                break
            # Stop once `limit` items are found, unless items tied with the last one
            # may lie beyond what was fetched (then a wider query decides the tie).
            lowest = min(s for _, s in hits) if hits else float("inf")
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
        """Search each matching namespace and merge the results.

        With a query on a Chroma server (no SQLite copy), the namespace `prefix` itself
        is searched while the registry lookup for deeper namespaces runs in a worker
        thread (Chroma releases the GIL), so the common single-namespace search costs
        one query. With `namespace_filter`, only the namespaces it accepts are searched.
        """
        if limit <= 0:
            return []
        results: list[ScoredItem] = []
        done: set[Namespace] = set()
        keep = namespace_filter or (lambda ns: True)
        if (
            query_vector is not None
            and prefix
            and isinstance(self.index, RedisIndex)
            and keep(prefix)
        ):
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

    def _scan(
        self, ns: Namespace, col: Any, filter: dict[str, Any] | None, limit: int, now: float
    ) -> list[ScoredItem]:
        """Items of one namespace in storage order (no query)."""
        out: list[ScoredItem] = []
        for page in self._doc_pages(ns, col, filter, limit):
            for key, meta in page:
                item = self._decode(ns, key, meta)[0]
                if not item.expired(now) and matches_filter(item.value, filter):
                    out.append((item, None))
                    if len(out) >= limit:
                        return out
        return out

    def _doc_pages(
        self, ns: Namespace, col: Any, filter: dict[str, Any] | None, limit: int
    ) -> Iterator[list[tuple[str, dict[str, Any]]]]:
        """Pages of (key, primary metadata) of a namespace."""
        keys = self._vectors.keys(self.prefix, col.nsid) if isinstance(col, NamespaceView) else None
        if keys is not None:
            for start in range(0, len(keys), PAGE):
                chunk = keys[start : start + PAGE]
                metas = self._docs.get(col.nsid, col, chunk)
                yield [(k, metas[k]) for k in chunk if k in metas]
            return
        offset = 0
        page_size = max(limit * 2, 100) if not filter else PAGE
        while True:
            page = read(col.get, include=["metadatas"], limit=page_size, offset=offset)
            yield [
                (rid[2:], meta)
                for rid, meta in zip(page["ids"], page["metadatas"], strict=True)
                if rid.startswith("p:")
            ]
            if len(page["ids"]) < page_size:
                return
            offset += page_size
            page_size = PAGE

    # ----------------------------------------------------------------- memory mode
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
    ) -> RetrievalHits:
        """Raw candidates for memory ranking, per retrieval channel and uncut.

        Args:
            prefix: Namespace prefix searched.
            query_vector: Query embedding for dense retrieval (None: no dense channel).
            match: Query terms for keyword retrieval (None or empty: no keyword channel).
            filter: Value filter every candidate must match.
            limit: Candidates per channel wanted after the cut (each namespace
                contributes about that many per channel).
            now: Current time (epoch seconds).
            namespace_filter: When given, only the namespaces it accepts are searched.

        Returns:
            Live dense hits (best, own-vector and key-vector similarity) and keyword
            hits (BM25) of every namespace searched; the caller cuts them to `limit`
            per channel (`ranking.select.cut_channels`) and reads `memory_stats`.
        """
        if self._describe is None:
            raise ConfigurationError("Memory retrieval needs scoring={'mode': 'memory'}.")
        idx = self.index
        dense: list[DenseHit[StoredItem]] = []
        keyword: list[KeywordHit[StoredItem]] = []
        for ns in sorted(
            ns
            for ns, _ in self._registered(prefix)
            if namespace_filter is None or namespace_filter(ns)
        ):
            col = self._collection(ns, create=False)
            if col is None:
                continue
            cache: dict[str, Doc] = {}
            if query_vector is not None and self.dims:
                # Items have several vectors: 4 * limit records let the own-vector and
                # key-vector lists each reach about `limit` items.
                ranked = self._ranked(ns, col, query_vector)
                (hits, _), docs = ranked(4 * limit)
                cache.update(docs)
                dense.extend(
                    DenseHit(*d) for d in self._aggregate(ns, col, hits, cache, filter, now)
                )
            if match:
                keyword.extend(
                    KeywordHit(*k)
                    for k in self._keyword(idx, ns, col, match, filter, limit, now, cache)
                )
        return ChannelHits(dense, keyword)

    def _keyword(
        self,
        idx: LongIndex,
        ns: Namespace,
        col: Any,
        match: Sequence[str],
        filter: dict[str, Any] | None,
        limit: int,
        now: float,
        cache: dict[str, Doc],
    ) -> list[tuple[StoredItem, float]]:
        nsid = namespace_id(ns)
        n = limit + 5
        while True:
            hits = idx.keyword_search(self.prefix, nsid, match, n)
            missing = [k for k, _ in hits if k not in cache]
            if missing:
                cache.update(self._load_docs(ns, col, missing))
            out = []
            for key, score in hits:
                entry = cache.get(key)
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
        if self._describe is None:
            return {}
        return self.index.memory_stats(self.prefix, namespace_id(namespace), list(keys))

    def context_inputs(self, namespace: Namespace, keys: Sequence[str]) -> ContextInputs:
        """Which of `keys` are memories and the text before each (memory mode only).

        One read of the memory index (one Redis round trip with a Chroma server).
        """
        if self._describe is None:
            return ContextInputs(frozenset(), {})
        return self.index.context_inputs(self.prefix, namespace_id(namespace), keys)

    def iter_memory_stats(
        self, namespace: Namespace, page_size: int = 1000
    ) -> Iterator[list[tuple[str, MemoryStats]]]:
        """Pages of (key, stats) of a namespace's memories, from the memory index."""
        if self._describe is None:
            return
        idx = self.index
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
        if isinstance(col, NamespaceView):  # a small namespace: read all its records
            records = self._vectors.records(self.prefix, col.nsid, col, self.dims)
            wanted = {f"p:{k}" for k in keys}
            rows = [i for i, rid in enumerate(records.ids) if rid in wanted]
            ids = [records.ids[i] for i in rows]
            matrix = records.matrix[rows].reshape(len(rows), self.dims + 1)
        else:
            got = read(col.get, ids=[f"p:{k}" for k in keys], include=["embeddings"])
            ids = list(got["ids"])
            matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), -1)
        indexed = matrix[:, -1] == 0.0  # indexed items end with 0; unindexed ones with 1
        found = [rid[2:] for rid, ok in zip(ids, indexed, strict=True) if ok]
        return found, matrix[indexed, :-1]

    def touch(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Count an access of each item (one atomic update of the index, SQLite or Redis)."""
        if self._describe is None or not items:
            return
        self.index.touch(self.prefix, [(namespace_id(it.namespace), it.key) for it in items], now)
