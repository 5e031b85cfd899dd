"""Writes of the long-term tier: puts and deletes, TTL refresh and sweep, moves.

A batch is written in four steps: (1) every changed key is recorded in the document
copy's intent log, and the namespaces it creates are registered in the same SQLite
transaction (with a Chroma server: in Redis, by the script that takes the locks);
(2) Chroma gets one upsert (and one delete) per target collection, so the namespaces
sharing a bucket share its calls; (3) the vector copy follows Chroma; (4) the document
copy and memory index commit and clear the intent log. A crash in between leaves keys
that the next open repairs from Chroma. A bucketed namespace that reaches the size
threshold then moves to its own collection.

Knowledge-graph triples (`ItemWrite.triples`) go to the tier's SQLite file (its
`index`, when the tier is not on a Chroma server): recorded with the intent in step
(1), applied in the commit of step (4). Deletes, sweeps and memories rewritten as
non-memories drop their keys' triples in that same commit.

Key vectors (such as the context key) are `x:` records like an item's other extra
vectors, in its bucket or its own collection. A key vector counts only while its
item's document names its write id, so a crash between the steps leaves nothing a
reader trusts.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np
from redis.exceptions import LockNotOwnedError

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.types import MemoryTriples
from langgraph_tiered_memory.privacy.history import content_hash
from langgraph_tiered_memory.store.tiers._document import (
    Document,
    decode_document,
    encode_document,
    same_version,
)
from langgraph_tiered_memory.store.tiers._history_events import history_content, plan_events
from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace, StoredItem
from langgraph_tiered_memory.store.tiers._namespaces import encode_namespace, namespace_id
from langgraph_tiered_memory.store.tiers.chroma_base import ChromaBase
from langgraph_tiered_memory.store.tiers.chroma_docs import MirrorDocs
from langgraph_tiered_memory.store.tiers.chroma_layout import (
    PAGE,
    NamespaceView,
    bucket_of,
    strip_ns,
)
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror, MemoryRow, PendingGraph
from langgraph_tiered_memory.store.tiers.index_redis import HeaderChange, RedisIndex
from langgraph_tiered_memory.store.tiers.redis_locks import Begun
from langgraph_tiered_memory.store.tiers.sqlite_history import HistoryRow

__all__ = ["ChromaWrites", "Header"]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.chroma_writes")


class Header(NamedTuple):
    """What a write reads of the item version it replaces (kept in Redis on a server)."""

    write_id: str
    vectors: int
    key_vectors: int
    created_at: float
    ttl: float | None
    content: str | None
    """Content hash of the value (`history_content`), for its memory history."""


def _pack(h: Header) -> str:
    return json.dumps(list(h), ensure_ascii=False)


def _header_of(doc: Document) -> Header:
    value = doc.value if isinstance(doc.value, dict) else {}
    content = content_hash(history_content(value))
    return Header(
        doc.write_id, doc.vectors, doc.key_vectors, float(doc.created_at), doc.ttl, content
    )


def _extra_ids(key: str, doc: Document | Header) -> list[str]:
    """Ids of the extra vectors written with document `doc` of item `key`."""
    return [f"x:{i}:{doc.write_id}:{key}" for i in range(1, doc.vectors)]


class _Target:
    """Records bound for one Chroma collection in a batch."""

    def __init__(self, col: Any):
        self.col = col
        self.ids: list[str] = []
        self.embeddings: list[np.ndarray] = []  # one matrix per namespace
        self.metadatas: list[dict[str, Any] | None] = []
        self.deletes: list[str] = []


class _Pending:
    """One namespace's part of a batch, between its intent record and its commit."""

    def __init__(self, ns: Namespace, col: Any):
        self.ns = ns
        self.nsid = namespace_id(ns)
        self.col = col
        self.keys: list[str] = []
        self.deleted: list[str] = []
        self.mirrored: dict[str, dict[str, Any]] = {}
        self.memories: dict[str, MemoryRow] = {}
        self.unindexed: list[str] = []
        self.records: list[tuple[str, np.ndarray]] = []
        self.stale: list[str] = []
        self.unkeyed: list[str] = []  # context keys made with a deleted memory's text
        self.graph: list[MemoryTriples] | None = None  # triples of upserts that carry them
        self.history: list[HistoryRow] = []  # memory history events (`record_history`)
        self.headers: dict[str, str] = {}  # packed headers of upserts (Chroma server)
        self.backfill: dict[str, str] | None = None  # every header, read from Chroma
        self.added = 0  # records the batch adds (negative: removes)
        self.recs: int | None = None  # the namespace's records after the batch


