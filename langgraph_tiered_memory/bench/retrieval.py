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

import json
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
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

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_KS",
    "RETRIEVAL_MODES",
    "SCORING_MODES",
    "BenchClock",
    "Conversation",
    "Question",
    "RetrievalBenchConfig",
    "RetrievalBenchReport",
    "RetrievalBenchmarkError",
    "Turn",
    "load_locomo",
    "parse_conversation",
    "parse_ks",
    "parse_session_date",
    "recall_at_k",
    "render_retrieval_report",
    "run_retrieval_benchmark",
    "split_evidence",
    "turn_text",
]

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""Names of the LoCoMo question categories."""

RETRIEVAL_MODES: tuple[str, ...] = ("semantic", "keyword", "hybrid")
"""Values of `RetrievalBenchConfig.mode` (``"contextual"`` is hybrid for one user)."""

SCORING_MODES: tuple[str, ...] = ("memory", "similarity")
"""Values of `RetrievalBenchConfig.scoring` (the store's `ScoringConfig` mode)."""

DEFAULT_KS: tuple[int, ...] = (5, 10, 25, 50)
"""The cut-offs of the LoCoMo paper's retrieval table."""

NAMESPACE_LABEL = "locomo"
"""First label of every conversation's namespace."""

_WARMUP_NAMESPACE = ("locomo-warmup",)

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
_LOCOMO_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


class RetrievalBenchmarkError(ValueError):
    """The data or an option of the retrieval benchmark is invalid."""


# --------------------------------------------------------------------------- pure parts


def parse_session_date(text: str) -> datetime:
    """Parse a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"``.

    The LoCoMo format is tried first with `datetime.strptime`; anything else goes to
    `dateutil.parser.parse` in fuzzy mode. The dates have no time zone; they are
    taken as UTC.

    Args:
        text: The free-text ``session_<n>_date_time`` value.

    Returns:
        An aware UTC datetime.

    Raises:
        RetrievalBenchmarkError: The text holds no recognisable date.
    """
    cleaned = " ".join(text.split())
    try:
        parsed = datetime.strptime(cleaned, _LOCOMO_DATE_FORMAT)
    except ValueError:
        from dateutil import parser as date_parser

        try:
            parsed = date_parser.parse(cleaned, fuzzy=True)
        except (ValueError, OverflowError) as e:
            raise RetrievalBenchmarkError(
                f"Cannot read the session date {text!r}; expected e.g. '1:56 pm on 8 May, 2023'."
            ) from e
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def turn_text(speaker: str, text: str, blip_caption: str | None = None) -> str:
    """The memory content of one dialog turn.

    Args:
        speaker: Who spoke.
        text: What they said.
        blip_caption: Caption of the image shared in the turn, if any.

    Returns:
        ``<speaker> said, "<text>"``, plus `` and shared <blip_caption>`` for image turns.
    """
    content = f'{speaker} said, "{text}"'
    if blip_caption:
        content += f" and shared {blip_caption}"
    return content


def split_evidence(evidence: Iterable[str], known: Collection[str]) -> list[str]:
    """Clean the evidence of one question into dialog ids that name turns.

    Some LoCoMo evidence strings hold several ids (``"D8:6; D9:17"``): every string is
    split on ``;``, ``,`` and whitespace, ids that name no turn are dropped, and
    duplicates are dropped.

    Args:
        evidence: The question's ``evidence`` list.
        known: The ``dia_id`` of every turn of the conversation.

    Returns:
        The dialog ids, in the order given.
    """
    found: dict[str, None] = {}
    for raw in evidence:
        if not isinstance(raw, str):
            continue
        for part in _EVIDENCE_SEPARATORS.split(raw):
            if part and part in known:
                found[part] = None
    return list(found)


def recall_at_k(evidence: Collection[str], ranked_keys: Sequence[str], k: int) -> float:
    """Fraction of the evidence found among the first `k` results.

    Args:
        evidence: The dialog ids that answer the question (not empty).
        ranked_keys: Keys of the search results, best first.
        k: The cut-off.

    Returns:
        ``|evidence ∩ ranked_keys[:k]| / |evidence|``, from 0 to 1.

    Raises:
        ValueError: `evidence` is empty or `k` is not positive.
    """
    if not evidence:
        raise ValueError("recall@k needs at least one evidence id.")
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}.")
    wanted = set(evidence)
    return len(wanted & set(ranked_keys[:k])) / len(wanted)


