"""Option types and checks shared by the modules of the `tiered-memory` command line."""

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn, cast

import typer
from typer.core import TyperGroup

__all__ = [
    "OneLineErrorsGroup",
    "ChromaHostOption",
    "ChromaPathOption",
    "ChromaPortOption",
    "CreateFlag",
    "KeyPrefixOption",
    "MemoryIndexPathOption",
    "existing_chroma_path",
    "EmbedOption",
    "fail",
    "namespace_labels",
    "open_store",
    "readable_copy",
    "reported_errors",
    "SessionPrefixOption",
]

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
        help="Legacy: a Chroma server store's index now lives in Redis (REDIS_URL); a"
        " file an earlier version kept is imported into Redis once, when the store"
        " opens, and may be removed afterwards. With --chroma-path it is refused: the"
        " index lives in the directory."
    ),
]
"""`--memory-index-path`: the store's `memory_index_path=` (legacy: imported once on a server)."""

KeyPrefixOption = Annotated[str, typer.Option(help="The store's key_prefix.")]
"""`--key-prefix`: the store's `key_prefix=` (default "tm")."""

SessionPrefixOption = Annotated[
    str, typer.Option(help="Key prefix of the session registry (the saver's session_prefix).")
]
"""`--session-prefix`: the session saver's `session_prefix=`."""


CreateFlag = Annotated[
    bool,
    typer.Option(
        "--create",
        help="Create the Chroma directory when it does not exist (default: refuse, so a"
        " mistyped path is an error rather than a new, empty store).",
    ),
]
"""`--create`: allow a command that writes to make a new store."""


_CLICK_ERROR: Any = typer.BadParameter.__mro__[2]
"""Click's `ClickException` (vendored by Typer since 0.26): every error Typer boxes."""


class OneLineErrorsGroup(TyperGroup):
    """The app's root group: every error is one `Error: message` line and exit code 2.

    Typer prints an error in a Rich panel as wide as the console (80 columns off a
    terminal), which breaks a long message, one naming a path say, over several lines,
    and `fail` used to print a plain line with exit code 1. Here every Click error, a
    usage error as much as a refused value or a failed command, is printed on stderr
    as one line, whole, and the command exits with code 2.
    """

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        """Parse the root options; an error in them is one line."""
        with _one_line_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; an error is one line."""
        with _one_line_errors():
            return super().invoke(ctx)


@contextmanager
def _one_line_errors() -> Iterator[None]:
    try:
        yield
    except _CLICK_ERROR as e:
        message = " ".join(str(e.format_message()).split())
        typer.echo(f"Error: {message}", err=True)
        raise typer.Exit(2) from e


def _holds_store(directory: str) -> bool:
    """Whether `directory` holds an embedded store's files (or a plain Chroma's)."""
    from langgraph_tiered_memory.store.tiers.sqlite_db import MIRROR_FILE

    return any(os.path.isfile(os.path.join(directory, f)) for f in (MIRROR_FILE, "chroma.sqlite3"))


def readable_copy(directory: str) -> str:
    """A copy of the store in `directory` to open for reading, removed when the command ends.

    Opening a store writes to its directory even when nothing is stored (Chroma's own
    database, the lock file), so commands that only read open this copy, made in the
    temporary folder, and the store's own files are never touched. The copy costs
    the time and disk space of the store's files. A store that another process has
    open is refused (its files may be half-written), as opening it would be.
    """
    import atexit
    import shutil
    import tempfile

    import click

    from langgraph_tiered_memory.store.tiers._dirlock import LOCK_FILE, unused_directory

    holder = tempfile.TemporaryDirectory(prefix="tiered-memory-read-")
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(holder.cleanup)
    else:
        atexit.register(holder.cleanup)
    copy = os.path.join(holder.name, "store")
    from langgraph_tiered_memory.errors import ChromaDirectoryInUseError

    source = os.path.expanduser(directory)
    try:
        with unused_directory(source):  # a store open elsewhere may be mid-write
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns(LOCK_FILE))
    except ChromaDirectoryInUseError as e:
        raise typer.BadParameter(str(e)) from e
    return copy


def existing_chroma_path(path: str | None, *, create: bool | None = None) -> str:
    """The Chroma directory a command opens (option, environment, default), checked.

    Opening a store creates a missing directory and its files, so a mistyped path would
    read as an empty store: every command that opens a store calls this first, and a
    missing directory, or one that holds no store (no `chroma.sqlite3` nor
    `tiered-memory-docs.sqlite3`), is an error unless the command was given `--create`
    (`create=True`).

    Args:
        path: The `--chroma-path` value, or None.
        create: The command's `--create` flag; None for a command that only reads (it
            has no such flag, and the error does not offer it).

    Raises:
        typer.BadParameter: The directory does not exist or holds no store and `create`
            is not true, or the path exists but is not a directory.

    Example:
        >>> import tempfile
        >>> from langgraph_tiered_memory.cli.common import existing_chroma_path
        >>> folder = tempfile.mkdtemp()
        >>> existing_chroma_path(folder, create=True) == folder
        True
    """
    from langgraph_tiered_memory.store._config import DEFAULT_CHROMA_PATH

    chosen = path or os.environ.get("TIERED_MEMORY_CHROMA_PATH") or DEFAULT_CHROMA_PATH
    full = os.path.expanduser(chosen)
    if (os.path.isdir(full) and (create or _holds_store(full))) or (
        create and not os.path.exists(full)
    ):
        return chosen
    origin = (
        "--chroma-path"
        if path
        else "TIERED_MEMORY_CHROMA_PATH"
        if os.environ.get("TIERED_MEMORY_CHROMA_PATH")
        else "the default Chroma directory"
    )
    if os.path.isdir(full):
        make = (
            "pass --create to make a new store there"
            if create is not None
            else "a command that writes (ingest) makes a new store there with --create"
        )
        raise typer.BadParameter(
            f"{origin} {chosen!r} holds no tiered-memory store: give the directory of an"
            f" existing store, or {make}."
        )
    if os.path.exists(full):
        raise typer.BadParameter(f"{origin} {chosen!r} is not a directory.")
    offer = "" if create is None else ", or pass --create to make a new store there"
    raise typer.BadParameter(
        f"{origin} {chosen!r} does not exist: give the directory of an existing store"
        f" (--chroma-path DIR or TIERED_MEMORY_CHROMA_PATH) or --chroma-host for a Chroma"
        f" server{offer}."
    )


def namespace_labels(namespace: str, option: str = "--namespace") -> tuple[str, ...]:
    """A namespace given on the command line (labels joined by '/') as a namespace tuple.

    Every command parses its namespace here, so all refuse the same values: an empty
    or malformed one (an unset shell variable, `/`, `a//b`), and labels the store
    refuses (a period, as in `users/u1.x` or `users/../u2`; a NUL; over 256 bytes).

    Args:
        namespace: The value given.
        option: How the command names it in messages (`--namespace`, `NAMESPACE`).

    Raises:
        typer.BadParameter: The value is not a valid namespace.

    Example:
        >>> from langgraph_tiered_memory.cli.common import namespace_labels
        >>> namespace_labels("users/u1")
        ('users', 'u1')
    """
    from langgraph.store.base import InvalidNamespaceError

    from langgraph_tiered_memory.store._validate import validate_namespace

    parts = tuple(namespace.split("/"))
    if not namespace.strip() or any(not p for p in parts):
        raise typer.BadParameter(
            f"{option} {namespace!r} has an empty label: give labels joined by '/'"
            " such as users/u1."
        )
    try:
        return validate_namespace(parts)
    except InvalidNamespaceError as e:
        raise typer.BadParameter(f"{option} {namespace!r} is not a valid namespace: {e}") from e


EmbedOption = Annotated[
    str | None,
    typer.Option(
        help="Embeddings the store was written with: 'local' (offline"
        " multilingual-e5-small; 'local:e5-centred' for a store written by 0.1.0),"
        " 'local:minilm' (all-MiniLM-L6-v2) or 'provider:model'."
        " Default: none (keyword ranking only)."
    ),
]
"""`--embed`: the store's embedder, for commands that embed queries or memories."""


