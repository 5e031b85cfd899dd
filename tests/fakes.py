"""Deterministic embeddings for tests (no model, no network)."""

from __future__ import annotations

import hashlib
import math

from langchain_core.embeddings import Embeddings


class HashingEmbeddings(Embeddings):
    """Bag of character n-grams hashed into `dims` buckets with random signs, normalised.

    Texts sharing characters and n-grams get similar vectors; identical texts get
    identical vectors; the empty text gets the zero vector.
    """

    def __init__(self, dims: int = 64, ngram: int = 2) -> None:
        self.dims = dims
        self.ngram = ngram
        self.calls = 0

    def _bucket(self, gram: str) -> tuple[int, float]:
        h = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
        n = int.from_bytes(h, "little")
        return n % self.dims, 1.0 if (n >> 40) & 1 else -1.0

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        text = text.lower()
        grams = list(text) + [text[i : i + self.ngram] for i in range(len(text) - self.ngram + 1)]
        for g in grams:
            i, sign = self._bucket(g)
            vec[i] += sign
        norm = math.sqrt(sum(x * x for x in vec))
        return [x / norm for x in vec] if norm else vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._embed(text)


class Clock:
    """A settable clock for stores and graphs (epoch seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
