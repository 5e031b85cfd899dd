"""Store benchmark: put throughput, get and search latency, search recall.

Every store gets the same workload through the public `BaseStore` API only:

- items `{"content": "memory <i> ..."}` in one namespace, indexed on `content`, written
  with `store.batch([PutOp, ...])` in batches of 500;
- the same precomputed embeddings (dims 384) drawn from a seeded numpy generator, one
  per item. By default they are clustered like sentence embeddings are: 1,000 random
  topic centres, each item a centre plus Gaussian spread (items of one topic have a
  cosine of about 0.67, of different topics about 0). `data="uniform"` draws
  independent random unit vectors instead, the worst case for approximate indexes.
  They are served by `LookupEmbeddings`, an `Embeddings` that
  maps each item text (and each query text) to its vector, so embedding time is
  negligible and identical for every store;
- gets of random keys (`store.get`, one call each, timed individually);
- searches `store.search(namespace, query=..., limit=10)` whose query vectors are a
  stored vector plus Gaussian noise, timed individually; their recall@10 is measured
  against the exact top 10 computed with numpy, so approximate indexes show up.

Sizes grow incrementally (insert up to 1k, measure, insert up to 10k, measure, ...),
so each store ingests the largest size once. Stores that rank in Python are capped
(`max_inmemory` for `InMemoryStore`, `short_max` for the Redis tier) and their rows
above the cap are reported as ``skipped (cap)``.

The namespace has a single label because upstream `RedisStore.get` misses items of
namespaces with more than one label (see the design notes); the hit rate of the gets
is reported so such misses are visible.

Example:
    ```python
    from rich.console import Console

    from langgraph_tiered_memory.bench.store import StoreBenchConfig, run_store_benchmark

    report = run_store_benchmark(
        StoreBenchConfig(sizes=[200], stores=["inmemory"], gets=20, searches=10),
        console=Console(quiet=True),
    )
    assert report.results[0].recall_at_10 == 1.0
    ```
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

__all__ = [
    "STORE_CHOICES",
    "STORE_LABELS",
    "LookupEmbeddings",
    "StoreBenchConfig",
    "StoreBenchReport",
    "StoreBenchResult",
    "StoreBenchmarkError",
    "render_store_report",
    "run_store_benchmark",
]

STORE_CHOICES: tuple[str, ...] = ("long", "hybrid", "short", "inmemory", "redisstore")
"""Names accepted in `StoreBenchConfig.stores`, in the default order."""

STORE_LABELS: dict[str, str] = {
    "long": "tiered, long tier (Chroma), semantic",
    "hybrid": "tiered, long tier, memory ranking, hybrid",
    "short": "tiered, short tier (Redis)",
    "inmemory": "InMemoryStore",
    "redisstore": "RedisStore (upstream)",
}
"""Human-readable name of each benchmarked store."""

NAMESPACE: tuple[str, ...] = ("bench",)
"""The namespace every item is written to (one label: see the module docstring)."""

STATUS_OK = "ok"
STATUS_CAPPED = "skipped (cap)"


class StoreBenchmarkError(ValueError):
    """The benchmark was configured with an invalid option."""


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
        unknown = [s for s in self.stores if s not in STORE_CHOICES]
        if unknown or not self.stores:
            raise StoreBenchmarkError(
                f"Unknown store(s) {unknown or self.stores}; choose from"
                f" {', '.join(STORE_CHOICES)}."
            )
        self.stores = list(dict.fromkeys(self.stores))
        for name in ("gets", "searches", "k", "dims", "batch_size"):
            if getattr(self, name) <= 0:
                raise StoreBenchmarkError(f"{name} must be positive, got {getattr(self, name)}.")
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


@dataclass
class StoreBenchReport:
    """Everything one benchmark run measured.

    Attributes:
        config: The options of the run.
        results: One row per store and size, stores in the order asked.
        environment: Python, platform, CPU count and where Redis came from.
        seconds: Wall time of the whole run.
    """

    config: StoreBenchConfig
    results: list[StoreBenchResult]
    environment: dict[str, Any]
    seconds: float

    @property
    def failed(self) -> bool:
        """Whether a store raised during the run."""
        return any(r.status.startswith("error") for r in self.results)

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
        return {
            "benchmark": "store",
            "config": config,
            "environment": self.environment,
            "seconds": round(self.seconds, 3),
            "results": rows,
        }


# --------------------------------------------------------------------------- workload


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
                out.append(_unit_rows(parts.mean(axis=0, keepdims=True))[0].tolist())
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


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


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


@dataclass
class _Workload:
    """The reads measured at one size (shared by every store)."""

    get_keys: list[str]
    query_texts: list[str]
    exact: list[set[str]]
    sources: list[str]
    """For each query, the key of the stored item it was made from."""


class _Dataset:
    """Vectors of every item, and the per-size workloads derived from them."""

    def __init__(self, config: StoreBenchConfig) -> None:
        self.config = config
        n = max(config.sizes)
        rng = np.random.default_rng(config.seed)
        if config.data == "clustered":
            centres = rng.standard_normal((config.clusters, config.dims), dtype=np.float32)
            topic = rng.integers(0, config.clusters, n)
            spread = rng.standard_normal((n, config.dims), dtype=np.float32) * 0.7
            self.vectors = _unit_rows(centres[topic] + spread)
        else:
            self.vectors = _unit_rows(rng.standard_normal((n, config.dims), dtype=np.float32))
        self.embeddings = LookupEmbeddings([item_text(i) for i in range(n)], self.vectors)
        self._workloads: dict[int, _Workload] = {}

    def workload(self, size: int) -> _Workload:
        """Get keys, query texts and exact top k at `size` (computed once per size)."""
        found = self._workloads.get(size)
        if found is not None:
            return found
        cfg = self.config
        rng = np.random.default_rng([cfg.seed, size])
        get_keys = [item_key(int(i)) for i in rng.integers(0, size, cfg.gets)]
        bases = rng.integers(0, size, cfg.searches)
        noise = rng.standard_normal((cfg.searches, cfg.dims)) * (cfg.noise / math.sqrt(cfg.dims))
        queries = _unit_rows(self.vectors[bases].astype(np.float64) + noise)
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
        found = _Workload(get_keys=get_keys, query_texts=texts, exact=exact, sources=sources)
        self._workloads[size] = found
        return found


# --------------------------------------------------------------------------- stores


def _index_config(config: StoreBenchConfig, embeddings: Embeddings) -> dict[str, Any]:
    return {"dims": config.dims, "embed": embeddings, "fields": ["content"]}


@contextlib.contextmanager
def _open_store(
    name: str,
    *,
    config: StoreBenchConfig,
    embeddings: Embeddings,
    run_id: str,
    redis_url: str | None,
    clean_redis: bool,
    chroma_path: str,
) -> Iterator[BaseStore]:
    """Open one store, set it up, and close it at the end.

    With `clean_redis` (a Redis the run did not start), the keys and indexes the store
    wrote are deleted at the end.
    """
    index = _index_config(config, embeddings)
    prefix = f"bench_{run_id}"
    if name == "inmemory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=index)  # type: ignore[arg-type]
        return
    if name in ("long", "hybrid", "short"):
        from langgraph_tiered_memory import ScoringConfig, TieredMemoryStore, TierPolicy

        policy: TierPolicy = {"default": "short"} if name == "short" else {"default": "long"}
        # "long" measures dense search alone (compared with RedisStore); "hybrid" the
        # default memory ranking: dense + keyword retrieval, fusion, memory factors.
        scoring: ScoringConfig = (
            {"mode": "memory", "retrieval": "hybrid"}
            if name == "hybrid"
            else {"mode": "similarity"}
        )
        store = TieredMemoryStore(
            redis_url=redis_url if name == "short" else None,
            chroma_path=chroma_path if name != "short" else None,
            index=index,  # type: ignore[arg-type]
            tiers=policy,
            key_prefix=f"{prefix}_{name}",
            scoring=scoring,
        )
        try:
            store.setup()
            try:
                yield store
            finally:
                # Only once set up: a cleanup error must not hide a failed connection.
                if name == "short" and clean_redis:
                    _drop_redis_keys(redis_url, [f"{prefix}_{name}:*"], [])
        finally:
            store.close()
        return
    if name == "redisstore":
        from langgraph.store.redis import RedisStore

        assert redis_url is not None
        store_prefix, vector_prefix = f"{prefix}_store", f"{prefix}_vectors"
        index["distance_type"] = "cosine"
        with RedisStore.from_conn_string(
            redis_url,
            index=index,  # type: ignore[arg-type]
            store_prefix=store_prefix,
            vector_prefix=vector_prefix,
        ) as upstream:
            upstream.setup()
            try:
                yield upstream
            finally:
                if clean_redis:
                    _drop_redis_keys(
                        redis_url,
                        [f"{store_prefix}:*", f"{vector_prefix}:*"],
                        [store_prefix, vector_prefix],
                    )
        return
    raise StoreBenchmarkError(f"Unknown store {name!r}; choose from {', '.join(STORE_CHOICES)}.")


def _drop_redis_keys(url: str | None, patterns: list[str], indexes: list[str]) -> None:
    """Delete what a run wrote to a shared (``REDIS_URL``) server."""
    import redis

    if url is None:
        return
    client = redis.Redis.from_url(url)
    try:
        for name in indexes:
            with contextlib.suppress(redis.ResponseError):
                client.execute_command("FT.DROPINDEX", name)
        for pattern in patterns:
            batch: list[bytes] = []
            for key in client.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    client.unlink(*batch)
                    batch.clear()
            if batch:
                client.unlink(*batch)
    finally:
        client.close()


# --------------------------------------------------------------------------- measuring


def _percentiles_ms(samples: list[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(np.asarray(samples) * 1000.0, [50, 95])
    return float(p50), float(p95)


def _ingest(
    store: BaseStore,
    start: int,
    stop: int,
    *,
    batch_size: int,
    on_batch: Callable[[int], None],
) -> float:
    """Write items `start..stop-1` in batches; return the seconds spent in `batch`."""
    spent = 0.0
    for lo in range(start, stop, batch_size):
        hi = min(lo + batch_size, stop)
        ops = [PutOp(NAMESPACE, item_key(i), {"content": item_text(i)}) for i in range(lo, hi)]
        start_time = time.perf_counter()
        store.batch(ops)
        spent += time.perf_counter() - start_time
        on_batch(hi - lo)
    return spent


@dataclass
class _Reads:
    """Raw figures of the reads at one size."""

    get_seconds: list[float]
    get_hit_rate: float
    search_seconds: list[float]
    list_seconds: list[float]
    recall: float
    source_at_1: float


def _measure_reads(store: BaseStore, work: _Workload, k: int) -> _Reads:
    """Time the gets and searches of `work`; one untimed warm-up call of each first."""
    store.get(NAMESPACE, work.get_keys[0])
    store.search(NAMESPACE, query=work.query_texts[0], limit=k)
    get_times: list[float] = []
    hits = 0
    for key in work.get_keys:
        start = time.perf_counter()
        item = store.get(NAMESPACE, key)
        get_times.append(time.perf_counter() - start)
        hits += item is not None
    search_times: list[float] = []
    recalls: list[float] = []
    firsts = 0
    for text, exact, source in zip(work.query_texts, work.exact, work.sources, strict=True):
        start = time.perf_counter()
        found = store.search(NAMESPACE, query=text, limit=k)
        search_times.append(time.perf_counter() - start)
        recalls.append(len({r.key for r in found} & exact) / len(exact))
        firsts += bool(found) and found[0].key == source
    list_times: list[float] = []
    for _ in range(50):
        start = time.perf_counter()
        listed = store.list_namespaces()
        list_times.append(time.perf_counter() - start)
        assert listed == [NAMESPACE], f"list_namespaces() returned {listed}"
    return _Reads(
        get_seconds=get_times,
        get_hit_rate=hits / len(work.get_keys),
        search_seconds=search_times,
        list_seconds=list_times,
        recall=float(np.mean(recalls)),
        source_at_1=firsts / len(work.query_texts),
    )


def _bench_one_store(
    name: str,
    *,
    config: StoreBenchConfig,
    data: _Dataset,
    open_store: Callable[[], AbstractContextManager[BaseStore]],
    progress: Progress,
    task: TaskID,
    console: Console,
) -> list[StoreBenchResult]:
    label = STORE_LABELS[name]
    sizes = config.measured_sizes(name)
    rows = [
        StoreBenchResult(store=name, label=label, size=s, status=STATUS_CAPPED, k=config.k)
        for s in config.sizes
        if s not in sizes
    ]
    if not sizes:
        progress.update(task, completed=0, total=0, description=f"{name}: skipped (cap)")
        return rows
    measured: list[StoreBenchResult] = []
    done = 0
    progress.start_task(task)
    try:
        with open_store() as store:
            for size in sizes:
                progress.update(task, description=f"{name}: inserting up to {size:,}")
                put_seconds = _ingest(
                    store,
                    done,
                    size,
                    batch_size=config.batch_size,
                    on_batch=lambda n: progress.advance(task, n),
                )
                put_items, done = size - done, size
                progress.update(task, description=f"{name}: measuring at {size:,}")
                work = data.workload(size)
                reads = _measure_reads(store, work, config.k)
                get_p50, get_p95 = _percentiles_ms(reads.get_seconds)
                search_p50, search_p95 = _percentiles_ms(reads.search_seconds)
                row = StoreBenchResult(
                    store=name,
                    label=label,
                    size=size,
                    status=STATUS_OK,
                    put_items=put_items,
                    put_seconds=put_seconds,
                    put_per_s=put_items / put_seconds if put_seconds > 0 else None,
                    get_p50_ms=get_p50,
                    get_p95_ms=get_p95,
                    get_hit_rate=reads.get_hit_rate,
                    search_p50_ms=search_p50,
                    search_p95_ms=search_p95,
                    list_p50_ms=_percentiles_ms(reads.list_seconds)[0],
                    recall_at_k=reads.recall,
                    source_at_1=reads.source_at_1,
                    k=config.k,
                )
                measured.append(row)
                progress.console.print(
                    f"[dim]{name} @ {size:,}: put {_fmt(row.put_per_s, ',.0f')}/s, get p50"
                    f" {_ms(get_p50)} ms, search p50 {_ms(search_p50)} ms,"
                    f" recall@{config.k} {reads.recall:.3f}[/dim]"
                )
            progress.update(task, description=f"{name}: done")
    except Exception as e:  # recorded in the report; the CLI exits non-zero
        error = f"error: {type(e).__name__}: {e}"
        console.print(f"[red]{label} failed:[/red] {error}")
        done_sizes = {r.size for r in measured}
        measured.extend(
            StoreBenchResult(store=name, label=label, size=s, status=error, k=config.k)
            for s in sizes
            if s not in done_sizes
        )
        progress.update(task, description=f"{name}: failed")
    progress.stop_task(task)
    return sorted(measured + rows, key=lambda r: r.size)


def run_store_benchmark(
    config: StoreBenchConfig, *, console: Console | None = None
) -> StoreBenchReport:
    """Run the store benchmark and return its figures.

    Redis is `config.redis_url`, else `REDIS_URL`, else an embedded server started for
    the run (only when a Redis-backed store is asked for). A store that raises is
    reported with an ``error: ...`` status and the run goes on with the next store.

    Args:
        config: What to measure.
        console: Where the progress bar and per-size summaries go (default stdout).

    Returns:
        The report; render it with `render_store_report`.

    Raises:
        StoreBenchmarkError: The config is invalid.
    """
    config.validate()
    console = console or Console()
    started = time.perf_counter()
    run_id = uuid.uuid4().hex[:8]
    needs_redis = any(
        config.measured_sizes(s) for s in config.stores if s in ("short", "redisstore")
    )
    environment: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "run_id": run_id,
        "redis": None,
    }
    results: list[StoreBenchResult] = []
    with ExitStack() as stack:
        redis_url = config.redis_url
        clean_redis = needs_redis
        if needs_redis and redis_url is None:
            from langgraph_tiered_memory.embedded import redis_url_or_embedded

            environment["redis"] = "REDIS_URL" if os.environ.get("REDIS_URL") else "embedded"
            redis_url = stack.enter_context(redis_url_or_embedded())
            clean_redis = environment["redis"] == "REDIS_URL"
        elif needs_redis:
            environment["redis"] = "given"
        if config.chroma_path is None:
            chroma_path = tempfile.mkdtemp(prefix="tiered-memory-bench-")
            stack.callback(shutil.rmtree, chroma_path, ignore_errors=True)
        else:
            chroma_path = config.chroma_path
            stack.callback(_drop_chroma_collections, chroma_path, f"bench_{run_id}_")
        data = _Dataset(config)
        progress = Progress(
            TextColumn("{task.description:<34}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
        )
        with progress:
            tasks = {}
            for name in config.stores:
                top = max(config.measured_sizes(name), default=0)
                tasks[name] = progress.add_task(f"{name}: waiting", total=top, start=False)
            for name in config.stores:

                def opener(name: str = name) -> AbstractContextManager[BaseStore]:
                    return _open_store(
                        name,
                        config=config,
                        embeddings=data.embeddings,
                        run_id=run_id,
                        redis_url=redis_url,
                        clean_redis=clean_redis,
                        chroma_path=chroma_path,
                    )

                results.extend(
                    _bench_one_store(
                        name,
                        config=config,
                        data=data,
                        open_store=opener,
                        progress=progress,
                        task=tasks[name],
                        console=console,
                    )
                )
                gc.collect()
    return StoreBenchReport(
        config=config,
        results=results,
        environment=environment,
        seconds=time.perf_counter() - started,
    )


def _drop_chroma_collections(path: str, name_prefix: str) -> None:
    """Delete the collections this run created in a user-given Chroma directory."""
    if not os.path.isdir(path):
        return
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    for col in client.list_collections():
        if col.name.startswith(name_prefix):
            client.delete_collection(col.name)


# --------------------------------------------------------------------------- output


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _ms(value: float | None) -> str:
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


def render_store_report(report: StoreBenchReport, console: Console) -> None:
    """Print the report as a rich table, one section per store.

    Args:
        report: What `run_store_benchmark` returned.
        console: Where to print.
    """
    cfg = report.config
    table = Table(
        title=(
            f"Store benchmark: one namespace, dims {cfg.dims}, k={cfg.k},"
            f" {cfg.gets} gets, {cfg.searches} searches per size"
        ),
        caption=(
            "put/s: items written since the previous size / time in store.batch"
            f" (batches of {cfg.batch_size}); latencies in ms, each call timed alone;"
            f" recall@{cfg.k} against exact numpy top {cfg.k}; source@1: first hit is the"
            " item the query was made from"
        ),
    )
    table.add_column("store")
    table.add_column("items", justify="right")
    table.add_column("put/s", justify="right")
    table.add_column("get p50", justify="right")
    table.add_column("get p95", justify="right")
    table.add_column("get hits", justify="right")
    table.add_column("search p50", justify="right")
    table.add_column("search p95", justify="right")
    table.add_column("list p50", justify="right")
    table.add_column(f"recall@{cfg.k}", justify="right")
    table.add_column("source@1", justify="right")
    previous = None
    for r in report.results:
        if previous is not None and r.store != previous:
            table.add_section()
        name = r.label if r.store != previous else ""
        previous = r.store
        if r.status != STATUS_OK:
            style = "red" if r.status.startswith("error") else "yellow"
            table.add_row(name, f"{r.size:,}", f"[{style}]{r.status}[/{style}]")
            continue
        table.add_row(
            name,
            f"{r.size:,}",
            _fmt(r.put_per_s, ",.0f"),
            _ms(r.get_p50_ms),
            _ms(r.get_p95_ms),
            _fmt(None if r.get_hit_rate is None else 100 * r.get_hit_rate, ".0f") + "%",
            _ms(r.search_p50_ms),
            _ms(r.search_p95_ms),
            _ms(r.list_p50_ms),
            _fmt(r.recall_at_k, ".3f"),
            _fmt(r.source_at_1, ".2f"),
        )
    console.print(table)
    env = report.environment
    console.print(
        f"[dim]Python {env['python']} on {env['platform']}, {env['cpus']} CPUs; Redis:"
        f" {env['redis'] or 'not used'}; total {report.seconds:,.1f} s[/dim]"
    )
