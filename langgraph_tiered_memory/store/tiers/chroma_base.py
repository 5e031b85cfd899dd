"""Opening the long-term tier: its client, layout, index, and document and vector sources.

They are chosen once, when the (lazily created) client is first used. The tier has one
index (`index`: keyword index, memory statistics, write order, intents, memory history,
namespace registry). With a Chroma server it is `RedisIndex`, in the Redis the tier is
given, and writers take per-namespace locks there (`redis_locks`), so every process
using the server agrees; documents and vectors are read from Chroma. A
`memory_index_path` file (where earlier versions kept that index, per process) is
imported into it once when the tier opens (`index_import`). Otherwise the index is a
SQLite file (`DocMirror`) that also copies the documents and keeps the registry and the
graph: beside an embedded Chroma, in its directory (with a copy of the bucket vectors);
with an in-memory Chroma, in memory. The writer lock is then this process's. See
`chroma_tier` for the record layout.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.store.tiers._document import decode_document
from langgraph_tiered_memory.store.tiers._history_events import recovered_events
from langgraph_tiered_memory.store.tiers._items import Namespace, StoredItem
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.chroma_docs import DocSource, MirrorDocs, ServerDocs
from langgraph_tiered_memory.store.tiers.chroma_layout import (
    DEFAULT_GRADUATE_AT,
    PAGE,
    Collections,
    NamespaceView,
    strip_ns,
)
from langgraph_tiered_memory.store.tiers.chroma_vectors import (
    ChromaVectors,
    VectorCopy,
    VectorSource,
    key_of,
    write_id_of,
)
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror, MemoryRow
from langgraph_tiered_memory.store.tiers.index_import import import_memory_index
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex
from langgraph_tiered_memory.store.tiers.redis_locks import (
    DEFAULT_LEASE,
    DEFAULT_WAIT,
    Begun,
    NamespaceLocks,
)
from langgraph_tiered_memory.store.tiers.sqlite_history import (
    HistoryRow,
    HistoryTable,
    RecoveredHistory,
)

__all__ = ["ChromaBase", "Entry", "is_chroma_server"]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.chroma_base")

LongIndex = DocMirror | RedisIndex
"""The long tier's index: a SQLite file, or Redis with a Chroma server."""

Entry = tuple[Namespace, bool, "int | None"]
"""A registry entry: namespace, has held TTL items, bucket (None: own collection)."""


def is_chroma_server(settings: Any) -> bool:
    """Whether a Chroma client's settings are those of a server's client (HttpClient)."""
    return "fastapi" in str(getattr(settings, "chroma_api_impl", "")).lower()


def _write_id(meta: dict[str, Any]) -> str:
    """The write id of a primary record's document."""
    return decode_document(meta["_d"]).write_id


