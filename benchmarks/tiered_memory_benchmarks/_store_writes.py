"""Write cost against raw Chroma (`tiered-memory bench store --writes`).

Every column writes the same items, one user's namespace per call, in one run:

- ``raw``: a Chroma collection, ``upsert`` of one record per item shaped like the long
  tier's own record: the same vector, no Chroma document, one metadata field holding
  the item as JSON (namespace, key, times, value), and the HNSW settings of the tier's
  bucket collections (cosine, 8 neighbours, construction ef 16). So the ratios measure
  the tier's work around that record, not a different record or index;
- ``raw-default``: what a plain Chroma user writes: the text as Chroma document
  (full-text indexed), namespace, key and JSON value as three metadata fields, Chroma's
  default HNSW settings (16 neighbours, construction ef 100);
- ``long`` / ``hybrid``: `TieredMemoryStore`'s long tier in similarity / memory scoring;
- ``redisstore``: upstream `RedisStore`, as a reference.

Two shapes: `singles` calls of one item (`store.put`; for raw, an upsert of one record),
each timed alone, user ``i % users`` for item ``i`` (the p50 is also given apart for
the puts that are a namespace's first, and the others); then `batches` calls of
`batch_size` items of one user's namespace (`store.batch` of `PutOp`s; for raw, one
upsert). The columns take turns item by item and batch by batch, the order rotating,
so load from other processes falls on all of them alike. Vectors come from
`SeededEmbeddings`, computed before each timed call (a memory-mode context key, which
embeds a text not planned, is computed in the call: tens of microseconds). Each column
first writes one untimed warm-up item (collections created then). Ratios are column /
raw: latency over raw latency, and raw items/s over column items/s, so 1.5 means 1.5
times raw Chroma's cost. After the timing each column is read back (the collection's
``count``, a store's prefix search) to check every item landed.

Chroma is embedded (`PersistentClient` in a temporary directory, or under `chroma_path`)
unless `chroma_host` names a server; the run's collections are deleted at the end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from rich.console import Console
from rich.table import Table

from langgraph_tiered_memory.store.tiers.chroma_layout import BUCKET_HNSW
from tiered_memory_benchmarks import _store_data as common
from tiered_memory_benchmarks._store_data import (
    BenchReport,
    SeededEmbeddings,
    StoreBenchmarkError,
    check_positive,
)
from tiered_memory_benchmarks._store_open import (
    StoreSpec,
    drop_redis_keys,
    open_store,
    redis_for_run,
)

__all__ = [
    "WRITE_COLUMNS",
    "WriteBenchConfig",
    "WriteBenchReport",
    "WriteBenchResult",
    "render_write_report",
    "run_write_benchmark",
]

logger = logging.getLogger("tiered_memory_benchmarks.store_writes")

WRITE_COLUMNS: tuple[str, ...] = ("raw", "raw-default", "long", "hybrid", "redisstore")
"""Columns of the write benchmark; ``raw`` (plain Chroma) is the reference."""

_LABELS = {
    "raw": "raw Chroma",
    "raw-default": "raw, plain",
    "long": "long (similarity)",
    "hybrid": "long (memory)",
    "redisstore": "RedisStore",
}


@dataclass
class WriteBenchConfig:
    """What the write-cost benchmark measures.

    Attributes:
        singles: Timed one-item writes per column.
        batches: Timed batch writes per column.
        batch_size: Items per batch, all in one user's namespace.
        users: Namespaces ``("memories", "user-<i>")`` the writes are spread over.
        stores: Columns from `WRITE_COLUMNS`; ``raw`` is always measured, first.
        dims: Size of the fake embeddings.
        chroma_path: Directory under which the embedded columns get their own
            directories (removed at the end); `None`: a temporary directory.
        chroma_host: A Chroma server (`chroma run`) instead of embedded Chroma.
        chroma_port: Its port.
        redis_url: Redis for ``redisstore``; `None`: `REDIS_URL` or an embedded one.
    """

    singles: int = 300
    batches: int = 30
    batch_size: int = 20
    users: int = 100
    stores: list[str] = field(default_factory=lambda: list(WRITE_COLUMNS))
    dims: int = 384
    chroma_path: str | None = None
    chroma_host: str | None = None
    chroma_port: int = 8000
    redis_url: str | None = None

    def validate(self) -> WriteBenchConfig:
        """Check the options; put ``raw`` first in `stores`, each column once.

        Returns:
            This config.

        Raises:
            StoreBenchmarkError: An option is out of range or a column is unknown.
        """
        unknown = [s for s in self.stores if s not in WRITE_COLUMNS]
        if unknown:
            raise StoreBenchmarkError(
                f"Unknown column(s) {unknown} for --writes; choose from {', '.join(WRITE_COLUMNS)}."
            )
        self.stores = list(dict.fromkeys(["raw", *self.stores]))
        check_positive(self, ("singles", "batches", "batch_size", "users", "dims"))
        return self

    @property
    def items(self) -> int:
        """Items each column writes, the warm-up item included."""
        return 1 + self.singles + self.batches * self.batch_size


@dataclass
class WriteBenchResult:
    """Figures of one column; ratios are to the ``raw`` column (1.0 there).

    Attributes:
        store: Column name from `WRITE_COLUMNS`.
        label: Human-readable name.
        status: ``"ok"`` or ``"error: ..."``.
        single_p50_ms: Median time of a one-item write.
        single_p95_ms: Its 95th percentile.
        first_p50_ms: Median of the one-item writes that were their namespace's first.
        later_p50_ms: Median of the other one-item writes.
        batch_per_s: Items / time in the batch calls.
        p50_ratio: `single_p50_ms` / raw's.
        p95_ratio: `single_p95_ms` / raw's.
        first_ratio: `first_p50_ms` / raw's.
        later_ratio: `later_p50_ms` / raw's.
        batch_ratio: raw's `batch_per_s` / this one's.
        written: Items written, the warm-up item included.
        found: Items read back afterwards.
    """

    store: str
    label: str
    status: str = "ok"
    single_p50_ms: float | None = None
    single_p95_ms: float | None = None
    first_p50_ms: float | None = None
    later_p50_ms: float | None = None
    batch_per_s: float | None = None
    p50_ratio: float | None = None
    p95_ratio: float | None = None
    first_ratio: float | None = None
    later_ratio: float | None = None
    batch_ratio: float | None = None
    written: int = 0
    found: int | None = None


class WriteBenchReport(BenchReport[WriteBenchConfig, WriteBenchResult]):
    """Everything one write-cost run measured: one row per column."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (``benchmark``: ``"store-writes"``).

        Returns:
            A dict with keys ``benchmark``, ``config``, ``environment``, ``seconds``
            and ``results`` (one dict per column).
        """
        config = asdict(self.config)
        config["items"] = self.config.items
        config["chroma"] = "server" if self.config.chroma_host else "embedded"
        return self._summary("store-writes", config, [asdict(r) for r in self.results])


# --------------------------------------------------------------------------- columns

Item = tuple[tuple[str, ...], str, str]
"""(namespace, key, text) of one item."""


class _Column:
    """One column: how it writes items and counts them afterwards."""

    def __init__(
        self,
        write: Callable[[list[Item]], None],
        count: Callable[[], int],
        row: WriteBenchResult,
    ) -> None:
        self.write, self.count, self.row = write, count, row
        self.single_seconds: list[float] = []
        self.first: list[bool] = []  # per one-item write: its namespace's first
        self.batch_seconds = 0.0


def _raw_record(item: Item, *, plain: bool) -> dict[str, Any]:
    """One item's record fields besides id and vector (see the module docstring)."""
    ns, key, text = item
    value = json.dumps({"content": text})
    if plain:
        return {"document": text, "metadata": {"ns": "/".join(ns), "key": key, "v": value}}
    now = time.time()
    doc = {"ns": list(ns), "key": key, "c": now, "u": now, "t": None, "value": {"content": text}}
    return {"metadata": {"_d": json.dumps(doc, separators=(",", ":"))}}


