"""`tiered-memory ingest --from-langchain-chroma`: a LangChain Chroma collection as memories.

The collection is opened read-only in spirit: an existing directory and an existing
collection are required (LangChain's `Chroma(...)` would otherwise create an empty
one), and `interop.import_langchain_chroma` does the import.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from langgraph_tiered_memory.errors import ConfigurationError

__all__ = ["check_langchain_chroma", "import_collection", "report_import"]


def check_langchain_chroma(directory: Path, collection: str | None) -> Any:
    """The `langchain_chroma.Chroma` over an existing collection of `directory`.

    Raises:
        typer.BadParameter: no such directory, no collection named, or no such collection.
    """
    if collection is None:
        raise typer.BadParameter("--from-langchain-chroma needs --collection NAME.")
    if not directory.is_dir():
        raise typer.BadParameter(f"--from-langchain-chroma {directory}: no such directory.")
    import chromadb
    from langchain_chroma import Chroma

    client = chromadb.PersistentClient(path=str(directory))
    names = [c if isinstance(c, str) else c.name for c in client.list_collections()]
    if collection not in names:
        found = ", ".join(sorted(names)) or "none"
        raise typer.BadParameter(
            f"{directory} has no collection {collection!r} (collections: {found})."
        )
    return Chroma(client=client, collection_name=collection)


def import_collection(
    store: Any, source: Any, namespace: tuple[str, ...], batch_size: int, *, quiet: bool
) -> dict[str, Any]:
    """Import `source` into `namespace` under a progress bar; the summary as a dict."""
    from langgraph_tiered_memory.interop import import_langchain_chroma

    if store.index_config is None:
        raise ConfigurationError(
            "Imported memories are embedded: pass the store's embedder with --embed"
            " (e.g. --embed local); the collection's vectors are reused when they match."
        )
    columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=quiet) as bar:
        task = bar.add_task("import", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        counts = import_langchain_chroma(
            store, source, namespace, batch_size=batch_size, progress=progress
        )
    return {"namespace": list(namespace), **dataclasses.asdict(counts)}


def report_import(summary: dict[str, Any], as_json: bool) -> None:
    """Print the import's counts (one JSON line with `as_json`)."""
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(
        f"imported {summary['written']} of {summary['read']} documents into"
        f" {'/'.join(summary['namespace'])} ({summary['unchanged']} unchanged,"
        f" {summary['skipped']} skipped; vectors "
        + ("reused)" if summary["reused_vectors"] else "embedded by the store)")
    )