def parse_ks(text: str) -> list[int]:
    """Parse ``5,10,25,50`` into the recall cut-offs.

    Args:
        text: Comma-separated positive integers.

    Returns:
        The cut-offs, ascending, without duplicates.

    Raises:
        RetrievalBenchmarkError: A part is not a positive integer, or none is given.
    """
    ks: set[int] = set()
    for part in text.split(","):
        raw = part.strip()
        if not raw:
            continue
        try:
            value = int(raw)
        except ValueError as e:
            raise RetrievalBenchmarkError(
                f"{raw!r} is not a cut-off; use e.g. --k 5,10,25,50."
            ) from e
        if value <= 0:
            raise RetrievalBenchmarkError(f"cut-offs must be positive, got {value}.")
        ks.add(value)
    if not ks:
        raise RetrievalBenchmarkError("give at least one cut-off, e.g. --k 10.")
    return sorted(ks)


@dataclass(frozen=True)
class Turn:
    """One dialog turn of a LoCoMo conversation.

    Attributes:
        dia_id: ``"D<session>:<turn>"``, the memory's key.
        speaker: Who spoke.
        text: What they said.
        session: The session number.
        occurred_at: The session's date (aware UTC).
        blip_caption: Caption of the image shared in the turn, if any.
    """

    dia_id: str
    speaker: str
    text: str
    session: int
    occurred_at: datetime
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The memory text (see `turn_text`)."""
        return turn_text(self.speaker, self.text, self.blip_caption)

    def value(self) -> dict[str, Any]:
        """The stored value of this turn's memory.

        Returns:
            ``{"content", "occurred_at" (ISO 8601), "speaker", "session"}``.
        """
        return {
            "content": self.content,
            "occurred_at": self.occurred_at.isoformat(),
            "speaker": self.speaker,
            "session": self.session,
        }


@dataclass(frozen=True)
class Question:
    """One LoCoMo question with usable evidence.

    Attributes:
        question: The question text (the search query).
        evidence: The dialog ids that answer it, cleaned by `split_evidence`.
        category: The LoCoMo category number (see `CATEGORY_NAMES`).
    """

    question: str
    evidence: tuple[str, ...]
    category: int

    @property
    def category_name(self) -> str:
        """The category's name, or ``category-<n>`` for an unknown number."""
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample, ready to ingest and query.

    Attributes:
        sample_id: E.g. ``"conv-26"``.
        turns: Every turn, in dialog order, session by session.
        questions: The questions left with evidence after cleaning.
        skipped_questions: Questions dropped for lack of evidence naming a turn.
        now: When the questions are asked: the day after the last session with turns.
    """

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int
    now: datetime

    @property
    def namespace(self) -> tuple[str, ...]:
        """The conversation's namespace in the store."""
        return (NAMESPACE_LABEL, self.sample_id)

    def sessions(self) -> Iterator[tuple[datetime, list[Turn]]]:
        """The turns grouped by session, in order.

        Yields:
            The session's date and its turns.
        """
        current: list[Turn] = []
        for turn in self.turns:
            if current and turn.session != current[0].session:
                yield current[0].occurred_at, current
                current = []
            current.append(turn)
        if current:
            yield current[0].occurred_at, current


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    """Turn one LoCoMo sample into turns and questions.

    Sessions without turns (conv-26 has dates of sessions that hold none) are ignored,
    also for the date of the questions.

    Args:
        sample: One element of the LoCoMo JSON list.

    Returns:
        The conversation.

    Raises:
        RetrievalBenchmarkError: The sample lacks a field the benchmark needs, a session
            with turns has no readable date, or no session has turns.
    """
    try:
        sample_id = str(sample["sample_id"])
        conversation = sample["conversation"]
    except (KeyError, TypeError) as e:
        raise RetrievalBenchmarkError(
            "A LoCoMo sample needs 'sample_id' and 'conversation'."
        ) from e
    numbers = sorted(
        int(m.group(1))
        for key in conversation
        if (m := _SESSION_KEY.fullmatch(key)) and conversation[key]
    )
    turns: list[Turn] = []
    last_date: datetime | None = None
    for n in numbers:
        date_text = conversation.get(f"session_{n}_date_time")
        if not isinstance(date_text, str):
            raise RetrievalBenchmarkError(f"{sample_id}: session {n} has no session_{n}_date_time.")
        date = parse_session_date(date_text)
        last_date = date
        for raw in conversation[f"session_{n}"]:
            try:
                turns.append(
                    Turn(
                        dia_id=str(raw["dia_id"]),
                        speaker=str(raw["speaker"]),
                        text=str(raw["text"]),
                        session=n,
                        occurred_at=date,
                        blip_caption=raw.get("blip_caption") or None,
                    )
                )
            except (KeyError, TypeError) as e:
                raise RetrievalBenchmarkError(
                    f"{sample_id}: a turn of session {n} lacks 'dia_id', 'speaker' or 'text'."
                ) from e
    if last_date is None:
        raise RetrievalBenchmarkError(f"{sample_id}: no session has turns.")
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = 0
    for qa in sample.get("qa", []):
        evidence = split_evidence(qa.get("evidence") or [], known)
        if not evidence or not qa.get("question"):
            skipped += 1
            continue
        questions.append(
            Question(
                question=str(qa["question"]),
                evidence=tuple(evidence),
                category=int(qa.get("category", 0)),
            )
        )
    return Conversation(
        sample_id=sample_id,
        turns=tuple(turns),
        questions=tuple(questions),
        skipped_questions=skipped,
        now=last_date + timedelta(days=1),
    )


