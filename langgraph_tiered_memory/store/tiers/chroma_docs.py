"""Where the long-term tier reads item documents and the namespace list.

Chosen once, when the tier opens its client:

- `MirrorDocs`: beside an embedded or in-memory Chroma, the tier's SQLite file
  (`DocMirror`) copies the documents and answers `get`, emptiness checks and the
  namespace list (the file's registry, which a write updates with its intents);
  Chroma queries then return ids and distances only. Writes are bracketed by its
  intent log (`begin`/`commit`).
- `ServerDocs`: with a Chroma server, documents are the primary records' metadata, and
  the namespace list is the Redis registry (`RedisIndex.registered`), which a write's
  begin script updates: a namespace's first write adds no Chroma call. `begin`/`commit`
  do nothing (the Redis index has its own).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    namespace_id,
)
from langgraph_tiered_memory.store.tiers.chroma_layout import Collections, read
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex

__all__ = ["DocSource", "MirrorDocs", "ServerDocs"]


class DocSource(Protocol):
    """Item documents (primary record metadata) and the registered namespaces."""

    with_metadata: bool
    """Whether Chroma reads must include metadatas to get documents."""

    def get(self, nsid: str, col: Any, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Primary metadata of the given keys that exist (`col`: the namespace's records)."""
        ...

    def has_docs(self, nsid: str, col: Any, *, live_at: float | None = None) -> bool:
        """Whether the namespace holds an item (with `live_at`: a live one then)."""
        ...

    def begin(self, nsid: str, keys: Sequence[str]) -> None:
        """Record that these keys are about to change in Chroma."""
        ...

    def commit(self, nsid: str, **changes: Any) -> None:
        """Apply what Chroma now holds (`DocMirror.commit` arguments) and clear `begin`."""
        ...

    def registered(self, prefix: Namespace) -> list[tuple[Namespace, bool]]:
        """Registered namespaces under `prefix`, with their has-held-TTL-items flag."""
        ...

    def has_held_ttl(self, ns: Namespace) -> bool:
        """Whether `ns` is registered and has ever held a TTL item."""
        ...

    def unregistered(self, ns: Namespace) -> None:
        """Note that `ns` left the registry."""
        ...


class _Namespaces:
    """The namespace table of one (SQLite copy, prefix), held in memory.

    Listing 10k namespaces from SQLite takes ~4 ms, from here well under 1 ms. Every
    change is told to `MirrorDocs` (and the directory lock keeps other processes
    out), so one shared instance per file and prefix stays exact.
    """

    def __init__(self, rows: list[tuple[str, bool]]):
        self.ttl = dict(rows)
        self.order: list[str] | None = None
        self.decoded: dict[str, Namespace] = {}

    def under(self, under: str) -> list[tuple[Namespace, bool]]:
        if self.order is None:
            self.order = sorted(self.ttl)
        lo = bisect.bisect_left(self.order, under)
        hi = bisect.bisect_left(self.order, under + "\U0010ffff")
        out = []
        for enc in self.order[lo:hi]:
            ns = self.decoded.get(enc)
            if ns is None:
                ns = self.decoded[enc] = decode_namespace(enc)
            out.append((ns, self.ttl[enc]))
        return out


_SHARED: dict[tuple[str, str], _Namespaces] = {}
_SHARED_LOCK = threading.Lock()


