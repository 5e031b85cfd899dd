"""Knowledge graph: the triples of each namespace and the memories supporting them.

Tables, keyed by the store's key prefix like every role of the file:

- `g_triple`: one row per (namespace, subject, relation, object), with the namespace
  (`ns`, an order-preserving encoding, see `ns_key`), its user and its `graph_scope`;
- `g_support`: (namespace id, memory key) -> triple. A triple lives while a row here
  names it: every statement group that removes support deletes the triples left
  without any in the same transaction;
- `g_pending`: the triples a write in flight will give each of its keys, recorded with
  the write id of the item's new document in the same transaction as the intent log
  (`doc_mirror`). After a crash between the Chroma write and the commit, recovery
  applies them for the keys whose document in Chroma carries that write id, and leaves
  the others' triples as they were (Chroma still holds their previous version).

Queries select namespaces by prefix with a range on `ns`. Paths of more than one triple
join triples of one scope only (`g_triple_scope_*` indexes), so they never cross users;
the first hop is found by entity and namespace range (`g_triple_*_ns`).

Every method runs with the file's lock held by the caller (`DocMirror`), inside the
caller's transaction for writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph_tiered_memory.graph.types import (
    GraphHit,
    MemoryTriples,
    Namespace,
    Neighbor,
    Triple,
    TripleRecord,
    graph_scope,
    normalize_entity,
    normalize_relation,
)
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile, marks, select_keys

__all__ = ["GraphTables", "PendingGraph", "clean_triples", "ns_key", "ns_of_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS g_triple (
    tid INTEGER PRIMARY KEY,
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, ns TEXT NOT NULL,
    user TEXT, scope TEXT NOT NULL,
    subject TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL,
    UNIQUE (prefix, ns, subject, relation, object)
);
CREATE INDEX IF NOT EXISTS g_triple_scope_s ON g_triple (prefix, scope, subject);
CREATE INDEX IF NOT EXISTS g_triple_scope_o ON g_triple (prefix, scope, object);
CREATE INDEX IF NOT EXISTS g_triple_s_ns ON g_triple (prefix, subject, ns);
CREATE INDEX IF NOT EXISTS g_triple_o_ns ON g_triple (prefix, object, ns);
CREATE TABLE IF NOT EXISTS g_support (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL, tid INTEGER NOT NULL,
    PRIMARY KEY (prefix, nsid, key, tid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS g_support_tid ON g_support (tid);
CREATE TABLE IF NOT EXISTS g_pending (
    prefix TEXT NOT NULL, nsid TEXT NOT NULL, key TEXT NOT NULL,
    write_id TEXT NOT NULL, ns TEXT NOT NULL, user TEXT, triples TEXT NOT NULL,
    PRIMARY KEY (prefix, nsid, key)
) WITHOUT ROWID;
"""

_COLS = "t.tid, t.ns, t.user, t.subject, t.relation, t.object"
"""The triple columns every query reads (see `_Row`)."""


_QUERY_ENTITIES = "q(pos, name) AS (SELECT key, value FROM json_each(:q))"
"""`memories`: the query entities (a JSON list) with their positions."""


def _own_triples(cond: str) -> str:
    """`memories`: h0, the triples naming an entity of `q` (either end) that meet `cond`.

    CROSS JOIN and INDEXED BY fix the plan: the entities drive, each an index lookup.
    """
    return (
        "h0(pos, name, tid, scope, other) AS ("
        " SELECT q.pos, q.name, t.tid, t.scope, t.object FROM q CROSS"
        "  JOIN g_triple AS t INDEXED BY g_triple_s_ns"
        f"  ON t.prefix = :p AND t.subject = q.name{cond}"
        " UNION SELECT q.pos, q.name, t.tid, t.scope, t.subject FROM q CROSS"
        "  JOIN g_triple AS t INDEXED BY g_triple_o_ns"
        f"  ON t.prefix = :p AND t.object = q.name{cond})"
    )


def _one_hop(cond: str) -> str:
    """`memories`: h1, the triples of the same scope naming the other end of one of h0."""
    return (
        "ends(pos, scope, other) AS ("
        " SELECT DISTINCT pos, scope, other FROM h0 WHERE other <> name),"
        " h1(pos, tid) AS ("
        " SELECT e.pos, t.tid FROM ends AS e CROSS"
        "  JOIN g_triple AS t INDEXED BY g_triple_scope_s"
        f"  ON t.prefix = :p AND t.scope = e.scope AND t.subject = e.other{cond}"
        " UNION SELECT e.pos, t.tid FROM ends AS e CROSS"
        "  JOIN g_triple AS t INDEXED BY g_triple_scope_o"
        f"  ON t.prefix = :p AND t.scope = e.scope AND t.object = e.other{cond})"
    )