def load_locomo(path: str | Path, conversations: Sequence[str] | None = None) -> list[Conversation]:
    """Read a LoCoMo JSON file.

    Args:
        path: The file (a JSON list of samples).
        conversations: Sample ids to keep, in this order; `None` keeps all, in file order.

    Returns:
        The conversations.

    Raises:
        RetrievalBenchmarkError: The file cannot be read or parsed, or a requested
            sample id is not in it.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise RetrievalBenchmarkError(f"Cannot read LoCoMo data from {str(path)!r}: {e}") from e
    if not isinstance(data, list):
        raise RetrievalBenchmarkError(
            f"{str(path)!r} is not LoCoMo data: expected a JSON list of samples."
        )
    by_id = {str(s.get("sample_id")): s for s in data if isinstance(s, dict)}
    if conversations is None:
        wanted = list(by_id)
    else:
        wanted = list(dict.fromkeys(conversations))
        missing = [c for c in wanted if c not in by_id]
        if missing:
            raise RetrievalBenchmarkError(
                f"Conversation(s) {', '.join(missing)} not in {str(path)!r}; it has"
                f" {', '.join(by_id) or 'none'}."
            )
    return [parse_conversation(by_id[c]) for c in wanted]


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


# --------------------------------------------------------------------------- running


@dataclass
class RetrievalBenchConfig:
    """What the retrieval benchmark runs.

    Attributes:
        data: Path of the LoCoMo JSON file.
        conversations: Sample ids to run; `None` runs all.
        ks: Recall cut-offs; the search limit is the largest.
        mode: Retrieval, from `RETRIEVAL_MODES`; `None` is ``"hybrid"`` with memory
            scoring and ``"semantic"`` with similarity scoring (which has no other).
        decay: Keep the recency term of memory scoring; `False` sets its weight to 0.
        scoring: ``"memory"`` or ``"similarity"`` (the store's scoring mode).
        chroma_path: Chroma directory; `None` uses a temporary one removed at the end.
            In a given directory, memories of earlier runs in the benchmark's
            namespaces are deleted first and this run's are kept.
        batch_size: Turns per `store.batch` call.
        progress: Show a progress bar while ingesting and searching.
        overrides: Extra `ScoringConfig` keys (memory scoring only), e.g.
            ``{"context_keys": False}`` for an ablation.
    """

    data: str
    conversations: list[str] | None = None
    ks: list[int] = field(default_factory=lambda: list(DEFAULT_KS))
    mode: str | None = None
    decay: bool = True
    scoring: str = "memory"
    chroma_path: str | None = None
    batch_size: int = 64
    progress: bool = True
    overrides: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> RetrievalBenchConfig:
        """Check the options and resolve the retrieval mode.

        Returns:
            This config, with `mode` set and `ks` sorted.

        Raises:
            RetrievalBenchmarkError: An option is invalid.
        """
        if self.scoring not in SCORING_MODES:
            raise RetrievalBenchmarkError(
                f"scoring must be one of {', '.join(SCORING_MODES)}, got {self.scoring!r}."
            )
        if self.mode is None:
            self.mode = "hybrid" if self.scoring == "memory" else "semantic"
        if self.mode == "contextual":
            self.mode = "hybrid"  # one user per namespace: contextual adds nothing
        if self.mode not in RETRIEVAL_MODES:
            raise RetrievalBenchmarkError(
                f"mode must be one of {', '.join(RETRIEVAL_MODES)}, got {self.mode!r}."
            )
        if self.scoring == "similarity" and self.mode != "semantic":
            raise RetrievalBenchmarkError(
                f"--scoring similarity ranks by cosine similarity only; --mode {self.mode}"
                " needs --scoring memory."
            )
        if self.overrides and self.scoring != "memory":
            raise RetrievalBenchmarkError(
                "--set changes memory scoring; drop --scoring similarity."
            )
        if not self.ks or any(k <= 0 for k in self.ks):
            raise RetrievalBenchmarkError(f"ks must be positive cut-offs, got {self.ks}.")
        self.ks = sorted(set(self.ks))
        if self.batch_size <= 0:
            raise RetrievalBenchmarkError(f"batch_size must be positive, got {self.batch_size}.")
        if self.conversations is not None and not self.conversations:
            raise RetrievalBenchmarkError("give at least one conversation id.")
        return self

    def scoring_config(self) -> dict[str, Any]:
        """The store's `ScoringConfig` for this run.

        Returns:
            ``{"mode": "similarity"}``, or memory scoring with the run's retrieval and,
            without decay, ``recency_weight`` 0.
        """
        if self.scoring == "similarity":
            return {"mode": "similarity"}
        config: dict[str, Any] = {"mode": "memory", "retrieval": self.mode}
        if not self.decay:
            config["recency_weight"] = 0.0
        config.update(self.overrides)
        return config

    def search_filter(self) -> dict[str, Any] | None:
        """The filter of every search: the retrieval option, in memory scoring only.

        Returns:
            ``{"$retrieval": mode}``, or `None` with similarity scoring (which accepts
            no search options).
        """
        if self.scoring == "similarity":
            return None
        return {"$retrieval": self.mode}


@dataclass
class CategoryRecall:
    """Recall of a group of questions.

    Attributes:
        n: Number of questions.
        recall: Mean recall@k in percent, by k.
    """

    n: int
    recall: dict[int, float]


@dataclass
class RetrievalBenchReport:
    """Everything one retrieval benchmark run measured.

    Attributes:
        config: The options of the run (mode resolved).
        overall: Recall of every question.
        per_category: Recall by category name, in category order.
        per_conversation: Recall by sample id.
        n_turns: Memories written.
        skipped_questions: Questions without evidence naming a turn.
        ingest_seconds: Time spent in `store.batch` writing the turns.
        warmup_seconds: Time of one untimed search before ingesting (model loading).
        search_p50_ms: Median latency of one search.
        search_p95_ms: 95th percentile latency of one search.
        seconds: Wall time of the run, the model loading included.
    """

    config: RetrievalBenchConfig
    overall: CategoryRecall
    per_category: dict[str, CategoryRecall]
    per_conversation: dict[str, CategoryRecall]
    n_turns: int
    skipped_questions: int
    ingest_seconds: float
    warmup_seconds: float
    search_p50_ms: float | None
    search_p95_ms: float | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary.

        Returns:
            ``recall@<k>`` (percent) for each k, ``n_questions``, ``per_category`` and
            ``per_conversation`` (each ``{"recall@<k>": .., "n": ..}``), ``mode``,
            ``scoring``, ``decay``, timings and the config.
        """

        def group(g: CategoryRecall) -> dict[str, Any]:
            out: dict[str, Any] = {f"recall@{k}": round(v, 2) for k, v in g.recall.items()}
            out["n"] = g.n
            return out

        result: dict[str, Any] = {
            "benchmark": "retrieval",
            **{f"recall@{k}": round(v, 2) for k, v in self.overall.recall.items()},
            "n_questions": self.overall.n,
            "per_category": {name: group(g) for name, g in self.per_category.items()},
            "per_conversation": {name: group(g) for name, g in self.per_conversation.items()},
            "mode": self.config.mode,
            "scoring": self.config.scoring,
            "decay": self.config.decay,
            "ks": list(self.config.ks),
            "n_turns": self.n_turns,
            "skipped_questions": self.skipped_questions,
            "ingest_seconds": round(self.ingest_seconds, 3),
            "warmup_seconds": round(self.warmup_seconds, 3),
            "search_p50_ms": _round(self.search_p50_ms),
            "search_p95_ms": _round(self.search_p95_ms),
            "seconds": round(self.seconds, 3),
            "config": asdict(self.config),
        }
        return result


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _mean_recall(rows: Sequence[dict[int, float]], ks: Sequence[int]) -> CategoryRecall:
    if not rows:
        return CategoryRecall(n=0, recall={k: 0.0 for k in ks})
    return CategoryRecall(
        n=len(rows), recall={k: 100.0 * sum(r[k] for r in rows) / len(rows) for k in ks}
    )


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
    rows_by_conv: dict[str, list[dict[int, float]]] = {}
    rows_by_cat: dict[int, list[dict[int, float]]] = {}
    all_rows: list[dict[int, float]] = []
    search_seconds: list[float] = []
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
                        t0 = time.perf_counter()
                        hits = store.search(
                            namespace, query=q.question, limit=limit, filter=search_filter
                        )
                        search_seconds.append(time.perf_counter() - t0)
                        keys = [h.key for h in hits]
                        row = {k: recall_at_k(q.evidence, keys, k) for k in ks}
                        all_rows.append(row)
                        rows_by_conv.setdefault(conv.sample_id, []).append(row)
                        rows_by_cat.setdefault(q.category, []).append(row)
                        progress.advance(search_task)
        finally:
            store.close()
    p50 = p95 = None
    if search_seconds:
        ms = sorted(s * 1000.0 for s in search_seconds)
        p50 = statistics.median(ms)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return RetrievalBenchReport(
        config=config,
        overall=_mean_recall(all_rows, ks),
        per_category={
            CATEGORY_NAMES.get(c, f"category-{c}"): _mean_recall(rows_by_cat[c], ks)
            for c in sorted(rows_by_cat)
        },
        per_conversation={
            c.sample_id: _mean_recall(rows_by_conv.get(c.sample_id, []), ks) for c in conversations
        },
        n_turns=n_turns,
        skipped_questions=sum(c.skipped_questions for c in conversations),
        ingest_seconds=ingest_seconds,
        warmup_seconds=warmup_seconds,
        search_p50_ms=p50,
        search_p95_ms=p95,
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
    )
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


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """Parse `--set KEY=VALUE` options into `ScoringConfig` overrides.

    Values are JSON (`0.5`, `false`, `"keyword"`); anything that is not JSON is a string.

    Args:
        items: The `KEY=VALUE` strings.

    Returns:
        The overrides.

    Raises:
        RetrievalBenchmarkError: An item has no `=`.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise RetrievalBenchmarkError(f"--set takes KEY=VALUE, got {item!r}.")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out
