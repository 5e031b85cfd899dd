"""The interface every knowledge-graph backend implements.

Two backends ship: the embedded default keeps triples in the long tier's SQLite file
(written in the memory's own transaction), FalkorDB keeps them in a graph database.
Both pass the same contract tests (`tests/graph_contract.py`).

Semantics every backend keeps:

- a triple is stored per namespace, with the user of that namespace and the set of
  memories supporting it; it is deleted when its last supporting memory is;
- `prefix` arguments select namespaces like store searches do (a tuple prefix:
  `("users", "u1")` covers `("users", "u1", "notes")`, never `("users", "u10")`);
- paths of more than one triple only join triples of one `graph_scope` (one user, or
  one namespace without a user), so no query crosses users;
- `erase` removes everything held about one user (see `graph.erase`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from langgraph_tiered_memory.graph.erase import GraphErasure
from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Namespace,
    Neighbor,
    Triple,
    TripleRecord,
)

__all__ = ["GraphStore"]


@runtime_checkable
class GraphStore(Protocol):
    """Storage and queries of triples. Methods are synchronous and thread-safe."""

    name: str
    """Backend name ("sqlite", "falkordb")."""

    in_tier_transaction: bool
    """True when the long tier writes the triples in the memory's own transaction
    (the store then hands them to the tier with each write instead of calling
    `replace` afterwards)."""

    def setup(self) -> None:
        """Create what the backend needs (tables, indexes); idempotent."""

    def replace(self, changes: Sequence[MemoryTriples]) -> None:
        """Make each memory of `changes` support exactly its triples, all or nothing.

        Triples left without any supporting memory are deleted.
        """

    def repoint(self, namespace: Namespace, sources: Sequence[str], target: str) -> None:
        """Consolidation: the triples `sources` supported are supported by `target` instead."""

    def memory_triples(
        self, namespace: Namespace, keys: Sequence[str]
    ) -> Mapping[str, tuple[Triple, ...]]:
        """The triples each of `keys` supports (keys supporting none are absent)."""

    def triples(
        self,
        prefix: Namespace,
        *,
        subject: str | None = None,
        relation: str | None = None,
        object: str | None = None,  # noqa: A002
        limit: int = 100,
    ) -> list[TripleRecord]:
        """Triples under `prefix` matching the given parts (normalised before matching).

        Ordered by namespace, subject, relation, object.
        """

    def neighbors(
        self,
        prefix: Namespace,
        entity: str,
        *,
        hops: int = 1,
        relation: str | None = None,
        limit: int = 50,
    ) -> list[Neighbor]:
        """Entities within `hops` (1 or 2) of `entity`, following triples either way.

        `relation` restricts every hop to that relation. Nearest first, then by entity
        name; an entity is reported once per namespace scope, by its shortest path.
        """

    def memories_for(
        self,
        prefix: Namespace,
        entities: Sequence[str],
        *,
        hops: int = 1,
        limit: int = 200,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[GraphHit]:
        """Memories supporting triples that touch `entities` (hops 0) or their neighbours.

        `hops=1` also follows one more triple from each entity the first triples reach.
        Entities are matched by their normalised name. With `namespace_filter`, only the
        namespaces it accepts. At most `limit` hits, fewest hops first.
        """

    def erase(
        self,
        owns: Callable[[Namespace], bool],
        *,
        user_id: str | None = None,
        mentions: Sequence[str] = (),
        shared: Callable[[Namespace], bool] | None = None,
        dry_run: bool = False,
    ) -> GraphErasure:
        """Remove everything held about one user, all or nothing (see `graph.erase`).

        Every triple, support and pending record of a namespace `owns` accepts; in the
        namespaces `shared` accepts (None: none), each triple of the scope of `user_id`
        (``"u:<user_id>"``) and each triple whose subject or object mentions one of
        `mentions` (normalised like entities; the whole entity or whole words inside
        it), with its support. Nothing else is touched: no namespace of another user.
        The memories of shared namespaces stay (listed in `GraphErasure.mentioned`).
        With `dry_run`, nothing is removed and the same is reported.
        """

    def close(self) -> None:
        """Release clients the backend owns."""
