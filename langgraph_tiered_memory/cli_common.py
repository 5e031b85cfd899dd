"""Option types and checks shared by the modules of the `tiered-memory` command line."""

import os
from typing import Annotated

import typer

__all__ = [
    "ChromaHostOption",
    "ChromaPathOption",
    "ChromaPortOption",
    "JsonFlag",
    "KeyPrefixOption",
    "MemoryIndexPathOption",
    "existing_chroma_path",
    "namespace_labels",
]

JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="End the output with one line holding every figure as JSON."),
]
"""`--json` of the benchmarks: end the output with one line of JSON."""

ChromaPathOption = Annotated[
    str | None,
    typer.Option(
        help="Chroma directory of an existing store (default: TIERED_MEMORY_CHROMA_PATH or"
        " ./.tiered-memory/chroma)."
    ),
]
"""`--chroma-path`: the embedded Chroma directory of a store that already exists."""

ChromaHostOption = Annotated[
    str | None,
    typer.Option(help="Host of a Chroma server (`chroma run`) instead of --chroma-path."),
]
"""`--chroma-host`: read a Chroma server instead of an embedded directory."""

ChromaPortOption = Annotated[
    int, typer.Option(min=1, max=65535, help="Port of the Chroma server (with --chroma-host).")
]
"""`--chroma-port` of `--chroma-host`."""

MemoryIndexPathOption = Annotated[
    str | None,
    typer.Option(
        help="SQLite file of the memory index, for a store on a Chroma server (its"
        " memory_index_path=); with an embedded Chroma it lives in the directory."
    ),
]
"""`--memory-index-path`: the store's `memory_index_path=` (Chroma server stores)."""

KeyPrefixOption = Annotated[str, typer.Option(help="The store's key_prefix.")]
"""`--key-prefix`: the store's `key_prefix=` (default "tm")."""


def existing_chroma_path(path: str | None) -> str:
    """The Chroma directory a command reads (option, environment, default), which must exist.

    Opening a store creates a missing directory, so a mistyped path would read as an
    empty store; commands that inspect an existing store call this first.

    Raises:
        typer.BadParameter: The directory does not exist (or is not a directory).

    Example:
        >>> import tempfile
        >>> from langgraph_tiered_memory.cli_common import existing_chroma_path
        >>> folder = tempfile.mkdtemp()
        >>> existing_chroma_path(folder) == folder
        True
    """
    from langgraph_tiered_memory.store._config import DEFAULT_CHROMA_PATH

    chosen = path or os.environ.get("TIERED_MEMORY_CHROMA_PATH") or DEFAULT_CHROMA_PATH
    if not os.path.isdir(os.path.expanduser(chosen)):
        origin = (
            "--chroma-path"
            if path
            else "TIERED_MEMORY_CHROMA_PATH"
            if os.environ.get("TIERED_MEMORY_CHROMA_PATH")
            else "the default Chroma directory"
        )
        what = "is not a directory" if os.path.exists(chosen) else "does not exist"
        raise typer.BadParameter(
            f"{origin} {chosen!r} {what}: give the directory of an existing store"
            " (--chroma-path DIR or TIERED_MEMORY_CHROMA_PATH), or --chroma-host for a"
            " Chroma server."
        )
    return chosen


def namespace_labels(namespace: str) -> tuple[str, ...]:
    """A `--namespace` value (labels joined by '/') as a namespace tuple.

    An empty or malformed value (an unset shell variable, `/`, `a//b`) is an error.

    Example:
        >>> from langgraph_tiered_memory.cli_common import namespace_labels
        >>> namespace_labels("users/u1")
        ('users', 'u1')
    """
    parts = tuple(namespace.split("/"))
    if not namespace.strip() or any(not p for p in parts):
        raise typer.BadParameter(
            f"--namespace {namespace!r} has an empty label: give labels joined by '/'"
            " such as users/u1."
        )
    return parts
