"""A NUL character in a namespace label fails the whole batch, for every op and tier.

LangGraph's public `put`/`get`/`delete`/`search`/`list_namespaces` refuse NUL labels;
before this check, ops handed to `batch` directly stored and read such namespaces.
Keys are not namespace labels: LangGraph's `put` accepts NUL in them, and so does `batch`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langgraph_tiered_memory import TieredMemoryStore
from tests.mixed_tiers import (
    LONG_NS,
    MIXED,
    SHORT_NS,
    assert_untouched,
    batch_around,
    seed,
    store_state,
)

NUL_NS = {"short": ("s", "u\x00"), "long": ("l", "u\x00")}
"""A namespace with a NUL label that the routing policy sends to each tier."""

_BAD_OPS: dict[str, Callable[[tuple[str, ...]], Any]] = {
    "put": lambda ns: PutOp(ns, "bad", {"v": 1}),
    "delete": lambda ns: PutOp(ns, "bad", None),
    "get": lambda ns: GetOp(ns, "bad"),
    "search": lambda ns: SearchOp(ns),
    "list-prefix": lambda ns: ListNamespacesOp((MatchCondition("prefix", ns),)),
    "list-suffix": lambda ns: ListNamespacesOp((MatchCondition("suffix", ns[-1:]),)),
}


@pytest.mark.parametrize("bad_tier", ["short", "long"])
@pytest.mark.parametrize("op", list(_BAD_OPS))
def test_a_nul_label_fails_a_mixed_batch_before_any_write(
    make_store: Callable[..., TieredMemoryStore],
    redis_url: str,
    key_prefix: str,
    op: str,
    bad_tier: str,
) -> None:
    store = seed(make_store(tiers=MIXED))
    before = store_state(store, redis_url, key_prefix)
    with pytest.raises(InvalidNamespaceError, match="NUL") as err:
        store.batch(batch_around(_BAD_OPS[op](NUL_NS[bad_tier])))
    assert "'u\\x00'" in str(err.value)
    assert_untouched(store, before, redis_url, key_prefix)
    assert store.list_namespaces() == [LONG_NS, SHORT_NS]


def test_batch_and_the_public_methods_agree_on_each_tier(store: TieredMemoryStore) -> None:
    ns = ("users", "u\x00")
    for call in (
        lambda: store.put(ns, "k", {"v": 1}),
        lambda: store.get(ns, "k"),
        lambda: store.delete(ns, "k"),
        lambda: store.search(ns),
        lambda: store.batch([PutOp(ns, "k", {"v": 1})]),
        lambda: store.batch([PutOp(ns, "k", None)]),
        lambda: store.batch([GetOp(ns, "k")]),
        lambda: store.batch([SearchOp(ns)]),
    ):
        with pytest.raises(InvalidNamespaceError, match="NUL"):
            call()
    assert store.list_namespaces() == []
    assert store.search(("users",)) == []


def test_nul_in_keys_is_accepted_alike_by_put_and_batch(store: TieredMemoryStore) -> None:
    ns = ("users", "u1")
    store.put(ns, "a\x00", {"v": 1})
    store.batch([PutOp(ns, "b\x00", {"v": 2})])
    assert store.get(ns, "a\x00").value == {"v": 1}  # type: ignore[union-attr]
    assert store.batch([GetOp(ns, "b\x00")])[0].value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(ns, "a") is None
    assert sorted(it.key for it in store.search(ns)) == ["a\x00", "b\x00"]
    store.delete(ns, "a\x00")
    store.batch([PutOp(ns, "b\x00", None)])
    assert store.search(ns) == []
