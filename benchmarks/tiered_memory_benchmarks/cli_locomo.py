"""`tiered-memory bench ingest-locomo`: load LoCoMo conversations as memories.

Each conversation of the LoCoMo JSON list (the file `bench retrieval` reads) goes to
NAMESPACE/<sample id>, one memory per dialog turn keyed by its dia_id. Every turn is
checked before anything is written, then the memories are written as `tiered-memory
ingest` writes a JSONL file (`write_records`). Registered on the `bench` group in
`tiered_memory_benchmarks.cli`.
"""

from pathlib import Path
from typing import Annotated

import typer

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    CreateFlag,
    EmbedOption,
    KeyPrefixOption,
    MemoryIndexPathOption,
    namespace_labels,
    open_store,
)
from langgraph_tiered_memory.cli.ingest import Record, check_record, write_records
from tiered_memory_benchmarks._retrieval_data import RetrievalBenchmarkError, load_locomo

__all__ = ["ingest_locomo"]


def _records(path: Path, namespace: tuple[str, ...]) -> list[Record]:
    try:
        conversations = load_locomo(path)
    except RetrievalBenchmarkError as e:
        raise typer.BadParameter(str(e)) from e
    records: list[Record] = []
    for c in conversations:
        for turn in c.turns:
            record = ((*namespace, c.sample_id), turn.dia_id, turn.value())
            check_record(f"{path}, sample {c.sample_id!r}, turn {turn.dia_id!r}", *record)
            records.append(record)
    return records


def ingest_locomo(
    namespace: Annotated[
        str,
        typer.Option(help="Namespace prefix, labels joined by '/'; each sample goes under it."),
    ],
    file: Annotated[
        Path,
        typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False, readable=True),
    ],
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
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON (no progress bar).")
    ] = False,
) -> None:
    """Load a LoCoMo file: one memory per turn, each conversation under NAMESPACE/sample-id."""
    records = _records(file, namespace_labels(namespace))
    store = open_store(
        chroma_path=chroma_path,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
        memory_index_path=memory_index_path,
        key_prefix=key_prefix,
        embed=embed,
        dims=dims,
        create=create,
    )
    write_records(records, store, file, "locomo", embed is not None, batch_size, as_json)
