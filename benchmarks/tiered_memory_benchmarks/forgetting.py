"""Forgetting benchmark: one GC pass at 100k memories, and a year of daily writes.

**GC pass.** A store of `size` memories is built as weekly passes would leave it:
memories written every day over the last 200 days by `users` users, with importance
uniform in [0, 1]; half of them used 1-4 times in the two weeks after they were
written. Only the memories that the previous weekly pass (7 days ago) would have kept
are stored, so the measured pass forgets what a real weekly pass forgets (what crossed
a threshold during the week, and the week's unimportant writes); `duplicate_rate` of
this week's memories restate an earlier one, for consolidation to merge.

Three runs of the forgetting graph, without a model, on that store:

- a dry run under `tracemalloc`: its peak minus the report it returns is the pass's
  working memory, which must not grow with the store;
- garbage collection (`consolidate=False`: scan → decide → delete), timed end to end:
  `gc_seconds`, the figure with the 10 s target at 100k;
- the whole graph (scan → decide → consolidate → delete) on a copy of the same store,
  timed: `pass_seconds`.

**A simulated year.** `writes_per_day` memories a day for `days` days, some of them
restating an earlier memory (near-duplicates for consolidation), `searches_per_day`
searches a day (each result counts as a use), and the whole forgetting graph every 7th
day. The year runs twice on the same writes and searches: with the seed's rules alone
(the baseline: a memory that is important and was used keeps its decay under 0.8, so
such memories are never forgotten and the store keeps growing slowly), and with
`max_memories` per user as well. The store's size after each weekly pass must level off:
it is `bounded` when no weekly size of the second half of the year exceeds the largest
of the second quarter by more than 10%. Without forgetting the store would hold every
write.

Embeddings are synthetic (a topic vector plus per-text noise), so nothing is downloaded
and near-duplicates are exact; the passes never embed except to store merged memories.
"""

from __future__ import annotations

import gc
import hashlib
import math
import shutil
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import GetOp, PutOp

from langgraph_tiered_memory.agent.forgetting_graph import create_forgetting_graph
from langgraph_tiered_memory.ranking.forgetting import ForgettingRules
from langgraph_tiered_memory.store.maintenance import garbage_collect
from tiered_memory_benchmarks.retrieval import BenchClock

__all__ = [
    "ForgettingBenchConfig",
    "ForgettingBenchReport",
    "TopicEmbeddings",
    "run_forgetting_benchmark",
]

DAY = 86_400.0
T_END = 1_767_225_600.0  # 2026-01-01, the "now" of the measured pass
GC_TARGET_SECONDS = 10.0
_HISTORY_DAYS = 200
_TOPICS = 40


