"""Bad embeddings fail the whole batch before any write, on both tiers.

Before these checks, only the vector size was checked: a NaN vector was stored on the
short tier (and refused by Chroma only after the short tier's writes), a vector of
strings failed half-way through the writes, and a model returning too few vectors
raised a raw `IndexError` (too many: silently ignored).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp, SearchOp

from langgraph_tiered_memory import AsyncTieredMemoryStore, ConfigurationError, TieredMemoryStore
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings
from tests.mixed_tiers import (
    LONG_NS,
    MIXED,
    SHORT_NS,
    assert_untouched,
    batch_around,
    seed,
    store_state,
)

POISON = "poison"
FLOAT32_MAX = float(np.finfo(np.float32).max)


class PoisonEmbeddings(HashingEmbeddings):
    """Deterministic embeddings, except for texts holding `POISON`.

    Their vector gets `bad` at `entry`, or (with `extra`) the model returns `extra`
    more vectors (fewer when negative) for a batch holding one.
    """

    def __init__(self, bad: Any = None, entry: int = 3, extra: int = 0) -> None:
        super().__init__(DIMS)
        self.bad, self.entry, self.extra = bad, entry, extra

    def _poisoned(self, text: str, vector: list[Any]) -> list[Any]:
        if POISON in text and not self.extra:
            vector = list(vector)
            vector[self.entry] = self.bad
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = super().embed_documents(texts)
        out = [self._poisoned(t, v) for t, v in zip(texts, vectors, strict=True)]
        if any(POISON in t for t in texts):
            out = out[: len(out) + self.extra] if self.extra < 0 else out + out[: self.extra]
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._poisoned(text, super().embed_query(text))


def _indexed(embeddings: HashingEmbeddings) -> dict[str, Any]:
    return {"dims": DIMS, "embed": embeddings, "fields": ["text"]}


def _seeded(make_store: Callable[..., TieredMemoryStore], emb: HashingEmbeddings) -> Any:
    return seed(make_store(tiers=MIXED, index=_indexed(emb)))


_ENTRIES = {
    "nan": (math.nan, "holding NaN"),
    "inf": (math.inf, "holding an infinity"),
    "-inf": (-math.inf, "holding an infinity"),
    "beyond-float32": (1e39, "beyond float32"),
    "none": (None, "entry 3 of type NoneType"),
    "str": ("a", "entry 3 of type str"),
    "bool": (True, "entry 3 of type bool"),
}


@pytest.mark.parametrize("bad_tier", ["short", "long"])
@pytest.mark.parametrize("case", list(_ENTRIES))
def test_a_bad_vector_entry_fails_a_mixed_batch_before_any_write(
    make_store: Callable[..., TieredMemoryStore],
    redis_url: str,
    key_prefix: str,
    case: str,
    bad_tier: str,
) -> None:
    bad, fragment = _ENTRIES[case]
    store = _seeded(make_store, PoisonEmbeddings(bad))
    before = store_state(store, redis_url, key_prefix)
    bad_ns = SHORT_NS if bad_tier == "short" else LONG_NS
    with pytest.raises(ConfigurationError, match="stored items") as err:
        store.batch(batch_around(PutOp(bad_ns, "bad", {"text": POISON})))
    assert fragment in str(err.value)
    assert "Check the embedding model" in str(err.value)
    assert_untouched(store, before, redis_url, key_prefix)


@pytest.mark.parametrize("bad_tier", ["short", "long"])
@pytest.mark.parametrize("extra", [-1, 1, 2])
def test_another_number_of_vectors_than_texts_fails_the_batch_before_any_write(
    make_store: Callable[..., TieredMemoryStore],
    redis_url: str,
    key_prefix: str,
    extra: int,
    bad_tier: str,
) -> None:
    store = _seeded(make_store, PoisonEmbeddings(extra=extra))
    before = store_state(store, redis_url, key_prefix)
    bad_ns = SHORT_NS if bad_tier == "short" else LONG_NS
    with pytest.raises(ConfigurationError, match="exactly one vector per text") as err:
        store.batch(batch_around(PutOp(bad_ns, "bad", {"text": POISON})))
    assert f"returned {5 + extra} vectors for 5 texts" in str(err.value)
    assert_untouched(store, before, redis_url, key_prefix)


@pytest.mark.parametrize("searched", [SHORT_NS, LONG_NS])
def test_a_non_finite_query_vector_fails_the_batch_before_any_write(
    make_store: Callable[..., TieredMemoryStore],
    redis_url: str,
    key_prefix: str,
    searched: tuple[str, ...],
) -> None:
    store = _seeded(make_store, PoisonEmbeddings(math.nan))
    before = store_state(store, redis_url, key_prefix)
    with pytest.raises(ConfigurationError, match="search queries holding NaN"):
        store.batch(batch_around(SearchOp(searched, query=POISON)))
    with pytest.raises(ConfigurationError, match="search queries holding NaN"):
        store.search(searched, query=POISON)
    assert_untouched(store, before, redis_url, key_prefix)


def test_a_nan_vector_is_refused_on_a_single_tier_store(
    make_store: Callable[..., TieredMemoryStore], tier: str
) -> None:
    store = make_store(tier, index=_indexed(PoisonEmbeddings(math.nan)))
    with pytest.raises(ConfigurationError, match="NaN"):
        store.put(("n",), "k", {"text": POISON})
    assert store.get(("n",), "k") is None
    assert store.list_namespaces() == []


_bad_entries = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, None, True, False, "0.5", b"1"]),
    st.floats(min_value=FLOAT32_MAX, exclude_min=True),
    st.floats(max_value=-FLOAT32_MAX, exclude_max=True),
)


def test_any_bad_entry_anywhere_leaves_both_tiers_unchanged(
    make_store: Callable[..., TieredMemoryStore], redis_url: str, key_prefix: str
) -> None:
    emb = PoisonEmbeddings()
    store = _seeded(make_store, emb)

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        bad=_bad_entries,
        entry=st.integers(0, DIMS - 1),
        bad_ns=st.sampled_from([SHORT_NS, LONG_NS, ("s", "b"), ("m", "n")]),
        position=st.integers(0, 4),
    )
    def check(bad: Any, entry: int, bad_ns: tuple[str, ...], position: int) -> None:
        emb.bad, emb.entry = bad, entry
        ops = batch_around(PutOp(bad_ns, "bad", {"text": POISON}))
        ops.insert(position, ops.pop())
        before = store_state(store, redis_url, key_prefix)
        with pytest.raises(ConfigurationError, match="embedding model"):
            store.batch(ops)
        assert_untouched(store, before, redis_url, key_prefix)

    check()


async def test_async_batch_with_a_bad_vector_writes_nothing(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    emb = PoisonEmbeddings(math.inf)
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        tiers=MIXED,  # type: ignore[arg-type]
        scoring={"mode": "similarity"},
        index=_indexed(emb),  # type: ignore[arg-type]
    ) as store:
        await store.aput(SHORT_NS, "keep", {"text": "old short"})
        await store.aput(LONG_NS, "keep", {"text": "old long"})
        for bad_ns in (SHORT_NS, LONG_NS):
            with pytest.raises(ConfigurationError, match="infinity"):
                await store.abatch(batch_around(PutOp(bad_ns, "bad", {"text": POISON})))
        emb.bad, emb.extra = None, -1
        with pytest.raises(ConfigurationError, match="exactly one vector per text"):
            await store.abatch(batch_around(PutOp(LONG_NS, "bad", {"text": POISON})))
        assert (await store.aget(SHORT_NS, "keep")).value == {"text": "old short"}  # type: ignore[union-attr]
        assert (await store.aget(LONG_NS, "keep")).value == {"text": "old long"}  # type: ignore[union-attr]
        for ns in (SHORT_NS, LONG_NS):
            assert await store.aget(ns, "fresh") is None
            assert await store.aget(ns, "bad") is None
