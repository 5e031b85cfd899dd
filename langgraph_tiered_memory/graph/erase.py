"""Erasing a user from the knowledge graph: what goes, and what a backend reports.

`GraphStore.erase(owns, user_id=..., mentions=..., shared=...)` removes, in one
transaction (SQLite) or one write query (FalkorDB):

- every triple, support and pending record of a namespace `owns` accepts (the user's
  namespaces: `UserNamespaces.owns`);
- in the namespaces `shared` accepts (those of no user: `UserNamespaces.shared`), each
  triple of the user's graph scope (``"u:<user_id>"``) and each triple whose subject or
  object *mentions* one of `mentions`: the entity is the mention, or holds it as whole
  words (``"ana lopes"`` is mentioned by ``"ana lopes's cat"``, never by
  ``"ana lopesa"``). The extractor's anonymous first person (``"user"``) is never a
  mention.

A namespace of another user is never touched: a triple there is that user's, whatever
it names. Mentions are names the caller gives (`erase_user_graph(..., names=...)`, a
display name from the profile, say), never the user id on its own: an id such as
``"2019"`` or ``"paris"`` is also a date or a city in everyone's facts. The memory that
supported a mention's triple is not touched (it is not the user's by namespace); it is
reported in `GraphErasure.mentioned`, so the caller can erase it by its own rule
(provenance) or record that it was kept. A kept memory gives its triples back on
`rebuild_graph`.

A dry run finds and reports the same and removes nothing; a second run finds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from langgraph_tiered_memory.graph._rules import DEFAULT_SPEAKER
from langgraph_tiered_memory.graph.types import Namespace, normalize_entity

if TYPE_CHECKING:
    from langgraph_tiered_memory.privacy.erasure import ErasureReceipt, UserNamespaces

__all__ = [
    "GraphErasure",
    "NamespaceRule",
    "erase_user_graph",
    "mention_names",
    "mentions_any",
    "user_scope_of",
]

NamespaceRule = Callable[[Namespace], bool]
"""Which namespaces are the user's (`UserNamespaces.owns`)."""


@dataclass(slots=True)
class GraphErasure:
    """What a graph erase removed (or, in a dry run, would remove). Ids, no content.

    Each id is a tuple of strings, for `ErasureReceipt.add` to hash.
    """

    triples: list[tuple[str, ...]] = field(default_factory=list)
    """One per triple: (*namespace, subject, relation, object)."""
    supports: list[tuple[str, ...]] = field(default_factory=list)
    """One per (memory, triple) support link: (*namespace, key, subject, relation, object)."""
    pending: list[tuple[str, ...]] = field(default_factory=list)
    """One per recorded in-flight write that was dropped or lost triples: (*namespace, key)."""
    mentioned: list[tuple[Namespace, str]] = field(default_factory=list)
    """(namespace, key) of the memories of shared namespaces that supported a triple of
    the user's scope or mentioning the user: they lost those triples and were otherwise
    kept."""
    kept: list[str] = field(default_factory=list)
    """What the backend could not remove, and why (no content), for `ErasureReceipt.kept`."""

    @property
    def total(self) -> int:
        """Records removed: triples, support links and pending records."""
        return len(self.triples) + len(self.supports) + len(self.pending)

    def record(self, receipt: ErasureReceipt) -> ErasureReceipt:
        """Add the counts and id hashes to `receipt` (places `graph.*`); returns it."""
        receipt.add("graph.triples", self.triples)
        receipt.add("graph.supports", self.supports)
        receipt.add("graph.pending", self.pending)
        for reason in self.kept:
            receipt.keep(reason)
        if self.mentioned:
            receipt.keep(
                "graph: memories of shared namespaces whose triples named the user lost"
                " those triples; the memories themselves are kept unless their provenance"
                " names the user (their text may still name the user)"
            )
        return receipt

    def sort(self) -> GraphErasure:
        """Sort every list (backends return them in no particular order); returns self."""
        self.triples.sort()
        self.supports.sort()
        self.pending.sort()
        self.mentioned = sorted(set(self.mentioned))
        return self


def user_scope_of(user_id: str | None) -> str | None:
    """The graph scope of a user's triples (`graph_scope` of any namespace with that user)."""
    return None if user_id is None else "u:" + user_id


def mention_names(mentions: Iterable[str]) -> list[str]:
    """The mentions as entity names (normalised, distinct; empty ones dropped).

    The extractor's stand-in for a speaker it does not know (`DEFAULT_SPEAKER`,
    ``"user"``) is dropped too: it is every anonymous first person, in every user's
    namespace, so a user whose id is ``"user"`` must not erase them all.
    """
    placeholder = normalize_entity(DEFAULT_SPEAKER)
    names = dict.fromkeys(normalize_entity(x) for x in mentions)
    return [m for m in names if m and m != placeholder]


def _pattern(names: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


def mentions_any(entity: str, names: Sequence[str]) -> bool:
    """Whether the (normalised) `entity` is one of `names` or holds one as whole words."""
    return bool(names) and _pattern(names).search(entity) is not None


def matching_entities(candidates: Iterable[str], names: Sequence[str]) -> list[str]:
    """The candidates that mention one of `names`, sorted."""
    if not names:
        return []
    pattern = _pattern(names)
    return sorted({c for c in candidates if pattern.search(c)})


class ErasableGraph(Protocol):
    """What `erase_user_graph` needs of a graph: `GraphStore.erase`."""

    def erase(
        self,
        owns: Callable[[Namespace], bool],
        *,
        user_id: str | None = None,
        mentions: Sequence[str] = (),
        shared: Callable[[Namespace], bool] | None = None,
        dry_run: bool = False,
    ) -> GraphErasure:
        """See `GraphStore.erase`."""
        ...


def erase_user_graph(
    graph: ErasableGraph,
    user: UserNamespaces,
    *,
    dry_run: bool = False,
    names: Sequence[str] = (),
) -> GraphErasure:
    """Erase (or, with `dry_run`, find) everything `graph` holds about `user`.

    The user's namespaces (`user.owns`) and, in shared namespaces (`user.shared`), the
    triples of the user's scope and those mentioning one of `names` (a display name
    from the profile, say; the user id is a mention only when it is passed here).

    ```python
    from langgraph_tiered_memory.privacy.erasure import ErasureReceipt, UserNamespaces
    from langgraph_tiered_memory.graph.erase import erase_user_graph
    from langgraph_tiered_memory.graph.sqlite import SqliteGraph
    from langgraph_tiered_memory.graph.types import MemoryTriples, Triple

    graph = SqliteGraph.open(":memory:")
    graph.replace([
        MemoryTriples(("users", "ana"), "m1", (Triple.of("Ana", "likes", "jazz"),), "ana"),
        MemoryTriples(("users", "bo"), "b1", (Triple.of("Bo", "met", "Ana"),), "bo"),
        MemoryTriples(("shared",), "s1", (Triple.of("Ana", "likes", "tea"),), None),
    ])
    gone = erase_user_graph(graph, UserNamespaces("ana"), names=["Ana"])
    assert [t[:2] for t in gone.triples] == [("shared", "ana"), ("users", "ana")]
    assert gone.record(ErasureReceipt.for_user("ana")).counts["graph.triples"] == 2
    assert [t.namespace for t in graph.triples(())] == [("users", "bo")]  # bo's own
    graph.close()
    ```
    """
    return graph.erase(
        user.owns, user_id=user.user_id, mentions=names, shared=user.shared, dry_run=dry_run
    )
