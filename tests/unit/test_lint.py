"""The code base stays clean under the project's ruff and mypy settings.

The code base: the package, the benchmarks distribution's package and the tests. Ruff
runs without its cache: a cached verdict from before a move of modules hides import
blocks whose first-party sections changed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = "benchmarks/tiered_memory_benchmarks"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_check_passes() -> None:
    result = _run("ruff", "check", "--no-cache", "langgraph_tiered_memory", BENCHMARKS, "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied() -> None:
    result = _run(
        "ruff", "format", "--check", "--no-cache", "langgraph_tiered_memory", BENCHMARKS, "tests"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes() -> None:
    result = _run("mypy", "langgraph_tiered_memory", BENCHMARKS)
    assert result.returncode == 0, result.stdout + result.stderr