_HITS = (
    "SELECT :h, b.pos, s.key, t.tid, t.ns, t.user, t.subject, t.relation, t.object"
    " FROM best AS b CROSS JOIN g_triple AS t ON t.tid = b.tid"
    " CROSS JOIN g_support AS s INDEXED BY g_support_tid ON s.tid = b.tid"
    " ORDER BY b.pos, t.ns, s.key, t.subject, t.relation, t.object"
)
"""`memories`: one row per (best, supporting memory), in hit order (:h is the hops)."""

_ESCAPE = str.maketrans({"\x00": "\x02\x02", "\x01": "\x02\x03", "\x02": "\x02\x04"})
_UNESCAPE = re.compile("\x02(.)", re.DOTALL)
_END = "\x01"  # ends each label; lower than every (escaped) label character


def ns_key(namespace: Sequence[str]) -> str:
    """`namespace` as text that sorts like the tuple and whose prefixes are tuple prefixes.

    Each label is followed by U+0001; the characters U+0000-U+0002 inside a label are
    written as two characters from U+0002 up, so the end mark sorts below all.
    """
    return "".join(label.translate(_ESCAPE) + _END for label in namespace)


def ns_of_key(key: str) -> Namespace:
    """Invert `ns_key`."""
    labels = key.split(_END)[:-1]
    return tuple(_UNESCAPE.sub(lambda m: chr(ord(m[1]) - 2), label) for label in labels)


def _filters(prefix: Sequence[str], relation: str | None = None) -> tuple[str, dict[str, str]]:
    """SQL conditions on `g_triple AS t` (named parameters): under `prefix`, one relation.

    Namespaces under `prefix` are a range of `ns`; the relation applies when given.
    """
    sql, args = "", {}
    if prefix:
        low = ns_key(prefix)
        sql, args = " AND t.ns >= :lo AND t.ns < :hi", {"lo": low, "hi": low[:-1] + "\x02"}
    if relation is not None:
        sql += " AND t.relation = :rel"
        args["rel"] = relation
    return sql, args


def clean_triples(triples: Iterable[Triple]) -> tuple[Triple, ...]:
    """Normalised, distinct, sorted triples; those with an empty part are left out."""
    out = set()
    for t in triples:
        s, r, o = normalize_entity(t[0]), normalize_relation(t[1]), normalize_entity(t[2])
        if s and r and o:
            out.add(Triple(s, r, o))
    return tuple(sorted(out))


class PendingGraph(NamedTuple):
    """The triples a write in flight gives one key, as recorded with the intent."""

    write_id: str
    """Write id of the item's new document: recovery applies `change` only if Chroma
    holds that document."""
    change: MemoryTriples


class _Row(NamedTuple):
    tid: int
    ns: str
    user: str | None
    subject: str
    relation: str
    object: str

    def order(self) -> tuple[str, str, str, str]:
        return (self.ns, self.subject, self.relation, self.object)

    def other(self, entity: str) -> str:
        return self.object if self.subject == entity else self.subject


