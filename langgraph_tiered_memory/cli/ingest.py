"""`tiered-memory ingest`: load memories into a namespace from a JSONL file.

One memory value per line, a JSON object with a `content` string and any other
fields (`importance`, `memory_type`, `occurred_at`, your own); an optional `key` field
is the memory's key (removed from the value), otherwise the key is a hash of the value,
so loading the same file twice writes each memory once. Memories are written with
`store.batch`, `--batch-size` at a time, under a progress bar (`write_records`, which
the benchmarks' `tiered-memory bench ingest-locomo` reuses for LoCoMo files).
`--from-langchain-chroma DIR --collection NAME` imports a LangChain Chroma collection
instead (`interop.import_langchain_chroma`).
"""

import dataclasses
import functools
import hashlib
import json
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    CreateFlag,
    EmbedOption,
    KeyPrefixOption,
    MemoryIndexPathOption,
    fail,
    namespace_labels,
    open_store,
)

__all__ = ["Record", "check_record", "ingest", "write_records"]

Record = tuple[tuple[str, ...], str, dict[str, Any]]
"""One memory to write: namespace, key, value."""


class IngestFormat(str, Enum):
    """Input formats of `tiered-memory ingest`."""

    auto = "auto"
    jsonl = "jsonl"
    locomo = "locomo"


LOCOMO_MOVED = (
    "LoCoMo files are read by the benchmarks, which are not part of the installed package:"
    " from a checkout, pip install -e ./benchmarks, then run"
    " `tiered-memory bench ingest-locomo FILE --namespace NS` (same options)."
)
"""The error of `ingest --format locomo` (and of a LoCoMo file given to `ingest`)."""


def _detect(path: Path) -> IngestFormat:
    """LoCoMo for a file holding one JSON list, else JSONL."""
    with path.open("rb") as f:
        head = f.read(4096).lstrip()
    return IngestFormat.locomo if head.startswith(b"[") else IngestFormat.jsonl


def check_record(where: str, namespace: tuple[str, ...], key: str, value: Any) -> None:
    """Refuse a memory the store would refuse, before anything is written.

    The store's own checks: the namespace, the key, the value's text, depth and JSON,
    and the memory fields (importance, memory_type, occurred_at).
    """
    from langgraph.store.base import InvalidNamespaceError

    from langgraph_tiered_memory.errors import InvalidItemError
    from langgraph_tiered_memory.memory import memory_fields
    from langgraph_tiered_memory.store._validate import (
        encode_value,
        validate_key,
        validate_namespace,
    )

    try:
        validate_namespace(namespace)
        validate_key(key)
        encode_value(namespace, key, value)
        memory_fields(value, key=key)
    except (InvalidItemError, InvalidNamespaceError) as e:
        raise typer.BadParameter(f"{where}: {e}") from e


def _jsonl_records(path: Path, namespace: tuple[str, ...]) -> list[Record]:
    """Every line of a JSONL file as a memory, checked before anything is written.

    A line that is not UTF-8 or JSON, too deeply nested to parse, a value the store
    would refuse, or a key an earlier line already has is an error naming the line.
    """
    from langgraph_tiered_memory.store._validate import MAX_VALUE_DEPTH

    records: list[Record] = []
    lines: dict[str, int] = {}  # key -> the line that has it
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise typer.BadParameter(
                    f"{where} is not UTF-8 text (byte {e.start + 1} of the line): save the"
                    " file as UTF-8."
                ) from e
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as e:
                raise typer.BadParameter(f"{where} is not JSON: {e}.") from e
            except RecursionError as e:
                raise typer.BadParameter(
                    f"{where} is nested too deeply to read: values may nest at most"
                    f" {MAX_VALUE_DEPTH} levels of objects and lists; flatten it, or store"
                    " the deep part as a JSON string."
                ) from e
            if not isinstance(value, dict):
                raise typer.BadParameter(
                    f"{where} is not a JSON object: each line holds one memory value"
                    ' such as {"content": "..."}.'
                )
            if not isinstance(value.get("content"), str) or not value["content"].strip():
                raise typer.BadParameter(f"{where} has no 'content' string.")
            given = value.pop("key", None)
            if given is None:
                text = json.dumps(value, sort_keys=True, ensure_ascii=False)
                digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
                key = "m-" + digest[:16]
            elif not isinstance(given, str) or not given:
                raise typer.BadParameter(f"{where}: 'key' must be a non-empty string.")
            else:
                key = given
            check_record(where, namespace, key, value)
            if key in lines:
                first = lines[key]
                raise typer.BadParameter(
                    f"{where} repeats the key {key!r} of line {first}: the later line would"
                    " overwrite the earlier one; give each line its own key, or remove one."
                    if given is not None
                    else f"{where} repeats the memory of line {first} (same value, key"
                    f" {key!r}): remove the repeated line."
                )
            lines[key] = number
            records.append((namespace, key, value))
    return records


