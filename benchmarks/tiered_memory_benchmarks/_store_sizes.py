"""The one-namespace store benchmark's options, figures and workload.

See `tiered_memory_benchmarks.store` for what is measured.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tiered_memory_benchmarks._store_data import (
    BenchReport,
    LookupEmbeddings,
    StoreBenchmarkError,
    check_positive,
    item_key,
    item_text,
    unit_rows,
)
from tiered_memory_benchmarks._store_open import STORE_CHOICES, checked_stores

__all__ = [
    "NAMESPACE",
    "STATUS_CAPPED",
    "STATUS_OK",
    "StoreBenchConfig",
    "StoreBenchReport",
    "StoreBenchResult",
    "Workload",
    "Dataset",
]

NAMESPACE: tuple[str, ...] = ("bench",)
"""The namespace every item is written to (one label: see the module docstring)."""

STATUS_OK = "ok"
STATUS_CAPPED = "skipped (cap)"


@dataclass
class StoreBenchConfig:
    """What the store benchmark measures.

    Attributes:
        sizes: Item counts to measure at, ascending (duplicates are dropped).
        stores: Stores to benchmark, from `STORE_CHOICES`.
        gets: Number of timed `store.get` calls per size.
        searches: Number of timed `store.search` calls per size.
        k: Results per search (`limit`) and the cut-off of the recall.
        dims: Size of the random embeddings.
        batch_size: Items per `store.batch` call while ingesting.
        seed: Seed of the numpy generator for vectors, keys and queries.
        noise: Norm of the Gaussian noise added to a stored vector to make a query.
        data: `"clustered"` (topic centres plus spread, like real embeddings) or
            `"uniform"` (independent random unit vectors).
        clusters: Number of topic centres for `"clustered"` data.
        max_inmemory: Largest size measured for `InMemoryStore`.
        short_max: Largest size measured for the Redis (short) tier.
        chroma_path: Directory of the Chroma database for the long tier. `None` uses
            a temporary directory removed at the end; in a given directory the
            collections of this run are deleted at the end.
        redis_url: Redis (with RediSearch and RedisJSON for `redisstore`) to use.
            `None` uses `REDIS_URL` or starts an embedded server when needed.
    """

    sizes: list[int] = field(default_factory=lambda: [1_000, 10_000, 100_000])
    stores: list[str] = field(default_factory=lambda: list(STORE_CHOICES))
    gets: int = 200
    searches: int = 100
    k: int = 10
    dims: int = 384
    batch_size: int = 500
    seed: int = 0
    noise: float = 0.5
    data: str = "clustered"
    clusters: int = 1_000
    max_inmemory: int = 100_000
    short_max: int = 10_000
    chroma_path: str | None = None
    redis_url: str | None = None

    def validate(self) -> StoreBenchConfig:
        """Check the options and normalise `sizes` and `stores`.

        Returns:
            This config, with sizes sorted and de-duplicated.

        Raises:
            StoreBenchmarkError: An option is out of range or a store name is unknown.
        """
        if not self.sizes or any(s <= 0 for s in self.sizes):
            raise StoreBenchmarkError(
                f"sizes must be positive item counts such as 1000,10000, got {self.sizes}."
            )
        self.sizes = sorted(set(self.sizes))
        self.stores = checked_stores(self.stores)
        check_positive(self, ("gets", "searches", "k", "dims", "batch_size"))
        if self.max_inmemory < 0 or self.short_max < 0:
            raise StoreBenchmarkError("max_inmemory and short_max must be >= 0.")
        if self.noise < 0:
            raise StoreBenchmarkError(f"noise must be >= 0, got {self.noise}.")
        if self.data not in ("clustered", "uniform"):
            raise StoreBenchmarkError(f"data must be 'clustered' or 'uniform', got {self.data!r}.")
        if self.clusters <= 0:
            raise StoreBenchmarkError(f"clusters must be positive, got {self.clusters}.")
        return self

    def cap(self, store: str) -> int | None:
        """The largest size measured for `store`, or `None` when it is not capped.

        Args:
            store: A name from `STORE_CHOICES`.

        Returns:
            The cap in items, or `None`.
        """
        if store == "inmemory":
            return self.max_inmemory
        if store == "short":
            return self.short_max
        return None

    def measured_sizes(self, store: str) -> list[int]:
        """The sizes measured for `store`: those within its cap.

        Args:
            store: A name from `STORE_CHOICES`.

        Returns:
            The sizes, ascending.
        """
        cap = self.cap(store)
        return [s for s in self.sizes if cap is None or s <= cap]


@dataclass
class StoreBenchResult:
    """Figures of one store at one size.

    Latencies are milliseconds; `None` when the row was skipped or failed.

    Attributes:
        store: Store name from `STORE_CHOICES`.
        label: Human-readable store name.
        size: Items in the namespace when measured.
        status: ``"ok"``, ``"skipped (cap)"`` or ``"error: ..."``.
        put_items: Items written since the previous size.
        put_seconds: Time spent in `store.batch` writing them.
        put_per_s: `put_items / put_seconds`.
        get_p50_ms: Median `store.get` latency.
        get_p95_ms: 95th percentile `store.get` latency.
        get_hit_rate: Fraction of gets that returned the item.
        search_p50_ms: Median `store.search` latency.
        search_p95_ms: 95th percentile `store.search` latency.
        list_p50_ms: Median `store.list_namespaces()` latency.
        recall_at_k: Mean recall@k of the searches against the exact top k.
        source_at_1: Fraction of searches whose first result is the item the query
            vector was made from (its exact nearest neighbour for small noise).
        k: The `k` of `recall_at_k`.
    """

    store: str
    label: str
    size: int
    status: str
    put_items: int = 0
    put_seconds: float | None = None
    put_per_s: float | None = None
    get_p50_ms: float | None = None
    get_p95_ms: float | None = None
    get_hit_rate: float | None = None
    search_p50_ms: float | None = None
    search_p95_ms: float | None = None
    list_p50_ms: float | None = None
    recall_at_k: float | None = None
    source_at_1: float | None = None
    k: int = 10

    @property
    def recall_at_10(self) -> float | None:
        """Recall at `k` (named for the default `k` of 10)."""
        return self.recall_at_k


class StoreBenchReport(BenchReport[StoreBenchConfig, StoreBenchResult]):
    """Everything one benchmark run measured: one row per store and size.

    `failed` tells whether a store raised during the run.
    """

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary of the run.

        Returns:
            A dict with keys ``benchmark``, ``config``, ``environment``, ``seconds`` and
            ``results`` (one dict per row, including ``recall_at_10`` when k is 10).
        """
        config = asdict(self.config)
        config["namespace"] = list(NAMESPACE)
        rows = []
        for r in self.results:
            row = asdict(r)
            row[f"recall_at_{r.k}"] = row.pop("recall_at_k")
            rows.append(row)
        return self._summary("store", config, rows)


