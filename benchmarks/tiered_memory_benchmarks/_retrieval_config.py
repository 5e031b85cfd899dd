"""Options of the retrieval benchmark: the run's config and the command-line parsers.

The retrieval modes are the store's own (`langgraph_tiered_memory.ranking.modes.MODES`).
A user-scoped mode (contextual) needs the caller's user id and prefers that user's
memories; a LoCoMo namespace holds one conversation and no users, so the benchmark runs
such a mode as the mode without user scope that has the same channels and fusion
(contextual as hybrid).

`graph` runs the store with a knowledge graph (`graph=True`: embedded SQLite graph, rule
extractor): ``"on"`` ranks with the graph channel, ``"compare"`` asks every question
twice, without the channel and with it, over the same store.

`--sweep KEY=V1,V2,...` (`parse_sweeps`) names `ScoringConfig` values to compare under
leave-one-conversation-out, chosen by `--select recall@K` (`parse_select`); a key in
`INDEX_TIME_KEYS` changes what a write stores and gets one store per value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_tiered_memory.ranking.modes import RETRIEVAL_MODES as STORE_MODES
from langgraph_tiered_memory.ranking.modes import mode_spec
from tiered_memory_benchmarks._retrieval_data import RetrievalBenchmarkError

__all__ = [
    "BENCH_GRAPH_WEIGHT",
    "DEFAULT_KS",
    "GRAPH_CHOICES",
    "INDEX_TIME_KEYS",
    "RETRIEVAL_MODES",
    "SCORING_MODES",
    "UNSWEPT_KEYS",
    "RetrievalBenchConfig",
    "parse_ks",
    "parse_overrides",
    "parse_select",
    "parse_sweeps",
    "same_value",
    "single_user_mode",
]

RETRIEVAL_MODES: tuple[str, ...] = tuple(m for m in STORE_MODES if not mode_spec(m).user_scoped)
"""Values of `RetrievalBenchConfig.mode`: the store's modes that need no caller's user id
(a user-scoped one runs as its single-user twin, see `single_user_mode`)."""

SCORING_MODES: tuple[str, ...] = ("memory", "similarity")
"""Values of `RetrievalBenchConfig.scoring` (the store's `ScoringConfig` mode)."""

DEFAULT_KS: tuple[int, ...] = (5, 10, 25, 50)
"""The cut-offs of the LoCoMo paper's retrieval table."""

GRAPH_CHOICES: tuple[str, ...] = ("off", "on", "compare")
"""Values of `RetrievalBenchConfig.graph`."""

BENCH_GRAPH_WEIGHT = 0.5
"""`graph_weight` of a run with the graph channel when the store's default is 0 and
no `--set graph_weight=...` is given: half a primary list's weight, like the context
list (the graph list is derived from extracted triples, not from the memories' text)."""


INDEX_TIME_KEYS: frozenset[str] = frozenset(
    {"context_keys", "sentence_keys", "time_keys", "user_label"}
)
"""`ScoringConfig` keys that change what a write stores (index keys, the user label of
the graph sync): a sweep builds one store per value of these, and evaluates every other
key on the run's own store, changing only the scoring of each search."""

UNSWEPT_KEYS: frozenset[str] = frozenset({"mode", "retrieval"})
"""Keys `--sweep` refuses: the scoring mode and retrieval have their own options."""


def single_user_mode(mode: str) -> str:
    """The mode that ranks like `mode` when a namespace has one user.

    A user-scoped mode (`ModeSpec.user_scoped`) runs as the mode without user scope that
    has the same channels and fusion (contextual as hybrid); any other name is returned
    unchanged.

    Args:
        mode: A retrieval mode name, known or not.

    Returns:
        The mode to run.
    """
    if mode not in STORE_MODES:
        return mode
    spec = mode_spec(mode)
    if not spec.user_scoped:
        return mode
    for name in RETRIEVAL_MODES:
        twin = mode_spec(name)
        if (twin.dense, twin.keyword, twin.fusion) == (spec.dense, spec.keyword, spec.fusion):
            return name
    return mode


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


def same_value(a: Any, b: Any) -> bool:
    """Whether two setting values are the same (``True`` is not ``1``, ``10`` is ``10.0``).

    Args:
        a: A value.
        b: Another value.

    Returns:
        Equal, and both booleans or neither.
    """
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)