class GraphTables:
    """The graph's tables. Every method runs with the file's lock held by the caller."""

    def __init__(self, db: SqliteFile) -> None:
        db.create(_SCHEMA)
        self._c = db.conn

    # ------------------------------------------------------------------ writes
    def apply(
        self, prefix: str, nsid: str, changes: Sequence[MemoryTriples], drops: Iterable[str] = ()
    ) -> None:
        """Make each memory of `changes` (all of namespace `nsid`) support exactly its triples.

        `drops` are keys that lose all their support (deleted or forgotten memories).
        Triples left without support are deleted.
        """
        keys = list(dict.fromkeys([*drops, *(m.key for m in changes)]))
        if not keys:
            return
        old = select_keys(self._c, "SELECT DISTINCT tid FROM g_support", prefix, nsid, keys)
        if old:
            self._c.executemany(
                "DELETE FROM g_support WHERE prefix=? AND nsid=? AND key=?",
                [(prefix, nsid, k) for k in keys],
            )
        triples: dict[tuple[str, str, str, str], tuple[str | None, str]] = {}
        support: list[tuple[str, str, str, str, str, str, str, str]] = []
        for m in changes:
            ns = ns_key(m.namespace)
            for s, r, o in clean_triples(m.triples):
                triples[(ns, s, r, o)] = (m.user_id, graph_scope(m.namespace, m.user_id))
                support.append((prefix, nsid, m.key, prefix, ns, s, r, o))
        if triples:
            self._c.executemany(
                "INSERT INTO g_triple (prefix, nsid, ns, user, scope, subject, relation, object)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (prefix, ns, subject, relation,"
                " object) DO UPDATE SET user=excluded.user, scope=excluded.scope"
                " WHERE user IS NOT excluded.user OR scope <> excluded.scope",
                [(prefix, nsid, ns, u, sc, s, r, o) for (ns, s, r, o), (u, sc) in triples.items()],
            )
            self._c.executemany(
                "INSERT OR IGNORE INTO g_support SELECT ?, ?, ?, tid FROM g_triple"
                " WHERE prefix=? AND ns=? AND subject=? AND relation=? AND object=?",
                support,
            )
        if old:
            self._c.executemany(
                "DELETE FROM g_triple WHERE tid=? AND NOT EXISTS"
                " (SELECT 1 FROM g_support WHERE tid=?)",
                [(tid, tid) for (tid,) in old],
            )

    def repoint(self, prefix: str, nsid: str, sources: Sequence[str], target: str) -> None:
        """Move the support of `sources` to `target` (no triple loses its last support)."""
        sources = [k for k in dict.fromkeys(sources) if k != target]
        if not sources:
            return
        self._c.executemany(
            "INSERT OR IGNORE INTO g_support SELECT prefix, nsid, ?, tid FROM g_support"
            " WHERE prefix=? AND nsid=? AND key=?",
            [(target, prefix, nsid, k) for k in sources],
        )
        self._c.executemany(
            "DELETE FROM g_support WHERE prefix=? AND nsid=? AND key=?",
            [(prefix, nsid, k) for k in sources],
        )

    # ------------------------------------------------------------------ intents
    def record(self, prefix: str, nsid: str, pending: Sequence[PendingGraph]) -> None:
        """Record the triples writes in flight give their keys (see the module notes)."""
        self._c.executemany(
            "INSERT OR REPLACE INTO g_pending VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    prefix,
                    nsid,
                    p.change.key,
                    p.write_id,
                    ns_key(p.change.namespace),
                    p.change.user_id,
                    json.dumps([list(t) for t in clean_triples(p.change.triples)]),
                )
                for p in pending
            ],
        )

    def pending(self, prefix: str, nsid: str, keys: Sequence[str]) -> dict[str, PendingGraph]:
        """The recorded triples of the given keys, by key."""
        rows = select_keys(
            self._c,
            "SELECT key, write_id, ns, user, triples FROM g_pending",
            prefix,
            nsid,
            keys,
        )
        return {
            key: PendingGraph(
                wid,
                MemoryTriples(
                    ns_of_key(ns), key, tuple(Triple(*t) for t in json.loads(triples)), user
                ),
            )
            for key, wid, ns, user, triples in rows
        }

    def clear(self, prefix: str, nsid: str, keys: Iterable[str]) -> None:
        """Forget the recorded triples of keys whose write has been committed."""
        self._c.executemany(
            "DELETE FROM g_pending WHERE prefix=? AND nsid=? AND key=?",
            [(prefix, nsid, k) for k in keys],
        )

    # ------------------------------------------------------------------ reads
    def memory_triples(
        self, prefix: str, nsid: str, keys: Sequence[str]
    ) -> dict[str, tuple[Triple, ...]]:
        """The triples each key supports (keys supporting none are absent), sorted."""
        rows = select_keys(
            self._c,
            "SELECT key, subject, relation, object FROM (SELECT s.prefix, s.nsid, s.key,"
            " t.subject, t.relation, t.object FROM g_support AS s JOIN g_triple AS t"
            " ON t.tid = s.tid)",
            prefix,
            nsid,
            keys,
        )
        out: dict[str, list[Triple]] = {}
        for key, s, r, o in rows:
            out.setdefault(key, []).append(Triple(s, r, o))
        return {k: tuple(sorted(v)) for k, v in out.items()}

    def triples(
        self,
        prefix: str,
        under: Namespace,
        subject: str | None,
        relation: str | None,
        object_: str | None,
        limit: int,
    ) -> list[TripleRecord]:
        """Triples under `under` matching the given (normalised) parts, in namespace order."""
        if limit <= 0:
            return []
        where, args = _filters(under, relation)
        for column, value in (("subject", subject), ("object", object_)):
            if value is not None:
                where += f" AND t.{column} = :{column}"
                args[column] = value
        rows = self._rows(
            f"SELECT {_COLS} FROM g_triple AS t WHERE t.prefix = :p{where}"
            " ORDER BY t.ns, t.subject, t.relation, t.object LIMIT :limit",
            {"p": prefix, "limit": limit, **args},
        )
        return self._records(rows)

    def neighbors(
        self,
        prefix: str,
        under: Namespace,
        entity: str,
        hops: int,
        relation: str | None,
        limit: int,
    ) -> list[Neighbor]:
        """Entities within `hops` of `entity` in each scope, nearest first (recursive CTE).

        Ties between paths of the same length go to the smallest sequence of triples,
        each compared as (namespace, subject, relation, object).
        """
        if limit <= 0 or not entity:
            return []
        cond, params = _filters(under, relation)
        # UNION (not UNION ALL) keeps one row per (scope, entity, hops), so each entity
        # is expanded once, however many paths reach it. CROSS JOIN and INDEXED BY fix
        # the plan: the walk drives, each step is an index lookup within the scope.
        reached = self._c.execute(
            "WITH RECURSIVE reach(scope, entity, hops) AS ("
            f" SELECT t.scope, t.object, 1 FROM g_triple AS t INDEXED BY g_triple_s_ns"
            f"  WHERE t.prefix=:p AND t.subject=:e{cond}"
            f" UNION SELECT t.scope, t.subject, 1 FROM g_triple AS t INDEXED BY g_triple_o_ns"
            f"  WHERE t.prefix=:p AND t.object=:e{cond}"
            f" UNION SELECT t.scope, t.object, r.hops + 1 FROM reach AS r CROSS"
            f"  JOIN g_triple AS t INDEXED BY g_triple_scope_s"
            f"  ON t.prefix=:p AND t.scope=r.scope AND t.subject=r.entity"
            f"  WHERE r.hops < :hops AND r.entity <> :e{cond}"
            f" UNION SELECT t.scope, t.subject, r.hops + 1 FROM reach AS r CROSS"
            f"  JOIN g_triple AS t INDEXED BY g_triple_scope_o"
            f"  ON t.prefix=:p AND t.scope=r.scope AND t.object=r.entity"
            f"  WHERE r.hops < :hops AND r.entity <> :e{cond})"
            " SELECT scope, entity, min(hops) AS h FROM reach WHERE entity <> :e"
            " GROUP BY scope, entity ORDER BY h, entity, scope LIMIT :limit",
            {"p": prefix, "e": entity, "hops": hops, "limit": limit, **params},
        ).fetchall()
        if not reached:
            return []
        near: dict[tuple[str, str], list[_Row]] = {}  # (scope, entity) -> triples to it
        for row, scope in self._touching(prefix, entity, cond, params):
            other = row.other(entity)
            if other != entity:
                near.setdefault((scope, other), []).append(row)
        paths: list[tuple[list[_Row], str]] = []
        for scope, target, h in reached:
            if h == 1:
                paths.append(([min(near[(scope, target)], key=_Row.order)], target))
                continue
            best: tuple[_Row, _Row] | None = None
            for row, _ in self._touching(prefix, target, cond, params, scope=scope):
                mid = row.other(target)
                firsts = near.get((scope, mid))
                if not firsts or mid == target:
                    continue
                cand = (min(firsts, key=_Row.order), row)
                if best is None or (cand[0].order(), cand[1].order()) < (
                    best[0].order(),
                    best[1].order(),
                ):
                    best = cand
            assert best is not None  # the walk reached `target` over such a pair
            paths.append((list(best), target))
        records = dict(
            zip(
                (r.tid for p, _ in paths for r in p),
                self._records([r for p, _ in paths for r in p]),
                strict=True,
            )
        )
        return [
            Neighbor(target, len(path), tuple(records[r.tid] for r in path))
            for path, target in paths
        ]

    def memories(
        self,
        prefix: str,
        under: Namespace,
        entities: Sequence[str],
        hops: int,
        limit: int | None,
    ) -> list[GraphHit]:
        """Memories supporting triples at `hops` 0 (or 1) from `entities` (at most `limit`).

        One hit per (query entity, triple, memory), with the fewest hops; ordered by
        hops, the entity's position in `entities`, namespace, key and triple.

        The order and the limit are applied in SQL, so only the hits returned are read
        into Python. The hits of the entities' own triples come first: when they fill
        `limit`, no hop is followed. Otherwise each entity's hop is followed in turn,
        for the hits still missing, until `limit` is reached.
        """
        if (limit is not None and limit <= 0) or not entities:
            return []
        cond, args = _filters(under)
        base = {"p": prefix, **args}
        want = -1 if limit is None else limit
        found = self._c.execute(
            f"WITH {_QUERY_ENTITIES}, {_own_triples(cond)},"
            " best(pos, tid) AS (SELECT DISTINCT pos, tid FROM h0)"
            f" {_HITS} LIMIT :limit",
            {**base, "q": json.dumps(list(entities)), "h": 0, "limit": want},
        ).fetchall()
        if hops >= 1:
            for pos, name in enumerate(entities):
                if len(found) == want:
                    break
                found += self._c.execute(
                    f"WITH q(pos, name) AS (SELECT :pos, :name), {_own_triples(cond)},"
                    f" {_one_hop(cond)},"
                    " best(pos, tid) AS (SELECT pos, tid FROM h1 EXCEPT SELECT pos, tid FROM h0)"
                    f" {_HITS} LIMIT :limit",
                    {**base, "pos": pos, "name": name, "h": 1, "limit": want - len(found)},
                ).fetchall()
        if not found:
            return []
        rows = {tid: _Row(tid, *rest) for _, _, _, tid, *rest in found}
        used = list(rows.values())
        records = {r.tid: rec for r, rec in zip(used, self._records(used), strict=True)}
        return [
            GraphHit(records[tid].namespace, key, h, entities[pos], records[tid])
            for h, pos, key, tid, *_ in found
        ]

    # ------------------------------------------------------------------ helpers
    def _rows(self, sql: str, args: Sequence[Any] | Mapping[str, Any]) -> list[_Row]:
        return [_Row(*r) for r in self._c.execute(sql, args).fetchall()]

    def _touching(
        self,
        prefix: str,
        entity: str,
        cond: str,
        params: Mapping[str, str],
        *,
        scope: str | None = None,
    ) -> list[tuple[_Row, str]]:
        """Triples naming `entity` (either end) that meet `cond`, with their scope."""
        if scope is not None:
            cond += " AND t.scope = :scope"
        out = []
        for column in ("subject", "object"):
            if scope is not None:
                index = f"g_triple_scope_{column[0]}"
            else:
                index = f"g_triple_{column[0]}_ns"
            for *row, sc in self._c.execute(
                f"SELECT {_COLS}, t.scope FROM g_triple AS t INDEXED BY {index}"
                f" WHERE t.prefix = :p AND t.{column} = :e{cond}",
                {"p": prefix, "e": entity, "scope": scope, **params},
            ).fetchall():
                out.append((_Row(*row), sc))
        return out

    def _support(self, tids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        """The memory keys supporting each triple, sorted."""
        out: dict[int, list[str]] = {}
        unique = list(dict.fromkeys(tids))
        for at in range(0, len(unique), 500):
            chunk = unique[at : at + 500]
            for tid, key in self._c.execute(
                f"SELECT tid, key FROM g_support WHERE tid IN ({marks(len(chunk))})"
                " ORDER BY tid, key",
                chunk,
            ):
                out.setdefault(tid, []).append(key)
        return {tid: tuple(keys) for tid, keys in out.items()}

    def _records(
        self, rows: Sequence[_Row], keys: Mapping[int, tuple[str, ...]] | None = None
    ) -> list[TripleRecord]:
        if keys is None:
            keys = self._support([r.tid for r in rows])
        decoded: dict[str, Namespace] = {}
        out = []
        for r in rows:
            ns = decoded.get(r.ns)
            if ns is None:
                ns = decoded[r.ns] = ns_of_key(r.ns)
            out.append(
                TripleRecord(r.subject, r.relation, r.object, ns, r.user, keys.get(r.tid, ()))
            )
        return out
