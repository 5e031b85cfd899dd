"""Retrieval benchmark: recall@k of the store on LoCoMo conversations.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024) is a JSON list of samples, each a long two-person conversation in
sessions with dated turns, and questions whose evidence names the turns (``"D<session>:
<turn>"``) that answer them. The data is CC BY-NC 4.0: the benchmark reads it from a path
given on the command line and the project never ships it.

Everything goes through the public `BaseStore` API of a `TieredMemoryStore` whose every
namespace is on the long (Chroma) tier, with the offline all-MiniLM-L6-v2 embedder:

- each conversation gets one namespace, ``("locomo", <sample_id>)``;
- each dialog turn is one memory, keyed by its ``dia_id``, with value
  ``{"content": '<speaker> said, "<text>"' [+ " and shared <blip_caption>"],
  "occurred_at": <session date, ISO 8601>, "speaker": ..., "session": n}``, written in
  dialog order, session by session, with `store.batch` of `PutOp`s (the store uses the
  previously written memories of a namespace as context, so the order matters);
- the store's clock reads the session's date while that session is written, and the
  day after the last session while the questions are asked;
- each question with evidence is answered by ONE
  ``store.search(namespace, query=question, limit=max(k), filter={"$retrieval": mode})``,
  and recall@k = |evidence ∩ top-k keys| / |evidence|, averaged over questions, overall and
  per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).

With ``--graph on`` the store keeps a knowledge graph (`graph=True`: triples of every
turn by the rule extractor, in the long tier's SQLite file) and ranks with the graph
channel; ``--graph compare`` asks every question first without the channel (the
store's `graph_weight` set to 0 for that search) and then with it, and prints both.

This module runs the benchmark and prints its report; reading LoCoMo is in
`bench._retrieval_data`, the options in `bench._retrieval_config` and the recall figures
in `bench._retrieval_metrics`. Every name is importable from here.

Example:
    ```python
    from langgraph_tiered_memory.bench.retrieval import recall_at_k, split_evidence

    known = {"D1:1", "D1:2", "D8:6", "D9:17"}
    evidence = split_evidence(["D8:6; D9:17", "D99:1"], known)
    assert evidence == ["D8:6", "D9:17"]
    assert recall_at_k(evidence, ["D9:17", "D1:1", "D8:6"], 2) == 0.5
    ```
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
from rich.table import Table

from langgraph_tiered_memory.bench._retrieval_config import (
    DEFAULT_KS,
    GRAPH_CHOICES,
    RETRIEVAL_MODES,
    SCORING_MODES,
    RetrievalBenchConfig,
    parse_ks,
    parse_overrides,
)
from langgraph_tiered_memory.bench._retrieval_data import (
    CATEGORY_NAMES,
    NAMESPACE_LABEL,
    Conversation,
    Question,
    RetrievalBenchmarkError,
    Turn,
    load_locomo,
    parse_conversation,
    parse_session_date,
    split_evidence,
    turn_text,
)
from langgraph_tiered_memory.bench._retrieval_metrics import (
    CategoryRecall,
    GraphlessRun,
    RecallTally,
    RetrievalBenchReport,
    recall_at_k,
    search_percentiles_ms,
)

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_KS",
    "GRAPH_CHOICES",
    "NAMESPACE_LABEL",
    "RETRIEVAL_MODES",
    "SCORING_MODES",
    "BenchClock",
    "CategoryRecall",
    "Conversation",
    "GraphlessRun",
    "Question",
    "RetrievalBenchConfig",
    "RetrievalBenchReport",
    "RetrievalBenchmarkError",
    "Turn",
    "load_locomo",
    "parse_conversation",
    "parse_ks",
    "parse_overrides",
    "parse_session_date",
    "recall_at_k",
    "render_retrieval_report",
    "run_retrieval_benchmark",
    "split_evidence",
    "turn_text",
]

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
def _without_graph_channel(store: Any) -> Iterator[None]:
    """The store ranks without its graph channel (graph_weight 0) inside the block."""
    scoring = store.scoring
    store.scoring = dataclasses.replace(scoring, graph_weight=0.0)
    try:
        yield
    finally:
        store.scoring = scoring


def run_retrieval_benchmark(
    config: RetrievalBenchConfig, *, console: Console | None = None
) -> RetrievalBenchReport:
    """Ingest the conversations and measure recall@k of one search per question.

    Args:
        config: What to run.
        console: Where the progress bar goes (default: a new `Console`).

    Returns:
        The figures of the run.

    Raises:
        RetrievalBenchmarkError: The config or the data is invalid.
    """
    from langgraph.store.base import PutOp

    from langgraph_tiered_memory import TieredMemoryStore

    config.validate()
    console = console or Console()
    conversations = load_locomo(config.data, config.conversations)
    ks = config.ks
    limit = max(ks)
    search_filter = config.search_filter()
    clock = BenchClock()
    started = time.perf_counter()
    tally = RecallTally(ks)
    search_seconds: list[float] = []
    compare = config.graph == "compare"
    off_tally = RecallTally(ks)
    off_seconds: list[float] = []
    extra: dict[str, Any] = {"graph": True} if config.graph != "off" else {}
    ingest_seconds = 0.0
    n_turns = sum(len(c.turns) for c in conversations)
    n_questions = sum(len(c.questions) for c in conversations)
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not config.progress,
        transient=True,
    )
    with _chroma_directory(config.chroma_path) as chroma_dir:
        store = TieredMemoryStore(
            chroma_path=chroma_dir,
            tiers={"default": "long"},
            index={"dims": 384, "embed": "local", "fields": ["content"]},
            key_prefix="bench",
            scoring=config.scoring_config(),  # type: ignore[arg-type]
            clock=clock,
            **extra,
        )
        try:
            store.setup()
            # Untimed warm-up: loads the embedding model, so ingest time is the store's.
            t0 = time.perf_counter()
            store.search(_WARMUP_NAMESPACE, query="warm up", limit=1, filter=search_filter)
            warmup_seconds = time.perf_counter() - t0
            with progress:
                ingest_task = progress.add_task("ingesting turns", total=n_turns)
                search_task = progress.add_task("searching", total=n_questions)
                for conv in conversations:
                    namespace = conv.namespace
                    if config.chroma_path is not None:
                        _clear_namespace(store, namespace)
                    progress.update(ingest_task, description=f"{conv.sample_id}: ingesting")
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
                    progress.update(search_task, description=f"{conv.sample_id}: searching")
                    for q in conv.questions:
                        if compare:
                            # Without the channel first; it counts the accesses, so this
                            # column is exactly a run of the store without a graph.
                            with _without_graph_channel(store):
                                t0 = time.perf_counter()
                                hits = store.search(
                                    namespace, query=q.question, limit=limit, filter=search_filter
                                )
                                off_seconds.append(time.perf_counter() - t0)
                            off_tally.add(conv.sample_id, q, [h.key for h in hits])
                        t0 = time.perf_counter()
                        hits = store.search(
                            namespace,
                            query=q.question,
                            limit=limit,
                            # Compare: the access was counted by the search without it.
                            filter={**(search_filter or {}), "$count_access": False}
                            if compare
                            else search_filter,
                        )
                        search_seconds.append(time.perf_counter() - t0)
                        tally.add(conv.sample_id, q, [h.key for h in hits])
                        progress.advance(search_task)
        finally:
            store.close()
    p50, p95 = search_percentiles_ms(search_seconds)
    without_graph = None
    if compare:
        off50, off95 = search_percentiles_ms(off_seconds)
        without_graph = GraphlessRun(off_tally.overall(), off_tally.per_category(), off50, off95)
    return RetrievalBenchReport(
        config=config,
        overall=tally.overall(),
        per_category=tally.per_category(),
        per_conversation=tally.per_conversation(c.sample_id for c in conversations),
        n_turns=n_turns,
        skipped_questions=sum(c.skipped_questions for c in conversations),
        ingest_seconds=ingest_seconds,
        warmup_seconds=warmup_seconds,
        search_p50_ms=p50,
        search_p95_ms=p95,
        seconds=time.perf_counter() - started,
        without_graph=without_graph,
    )


def render_retrieval_report(report: RetrievalBenchReport, console: Console) -> None:
    """Print the recall table and the timings.

    Args:
        report: The figures of a run.
        console: Where to print.
    """
    cfg = report.config
    decay = "on" if cfg.decay else "off"
    title = (
        f"LoCoMo retrieval: mode {cfg.mode}, scoring {cfg.scoring}"
        f"{f', decay {decay}' if cfg.scoring == 'memory' else ''}"
        f"{f', graph {cfg.graph}' if cfg.graph != 'off' else ''}"
    )
    if report.without_graph is not None:
        _render_comparison(report, report.without_graph, title, console)
        return
    table = Table(title=title)
    table.add_column("questions")
    table.add_column("n", justify="right")
    for k in cfg.ks:
        table.add_column(f"recall@{k}", justify="right")
    table.add_row(
        "[bold]all[/bold]",
        str(report.overall.n),
        *(f"[bold]{report.overall.recall[k]:.1f}[/bold]" for k in cfg.ks),
        end_section=True,
    )
    for name, group in report.per_category.items():
        table.add_row(name, str(group.n), *(f"{group.recall[k]:.1f}" for k in cfg.ks))
    if len(report.per_conversation) > 1:
        table.rows[-1].end_section = True
        for name, group in report.per_conversation.items():
            table.add_row(name, str(group.n), *(f"{group.recall[k]:.1f}" for k in cfg.ks))
    console.print(table)
    p50 = f"{report.search_p50_ms:.1f} ms" if report.search_p50_ms is not None else "-"
    console.print(
        f"{report.n_turns:,} turns ingested in {report.ingest_seconds:.1f} s"
        f" (after {report.warmup_seconds:.1f} s loading the model);"
        f" search p50 {p50}; {report.skipped_questions} question(s) without evidence skipped;"
        f" total {report.seconds:.1f} s."
    )


def _render_comparison(
    report: RetrievalBenchReport, off: GraphlessRun, title: str, console: Console
) -> None:
    """Recall without and with the graph channel, and the difference, per category."""
    ks = report.config.ks
    table = Table(title=title)
    table.add_column("questions")
    table.add_column("n", justify="right")
    for k in ks:
        table.add_column(f"@{k} off", justify="right")
        table.add_column(f"@{k} graph", justify="right")
        table.add_column(f"@{k} diff", justify="right")

    def cells(without: CategoryRecall, with_: CategoryRecall) -> list[str]:
        out = []
        for k in ks:
            a, b = without.recall[k], with_.recall[k]
            out += [f"{a:.1f}", f"{b:.1f}", f"{b - a:+.1f}"]
        return out

    table.add_row("all", str(report.overall.n), *cells(off.overall, report.overall))
    table.rows[-1].end_section = True
    for name, group in report.per_category.items():
        table.add_row(name, str(group.n), *cells(off.per_category[name], group))
    console.print(table)

    def ms(value: float | None) -> str:
        return f"{value:.1f} ms" if value is not None else "-"

    console.print(
        f"search p50/p95 without the graph channel {ms(off.search_p50_ms)} /"
        f" {ms(off.search_p95_ms)}, with it {ms(report.search_p50_ms)} /"
        f" {ms(report.search_p95_ms)}; {report.n_turns:,} turns ingested in"
        f" {report.ingest_seconds:.1f} s; total {report.seconds:.1f} s."
    )
