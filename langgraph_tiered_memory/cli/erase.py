"""`tiered-memory erase`: erase one user from a store (and its sessions) from the shell.

The long-term tier is opened like the other commands open it (`--chroma-path` or
`--chroma-host`, `--memory-index-path`, `--key-prefix`). With a Redis URL
(`--redis-url` or `REDIS_URL`) the short-term tier and the sessions are erased too:
the short-term items of the same key prefix, and the checkpoints, registry entries and
running summaries of the session saver whose registry uses `--session-prefix`.
"""

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Annotated, Any, NamedTuple

import typer

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    KeyPrefixOption,
    MemoryIndexPathOption,
    SessionPrefixOption,
    existing_chroma_path,
    namespace_labels,
    open_store,
    reported_errors,
)

__all__ = [
    "FalkorDBUrlOption",
    "GraphNameOption",
    "NameOption",
    "RedisUrlOption",
    "TemplateOption",
    "UserOption",
    "UserStores",
    "checked_names",
    "checked_user",
    "erase",
    "open_user_stores",
    "templates",
]

UserOption = Annotated[str, typer.Option("--user", help="The user's id.")]
"""`--user`: the user whose data the command reads or erases."""

RedisUrlOption = Annotated[
    str | None,
    typer.Option(
        envvar="REDIS_URL",
        help="Redis of the short-term tier and the sessions (default: REDIS_URL); without"
        " it only the long-term tier is read.",
    ),
]
"""`--redis-url`: reach the short-term tier and the session saver too."""

TemplateOption = Annotated[
    list[str] | None,
    typer.Option(
        "--template",
        help="Another namespace layout of the user's data, labels joined by '/' with"
        " {user_id} for the id (repeatable), e.g. notes/{user_id}.",
    ),
]
"""`--template`: more namespace templates of the user's data (`namespaces=`)."""

NameOption = Annotated[
    list[str] | None,
    typer.Option(
        "--name",
        help="A name the user goes by (repeatable): knowledge-graph triples of shared"
        " namespaces that mention it are the user's too. The user id is no mention"
        " unless given here.",
    ),
]
"""`--name`: names the user goes by (`names=`)."""


def templates(values: list[str] | None) -> list[tuple[str, ...]]:
    """`--template` values as namespace templates.

    Example:
        >>> from langgraph_tiered_memory.cli.erase import templates
        >>> templates(["notes/{user_id}"])
        [('notes', '{user_id}')]
    """
    return [namespace_labels(value, "--template") for value in values or []]


FalkorDBUrlOption = Annotated[
    str | None,
    typer.Option(
        help="FalkorDB of the store's knowledge graph (a store opened with graph={'backend':"
        " 'falkordb', ...}); without it only the embedded graph tables are reached."
    ),
]
"""`--falkordb-url`: the store's FalkorDB graph."""

GraphNameOption = Annotated[
    str | None,
    typer.Option(help="The FalkorDB graph's name (default: `<key prefix>_graph`)."),
]
"""`--graph-name`: the FalkorDB graph of `--falkordb-url`."""


def _falkordb_graph(url: str | None, name: str | None, key_prefix: str) -> Any:
    """The store's FalkorDB graph, or None without `--falkordb-url`."""
    if url is None:
        if name is not None:
            raise typer.BadParameter("--graph-name names a FalkorDB graph: pass --falkordb-url.")
        return None
    try:
        import falkordb  # noqa: F401  (the client the backend needs)
    except ImportError as e:
        raise typer.BadParameter(
            "--falkordb-url needs the FalkorDB client: pip install"
            " 'langgraph-tiered-memory[graph]'."
        ) from e
    from langgraph_tiered_memory.graph.falkordb import FalkorDBGraph

    return FalkorDBGraph(url=url, graph_name=name or f"{key_prefix}_graph")


class UserStores(NamedTuple):
    """What a user command works on: the stores of each tier and the session saver."""

    stores: list[Any]
    """The long-tier store, then the short-tier store when a Redis URL was given."""
    saver: Any
    """A `RedisSessionSaver` on the Redis URL, or None."""
    sessions: list[str]
    """The user's sessions in the saver (none without it)."""