@contextlib.contextmanager
def _raw_column(
    client: Any, prefix: str, column: str, embeddings: SeededEmbeddings
) -> Iterator[_Column]:
    plain = column == "raw-default"
    hnsw = {"space": "cosine"} if plain else dict(BUCKET_HNSW)
    col = client.get_or_create_collection(
        f"{prefix}_{column}", embedding_function=None, configuration={"hnsw": hnsw}
    )

    def write(items: list[Item]) -> None:
        records = [_raw_record(i, plain=plain) for i in items]
        col.upsert(
            ids=["/".join((*ns, key)) for ns, key, _ in items],
            embeddings=embeddings.embed_documents([text for _, _, text in items]),
            documents=[r["document"] for r in records] if plain else None,
            metadatas=[r["metadata"] for r in records],
        )

    yield _Column(write, col.count, WriteBenchResult(column, _LABELS[column]))


@contextlib.contextmanager
def _store_column(spec: StoreSpec, embeddings: SeededEmbeddings, items: int) -> Iterator[_Column]:
    with open_store(spec, embeddings) as store:

        def write(batch: list[Item]) -> None:
            if len(batch) == 1:
                ns, key, text = batch[0]
                store.put(ns, key, {"content": text})
            else:
                store.batch([PutOp(ns, key, {"content": text}) for ns, key, text in batch])

        def count(store: BaseStore = store) -> int:
            return len(store.search(("memories",), limit=items + 10))

        yield _Column(write, count, WriteBenchResult(spec.name, _LABELS[spec.name]))


