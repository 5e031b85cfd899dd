r"""Erasing a user from a FalkorDB graph (`FalkorDBGraph.erase`).

Three reads find what goes (the namespaces of facts and memory nodes, the entity names
mentioning the user, the facts themselves); one write query then deletes it all under
FalkorDB's write lock, so other clients see all of it or nothing: the facts with their
SUBJ/OBJ/SUPPORTS edges, the entities and memory nodes left without facts, and every
memory node of the user's namespaces. Facts of the user's scope and facts mentioning
the user are taken in shared namespaces only (`$open`), never in another user's.

FalkorDB also logs queries *with their parameters* (namespaces, keys, the triples'
words) where any client can read them: the stream ``telemetry{<graph>}`` (the last
`MAX_INFO_QUERIES` queries, written by a background task a second or two after each
query), the graph's slow log (`GRAPH.SLOWLOG`) and the server's `SLOWLOG`. After the
write query, `forget_queries` waits until the log holds a query sent after it, then
deletes the stream, resets the graph's slow log and, when it holds a query of this
graph, the server's slow log: the queries that wrote the user's triples go, and so do
the erase's own.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import redis

from langgraph_tiered_memory.errors import BackendUnavailableError
from langgraph_tiered_memory.graph.erase import (
    GraphErasure,
    matching_entities,
    mention_names,
    user_scope_of,
)
from langgraph_tiered_memory.graph.types import Namespace, graph_scope

logger = logging.getLogger("langgraph_tiered_memory.graph.falkordb_erase")

Run = Callable[..., list[list[Any]]]
"""`FalkorDBGraph._run`: (cypher, params, read_only=...) -> rows."""

Command = Callable[..., Any]
"""A Redis command on the graph's server (the client's `execute_command`)."""

KEPT_SLOWLOG = (
    "FalkorDB: the server's SLOWLOG (slow queries with their parameters) could not be"
    " reset (the server refused SLOWLOG RESET); it keeps its last entries until newer"
    " slow commands push them out"
)

_SEP = "\x1f"
_ESCAPED = re.compile("%(25|1F)")

_SPACES = (
    "MATCH (f:Fact) RETURN DISTINCT f.ns_key AS k"
    " UNION MATCH (m:Memory) RETURN DISTINCT m.ns_key AS k"
)

_CANDIDATES = "UNWIND $names AS n MATCH (e:Entity) WHERE e.name CONTAINS n RETURN DISTINCT e.name"

_CHOSEN = (
    "MATCH (f:Fact) WHERE f.ns_key IN $owned OR (f.ns_key IN $open"
    " AND (f.scope = $scope OR f.s IN $entities OR f.o IN $entities))"
)

_FIND = f"""
{_CHOSEN}
OPTIONAL MATCH (m:Memory)-[:SUPPORTS]->(f)
RETURN f.ns, f.ns_key, f.s, f.r, f.o, collect(m.key)
"""

_ERASE = f"""
CALL {{
  {_CHOSEN}
  OPTIONAL MATCH (m:Memory)-[:SUPPORTS]->(f)
  WITH f, collect(m.key) AS keys
  RETURN collect([f.ns, f.ns_key, f.s, f.r, f.o, keys]) AS gone, collect(f) AS facts
}}
CALL {{
  WITH facts
  UNWIND facts AS f
  MATCH (f)-[:SUBJ|OBJ]->(e:Entity)
  RETURN collect(DISTINCT e) AS ents
}}
CALL {{
  WITH facts
  UNWIND facts AS f
  MATCH (m:Memory)-[:SUPPORTS]->(f)
  RETURN collect(DISTINCT m) AS mems
}}
CALL {{
  WITH facts
  UNWIND facts AS f
  DETACH DELETE f
  RETURN count(*) AS facts_gone
}}
CALL {{
  WITH ents
  UNWIND ents AS e
  WITH e WHERE NOT ()-[:SUBJ|OBJ]->(e)
  DELETE e
  RETURN count(*) AS entities_gone
}}
CALL {{
  WITH mems
  UNWIND mems AS m
  WITH m WHERE NOT (m)-[:SUPPORTS]->()
  DELETE m
  RETURN count(*) AS memories_gone
}}
CALL {{
  MATCH (m:Memory) WHERE m.ns_key IN $owned
  DETACH DELETE m
  RETURN count(*) AS owned_memories_gone
}}
CALL {{
  MATCH (e:Entity) WHERE e.scope IN $scopes AND NOT ()-[:SUBJ|OBJ]->(e)
  DELETE e
  RETURN count(*) AS scope_entities_gone
}}
RETURN gone
"""


def namespace_of_key(key: str) -> Namespace:
    """Invert `falkordb.namespace_key`."""
    labels = key.split(_SEP)[:-1]
    return tuple(_ESCAPED.sub(lambda m: "%" if m[1] == "25" else _SEP, label) for label in labels)


def erase(
    run: Run,
    owns: Callable[[Namespace], bool],
    *,
    user_id: str | None,
    mentions: Sequence[str],
    shared: Callable[[Namespace], bool] | None,
    dry_run: bool,
) -> GraphErasure:
    """Remove (or, with `dry_run`, find) what the graph holds about one user.

    Without `dry_run`, the caller then runs `forget_queries` (the queries that wrote
    the user's triples, and these, are in FalkorDB's query logs).
    """
    keys = [k for (k,) in run(_SPACES, {}, read_only=True) if isinstance(k, str)]
    if not keys:
        return GraphErasure()  # no fact or memory node at all (or no graph yet)
    mine = {k for k in keys if owns(namespace_of_key(k))}
    owned = sorted(mine)
    # Scope and mentions reach shared namespaces only, never another user's.
    common = sorted(
        {k for k in keys if k not in mine and shared is not None and shared(namespace_of_key(k))}
    )
    names = mention_names(mentions) if common else []
    entities: list[str] = []
    if names:
        found = run(_CANDIDATES, {"names": names}, read_only=True)
        entities = matching_entities((name for (name,) in found), names)
    scope = user_scope_of(user_id)
    scopes = [graph_scope(namespace_of_key(k), None) for k in owned]
    if scope is not None:
        scopes.append(scope)
    params = {
        "owned": owned,
        "open": common,
        "scope": scope,
        "entities": entities,
        "scopes": scopes,
    }
    if dry_run:
        rows = run(_FIND, params, read_only=True)
    else:
        result = run(_ERASE, params)
        rows = result[0][0] if result else []
    out = GraphErasure()
    for ns, ns_key, s, r, o, supported in rows:
        namespace = tuple(ns)
        out.triples.append((*namespace, s, r, o))
        for key in dict.fromkeys(supported):
            out.supports.append((*namespace, key, s, r, o))
            if ns_key not in mine:
                out.mentioned.append((namespace, key))
    return out.sort()


def telemetry_stream(graph_name: str) -> str:
    """The Redis stream in which FalkorDB logs the queries of `graph_name`."""
    return f"telemetry{{{graph_name}}}"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _logs_queries(command: Command) -> bool:
    """Whether the server keeps a query log (`MAX_INFO_QUERIES` > 0, or unknown)."""
    try:
        reply = command("GRAPH.CONFIG", "GET", "MAX_INFO_QUERIES")
    except redis.ResponseError as e:
        if "unknown configuration" in str(e).lower():
            return False  # a FalkorDB without this setting logs no queries
        raise
    try:
        return int(_text(reply[1])) > 0
    except (IndexError, TypeError, ValueError):
        return True  # an unexpected reply: wait for the log as if it were on


def _logged(command: Command, stream: str, nonce: str) -> bool:
    """Whether one of the newest entries of the query log is the query carrying `nonce`."""
    for _id, fields in command("XREVRANGE", stream, "+", "-", "COUNT", 100) or []:
        values = fields.values() if isinstance(fields, dict) else fields or []
        if any(nonce in _text(v) for v in values):
            return True
    return False


def forget_queries(
    run: Run,
    command: Command,
    graph_name: str,
    *,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Delete what FalkorDB logged of this graph's queries (their parameters included).

    A read query carrying a fresh nonce goes last; once the background task has
    written it to ``telemetry{<graph>}``, every earlier query is there too, and the
    stream is deleted (queries other clients sent meanwhile go with it: the stream is
    diagnostics, not data). The graph's slow log is reset, and the server's when one
    of its entries is a query of this graph.

    Returns:
        Reasons for what could not be removed (for `GraphErasure.kept`).

    Raises:
        BackendUnavailableError: The query log did not show the nonce within
            `timeout` seconds (run the erase again).
    """
    stream = telemetry_stream(graph_name)
    if _logs_queries(command):
        nonce = f"tm-erase-{uuid.uuid4().hex}"
        run("RETURN $nonce", {"nonce": nonce}, read_only=True)
        deadline = clock() + timeout
        while not _logged(command, stream, nonce):
            if clock() >= deadline:
                raise BackendUnavailableError(
                    f"FalkorDB did not log a query of graph {graph_name!r} within {timeout:g}"
                    f" s: its query log {stream!r} may still hold the erased user's data."
                    " Run the erase again."
                )
            pause(0.05)
    command("DEL", stream)
    try:
        command("GRAPH.SLOWLOG", graph_name, "RESET")
    except redis.ResponseError as e:
        if "empty key" not in str(e):  # no graph key: no slow log either
            raise
    kept: list[str] = []
    entries = command("SLOWLOG", "GET", "-1") or []
    if any(_of_graph(entry, graph_name) for entry in entries):
        try:
            command("SLOWLOG", "RESET")
        except redis.ResponseError as e:  # managed servers may forbid it (NOPERM)
            logger.warning("FalkorDB refused SLOWLOG RESET: %s", e)
            kept.append(KEPT_SLOWLOG)
    return kept


def _of_graph(entry: Any, graph_name: str) -> bool:
    """Whether a `SLOWLOG GET` entry is a `GRAPH.*` command on `graph_name`."""
    if isinstance(entry, dict):  # a client that parses SLOWLOG replies
        args = _text(entry.get("command", "")).split(" ", 2)
    else:
        args = entry[3] if isinstance(entry, (list, tuple)) and len(entry) > 3 else []
    if not isinstance(args, (list, tuple)) or len(args) < 2:
        return False
    return _text(args[0]).upper().startswith("GRAPH.") and _text(args[1]) == graph_name
