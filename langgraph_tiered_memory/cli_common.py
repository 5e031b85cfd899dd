"""Option types shared by the modules of the `tiered-memory` command line."""

from typing import Annotated

import typer

__all__ = ["JsonFlag"]

JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="End the output with one line holding every figure as JSON."),
]
"""`--json` of the benchmarks: end the output with one line of JSON."""