class TopicEmbeddings(Embeddings):
    """Deterministic text vectors: a topic's centre (from `topic N` in the text) + noise.

    Two texts of one topic have a cosine similarity of about 0.5; a text and itself, 1.
    """

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims
        rng = np.random.default_rng(11)
        self._centres = rng.standard_normal((_TOPICS, dims))

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        noise = np.random.default_rng(seed).standard_normal(self.dims)
        topic = 0
        words = text.split()
        if "topic" in words:
            at = words.index("topic") + 1
            if at < len(words) and words[at].isdigit():
                topic = int(words[at]) % _TOPICS
        vec = self._centres[topic] + noise
        return [float(x) for x in vec / np.linalg.norm(vec)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The text's vector."""
        return self._vector(text)


@dataclass
class ForgettingBenchConfig:
    """What the forgetting benchmark runs.

    Attributes:
        sizes: Store sizes of the GC pass (the largest is the headline figure).
        users: User namespaces the memories are spread over.
        page_size: Memories per page of the scan.
        days: Length of the simulated period.
        writes_per_day: Memories written per simulated day.
        searches_per_day: Searches per simulated day (their results count as uses).
        duplicate_rate: Share of writes that restate an earlier memory.
        max_memories: `max_memories` of the year's policy (per user); the year also
            runs with the seed's rules alone, as the baseline. None: that run only.
        dims: Embedding size.
        seed: Random seed.
        chroma_dir: Parent directory of the temporary Chroma databases.
    """

    sizes: list[int] = field(default_factory=lambda: [10_000, 100_000])
    users: int = 20
    page_size: int = 500
    days: int = 365
    writes_per_day: int = 30
    searches_per_day: int = 5
    duplicate_rate: float = 0.1
    max_memories: int | None = 500
    dims: int = 64
    seed: int = 0
    chroma_dir: str | None = None

    def validate(self) -> ForgettingBenchConfig:
        """Raise ValueError naming the first bad setting."""
        if not self.sizes or any(s < 100 for s in self.sizes):
            raise ValueError(f"sizes must be at least 100 memories each, got {self.sizes}.")
        for name in ("users", "page_size", "dims"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.days < 0 or self.writes_per_day < 1 or self.searches_per_day < 0:
            raise ValueError("days and searches_per_day must be >= 0, writes_per_day >= 1.")
        if self.max_memories is not None and self.max_memories < 1:
            raise ValueError(f"max_memories must be >= 1 or None, got {self.max_memories}.")
        if not 0 <= self.duplicate_rate < 1:
            raise ValueError(f"duplicate_rate must be in [0, 1), got {self.duplicate_rate}.")
        return self


@dataclass
class GcPassResult:
    """One measured GC pass."""

    size: int
    build_seconds: float
    gc_seconds: float
    """Garbage collection through the graph: scan, decide, delete (no consolidation)."""
    dry_run_seconds: float
    pass_seconds: float
    """The whole graph on a copy of the same store: scan, decide, consolidate, delete."""
    scanned: int
    forgotten: int
    consolidated: int
    merged_sources: int
    peak_mib: float
    report_mib: float
    working_mib: float


@dataclass
class YearResult:
    """The simulated year."""

    policy: dict[str, Any]
    days: int
    writes: int
    weekly_sizes: list[int]
    gc_seconds_p50: float
    forgotten: int
    consolidated: int

    @property
    def bounded(self) -> bool:
        """No weekly size of the second half exceeds the second quarter's peak by 10%."""
        sizes = self.weekly_sizes
        if len(sizes) < 8:
            return False
        quarter = len(sizes) // 4
        reference = max(sizes[quarter : 2 * quarter])
        return max(sizes[2 * quarter :]) <= 1.1 * reference


@dataclass
class ForgettingBenchReport:
    """Every figure of one benchmark run."""

    config: ForgettingBenchConfig
    passes: list[GcPassResult]
    year: YearResult | None
    year_seed_rules: YearResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the CLI's `--json` line)."""
        largest = max(self.passes, key=lambda p: p.size) if self.passes else None
        smallest = min(self.passes, key=lambda p: p.size) if self.passes else None
        out: dict[str, Any] = {
            "config": asdict(self.config),
            "passes": [asdict(p) for p in self.passes],
            "gc_target_seconds": GC_TARGET_SECONDS,
        }
        if largest is not None and smallest is not None:
            out["gc_size"] = largest.size
            out[f"gc_seconds_{_label(largest.size)}"] = round(largest.gc_seconds, 3)
            out[f"pass_seconds_{_label(largest.size)}"] = round(largest.pass_seconds, 3)
            out["gc_within_target"] = largest.gc_seconds <= GC_TARGET_SECONDS
            out["gc_memory_bounded"] = largest.size == smallest.size or (
                largest.working_mib <= 2 * smallest.working_mib + 1.0
            )
        if self.year_seed_rules is not None:
            base = self.year_seed_rules
            out["year_seed_rules"] = {**asdict(base), "bounded": base.bounded}
        if self.year is not None:
            out["year"] = {**asdict(self.year), "bounded": self.year.bounded}
            out["no_gc_size"] = self.year.writes
            out["final_size"] = self.year.weekly_sizes[-1] if self.year.weekly_sizes else 0
            out["bounded"] = self.year.bounded
        return out


def _label(size: int) -> str:
    return f"{size // 1000}k" if size % 1000 == 0 else str(size)


# --------------------------------------------------------------------------- stores


def _open_store(config: ForgettingBenchConfig, path: str, clock: Callable[[], float]) -> Any:
    from langgraph_tiered_memory import TieredMemoryStore

    store = TieredMemoryStore(
        chroma_path=path,
        tiers={"default": "long"},
        index={
            "dims": config.dims,
            "embed": TopicEmbeddings(config.dims),
            "fields": ["content"],
        },
        clock=clock,
        key_prefix="fgb",
    )
    store.setup()
    return store


# --------------------------------------------------------------------------- GC pass


@dataclass
class _Memory:
    user: int
    key: str
    created: float
    importance: float
    accesses: list[float]
    topic: int
    restates: str | None = None
    """Key of an earlier memory of the same user whose content this one repeats."""


def _steady_state(config: ForgettingBenchConfig, size: int) -> list[_Memory]:
    """`size` memories as the weekly pass of 7 days ago left them (see module doc)."""
    rng = np.random.default_rng([config.seed, size])
    rules = ForgettingRules()
    previous = T_END - 7 * DAY
    kept: list[_Memory] = []
    n = 0
    while len(kept) < size:
        batch = max(1000, size // 2)
        ages = rng.uniform(0, _HISTORY_DAYS, batch)
        importances = rng.uniform(0, 1, batch)
        used = rng.random(batch) < 0.5
        counts = rng.integers(1, 5, batch)
        for age, importance, use, count in zip(ages, importances, used, counts, strict=True):
            created = T_END - math.floor(age) * DAY
            accesses = []
            if use:
                span = min(14 * DAY, T_END - created)
                accesses = sorted(created + math.floor(rng.uniform(0, span) / DAY) * DAY
                                  for _ in range(int(count)))  # fmt: skip
            if created < previous:
                before = [a for a in accesses if a <= previous]
                if rules.reason(
                    importance=float(importance),
                    access_count=len(before),
                    created_at=created,
                    last_accessed=before[-1] if before else None,
                    now=previous,
                ):
                    continue  # the previous weekly pass forgot it
            n += 1
            kept.append(
                _Memory(
                    user=int(rng.integers(0, config.users)),
                    key=f"m{n:07d}",
                    created=created,
                    importance=round(float(importance), 3),
                    accesses=accesses,
                    topic=int(rng.integers(0, _TOPICS)),
                )
            )
            if len(kept) == size:
                break
    by_user: dict[int, list[_Memory]] = {}
    for m in sorted(kept, key=lambda m: m.created):
        earlier = by_user.setdefault(m.user, [])
        # Older restatements were merged by earlier passes: only this week's are left.
        if earlier and m.created >= previous and rng.random() < config.duplicate_rate:
            source = earlier[int(rng.integers(0, len(earlier)))]
            m.restates, m.topic = source.restates or source.key, source.topic
        earlier.append(m)
    return kept


def _build(store: Any, clock: BenchClock, memories: list[_Memory]) -> None:
    """Write the memories and their uses day by day, with the clock at each day."""
    events: dict[float, tuple[list[PutOp], list[GetOp]]] = {}
    for m in memories:
        ns = ("users", f"u{m.user:03d}", "memories")
        value = {
            "content": f"user {m.user} note {m.restates or m.key} about topic {m.topic}",
            "importance": m.importance,
        }
        events.setdefault(m.created, ([], []))[0].append(PutOp(ns, m.key, value))
        for at in m.accesses:
            events.setdefault(at, ([], []))[1].append(GetOp(ns, m.key))
    for day in sorted(events):
        clock.now = day
        puts, gets = events[day]
        for start in range(0, len(puts), 2000):
            store.batch(puts[start : start + 2000])
        for start in range(0, len(gets), 2000):
            store.batch(gets[start : start + 2000])


def _graph(store: Any, config: ForgettingBenchConfig, clock: BenchClock, **options: Any) -> Any:
    return create_forgetting_graph(
        store=store, page_size=config.page_size, clock=clock, **options
    ).compile()


def _timed(graph: Any) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    report = graph.invoke({})["report"]
    return report, time.perf_counter() - started


def _measure_pass(
    config: ForgettingBenchConfig, size: int, progress: Callable[[str], None]
) -> GcPassResult:
    root = tempfile.mkdtemp(prefix="forget-bench-", dir=config.chroma_dir)
    built, copy = f"{root}/gc", f"{root}/full"
    clock = BenchClock(T_END)
    try:
        progress(f"building {size:,} memories")
        store = _open_store(config, built, clock)
        try:
            started = time.perf_counter()
            _build(store, clock, _steady_state(config, size))
            build = time.perf_counter() - started
        finally:
            store.close()
        shutil.copytree(built, copy)  # the same store twice: GC only, and the whole graph
        clock.now = T_END
        with ExitStack() as stack:
            store = _open_store(config, built, clock)
            stack.callback(store.close)
            progress(f"dry run over {size:,} memories (memory measured)")
            dry_graph = _graph(store, config, clock, dry_run=True)
            gc.collect()
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                report = dry_graph.invoke({})["report"]
                retained, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            del report
            progress(f"dry run over {size:,} memories (timed)")
            dry, dry_seconds = _timed(dry_graph)
            if dry["scanned"] != size:
                raise RuntimeError(
                    f"The dry run scanned {dry['scanned']} memories of {size}; the store lost some."
                )
            progress(f"GC pass over {size:,} memories")
            real, gc_seconds = _timed(_graph(store, config, clock, consolidate=False))
        with ExitStack() as stack:
            store = _open_store(config, copy, clock)
            stack.callback(store.close)
            progress(f"whole graph (with consolidation) over {size:,} memories")
            full, full_seconds = _timed(_graph(store, config, clock))
        peak_mib = (peak - base) / 2**20
        report_mib = max(0, retained - base) / 2**20
        return GcPassResult(
            size=size,
            build_seconds=round(build, 2),
            gc_seconds=round(gc_seconds, 3),
            dry_run_seconds=round(dry_seconds, 3),
            pass_seconds=round(full_seconds, 3),
            scanned=real["scanned"],
            forgotten=real["forgotten_count"],
            consolidated=len(full["consolidated"]),
            merged_sources=sum(len(m["sources"]) for m in full["consolidated"]),
            peak_mib=round(peak_mib, 2),
            report_mib=round(report_mib, 2),
            working_mib=round(max(0.0, peak_mib - report_mib), 2),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------- the year


def _simulate_year(
    config: ForgettingBenchConfig, progress: Callable[[str], None], policy: dict[str, Any]
) -> YearResult:
    rng = np.random.default_rng([config.seed, 365])  # the same year for every policy
    label = f"max_memories {policy['max_memories']}: " if policy else "seed rules: "
    root = tempfile.mkdtemp(prefix="forget-year-", dir=config.chroma_dir)
    start = T_END - config.days * DAY
    clock = BenchClock(start)
    users = max(1, min(config.users, 5))
    try:
        with ExitStack() as stack:
            store = _open_store(config, root, clock)
            stack.callback(store.close)
            graph = _graph(store, config, clock, policy=policy or None)
            written: list[tuple[tuple[str, ...], str]] = []  # (namespace, content)
            weekly: list[int] = []
            seconds: list[float] = []
            forgotten = consolidated = 0
            for day in range(config.days):
                clock.now = start + day * DAY
                ops = []
                for i in range(config.writes_per_day):
                    if written and rng.random() < config.duplicate_rate:
                        recent = max(0, len(written) - 30 * config.writes_per_day)
                        ns, content = written[int(rng.integers(recent, len(written)))]
                    else:
                        user = int(rng.integers(0, users))
                        ns = ("users", f"u{user}", "memories")
                        topic = int(rng.integers(0, _TOPICS))
                        content = f"day {day} user {user} note {i} about topic {topic}"
                    value = {"content": content, "importance": round(float(rng.uniform()), 3)}
                    ops.append(PutOp(ns, f"d{day:03d}-{i:03d}", value))
                    written.append((ns, content))
                store.batch(ops)
                for _ in range(config.searches_per_day):
                    user = int(rng.integers(0, users))
                    topic = int(rng.integers(0, _TOPICS))
                    store.search(
                        ("users", f"u{user}", "memories"),
                        query=f"what about topic {topic}",
                        limit=5,
                    )
                if day % 7 == 6:
                    began = time.perf_counter()
                    report = graph.invoke({})["report"]
                    seconds.append(time.perf_counter() - began)
                    forgotten += report["forgotten_count"]
                    consolidated += len(report["consolidated"])
                    weekly.append(_count(store))
                    progress(f"{label}day {day + 1}: {weekly[-1]:,} memories after the pass")
            return YearResult(
                policy=policy,
                days=config.days,
                writes=config.days * config.writes_per_day,
                weekly_sizes=weekly,
                gc_seconds_p50=round(statistics.median(seconds), 4) if seconds else 0.0,
                forgotten=forgotten,
                consolidated=consolidated,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _count(store: Any) -> int:
    """Memories in the store, counted through the public API (a dry run scans them all)."""
    report = garbage_collect(store, ("users",), dry_run=True)
    return int(report["scanned"])


def run_forgetting_benchmark(
    config: ForgettingBenchConfig, progress: Callable[[str], None] | None = None
) -> ForgettingBenchReport:
    """Run the GC passes and the simulated year.

    Args:
        config: What to run.
        progress: Called with a short description of each phase.
    """
    config.validate()
    say = progress or (lambda _msg: None)
    passes = [_measure_pass(config, size, say) for size in sorted(config.sizes)]
    if config.days == 0:
        return ForgettingBenchReport(config=config, passes=passes, year=None)
    seed_rules = _simulate_year(config, say, {})
    if config.max_memories is None:
        return ForgettingBenchReport(config=config, passes=passes, year=seed_rules)
    capped = _simulate_year(config, say, {"max_memories": config.max_memories})
    return ForgettingBenchReport(
        config=config, passes=passes, year=capped, year_seed_rules=seed_rules
    )
