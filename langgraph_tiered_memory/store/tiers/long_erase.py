"""Erasing from the long-term tier: every record, copy and index entry of namespaces or keys.

`erase_user` (store/_erase.py) asks the tier for the namespaces a user owns
(`user_namespaces`) and removes them (`erase_namespaces`), and removes single memories of
shared namespaces that name the user (`erase_keys`). What goes, for each namespace:

- in Chroma: its records (primary records with the documents, extra and key vectors) in
  its bucket, or its own collection as a whole (with its HNSW files and its part of
  Chroma's log); then its entry in the registry collection an earlier version left,
  last, so a re-run after a crash still finds whatever an interruption left;
- in the tier's index: the SQLite file (beside an embedded Chroma, or in memory with
  an in-memory Chroma) with its document copy, intent log, memory statistics, keyword
  entries (and the namespace's own FTS5 table) and registry entry; or, with a Chroma
  server, the Redis index (`RedisIndex.erase_namespace`). The graph tables and the
  memory history have their own erase (`graph.erase`, `store/_history`);
- in the vector copy beside an embedded Chroma: its bucket records.

What a delete through an API leaves on disk is then scrubbed: the tier's SQLite files
delete with `secure_delete` (freed space is zeroed), FTS5 tables that lost rows are
merged ('optimize') and the WAL files are truncated. Bucket records get a neutral vector
before they are deleted. Chroma's log is flushed through the API (`chroma_scrub.flush_log`)
so not even the erased ids stay in it. Beside an embedded Chroma, Chroma's own files are
scrubbed too (`chroma_scrub`): log entries blanked, `chroma.sqlite3` vacuumed, HNSW
directories of deleted collections removed, deleted vectors and heap bytes in HNSW files
zeroed (again when the tier closes its client). A Chroma server's files are out of a
client's reach: `chroma_scrub.scrub_chroma_dir` finishes there with the server stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chromadb.errors import NotFoundError

from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    namespace_id,
)
from langgraph_tiered_memory.store.tiers.chroma_layout import (
    PAGE,
    NamespaceView,
    strip_ns,
)
from langgraph_tiered_memory.store.tiers.chroma_scrub import (
    drop_orphan_segments,
    flush_log,
    scrub_chroma_dir,
    scrub_chroma_file,
    scrub_hnsw_files,
)
from langgraph_tiered_memory.store.tiers.chroma_vectors import key_of
from langgraph_tiered_memory.store.tiers.chroma_writes import ChromaWrites
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror

__all__ = [
    "ITEMS",
    "NAMESPACES",
    "LongErase",
    "drop_orphan_segments",
    "scrub_chroma_dir",
    "scrub_chroma_file",
    "scrub_hnsw_files",
]

logger = logging.getLogger("langgraph_tiered_memory.store.tiers.long_erase")

ITEMS = "long.items"
"""Receipt place of removed items: (namespace labels..., key)."""
NAMESPACES = "long.namespaces"
"""Receipt place of removed namespace registry entries: (namespace labels...)."""


@dataclass
class _Found:
    """What the tier holds of one namespace."""

    ns: Namespace
    nsid: str
    registered: bool = False
    own: Any = None
    """The namespace's own collection, when it exists."""
    bucket_ids: dict[int, list[str]] = field(default_factory=dict)
    """Bucket number -> (bucket-wide) ids of the namespace's records in it."""
    keys: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (self.registered or self.own is not None or self.bucket_ids or self.keys)


