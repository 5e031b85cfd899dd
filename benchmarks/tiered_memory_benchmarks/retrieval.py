"""Retrieval benchmark: recall@k of the store on LoCoMo conversations.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024) is a JSON list of samples, each a long two-person conversation in
sessions with dated turns, and questions whose evidence names the turns (``"D<session>:
<turn>"``) that answer them. The data is CC BY-NC 4.0: the benchmark reads it from a path
given on the command line and the project never ships it.

Everything goes through the public `BaseStore` API of a `TieredMemoryStore` whose every
namespace is on the long (Chroma) tier, with an offline embedder (`--embed`, default
multilingual-e5-small):

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

With ``--cv`` (`run_retrieval_cv`) every conversation is also a fold of
leave-one-conversation-out: nothing is tuned, each held-out conversation's recall is
reported with their mean and the pooled figure. ``--sweep KEY=V1,V2`` varies one
`ScoringConfig` key at a time (the others at the run's values): a key that changes what
a write stores (`INDEX_TIME_KEYS`) gets one store per value; any other is measured on
the run's own store, one extra search per value and question with the store's
`scoring` set for that search and accesses not counted (only the run's own searches
count, so a value's figures can differ from a store built with it by the access term,
weight 0.005). Each fold takes the value with the best pooled recall on the other
conversations and reports its held-out recall; each key gets a stability verdict on
the run's value (see `bench._retrieval_cv`).

This module runs the benchmark and prints its report; reading LoCoMo is in
`bench._retrieval_data`, the options in `bench._retrieval_config`, the recall figures
in `bench._retrieval_metrics`, the stores in `bench._retrieval_run` and the folds in
`bench._retrieval_cv`. Every name is importable from here.

Example:
    ```python
    from tiered_memory_benchmarks.retrieval import recall_at_k, split_evidence

    known = {"D1:1", "D1:2", "D8:6", "D9:17"}
    evidence = split_evidence(["D8:6; D9:17", "D99:1"], known)
    assert evidence == ["D8:6", "D9:17"]
    assert recall_at_k(evidence, ["D9:17", "D1:1", "D8:6"], 2) == 0.5
    ```
"""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from langgraph_tiered_memory.ranking.scoring import Scoring
from tiered_memory_benchmarks._retrieval_config import (
    DEFAULT_KS,
    GRAPH_CHOICES,
    INDEX_TIME_KEYS,
    RETRIEVAL_MODES,
    SCORING_MODES,
    RetrievalBenchConfig,
    parse_ks,
    parse_overrides,
    parse_select,
    parse_sweeps,
    same_value,
)
from tiered_memory_benchmarks._retrieval_cv import (
    KeySweep,
    RetrievalCvReport,
    ValueFigures,
    cv_folds,
    sweep_key,
)
from tiered_memory_benchmarks._retrieval_data import (
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
from tiered_memory_benchmarks._retrieval_merge import merge_conversations
from tiered_memory_benchmarks._retrieval_metrics import (
    CategoryRecall,
    GraphlessRun,
    RetrievalBenchReport,
    recall_at_k,
)
from tiered_memory_benchmarks._retrieval_run import (
    BenchClock,
    checked_scoring,
    new_progress,
    run_report,
    run_store,
)

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_KS",
    "GRAPH_CHOICES",
    "INDEX_TIME_KEYS",
    "NAMESPACE_LABEL",
    "RETRIEVAL_MODES",
    "SCORING_MODES",
    "BenchClock",
    "CategoryRecall",
    "Conversation",
    "GraphlessRun",
    "KeySweep",
    "Question",
    "RetrievalBenchConfig",
    "RetrievalBenchReport",
    "RetrievalBenchmarkError",
    "RetrievalCvReport",
    "Turn",
    "load_locomo",
    "parse_conversation",
    "parse_ks",
    "parse_overrides",
    "parse_session_date",
    "parse_sweeps",
    "recall_at_k",
    "render_cv_report",
    "render_retrieval_report",
    "run_retrieval_benchmark",
    "run_retrieval_cv",
    "split_evidence",
    "turn_text",
]


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
    config.validate()
    console = console or Console()
    conversations = load_locomo(config.data, config.conversations)
    if config.merge:
        conversations = [merge_conversations(conversations)]
    started = time.perf_counter()
    scoring = config.scoring_config()
    settings: list[Scoring | None] = [None]
    if config.graph == "compare":
        # Without the channel first; it counts the accesses, so this column is exactly
        # a run of the store without a graph.
        settings = [checked_scoring({**scoring, "graph_weight": 0.0}), None]
    with new_progress(console, config.progress) as progress:
        run = run_store(
            config,
            conversations,
            scoring,
            settings,
            counted=0,
            progress=progress,
            chroma_path=config.chroma_path,
        )
    return run_report(config, conversations, run, len(settings) - 1, started)


