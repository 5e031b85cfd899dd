"""`tiered-memory bench agent`: turn latency of the memory agent with and without storage.

Registered on the `bench` group in `tiered_memory_benchmarks.cli`.
"""

from typing import Annotated

import typer
from rich.console import Console

from tiered_memory_benchmarks import cli_options as bench_cli
from tiered_memory_benchmarks.cli_options import JsonFlag

__all__ = ["bench_agent"]


def bench_agent(
    turns: Annotated[int, typer.Option(min=1, help="Timed turns per mode.")] = 30,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed turns per mode first.")] = 3,
    delay_ms: bench_cli.ModelDelayOption = 100.0,
    seed_memories: Annotated[
        int, typer.Option(min=0, help="Long-term memories per user before the first turn.")
    ] = 100,
    turns_per_session: Annotated[
        int, typer.Option(min=1, help="Turns per thread before a new session starts.")
    ] = 10,
    extraction: Annotated[
        bool, typer.Option(help="Run extraction in the storage of the 'with' mode.")
    ] = True,
    profile: Annotated[bool, typer.Option(help="Put the user profile in the context.")] = True,
    embed: Annotated[
        str, typer.Option(help="'hashing' (no model) or 'local' (offline multilingual-e5-small).")
    ] = "hashing",
    as_json: JsonFlag = False,
) -> None:
    """Turn latency of the memory agent with storage vs without it (fake model, real tiers).

    A turn's latency is the time until its reply is streamed; the run time (until the
    run ends with storage flushed) is shown too. Target: with / without <= 1.1 at p50
    and p95. Redis is REDIS_URL or an embedded server; Chroma a temporary directory.
    """
    from tiered_memory_benchmarks.agent import (
        AGENT_MODES,
        AgentBenchConfig,
        run_agent_benchmark,
    )

    config = bench_cli.checked(
        AgentBenchConfig(
            turns=turns,
            warmup=warmup,
            delay_ms=delay_ms,
            seed_memories=seed_memories,
            turns_per_session=turns_per_session,
            extraction=extraction,
            profile=profile,
            embed=embed,
            redis_url=bench_cli.redis_from_env(),
        )
    )
    data = run_agent_benchmark(config).to_dict()
    data["config"]["redis_url"] = "REDIS_URL" if config.redis_url else "embedded"
    console = Console()
    columns = ("storage", "turns", "turn p50 ms", "turn p95 ms", "run p50 ms", "run p95 ms")
    figures = ("turn_p50_ms", "turn_p95_ms", "run_p50_ms", "run_p95_ms")
    rows = [
        [mode, str(data[mode]["turns"]), *(f"{data[mode][f]:.1f}" for f in figures)]
        for mode in AGENT_MODES
    ]
    title = f"Memory agent: {turns} turns per mode, model delay {delay_ms:g} ms"
    console.print(bench_cli.figures_table(title, columns, rows))
    verdict = "within" if data["within_target"] else "OVER"
    console.print(
        f"turn latency with / without storage: p50 {data['ratio_p50']:.3f},"
        f" p95 {data['ratio_p95']:.3f} ({verdict} the {data['target_ratio']} target);"
        f" memories {data['memories_before']} -> {data['memories_after']},"
        f" write failures {data['write_failures']}"
    )
    bench_cli.echo_json(data, as_json)