class ChromaBase:
    """State shared by the read and write paths of the Chroma tier."""

    record_history = False
    """Append memory history events in each commit (the store's `history` option)."""

    def __init__(
        self,
        client: Any = None,
        *,
        key_prefix: str,
        dims: int,
        embedder: str | None = None,
        client_factory: Callable[[], tuple[Any, Callable[[], None]]] | None = None,
        owns_client: bool = False,
        hnsw: Mapping[str, int] | None = None,
        describe: Callable[[dict[str, Any]], tuple[str, str, Any] | None] | None = None,
        memory_index_path: str | None = None,
        buckets: int | None = None,
        graduate_at: int = DEFAULT_GRADUATE_AT,
        redis: Any = None,
        owns_redis: bool = False,
        lock_lease: float = DEFAULT_LEASE,
        lock_wait: float = DEFAULT_WAIT,
        import_graph: Callable[[], GraphStore | None] | None = None,
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
        self._hnsw = {"space": "cosine", **(hnsw or {})}
        self._layout = Collections(
            lambda: self.client,
            prefix=key_prefix,
            dims=dims,
            embedder=embedder,
            hnsw=self._hnsw,
            buckets=buckets,
            graduate_at=graduate_at,
        )
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tiered-memory-chroma")
        self._opened = False
        self._docs_source: DocSource | None = None
        self._vector_source: VectorSource | None = None
        self._vcopy: VectorCopy | None = None
        self._describe = describe
        if memory_index_path is not None and redis is None:
            raise ConfigurationError(
                "memory_index_path names the legacy index file of a store on a Chroma"
                " server, which its long tier imports into Redis once; it applies to a"
                " Chroma server's tier only. An embedded or in-memory Chroma keeps its index"
                " itself (beside the Chroma directory, or in memory): remove"
                " memory_index_path."
            )
        self._memory_index_path = memory_index_path
        # With a Chroma server: the store's graph store, asked for when the tier opens
        # (the store makes it after its tiers), for the triples of that file.
        self._import_graph = import_graph
        self._index: LongIndex | None = None
        self._redis = redis
        self._owns_redis = owns_redis
        self._lock_options = (lock_lease, lock_wait)
        self._locks: NamespaceLocks | None = None  # with a Chroma server: in Redis
        self._epoch = 0  # the prefix's erase count when the layout cache was checked
        self._generations: dict[str, int] = {}  # nsid -> layout count checked

    @property
    def redis(self) -> Any | None:
        """The Redis client of a Chroma server's tier (its index and locks); else None."""
        return self._redis

    def exclusive(self, namespace: Namespace | None = None) -> AbstractContextManager[Any]:
        """The writer lock, for a read and the write that follows it.

        Held across both, no other writer changes the items in between (a delete
        cannot be undone by a rewrite of what was read). Reentrant: the write takes it
        again. Without `namespace`, the lock of this process's writers; with it, and
        a Chroma server, also the namespace's lock in Redis, which the writers of
        every process take.

        Raises:
            NamespaceLockedError: Another process held the namespace past the wait.
        """
        if namespace is None:
            return self._lock
        return self._writing([tuple(namespace)])

    @contextmanager
    def _writing(
        self,
        namespaces: Sequence[Namespace],
        intents: Mapping[str, Sequence[str]] | None = None,
        register: Mapping[str, tuple[str, bool, int, int]] | None = None,
    ) -> Iterator[Begun | None]:
        """Hold the writer locks of `namespaces`, with their cached layout checked.

        The process's lock always; with a Chroma server, the namespaces' locks in
        Redis too, in one round trip that also reads the layout counts (a namespace
        another process moved or removed is read again from the registry) and, for
        `intents` (keys by namespace id), their headers, recording them as intents,
        and enters the namespaces of `register` in the Redis registry. It yields what
        that read (None without a Chroma server). Keys a dead writer left as intents
        are repaired first.
        """
        with self._lock:
            self._open()
            if self._locks is None:
                yield None
                return
            nsids = [namespace_id(ns) for ns in namespaces]
            with self._locks.hold(nsids, namespaces, intents=intents, register=register) as begun:
                self._forget_moved(begun.epoch, [begun.layout[n] for n in nsids], nsids)
                if begun.left:
                    self._repair_left(namespaces, begun, intents or {})
                yield begun

    def _repair_left(
        self, namespaces: Sequence[Namespace], begun: Begun, intents: Mapping[str, Sequence[str]]
    ) -> None:
        """Repair the keys dead writers left in namespaces just locked, then record ours."""
        idx = self._index
        assert isinstance(idx, RedisIndex)
        entries: list[Entry] = [(ns, False, None) for ns in namespaces]
        for nsid, keys in begun.left.items():
            idx.repair(
                nsid,
                keys,
                self._read_primaries,
                self._row_of_meta if self._describe is not None else None,
                self._recovered_history(idx, entries),
            )
            if nsid in intents:  # the repair forgot the namespace's headers
                begun.headers[nsid] = {}
                begun.recs[nsid] = None
                idx.begin(self.prefix, nsid, intents[nsid])
                begun.recorded.add(nsid)

    def _check_layout(self, nsids: Sequence[str]) -> bool:
        """Forget the cached layout of namespaces moved or erased since it was read.

        Returns:
            Whether anything was forgotten.
        """
        assert self._locks is not None
        epoch, counts = self._locks.generations(nsids)
        return self._forget_moved(epoch, counts, nsids)

    def _forget_moved(self, epoch: int, counts: Sequence[int], nsids: Sequence[str]) -> bool:
        """`_check_layout` with the counts read (the erase count, each layout count)."""
        stale = False
        if epoch != self._epoch:
            self._layout.forget_namespaces()
            self._generations.clear()
            self._epoch = epoch
            stale = True
        for nsid, count in zip(nsids, counts, strict=True):
            if self._generations.get(nsid, 0) != count:
                self._layout.forget_namespace(nsid)
                self._generations[nsid] = count
                stale = True
        return stale

    def _read_docs(self, ns: Namespace, col: Any, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Primary metadata of the (distinct) `keys` that exist.

        A bucket that misses some of them is asked again where the namespace lives
        now, if another process moved it or erased it since its layout was cached.
        """
        nsid = namespace_id(ns)
        metas = self._docs.get(nsid, col, keys)
        if (
            len(metas) < len(keys)
            and isinstance(col, NamespaceView)
            and self._locks is not None
            and self._check_layout([nsid])
        ):
            moved = self._collection(ns, create=False)
            metas = {} if moved is None else self._docs.get(nsid, moved, keys)
        return metas

    def _layout_changing(self, nsid: str) -> None:
        """Tell other processes that the namespace's place changes (under its lock)."""
        if self._locks is not None:
            self._locks.changed(nsid)
            self._generations[nsid] = self._generations.get(nsid, 0) + 1

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

    # ----------------------------------------------------------------- sources
    def _open(self) -> None:
        """Choose the document and vector sources, once (the client is opened lazily)."""
        if self._opened:
            return
        with self._lock:
            if self._opened:
                return
            settings = self.client.get_settings()
            directory = getattr(settings, "persist_directory", None)
            if is_chroma_server(settings):
                if self._redis is None:
                    raise ConfigurationError(
                        "A long tier on a Chroma server keeps its index, memory history and"
                        " writer locks in Redis, so that every process using the server"
                        " agrees: pass redis_url='redis://host:6379' (or redis_client=, or"
                        " set REDIS_URL), a Redis with the search module (Redis 8, or"
                        " Redis Stack)."
                    )
                lease, wait = self._lock_options
                self._locks = NamespaceLocks(self._redis, self.prefix, lease=lease, wait=wait)
                self._open_index()
            else:
                persistent = getattr(settings, "is_persistent", False) and directory
                self._open_copies(directory if persistent else None)
            # Finish the moves to own collections that an interruption left half done.
            for nsid, bucket in self._layout.moving().items():
                if self._locks is None:
                    self._finish_move(nsid, bucket)
                    continue
                with self._locks.hold([nsid]):  # not while another process moves it
                    left = self._layout.move_left(nsid)
                    if left is not None:
                        self._finish_move(nsid, left)
            self._opened = True

    @property
    def _docs(self) -> DocSource:
        self._open()
        assert self._docs_source is not None
        return self._docs_source

    @property
    def _vectors(self) -> VectorSource:
        self._open()
        assert self._vector_source is not None
        return self._vector_source

    @property
    def index(self) -> LongIndex:
        """The tier's index: `RedisIndex` with a Chroma server, else its SQLite file.

        The SQLite file (`DocMirror`) also keeps the document copy, the namespace registry
        and the graph.
        """
        self._open()
        assert self._index is not None
        return self._index

    def _open_copies(self, directory: str | None) -> None:
        """Open (and repair or fill) the SQLite index, and the vector copy beside Chroma.

        Without `directory` (an in-memory Chroma) the index is in memory, filled from
        Chroma, and bucket vectors are read from Chroma. The namespace registry is in
        the index (copied once from the registry collection of an older store).
        """
        mirror = DocMirror(directory or ":memory:")
        try:
            self._layout.use_index(mirror)  # the registry is in the file
        except BaseException:
            mirror.close()
            raise
        entries = list(self._layout.entries(()))
        if directory is None:
            self._vector_source = ChromaVectors()
        else:
            vcopy = VectorCopy(directory)
            self._vcopy = vcopy
            self._vector_source = vcopy
            marker = f"{self.prefix}/{self.dims}d"
            if not vcopy.is_filled(marker):
                bucketed = {namespace_id(ns) for ns, _, b in entries if b is not None}
                vcopy.fill(self.prefix, marker, self._layout.existing_buckets(), bucketed)
            self._move_legacy_keys(vcopy, entries)
        mirror.recover(
            self.prefix,
            self._read_primaries,
            self._row_of_meta if self._describe is not None else None,
            write_id=_write_id,
            history=self._recovered_history(mirror, entries),
        )
        self._layout.forget_namespaces()  # the repair drops entries of writes Chroma lacks
        if not mirror.is_filled(self.prefix):
            # First use of this mirror for the prefix: copy what Chroma already holds.
            for nsid, rows in self._primary_pages(entries):
                mirror.commit(self.prefix, nsid, upserts=rows)
            mirror.mark_filled(self.prefix)
        if self._describe is not None:
            self._fill_memories(mirror, entries)
        self._index = mirror
        self._docs_source = MirrorDocs(mirror, self.prefix)

    def _primary_pages(
        self, entries: list[Entry]
    ) -> Iterator[tuple[str, dict[str, dict[str, Any]]]]:
        """(namespace id, {key: primary metadata}) pages of every registered namespace.

        Own collections are read one by one, buckets page by page.
        """
        bucketed = {namespace_id(ns) for ns, _, b in entries if b is not None}
        for ns, _, bucket in entries:
            if bucket is not None:
                continue
            col = self._layout.own(ns, namespace_id(ns), create=False)
            offset = 0
            while col is not None:
                page = col.get(include=["metadatas"], limit=PAGE, offset=offset)
                yield (
                    namespace_id(ns),
                    {
                        rid[2:]: meta
                        for rid, meta in zip(page["ids"], page["metadatas"], strict=True)
                        if rid.startswith("p:")
                    },
                )
                if len(page["ids"]) < PAGE:
                    break
                offset += PAGE
        for _, col in self._layout.existing_buckets():
            offset = 0
            while True:
                page = col.get(include=["metadatas"], limit=PAGE, offset=offset)
                by_ns: dict[str, dict[str, dict[str, Any]]] = {}
                for rid, meta in zip(page["ids"], page["metadatas"], strict=True):
                    local = strip_ns(rid)
                    if meta.get("_ns") in bucketed and local.startswith("p:"):
                        by_ns.setdefault(meta["_ns"], {})[local[2:]] = meta
                yield from by_ns.items()
                if len(page["ids"]) < PAGE:
                    break
                offset += PAGE

    def _open_index(self) -> None:
        """Open the Redis index of a Chroma server's tier: import, repair, fill (first use).

        The `memory_index_path` file is imported first (once: `import_memory_index`), so
        that `recover` repairs its interrupted writes and the fill adds only memories it
        lacks; then its memories Chroma no longer holds are dropped.
        """
        assert self._redis is not None
        idx = RedisIndex(self._redis, self.prefix)
        idx.setup()
        imported = self._import_file(idx) if self._memory_index_path else {}
        self._layout.use_index(idx)  # the registry is in Redis
        entries = list(self._layout.entries(()))
        idx.recover(
            self.prefix,
            self._read_primaries,
            self._row_of_meta if self._describe is not None else None,
            docs=False,
            write_id=_write_id,
            history=self._recovered_history(idx, entries),
            locks=self._locks,
        )
        if self._describe is not None:
            self._fill_memories(idx, entries)
        self._drop_gone(idx, imported)
        self._index = idx
        self._docs_source = ServerDocs(self._layout, idx)
        self._vector_source = ChromaVectors()

    def _import_file(self, idx: RedisIndex) -> dict[str, list[str]]:
        """Import the `memory_index_path` file into `idx`; the keys of its memories.

        Nothing is imported (and nothing returned) when the file was imported before,
        or when there is no file: earlier versions created it on first use, so a
        replica that never wrote one has none.
        """
        assert self._memory_index_path is not None
        path = Path(self._memory_index_path)
        if not path.exists():
            logger.warning(
                "memory_index_path: no file at %s, nothing to import (the option names a"
                " file an earlier version wrote, to import into Redis once)",
                path,
            )
            return {}
        graph = None if self._import_graph is None else self._import_graph()
        if graph is not None:
            graph.setup()  # its indexes before the triples (the store sets it up after)
        report = import_memory_index(path, index=idx, graph=graph)
        return {} if report.before else report.keys

    def _drop_gone(self, idx: RedisIndex, imported: Mapping[str, Sequence[str]]) -> None:
        """Drop the imported memories Chroma no longer holds as memories.

        A replica's file may be older than deletes made since (by another replica, or
        after the file was copied). The namespace's writer lock is held between reading
        Chroma and dropping, so a memory written meanwhile is not dropped.
        """
        assert self._locks is not None
        for nsid, keys in imported.items():
            with self._locks.hold([nsid]):
                for start in range(0, len(keys), PAGE):
                    page = list(keys[start : start + PAGE])
                    held = self._read_primaries(nsid, page)
                    gone = [k for k in page if k not in held or self._row_of_meta(held[k]) is None]
                    idx.commit(self.prefix, nsid, forget=gone, docs=False)

    def history_table(self) -> HistoryTable:
        """The memory history of the tier's index (in Redis with a Chroma server)."""
        return cast(HistoryTable, self.index.history)

    def _recovered_history(self, idx: LongIndex, entries: list[Entry]) -> RecoveredHistory | None:
        """How `idx.recover` plans the history events of repaired keys (None: history off)."""
        if not self.record_history:
            return None
        names = {namespace_id(ns): ns for ns, _, _ in entries}

        def events(
            nsid: str, keys: list[str], current: dict[str, Any], before: dict[str, Any]
        ) -> tuple[Namespace, list[HistoryRow]] | None:
            ns = names.get(nsid) or idx.history.namespace_of(self.prefix, nsid)
            if ns is None:
                logger.warning(
                    "memory history: %d interrupted writes of an unknown namespace (%s)"
                    " repaired without events",
                    len(keys),
                    nsid,
                )
                return None
            decoded = {k: decode_document(m["_d"]) for k, m in current.items()}
            earlier = {k: decode_document(m["_d"]) for k, m in before.items()}
            last = idx.history.last(self.prefix, nsid, keys)
            return ns, recovered_events(ns, keys, decoded, earlier, last, now=time.time())

        return events

    def _row_of_meta(self, meta: dict[str, Any]) -> MemoryRow | None:
        if self._describe is None:
            return None
        doc = decode_document(meta["_d"])
        described = self._describe(doc.value)
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
            float(doc.created_at),
        )

    def _fill_memories(self, idx: LongIndex, entries: list[Entry]) -> None:
        """Build the memory rows of items already in Chroma (first use of the index).

        The Redis index keeps the rows it holds (imported from a `memory_index_path`
        file, or written meanwhile by another replica), with their context texts.
        """
        marker = f"{self.prefix}/mem"
        if idx.is_filled(marker):
            return
        for nsid, metas in self._primary_pages(entries):
            rows: dict[str, MemoryRow] = {}
            for key, meta in metas.items():
                row = self._row_of_meta(meta)
                if row is not None:
                    rows[key] = row
            if isinstance(idx, RedisIndex):
                idx.add_rows(self.prefix, nsid, rows, dict.fromkeys(rows, 0))
            else:
                idx.commit(self.prefix, nsid, memories=rows, docs=False)
        idx.mark_filled(marker)

    def _read_primaries(self, nsid: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Chroma's primary records of `keys` (repairs the vector copy of them too)."""
        col = self._layout.resolve(nsid)
        if col is None:
            return {}
        source = self._vector_source
        if isinstance(col, NamespaceView) and source is not None:
            source.refresh(self.prefix, nsid, keys, col)
        got = col.get(ids=[f"p:{k}" for k in keys], include=["metadatas"])
        return {rid[2:]: meta for rid, meta in zip(got["ids"], got["metadatas"], strict=True)}

    def _move_legacy_keys(self, vcopy: VectorCopy, entries: list[Entry]) -> None:
        """Write the key vectors an earlier version kept in the copy into Chroma (once).

        Earlier versions kept the key vectors (context keys) of namespaces with an own
        collection beside an embedded Chroma only in the vector copy. They become `x:`
        records of the own collection, as writes make them now; those of writes the
        documents no longer name (and of namespaces without an own collection) are
        dropped. Then the copy's rows go; a crash before that repeats the upserts,
        which are idempotent.
        """
        owned = {namespace_id(ns): ns for ns, _, b in entries if b is None}
        moved = 0
        for nsid, rows in vcopy.legacy_keys(self.prefix):
            col = self._layout.own(owned[nsid], nsid, create=False) if nsid in owned else None
            if col is None:
                continue
            keys = list(dict.fromkeys(key_of(rid) for rid, _ in rows))
            got = col.get(ids=[f"p:{k}" for k in keys], include=["metadatas"])
            current = {
                rid[2:]: _write_id(meta)
                for rid, meta in zip(got["ids"], got["metadatas"], strict=True)
            }
            live = [(r, v) for r, v in rows if current.get(key_of(r)) == write_id_of(r)]
            if live:
                col.upsert(
                    ids=[r for r, _ in live],
                    embeddings=np.vstack([np.frombuffer(v, dtype=np.float32) for _, v in live]),
                    metadatas=[None] * len(live),
                )
                moved += len(live)
        vcopy.drop_legacy_keys(self.prefix)
        if moved:
            logger.info(
                "key vectors of %s moved from the vector copy into Chroma: %d", self.prefix, moved
            )

    def _finish_move(self, nsid: str, bucket: int) -> None:
        """Last step of a move to an own collection: empty the old bucket (idempotent)."""
        assert self._vector_source is not None  # called once the sources are chosen
        self._vector_source.drop_namespace(self.prefix, nsid)
        self._layout.clear_bucket(nsid, bucket)

    # ----------------------------------------------------------------- collections
    def setup(self) -> None:
        """Open the tier: its registry, copies and index (idempotent)."""
        self._open()

    def close(self) -> None:
        """Forget cached collections, stop the worker threads, close the copies.

        A client the tier created is closed too, which releases the embedded Chroma
        directory for other processes; a client passed in is left open.
        """
        self._pool.shutdown(wait=True)
        with self._lock:
            for copy in (self._vcopy, self._index):
                if copy is not None:
                    copy.close()
            self._vcopy = self._index = None
            self._locks = None
            self._opened = False
            self._docs_source = None
            self._vector_source = None
            self._layout.forget()
            close, self._close_client = self._close_client, None
            if close is not None:
                self._client = None
                close()
            if self._owns_redis and self._redis is not None:
                self._redis.close()
                self._redis = None

    def _collection(self, namespace: Namespace, *, create: bool) -> Any | None:
        """The namespace's own collection or a view of its bucket (None: none yet)."""
        self._open()
        return self._layout.resolve(namespace_id(namespace), namespace, create=create)

    # ----------------------------------------------------------------- decoding
    @staticmethod
    def _decode(
        namespace: Namespace, key: str, meta: dict[str, Any]
    ) -> tuple[StoredItem, int, str, int]:
        """Item, number of vectors, write id, number of key vectors (the last ones)."""
        doc = decode_document(meta["_d"])
        return doc.item(namespace, key, meta.get("_e")), doc.vectors, doc.write_id, doc.key_vectors
