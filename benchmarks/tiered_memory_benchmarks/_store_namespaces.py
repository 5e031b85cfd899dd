"""Store benchmark over many small namespaces (`tiered-memory bench store --namespaces`).

The usual LangGraph layout: one namespace per user, ``("memories", "user-<i>")``, each
with a few tens of items. Every store gets the same workload through the public
`BaseStore` API only:

- ``namespaces x per_namespace`` items ``{"content": ...}`` indexed on ``content``,
  written namespace after namespace with `store.batch` in batches of `batch_size`;
- deterministic fake embeddings (`SeededEmbeddings`, dims 384): a random unit vector
  per text, computed before each timed call so embedding costs nothing;
- searches with ``limit=k`` (5) in a random namespace, the query being the text of a
  random item of it (so that item should rank first: ``hit@1``):

  - *first touch*: one search in each of `searches` random namespaces, in the writing
    process right after the writes;
  - *warm*: `searches` more searches in those already searched namespaces;
  - *cold*: a fresh Python process opens the store (the writer has closed it) and times
    the first search of each of `searches` random namespaces, after one untimed search
    of another namespace that pays the process's one-time costs;
- `list_namespaces(prefix=("memories",), limit=namespaces)`, `lists` times.

Footprint per item: for the Chroma stores, the bytes and files in the store's own
Chroma directory once it is closed; for the Redis stores, the growth of Redis's
``used_memory`` while writing (memory, not disk); none for `InMemoryStore`.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, PutOp
from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from tiered_memory_benchmarks import _store_data as common
from tiered_memory_benchmarks._store_cold import Query, cold_plan, time_searches
from tiered_memory_benchmarks._store_data import (
    BenchReport,
    SeededEmbeddings,
    StoreBenchmarkError,
    check_positive,
)
from tiered_memory_benchmarks._store_open import (
    REDIS_STORES,
    STORE_LABELS,
    StoreSpec,
    checked_stores,
    directory_footprint,
    drop_redis_keys,
    open_store,
    redis_for_run,
    redis_used_memory,
)

__all__ = [
    "NamespaceBenchConfig",
    "NamespaceBenchReport",
    "NamespaceBenchResult",
    "namespace_of",
    "render_namespace_report",
    "run_namespace_benchmark",
]

logger = logging.getLogger("tiered_memory_benchmarks.store_namespaces")

CHROMA_STORES = frozenset({"long", "hybrid"})
"""The stores whose data is a Chroma directory."""

_SHORT_LABELS = {
    "long": "long (Chroma)",
    "hybrid": "long (memory)",
    "short": "short (Redis)",
    "inmemory": "InMemoryStore",
    "redisstore": "RedisStore",
}


def namespace_of(i: int) -> tuple[str, str]:
    """The namespace of user `i`: ``("memories", "user-<i>")``.

    Args:
        i: User number.

    Returns:
        The namespace.
    """
    return ("memories", f"user-{i}")


@dataclass
class NamespaceBenchConfig:
    """What the many-namespaces benchmark measures.

    Attributes:
        namespaces: Number of namespaces (users), at least 2.
        per_namespace: Items per namespace.
        stores: Stores to benchmark, from `STORE_CHOICES` (``hybrid`` is the long tier
            in memory mode).
        searches: Timed searches of each kind (first touch, warm, cold); first touches
            and cold ones are in distinct namespaces, so at most ``namespaces - 1``.
        k: Results per search.
        chroma_path: Directory under which each Chroma store gets its own directory
            (``bench-<run id>/<store>``, removed at the end). `None` uses a temporary
            directory.
        dims: Size of the fake embeddings.
        batch_size: Items per `store.batch` call while writing.
        redis_url: Redis (with RediSearch and RedisJSON for `redisstore`). `None` uses
            `REDIS_URL` or starts an embedded server when needed.
        seed: Seed of the namespaces and items searched.
        cold: Whether to measure cold searches in a fresh process.
        cold_timeout: Seconds the fresh process of one store may take.
        lists: Timed `list_namespaces` calls.
    """

    namespaces: int = 1_000
    per_namespace: int = 20
    stores: list[str] = field(default_factory=lambda: ["long", "short", "inmemory", "redisstore"])
    searches: int = 100
    k: int = 5
    chroma_path: str | None = None
    dims: int = 384
    batch_size: int = 500
    redis_url: str | None = None
    seed: int = 0
    cold: bool = True
    cold_timeout: float = 900.0
    lists: int = 20

    def validate(self) -> NamespaceBenchConfig:
        """Check the options and de-duplicate `stores`.

        Returns:
            This config.

        Raises:
            StoreBenchmarkError: An option is out of range or a store name is unknown.
        """
        if self.namespaces < 2:
            raise StoreBenchmarkError(f"namespaces must be at least 2, got {self.namespaces}.")
        self.stores = checked_stores(self.stores)
        names = ("per_namespace", "searches", "lists", "k", "dims", "batch_size", "cold_timeout")
        check_positive(self, names)
        return self

    @property
    def items(self) -> int:
        """Items written to each store."""
        return self.namespaces * self.per_namespace


@dataclass
class PutFigures:
    """How fast a store took the items.

    Attributes:
        items: Items written.
        seconds: Time spent in `store.batch` writing them.
        per_s: `items / seconds`.
    """

    items: int
    seconds: float
    per_s: float


@dataclass
class SearchFigures:
    """Latencies of one kind of search, in milliseconds.

    Attributes:
        p50_ms: Median latency.
        p95_ms: 95th percentile.
        hit_at_1: Fraction of searches whose first result is the item whose text was the
            query.
        samples: Searches timed.
        open_s: For cold searches, the seconds the fresh process took to open and set up
            the store.
    """

    p50_ms: float
    p95_ms: float
    hit_at_1: float
    samples: int
    open_s: float | None = None


@dataclass
class Footprint:
    """What the items take.

    Attributes:
        kind: ``"disk"`` (the store's Chroma directory, closed) or ``"memory"`` (growth
            of Redis's ``used_memory`` while writing).
        total_bytes: Bytes of that footprint.
        bytes_per_item: `total_bytes / items`.
        files: Files in the Chroma directory (`None` for memory).
        files_per_item: `files / items`.
    """

    kind: str
    total_bytes: int
    bytes_per_item: float
    files: int | None = None
    files_per_item: float | None = None


@dataclass
class ListFigures:
    """`list_namespaces(prefix=("memories",), limit=namespaces)` timings.

    Attributes:
        p50_ms: Median latency in milliseconds.
        listed: Namespaces the call returned (all of them when it works).
    """

    p50_ms: float
    listed: int


@dataclass
class NamespaceBenchResult:
    """Figures of one store; a group is `None` when it was not measured.

    Attributes:
        store: Store name from `STORE_CHOICES`.
        label: Human-readable store name.
        put: Put rate.
        touch: First search of a namespace in the writing process.
        warm: Searches of namespaces already searched, in the writing process.
        status: ``"ok"`` or ``"error: ..."`` (the groups measured before the error stay).
        cold: First search of a namespace in a fresh process.
        footprint: Disk or memory per item; `None` for `InMemoryStore`.
        lists: `list_namespaces` latency.
    """

    store: str
    label: str
    put: PutFigures | None = None
    touch: SearchFigures | None = None
    warm: SearchFigures | None = None
    status: str = "ok"
    cold: SearchFigures | None = None
    footprint: Footprint | None = None
    lists: ListFigures | None = None


class NamespaceBenchReport(BenchReport[NamespaceBenchConfig, NamespaceBenchResult]):
    """Everything one many-namespaces run measured: one row per store.

    `failed` tells whether a store raised during the run.
    """

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary of the run.

        Returns:
            A dict with keys ``benchmark`` (``"store-namespaces"``), ``config``,
            ``environment``, ``seconds`` and ``results`` (one dict per store).
        """
        config = asdict(self.config)
        config["items"] = self.config.items
        config["namespace"] = ["memories", "user-<i>"]
        return self._summary("store-namespaces", config, [asdict(r) for r in self.results])


# --------------------------------------------------------------------------- workload


@dataclass
class _Plan:
    """The searches of a run, the same for every store."""

    touch: list[Query]
    warm: list[Query]
    writer_warmup: Query
    cold: list[Query]
    cold_warmup: Query


def _query(config: NamespaceBenchConfig, user: int, rng: np.random.Generator) -> Query:
    j = int(rng.integers(config.per_namespace))
    return namespace_of(user), common.item_text(user * config.per_namespace + j), common.item_key(j)


def _plan(config: NamespaceBenchConfig) -> _Plan:
    rng = np.random.default_rng([config.seed, config.namespaces, config.per_namespace])
    sample = min(config.searches, config.namespaces - 1)
    touched = [int(u) for u in rng.permutation(config.namespaces)[: sample + 1]]
    cold = [int(u) for u in rng.permutation(config.namespaces)[: sample + 1]]
    return _Plan(
        touch=[_query(config, u, rng) for u in touched[:sample]],
        warm=[_query(config, int(u), rng) for u in rng.choice(touched[:sample], config.searches)],
        writer_warmup=_query(config, touched[sample], rng),
        cold=[_query(config, u, rng) for u in cold[:sample]],
        cold_warmup=_query(config, cold[sample], rng),
    )


def _write(
    store: BaseStore,
    config: NamespaceBenchConfig,
    embeddings: SeededEmbeddings,
    advance: Any,
) -> float:
    """Write every item, namespace after namespace; return the seconds in `batch`."""
    spent = 0.0
    m = config.per_namespace
    for lo in range(0, config.items, config.batch_size):
        hi = min(lo + config.batch_size, config.items)
        texts = [common.item_text(g) for g in range(lo, hi)]
        ops = [
            PutOp(namespace_of(g // m), common.item_key(g % m), {"content": text})
            for g, text in zip(range(lo, hi), texts, strict=True)
        ]
        embeddings.prefetch(texts)
        start = time.perf_counter()
        store.batch(ops)
        spent += time.perf_counter() - start
        advance(hi - lo)
    return spent


def _searches(
    store: BaseStore, queries: list[Query], k: int, embeddings: SeededEmbeddings
) -> SearchFigures:
    embeddings.prefetch(q[1] for q in queries)
    return _search_figures(*time_searches(store, queries, k))


def _search_figures(seconds: list[float], hits: int) -> SearchFigures:
    p50, p95 = common.percentiles_ms(seconds)
    return SearchFigures(p50_ms=p50, p95_ms=p95, hit_at_1=hits / len(seconds), samples=len(seconds))


def _time_lists(store: BaseStore, config: NamespaceBenchConfig) -> ListFigures:
    seconds: list[float] = []
    listed: list[tuple[str, ...]] = []
    for _ in range(config.lists):
        start = time.perf_counter()
        listed = store.list_namespaces(prefix=("memories",), limit=config.namespaces)
        seconds.append(time.perf_counter() - start)
    return ListFigures(p50_ms=common.percentiles_ms(seconds)[0], listed=len(listed))


def _run_cold(spec: StoreSpec, config: NamespaceBenchConfig, plan: _Plan) -> dict[str, Any]:
    """Time first touches in a fresh process (see `_store_cold`)."""
    with tempfile.TemporaryDirectory(prefix="tiered-memory-cold-") as tmp:
        plan_path, result_path = os.path.join(tmp, "plan.json"), os.path.join(tmp, "result.json")
        with open(plan_path, "w", encoding="utf-8") as f:
            json.dump(cold_plan(spec, config.k, plan.cold_warmup, plan.cold), f)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tiered_memory_benchmarks._store_cold",
                plan_path,
                result_path,
            ],
            capture_output=True,
            text=True,
            timeout=config.cold_timeout,
            check=False,
        )
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise StoreBenchmarkError(f"the cold process exited with {proc.returncode}: {tail[0]}")
        with open(result_path, encoding="utf-8") as f:
            result: dict[str, Any] = json.load(f)
    return result


def _measure_store(
    row: NamespaceBenchResult,
    spec: StoreSpec,
    *,
    config: NamespaceBenchConfig,
    plan: _Plan,
    progress: Progress,
    task: TaskID,
) -> None:
    """Fill `row` with the figures of one store (as far as it gets before an error)."""
    embeddings = SeededEmbeddings(config.dims)
    redis_url = spec.redis_url if spec.name in REDIS_STORES else None
    redis_before = None if redis_url is None else redis_used_memory(redis_url)
    progress.start_task(task)
    progress.update(task, description=f"{spec.name}: writing")
    with open_store(spec, embeddings) as store:
        seconds = _write(store, config, embeddings, lambda n: progress.advance(task, n))
        row.put = PutFigures(config.items, seconds, config.items / max(seconds, 1e-9))
        if redis_url is not None and redis_before is not None:
            grown = max(redis_used_memory(redis_url) - redis_before, 0)
            row.footprint = Footprint("memory", grown, grown / config.items)
        progress.update(task, description=f"{spec.name}: searching")
        _searches(store, [plan.writer_warmup], config.k, embeddings)
        row.touch = _searches(store, plan.touch, config.k, embeddings)
        row.warm = _searches(store, plan.warm, config.k, embeddings)
        row.lists = _time_lists(store, config)
    if spec.name in CHROMA_STORES and spec.chroma_path is not None:
        size, files = directory_footprint(spec.chroma_path)
        row.footprint = Footprint("disk", size, size / config.items, files, files / config.items)
    if config.cold and spec.name != "inmemory":
        progress.update(task, description=f"{spec.name}: cold process")
        cold = _run_cold(spec, config, plan)
        row.cold = _search_figures(cold["seconds"], cold["hits"])
        row.cold.open_s = float(cold["open_seconds"])
    progress.update(task, description=f"{spec.name}: done")


def run_namespace_benchmark(
    config: NamespaceBenchConfig, *, console: Console | None = None
) -> NamespaceBenchReport:
    """Write `config.namespaces` small namespaces into each store and time the reads.

    Stores run one after the other, each on its own data: a Chroma store in its own
    directory, a Redis store under the run's key prefix. Redis is `config.redis_url`,
    else `REDIS_URL`, else an embedded server started for the run (only when a
    Redis-backed store is asked for); a server the run did not start gets each store's
    keys deleted once it is measured. A store that raises gets an ``error: ...`` status,
    keeps the figures measured before, and the run goes on with the next store.

    Args:
        config: The sizes, stores and searches of the run.
        console: Progress bar and one summary line per store (default: stdout).

    Returns:
        The figures, for `render_namespace_report` or `NamespaceBenchReport.to_dict`.

    Raises:
        StoreBenchmarkError: An option of `config` is out of range.
    """
    config.validate()
    plan = _plan(config)
    run_id = uuid.uuid4().hex[:8]
    environment = common.run_environment(run_id)
    console = console or Console()
    started = time.perf_counter()
    results: list[NamespaceBenchResult] = []
    with ExitStack() as stack:
        needs_redis = any(s in REDIS_STORES for s in config.stores)
        redis_url, origin = redis_for_run(stack, config.redis_url, needs_redis)
        environment["redis"] = origin or None
        if config.chroma_path is None:
            root = tempfile.mkdtemp(prefix="tiered-memory-bench-")
        else:
            root = os.path.join(config.chroma_path, f"bench-{run_id}")
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        progress = common.make_progress(console)
        with progress:
            tasks = {
                name: progress.add_task(f"{name}: waiting", total=config.items, start=False)
                for name in config.stores
            }
            for name in config.stores:
                spec = StoreSpec(
                    name, config.dims, f"bench_{run_id}", redis_url, os.path.join(root, name)
                )
                row = NamespaceBenchResult(store=name, label=STORE_LABELS[name])
                try:
                    _measure_store(
                        row, spec, config=config, plan=plan, progress=progress, task=tasks[name]
                    )
                except Exception as e:  # recorded in the report; the CLI exits non-zero
                    row.status = f"error: {type(e).__name__}: {e}"
                    logger.warning("%s failed", name, exc_info=True)
                    console.print(f"[red]{row.label} failed:[/red] {row.status}")
                    progress.update(tasks[name], description=f"{name}: failed")
                finally:
                    if origin in ("given", "REDIS_URL"):
                        drop_redis_keys(spec)
                    if spec.chroma_path is not None:
                        shutil.rmtree(spec.chroma_path, ignore_errors=True)
                progress.stop_task(tasks[name])
                results.append(row)
                progress.console.print(f"[dim]{name}: {_summary_line(row)}[/dim]")
                gc.collect()
    return NamespaceBenchReport(config, results, environment, time.perf_counter() - started)


# --------------------------------------------------------------------------- output


def _ms_of(figures: SearchFigures | None, which: str, missing: str = "-") -> str:
    return missing if figures is None else common.fmt_ms(getattr(figures, which))


def _summary_line(r: NamespaceBenchResult) -> str:
    put = "-" if r.put is None else common.fmt(r.put.per_s, ",.0f")
    return (
        f"put {put}/s, search p50 warm {_ms_of(r.warm, 'p50_ms')} ms,"
        f" cold {_ms_of(r.cold, 'p50_ms')} ms"
    )


def _per_item(footprint: Footprint | None) -> tuple[str, str]:
    """The bytes/item and files/item cells."""
    if footprint is None:
        return "n/a", "n/a"
    size = footprint.bytes_per_item
    text = f"{size / 1024:,.1f} KB" if size >= 1024 else f"{size:,.0f} B"
    if footprint.kind == "memory":
        text += " (mem)"
    files = footprint.files_per_item
    return text, "n/a" if files is None else f"{files:.3f}"


def _cells(r: NamespaceBenchResult, namespaces: int) -> list[str]:
    """The table cells of one measured store, after its label."""
    no_cold = "n/a" if r.store == "inmemory" else "-"
    listing = "-"
    if r.lists is not None:
        listing = common.fmt_ms(r.lists.p50_ms)
        if r.lists.listed != namespaces:
            listing += f" ({r.lists.listed:,} found)"
    hits = "-" if r.warm is None else f"{r.warm.hit_at_1:.2f}"
    if r.cold is not None:
        hits += f" / {r.cold.hit_at_1:.2f}"
    return [
        "-" if r.put is None else common.fmt(r.put.per_s, ",.0f"),
        _ms_of(r.touch, "p50_ms"),
        _ms_of(r.warm, "p50_ms"),
        _ms_of(r.warm, "p95_ms"),
        _ms_of(r.cold, "p50_ms", no_cold),
        _ms_of(r.cold, "p95_ms", no_cold),
        *_per_item(r.footprint),
        listing,
        hits,
    ]


def render_namespace_report(report: NamespaceBenchReport, console: Console) -> None:
    """Show one row per store, then a footnote line saying what each column means.

    Args:
        report: The figures of `run_namespace_benchmark`.
        console: The console to print the table and footnotes on.
    """
    cfg = report.config
    title = (
        f"Store benchmark: {cfg.namespaces:,} namespaces x {cfg.per_namespace} items"
        f" ({cfg.items:,} items), dims {cfg.dims}, k={cfg.k}, {cfg.searches} searches of"
        " each kind"
    )
    table = Table(title=title)
    table.add_column("store")
    for column in (
        "put/s",
        "1st touch p50",
        "warm p50",
        "warm p95",
        "cold p50",
        "cold p95",
        "bytes/item",
        "files/item",
        "list p50",
        "hit@1",
    ):
        table.add_column(column, justify="right")
    for r in report.results:
        label = _SHORT_LABELS.get(r.store, r.label)
        if r.status != "ok":
            table.add_row(label, f"[red]{r.status}[/red]")
            continue
        table.add_row(label, *_cells(r, cfg.namespaces))
    console.print(table)
    console.print(
        "[dim]long: the Chroma tier in similarity mode; long (memory): in memory mode; short:"
        " the Redis tier; RedisStore: upstream langgraph.store.redis."
        f" put/s: items / time in store.batch (batches of {cfg.batch_size}, namespace"
        " after namespace). Latencies in ms, each call timed alone, query = a random item's"
        f" text, k={cfg.k}. 1st touch: first search of a namespace in the writing process."
        " warm: searches of namespaces already searched. cold: first search of a namespace"
        " in a fresh process that opens the closed store (after one untimed search of"
        " another namespace). bytes/item: disk of the store's Chroma directory, or for Redis"
        " the growth of used_memory while writing (mem: memory, not disk). files/item:"
        " files in the Chroma directory / items. list p50: list_namespaces(prefix="
        f"('memories',), limit={cfg.namespaces:,}), with the number of namespaces it"
        " returned when that is not all of them. hit@1: fraction of searches ranking the"
        " query's own item first (warm / cold).[/dim]"
    )
    env = report.environment
    console.print(
        f"[dim]Python {env['python']} on {env['platform']}, {env['cpus']} CPUs; Redis:"
        f" {env['redis'] or 'not used'}; total {report.seconds:,.1f} s[/dim]"
    )
