"""Workload pieces shared by the store benchmarks: fake embeddings, items, formatting.

Two fake embedders, both free of any model and network:

- `LookupEmbeddings` serves vectors computed ahead of time (the one-namespace benchmark
  derives them from a seeded generator so it can compute the exact top k);
- `SeededEmbeddings` derives a unit vector from a hash of the text, so a fresh process
  gets the same vector for the same text without any shared state (the namespace
  benchmark measures cold searches in a child process).
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings
from rich import progress as bars
from rich.console import Console

__all__ = [
    "BenchReport",
    "LookupEmbeddings",
    "SeededEmbeddings",
    "StoreBenchmarkError",
    "check_positive",
    "fmt",
    "fmt_ms",
    "item_key",
    "item_text",
    "make_progress",
    "percentiles_ms",
    "run_environment",
    "unit_rows",
]


class StoreBenchmarkError(ValueError):
    """The benchmark was configured with an invalid option."""


def check_positive(config: object, names: Iterable[str]) -> None:
    """Check that the named numeric attributes of `config` are above zero.

    Args:
        config: A benchmark config.
        names: Attribute names.

    Raises:
        StoreBenchmarkError: One of them is zero or negative.
    """
    for name in names:
        value = getattr(config, name)
        if value <= 0:
            raise StoreBenchmarkError(f"{name} must be positive, got {value}.")


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row of `matrix` to unit length (float32)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


class LookupEmbeddings(Embeddings):
    """Embeddings served from precomputed vectors, keyed by the exact text.

    Item texts and query texts may be asked for through either method (upstream
    `RedisStore` embeds queries with `embed_documents`). An unknown text is an error:
    it would mean a store embeds something the benchmark did not plan.

    Args:
        texts: Texts, one per row of `vectors`.
        vectors: A `(len(texts), dims)` array.
    """

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts for {len(vectors)} vectors.")
        self._rows: dict[str, int] = {t: i for i, t in enumerate(texts)}
        self._vectors = vectors
        self._extra: dict[str, np.ndarray] = {}

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Register more texts (the queries of one size).

        Args:
            texts: Texts, one per row of `vectors`.
            vectors: A `(len(texts), dims)` array.
        """
        for t, v in zip(texts, vectors, strict=True):
            self._extra[t] = v

    def _lookup(self, texts: Sequence[str]) -> list[list[float]]:
        rows = [self._rows.get(t, -1) for t in texts]
        if -1 not in rows:
            found: list[list[float]] = self._vectors[rows].tolist()
            return found
        out: list[list[float]] = []
        for text, row in zip(texts, rows, strict=True):
            if row >= 0:
                out.append(self._vectors[row].tolist())
            elif text in self._extra:
                out.append(self._extra[text].tolist())
            elif "\n" in text and all(p in self._rows for p in text.split("\n")):
                # A contextual key (previous memory + own text): the mean direction.
                parts = self._vectors[[self._rows[p] for p in text.split("\n")]]
                out.append(unit_rows(parts.mean(axis=0, keepdims=True))[0].tolist())
            else:
                raise StoreBenchmarkError(
                    f"No precomputed embedding for {text!r}: the store embedded a text"
                    " the benchmark did not plan."
                )
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return the precomputed vectors of `texts`.

        Args:
            texts: Item or query texts registered with this object.

        Returns:
            One vector per text.
        """
        return self._lookup(texts)

    def embed_query(self, text: str) -> list[float]:
        """Return the precomputed vector of one text.

        Args:
            text: A query or item text registered with this object.

        Returns:
            Its vector.
        """
        return self._lookup([text])[0]


class SeededEmbeddings(Embeddings):
    """A pseudo-random unit vector per text, seeded by a hash of the text.

    Identical texts get identical vectors in every process; different texts get
    independent random directions. `prefetch` computes the vectors of the texts about
    to be written or searched, so the timed store calls only look them up; texts that
    were not prefetched (a contextual key, say) are computed on the spot.

    Args:
        dims: Size of the vectors.
    """

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self._ready: dict[str, list[float]] = {}

    def _vector(self, text: str) -> list[float]:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
        raw = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal(self.dims)
        vector: list[float] = unit_rows(raw[None, :])[0].tolist()
        return vector

    def prefetch(self, texts: Iterable[str]) -> None:
        """Compute the vectors of `texts` now; they replace the previous prefetch.

        Args:
            texts: Texts the next store calls will embed.
        """
        self._ready = {t: self._vector(t) for t in texts}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return the vectors of `texts`.

        Args:
            texts: Any texts.

        Returns:
            One unit vector per text.
        """
        return [self._ready.get(t) or self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Return the vector of one text.

        Args:
            text: Any text.

        Returns:
            Its unit vector.
        """
        return self._ready.get(text) or self._vector(text)


def item_key(i: int) -> str:
    """The key of item `i`.

    Args:
        i: Item number.

    Returns:
        The item key.
    """
    return f"m{i:07d}"


def item_text(i: int) -> str:
    """The indexed `content` of item `i`.

    Args:
        i: Item number.

    Returns:
        The item text.
    """
    rng = np.random.default_rng([7, i])
    words = " ".join(f"w{int(z)}" for z in rng.zipf(1.3, 3) % 20_000)
    return f"memory {i} of the store benchmark about {words}"


# --------------------------------------------------------------------------- figures


def percentiles_ms(samples: Sequence[float]) -> tuple[float, float]:
    """The p50 and p95 of durations in seconds, in milliseconds.

    Args:
        samples: Durations in seconds (at least one).

    Returns:
        ``(p50, p95)`` in milliseconds.
    """
    p50, p95 = np.percentile(np.asarray(samples) * 1000.0, [50, 95])
    return float(p50), float(p95)


class _Row(Protocol):
    status: str


ConfigT = TypeVar("ConfigT")
RowT = TypeVar("RowT", bound=_Row)


@dataclass
class BenchReport(Generic[ConfigT, RowT]):
    """Everything one benchmark run measured.

    Attributes:
        config: The options of the run.
        results: The rows, stores in the order asked.
        environment: Python, platform, CPU count and where Redis came from.
        seconds: Wall time of the whole run.
    """

    config: ConfigT
    results: list[RowT]
    environment: dict[str, Any]
    seconds: float

    @property
    def failed(self) -> bool:
        """Whether a store raised during the run."""
        return any(r.status.startswith("error") for r in self.results)

    def _summary(
        self, benchmark: str, config: dict[str, Any], rows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "benchmark": benchmark,
            "config": config,
            "environment": self.environment,
            "seconds": round(self.seconds, 3),
            "results": rows,
        }


def run_environment(run_id: str) -> dict[str, Any]:
    """Python, platform and CPU count of a run; ``redis`` is filled in by the run.

    Args:
        run_id: The run's id (prefix of its Redis keys and collections).

    Returns:
        A JSON-serialisable dict.
    """
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "run_id": run_id,
        "redis": None,
    }


def make_progress(console: Console) -> bars.Progress:
    """The progress bar of a benchmark run: one task per store, items as the unit.

    Args:
        console: Where to draw it.

    Returns:
        A `Progress`, to be used as a context manager.
    """
    return bars.Progress(
        bars.TextColumn("{task.description:<34}"),
        bars.BarColumn(),
        bars.MofNCompleteColumn(),
        bars.TimeElapsedColumn(),
        bars.TimeRemainingColumn(),
        console=console,
    )


def fmt(value: float | None, spec: str) -> str:
    """`value` formatted with `spec`, or ``-`` when it is missing."""
    return "-" if value is None else format(value, spec)


def fmt_ms(value: float | None) -> str:
    """Milliseconds with three significant-ish digits (0.002, 1.76, 649.0, 3,387)."""
    if value is None:
        return "-"
    if value < 1:
        return f"{value:.3f}"
    if value < 100:
        return f"{value:.2f}"
    if value < 1000:
        return f"{value:.1f}"
    return f"{value:,.0f}"
