"""The retrieval modes of memory search, as one table.

Every place that behaves differently by mode (which channels the long tier is asked
for, whether the caller's user id is required, how large the candidate pool is, how
the channels are fused, what a store without an index does) reads it from `MODES`,
so a new mode is one `RetrievalMode` value and one `MODES` row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, cast, get_args

__all__ = ["RetrievalMode", "RETRIEVAL_MODES", "ModeSpec", "MODES", "Fusion", "mode_spec"]

RetrievalMode = Literal["semantic", "keyword", "contextual", "hybrid"]
"""How memory search finds and fuses candidates (see `MODES`)."""

RETRIEVAL_MODES: tuple[str, ...] = get_args(RetrievalMode)

Fusion = Literal["cosine", "bm25", "rrf"]
"""How relevance is made: cosine similarity, normalised BM25, or reciprocal-rank fusion."""


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """What one retrieval mode does."""

    dense: bool
    """Ask the long tier for nearest vectors of the query (when the store has an index)."""
    keyword: bool
    """Ask the long tier for BM25 matches of the query's terms."""
    fusion: Fusion
    user_scoped: bool = False
    """Needs the caller's user id (`$user`) and prefers the user's own memories."""
    pool_factor: int = 1
    """Candidates fetched per channel, in multiples of `max(candidates, limit)`."""
    lists_without_index: bool = True
    """On a store without an index a query does not rank: it lists, like LangGraph's
    stores. When False, the mode falls back to its keyword channel instead."""

    def keyword_only(self, indexed: bool) -> bool:
        """Whether only the keyword channel runs (so a query without words finds nothing)."""
        if not indexed and self.lists_without_index:
            return False
        return self.keyword and not (self.dense and indexed)


MODES: Mapping[RetrievalMode, ModeSpec] = MappingProxyType(
    {
        "semantic": ModeSpec(dense=True, keyword=False, fusion="cosine"),
        "keyword": ModeSpec(dense=False, keyword=True, fusion="bm25", lists_without_index=False),
        "hybrid": ModeSpec(dense=True, keyword=True, fusion="rrf"),
        "contextual": ModeSpec(
            dense=True,
            keyword=True,
            fusion="rrf",
            user_scoped=True,
            pool_factor=2,
            lists_without_index=False,
        ),
    }
)


def mode_spec(mode: str) -> ModeSpec:
    """The row of `mode`.

    Raises:
        ValueError: `mode` is not one of `RETRIEVAL_MODES`.
    """
    spec = cast(Mapping[str, ModeSpec], MODES).get(mode)
    if spec is None:
        raise ValueError(f"Unknown retrieval mode {mode!r}; use one of {list(RETRIEVAL_MODES)}.")
    return spec
