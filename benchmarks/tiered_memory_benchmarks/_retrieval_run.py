"""Running the retrieval benchmark's stores: write the conversations, ask the questions.

`run_store` builds one long-tier `TieredMemoryStore`, writes every conversation turn by
turn at its session's date and asks each question once per search setting, keeping
recall@k and search times per setting. A setting is a `Scoring` the store ranks with for
that one search (its public `scoring`, read on every search): a query-time key (a fusion
constant, a weight) is varied on one store, while a key that changes what a write stores
needs a store of its own. Only one setting's searches count accesses, so every question
sees the access counts of exactly one run of that setting.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from langgraph_tiered_memory.ranking.scoring import Scoring
from tiered_memory_benchmarks._retrieval_config import RetrievalBenchConfig
from tiered_memory_benchmarks._retrieval_data import Conversation, RetrievalBenchmarkError
from tiered_memory_benchmarks._retrieval_metrics import (
    GraphlessRun,
    RecallTally,
    RetrievalBenchReport,
    search_percentiles_ms,
)

__all__ = ["BenchClock", "StoreRun", "checked_scoring", "new_progress", "run_report", "run_store"]

_WARMUP_NAMESPACE = ("locomo-warmup",)


class BenchClock:
    """A settable clock for the store: calling it returns epoch seconds.

    Args:
        now: The initial time, epoch seconds.
    """

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def set(self, when: datetime) -> None:
        """Move the clock to `when`.

        Args:
            when: An aware datetime.
        """
        self.now = when.timestamp()

    def __call__(self) -> float:
        """The clock's time.

        Returns:
            Epoch seconds.
        """
        return self.now


@contextmanager
def _chroma_directory(path: str | None) -> Iterator[str]:
    if path is not None:
        yield path
        return
    tmp = tempfile.mkdtemp(prefix="tiered-memory-locomo-")
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _clear_namespace(store: Any, namespace: tuple[str, ...]) -> None:
    """Delete what an earlier run left in `namespace` (a kept Chroma directory)."""
    from langgraph.store.base import PutOp

    while True:
        items = store.search(namespace, limit=1000)
        if not items:
            return
        store.batch([PutOp(item.namespace, item.key, None) for item in items])


@contextmanager
def _scored(store: Any, scoring: Scoring | None) -> Iterator[None]:
    """The store ranks with `scoring` inside the block (`None`: its own scoring).

    A store reads its public `scoring` on every search, so a query-time setting (a
    fusion constant, a weight) can change between searches of one store; what a write
    stores (`INDEX_TIME_KEYS`) cannot, and gets a store of its own.
    """
    if scoring is None:
        yield
        return
    own = store.scoring
    store.scoring = scoring
    try:
        yield
    finally:
        store.scoring = own


def checked_scoring(config: dict[str, Any]) -> Scoring:
    """A `ScoringConfig` dict validated as the store validates it.

    Args:
        config: The scoring config.

    Returns:
        The validated scoring, every default filled in.

    Raises:
        RetrievalBenchmarkError: The store would refuse the config.
    """
    from langgraph_tiered_memory.errors import ConfigurationError

    try:
        return Scoring.from_config(config)
    except ConfigurationError as e:
        raise RetrievalBenchmarkError(str(e)) from e


@dataclass
class StoreRun:
    """What one store measured.

    Attributes:
        tallies: Recall of each search setting, in the order of the settings.
        seconds: The time of each search, by setting.
        ingest_seconds: Time spent in `store.batch` writing the turns.
        warmup_seconds: Time of one untimed search before writing (model loading).
    """

    tallies: list[RecallTally]
    seconds: list[list[float]]
    ingest_seconds: float
    warmup_seconds: float


def new_progress(console: Console, enabled: bool) -> Progress:
    """The benchmark's transient progress bars.

    Args:
        console: Where they draw.
        enabled: Show them (off for JSON output and tests).

    Returns:
        A `Progress` to enter around `run_store` calls.
    """
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        transient=True,
    )


def run_store(
    config: RetrievalBenchConfig,
    conversations: list[Conversation],
    scoring: dict[str, Any],
    settings: list[Scoring | None],
    *,
    counted: int,
    progress: Progress,
    chroma_path: str | None,
    label: str = "",
) -> StoreRun:
    """Build one store with `scoring`, write the conversations and ask every question.

    Each question is asked once per entry of `settings` (`None`: the store's own
    scoring), in order; only the search of `settings[counted]` counts accesses, so
    every question sees the access counts of exactly one run of that setting.

    Args:
        config: The run's options (cut-offs, retrieval, graph, batch size).
        conversations: What to write and ask.
        scoring: The store's `ScoringConfig`.
        settings: The scoring of each search of a question.
        counted: The setting whose searches count accesses.
        progress: Where to report progress.
        chroma_path: The store's Chroma directory; `None` uses a temporary one.
        label: Prefix of the progress descriptions.

    Returns:
        Recall and search times by setting, and the write time.
    """
    from langgraph.store.base import PutOp

    from langgraph_tiered_memory import TieredMemoryStore

    limit = max(config.ks)
    search_filter = config.search_filter()
    uncounted = {**(search_filter or {}), "$count_access": False}
    clock = BenchClock()
    tallies = [RecallTally(config.ks) for _ in settings]
    seconds: list[list[float]] = [[] for _ in settings]
    ingest_seconds = 0.0
    extra: dict[str, Any] = {"graph": True} if config.graph != "off" else {}
    ingest_task = progress.add_task(
        f"{label}ingesting", total=sum(len(c.turns) for c in conversations)
    )
    search_task = progress.add_task(
        f"{label}searching", total=sum(len(c.questions) for c in conversations)
    )
    with _chroma_directory(chroma_path) as chroma_dir:
        store = TieredMemoryStore(
            chroma_path=chroma_dir,
            tiers={"default": "long"},
            index={"dims": 384, "embed": config.embed, "fields": ["content"]},
            key_prefix="bench",
            scoring=scoring,  # type: ignore[arg-type]
            clock=clock,
            **extra,
        )
        try:
            store.setup()
            # Untimed warm-up: loads the embedding model, so ingest time is the store's.
            t0 = time.perf_counter()
            store.search(_WARMUP_NAMESPACE, query="warm up", limit=1, filter=search_filter)
            warmup_seconds = time.perf_counter() - t0
            for conv in conversations:
                namespace = conv.namespace
                if chroma_path is not None:
                    _clear_namespace(store, namespace)
                progress.update(ingest_task, description=f"{label}{conv.sample_id}: ingesting")
                for date, turns in conv.sessions():
                    clock.set(date)
                    for lo in range(0, len(turns), config.batch_size):
                        chunk = turns[lo : lo + config.batch_size]
                        ops = [PutOp(namespace, t.dia_id, t.value()) for t in chunk]
                        t0 = time.perf_counter()
                        store.batch(ops)
                        ingest_seconds += time.perf_counter() - t0
                        progress.advance(ingest_task, len(chunk))
                clock.set(conv.now)
                progress.update(search_task, description=f"{label}{conv.sample_id}: searching")
                for q in conv.questions:
                    for i, setting in enumerate(settings):
                        with _scored(store, setting):
                            t0 = time.perf_counter()
                            hits = store.search(
                                namespace,
                                query=q.question,
                                limit=limit,
                                filter=search_filter if i == counted else uncounted,
                            )
                            seconds[i].append(time.perf_counter() - t0)
                        tallies[i].add(conv.sample_id, q, [h.key for h in hits])
                    progress.advance(search_task)
        finally:
            store.close()
    return StoreRun(tallies, seconds, ingest_seconds, warmup_seconds)


def run_report(
    config: RetrievalBenchConfig,
    conversations: list[Conversation],
    run: StoreRun,
    main: int,
    started: float,
) -> RetrievalBenchReport:
    """The report of one setting of a store run.

    Args:
        config: The run's options.
        conversations: The conversations run.
        run: What the store measured.
        main: The setting reported; with `--graph compare`, setting 0 is the run
            without the channel, reported beside it.
        started: `time.perf_counter()` at the start of the run.

    Returns:
        The report.
    """
    tally = run.tallies[main]
    p50, p95 = search_percentiles_ms(run.seconds[main])
    without_graph = None
    if config.graph == "compare":
        off50, off95 = search_percentiles_ms(run.seconds[0])
        off = run.tallies[0]
        without_graph = GraphlessRun(off.overall(), off.per_category(), off50, off95)
    return RetrievalBenchReport(
        config=config,
        overall=tally.overall(),
        per_category=tally.per_category(),
        per_conversation=tally.per_conversation(c.sample_id for c in conversations),
        n_turns=sum(len(c.turns) for c in conversations),
        skipped_questions=sum(c.skipped_questions for c in conversations),
        ingest_seconds=run.ingest_seconds,
        warmup_seconds=run.warmup_seconds,
        search_p50_ms=p50,
        search_p95_ms=p95,
        seconds=time.perf_counter() - started,
        without_graph=without_graph,
    )
