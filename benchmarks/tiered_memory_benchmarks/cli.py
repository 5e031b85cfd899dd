"""`tiered-memory bench`: the benchmarks' commands, added to `tiered-memory` by entry point.

This distribution declares `app` in the entry-point group `langgraph_tiered_memory.cli`
under the name `bench`; `langgraph_tiered_memory.cli.app` adds every app of that group as a
sub-command. The commands (docs/benchmarks.md):

- `bench store`: put throughput, get/search latency and recall of the store's tiers
  against LangGraph's `InMemoryStore` and upstream `RedisStore`; with `--namespaces N
  --per-namespace M`, the same stores over many small namespaces.
- `bench retrieval`: recall@k of the store's search on LoCoMo conversations (data read
  from a path you give).
- `bench checkpoint`: per-super-step latency, session saver vs upstream
- `bench summarizer`: context size and fact coverage of the summarizer
- `bench triples`: precision and recall of triple extraction
- `bench graph-search`: search latency with and without the graph channel
- `bench forgetting`: the forgetting graph's run time at growing sizes
- `bench agent`: the memory agent's turn latency with storage vs without
- `bench load`: concurrent agent sessions on real Redis and Chroma, with errors and
  lost updates against a serial replay
- `bench ingest-locomo FILE`: load LoCoMo conversations as memories

Example:
    ```bash
    tiered-memory bench store --sizes 1000,10000 --json
    tiered-memory bench retrieval --data locomo10.json --k 5,10,25,50 --json
    ```
"""

import typer

from tiered_memory_benchmarks.cli_agent import bench_agent
from tiered_memory_benchmarks.cli_graph_search import bench_graph_search
from tiered_memory_benchmarks.cli_graphs import bench_checkpoint, bench_forgetting, bench_summarizer
from tiered_memory_benchmarks.cli_load import bench_load
from tiered_memory_benchmarks.cli_locomo import ingest_locomo
from tiered_memory_benchmarks.cli_store import bench_retrieval, bench_store
from tiered_memory_benchmarks.cli_triples import bench_triples

__all__ = ["app"]

app = typer.Typer(
    help="Benchmarks, run through the public APIs of the stores.",
    no_args_is_help=True,
)
app.command("store")(bench_store)
app.command("retrieval")(bench_retrieval)
app.command("checkpoint")(bench_checkpoint)
app.command("summarizer")(bench_summarizer)
app.command("forgetting")(bench_forgetting)
app.command("load")(bench_load)
app.command("agent")(bench_agent)
app.command("triples")(bench_triples)
app.command("graph-search")(bench_graph_search)
app.command("ingest-locomo")(ingest_locomo)
