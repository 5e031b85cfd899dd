"""`tiered-memory graph`: show a namespace's knowledge-graph triples from the shell.

Without `--entity`, every triple under the namespace prefix; with it, the entity's
neighbourhood of 1 or 2 hops. Printed as a tree (default), Mermaid flowchart text, or
JSON.
"""

import json
from enum import Enum
from typing import Annotated, Any

import typer

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    KeyPrefixOption,
    fail,
    namespace_labels,
    open_store,
)
from langgraph_tiered_memory.graph import graph_neighbors, graph_triples

__all__ = ["graph"]

NO_GRAPH = (
    "This store holds no knowledge graph: its memories were written by a store without"
    " graph=. Open it in Python with TieredMemoryStore(..., graph=True) and call"
    " rebuild_graph(store) (langgraph_tiered_memory.graph) to extract the triples of its memories"
    " (docs/graph.md)."
)
"""The hint `graph` prints (stderr) when the store holds no triples at all."""


class GraphFormat(str, Enum):
    """Output formats of `tiered-memory graph`."""

    tree = "tree"
    mermaid = "mermaid"
    json = "json"


def _graph_option(falkordb_url: str | None, graph_name: str | None) -> Any:
    """The store's `graph=`: its default graph, or FalkorDB at `falkordb_url`."""
    if falkordb_url is None:
        if graph_name is not None:
            raise typer.BadParameter("--graph-name names a FalkorDB graph: pass --falkordb-url.")
        return True
    config: dict[str, Any] = {"backend": "falkordb", "url": falkordb_url}
    if graph_name is not None:
        config["graph_name"] = graph_name
    return config


def graph(
    namespace: Annotated[
        str,
        typer.Option(
            help="Namespace prefix, labels joined by '/' (e.g. users/u1); its sub-namespaces"
            " are included."
        ),
    ],
    entity: Annotated[
        str | None,
        typer.Option(help="Show this entity's neighbourhood instead of every triple."),
    ] = None,
    hops: Annotated[
        int | None,
        typer.Option(min=1, max=2, help="Depth of the neighbourhood (1 or 2; with --entity)."),
    ] = None,
    relation: Annotated[
        str | None, typer.Option(help="Only triples of this relation (e.g. lives_in).")
    ] = None,
    output: Annotated[
        GraphFormat,
        typer.Option("--format", help="tree, mermaid (flowchart text) or json."),
    ] = GraphFormat.tree,
    limit: Annotated[
        int,
        typer.Option(min=1, help="At most this many triples (neighbours with --entity)."),
    ] = 100,
    chroma_path: ChromaPathOption = None,
    chroma_host: ChromaHostOption = None,
    chroma_port: ChromaPortOption = 8000,
    redis_url: Annotated[
        str | None,
        typer.Option(
            envvar="REDIS_URL",
            help="The Redis of a store on a Chroma server (its index, and its graph when it"
            " was made with graph=True). Default: REDIS_URL, else --falkordb-url.",
        ),
    ] = None,
    key_prefix: KeyPrefixOption = "tm",
    falkordb_url: Annotated[
        str | None,
        typer.Option(
            envvar="TIERED_MEMORY_FALKORDB_URL",
            help="Read the graph from FalkorDB at this URL (redis://...) instead of the"
            " store's embedded SQLite graph. For a store on a Chroma server made with"
            " graph=True: the store's own Redis URL.",
        ),
    ] = None,
    graph_name: Annotated[
        str | None, typer.Option(help="Name of the FalkorDB graph (the store's graph_name).")
    ] = None,
) -> None:
    """Show knowledge-graph triples of a namespace as a tree, Mermaid text or JSON."""
    from langgraph_tiered_memory.errors import TieredMemoryError
    from langgraph_tiered_memory.graph.render import mermaid_text, render_tree
    from langgraph_tiered_memory.graph.types import normalize_entity, normalize_relation

    prefix = namespace_labels(namespace)
    if hops is not None and entity is None:
        raise typer.BadParameter("--hops is the depth around --entity: pass --entity too.")
    root = normalize_entity(entity) if entity is not None else None
    if entity is not None and not root:
        raise typer.BadParameter(f"--entity {entity!r} is empty once normalised.")
    rel = normalize_relation(relation) if relation is not None else None
    depth = hops or 1
    graph_option = _graph_option(falkordb_url, graph_name)
    # The graph of a server store made with graph=True is FalkorDB in the store's
    # own Redis, so --falkordb-url alone names that Redis too.
    store_redis = redis_url or None
    if store_redis is None:
        store_redis = falkordb_url
    if chroma_host is not None and chroma_path is None and store_redis is None:
        raise typer.BadParameter(
            "A store on a Chroma server keeps its index and its graph (graph=True) in its"
            " Redis: pass --redis-url with that Redis URL (or set REDIS_URL)."
        )
    store = open_store(
        chroma_path=chroma_path,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
        redis_url=store_redis,
        key_prefix=key_prefix,
        dims=0,  # no index: reading the graph embeds nothing
        read_only=True,
        graph=graph_option,
    )
    try:
        if root is None:
            records = graph_triples(store, prefix, relation=rel, limit=limit)
            neighbors = None
            full = len(records) >= limit
        else:
            neighbors = graph_neighbors(store, prefix, root, hops=depth, relation=rel, limit=limit)
            full = len(neighbors) >= limit
            # every triple between the entity and its neighbours, not one path each
            direct = graph_triples(store, prefix, subject=root, relation=rel, limit=limit)
            direct += graph_triples(store, prefix, object=root, relation=rel, limit=limit)
            records = [*direct, *(rec for n in neighbors for rec in n.path)]
        # an empty answer from a store that holds no triples at all: say how to build them
        empty_store = not records and not graph_triples(store, (), limit=1)
    except TieredMemoryError as e:
        fail(str(e))
    finally:
        store.close()
    if empty_store:
        typer.echo(NO_GRAPH, err=True)
    if output is GraphFormat.json:
        seen: dict[tuple[Any, ...], dict[str, Any]] = {}
        for rec in records:
            seen.setdefault(
                (tuple(rec.namespace), rec.subject, rec.relation, rec.object), rec.to_dict()
            )
        data: dict[str, Any] = {
            "namespace": list(prefix),
            "entity": root,
            "triples": [seen[k] for k in sorted(seen)],
        }
        if neighbors is not None:
            data["hops"] = depth
            data["neighbors"] = [
                {"entity": n.entity, "hops": n.hops, "path": [r.to_dict() for r in n.path]}
                for n in neighbors
            ]
        typer.echo(json.dumps(data, ensure_ascii=False))
        return
    if output is GraphFormat.mermaid:
        typer.echo(mermaid_text(records, root=root))
    else:
        typer.echo(render_tree(records, root=root, hops=depth))
    if full:
        what = "neighbours" if root is not None else "triples"
        typer.echo(f"(showing the first {limit} {what}; raise --limit for more)", err=True)
