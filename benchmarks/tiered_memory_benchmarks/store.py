"""Store benchmark: put throughput, get and search latency, search recall.

Two modes. `run_store_benchmark` (below) grows one namespace; `run_namespace_benchmark`
(`tiered-memory bench store --namespaces N --per-namespace M`) writes many small
namespaces, one per user, and adds cold searches in a fresh process, disk or memory per
item and files per item (see `tiered_memory_benchmarks._store_namespaces`).

In the one-namespace mode every store gets the same workload through the public
`BaseStore` API only:

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

    from tiered_memory_benchmarks.store import StoreBenchConfig, run_store_benchmark

    report = run_store_benchmark(
        StoreBenchConfig(sizes=[200], stores=["inmemory"], gets=20, searches=10),
        console=Console(quiet=True),
    )
    assert report.results[0].recall_at_10 == 1.0
    ```

    Many small namespaces:
    ```python
    from rich.console import Console

    from tiered_memory_benchmarks.store import NamespaceBenchConfig, run_namespace_benchmark

    config = NamespaceBenchConfig(namespaces=20, per_namespace=5, stores=["inmemory"], searches=10)
    report = run_namespace_benchmark(config, console=Console(quiet=True))
    warm = report.results[0].warm  # searches of namespaces searched before
    assert warm is not None and warm.hit_at_1 == 1.0
    ```
"""

from __future__ import annotations

import contextlib
import gc
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from tiered_memory_benchmarks._store_data import (
    LookupEmbeddings,
    StoreBenchmarkError,
    fmt,
    fmt_ms,
    item_key,
    item_text,
    make_progress,
    percentiles_ms,
    run_environment,
)
from tiered_memory_benchmarks._store_namespaces import (
    NamespaceBenchConfig,
    NamespaceBenchReport,
    NamespaceBenchResult,
    render_namespace_report,
    run_namespace_benchmark,
)
from tiered_memory_benchmarks._store_open import (
    REDIS_STORES,
    STORE_CHOICES,
    STORE_LABELS,
    StoreSpec,
    drop_chroma_collections,
    drop_redis_keys,
    open_store,
    redis_for_run,
)
from tiered_memory_benchmarks._store_sizes import (
    NAMESPACE,
    STATUS_CAPPED,
    STATUS_OK,
    Dataset,
    StoreBenchConfig,
    StoreBenchReport,
    StoreBenchResult,
    Workload,
)

__all__ = [
    "STORE_CHOICES",
    "STORE_LABELS",
    "LookupEmbeddings",
    "NamespaceBenchConfig",
    "NamespaceBenchReport",
    "NamespaceBenchResult",
    "StoreBenchConfig",
    "StoreBenchReport",
    "StoreBenchResult",
    "StoreBenchmarkError",
    "render_namespace_report",
    "render_store_report",
    "run_namespace_benchmark",
    "run_store_benchmark",
]


@contextlib.contextmanager
def _open_and_clean(
    spec: StoreSpec, embeddings: Embeddings, *, clean_redis: bool
) -> Iterator[BaseStore]:
    """Open a store; with `clean_redis` (a Redis the run did not start), delete its keys.

    The keys are deleted only once the store is set up: a cleanup error must not hide a
    failed connection.
    """
    with open_store(spec, embeddings) as store:
        try:
            yield store
        finally:
            if clean_redis:
                drop_redis_keys(spec)


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


def _measure_reads(store: BaseStore, work: Workload, k: int) -> _Reads:
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
    data: Dataset,
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
                get_p50, get_p95 = percentiles_ms(reads.get_seconds)
                search_p50, search_p95 = percentiles_ms(reads.search_seconds)
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
                    list_p50_ms=percentiles_ms(reads.list_seconds)[0],
                    recall_at_k=reads.recall,
                    source_at_1=reads.source_at_1,
                    k=config.k,
                )
                measured.append(row)
                progress.console.print(
                    f"[dim]{name} @ {size:,}: put {fmt(row.put_per_s, ',.0f')}/s, get p50"
                    f" {fmt_ms(get_p50)} ms, search p50 {fmt_ms(search_p50)} ms,"
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
    needs_redis = any(config.measured_sizes(s) for s in config.stores if s in REDIS_STORES)
    environment = run_environment(run_id)
    results: list[StoreBenchResult] = []
    with ExitStack() as stack:
        redis_url, origin = redis_for_run(stack, config.redis_url, needs_redis)
        environment["redis"] = origin or None
        clean_redis = origin in ("given", "REDIS_URL")
        if config.chroma_path is None:
            chroma_path = tempfile.mkdtemp(prefix="tiered-memory-bench-")
            stack.callback(shutil.rmtree, chroma_path, ignore_errors=True)
        else:
            chroma_path = config.chroma_path
            stack.callback(drop_chroma_collections, chroma_path, f"bench_{run_id}_")
        data = Dataset(config)
        progress = make_progress(console)
        with progress:
            tasks = {}
            for name in config.stores:
                top = max(config.measured_sizes(name), default=0)
                tasks[name] = progress.add_task(f"{name}: waiting", total=top, start=False)
            for name in config.stores:
                spec = StoreSpec(name, config.dims, f"bench_{run_id}", redis_url, chroma_path)

                def opener(spec: StoreSpec = spec) -> AbstractContextManager[BaseStore]:
                    return _open_and_clean(spec, data.embeddings, clean_redis=clean_redis)

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
            fmt(r.put_per_s, ",.0f"),
            fmt_ms(r.get_p50_ms),
            fmt_ms(r.get_p95_ms),
            fmt(None if r.get_hit_rate is None else 100 * r.get_hit_rate, ".0f") + "%",
            fmt_ms(r.search_p50_ms),
            fmt_ms(r.search_p95_ms),
            fmt_ms(r.list_p50_ms),
            fmt(r.recall_at_k, ".3f"),
            fmt(r.source_at_1, ".2f"),
        )
    console.print(table)
    env = report.environment
    console.print(
        f"[dim]Python {env['python']} on {env['platform']}, {env['cpus']} CPUs; Redis:"
        f" {env['redis'] or 'not used'}; total {report.seconds:,.1f} s[/dim]"
    )
