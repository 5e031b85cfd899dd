"""Option types and checks shared by the modules of the `tiered-memory` command line."""

import os
import re
from typing import Annotated, Any, NoReturn, cast

import typer

__all__ = [
    "ChromaHostOption",
    "ChromaPathOption",
    "ChromaPortOption",
    "CreateFlag",
    "JsonFlag",
    "KeyPrefixOption",
    "MemoryIndexPathOption",
    "existing_chroma_path",
    "EmbedOption",
    "fail",
    "namespace_labels",
    "open_store",
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


CreateFlag = Annotated[
    bool,
    typer.Option(
        "--create",
        help="Create the Chroma directory when it does not exist (default: refuse, so a"
        " mistyped path is an error rather than a new, empty store).",
    ),
]
"""`--create`: allow a command that writes to make a new store."""


def existing_chroma_path(path: str | None, *, create: bool | None = None) -> str:
    """The Chroma directory a command opens (option, environment, default), checked.

    Opening a store creates a missing directory, so a mistyped path would read as an
    empty store: every command that opens a store calls this first, and a missing
    directory is an error unless the command was given `--create` (`create=True`).

    Args:
        path: The `--chroma-path` value, or None.
        create: The command's `--create` flag; None for a command that only reads (it
            has no such flag, and the error does not offer it).

    Raises:
        typer.BadParameter: The directory does not exist and `create` is not true, or
            the path exists but is not a directory.

    Example:
        >>> import tempfile
        >>> from langgraph_tiered_memory.cli_common import existing_chroma_path
        >>> folder = tempfile.mkdtemp()
        >>> existing_chroma_path(folder) == folder
        True
    """
    from langgraph_tiered_memory.store._config import DEFAULT_CHROMA_PATH

    chosen = path or os.environ.get("TIERED_MEMORY_CHROMA_PATH") or DEFAULT_CHROMA_PATH
    full = os.path.expanduser(chosen)
    if os.path.isdir(full) or (create and not os.path.exists(full)):
        return chosen
    origin = (
        "--chroma-path"
        if path
        else "TIERED_MEMORY_CHROMA_PATH"
        if os.environ.get("TIERED_MEMORY_CHROMA_PATH")
        else "the default Chroma directory"
    )
    if os.path.exists(full):
        raise typer.BadParameter(f"{origin} {chosen!r} is not a directory.")
    offer = "" if create is None else ", or pass --create to make a new store there"
    raise typer.BadParameter(
        f"{origin} {chosen!r} does not exist: give the directory of an existing store"
        f" (--chroma-path DIR or TIERED_MEMORY_CHROMA_PATH) or --chroma-host for a Chroma"
        f" server{offer}."
    )


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


EmbedOption = Annotated[
    str | None,
    typer.Option(
        help="Embeddings the store was written with: 'local' (offline all-MiniLM-L6-v2)"
        " or 'provider:model'. Default: none (keyword ranking only)."
    ),
]
"""`--embed`: the store's embedder, for commands that embed queries or memories."""


def fail(message: str) -> NoReturn:
    """Print `Error: message` (URLs masked) on stderr and exit with code 1."""
    from langgraph_tiered_memory._redact import mask_urls_in

    typer.echo(f"Error: {mask_urls_in(message)}", err=True)
    raise typer.Exit(1)


_STORED_DIMS = re.compile(r"was stored with embeddings of (\d+) dimensions")


def _never_embed(texts: list[str]) -> list[list[float]]:
    raise RuntimeError(
        "This command was not given the store's embeddings (--embed) and never embeds"
        " text; this is a bug, please report it."
    )


def _stored_dims(store: Any) -> int | None:
    """The embedding size the store's data was written with, when it differs from the store's.

    Reads one item of the first namespace without counting an access; None when the
    store has no namespace or the sizes agree.
    """
    from langgraph_tiered_memory.errors import ConfigurationError

    try:  # listing checks the sizes of the namespaces it reads too
        first = store.list_namespaces(limit=1)
        if not first:
            return None
        store.search(tuple(first[0]), limit=1, filter={"$count_access": False})
    except ConfigurationError as e:
        found = _STORED_DIMS.search(str(e))
        if found is None:
            raise
        return int(found.group(1))
    return None


def open_store(
    *,
    chroma_path: str | None,
    chroma_host: str | None = None,
    chroma_port: int = 8000,
    memory_index_path: str | None = None,
    key_prefix: str = "tm",
    embed: str | None = None,
    dims: int | None = None,
    create: bool | None = None,
) -> Any:
    """A long-tier `TieredMemoryStore` on a checked Chroma directory, or a Chroma server.

    Every namespace is routed to Chroma (no Redis is needed). The directory must exist
    unless `create` is true (see `existing_chroma_path`). With `embed`, the store
    embeds with it (`dims`, default 384). Without it, the store is opened with the
    embedding size its data was written with (`dims`, or found by reading one item)
    and an embedder that is never called: reads, keyword search and statistics work,
    and `store.dims` tells a writing command that embeddings are needed.

    Raises:
        typer.BadParameter: A missing directory, conflicting options, or a store
            configuration the library refuses (message URLs masked).
    """
    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory._redact import mask_urls_in
    from langgraph_tiered_memory.errors import ConfigurationError

    options: dict[str, Any] = {"tiers": {"default": "long"}, "key_prefix": key_prefix}
    if chroma_host is not None:
        if chroma_path is not None:
            raise typer.BadParameter("Pass either --chroma-path or --chroma-host, not both.")
        import chromadb

        options["chroma_client"] = chromadb.HttpClient(host=chroma_host, port=chroma_port)
    else:
        options["chroma_path"] = existing_chroma_path(chroma_path, create=create)
    if memory_index_path is not None:
        options["memory_index_path"] = memory_index_path

    def opened(size: int | None) -> Any:
        chosen = dict(options)
        if embed is not None or size:
            chosen["index"] = {
                "dims": size or 384,
                "embed": embed if embed is not None else _never_embed,
                "fields": ["content"],
            }
        return TieredMemoryStore(**cast(Any, chosen))

    try:
        store = opened(dims)
        if embed is None and dims is None:
            found = _stored_dims(store)
            if found is not None:
                store.close()
                store = opened(found)
    except ConfigurationError as e:  # a bad --key-prefix, an unknown embedder...
        raise typer.BadParameter(mask_urls_in(str(e))) from e
    return store
