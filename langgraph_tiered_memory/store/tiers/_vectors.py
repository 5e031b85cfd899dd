"""Vector similarity and the order of scored hits."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langgraph_tiered_memory.store.tiers._items import Namespace, StoredItem


def cosine_similarities(query: Sequence[float], matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of `query` with each row of `matrix` (0 for zero vectors)."""
    if matrix.size == 0:
        return np.zeros((0,), dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    qn = np.linalg.norm(q)
    norms = np.linalg.norm(matrix, axis=1)
    out = np.zeros(matrix.shape[0], dtype=np.float64)
    mask = norms > 0
    if qn > 0:
        out[mask] = (matrix[mask] @ q) / (norms[mask] * qn)
    return out


def rank_key(hit: tuple[StoredItem, float | None]) -> tuple[float, Namespace, str]:
    """Sort key of scored hits: best score first, ties broken by namespace and key.

    A fixed tie-break keeps pages of the same search disjoint and stable.
    """
    item, score = hit
    return (-(score if score is not None else float("-inf")), item.namespace, item.key)