def fail(message: str) -> NoReturn:
    """End the command with `message` (URLs masked): one `Error:` line, exit code 2."""
    from langgraph_tiered_memory.privacy._redact import mask_urls_in

    raise _CLICK_ERROR(mask_urls_in(message))


@contextmanager
def reported_errors(redis_url: str | None) -> Iterator[None]:
    """Library and Redis errors as one `Error:` line (see `fail`)."""
    import redis

    from langgraph_tiered_memory.errors import TieredMemoryError
    from langgraph_tiered_memory.privacy._redact import mask_url

    try:
        yield
    except TieredMemoryError as e:
        fail(str(e))
    except redis.RedisError as e:  # a Redis that does not answer, a refused connection
        fail(f"Redis at {mask_url(redis_url or '')} did not answer: {e}")


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
    redis_url: str | None = None,
    key_prefix: str = "tm",
    embed: str | None = None,
    dims: int | None = None,
    create: bool | None = None,
    read_only: bool = False,
    graph: Any = None,
) -> Any:
    """A long-tier `TieredMemoryStore` on a checked Chroma directory, or a Chroma server.

    Every namespace is routed to Chroma. Beside a directory no Redis is needed; on a
    Chroma server the long tier's index is in `redis_url` (default `REDIS_URL`). The
    directory must exist
    unless `create` is true (see `existing_chroma_path`). With `embed`, the store
    embeds with it (`dims`, default 384). Without it, the store is opened with the
    embedding size its data was written with (`dims`, or found by reading one item)
    and an embedder that is never called: reads, keyword search and statistics work,
    and `store.dims` tells a writing command that embeddings are needed. With
    `read_only`, a directory's store is opened on a copy (`readable_copy`). `graph` is
    the store's `graph=`; `dims=0` opens it without an index.

    Raises:
        typer.BadParameter: A missing directory, conflicting options, or a store
            configuration the library refuses (message URLs masked).
    """
    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.errors import ConfigurationError
    from langgraph_tiered_memory.privacy._redact import mask_urls_in

    options: dict[str, Any] = {"tiers": {"default": "long"}, "key_prefix": key_prefix}
    if graph is not None:
        options["graph"] = graph
    if chroma_host is not None:
        if chroma_path is not None:
            raise typer.BadParameter("Pass either --chroma-path or --chroma-host, not both.")
        from langgraph_tiered_memory.errors import BackendUnavailableError
        from langgraph_tiered_memory.store._backends import chroma_http_client

        try:
            options["chroma_client"] = chroma_http_client(f"http://{chroma_host}:{chroma_port}")
        except (ConfigurationError, BackendUnavailableError) as e:
            fail(mask_urls_in(str(e)))
        if redis_url is not None:
            options["redis_url"] = redis_url
    else:
        options["chroma_path"] = existing_chroma_path(chroma_path, create=create)
        if read_only:
            options["chroma_path"] = readable_copy(options["chroma_path"])
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
