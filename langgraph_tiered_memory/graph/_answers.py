"""How the FalkorDB graph orders and checks query answers (pure functions).

FalkorDB returns rows in no set order; answers are sorted by namespace and triple,
and of two paths to one entity the shorter (then the first in that order) is kept.
"""

from __future__ import annotations

from langgraph_tiered_memory.graph.types import Namespace, Neighbor, TripleRecord


def record_order(rec: TripleRecord) -> tuple[Namespace, str, str, str]:
    """The sort key of a triple record: namespace, subject, relation, object."""
    return (rec.namespace, rec.subject, rec.relation, rec.object)


def check_limit(limit: int) -> None:
    """Refuse a `limit` that is not an integer >= 0."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be an integer >= 0, got {limit!r}.")


def _path_order(neighbor: Neighbor) -> tuple[tuple[Namespace, str, str, str], ...]:
    return tuple(record_order(rec) for rec in neighbor.path)


def keep_shortest(best: dict[tuple[str, str], Neighbor], scope: str, found: Neighbor) -> None:
    """Keep in `best` the shortest path to `found.entity` within `scope`."""
    slot = (scope, found.entity)
    held = best.get(slot)
    if held is None or (found.hops, _path_order(found)) < (held.hops, _path_order(held)):
        best[slot] = found