class ChromaWrites(ChromaBase):
    """The write side of the Chroma tier."""

    def check_writes(self, namespaces: Sequence[Namespace]) -> None:
        """Check the embedding size each existing target namespace was stored with.

        Loads (and caches) the namespaces' collections without creating any, so a
        batch reaching a namespace of other dimensions fails before its first write.

        Raises:
            ConfigurationError: a namespace was stored with other dimensions.
        """
        with self._lock:
            self._open()
            self._layout.prefetch([namespace_id(ns) for ns in namespaces])
            for ns in namespaces:
                nsid = namespace_id(ns)
                if self._layout.cached(nsid):
                    self._collection(ns, create=False)
                else:  # a new namespace goes to its bucket
                    self._layout.bucket(bucket_of(nsid, self._layout.buckets))

    def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
        """Apply upserts and deletes; namespaces sharing a bucket share its Chroma calls."""
        by_ns: dict[Namespace, list[ItemWrite]] = {}
        graph = False
        for w in writes:
            by_ns.setdefault(w.namespace, []).append(w)
            graph = graph or w.triples is not None
        self._open()
        intents = register = None
        if self._locks is not None:  # a Chroma server: headers come with the locks
            intents = {
                namespace_id(ns): list(dict.fromkeys(w.key for w in group))
                for ns, group in by_ns.items()
            }
            # ... and the namespaces that get items are registered in Redis then.
            register = {
                namespace_id(ns): (
                    encode_namespace(ns),
                    any(w.ttl is not None for w in group),
                    self.dims,
                    bucket_of(namespace_id(ns), self._layout.buckets),
                )
                for ns, group in by_ns.items()
                if any(w.value is not None for w in group)
            }
        with self._writing(list(by_ns), intents, register) as begun:
            if graph and begun is not None:
                raise ConfigurationError(
                    "Writes carry knowledge-graph triples, but this long tier keeps no"
                    " SQLite file for them: its index is in Redis (a Chroma server)."
                )
            docs = self._docs
            fresh: set[str] = set()
            if begun is not None:  # registered by this write: no registry read
                fresh = {n for n, was in begun.registered.items() if was is None}
                for nsid in fresh:
                    self._layout.adopt(nsid)
            self._layout.prefetch([namespace_id(ns) for ns in by_ns])
            known = {
                ns
                for ns in by_ns
                if self._layout.cached(nsid := namespace_id(ns)) and nsid not in fresh
            }
            entries: dict[str, dict[str, Any]] = {}
            if begun is None:
                new = [
                    (ns, any(w.ttl is not None for w in group))
                    for ns, group in by_ns.items()
                    if any(w.value is not None for w in group)
                ]
                assert isinstance(docs, MirrorDocs)  # without a Chroma server (`begun`)
                new = [(ns, ttl) for ns, ttl in new if docs.needs_register(ns, ttl=ttl)]
                entries = self._layout.plan(new) if new else {}
            targets: dict[str, _Target] = {}
            pending = [
                p
                for ns, group in by_ns.items()
                if (
                    p := self._prepare(
                        ns, group, now, targets, begun, ns in known, entries.get(namespace_id(ns))
                    )
                )
                is not None
            ]
            self._send(targets)
            views = [p for p in pending if isinstance(p.col, NamespaceView)]
            if views:
                self._vectors.write(
                    self.prefix,
                    [(p.nsid, rid, vec) for p in views for rid, vec in p.records],
                    deletes=[(p.nsid, rid) for p in views for rid in p.stale],
                )
            if begun is not None and intents is not None:
                self._commit_server(pending, begun, intents)
                return
            for p in pending:
                self._commit(p)
            for p in pending:
                if p.deleted and not p.mirrored:
                    self._unregister_if_empty(p.ns, p.col)
                elif p.mirrored and isinstance(p.col, NamespaceView):
                    self._maybe_graduate(p.ns, p.col)

    def _commit_server(
        self, pending: list[_Pending], begun: Begun, intents: dict[str, list[str]]
    ) -> None:
        """Commit a batch to the Redis index and release its locks: one script call.

        A namespace the write may have emptied or grown past the move threshold keeps
        its lock until that is dealt with.
        """
        idx, locks = self._index, self._locks
        assert isinstance(idx, RedisIndex) and locks is not None
        later = [
            p
            for p in pending
            if (p.deleted and not p.mirrored)
            or (
                p.mirrored
                and isinstance(p.col, NamespaceView)
                and (p.recs is None or p.recs >= self._layout.graduate_at)
            )
        ]
        parts: list[tuple[str, dict[str, Any]]] = []
        for p in pending:
            self._commit(p, parts)
        written = {p.nsid for p in pending}
        for nsid in begun.recorded - written:  # nothing to write there: clear the intents
            idx.commit(self.prefix, nsid, done=intents[nsid], docs=False, defer=parts)
        handed = [] if later else locks.handoff(begun.layout)
        try:
            lost = idx.apply(parts, handed)
        except BaseException:
            locks.handback(handed)
            raise
        if lost:
            raise LockNotOwnedError(
                "A long-term namespace lock expired before the write committed (lease"
                f" {locks.lease:g} s): another writer may have written meanwhile."
            )
        for p in later:
            if p.deleted and not p.mirrored:
                self._unregister_if_empty(p.ns, p.col)
            elif isinstance(p.col, NamespaceView):
                self._maybe_graduate(p.ns, p.col, p.recs)

    def _prepare(
        self,
        ns: Namespace,
        group: list[ItemWrite],
        now: float,
        targets: dict[str, _Target],
        begun: Begun | None = None,
        known: bool = True,
        entry: dict[str, Any] | None = None,
    ) -> _Pending | None:
        """Record one namespace's keys as pending and add its records to `targets`.

        With a Chroma server (`begun`), what the write replaces is read from the item
        headers in Redis; `known`: the namespace was registered before this write.
        `entry`: its registry entry, recorded with the intents (beside an embedded Chroma).
        """
        upserts = [w for w in group if w.value is not None]
        deletes = [w for w in group if w.value is None]
        col = self._collection(ns, create=bool(upserts))
        if col is None:
            return None  # deleting from a namespace that never existed
        p = _Pending(ns, col)
        p.keys = [w.key for w in group]
        p.deleted = [w.key for w in deletes]
        memory = self._describe is not None  # memory mode: the index keeps memory rows
        unkeyed = self._unkey_successors(ns, col, p.deleted, p.keys)
        hashes: dict[str, str | None] = {}
        old_docs: dict[str, Any]
        if begun is None:
            old_docs = {
                k: decode_document(m["_d"]) for k, m in self._docs.get(p.nsid, col, p.keys).items()
            }
        else:
            old_docs = self._old_headers(p, begun, known)
            hashes = {k: h.content for k, h in old_docs.items()}
            if self.record_history and p.deleted:  # their events name the deleted values
                old_docs.update(
                    (k, decode_document(m["_d"]))
                    for k, m in self._docs.get(p.nsid, col, p.deleted).items()
                )
        write_ids = [os.urandom(6).hex() for _ in upserts]
        triples = [
            PendingGraph(wid, MemoryTriples(ns, w.key, w.triples, w.user_id))
            for w, wid in zip(upserts, write_ids, strict=True)
            if w.triples is not None
        ]
        if triples:
            p.graph = [t.change for t in triples]
        if begun is None:
            # The SQLite index: a new namespace's registry entry goes with the intents.
            index = self.index
            assert isinstance(index, DocMirror)  # without a Chroma server (`begun`)
            index.begin(self.prefix, p.nsid, p.keys, triples, entry)
            if entry is not None:
                self._layout.remember(p.nsid, entry)
                cast(MirrorDocs, self._docs).registered_now(p.ns, ttl=bool(entry.get("ttl")))
        if self.record_history:
            previous = {k: d.value for k, d in old_docs.items() if isinstance(d, Document)}
            p.history = plan_events(
                ns,
                [(w.key, w.value or {}) for w in upserts],
                previous,
                p.deleted,
                now,
                hashes=hashes,
            )
        ids: list[str] = []
        metadatas: list[dict[str, Any]] = []
        rows: list[Sequence[float]] = []  # each record's vector, without the extra dimension
        blanks: list[int] = []  # records of unindexed items
        zero = [0.0] * self.dims
        for w, write_id in zip(upserts, write_ids, strict=True):
            prev = old_docs.get(w.key)
            vectors = w.vectors or []
            assert w.encoded is not None  # an upsert
            doc = encode_document(
                w.encoded,
                created_at=prev.created_at if prev else now,
                updated_at=now,
                ttl=w.ttl,
                vectors=len(vectors),
                write_id=write_id,
                key_vectors=w.key_vectors,
            )
            meta: dict[str, Any] = {"_d": doc}
            if w.ttl is not None:
                meta["_e"] = w.expires_at if w.expires_at is not None else now + w.ttl * 60
            elif prev is not None and prev.ttl is not None:
                meta["_e"] = None  # Chroma drops a metadata key set to None
            if memory and w.memory is not None:
                f = w.memory
                created = float(prev.created_at) if prev else now
                p.memories[w.key] = MemoryRow(
                    w.keyword_text or "",
                    w.context_text or "",
                    w.time_text or "",
                    f.memory_type,
                    f.importance,
                    f.occurred_at,
                    created,
                )
            if begun is not None:
                p.headers[w.key] = _pack(
                    Header(
                        write_id,
                        len(vectors),
                        w.key_vectors,
                        prev.created_at if prev else now,
                        w.ttl,
                        content_hash(history_content(w.value or {})),
                    )
                )
                p.added += max(1, len(vectors)) - (max(1, prev.vectors) if prev else 0)
            ids.append(f"p:{w.key}")
            if not vectors:
                blanks.append(len(rows))
            rows.append(vectors[0] if vectors else zero)
            metadatas.append(meta)
            p.mirrored[w.key] = meta
            for i, vec in enumerate(vectors[1:], start=1):
                ids.append(f"x:{i}:{write_id}:{w.key}")
                rows.append(vec)
                metadatas.append({"_k": w.key, "_w": write_id})
            if prev is not None:  # every extra vector of the previous write is stale now
                p.stale.extend(_extra_ids(w.key, prev))
        for w in deletes:
            prev = old_docs.get(w.key)
            if prev is not None:
                p.stale.append(f"p:{w.key}")
                p.stale.extend(_extra_ids(w.key, prev))
                p.added -= max(1, prev.vectors)
        if begun is not None and p.recs is not None:
            p.recs += p.added
        # A deleted memory's successor loses the context vector made with its text. Its
        # record still counts that vector; readers and later deletes take a missing
        # vector as no hit (a rewrite of the successor gives it a new one).
        p.unkeyed = unkeyed
        # Items rewritten without memory fields leave the memory index too.
        p.unindexed = [w.key for w in upserts if w.key not in p.memories] if memory else []
        # One float32 matrix of the records (a trailing 0, or [0, ..., 0, 1] when not
        # indexed): Chroma takes it as is, instead of one list of floats per record.
        matrix = np.zeros((len(rows), self.dims + 1), dtype=np.float32)
        if rows and self.dims:
            matrix[:, :-1] = np.asarray(rows, dtype=np.float32)
        matrix[blanks, -1] = 1.0
        p.records = list(zip(ids, matrix, strict=True))
        if isinstance(col, NamespaceView):
            p.stale.extend(unkeyed)
            target = targets.setdefault(f"b{col.bucket}", _Target(col.col))
            target.ids.extend(f"{p.nsid}:{rid}" for rid in ids)
            target.metadatas.extend({**m, "_ns": p.nsid} for m in metadatas)
            target.deletes.extend(f"{p.nsid}:{rid}" for rid in p.stale)
            target.embeddings.append(matrix)
            return p
        target = targets.setdefault(f"n{p.nsid}", _Target(col))
        target.ids.extend(ids)
        # Extra vectors of an own collection carry no metadata: their id names the item
        # and the write (`_k`/`_w` serve the bucket's vector copy only), and every
        # metadata key costs Chroma a row per record.
        target.metadatas.extend(m if "_d" in m else None for m in metadatas)
        target.deletes.extend([*p.stale, *unkeyed])
        target.embeddings.append(matrix)
        return p

    def _send(self, targets: dict[str, _Target]) -> None:
        """Chroma upserts, then deletes, per target collection (in allowed chunk sizes)."""
        if not targets:
            return
        # Chroma refuses calls above its batch size (5,461 ids embedded): send chunks.
        step = max(1, int(self.client.get_max_batch_size()))
        for t in targets.values():
            if not t.ids:
                continue
            embeddings = t.embeddings[0] if len(t.embeddings) == 1 else np.vstack(t.embeddings)
            for at in range(0, len(t.ids), step):
                end = at + step
                if at and self._locks is not None:
                    self._locks.keepalive()  # a long write keeps its namespaces
                t.col.upsert(
                    ids=t.ids[at:end],
                    embeddings=embeddings[at:end],
                    metadatas=t.metadatas[at:end],
                )
        for t in targets.values():
            for at in range(0, len(t.deletes), step):
                t.col.delete(ids=t.deletes[at : at + step])

    def _old_headers(self, p: _Pending, begun: Begun, known: bool) -> dict[str, Any]:
        """Headers of the item versions a server write replaces, by key (Redis first).

        A namespace whose headers are not all in Redis (written before they were
        kept there, or repaired since) has them read from Chroma once and written
        back with this batch (`_Pending.backfill`).
        """
        recs = begun.recs.get(p.nsid)
        if recs is not None:
            p.recs = recs
            found = begun.headers.get(p.nsid, {})
            return {k: Header(*json.loads(h)) for k, h in found.items()}
        p.backfill = {}
        if not known:  # a namespace registered by this write holds nothing yet
            p.recs = 0
            return {}
        every: dict[str, Header] = {}
        count, offset = 0, 0
        while True:
            page = p.col.get(include=["metadatas"], limit=PAGE, offset=offset)
            count += len(page["ids"])
            for rid, meta in zip(page["ids"], page["metadatas"], strict=True):
                if rid.startswith("p:"):
                    every[rid[2:]] = _header_of(decode_document(meta["_d"]))
            if len(page["ids"]) < PAGE:
                break
            offset += PAGE
        logger.info("item headers of namespace %s read from Chroma (%d items)", p.nsid, len(every))
        p.backfill = {k: _pack(h) for k, h in every.items()}
        p.recs = count
        return {k: every[k] for k in p.keys if k in every}

    def _commit(self, p: _Pending, parts: list[tuple[str, dict[str, Any]]] | None = None) -> None:
        """Commit one namespace's part of the batch to the index (and document copy).

        With `parts` (a Chroma server), the Redis index's part is appended there.
        """
        extra: dict[str, Any] = {"upserts": p.mirrored, "graph": p.graph}
        if parts is not None:
            headers = HeaderChange(
                put={**(p.backfill or {}), **p.headers},
                drop=p.deleted,
                recs=p.recs,
                reset=p.backfill is not None,
            )
            extra = {"docs": False, "headers": headers, "defer": parts}
        self.index.commit(
            self.prefix,
            p.nsid,
            deletes=p.deleted,
            done=p.keys,
            memories=p.memories,
            forget=p.unindexed,
            history=(p.ns, p.history) if p.history else None,
            **extra,
        )

    def _maybe_graduate(self, ns: Namespace, view: NamespaceView, recs: int | None = None) -> None:
        """Move a bucketed namespace past the size threshold to its own collection.

        `recs`: its record count, when the index keeps it (else counted in its source).
        """
        if recs is None:
            recs = self._vectors.count(self.prefix, view.nsid, view)
        if recs >= self._layout.graduate_at:
            self._graduate(ns, view)

    def _graduate(self, ns: Namespace, view: NamespaceView) -> None:
        """Copy, flip the registry entry, empty the bucket; a rerun finishes a crashed move."""
        self._layout.copy_to_own(ns, view)
        if self._locks is not None:
            self._locks.keepalive()
        self._layout_changing(view.nsid)
        self._layout.flip(ns, view.bucket)
        self._finish_move(view.nsid, view.bucket)

    def _unregister_if_empty(self, namespace: Namespace, col: Any) -> None:
        if not self._docs.has_docs(namespace_id(namespace), col):
            self._layout_changing(namespace_id(namespace))
            self._layout.unregister(namespace_id(namespace))
            self._docs.unregistered(namespace)

    def _unkey_successors(
        self, ns: Namespace, col: Any, deleted: list[str], batch: list[str]
    ) -> list[str]:
        """Ids of the context vectors made with the text of memories about to be deleted.

        They belong to the memories written right after the deleted ones (memory mode
        only); a context vector is always its memory's last vector.
        """
        if not deleted or self._describe is None:
            return []
        nsid = namespace_id(ns)
        successors = self.index.context_successors(self.prefix, nsid, deleted, batch)
        if not successors:
            return []
        out = []
        for key, meta in self._docs.get(nsid, col, successors).items():
            doc = decode_document(meta["_d"])
            if doc.key_vectors >= 1 and doc.vectors >= 2:
                out.append(f"x:{doc.vectors - 1}:{doc.write_id}:{key}")
        return out

    # ----------------------------------------------------------------- TTL
    def refresh(self, items: Sequence[StoredItem], *, now: float) -> None:
        """Restart the TTL of items that have one (metadata update only)."""
        by_ns: dict[Namespace, list[StoredItem]] = {}
        for it in items:
            if it.ttl is not None:
                by_ns.setdefault(it.namespace, []).append(it)
        for ns, group in by_ns.items():
            with self._writing([ns]):
                col = self._collection(ns, create=False)
                if col is None:
                    continue
                nsid = namespace_id(ns)
                # Only the version that was read: a write since then (a put without a
                # TTL, say) keeps its own expiry.
                current = self._docs.get(nsid, col, [it.key for it in group])
                expiries = {
                    it.key: now + it.ttl * 60  # type: ignore[operator]
                    for it in group
                    if it.key in current and same_version(current[it.key]["_d"], it)
                }
                if not expiries:
                    continue
                self._docs.begin(nsid, list(expiries))
                # Only refresh records that still exist: update() of a missing id is a no-op.
                col.update(
                    ids=[f"p:{k}" for k in expiries],
                    metadatas=[{"_e": e} for e in expiries.values()],
                )
                self._docs.commit(nsid, expiries=expiries, done=list(expiries))

    def expired(
        self, namespace: Namespace, *, now: float, delete: bool, keys: Sequence[str] | None = None
    ) -> list[StoredItem]:
        """Items of `namespace` (or of its `keys`) whose TTL ran out at `now`.

        With `delete`, they are swept: removed with everything a delete removes (extra
        vectors, the document copy, keyword rows, and the context vector their text
        gave the memory written after them). Without it, nothing is written.
        """
        if (keys is not None and not keys) or not self._docs.has_held_ttl(namespace):
            return []  # nothing can have expired: no Chroma query per namespace
        if not delete:
            col = self._collection(namespace, create=False)
            if col is None:
                return []
            return [item for item, _ in self._expired_records(namespace, col, now, keys)]
        with self._writing([namespace]):
            col = self._collection(namespace, create=False)
            if col is None:
                return []
            items = self._sweep_collection(namespace, col, now, keys)
            if items:
                self._unregister_if_empty(namespace, col)
            return items

    def _expired_records(
        self, ns: Namespace, col: Any, now: float, keys: Sequence[str] | None = None
    ) -> list[tuple[StoredItem, list[str]]]:
        """(item, record ids) of each expired item of a namespace (locked)."""
        where = {"_e": {"$lte": now}}
        if keys is None:
            res = col.get(where=where, include=["metadatas"])
        else:
            res = col.get(ids=[f"p:{k}" for k in keys], where=where, include=["metadatas"])
        out = []
        for rid, meta in zip(res["ids"], res["metadatas"], strict=True):
            item = self._decode(ns, rid[2:], meta)[0]
            out.append((item, [rid, *_extra_ids(rid[2:], decode_document(meta["_d"]))]))
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
        idx = self.index
        idx.begin(self.prefix, nsid, gone)
        col.delete(ids=doomed)
        if isinstance(col, NamespaceView):
            self._vectors.write(self.prefix, [], deletes=[(nsid, rid) for rid in doomed])
        history = None
        if self.record_history:
            previous = {item.key: item.value for item, _ in records}
            history = (ns, plan_events(ns, (), previous, gone, now, event="expired"))
        extra: dict[str, Any] = {}
        if isinstance(idx, RedisIndex):  # a Chroma server
            removed = sum(len(ids) for _, ids in records)
            extra = {"docs": False, "headers": HeaderChange(drop=gone, add=-removed)}
        idx.commit(self.prefix, nsid, deletes=gone, done=gone, history=history, **extra)
        return [item for item, _ in records]

    def sweep(self, *, now: float) -> int:
        """Delete expired items from every namespace that has held TTL items.

        Bucketed namespaces are found with one expiry query per bucket, not one per
        namespace.
        """
        removed = 0
        self._open()  # the bucket count comes from the index
        with self._lock:
            due: dict[str, set[str]] = {}
            for _, bucket in self._layout.existing_buckets():
                res = bucket.get(where={"_e": {"$lte": now}}, include=["metadatas"])
                for rid, meta in zip(res["ids"], res["metadatas"], strict=True):
                    due.setdefault(meta["_ns"], set()).add(strip_ns(rid)[2:])
            for ns, has_ttl in self._docs.registered(()):
                if not has_ttl:
                    continue
                with self._writing([ns]):
                    col = self._collection(ns, create=False)
                    if col is None:
                        continue
                    if isinstance(col, NamespaceView):
                        keys = sorted(due.get(col.nsid, ()))
                        if keys:
                            removed += len(self._sweep_collection(ns, col, now, keys))
                    else:
                        removed += len(self._sweep_collection(ns, col, now))
                    self._unregister_if_empty(ns, col)
        return removed
