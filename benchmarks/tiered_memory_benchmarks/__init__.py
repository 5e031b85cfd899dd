"""Benchmarks of the tiered memory, run through the public APIs (`tiered-memory bench`)."""

from tiered_memory_benchmarks.store import (
    STORE_CHOICES,
    LookupEmbeddings,
    StoreBenchConfig,
    StoreBenchmarkError,
    StoreBenchReport,
    StoreBenchResult,
    render_store_report,
    run_store_benchmark,
)

__all__ = [
    "STORE_CHOICES",
    "LookupEmbeddings",
    "StoreBenchConfig",
    "StoreBenchReport",
    "StoreBenchResult",
    "StoreBenchmarkError",
    "render_store_report",
    "run_store_benchmark",
]