def parse_sweeps(items: Sequence[str]) -> dict[str, list[Any]]:
    """Parse `--sweep KEY=V1,V2,...` options.

    Each value is JSON (`0.25`, `false`, `"keyword"`); anything that is not JSON is a
    string. Repeated values are dropped.

    Args:
        items: The `KEY=V1,V2,...` strings.

    Returns:
        The values of each key, in the order given.

    Raises:
        RetrievalBenchmarkError: An item has no `=` or no value, a key repeats or is
            one of `UNSWEPT_KEYS`.
    """
    out: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RetrievalBenchmarkError(
                f"--sweep takes KEY=V1,V2,..., got {item!r}; e.g. --sweep rrf_k=5,10,20."
            )
        if key in UNSWEPT_KEYS:
            raise RetrievalBenchmarkError(
                f"--sweep cannot vary {key!r}; use --{'scoring' if key == 'mode' else 'mode'}."
            )
        if key in out:
            raise RetrievalBenchmarkError(f"--sweep names {key!r} twice; give its values once.")
        values: list[Any] = []
        for part in raw.split(","):
            text = part.strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = text
            if not any(same_value(value, v) for v in values):
                values.append(value)
        if not values:
            raise RetrievalBenchmarkError(f"--sweep {key}= has no value; e.g. {key}=5,10,20.")
        out[key] = values
    return out


def parse_select(text: str | None, ks: Sequence[int]) -> int:
    """The cut-off a sweep chooses by, from `--select recall@K`.

    Args:
        text: ``"recall@10"`` (or ``"10"``); `None` is recall@5, or the smallest cut-off
            when 5 is not measured.
        ks: The measured cut-offs.

    Returns:
        The cut-off.

    Raises:
        RetrievalBenchmarkError: The text is not ``recall@K`` or K is not measured.
    """
    if text is None:
        return 5 if 5 in ks else min(ks)
    raw = text.strip().lower().removeprefix("recall@")
    try:
        k = int(raw)
    except ValueError as e:
        raise RetrievalBenchmarkError(f"--select takes recall@K, got {text!r}.") from e
    if k not in ks:
        raise RetrievalBenchmarkError(
            f"--select recall@{k} needs {k} among the cut-offs (--k), which are"
            f" {','.join(map(str, ks))}."
        )
    return k


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
        graph: ``"off"`` (no graph), ``"on"`` (a store with `graph=True`, ranked with
            the graph channel) or ``"compare"`` (that store, every question asked
            without the channel and with it). Needs memory scoring and a fusing mode.
        merge: Put every conversation in one namespace, speakers renamed to the first
            one's (`bench._retrieval_merge`): a longer, harder haystack.
        embed: The store's `embed` string: ``"local"`` (the default offline embedder,
            multilingual-e5-small), ``"local:minilm"`` (all-MiniLM-L6-v2), or another
            384-dimension embedder's string.
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
    graph: str = "off"
    merge: bool = False
    embed: str = "local"

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
        self.mode = single_user_mode(self.mode)  # one user per namespace
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
        if self.graph not in GRAPH_CHOICES:
            raise RetrievalBenchmarkError(
                f"graph must be one of {', '.join(GRAPH_CHOICES)}, got {self.graph!r}."
            )
        if self.graph != "off" and (
            self.scoring != "memory" or mode_spec(self.mode).fusion != "rrf"
        ):
            raise RetrievalBenchmarkError(
                f"--graph {self.graph} fuses a graph list with the dense and keyword lists;"
                " it needs --scoring memory and --mode hybrid."
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
        if self.graph != "off":
            from langgraph_tiered_memory.ranking.scoring import GRAPH_WEIGHT

            config["graph_weight"] = GRAPH_WEIGHT or BENCH_GRAPH_WEIGHT
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