@contextmanager
def open_user_stores(
    uid: str,
    *,
    chroma_path: str | None,
    chroma_host: str | None,
    chroma_port: int,
    memory_index_path: str | None,
    key_prefix: str,
    redis_url: str | None,
    session_prefix: str,
    falkordb_url: str | None = None,
    graph_name: str | None = None,
    read_only: bool = False,
) -> Iterator[UserStores]:
    """Open the long tier (checked like every command), and Redis when a URL is given.

    With `falkordb_url`, the long-tier store reads and erases that FalkorDB graph as
    its knowledge graph. With `read_only`, a Chroma directory is read through a copy.
    Library and Redis errors, in the block too, end the command (`reported_errors`).
    """
    with reported_errors(redis_url), ExitStack() as stack:
        if chroma_host is None:
            chroma_path = existing_chroma_path(chroma_path)
        graph = _falkordb_graph(falkordb_url, graph_name, key_prefix)
        if graph is not None:
            stack.callback(graph.close)
        long_store = open_store(
            chroma_path=chroma_path,
            chroma_host=chroma_host,
            chroma_port=chroma_port,
            memory_index_path=memory_index_path,
            redis_url=redis_url,
            key_prefix=key_prefix,
            read_only=read_only,
        )
        stack.callback(long_store.close)
        if graph is not None:
            long_store.graph = graph  # erase and export only read it and delete from it
        stores = [long_store]
        saver = None
        if redis_url is not None:
            from langgraph_tiered_memory import RedisSessionSaver, TieredMemoryStore

            short_store = TieredMemoryStore(
                redis_url=redis_url, tiers={"default": "short"}, key_prefix=key_prefix
            )
            stack.callback(short_store.close)
            stores.append(short_store)
            saver = stack.enter_context(
                RedisSessionSaver.from_conn_string(redis_url, session_prefix=session_prefix)
            )
        yield UserStores(stores, saver, [] if saver is None else saver.user_sessions(uid))


def checked_user(user: str) -> str:
    """The `--user` value checked as a user id (a bad one is a usage error)."""
    from langgraph_tiered_memory.privacy.erasure import check_user_id

    try:
        return check_user_id(user)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--user") from e


def checked_names(names: list[str] | None) -> tuple[str, ...]:
    """The `--name` values checked (a blank one is a usage error)."""
    from langgraph_tiered_memory.store._erase import check_names

    try:
        return check_names(names or [])
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--name") from e


def erase(
    user: UserOption,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be removed; remove nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the receipt as JSON (counts and hashes).")
    ] = False,
    template: TemplateOption = None,
    name: NameOption = None,
    redis_url: RedisUrlOption = None,
    session_prefix: SessionPrefixOption = "tm_session",
    falkordb_url: FalkorDBUrlOption = None,
    graph_name: GraphNameOption = None,
    chroma_path: ChromaPathOption = None,
    chroma_host: ChromaHostOption = None,
    chroma_port: ChromaPortOption = 8000,
    memory_index_path: MemoryIndexPathOption = None,
    key_prefix: KeyPrefixOption = "tm",
) -> None:
    """Erase everything held about a user; prints a receipt without content or raw ids."""
    from langgraph_tiered_memory.privacy.erasure import ErasureReceipt
    from langgraph_tiered_memory.store._erase import KEPT_NO_SESSIONS, erase_store

    uid = checked_user(user)
    extra = templates(template)
    names = checked_names(name)
    receipt = ErasureReceipt.for_user(uid, dry_run=dry_run)
    with open_user_stores(
        uid,
        chroma_path=chroma_path,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
        memory_index_path=memory_index_path,
        key_prefix=key_prefix,
        redis_url=redis_url,
        session_prefix=session_prefix,
        falkordb_url=falkordb_url,
        graph_name=graph_name,
    ) as opened:
        # Sessions go last: until then their ids find shared memories by session.
        for store in opened.stores:
            receipt.merge(
                erase_store(
                    store,
                    uid,
                    dry_run=dry_run,
                    namespaces=extra,
                    sessions=opened.sessions,
                    names=names,
                )
            )
        if opened.saver is None:
            receipt.keep(KEPT_NO_SESSIONS)
        else:
            receipt.merge(opened.saver.erase_user(uid, dry_run=dry_run))
    receipt.finish()
    if as_json:
        typer.echo(json.dumps(receipt.to_dict(), ensure_ascii=False))
        return
    _print(receipt, reached_sessions=opened.saver is not None)


def _print(receipt: Any, *, reached_sessions: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    verb = "would remove" if receipt.dry_run else "removed"
    table = Table(
        "place",
        "records",
        title=f"erase {verb} {receipt.total} records (subject {receipt.subject[:16]}…)",
    )
    for place, n in sorted(receipt.counts.items()):
        table.add_row(place, str(n))
    console = Console()
    console.print(table)
    for reason in receipt.kept:
        console.print(f"kept: {reason}")
    if not reached_sessions:
        console.print("[dim]No Redis URL (--redis-url or REDIS_URL): sessions not reached.[/dim]")
