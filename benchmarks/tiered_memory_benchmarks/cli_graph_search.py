"""`tiered-memory bench graph-search`: hybrid search latency with the graph channel.

Registered on the `bench` group in `tiered_memory_benchmarks.cli`.
"""

from typing import Annotated

import typer
from rich.console import Console

from tiered_memory_benchmarks.cli_options import (
    JsonFlag,
    checked,
    echo_json,
    figures_table,
    log_width,
)

__all__ = ["bench_graph_search"]


def bench_graph_search(
    memories: Annotated[int, typer.Option(min=1, help="Memories in the store.")] = 10_000,
    queries: Annotated[int, typer.Option(min=1, help="Searches per setting.")] = 200,
    users: Annotated[int, typer.Option(min=1, help="User namespaces the memories fill.")] = 10,
    graph_weight: Annotated[
        float, typer.Option(min=0.0, help="graph_weight of the settings with the channel on.")
    ] = 0.5,
    as_json: JsonFlag = False,
) -> None:
    """Hybrid search latency without the graph channel, with graph_hops 0 and with 1.

    One store (embedded Chroma, graph=True with the rule extractor, seeded embeddings)
    holds synthetic memories naming people, places and employers, with a few hub
    entities; each query is searched in the three settings in turn. 'graph' columns
    time `memories_for` alone with the query's entities.
    """
    from tiered_memory_benchmarks.graph import (
        LATENCY_TARGET_MS,
        GraphSearchBenchConfig,
        run_graph_search_benchmark,
    )

    config = checked(
        GraphSearchBenchConfig(
            memories=memories, queries=queries, users=users, graph_weight=graph_weight
        )
    )
    with Console(stderr=True).status("graph-search benchmark") as status:
        report = run_graph_search_benchmark(config, progress=status.update)
    result = report.to_dict()

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    rows = [
        [
            r["setting"],
            f"{r['graph_weight']:g}",
            str(r["graph_hops"]) if r["graph_weight"] > 0 else "-",
            ms(r["p50_ms"]),
            ms(r["p95_ms"]),
            ms(r["graph_p50_ms"]),
            ms(r["graph_p95_ms"]),
            f"{r['graph_hits_mean']:.2f}",
        ]
        for r in result["results"]
    ]
    columns = (
        "setting",
        "weight",
        "hops",
        "search p50 ms",
        "search p95 ms",
        "graph p50 ms",
        "graph p95 ms",
        "graph hits",
    )
    title = (
        f"Hybrid search with the graph channel: {memories:,} memories, {users} users,"
        f" {result['triples']:,} triples, {queries} queries"
    )
    caption = (
        f"target p50 <= {LATENCY_TARGET_MS:g} ms; graph: memories_for alone;"
        f" graph hits: returned hits with a graph rank (of {config.limit});"
        f" {result['entities_mean']:.1f} query entities a query"
    )
    log_width(Console()).print(figures_table(title, columns, rows, caption=caption))
    echo_json(result, as_json)