def _calls(config: WriteBenchConfig) -> tuple[list[Item], list[list[Item]]]:
    """The one-item calls and the batch calls, the same for every column."""

    def item(i: int, user: int) -> Item:
        return ("memories", f"user-{user}"), common.item_key(i), common.item_text(i)

    singles = [item(1 + i, i % config.users) for i in range(config.singles)]
    first, size = 1 + config.singles, config.batch_size
    batches = [
        [item(first + b * size + j, b % config.users) for j in range(size)]
        for b in range(config.batches)
    ]
    return singles, batches


def _take_turns(
    columns: list[_Column], call: list[Item], turn: int, *, single: bool, first: bool = False
) -> None:
    """Time `call` in every column still ok, starting with column ``turn % len``.

    `first`: a one-item call that is its namespace's first write.
    """
    live = [c for c in columns if c.row.status == "ok"]
    if not live:
        return
    start = turn % len(live)
    for column in live[start:] + live[:start]:
        try:
            began = time.perf_counter()
            column.write(call)
            spent = time.perf_counter() - began
        except Exception as e:  # recorded in the report; the CLI exits non-zero
            column.row.status = f"error: {type(e).__name__}: {e}"
            logger.warning("%s failed", column.row.store, exc_info=True)
            continue
        column.row.written += len(call)
        if single:
            column.single_seconds.append(spent)
            column.first.append(first)
        else:
            column.batch_seconds += spent


def _finish(columns: list[_Column], batch_items: int) -> None:
    """Fill in each row's figures, its read-back count and its ratios to raw."""
    for c in columns:
        row = c.row
        if row.status != "ok":
            continue
        row.single_p50_ms, row.single_p95_ms = common.percentiles_ms(c.single_seconds)
        for is_first in (True, False):
            part = [t for t, f in zip(c.single_seconds, c.first, strict=True) if f is is_first]
            p50 = common.percentiles_ms(part)[0] if part else None
            if is_first:
                row.first_p50_ms = p50
            else:
                row.later_p50_ms = p50
        row.batch_per_s = batch_items / max(c.batch_seconds, 1e-9)
        try:
            row.found = c.count()
        except Exception as e:  # recorded in the report
            row.status = f"error: read back: {type(e).__name__}: {e}"
    raw = columns[0].row
    if raw.status != "ok":
        return
    assert raw.single_p50_ms and raw.single_p95_ms and raw.batch_per_s
    for c in columns:
        row = c.row
        if row.single_p50_ms is None or row.single_p95_ms is None or row.batch_per_s is None:
            continue
        row.p50_ratio = row.single_p50_ms / raw.single_p50_ms
        row.p95_ratio = row.single_p95_ms / raw.single_p95_ms
        if row.first_p50_ms is not None and raw.first_p50_ms:
            row.first_ratio = row.first_p50_ms / raw.first_p50_ms
        if row.later_p50_ms is not None and raw.later_p50_ms:
            row.later_ratio = row.later_p50_ms / raw.later_p50_ms
        row.batch_ratio = raw.batch_per_s / row.batch_per_s


def _chroma_client(config: WriteBenchConfig, path: str) -> Any:
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if config.chroma_host is not None:
        return chromadb.HttpClient(
            host=config.chroma_host, port=config.chroma_port, settings=settings
        )
    return chromadb.PersistentClient(path=path, settings=settings)


def _drop_server_collections(client: Any, prefix: str) -> None:
    for col in client.list_collections():
        if col.name.startswith(prefix):
            client.delete_collection(col.name)