class MirrorDocs:
    """Documents and namespaces from the tier's SQLite file (no Chroma server)."""

    with_metadata = False

    def __init__(self, mirror: DocMirror, prefix: str):
        self.mirror = mirror
        self.prefix = prefix
        self._key = (str(getattr(mirror, "path", None) or id(mirror)), prefix)
        with _SHARED_LOCK:  # the file was just opened (and repaired): read it again
            _SHARED.pop(self._key, None)

    def _namespaces(self) -> _Namespaces:
        with _SHARED_LOCK:
            table = _SHARED.get(self._key)
            if table is None:
                table = _SHARED[self._key] = _Namespaces(self.mirror.registered(self.prefix, ""))
            return table

    def get(self, nsid: str, col: Any, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Primary metadata of the given keys, from the SQLite copy."""
        return self.mirror.get(self.prefix, nsid, keys)

    def has_docs(self, nsid: str, col: Any, *, live_at: float | None = None) -> bool:
        """Whether the namespace holds an item, from the SQLite copy."""
        return self.mirror.has_docs(self.prefix, nsid, live_at=live_at)

    def begin(self, nsid: str, keys: Sequence[str]) -> None:
        """Record the keys in the copy's intent log."""
        self.mirror.begin(self.prefix, nsid, keys)

    def commit(self, nsid: str, **changes: Any) -> None:
        """Copy what Chroma now holds and clear the intent log, in one transaction."""
        self.mirror.commit(self.prefix, nsid, **changes)

    def registered(self, prefix: Namespace) -> list[tuple[Namespace, bool]]:
        """Registered namespaces under `prefix`, from the copy's namespace table."""
        table = self._namespaces()
        with _SHARED_LOCK:
            return table.under(encode_namespace(prefix))

    def has_held_ttl(self, ns: Namespace) -> bool:
        """From the in-memory namespace table (no I/O)."""
        return bool(self._namespaces().ttl.get(encode_namespace(ns)))

    def needs_register(self, ns: Namespace, *, ttl: bool) -> bool:
        """Unknown namespaces, and known ones getting their first TTL item."""
        known = self._namespaces().ttl.get(encode_namespace(ns))
        return known is None or (ttl and not known)

    def registered_now(self, ns: Namespace, *, ttl: bool) -> None:
        """Add the registration (written with the write's intents) to the namespace table."""
        enc = encode_namespace(ns)
        table = self._namespaces()
        with _SHARED_LOCK:
            if enc not in table.ttl:
                table.order = None
            table.ttl[enc] = table.ttl.get(enc, False) or ttl

    def unregistered(self, ns: Namespace) -> None:
        """Drop the namespace from the namespace table (the registry dropped it)."""
        enc = encode_namespace(ns)
        table = self._namespaces()
        with _SHARED_LOCK:
            if table.ttl.pop(enc, None) is not None:
                table.order = None


class ServerDocs:
    """Documents from Chroma; namespaces from the Redis registry (a Chroma server)."""

    with_metadata = True

    def __init__(self, layout: Collections, index: RedisIndex):
        self.layout = layout
        self.index = index

    def get(self, nsid: str, col: Any, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Primary metadata of the given keys, read from Chroma."""
        if col is None or not keys:
            return {}
        got = read(col.get, ids=[f"p:{k}" for k in keys], include=["metadatas"])
        return {rid[2:]: m for rid, m in zip(got["ids"], got["metadatas"], strict=True)}

    def has_docs(self, nsid: str, col: Any, *, live_at: float | None = None) -> bool:
        """Whether the namespace holds an item, read from Chroma."""
        if col is None:
            return False
        if live_at is None:
            return bool(col.get(limit=1, include=[])["ids"])
        expired = len(col.get(where={"_e": {"$lte": live_at}}, include=[])["ids"])
        if not expired:
            return bool(col.get(limit=1, include=[])["ids"])
        # A Chroma `where` cannot ask for a missing key: count the item records.
        items = sum(rid.startswith("p:") for rid in col.get(include=[])["ids"])
        return items > expired

    def begin(self, nsid: str, keys: Sequence[str]) -> None:
        """Nothing to record: Chroma is the only copy."""
        return None

    def commit(self, nsid: str, **changes: Any) -> None:
        """Nothing to copy: Chroma is the only copy."""
        return None

    def registered(self, prefix: Namespace) -> list[tuple[Namespace, bool]]:
        """Registered namespaces under `prefix`, from the Redis registry."""
        under = encode_namespace(prefix)
        return [
            (decode_namespace(enc), ttl)
            for enc, ttl in self.index.registered(self.layout.prefix, under)
        ]

    def has_held_ttl(self, ns: Namespace) -> bool:
        """From the Redis registry (one round trip)."""
        found = self.index.registry(self.layout.prefix, nsids=[namespace_id(ns)])
        return bool(found and found[0][1]["ttl"])

    def unregistered(self, ns: Namespace) -> None:
        """Nothing to do: the registry is the index's (`Collections.unregister`)."""
        return None
