"""`tiered-memory bench checkpoint`, `bench summarizer` and `bench forgetting`.

Benchmarks of the graphs the package ships or serves: per-super-step latency with the
session saver, context size and fact coverage of the summarizer, and the forgetting
graph over a large store and a simulated year. The commands are registered on the
`bench` group in `tiered_memory_benchmarks.cli`.
"""

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from langgraph_tiered_memory.privacy._redact import mask_url
from tiered_memory_benchmarks.cli_options import JsonFlag

__all__ = ["bench_checkpoint", "bench_forgetting", "bench_summarizer"]


def bench_checkpoint(
    runs: Annotated[int, typer.Option(min=1, help="Timed graph runs per saver.")] = 30,
    steps: Annotated[int, typer.Option(min=1, help="Super-steps per run.")] = 10,
    messages: Annotated[int, typer.Option(min=1, help="Messages in the starting state.")] = 20,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed runs per saver first.")] = 3,
    savers: Annotated[
        str, typer.Option(help="Comma-separated savers: upstream (RedisSaver), adapter.")
    ] = "upstream,adapter",
    as_json: JsonFlag = False,
) -> None:
    """Per-super-step latency of a small graph with the session saver and with upstream.

    Runs alternate between the savers on one Redis (REDIS_URL, or an embedded server),
    each run a new thread starting with a state of `messages` messages.
    """
    from tiered_memory_benchmarks.checkpoint import (
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
            help="Also write each turn to a long-term store (offline e5-small) and count"
            " evidence found by one search per question (top 10)."
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Context tokens and fact coverage of the no-LLM summarizer over whole conversations.

    Each turn goes through a graph with the summarizer subgraph; the context the model
    would see (system prompt, summary, kept messages) is compared with the full history.
    """
    from tiered_memory_benchmarks.summarizer import (
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
    as_json: JsonFlag = False,
) -> None:
    """A weekly forgetting pass over a large store, and a simulated year of them.

    GC is the forgetting graph without consolidation (scan, decide, delete), timed end
    to end; its working memory is measured in a dry run; the whole graph (with
    consolidation, no model) runs on a copy of the same store. The year writes memories
    daily, searches them and runs the graph weekly; the store's size must level off.
    """
    from rich.progress import Progress

    from tiered_memory_benchmarks.forgetting import (
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
