"""What the memory-agent benchmarks' commands share: options, checks and output.

`tiered-memory bench agent` (`cli_agent`) and `tiered-memory bench load`
(`cli_load`) both run the memory agent with a fake chat model over the real
tiers; their options and the way they check a config and print figures live here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Protocol, TypeVar

import typer
from rich.console import Console
from rich.table import Table

__all__ = [
    "JsonFlag",
    "ModelDelayOption",
    "checked",
    "echo_json",
    "figures_table",
    "log_width",
    "redis_from_env",
]


JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="End the output with one line holding every figure as JSON."),
]
"""`--json` of the benchmarks: end the output with one line of JSON."""

ModelDelayOption = Annotated[
    float, typer.Option(min=0.0, help="The fake chat model's latency per call, in ms.")
]
"""The fake model's fixed delay per call (`--delay-ms`, `--model-delay-ms`)."""


class _Validated(Protocol):
    def validate(self) -> Any: ...


C = TypeVar("C", bound=_Validated)


def checked(config: C) -> C:
    """`config` once its `validate()` passed; a `ValueError` becomes a usage error."""
    try:
        config.validate()
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    return config


def redis_from_env() -> str | None:
    """`REDIS_URL` if set (None: the benchmark starts an embedded server)."""
    return os.environ.get("REDIS_URL")


def figures_table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    caption: str | None = None,
) -> Table:
    """A table whose first column is left-aligned and the others right-aligned."""
    table = Table(title=title, caption=caption)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def echo_json(data: Any, as_json: bool) -> None:
    """With `--json`, the figures as one last line (plain echo: never wrapped by rich)."""
    if as_json:
        typer.echo(json.dumps(data, allow_nan=False))


def log_width(console: Console) -> Console:
    """`console`, 150 columns wide when it writes to a log file (one table row a line)."""
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 150
    return console
