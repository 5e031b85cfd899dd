"""The embedded graph backend: triples in the long tier's SQLite file.

The triples live in the SQLite file the long-term tier already keeps (`DocMirror`):
`tiered-memory-docs.sqlite3` beside an embedded Chroma, or a file in memory with an
in-memory Chroma (a tier on a Chroma server keeps none). The tier writes a memory's triples in the
transaction that writes the memory itself (`ItemWrite.triples`), so they never
disagree, even after a crash (the intent log replays them). No other process is needed;
1-2 hop queries are recursive SQL over the scope indexes.

```python
from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.graph.types import MemoryTriples, Triple

graph = SqliteGraph.open(":memory:", prefix="demo")
fact = Triple.of("Alice", "works at", "Acme")
graph.replace([MemoryTriples(("users", "u1"), "m1", (fact,), "u1")])
[near] = graph.neighbors(("users", "u1"), "alice")
assert (near.entity, near.path[0].memory_keys) == ("acme", ("m1",))
graph.close()
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.erase import GraphErasure
from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Namespace,
    Neighbor,
    Triple,
    TripleRecord,
    normalize_entity,
    normalize_relation,
)
from langgraph_tiered_memory.store.tiers.doc_mirror import DocMirror

__all__ = ["SqliteGraph"]

_NO_FILE = (
    "The embedded graph (graph='sqlite') keeps its triples in the long tier's SQLite"
    " file (beside an embedded Chroma, or in memory with an in-memory one), which a"
    " tier on a Chroma server does not have: its index is in Redis. Pass graph=True"
    " (FalkorDB on the store's own Redis, shared by every process) or"
    " graph={'backend': 'falkordb', 'url': 'redis://...'}."
)


class SqliteGraph:
    """`GraphStore` over the SQLite file of the long-term tier (or a file of its own).

    Args:
        source: The file (`DocMirror`), or a function returning it (called at each
            use, so the tier may open its file lazily).
        prefix: The store's key prefix: the graph's rows are keyed by it, like the
            tier's other tables.
        owns_source: Close the file in `close` (set by `open`).
    """

    name = "sqlite"
    in_tier_transaction = True

    def __init__(
        self,
        source: DocMirror | Callable[[], Any],
        prefix: str,
        *,
        owns_source: bool = False,
    ) -> None:
        self._source = source
        self.prefix = prefix
        self._owns = owns_source

    @classmethod
    def open(cls, path: str | Path, *, prefix: str = "tiered-memory") -> SqliteGraph:
        """A graph in a SQLite file of its own (a file path, a directory or ":memory:")."""
        return cls(DocMirror(path), prefix, owns_source=True)

    @classmethod
    def for_tier(cls, tier: Any) -> SqliteGraph:
        """The graph in the SQLite file of the long-term tier (a `ChromaTier`).

        Raises:
            ConfigurationError: the tier keeps no SQLite file (a Chroma server's tier).
        """
        if tier.redis is not None:
            raise ConfigurationError(_NO_FILE)
        return cls(lambda: tier.index, tier.prefix)

    def _file(self) -> DocMirror:
        source = self._source
        found = source if isinstance(source, DocMirror) else source()
        if not isinstance(found, DocMirror):
            raise ConfigurationError(_NO_FILE)
        return found

    def setup(self) -> None:
        """Open the file; its tables are made with it (idempotent)."""
        self._file()

    def replace(self, changes: Sequence[MemoryTriples]) -> None:
        """Make each memory of `changes` support exactly its triples, in one transaction."""
        if changes:
            self._file().graph_replace(self.prefix, changes)

    def repoint(self, namespace: Namespace, sources: Sequence[str], target: str) -> None:
        """The triples `sources` supported are supported by `target` instead."""
        self._file().graph_repoint(self.prefix, tuple(namespace), sources, target)

    def memory_triples(
        self, namespace: Namespace, keys: Sequence[str]
    ) -> Mapping[str, tuple[Triple, ...]]:
        """The triples each of `keys` supports, sorted (keys supporting none are absent)."""
        return self._file().graph_memory_triples(self.prefix, tuple(namespace), list(keys))

    def triples(
        self,
        prefix: Namespace,
        *,
        subject: str | None = None,
        relation: str | None = None,
        object: str | None = None,  # noqa: A002
        limit: int = 100,
    ) -> list[TripleRecord]:
        """Triples under `prefix` matching the given parts (normalised before matching)."""
        return self._file().graph_triples(
            self.prefix,
            tuple(prefix),
            subject=None if subject is None else normalize_entity(subject),
            relation=None if relation is None else normalize_relation(relation),
            object_=None if object is None else normalize_entity(object),
            limit=limit,
        )

    def neighbors(
        self,
        prefix: Namespace,
        entity: str,
        *,
        hops: int = 1,
        relation: str | None = None,
        limit: int = 50,
    ) -> list[Neighbor]:
        """See `GraphStore.neighbors`.

        Of equally short paths, the smallest sequence of (namespace, s, r, o) triples wins.
        """
        return self._file().graph_neighbors(
            self.prefix,
            tuple(prefix),
            normalize_entity(entity),
            hops=_hops(hops, 1, 2),
            relation=None if relation is None else normalize_relation(relation),
            limit=limit,
        )

    def memories_for(
        self,
        prefix: Namespace,
        entities: Sequence[str],
        *,
        hops: int = 1,
        limit: int = 200,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[GraphHit]:
        """See `GraphStore.memories_for` (same order as `FalkorDBGraph.memories_for`).

        The cost follows `limit`, not the size of hub entities: the order and the limit
        are applied in SQL, a hop is only followed for hits the entities' own triples
        leave missing, and `namespace_filter` sees the namespaces of the first hits
        only (more are read only when it rejects some).
        """
        hops = _hops(hops, 0, 1)
        names = [e for e in dict.fromkeys(normalize_entity(x) for x in entities) if e]
        if limit <= 0 or not names:
            return []
        file, under = self._file(), tuple(prefix)
        if namespace_filter is None:
            return file.graph_memories(self.prefix, under, names, hops=hops, limit=limit)
        # The filter runs here, outside the file's lock (it may call back into the
        # store). The hits come in a fixed order, so the first `limit` accepted ones of
        # a longer prefix of that order are the answer: ask for `limit` hits, and for
        # more only while the filter rejected some of a full answer.
        allowed: dict[Namespace, bool] = {}
        ask = limit
        while True:
            hits = file.graph_memories(self.prefix, under, names, hops=hops, limit=ask)
            out = []
            for hit in hits:
                ok = allowed.get(hit.namespace)
                if ok is None:
                    ok = allowed[hit.namespace] = bool(namespace_filter(hit.namespace))
                if ok:
                    out.append(hit)
                    if len(out) >= limit:
                        return out
            if len(hits) < ask:
                return out
            ask *= _GROWTH

    def erase(
        self,
        owns: Callable[[Namespace], bool],
        *,
        user_id: str | None = None,
        mentions: Sequence[str] = (),
        shared: Callable[[Namespace], bool] | None = None,
        dry_run: bool = False,
    ) -> GraphErasure:
        """See `GraphStore.erase`: one transaction; with `dry_run`, only reads."""
        return self._file().graph_erase(
            self.prefix,
            owns,
            user_id=user_id,
            mentions=list(mentions),
            shared=shared,
            dry_run=dry_run,
        )

    def close(self) -> None:
        """Close the file when this graph opened it (a tier's file stays with the tier)."""
        if self._owns and isinstance(self._source, DocMirror):
            self._source.close()


_GROWTH = 4
"""How much more `memories_for` asks for when its namespace filter rejected hits."""


def _hops(hops: int, low: int, high: int) -> int:
    if not low <= hops <= high:
        raise ValueError(f"hops must be between {low} and {high}, got {hops!r}.")
    return hops