def _langchain_chroma(directory: Path, collection: str | None) -> Any:
    """The `langchain_chroma.Chroma` over an existing collection of `directory`.

    LangChain's `Chroma(...)` would create a missing directory or collection, so both
    must exist.
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


def _import_collection(
    store: Any, source: Any, namespace: tuple[str, ...], batch_size: int, *, quiet: bool
) -> dict[str, Any]:
    """Import `source` into `namespace` under a progress bar; the summary as a dict."""
    from langgraph_tiered_memory.errors import ConfigurationError
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


def ingest(
    namespace: Annotated[
        str,
        typer.Option(help="Namespace to write to, labels joined by '/' (e.g. users/u1)."),
    ],
    file: Annotated[
        Path | None,
        typer.Argument(
            help="JSONL file: one memory value per line.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    input_format: Annotated[
        IngestFormat,
        typer.Option("--format", help="auto or jsonl (LoCoMo: `bench ingest-locomo`)."),
    ] = IngestFormat.auto,
    batch_size: Annotated[int, typer.Option(min=1, help="Memories per store.batch call.")] = 64,
    embed: EmbedOption = None,
    dims: Annotated[
        int | None,
        typer.Option(min=1, help="Embedding size of --embed (default 384)."),
    ] = None,
    chroma_path: ChromaPathOption = None,
    create: CreateFlag = False,
    chroma_host: ChromaHostOption = None,
    chroma_port: ChromaPortOption = 8000,
    memory_index_path: MemoryIndexPathOption = None,
    key_prefix: KeyPrefixOption = "tm",
    from_langchain_chroma: Annotated[
        Path | None,
        typer.Option(
            help="Import a langchain_chroma.Chroma persisted in this directory instead of FILE.",
            file_okay=False,
        ),
    ] = None,
    collection: Annotated[
        str | None,
        typer.Option(help="With --from-langchain-chroma: the collection to import."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON (no progress bar).")
    ] = False,
) -> None:
    """Load memories from a JSONL file into a namespace, in batches.

    JSONL: one JSON object per line with a `content` string and any other fields
    (`importance`, `memory_type`, `occurred_at`, ...); an optional `key` field is the
    memory's key, otherwise a hash of the value (loading a file twice writes each
    memory once). Every line is checked before anything is written. LoCoMo files are
    loaded by `tiered-memory bench ingest-locomo` (the benchmarks, from a checkout).
    With --from-langchain-chroma DIR --collection NAME, the documents of that LangChain
    Chroma collection are imported instead (its vectors reused when the store's --embed
    makes the same ones).
    """
    from langgraph_tiered_memory.errors import TieredMemoryError

    prefix = namespace_labels(namespace)
    if (file is None) == (from_langchain_chroma is None):
        raise typer.BadParameter("Give either FILE or --from-langchain-chroma DIR (not both).")
    opening = functools.partial(
        open_store,
        chroma_path=chroma_path,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
        memory_index_path=memory_index_path,
        key_prefix=key_prefix,
        embed=embed,
        dims=dims,
        create=create,
    )
    if from_langchain_chroma is not None:
        source = _langchain_chroma(from_langchain_chroma, collection)
        store = opening()
        try:
            done = _import_collection(store, source, prefix, batch_size, quiet=as_json)
        except TieredMemoryError as e:
            fail(str(e))
        finally:
            store.close()
        if as_json:
            typer.echo(json.dumps(done, ensure_ascii=False))
            return
        typer.echo(
            f"imported {done['written']} of {done['read']} documents into"
            f" {'/'.join(done['namespace'])} ({done['unchanged']} unchanged,"
            f" {done['skipped']} skipped; vectors "
            + ("reused)" if done["reused_vectors"] else "embedded by the store)")
        )
        return
    assert file is not None  # one of the two, checked above
    chosen = _detect(file) if input_format is IngestFormat.auto else input_format
    if chosen is IngestFormat.locomo:
        raise typer.BadParameter(LOCOMO_MOVED)
    records = _jsonl_records(file, prefix)
    if not records:
        raise typer.BadParameter(
            f"{file} holds no memories: give a JSONL file with one memory per line,"
            ' such as {"content": "likes green tea"}.'
        )
    write_records(records, opening(), file, chosen.value, embed is not None, batch_size, as_json)


def write_records(
    records: list[Record],
    store: Any,
    file: Path,
    label: str,
    embedded: bool,
    batch_size: int,
    as_json: bool,
) -> None:
    """Write checked memories to an open store in batches, close it, print the summary.

    Args:
        records: The memories, each already checked (`check_record`).
        store: The store to write to, opened by `cli.common.open_store`; closed here.
        file: The file the memories were read from (for the summary).
        label: The file's format (for the summary).
        embedded: Whether the store embeds what it is given (`--embed`).
        batch_size: Memories per `store.batch` call.
        as_json: Print the summary as one line of JSON, without a progress bar.
    """
    from langgraph.store.base import PutOp

    from langgraph_tiered_memory.errors import TieredMemoryError

    written = 0
    started = time.perf_counter()
    console = Console(stderr=True)
    try:
        if not embedded and store.dims:
            raise typer.BadParameter(
                f"This store was written with {store.dims}-dimension embeddings: pass the"
                " same --embed (e.g. --embed local) so new memories are embedded too."
            )
        columns = (TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True, disable=as_json) as bar:
            task = bar.add_task("ingest", total=len(records))
            for start in range(0, len(records), batch_size):
                batch = records[start : start + batch_size]
                store.batch([PutOp(ns, key, value) for ns, key, value in batch])
                written += len(batch)
                bar.advance(task, len(batch))
    except TieredMemoryError as e:
        fail(f"{e} ({written} of {len(records)} memories were written before this.)")
    finally:
        store.close()
    namespaces = sorted({ns for ns, _, _ in records})
    summary = {
        "file": str(file),
        "format": label,
        "memories": written,
        "namespaces": [list(ns) for ns in namespaces],
        "embedded": embedded,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    where = ", ".join("/".join(ns) for ns in namespaces[:5])
    more = f" and {len(namespaces) - 5} more" if len(namespaces) > 5 else ""
    typer.echo(
        f"ingested {written} memories ({label}) into {where}{more}"
        f" in {summary['seconds']:.1f}s"
        + ("" if embedded else "; not embedded: search is keyword-only (--embed)")
    )