# --------------------------------------------------------------------------- workload


@dataclass
class Workload:
    """The reads measured at one size (shared by every store)."""

    get_keys: list[str]
    query_texts: list[str]
    exact: list[set[str]]
    sources: list[str]
    """For each query, the key of the stored item it was made from."""


class Dataset:
    """Vectors of every item, and the per-size workloads derived from them."""

    def __init__(self, config: StoreBenchConfig) -> None:
        self.config = config
        n = max(config.sizes)
        rng = np.random.default_rng(config.seed)
        if config.data == "clustered":
            centres = rng.standard_normal((config.clusters, config.dims), dtype=np.float32)
            topic = rng.integers(0, config.clusters, n)
            spread = rng.standard_normal((n, config.dims), dtype=np.float32) * 0.7
            self.vectors = unit_rows(centres[topic] + spread)
        else:
            self.vectors = unit_rows(rng.standard_normal((n, config.dims), dtype=np.float32))
        self.embeddings = LookupEmbeddings([item_text(i) for i in range(n)], self.vectors)
        self._workloads: dict[int, Workload] = {}

    def workload(self, size: int) -> Workload:
        """Get keys, query texts and exact top k at `size` (computed once per size)."""
        found = self._workloads.get(size)
        if found is not None:
            return found
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, size])
        get_keys = [item_key(int(i)) for i in rng.integers(0, size, cfg.gets)]
        bases = rng.integers(0, size, cfg.searches)
        noise = rng.standard_normal((cfg.searches, cfg.dims)) * (cfg.noise / math.sqrt(cfg.dims))
        queries = unit_rows(self.vectors[bases].astype(np.float64) + noise)
        texts = [
            f"query {j} at size {size}: what do I remember about"
            f" {' '.join(item_text(int(b)).split()[-3:-1])}?"
            for j, b in enumerate(bases)
        ]
        self.embeddings.add(texts, queries)
        k = min(cfg.k, size)
        scores = self.vectors[:size] @ queries.T  # (size, searches)
        top = np.argpartition(-scores, k - 1, axis=0)[:k]
        exact = [{item_key(int(i)) for i in top[:, j]} for j in range(cfg.searches)]
        sources = [item_key(int(b)) for b in bases]
        found = Workload(get_keys=get_keys, query_texts=texts, exact=exact, sources=sources)
        self._workloads[size] = found
        return found
