"""`tiered-memory bench load`: concurrent sessions of the memory agent.

Registered on the `bench` group in `tiered_memory_benchmarks.cli`.
"""

from __future__ import annotations

import faulthandler
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from tiered_memory_benchmarks import cli_options as bench_cli
from tiered_memory_benchmarks.cli_options import JsonFlag

__all__ = ["bench_load"]


def bench_load(
    sessions: Annotated[int, typer.Option(min=1, help="Concurrent sessions (threads).")] = 50,
    turns: Annotated[int, typer.Option(min=1, help="Turns per session.")] = 20,
    users: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Users the sessions belong to: session i to user i mod USERS"
            " (default: one user per 5 sessions).",
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="async: asyncio tasks with the async store and saver; threads: a thread"
            " pool with the sync ones."
        ),
    ] = "async",
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="Threads in --mode threads (default: one per session)."),
    ] = None,
    model_delay_ms: bench_cli.ModelDelayOption = 0.0,
    memory_limit: Annotated[
        int, typer.Option(min=1, help="Memories the agent retrieves per turn.")
    ] = 5,
    replay: Annotated[
        bool,
        typer.Option(help="Replay the scripts serially afterwards and count lost updates."),
    ] = True,
    chroma_path: Annotated[
        Path | None,
        typer.Option(
            help="Parent directory of the run's Chroma directories (default: the system's"
            " temporary directory); they are removed at the end.",
            file_okay=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run concurrent sessions of the memory agent (fake model) on real Redis and Chroma.

    Turns of a session run in order; sessions run at once. Reports throughput, p50/p95
    turn latency, peak RSS, errors, and lost updates: memories or access counts a
    serial replay of the same turns has and the concurrent run lacks. Redis comes from
    REDIS_URL, or an embedded server is started. Exits with code 1 if a turn failed or
    an update was lost.
    """
    from tiered_memory_benchmarks.load import LoadBenchConfig, run_load_benchmark

    # Native code (Chroma, SQLite, numpy) runs on many threads here: a crash prints
    # every thread's Python stack to stderr instead of dying silently.
    if not faulthandler.is_enabled() and sys.__stderr__ is not None:
        faulthandler.enable(file=sys.__stderr__)
    config = bench_cli.checked(
        LoadBenchConfig(
            sessions=sessions,
            turns=turns,
            users=users,
            mode=mode.strip().lower(),
            workers=workers,
            model_delay_ms=model_delay_ms,
            memory_limit=memory_limit,
            replay=replay,
            chroma_path=str(chroma_path) if chroma_path is not None else None,
        )
    )
    console = bench_cli.log_width(Console(stderr=as_json))
    with console.status(f"{sessions} sessions x {turns} turns ..."):
        report = run_load_benchmark(config)
    data = report.to_dict()
    _render(data, console)
    bench_cli.echo_json(data, as_json)
    if report.failed:
        raise typer.Exit(code=1)


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}"
    return f"{value:,}{unit}"


def _render(data: dict[str, Any], console: Console) -> None:
    rows = [
        ("turns completed", _fmt(data["turns_completed"])),
        ("throughput", _fmt(data["turns_per_s"], " turns/s")),
        ("turn latency p50", _fmt(data["p50_turn_ms"], " ms")),
        ("turn latency p95", _fmt(data["p95_turn_ms"], " ms")),
        ("turn latency max", _fmt(data["max_turn_ms"], " ms")),
        (
            "reply latency p50 / p95",
            f"{_fmt(data['p50_reply_ms'])} / {_fmt(data['p95_reply_ms'], ' ms')}",
        ),
        ("peak RSS (this process)", _fmt(data["peak_rss_mb"], " MiB")),
        ("errors", _fmt(data["errors"])),
        ("memories stored (run)", _fmt(data["memories"])),
        ("lost updates", _fmt(data["lost_updates"])),
    ]
    lost = data.get("lost")
    if lost is not None:
        rows.append(
            (
                "  lost memories / lost accesses",
                f"{lost['lost_memories']:,} / {lost['lost_accesses']:,}",
            )
        )
        rows.append(("  unexpected memories", _fmt(lost["unexpected_memories"])))
    if data["replay"] is not None:
        rows.append(
            (
                "serial replay: wall / p50",
                f"{data['replay']['wall_s']:.1f} s / {_fmt(data['replay']['p50_turn_ms'], ' ms')}",
            )
        )
    title = (
        f"Load: {data['sessions']} sessions x {data['turns']} turns,"
        f" {data['users']} user(s), {data['mode']}"
    )
    caption = (
        f"fake model; Redis ({data['environment']['redis']}) + Chroma;"
        f" {data['environment']['cpus']} CPUs"
    )
    console.print(bench_cli.figures_table(title, ("figure", "value"), rows, caption=caption))
    for example in data["error_examples"]:
        console.print(f"[red]error[/red] {escape(example)}", highlight=False)
    if not data["environment"]["uncounted_profile_reads"] and data["lost_updates"]:
        console.print(
            "note: this store counts the agent's profile reads as accesses of every memory"
            " of the user (it has no get_user_profile), so access counts depend on the"
            " interleaving and lost accesses are not meaningful."
        )
    if lost is not None:
        for example in lost["examples"]:
            console.print(f"[red]lost[/red] {escape(example)}", highlight=False)
