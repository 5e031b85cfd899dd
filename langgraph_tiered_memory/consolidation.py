"""Consolidation: merge near-duplicate memories into one, keeping provenance.

Near-duplicates are found by embedding similarity: memories whose own-text vectors
have a cosine similarity of at least `threshold` with a seed memory form a group
(greedy, each memory in at most one group). A group of two or more becomes one
consolidated memory: without a model its content is the group's distinct sentences
(the longest memory first); with a model, the model merges them with
`CONSOLIDATION_PROMPT`. Its importance is the group's highest, and `consolidated_from`
/ `source_count` record the sources. The consolidated memory is written first; only
then are the originals deleted (or down-weighted), so a crash in between loses nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = ["CONSOLIDATION_PROMPT", "group_near_duplicates", "merge_contents"]

CONSOLIDATION_PROMPT = (
    "Merge these related memories into one. Keep every core fact, remove redundancy,"
    " resolve contradictions in favour of the most recent statement, and stay within 200"
    " words. Answer with the merged memory only."
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def group_near_duplicates(
    keys: Sequence[str], vectors: Sequence[Sequence[float]], threshold: float
) -> list[list[str]]:
    """Groups of two or more keys whose vectors are within `threshold` cosine of a seed.

    Args:
        keys: Memory keys.
        vectors: Their embeddings (same order).
        threshold: Minimum cosine similarity to the group's seed.

    Returns:
        The groups, each seed first, in input order.
    """
    if not keys:
        return []
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.maximum(norms, 1e-12)
    sims = unit @ unit.T
    taken: set[int] = set()
    groups: list[list[str]] = []
    for i in range(len(keys)):
        if i in taken:
            continue
        members = [j for j in range(len(keys)) if j not in taken and sims[i, j] >= threshold]
        if len(members) >= 2:
            taken.update(members)
            groups.append([keys[j] for j in sorted(members, key=lambda j: (j != i, j))])
    return groups


def merge_contents(contents: Sequence[str]) -> str:
    """The distinct sentences of several memories, the longest memory's first."""
    seen: set[str] = set()
    out: list[str] = []
    for content in sorted(contents, key=len, reverse=True):
        for sentence in _SENTENCE.split(content.strip()):
            norm = " ".join(sentence.lower().split())
            if norm and norm not in seen:
                seen.add(norm)
                out.append(sentence.strip())
    return " ".join(out)
