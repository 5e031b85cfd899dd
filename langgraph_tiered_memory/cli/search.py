"""`tiered-memory search`: search a namespace's memories and show how each score was made."""

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    EmbedOption,
    KeyPrefixOption,
    MemoryIndexPathOption,
    fail,
    namespace_labels,
    open_store,
)

__all__ = ["search"]

_CAPTION = (
    "score = weighted sum of rel, imp, rec, acc, user and time, so it can exceed 1."
    " rel: relevance, the fused retrieval score (0..1); sem/kw/graph: rank of the memory"
    " in the semantic, keyword and knowledge-graph lists (-: not in that list; graph is"
    " shown when the graph found a hit);"
    " imp: importance, rec: recency (0..1); acc: access, log1p(access count);"
    " user (with --user): 1 in that user's own namespace;"
    " time (shown when the query asks when or names a period): 1 for a memory that answers it."
)


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


def _columns(hits: list[Any], *, with_user: bool) -> list[tuple[str, Callable[[Any], str]]]:
    """The figure columns: graph, user and time only when they say something.

    Graph when a hit came from the graph, user with --user, time when a hit answers
    the query's time question.
    """
    columns: list[tuple[str, Callable[[Any], str]]] = [
        ("score", lambda h: f"{h.score:.2f}"),
        ("rel", lambda h: f"{h.breakdown.relevance:.2f}"),
        ("sem", lambda h: _rank(h.breakdown.semantic_rank)),
        ("kw", lambda h: _rank(h.breakdown.keyword_rank)),
    ]
    if any(h.breakdown.graph_rank is not None for h in hits):
        columns.append(("graph", lambda h: _rank(h.breakdown.graph_rank)))
    columns += [
        ("imp", lambda h: f"{h.breakdown.importance:.2f}"),
        ("rec", lambda h: f"{h.breakdown.recency:.2f}"),
        ("acc", lambda h: f"{h.breakdown.access:.2f}"),
    ]
    if with_user:
        columns.append(("user", lambda h: f"{h.breakdown.user:.0f}"))
    if any(h.breakdown.time for h in hits):
        columns.append(("time", lambda h: f"{h.breakdown.time:.0f}"))
    return columns


def _hit_json(hit: Any) -> dict[str, Any]:
    entry = hit.entry
    return {
        "namespace": list(entry.namespace),
        "key": entry.id,
        "content": entry.content,
        "score": hit.score,
        "breakdown": asdict(hit.breakdown),
        "access_count": entry.access_count,
    }


def search(
    namespace: Annotated[
        str,
        typer.Argument(
            help="Namespace prefix, labels joined by '/' (e.g. users/u1); its"
            " sub-namespaces are searched too."
        ),
    ],
    query: Annotated[str, typer.Argument(help="What to search for, in plain words.")],
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            help="The caller's user id: with --embed, contextual retrieval, where that"
            " user's own memories score higher (the user column).",
        ),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most hits to show.")] = 10,
    retrieval: Annotated[
        str | None,
        typer.Option(help="semantic, keyword, hybrid or contextual (default: the store's)."),
    ] = None,
    embed: EmbedOption = None,
    dims: Annotated[
        int | None,
        typer.Option(
            min=1, help="Embedding size the store was created with (default: 384 with --embed)."
        ),
    ] = None,
    chroma_path: ChromaPathOption = None,
    chroma_host: ChromaHostOption = None,
    chroma_port: ChromaPortOption = 8000,
    memory_index_path: MemoryIndexPathOption = None,
    key_prefix: KeyPrefixOption = "tm",
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
) -> None:
    """Search memories and show each hit's score breakdown. Reading counts no access."""
    from langgraph_tiered_memory.errors import TieredMemoryError
    from langgraph_tiered_memory.ranking.modes import RETRIEVAL_MODES

    prefix = namespace_labels(namespace, "NAMESPACE")
    if embed is None:
        if retrieval not in (None, "keyword"):
            raise typer.BadParameter(
                f"--retrieval {retrieval} embeds the query: pass --embed with the store's"
                " embeddings (e.g. --embed local)."
            )
        retrieval = "keyword"  # without an embedder only keyword retrieval can run
    elif user is not None and retrieval is None:
        retrieval = "contextual"  # the user's own memories count (the user column)
    if not query.strip():
        raise typer.BadParameter("QUERY is empty: give words to search for.")
    if retrieval is not None and retrieval not in RETRIEVAL_MODES:
        raise typer.BadParameter(
            f"--retrieval must be one of {', '.join(RETRIEVAL_MODES)}, got {retrieval!r}."
        )
    store = open_store(
        chroma_path=chroma_path,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
        memory_index_path=memory_index_path,
        key_prefix=key_prefix,
        embed=embed,
        dims=dims,
        read_only=True,
    )
    try:
        hits = store.search_memories(
            prefix,
            query,
            filter={"$count_access": False},  # a look from the shell is not a use
            limit=limit,
            retrieval=retrieval,
            user_id=user,
        )
    except TieredMemoryError as e:
        fail(str(e))
    finally:
        stored_dims = store.dims
        store.close()
    if embed is None and stored_dims and not hits:
        # keyword ranking found nothing, but the store can rank by meaning
        typer.echo(
            f"This store holds {stored_dims}-dimension embeddings: pass --embed with the"
            " ones it was written with (e.g. --embed local) to search by meaning too.",
            err=True,
        )
    if as_json:
        data = {"namespace": list(prefix), "query": query, "hits": [_hit_json(h) for h in hits]}
        typer.echo(json.dumps(data, ensure_ascii=False, allow_nan=False))
        return
    console = Console()
    if not hits:
        console.print(f"no memories under {escape('/'.join(prefix))} match {escape(query)!r}")
        return
    mode = "keyword only (pass --embed for semantic)" if embed is None else f"embed {embed}"
    table = Table(
        title=f"{len(hits)} hits for {query!r} ({mode})",
        caption=_CAPTION,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    columns = _columns(hits, with_user=user is not None)
    table.add_column("namespace", overflow="fold")
    table.add_column("key", overflow="fold")
    for header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("content", overflow="fold", min_width=12, ratio=1)
    for hit in hits:
        table.add_row(
            escape("/".join(hit.entry.namespace)),
            escape(hit.entry.id),
            *(cell(hit) for _, cell in columns),
            escape(hit.entry.content[:160]),
        )
    console.print(table)