_GRAPH_KEYS = frozenset({"graph_weight", "graph_hops"})


def _sweep_points(
    config: RetrievalBenchConfig, sweeps: dict[str, list[Any]]
) -> list[tuple[str, Any, list[Any]]]:
    """Each swept key with the run's own value of it and the values to measure.

    The run's value is added when not given, and numbers are sorted. Every value is
    checked as the store would check the scoring it makes.
    """
    scoring = config.scoring_config()
    own = checked_scoring(scoring)
    out: list[tuple[str, Any, list[Any]]] = []
    for key, values in sweeps.items():
        if key not in Scoring.__dataclass_fields__:
            known = ", ".join(sorted(Scoring.__dataclass_fields__))
            raise RetrievalBenchmarkError(
                f"--sweep {key}: not a ScoringConfig key; one of {known}."
            )
        if key in _GRAPH_KEYS and config.graph != "on":
            raise RetrievalBenchmarkError(
                f"--sweep {key} varies the graph channel; add --graph on."
            )
        base = getattr(own, key)
        if isinstance(base, tuple):
            base = list(base)
        for value in values:
            checked_scoring({**scoring, key: value})
        if not any(same_value(base, v) for v in values):
            values = [*values, base]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            values = sorted(values)
        out.append((key, base, values))
    return out