def run_write_benchmark(
    config: WriteBenchConfig, *, console: Console | None = None
) -> WriteBenchReport:
    """Write the same items through raw Chroma and each store; time the calls.

    Args:
        config: The calls, columns and backends of the run.
        console: Where the progress summary goes (default stdout).

    Returns:
        The figures, for `render_write_report` or `WriteBenchReport.to_dict`.

    Raises:
        StoreBenchmarkError: An option of `config` is out of range.
    """
    config.validate()
    run_id = uuid.uuid4().hex[:8]
    prefix = f"bench_{run_id}"
    environment = common.run_environment(run_id)
    environment["chroma"] = (
        f"server {config.chroma_host}:{config.chroma_port}" if config.chroma_host else "embedded"
    )
    console = console or Console()
    started = time.perf_counter()
    singles, batches = _calls(config)
    embeddings = SeededEmbeddings(config.dims)
    with ExitStack() as stack:
        server = config.chroma_host is not None  # the long tier's index is then in Redis
        redis_url, origin = redis_for_run(
            stack, config.redis_url, "redisstore" in config.stores or server
        )
        environment["redis"] = origin or None
        root = tempfile.mkdtemp(prefix="tiered-memory-bench-", dir=config.chroma_path)
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        client = _chroma_client(config, os.path.join(root, "raw"))
        if config.chroma_host is not None:
            stack.callback(_drop_server_collections, client, prefix)
        columns: list[_Column] = []
        for name in config.stores:
            if name.startswith("raw"):
                columns.append(stack.enter_context(_raw_column(client, prefix, name, embeddings)))
                continue
            spec = StoreSpec(
                name,
                config.dims,
                prefix,
                redis_url,
                os.path.join(root, name),
                chroma_host=config.chroma_host,
                chroma_port=config.chroma_port,
            )
            if spec.redis_patterns()[0] and origin in ("given", "REDIS_URL"):
                stack.callback(drop_redis_keys, spec)
            columns.append(stack.enter_context(_store_column(spec, embeddings, config.items)))
        warmup: Item = (("memories", "user-warmup"), common.item_key(0), common.item_text(0))
        embeddings.prefetch([warmup[2]])
        for column in columns:
            column.write([warmup])
            column.row.written += 1
        console.print(f"[dim]writes: {config.singles} single puts per column...[/dim]")
        written = {warmup[0]}
        for turn, one in enumerate(singles):
            embeddings.prefetch([one[2]])
            first = one[0] not in written
            written.add(one[0])
            _take_turns(columns, [one], turn, single=True, first=first)
        console.print(f"[dim]writes: {config.batches} batches of {config.batch_size}...[/dim]")
        for turn, batch in enumerate(batches):
            embeddings.prefetch([text for _, _, text in batch])
            _take_turns(columns, batch, turn, single=False)
        _finish(columns, config.batches * config.batch_size)
    results = [c.row for c in columns]
    return WriteBenchReport(config, results, environment, time.perf_counter() - started)


# --------------------------------------------------------------------------- output


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render_write_report(report: WriteBenchReport, console: Console) -> None:
    """Print one column per store and one row per figure, raw Chroma first.

    Args:
        report: The figures of `run_write_benchmark`.
        console: Where to print.
    """
    cfg = report.config
    table = Table(
        title=(
            f"Write cost against raw Chroma ({report.environment['chroma']}): {cfg.singles}"
            f" single puts and {cfg.batches} batches of {cfg.batch_size}, {cfg.users} users,"
            f" dims {cfg.dims}"
        )
    )
    table.add_column("figure")
    for r in report.results:
        table.add_column(
            r.label if r.status == "ok" else f"{r.label} ({r.status})", justify="right"
        )
    rows: list[tuple[str, Callable[[WriteBenchResult], str]]] = [
        ("single put p50 ms", lambda r: common.fmt_ms(r.single_p50_ms)),
        ("  / raw", lambda r: _ratio(r.p50_ratio)),
        ("  namespace's first put p50 ms", lambda r: common.fmt_ms(r.first_p50_ms)),
        ("    / raw", lambda r: _ratio(r.first_ratio)),
        ("  later puts p50 ms", lambda r: common.fmt_ms(r.later_p50_ms)),
        ("    / raw", lambda r: _ratio(r.later_ratio)),
        ("single put p95 ms", lambda r: common.fmt_ms(r.single_p95_ms)),
        ("  / raw", lambda r: _ratio(r.p95_ratio)),
        (f"batch of {cfg.batch_size}: items/s", lambda r: common.fmt(r.batch_per_s, ",.0f")),
        ("  raw / this", lambda r: _ratio(r.batch_ratio)),
        ("items written / read back", lambda r: f"{r.written:,} / {common.fmt(r.found, ',')}"),
    ]
    for name, cell in rows:
        table.add_row(name, *(cell(r) for r in report.results))
    console.print(table)
    env = report.environment
    console.print(
        "[dim]raw: chromadb collection.upsert, one record per item shaped like the long"
        " tier's (item JSON in one metadata field, the tier's bucket HNSW settings); raw,"
        " plain: text as document, 3 metadata fields, Chroma's default HNSW; long: the tier,"
        " similarity / memory scoring; RedisStore: upstream, a reference."
        " One user's namespace per call; columns take turns call by call. Ratios: x times"
        f" raw Chroma's cost. Python {env['python']}, {env['cpus']} CPUs, Redis:"
        f" {env['redis'] or 'not used'}; total {report.seconds:,.1f} s[/dim]"
    )
