"""Erasing a user's rows from the graph tables (`g_triple`, `g_support`, `g_pending`).

What goes is described in `langgraph_tiered_memory.graph.erase`. Everything runs inside
the caller's transaction (a dry run: with the file's lock held, reading only), so an
erase is all or nothing and a re-run after a crash finds what is left.

Triples mentioning the user are found by entity: the subjects and objects holding a
mention (`instr`, a scan of the graph's rows: erasures are rare) are checked for whole
words, then their triples are selected by the entity indexes; those of the user's
scope by the scope index. Of both, only the triples of shared namespaces are taken.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from langgraph_tiered_memory.graph.erase import (
    GraphErasure,
    matching_entities,
    mention_names,
    mentions_any,
    user_scope_of,
)
from langgraph_tiered_memory.graph.types import Namespace
from langgraph_tiered_memory.store.tiers.sqlite_db import marks
from langgraph_tiered_memory.store.tiers.sqlite_graph import ns_of_key

__all__ = ["erase_graph_rows"]

_CHUNK = 500


def _chunks(values: Sequence[object]) -> list[list[object]]:
    return [list(values[at : at + _CHUNK]) for at in range(0, len(values), _CHUNK)]


def _mentioned(c: sqlite3.Connection, prefix: str, names: Sequence[str]) -> list[str]:
    """Entity names of `prefix` that mention one of `names` (whole words)."""
    found: set[str] = set()
    for name in names:
        for (entity,) in c.execute(
            "SELECT subject FROM g_triple WHERE prefix = ?1 AND instr(subject, ?2) > 0"
            " UNION SELECT object FROM g_triple WHERE prefix = ?1 AND instr(object, ?2) > 0",
            (prefix, name),
        ):
            found.add(entity)
    return matching_entities(found, names)


def erase_graph_rows(
    c: sqlite3.Connection,
    prefix: str,
    owns: Callable[[Namespace], bool],
    *,
    user_id: str | None,
    mentions: Sequence[str],
    shared: Callable[[Namespace], bool] | None,
    dry_run: bool,
) -> GraphErasure:
    """Remove (or, with `dry_run`, find) a user's graph rows of store prefix `prefix`."""
    out = GraphErasure()
    decoded: dict[str, Namespace] = {}

    def ns_of(key: str) -> Namespace:
        ns = decoded.get(key)
        if ns is None:
            ns = decoded[key] = ns_of_key(key)
        return ns

    spaces = c.execute(
        "SELECT DISTINCT nsid, ns FROM g_triple WHERE prefix = ?1"
        " UNION SELECT DISTINCT nsid, ns FROM g_pending WHERE prefix = ?1",
        (prefix,),
    ).fetchall()
    owned = {nsid: ns for nsid, ns in spaces if owns(ns_of(ns))}
    # Scope and mentions reach shared namespaces only, never another user's.
    common = {
        nsid: ns
        for nsid, ns in spaces
        if nsid not in owned and shared is not None and shared(ns_of(ns))
    }
    names = mention_names(mentions) if common else []
    entities = _mentioned(c, prefix, names)
    scope = user_scope_of(user_id) if common else None
    reach = {*owned.values(), *common.values()}

    rows: dict[int, tuple[str, str, str, str]] = {}

    def select(where: str, args: Sequence[object]) -> None:
        for tid, ns, s, r, o in c.execute(
            f"SELECT tid, ns, subject, relation, object FROM g_triple WHERE prefix = ? AND {where}",
            [prefix, *args],
        ):
            if ns in reach:
                rows[tid] = (ns, s, r, o)

    for ns in set(owned.values()):
        select("ns = ?", [ns])
    if scope is not None:
        select("scope = ?", [scope])
    for chunk in _chunks(entities):
        select(f"subject IN ({marks(len(chunk))})", chunk)
        select(f"object IN ({marks(len(chunk))})", chunk)

    tids = sorted(rows)
    owned_ns = set(owned.values())
    for tid in tids:
        ns, s, r, o = rows[tid]
        out.triples.append((*ns_of(ns), s, r, o))
    for chunk in _chunks(tids):
        for tid, key in c.execute(
            f"SELECT tid, key FROM g_support WHERE tid IN ({marks(len(chunk))})", chunk
        ):
            ns, s, r, o = rows[tid]
            out.supports.append((*ns_of(ns), key, s, r, o))
            if ns not in owned_ns:
                out.mentioned.append((ns_of(ns), key))

    drops: list[tuple[str, str]] = []
    rewrites: list[tuple[str, str, str, str]] = []
    for nsid, key, ns, user, triples in c.execute(
        "SELECT nsid, key, ns, user, triples FROM g_pending WHERE prefix = ?", (prefix,)
    ).fetchall():
        if nsid in owned or (nsid in common and user_id is not None and user == user_id):
            drops.append((nsid, key))
            out.pending.append((*ns_of(ns), key))
            continue
        if nsid not in common:
            continue
        listed = json.loads(triples)
        kept = [t for t in listed if not (mentions_any(t[0], names) or mentions_any(t[2], names))]
        if len(kept) != len(listed):
            rewrites.append((json.dumps(kept), prefix, nsid, key))
            out.pending.append((*ns_of(ns), key))
    if dry_run:
        return out.sort()

    for chunk in _chunks(tids):
        c.execute(f"DELETE FROM g_support WHERE tid IN ({marks(len(chunk))})", chunk)
        c.execute(f"DELETE FROM g_triple WHERE tid IN ({marks(len(chunk))})", chunk)
    # Support rows of the user's namespaces whose triple is gone already (none in a
    # consistent file): nothing of those namespaces may stay.
    c.executemany(
        "DELETE FROM g_support WHERE prefix = ? AND nsid = ?", [(prefix, n) for n in owned]
    )
    c.executemany(
        "DELETE FROM g_pending WHERE prefix = ? AND nsid = ? AND key = ?",
        [(prefix, nsid, key) for nsid, key in drops],
    )
    c.executemany(
        "UPDATE g_pending SET triples = ? WHERE prefix = ? AND nsid = ? AND key = ?", rewrites
    )
    return out.sort()