def run_retrieval_cv(
    config: RetrievalBenchConfig,
    sweeps: dict[str, list[Any]] | None = None,
    *,
    select: str | None = None,
    console: Console | None = None,
) -> RetrievalCvReport:
    """Leave-one-conversation-out figures of the run, and of each swept key's values.

    Without `sweeps` nothing is chosen: each fold is the run's recall on one held-out
    conversation. With them, each key is varied alone (the others at the run's
    values): a key in `INDEX_TIME_KEYS` gets one store per value, every other key is
    measured on the run's own store, one search per value and question (before the
    run's own search, the only one counting accesses). Each fold
    chooses the value best on the other conversations and is judged on its own.

    Args:
        config: The run (its scoring is every key's base value).
        sweeps: Values by `ScoringConfig` key (see `parse_sweeps`).
        select: ``recall@K`` to choose by (default recall@5).
        console: Where the progress bar goes (default: a new `Console`).

    Returns:
        The run's own report, its folds and one `KeySweep` per key.

    Raises:
        RetrievalBenchmarkError: The config, a swept value or the data is invalid, or
            fewer than two conversations have questions.
    """
    config.validate()
    if config.graph == "compare":
        raise RetrievalBenchmarkError("--cv runs one setting per search; use --graph on or off.")
    k = parse_select(select, config.ks)
    keys = _sweep_points(config, sweeps or {})
    console = console or Console()
    if config.merge:
        raise RetrievalBenchmarkError(
            "--merge puts every conversation in one namespace, which leaves nothing to"
            " hold out; run --cv without --merge."
        )
    conversations = load_locomo(config.data, config.conversations)
    if sum(1 for c in conversations if c.questions) < 2:
        raise RetrievalBenchmarkError(
            "--cv needs at least two conversations with questions; give more with"
            " --conversations or a file with more samples."
        )
    started = time.perf_counter()
    scoring = config.scoring_config()
    # The run's own store asks each question once per query-time value too, before
    # its own (counted) search, so every value sees the accesses of earlier questions
    # only, exactly as the run's own search does.
    settings: list[Scoring | None] = []
    slots: dict[tuple[str, int], tuple[int, int]] = {}  # (key, value) -> (store, setting)
    stores: list[dict[str, Any]] = [scoring]
    run_own = -1  # the run's own search: the last setting of store 0
    for key, base, values in keys:
        for j, value in enumerate(values):
            if same_value(value, base):
                slots[key, j] = (0, run_own)
            elif key in INDEX_TIME_KEYS:
                slots[key, j] = (len(stores), 0)
                stores.append({**scoring, key: value})
            else:
                slots[key, j] = (0, len(settings))
                settings.append(checked_scoring({**scoring, key: value}))
    settings.append(None)
    runs = []
    with new_progress(console, config.progress) as progress:
        for i, store_scoring in enumerate(stores):
            runs.append(
                run_store(
                    config,
                    conversations,
                    store_scoring,
                    settings if i == 0 else [None],
                    counted=len(settings) - 1 if i == 0 else 0,
                    progress=progress,
                    chroma_path=config.chroma_path if i == 0 else None,
                    label=f"store {i + 1}/{len(stores)}: ",
                )
            )
            if i == 0:  # timed without the other stores
                base_report = run_report(config, conversations, runs[0], run_own, started)
    ids = [c.sample_id for c in conversations]
    results: list[KeySweep] = []
    for key, base, values in keys:
        points = []
        for j, value in enumerate(values):
            store_i, setting_i = slots[key, j]
            tally = runs[store_i].tallies[setting_i]
            points.append(
                ValueFigures(value, tally.per_conversation(ids), base=same_value(value, base))
            )
        results.append(sweep_key(key, points, k=k, ks=config.ks, index_time=key in INDEX_TIME_KEYS))
    return RetrievalCvReport(
        run=base_report,
        cv=cv_folds(base_report.per_conversation, config.ks),
        sweeps=results,
        select=k,
        stores=len(stores),
        searches=sum(len(r.seconds[0]) * len(r.seconds) for r in runs),
        ingest_seconds=sum(r.ingest_seconds for r in runs),
        seconds=time.perf_counter() - started,
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


def _value_label(point: ValueFigures) -> str:
    return f"{_show(point.value)}{' (run)' if point.base else ''}"


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def render_cv_report(report: RetrievalCvReport, console: Console) -> None:
    """Print a `--cv` run: its own report and folds, then each swept key.

    Per key: recall by value and conversation, the folds (the value chosen on the other
    conversations and its held-out figure) and the verdict on the run's value.

    Args:
        report: The figures of a `--cv` run.
        console: Where to print.
    """
    render_retrieval_report(report.run, console)
    ks = report.run.config.ks
    table = Table(title="Leave-one-conversation-out: the run's setting (nothing chosen)")
    table.add_column("held out")
    table.add_column("n", justify="right")
    for k in ks:
        table.add_column(f"recall@{k}", justify="right")
    for fold in report.cv.folds:
        table.add_row(
            fold.held_out, str(fold.recall.n), *(f"{fold.recall.recall[k]:.1f}" for k in ks)
        )
    table.rows[-1].end_section = True
    table.add_row(
        "[bold]mean over folds[/bold]", "", *(f"[bold]{report.cv.macro[k]:.1f}[/bold]" for k in ks)
    )
    table.add_row(
        "pooled",
        str(sum(f.recall.n for f in report.cv.folds)),
        *(f"{report.cv.pooled[k]:.1f}" for k in ks),
    )
    console.print(table)
    for sweep in report.sweeps:
        _render_sweep(sweep, console)
    console.print(
        f"{report.stores} store(s) built, {report.searches:,} searches;"
        f" {report.ingest_seconds:.1f} s ingesting; total {report.seconds:.1f} s."
    )


def _render_sweep(sweep: KeySweep, console: Console) -> None:
    """The figures by value, the folds and the verdict of one swept key."""
    from tiered_memory_benchmarks._retrieval_cv import macro_mean, pooled_mean

    ks, k = sweep.ks, sweep.k
    convs = [f.held_out for f in sweep.folds]
    where = "one store per value" if sweep.index_time else "one store, scoring set per search"
    table = Table(title=f"{sweep.key}: recall by value and conversation ({where})")
    table.add_column("value")
    for c in [*convs, "mean", "pooled"]:
        for m in ks:
            table.add_column(f"{c} @{m}", justify="right")
    for point in sweep.points:
        groups = {c: point.per_conversation[c] for c in convs}
        cells = [f"{groups[c].recall[m]:.1f}" for c in convs for m in ks]
        cells += [f"{macro_mean(groups, ks)[m]:.1f}" for m in ks]
        cells += [f"{pooled_mean(groups, ks)[m]:.1f}" for m in ks]
        table.add_row(_value_label(point), *cells)
    console.print(table)
    folds = Table(
        title=f"{sweep.key}: leave-one-conversation-out, value chosen by recall@{k}"
        " on the other conversations"
    )
    folds.add_column("held out")
    folds.add_column("chosen")
    folds.add_column(f"train @{k}", justify="right")
    for m in ks:
        folds.add_column(f"@{m}", justify="right")
    for m in ks:
        folds.add_column(f"run's @{m}", justify="right")
    folds.add_column(f"fold's best @{k}")
    for f in sweep.folds:
        folds.add_row(
            f.held_out,
            _show(f.chosen),
            f"{f.train_recall:.1f}",
            *(f"{f.recall[m]:.1f}" for m in ks),
            *(f"{f.base_recall[m]:.1f}" for m in ks),
            f"{f.best_recall:.1f} ({_show(f.best)})",
        )
    folds.rows[-1].end_section = True
    folds.add_row(
        "[bold]mean (LOO)[/bold]",
        "",
        "",
        *(f"[bold]{sweep.loo[m]:.1f}[/bold]" for m in ks),
        *(f"{sweep.base_mean[m]:.1f}" for m in ks),
        "",
    )
    console.print(folds)
    console.print(
        f"{sweep.key} = {_show(sweep.base_value)} (the run's value), judged by recall@{k}:"
        f" {sweep.verdict.describe()}",
        highlight=False,
    )
