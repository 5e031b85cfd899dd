"""The `tiered-memory` command line.

Commands:

- `tiered-memory demo`: runs the memory agent over two sessions of one user:
  summarization, the session in Redis with its TTL, recalled memories with explained
  scores, a forgetting dry run (offline by default, on an embedded Redis).
- `tiered-memory bench store`: put throughput, get/search latency and recall of the
  store's tiers against LangGraph's `InMemoryStore` and upstream `RedisStore`; with
  `--namespaces N --per-namespace M`, the same stores over many small namespaces.
- `tiered-memory bench retrieval`: recall@k of the store's search on LoCoMo
  conversations (data read from a path you give).
- `tiered-memory bench checkpoint`: per-super-step latency, session saver vs upstream
- `tiered-memory bench summarizer`: context size and fact coverage of the summarizer
- `tiered-memory bench triples`: precision and recall of triple extraction
- `tiered-memory bench graph-search`: search latency with and without the graph channel
- `tiered-memory bench forgetting`: the forgetting graph's run time at growing sizes
- `tiered-memory bench agent`: the memory agent's turn latency with storage vs without
- `tiered-memory bench load`: concurrent agent sessions on real Redis and Chroma, with
  errors and lost updates against a serial replay
- `tiered-memory gc`: garbage-collect the long-term tier (`--dry-run` to preview)
- `tiered-memory graph`: a namespace's knowledge-graph triples
- `tiered-memory search NAMESPACE QUERY`: memories with their score breakdown
- `tiered-memory inspect`: sessions, namespaces and memories with their statistics
- `tiered-memory ingest FILE`: load memories from JSONL or LoCoMo data
- `tiered-memory erase --user ID`: erase a user everywhere (`--dry-run` to count first)
- `tiered-memory export --user ID`: everything held about a user, as JSON
- `tiered-memory scrub-chroma --path DIR`: finish erasures in a stopped Chroma server's files

Commands that open a store refuse a Chroma directory that does not exist (a mistyped
path would otherwise read as a new, empty store); those that write take `--create`.

Example:
    ```bash
    tiered-memory demo
    tiered-memory bench store --sizes 1000,10000 --json
    tiered-memory bench retrieval --data locomo10.json --k 5,10,25,50 --json
    ```
"""

import typer

from langgraph_tiered_memory.cli_bench_agent import bench_agent
from langgraph_tiered_memory.cli_bench_graph_search import bench_graph_search
from langgraph_tiered_memory.cli_bench_graphs import (
    bench_checkpoint,
    bench_forgetting,
    bench_summarizer,
)
from langgraph_tiered_memory.cli_bench_load import bench_load
from langgraph_tiered_memory.cli_bench_store import (
    _parse_sizes as _parse_sizes,  # re-exported: tests parse sizes through this module
)
from langgraph_tiered_memory.cli_bench_store import bench_retrieval, bench_store
from langgraph_tiered_memory.cli_bench_triples import bench_triples
from langgraph_tiered_memory.cli_common import OneLineErrorsGroup
from langgraph_tiered_memory.cli_demo import demo
from langgraph_tiered_memory.cli_erase import erase
from langgraph_tiered_memory.cli_export import export
from langgraph_tiered_memory.cli_gc import gc
from langgraph_tiered_memory.cli_graph import graph
from langgraph_tiered_memory.cli_ingest import ingest
from langgraph_tiered_memory.cli_inspect import inspect
from langgraph_tiered_memory.cli_scrub import scrub_chroma
from langgraph_tiered_memory.cli_search import search

__all__ = ["app", "bench_app", "main"]

# The commands live in the cli_* modules as plain functions; this module only wires
# them into the Typer apps, in the order their help lists them.
app = typer.Typer(
    name="tiered-memory",
    cls=OneLineErrorsGroup,
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

bench_app.command("store")(bench_store)
bench_app.command("retrieval")(bench_retrieval)
bench_app.command("checkpoint")(bench_checkpoint)
bench_app.command("summarizer")(bench_summarizer)
bench_app.command("forgetting")(bench_forgetting)
bench_app.command("load")(bench_load)
bench_app.command("agent")(bench_agent)
bench_app.command("triples")(bench_triples)
bench_app.command("graph-search")(bench_graph_search)
app.command()(gc)
app.command("graph")(graph)
app.command()(search)
app.command()(inspect)
app.command()(ingest)
app.command()(erase)
app.command()(export)
app.command("scrub-chroma")(scrub_chroma)
app.command()(demo)


def main() -> None:
    """Run the `tiered-memory` command line (the console script's entry point)."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
