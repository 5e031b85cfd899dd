"""The `tiered-memory` command line.

Commands:

- `tiered-memory demo`: runs the memory agent over two sessions of one user:
  summarization, the session in Redis with its TTL, recalled memories with explained
  scores, a forgetting dry run (offline by default, on an embedded Redis).
- `tiered-memory gc`: garbage-collect the long-term tier (`--dry-run` to preview)
- `tiered-memory graph`: a namespace's knowledge-graph triples
- `tiered-memory search NAMESPACE QUERY`: memories with their score breakdown
- `tiered-memory inspect`: sessions, namespaces and memories with their statistics
- `tiered-memory ingest FILE`: load memories from a JSONL file
- `tiered-memory erase --user ID`: erase a user everywhere (`--dry-run` to count first)
- `tiered-memory export --user ID`: everything held about a user, as JSON
- `tiered-memory studio`: LangGraph Studio on the tiered store (the bundled Redis, then
  `langgraph dev`), stopped with Ctrl-C
- `tiered-memory scrub-chroma --path DIR`: finish erasures in a stopped Chroma server's files
- `tiered-memory bench ...`: the benchmarks (docs/benchmarks.md), from a checkout with
  `pip install -e ./benchmarks`: that distribution adds them through the entry-point
  group `langgraph_tiered_memory.cli`, whose Typer apps become sub-commands here.

Commands that open a store refuse a Chroma directory that does not exist or holds no
store (a mistyped path would otherwise read as a new, empty store); those that write
take `--create`, and those that only read open a copy, so they never write. Every error
is one `Error:` line with exit code 2.

Example:
    ```bash
    tiered-memory demo
    tiered-memory inspect --chroma-path ./.tiered-memory/chroma
    ```
"""

from importlib.metadata import entry_points

import typer

from langgraph_tiered_memory.cli.common import OneLineErrorsGroup, fail
from langgraph_tiered_memory.cli.demo import demo
from langgraph_tiered_memory.cli.erase import erase
from langgraph_tiered_memory.cli.export import export
from langgraph_tiered_memory.cli.gc import gc
from langgraph_tiered_memory.cli.graph import graph
from langgraph_tiered_memory.cli.ingest import ingest
from langgraph_tiered_memory.cli.inspect import inspect
from langgraph_tiered_memory.cli.scrub import scrub_chroma
from langgraph_tiered_memory.cli.search import search
from langgraph_tiered_memory.cli.studio import studio

__all__ = ["PLUGIN_GROUP", "app", "main"]

PLUGIN_GROUP = "langgraph_tiered_memory.cli"
"""Entry-point group of Typer apps added as sub-commands (the benchmarks' `bench`)."""
NO_BENCHMARKS = (
    "the benchmarks are not part of the installed package: from a checkout,"
    " pip install -e ./benchmarks"
)
"""The error of `tiered-memory bench` when no installed distribution provides it."""

# The commands are plain functions of their modules, added in the order help lists them.
app = typer.Typer(
    name="tiered-memory",
    cls=OneLineErrorsGroup,
    help="Tiered memory for LangGraph agents: Redis for sessions, Chroma for long-term memory.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)
app.command()(gc)
app.command("graph")(graph)
app.command()(search)
app.command()(inspect)
app.command()(ingest)
app.command()(erase)
app.command()(export)
app.command("scrub-chroma")(scrub_chroma)
app.command()(demo)
app.command()(studio)
plugins = entry_points(group=PLUGIN_GROUP)
for plugin in plugins:
    app.add_typer(plugin.load(), name=plugin.name)
if "bench" not in plugins.names:

    @app.command(
        "bench",
        hidden=True,
        add_help_option=False,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def _no_benchmarks() -> None:
        fail(NO_BENCHMARKS)


def main() -> None:
    """Run the `tiered-memory` command line (the console script's entry point)."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