class LongErase(ChromaWrites):
    """Finding and erasing namespaces and keys of the Chroma tier."""

    _erased_in: str | None = None
    """Persist directory of an embedded Chroma this tier erased from (scrubbed on close)."""

    # ------------------------------------------------------------------ finding
    def user_namespaces(self, rule: Callable[[Namespace], bool] | Any) -> list[Namespace]:
        """Every registered namespace (live or holding only expired items) `rule` owns.

        Args:
            rule: A callable taking a namespace, or an object with such an `owns`
                method (`erasure.UserNamespaces`).
        """
        owns: Callable[[Namespace], bool] = getattr(rule, "owns", rule)
        with self._lock:
            self._open()
            found = [decode_namespace(e) for e, _ in self.index.registered(self.prefix, "")]
        return sorted(ns for ns in found if owns(ns))

    def compact_files(self) -> None:
        """Rebuild the tier's SQLite files (`VACUUM`) and empty their WAL, after an erase.

        `secure_delete` zeroes freed pages and cells, but a page can keep the first bytes
        of a deleted cell (its row's namespace id and key) when SQLite reuses part of
        the freed space; `VACUUM` writes every page anew from the live rows only. A
        Chroma server's tier has no such file.
        """
        if isinstance(self.index, DocMirror):
            self.index.vacuum()
        if self._vcopy is not None:
            self._vcopy.vacuum()

    def _find(self, ns: Namespace) -> _Found:
        """Everything the tier holds of a namespace (reads only)."""
        nsid = namespace_id(ns)
        found = _Found(ns, nsid)
        reg = self._layout.chroma_registry()
        found.registered = reg is not None and bool(reg.get(ids=[nsid], include=[])["ids"])
        enc = encode_namespace(ns)
        idx = self.index
        found.registered = found.registered or any(
            e == enc for e, _ in idx.registered(self.prefix, enc)
        )
        found.keys |= idx.namespace_keys(self.prefix, nsid)
        if self._vcopy is not None:
            found.keys |= self._vcopy.namespace_keys(self.prefix, nsid)
        found.own = self._layout.own(None, nsid, create=False)
        if found.own is not None:
            found.keys |= {key_of(rid) for rid in _all_ids(found.own)}
        for i, bucket in self._layout.existing_buckets():
            ids = _all_ids(bucket, where={"_ns": nsid})
            if ids:
                found.bucket_ids[i] = ids
                found.keys |= {key_of(strip_ns(rid)) for rid in ids}
        return found

    # ------------------------------------------------------------------ namespaces
    def erase_namespaces(
        self, namespaces: Sequence[Namespace], *, dry_run: bool = False
    ) -> dict[str, list[tuple[str, ...]]]:
        """Remove everything the tier holds for `namespaces` (see the module notes).

        Idempotent: a namespace already erased is found empty and reported with no ids.

        Args:
            namespaces: The namespaces to erase (`user_namespaces`).
            dry_run: Find and report only; remove nothing.

        Returns:
            `ITEMS` -> (labels..., key) of each item found, `NAMESPACES` -> (labels...)
            of each registry entry found, for `ErasureReceipt.add`.
        """
        items: list[tuple[str, ...]] = []
        names: list[tuple[str, ...]] = []
        topics: dict[str, list[str]] = {}
        with self._lock:
            self._open()
            if not dry_run:
                self._erasing()
            for ns in dict.fromkeys(tuple(n) for n in namespaces):
                with self._writing([ns]):
                    found = self._find(ns)
                    items.extend((*ns, k) for k in sorted(found.keys))
                    if found.registered:
                        names.append(ns)
                    if dry_run or found.empty:
                        continue
                    self._remove(found, topics)
            if not dry_run:
                # Also when nothing was left: a run that crashed midway may have let
                # Chroma persist its indexes (with heap bytes) after its last scrub.
                self._scrub_chroma(topics)
        return {ITEMS: items, NAMESPACES: names}

    def _remove(self, found: _Found, topics: dict[str, list[str]]) -> None:
        """Delete one namespace: Chroma records, copies, SQLite rows, registry last."""
        nsid = found.nsid
        step = max(1, int(self.client.get_max_batch_size()))
        registry = self._layout.chroma_registry()
        for i, ids in found.bucket_ids.items():
            bucket = self._layout.bucket(i)
            _neutralise(bucket, ids, self.dims + 1, step)
            for at in range(0, len(ids), step):
                bucket.delete(ids=ids[at : at + step])
        # Chroma's log may still hold writes to buckets the namespace has left (a move
        # to its own collection): every bucket's entries of the namespace are blanked.
        for _, bucket in self._layout.existing_buckets():
            topics.setdefault(str(bucket.id), []).append(f"{nsid}:")
        if found.own is not None:
            try:
                self.client.delete_collection(self._layout.own_name(nsid))
            except NotFoundError:
                pass  # deleted meanwhile by another store object: nothing left to do
        self._layout.forget_namespace(nsid)
        if self._vcopy is not None:
            self._vcopy.erase(self.prefix, nsid)
        self.index.erase_namespace(self.prefix, nsid, encode_namespace(found.ns))
        self._docs.unregistered(found.ns)
        if self._locks is not None:
            self._locks.erased(nsid)
            self._generations.pop(nsid, None)
        self._layout.unregister(nsid)
        if registry is not None:
            topics.setdefault(str(registry.id), []).append(nsid)
        logger.info("erased namespace %s of prefix %s", nsid, self.prefix)

    def _scrub_chroma(self, topics: Mapping[str, Iterable[str]]) -> None:
        """Flush Chroma's log of the touched buckets and registry, then scrub its files.

        Flushing goes through the API, so a server's log is purged too. The files of
        an embedded Chroma are then scrubbed (a server's files are out of reach). The
        HNSW files are scrubbed again when the tier closes its client (`close`):
        Chroma may persist an index from memory meanwhile.
        """
        step = max(1, int(self.client.get_max_batch_size()))
        registry = self._layout.chroma_registry()
        flushable: dict[str, tuple[Any, int]] = {}
        if registry is not None:
            flushable[str(registry.id)] = (registry, 1)
        for _, bucket in self._layout.existing_buckets():
            flushable[str(bucket.id)] = (bucket, self.dims + 1)
        for cid in topics:
            if cid in flushable:
                flush_log(*flushable[cid], step)
        settings = self.client.get_settings()
        directory = getattr(settings, "persist_directory", None)
        if getattr(settings, "is_persistent", False) and directory:
            blanked = scrub_chroma_file(directory, topics)
            drop_orphan_segments(directory)
            scrubbed = scrub_hnsw_files(directory)
            self._erased_in = str(directory)
            logger.info(
                "scrubbed %s: %d entries of Chroma's log blanked, %d HNSW files zeroed past"
                " their elements",
                directory,
                blanked,
                scrubbed,
            )

    def _persist_directory(self) -> str | None:
        """The directory of an embedded (persistent) Chroma, or None for a server."""
        settings = self.client.get_settings()
        directory = getattr(settings, "persist_directory", None)
        if getattr(settings, "is_persistent", False) and directory:
            return str(directory)
        return None

    def _erasing(self) -> None:
        """An erase begins: even if it stops midway, closing the tier scrubs the files."""
        self._erased_in = self._persist_directory()

    def _scrub_files(self) -> None:
        """Scrub an embedded Chroma's HNSW files (nothing was removed from its log)."""
        directory = self._persist_directory()
        if directory is not None:
            drop_orphan_segments(directory)
            scrub_hnsw_files(directory)
            self._erased_in = directory

    def close(self) -> None:
        """Close the tier; after an erase, scrub the HNSW files once Chroma let them go."""
        directory, self._erased_in = self._erased_in, None
        closes_client = self._close_client is not None
        super().close()
        if directory is not None and closes_client:
            scrub_hnsw_files(directory)

    # ------------------------------------------------------------------ keys
    def erase_keys(
        self, items: Mapping[Namespace, Sequence[str]], *, dry_run: bool = False
    ) -> dict[str, list[tuple[str, ...]]]:
        """Remove single items (a shared namespace's memories naming an erased user).

        Each key goes the way of a delete (records, document copy, keyword entries,
        statistics, the context key its text gave the next memory, triples), then
        records an interrupted write left are deleted too, and the files are scrubbed
        like `erase_namespaces` does. A namespace left empty leaves the registry.

        Returns:
            `ITEMS` -> (labels..., key) of each key found, for `ErasureReceipt.add`.
        """
        out: list[tuple[str, ...]] = []
        topics: dict[str, list[str]] = {}
        with self._lock:
            self._open()
            for ns, keys in items.items():
                ns = tuple(ns)
                wanted = set(keys)
                if not wanted:
                    continue
                with self._writing([ns]):
                    found = self._find(ns)
                    hit = sorted(wanted & found.keys)
                    out.extend((*ns, k) for k in hit)
                    if dry_run or not hit:
                        continue
                    self._remove_keys(found, set(hit), topics)
            if topics:
                self._scrub_chroma(topics)
            elif not dry_run:
                self._scrub_files()
        return {ITEMS: out}

    def _remove_keys(self, found: _Found, keys: set[str], topics: dict[str, list[str]]) -> None:
        """Delete `keys` of one namespace (the write path), then what it could not see."""
        step = max(1, int(self.client.get_max_batch_size()))
        doomed = {
            i: [r for r in ids if key_of(strip_ns(r)) in keys]
            for i, ids in found.bucket_ids.items()
        }
        doomed = {i: ids for i, ids in doomed.items() if ids}
        for i, ids in doomed.items():
            _neutralise(self._layout.bucket(i), ids, self.dims + 1, step)
        owned = [] if found.own is None else [r for r in _all_ids(found.own) if key_of(r) in keys]
        idx = self.index
        self.write([ItemWrite(found.ns, k, None, None) for k in sorted(keys)], now=0.0)
        # Records of interrupted writes that the delete did not know of go too.
        for i, ids in doomed.items():
            bucket = self._layout.bucket(i)
            for at in range(0, len(ids), step):
                bucket.delete(ids=ids[at : at + step])
            topics.setdefault(str(bucket.id), []).extend(ids)
        if found.own is not None and owned:
            for at in range(0, len(owned), step):
                found.own.delete(ids=owned[at : at + step])
            topics.setdefault(str(found.own.id), []).extend(owned)
        if self._vcopy is not None:
            self._vcopy.checkpoint()
        idx.scrub()


def _all_ids(col: Any, where: dict[str, Any] | None = None) -> list[str]:
    """Every record id of a collection (or of its records matching `where`)."""
    out: list[str] = []
    offset = 0
    while True:
        page = col.get(where=where, include=[], limit=PAGE, offset=offset)
        out.extend(page["ids"])
        if len(page["ids"]) < PAGE:
            return out
        offset += PAGE


def _neutralise(col: Any, ids: list[str], width: int, step: int) -> None:
    """Give records the neutral vector `[0, ..., 0, 1]` (before deleting them).

    Chroma's HNSW index keeps a deleted record's slot, vector included, until a new
    record takes it: overwriting first leaves the unindexed vector there instead.
    """
    if isinstance(col, NamespaceView):
        col = col.col
    for at in range(0, len(ids), step):
        chunk = ids[at : at + step]
        vectors = [[0.0] * (width - 1) + [1.0]] * len(chunk)
        col.update(ids=chunk, embeddings=vectors)
