"""`tiered-memory scrub-chroma`: finish an erasure in a stopped Chroma server's files.

A store on a Chroma server erases through the server's API, which leaves bytes the
server keeps on its own disk: deleted rows in the free pages of `chroma.sqlite3`, the
HNSW directories of deleted collections, and in the HNSW files the vectors of deleted
records and uninitialised memory in their unused capacity. On the server's host, stop
the server, run ``tiered-memory scrub-chroma --path DIR`` on its data directory (its
``chroma run --path``), and start it again. The command refuses a directory that a
running process holds open.
"""

import json
from typing import Annotated

import typer

from langgraph_tiered_memory.cli.common import fail

__all__ = ["scrub_chroma"]


def scrub_chroma(
    path: Annotated[
        str,
        typer.Option(
            "--path",
            help="Data directory of the STOPPED Chroma server (its `chroma run --path`).",
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was done as one line of JSON.")
    ] = False,
) -> None:
    """Scrub a stopped Chroma server's files after erasures (stop it first)."""
    from langgraph_tiered_memory.errors import TieredMemoryError
    from langgraph_tiered_memory.store.tiers.chroma_scrub import scrub_chroma_dir

    try:
        done = scrub_chroma_dir(path)
    except TieredMemoryError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps({"path": path, **done}))
        return
    typer.echo(
        f"Scrubbed {path}: chroma.sqlite3 vacuumed, {done['orphan_segments']} HNSW"
        f" directories of deleted collections removed, {done['hnsw_files']} HNSW files"
        " zeroed where they held no live record. Start the server again."
    )
