"""`tiered-memory export`: everything held about one user, as JSON (a data-access request).

Opens the stores like `tiered-memory erase` (the long-term tier always; with a Redis
URL the short-term tier and the session saver too: each session erase removes, with its
messages and running summary) and prints the export as one JSON document, or writes it
to `--out`. Reading counts no access and refreshes no TTL.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    KeyPrefixOption,
    MemoryIndexPathOption,
    SessionPrefixOption,
)
from langgraph_tiered_memory.cli.erase import (
    FalkorDBUrlOption,
    GraphNameOption,
    NameOption,
    RedisUrlOption,
    TemplateOption,
    UserOption,
    checked_names,
    checked_user,
    open_user_stores,
    templates,
)

__all__ = ["export", "merge_exports"]

_LISTS = ("memories", "shared_memories", "short_items", "profile", "triples", "history")


def merge_exports(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One export from the exports of several stores of the same user (one per tier).

    Example:
        >>> from langgraph_tiered_memory.cli.export import merge_exports
        >>> a = {"user_id": "u1", "namespaces": {"long": [["users", "u1"]]}, "memories": [1]}
        >>> b = {"user_id": "u1", "namespaces": {"short": []}, "memories": [2]}
        >>> merge_exports([a, b])["memories"]
        [1, 2]
    """
    merged = dict(parts[0])
    merged["namespaces"] = {}
    for part in parts:
        merged["namespaces"].update(part.get("namespaces", {}))
    for name in _LISTS:
        merged[name] = [x for part in parts for x in part.get(name, [])]
    return merged


def _checked_out(out: Path) -> None:
    """Refuse an `--out` that cannot be written as a file, before anything is read."""
    if out.is_dir():
        raise typer.BadParameter(f"--out {str(out)!r} is a directory: give a file path in it.")
    if not out.parent.is_dir():
        raise typer.BadParameter(
            f"--out {str(out)!r} is in {str(out.parent)!r}, which is not a directory that"
            " exists: create it first, or choose another path."
        )


def export(
    user: UserOption,
    out: Annotated[
        Path | None,
        typer.Option(help="Write the JSON to this file (default: print it)."),
    ] = None,
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
    """Export everything held about a user as JSON: memories, sessions, triples, history."""
    from langgraph_tiered_memory.store._export import export_sessions, export_store

    uid = checked_user(user)
    extra = templates(template)
    if out is not None:
        _checked_out(out)
    names = checked_names(name)
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
        read_only=True,
    ) as opened:
        sessions = opened.sessions
        data = merge_exports(
            [
                export_store(store, uid, namespaces=extra, sessions=sessions, names=names)
                for store in opened.stores
            ]
        )
        data["sessions"] = None if opened.saver is None else export_sessions(opened.saver, sessions)
    text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    if out is None:
        typer.echo(text)
        return
    try:
        out.write_text(text + "\n", encoding="utf-8")
    except OSError as e:  # no permission, a full disk...
        raise typer.BadParameter(f"--out {str(out)!r} cannot be written: {e.strerror}.") from e
    typer.echo(f"Wrote the export of {len(data['memories'])} memories to {out}.", err=True)
