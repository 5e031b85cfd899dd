"""Random operation sequences give the same results as LangGraph's InMemoryStore."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory import TieredMemoryStore
from tests.conftest import drop_redis_keys
from tests.fakes import HashingEmbeddings

DIMS = 32
EMB = HashingEmbeddings(dims=DIMS)
WORDS = ["apple", "banana", "cherry", "red car", "blue sky", "tea", "日本", ""]
NAMESPACES = [("a",), ("a", "b"), ("a", "b", "c"), ("a", "bc"), ("b",), ("b", "a"), ("ab",)]
PREFIXES = [(), ("a",), ("a", "b"), ("b",), ("ab",), ("zz",)]

values = st.fixed_dictionaries(
    {
        "n": st.integers(0, 5),
        "s": st.sampled_from(["x", "y", "z"]),
        "text": st.sampled_from(WORDS),
    },
    optional={
        "o": st.fixed_dictionaries({"k": st.integers(0, 2)}),
        "l": st.lists(st.integers(0, 2), max_size=2),
    },
)
# Dotted keys ("o.k") are left out: InMemoryStore reads only top-level keys, while
# this store reads nested fields like LangGraph's SQL stores (see the contract tests).
filters = st.one_of(
    st.none(),
    st.just({}),
    st.builds(lambda s: {"s": s}, st.sampled_from(["x", "y"])),
    st.builds(lambda n: {"n": {"$gt": n}}, st.integers(-1, 5)),
    st.builds(lambda n: {"n": {"$lte": n}}, st.integers(0, 5)),
    st.builds(
        lambda s, n: {"s": {"$ne": s}, "n": {"$gte": n}},
        st.sampled_from(["x", "z"]),
        st.integers(0, 4),
    ),
    st.builds(lambda k: {"o": {"k": k}}, st.integers(0, 2)),
    st.builds(lambda v: {"l": v}, st.lists(st.integers(0, 2), max_size=2)),
)
keys = st.sampled_from(["k1", "k2", "k3", "k4"])
# Small pages, so that limit and offset cut into results of a few items.
LIMITS = st.integers(1, 4)
OFFSETS = st.integers(0, 5)
SCORE_TOLERANCE = 1e-4  # vectors are stored as float32 by both tiers
MAX_PAGES = 8
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from(NAMESPACES), keys, values),
        st.tuples(
            st.just("put_many"),
            st.lists(
                st.tuples(st.sampled_from(NAMESPACES), keys, st.one_of(st.none(), values)),
                min_size=1,
                max_size=5,
            ),
        ),
        st.tuples(st.just("delete"), st.sampled_from(NAMESPACES), keys),
        st.tuples(st.just("get"), st.sampled_from(NAMESPACES), keys),
        st.tuples(
            st.just("search"),
            st.sampled_from(PREFIXES),
            filters,
            st.sampled_from([None, "apple", "red", "tea"]),
            LIMITS,
            OFFSETS,
        ),
        st.tuples(
            st.just("list"),
            st.sampled_from([None, ("a",), ("a", "*"), ("*", "b")]),
            st.sampled_from([None, ("a",), ("b",), ("*", "c")]),
            st.sampled_from([None, 1, 2]),
            LIMITS,
            OFFSETS,
        ),
    ),
    min_size=1,
    max_size=25,
)


def _search_view(results: list[Any], query: str | None) -> Any:
    if query is None:
        return sorted((r.namespace, r.key, repr(r.value)) for r in results)
    return sorted(
        (r.namespace, r.key, repr(r.value), None if r.score is None else round(r.score, 3))
        for r in results
    )


def _ids(results: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return [(r.namespace, r.key) for r in results]


def _check_search_pages(
    ours: BaseStore, ref: BaseStore, op: tuple, full: list[Any], ref_full: list[Any]
) -> None:
    """One page of a search against InMemoryStore's, and pages against the full result.

    LangGraph's contract orders results with a query by score (best first); without a
    query it leaves the order to the store (InMemoryStore returns insertion order, this
    store goes namespace by namespace), so there only page sizes and membership are
    compared with the reference. In both cases this store's pages must cut its own full result
    into consecutive, disjoint slices, so that paging never skips or repeats an item.
    """
    _, prefix, flt, query, limit, offset = op
    page = ours.search(prefix, filter=flt, query=query, limit=limit, offset=offset)
    ref_page = ref.search(prefix, filter=flt, query=query, limit=limit, offset=offset)
    expected_size = len(ref_full[offset : offset + limit])
    assert len(page) == len(ref_page) == expected_size, op
    if query is None:
        assert set(_ids(page)) <= set(_ids(ref_full)), op
    else:
        # Same scores in the same places as the reference page; each item with its own
        # score (items with equal scores may trade places at the edge of a page).
        ref_scores = {(r.namespace, r.key): r.score for r in ref_full}
        for ours_hit, ref_hit in zip(page, ref_page, strict=True):
            assert ours_hit.score == pytest.approx(ref_hit.score, abs=SCORE_TOLERANCE), op
            own = ref_scores[(ours_hit.namespace, ours_hit.key)]
            assert ours_hit.score == pytest.approx(own, abs=SCORE_TOLERANCE), op
    # Pages are consecutive slices of the full result.
    pages: list[Any] = []
    for n in range(MAX_PAGES):
        chunk = ours.search(prefix, filter=flt, query=query, limit=limit, offset=n * limit)
        pages.extend(chunk)
        if len(chunk) < limit:
            break
    assert _ids(pages) == _ids(full)[: len(pages)], op
    assert _ids(page) == _ids(full)[offset : offset + limit], op


def _check_list_pages(ours: BaseStore, op: tuple, full: list[tuple[str, ...]]) -> None:
    """Pages of `list_namespaces` are consecutive slices of the sorted full listing."""
    _, prefix, suffix, depth, limit, _ = op
    assert full == sorted(full), op
    pages: list[tuple[str, ...]] = []
    for n in range(MAX_PAGES):
        chunk = ours.list_namespaces(
            prefix=prefix, suffix=suffix, max_depth=depth, limit=limit, offset=n * limit
        )
        pages.extend(chunk)
        if len(chunk) < limit:
            break
    assert pages == full[: len(pages)], op


class ReferenceStore(InMemoryStore):
    """InMemoryStore, minus one quirk: deleting from an unknown namespace creates it empty.

    Every other LangGraph store lists only namespaces that hold items.
    """

    def batch(self, ops: Any) -> list[Any]:
        results = super().batch(ops)
        for ns in [ns for ns, items in self._data.items() if not items]:
            del self._data[ns]
        return results


def run_and_compare(
    ours: BaseStore,
    ref: BaseStore,
    sequence: list[tuple],
    page: tuple[int, int] = (100, 0),
    prefixes: tuple[tuple[str, ...], ...] = ((),),
) -> None:
    """Replay `sequence` on both stores, then page through the final state by `page`."""
    for op in sequence:
        kind = op[0]
        if kind == "put":
            _, ns, key, value = op
            ours.put(ns, key, value)
            ref.put(ns, key, value)
        elif kind == "put_many":
            from langgraph.store.base import PutOp

            batch = [PutOp(ns, key, value) for ns, key, value in op[1]]
            ours.batch(batch)
            # InMemoryStore fails a batch whose items share a text ("Number of
            # embeddings does not match"), so the reference applies them one by one.
            for put in batch:
                ref.batch([put])
        elif kind == "delete":
            ours.delete(op[1], op[2])
            ref.delete(op[1], op[2])
        elif kind == "get":
            a, b = ours.get(op[1], op[2]), ref.get(op[1], op[2])
            assert (a is None) == (b is None), op
            if a is not None and b is not None:
                assert (a.namespace, a.key, a.value) == (b.namespace, b.key, b.value)
        elif kind == "search":
            _, prefix, flt, query, _, _ = op
            a = ours.search(prefix, filter=flt, query=query, limit=100)
            b = ref.search(prefix, filter=flt, query=query, limit=100)
            assert _search_view(a, query) == _search_view(b, query), op
            if query is not None:
                scores = [r.score for r in a if r.score is not None]
                assert scores == sorted(scores, reverse=True)
                # Unscored items come after every scored one.
                seen_none = False
                for r in a:
                    seen_none = seen_none or r.score is None
                    assert not (seen_none and r.score is not None)
            _check_search_pages(ours, ref, op, a, b)
        elif kind == "list":
            _, prefix, suffix, depth, limit, offset = op
            a = ours.list_namespaces(
                prefix=prefix, suffix=suffix, max_depth=depth, limit=limit, offset=offset
            )
            b = ref.list_namespaces(
                prefix=prefix, suffix=suffix, max_depth=depth, limit=limit, offset=offset
            )
            assert a == b, op  # sorted, then paged: the order is part of the contract
            full = ours.list_namespaces(prefix=prefix, suffix=suffix, max_depth=depth, limit=1000)
            _check_list_pages(ours, op, full)
    # Final state: every namespace holds the same items.
    a_all = ours.search((), limit=1000)
    b_all = ref.search((), limit=1000)
    assert _search_view(a_all, None) == _search_view(b_all, None)
    # Paging over everything stored, with and without a query.
    for prefix in prefixes:
        for query in (None, "tea"):
            a = ours.search(prefix, query=query, limit=1000)
            b = ref.search(prefix, query=query, limit=1000)
            _check_search_pages(ours, ref, ("search", prefix, None, query, *page), a, b)


@pytest.fixture(scope="module")
def chroma_client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import chromadb
    from chromadb.config import Settings

    path: Path = tmp_path_factory.mktemp("chroma-prop")
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


@pytest.mark.parametrize("tier", ["short", "long"])
def test_random_sequences_match_inmemory_store(
    tier: str, redis_url: str, chroma_client: Any
) -> None:
    client = redis.Redis.from_url(redis_url)

    @settings(
        max_examples=75,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(sequence=ops, page=st.tuples(LIMITS, OFFSETS))
    def check(sequence: list[tuple], page: tuple[int, int]) -> None:
        prefix = "p" + uuid.uuid4().hex[:12]
        index = {"dims": DIMS, "embed": EMB, "fields": ["text"]}
        ours = TieredMemoryStore(
            redis_client=client if tier == "short" else None,
            redis_url=None,
            chroma_client=chroma_client if tier == "long" else None,
            tiers={"default": tier},  # type: ignore[typeddict-item]
            key_prefix=prefix,
            scoring={"mode": "similarity"},
            index=index,  # type: ignore[arg-type]
        )
        ours.setup()
        try:
            ref = ReferenceStore(index=index)  # type: ignore[arg-type]
            run_and_compare(ours, ref, sequence, page, ((), ("a",)))
        finally:
            if tier == "short":
                drop_redis_keys(redis_url, prefix)

    check()
    client.close()


def test_mixed_tier_sequences_match_inmemory_store(redis_url: str, chroma_client: Any) -> None:
    """With the default policy the `short_term` namespaces live in Redis, the rest in Chroma."""
    client = redis.Redis.from_url(redis_url)
    mixed_ns = st.sampled_from(
        [("short_term", "s1"), ("short_term", "s2", "x"), ("a",), ("a", "b"), ("shortterm",)]
    )
    seq = st.lists(
        st.one_of(
            st.tuples(st.just("put"), mixed_ns, keys, values),
            st.tuples(st.just("delete"), mixed_ns, keys),
            st.tuples(st.just("get"), mixed_ns, keys),
            st.tuples(
                st.just("search"),
                st.sampled_from([(), ("short_term",), ("a",)]),
                filters,
                st.sampled_from([None, "tea"]),
                LIMITS,
                OFFSETS,
            ),
            st.tuples(
                st.just("list"),
                st.sampled_from([None, ("short_term",)]),
                st.none(),
                st.sampled_from([None, 1]),
                LIMITS,
                OFFSETS,
            ),
        ),
        min_size=1,
        max_size=20,
    )

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(sequence=seq, page=st.tuples(LIMITS, OFFSETS))
    def check(sequence: list[tuple], page: tuple[int, int]) -> None:
        prefix = "m" + uuid.uuid4().hex[:12]
        index = {"dims": DIMS, "embed": EMB, "fields": ["text"]}
        ours = TieredMemoryStore(
            redis_client=client,
            chroma_client=chroma_client,
            key_prefix=prefix,
            scoring={"mode": "similarity"},
            index=index,  # type: ignore[arg-type]
        )
        try:
            ref = ReferenceStore(index=index)  # type: ignore[arg-type]
            run_and_compare(ours, ref, sequence, page, ((), ("short_term",)))
            for ns, _ in [(r.namespace, r.key) for r in ours.search((), limit=1000)]:
                assert ours.tier_for(ns) == ("short" if ns[0] == "short_term" else "long")
        finally:
            drop_redis_keys(redis_url, prefix)

    check()
    client.close()


# Labels that nearly collide once encoded: JSON escapes, the separator, a wildcard,
# non-ASCII. `namespace_families` derives every namespace of an example from one, so
# labels are string prefixes of each other (("a",), ("ab",), ("a", "b"), ...).
NEAR_LABELS = st.text(st.sampled_from('ab"\\, *é'), min_size=1, max_size=3)


@pytest.mark.parametrize("tier", ["short", "long"])
def test_prefix_reads_never_reach_a_near_namespace(
    tier: str, redis_url: str, chroma_client: Any
) -> None:
    """Searches and listings under a prefix return exactly the namespaces it prefixes."""
    from langgraph_tiered_memory.store.tiers._namespaces import has_prefix
    from tests.unit.test_pure import namespace_families

    client = redis.Redis.from_url(redis_url)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(family=namespace_families(NEAR_LABELS), page=st.tuples(LIMITS, OFFSETS))
    def check(family: list[tuple[str, ...]], page: tuple[int, int]) -> None:
        prefix = "n" + uuid.uuid4().hex[:12]
        index = {"dims": DIMS, "embed": EMB, "fields": ["text"]}
        ours = TieredMemoryStore(
            redis_client=client if tier == "short" else None,
            redis_url=None,
            chroma_client=chroma_client if tier == "long" else None,
            tiers={"default": tier},  # type: ignore[typeddict-item]
            key_prefix=prefix,
            scoring={"mode": "similarity"},
            index=index,  # type: ignore[arg-type]
        )
        ours.setup()
        sequence: list[tuple] = [
            ("put", ns, "k", {"n": i, "s": "x", "text": WORDS[i % 3]})
            for i, ns in enumerate(family)
        ]
        for ns in family:
            sequence += [("search", ns, None, q, *page) for q in (None, "apple")]
            sequence.append(("list", ns, None, None, *page))
        try:
            run_and_compare(ours, ReferenceStore(index=index), sequence, page, tuple(family))
            for p in family:
                under = sorted(ns for ns in family if has_prefix(ns, p))
                found = sorted(tuple(r.namespace) for r in ours.search(p, limit=100))
                assert found == under, p
                found = sorted(tuple(r.namespace) for r in ours.search(p, query="a", limit=100))
                assert found == under, p
                if "*" not in p:  # "*" is a wildcard in list_namespaces
                    assert ours.list_namespaces(prefix=p, limit=100) == under, p
        finally:
            if tier == "short":
                drop_redis_keys(redis_url, prefix)

    check()
    client.close()
