"""Consolidation: merge related memories into one, keeping provenance.

Near-duplicates are found by embedding similarity: memories whose own-text vectors
have a cosine similarity of at least `threshold` with a seed memory form a group
(greedy, each memory in at most one group). A theme (a query) forms one group instead:
the memories whose own-text vectors are at least `min_similarity` cosine to the query.

A group of two or more becomes one consolidated memory. Without a model its content is
every source's text once (the longest memory first; a source already contained in the
text is left out, see `merge_contents`); with a model, the model merges them with
`CONSOLIDATION_PROMPT`. Its importance is the group's highest, and
`consolidated_from` / `source_count` record the sources. The consolidated memory is
written first; only then are the originals deleted (or down-weighted), so a crash in
between loses nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from langgraph_tiered_memory._models import resolve_model

__all__ = [
    "CONSOLIDATION_PROMPT",
    "group_near_duplicates",
    "merge_contents",
    "merger",
    "theme_group",
]

CONSOLIDATION_PROMPT = (
    "Merge these related memories into one. Keep every core fact, remove redundancy,"
    " resolve contradictions in favour of the most recent statement, and stay within 200"
    " words. Answer with the merged memory only."
)
THEME_SIMILARITY = 0.25
"""Default cosine similarity of a memory to a theme's query that puts it in the theme.

Compared in the embedder's threshold space (`embeddings.threshold_vectors`). A short
query scores lower against a memory than two memories score against each other: with
the offline models, memories about a theme score 0.23-0.61 against it and unrelated
ones at most 0.19 (docs/forgetting.md has the table)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _unit(vectors: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def group_near_duplicates(
    keys: Sequence[str],
    vectors: Sequence[Sequence[float]] | np.ndarray,
    threshold: float,
    block: int = 256,
) -> list[list[str]]:
    """Groups of two or more keys whose vectors are within `threshold` cosine of a seed.

    Similarities are computed `block` rows at a time, so memory stays at
    `block * len(keys)` floats however many memories there are.

    Args:
        keys: Memory keys.
        vectors: Their embeddings (same order).
        threshold: Minimum cosine similarity to the group's seed.
        block: Rows of the similarity matrix held at once.

    Returns:
        The groups, each seed first, in input order.
    """
    if not keys:
        return []
    unit = _unit(vectors)
    taken = np.zeros(len(keys), dtype=bool)
    groups: list[list[str]] = []
    for start in range(0, len(keys), block):
        close = (unit[start : start + block] @ unit.T) >= threshold
        # Only a row with a near neighbour besides itself can seed a group.
        for row in np.flatnonzero(close.sum(axis=1) >= 2):
            i = start + int(row)
            if taken[i]:
                continue
            hits = np.flatnonzero(close[row] & ~taken)
            if len(hits) >= 2:
                taken[hits] = True
                groups.append([keys[i], *(keys[int(j)] for j in hits if j != i)])
    return groups


def theme_group(
    keys: Sequence[str],
    vectors: Sequence[Sequence[float]] | np.ndarray,
    query_vector: Sequence[float],
    min_similarity: float,
    max_sources: int,
) -> list[str]:
    """The keys whose vectors are at least `min_similarity` cosine to a theme's vector.

    Args:
        keys: Memory keys.
        vectors: Their embeddings (same order).
        query_vector: The theme's embedding.
        min_similarity: Minimum cosine similarity to the theme.
        max_sources: Most keys returned.

    Returns:
        At most `max_sources` keys, most similar first (ties in input order).
    """
    if not keys:
        return []
    sims = _unit(vectors) @ _unit([query_vector])[0]
    order = np.argsort(-sims, kind="stable")
    return [keys[j] for j in order[:max_sources] if sims[j] >= min_similarity]


def _sentences(content: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(content.strip()) if s.strip()]


def _norm(sentence: str) -> str:
    return " ".join(sentence.casefold().split())


def _contains(kept: list[str], part: list[str]) -> bool:
    """Whether `part` occurs in `kept` as a run of consecutive sentences."""
    width = len(part)
    return any(kept[i : i + width] == part for i in range(len(kept) - width + 1))


def merge_contents(contents: Sequence[str]) -> str:
    """Every source's text once, the longest first; nothing of any source is lost.

    A source whose sentences already occur, consecutively and in order, in the text
    kept so far (case and spacing aside) adds nothing and is left out; any other
    source is appended whole. Dropping single repeated sentences instead would cut
    sentences that the splitter broke at an abbreviation ("Ask Dr. Smith." would
    lose "Smith." to "Meet Dr. Smith."), so it is not done.
    """
    kept: list[str] = []
    norms: list[str] = []
    for content in sorted(contents, key=len, reverse=True):
        sentences = _sentences(content)
        part = [_norm(s) for s in sentences]
        if not part or _contains(norms, part):
            continue
        kept.extend(sentences)
        norms.extend(part)
    return " ".join(kept)


def merger(model: str | BaseChatModel | None) -> Callable[[Sequence[str]], str]:
    """How a group's contents become one: `merge_contents`, or the model's merge.

    Args:
        model: Chat model or `init_chat_model` string merging the contents with
            `CONSOLIDATION_PROMPT`; None merges without a model (`merge_contents`).

    Returns:
        A function of the sources' contents returning the merged content. With a model
        it raises `ValueError` when the model answers with an empty merge.
    """
    chat = resolve_model(model)
    if chat is None:
        return merge_contents

    def merge(contents: Sequence[str]) -> str:
        reply = chat.invoke(
            [
                SystemMessage(content=CONSOLIDATION_PROMPT),
                HumanMessage(content="\n".join(f"- {c}" for c in contents)),
            ]
        )
        content = str(reply.text if hasattr(reply, "text") else reply.content).strip()
        if not content:
            raise ValueError(
                "The consolidation model returned an empty merge; nothing was changed."
                " Check the model, or pass model=None to merge without one."
            )
        return content

    return merge
