"""TTL memories under maintenance: dry runs write nothing, sweeps run on the store's clock
and erase what a delete erases, and rewrites keep a memory's expiry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from langgraph_tiered_memory import (
    AsyncTieredMemoryStore,
    TieredMemoryStore,
    create_forgetting_graph,
)
from langgraph_tiered_memory.store.maintenance import TTL_EXPIRED, consolidate, garbage_collect
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

DAY = 86_400.0
MINUTE = 60.0
INDEX = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
NS = ("users", "u1")


def _raw(store: TieredMemoryStore, ns: tuple[str, ...]) -> dict[str, Any]:
    """Every stored item of a long-tier namespace, expired or not (no store read rules)."""
    tier: Any = store._long()
    keys = [k for page in tier.iter_memory_stats(ns) for k, _ in page]
    return {k: it.value for k, it in tier.get(ns, keys, now=0.0).items()}


def _expiry(store: TieredMemoryStore, ns: tuple[str, ...], key: str) -> float | None:
    item = store._long().get(ns, [key], now=0.0).get(key)
    assert item is not None, f"{key} is not stored at all"
    return item.expires_at


# ------------------------------------------------------------------- dry runs


def test_a_dry_run_with_a_clock_ahead_deletes_nothing(mstore: TieredMemoryStore) -> None:
    mstore.put(
        NS, "ttl", {"content": "Parking spot B7 this week.", "importance": 0.9}, ttl=3 * 24 * 60
    )
    mstore.put(NS, "keep", {"content": "Ana likes tea.", "importance": 0.9})
    before = _raw(mstore, NS)
    report = garbage_collect(mstore, NS, dry_run=True, now=mstore.clock() + 7 * DAY)
    assert _raw(mstore, NS) == before
    assert mstore.get(NS, "ttl") is not None  # three days have not passed on the store
    assert report["forgotten_count"] == 0 and report["scanned"] == 2


def test_a_real_run_with_a_clock_ahead_never_sweeps_on_that_clock(
    mstore: TieredMemoryStore,
) -> None:
    mstore.put(
        NS, "ttl", {"content": "Parking spot B7 this week.", "importance": 0.9}, ttl=3 * 24 * 60
    )
    report = garbage_collect(mstore, NS, dry_run=False, now=mstore.clock() + 7 * DAY)
    assert report["details"] == []
    assert mstore.get(NS, "ttl") is not None


def test_the_forgetting_graph_dry_run_with_a_clock_ahead_deletes_nothing(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(
        NS, "ttl", {"content": "Parking spot B7 this week.", "importance": 0.9}, ttl=3 * 24 * 60
    )
    mstore.put(NS, "low", {"content": "said teh", "importance": 0.01})
    before = _raw(mstore, NS)
    graph = create_forgetting_graph(
        namespace=("users",), dry_run=True, clock=lambda: clock.now + 200 * DAY
    )
    report = graph.compile(store=mstore).invoke({})["report"]
    assert report["dry_run"] is True and report["details"]  # it did judge something
    assert _raw(mstore, NS) == before


def test_expired_memories_are_reported_by_a_dry_run_and_swept_by_a_real_one(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(NS, "ttl", {"content": "Door code 4471 today.", "importance": 0.9}, ttl=60)
    mstore.put(NS, "keep", {"content": "Ana likes tea.", "importance": 0.9})
    clock.now += 2 * 60 * MINUTE
    dry = garbage_collect(mstore, NS, dry_run=True)
    assert [(d["id"], d["reason"]) for d in dry["details"]] == [("ttl", TTL_EXPIRED)]
    assert "ttl" in _raw(mstore, NS)  # reported, not deleted
    real = garbage_collect(mstore, NS, dry_run=False)
    assert real["details"] == dry["details"]  # a dry run reports what a real run deletes
    assert set(_raw(mstore, NS)) == {"keep"}


def test_the_forgetting_graph_reports_the_memories_it_sweeps(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(NS, "ttl", {"content": "Door code 4471 today.", "importance": 0.9}, ttl=60)
    mstore.put(NS, "keep", {"content": "Ana likes tea.", "importance": 0.9})
    clock.now += 2 * 60 * MINUTE
    graph = create_forgetting_graph(namespace=("users",), consolidate=False, clock=clock)
    report = graph.compile(store=mstore).invoke({})["report"]
    assert [(d["id"], d["reason"]) for d in report["details"]] == [("ttl", TTL_EXPIRED)]
    assert set(_raw(mstore, NS)) == {"keep"}


def test_listing_namespaces_is_a_read_even_when_everything_expired(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(NS, "ttl", {"content": "Door code 4471 today.", "importance": 0.9}, ttl=60)
    clock.now += 2 * 60 * MINUTE
    assert mstore.list_namespaces(prefix=("users",)) == []  # nothing live
    assert set(_raw(mstore, NS)) == {"ttl"}  # but nothing was deleted by listing
    clock.now -= 2 * 60 * MINUTE
    assert mstore.list_namespaces(prefix=("users",)) == [NS]
    clock.now += 2 * 60 * MINUTE
    assert mstore.sweep_ttl() == 1
    assert _raw(mstore, NS) == {}


def test_gc_command_dry_run_does_not_sweep(tmp_path: Any) -> None:
    import json
    import time

    from typer.testing import CliRunner

    from langgraph_tiered_memory.cli.app import app

    path = str(tmp_path / "chroma")
    index = {"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]}
    # Written an hour in the past with a one-minute TTL: expired on the real clock.
    store = TieredMemoryStore(
        chroma_path=path,
        tiers={"default": "long"},
        index=index,  # type: ignore[arg-type]
        key_prefix="gcttl",
        clock=lambda: time.time() - 3600,
    )
    store.put(NS, "old", {"content": "Door code 4471 today.", "importance": 0.9}, ttl=1)
    store.close()
    base = ["gc", "--chroma-path", path, "--key-prefix", "gcttl", "--dims", "16", "--json"]
    runner = CliRunner()
    dry = runner.invoke(app, [*base, "--dry-run", "--namespace", "users/u1"])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout.strip().splitlines()[-1])
    assert [(d["id"], d["reason"]) for d in report["details"]] == [("old", TTL_EXPIRED)]
    again = TieredMemoryStore(
        chroma_path=path,
        tiers={"default": "long"},
        index=index,
        key_prefix="gcttl",  # type: ignore[arg-type]
    )
    try:
        assert set(_raw(again, NS)) == {"old"}
    finally:
        again.close()
    real = runner.invoke(app, [*base, "--namespace", "users/u1"])
    assert real.exit_code == 0, real.output
    assert json.loads(real.stdout.strip().splitlines()[-1])["forgotten_count"] == 1
    again = TieredMemoryStore(
        chroma_path=path,
        tiers={"default": "long"},
        index=index,
        key_prefix="gcttl",  # type: ignore[arg-type]
    )
    try:
        assert _raw(again, NS) == {}
    finally:
        again.close()


# ------------------------------------------------------------------- sweeps erase like deletes


def _context_twins(mstore: TieredMemoryStore) -> tuple[tuple[str, ...], tuple[str, ...]]:
    swept, deleted = ("users", "u1", "swept"), ("users", "u1", "deleted")
    for ns, ttl in ((swept, 60), (deleted, None)):
        mstore.put(ns, "a", {"content": "Quentin's locker code is zebra 4471."}, ttl=ttl)
        mstore.put(ns, "b", {"content": "We walked along the harbour at dusk."})
    return swept, deleted


@pytest.mark.parametrize("how", ["sweep_ttl", "garbage_collect"])
def test_a_swept_memory_leaves_no_context_vector_behind(
    mstore: TieredMemoryStore, clock: Clock, how: str
) -> None:
    swept, deleted = _context_twins(mstore)
    query = "Quentin locker code zebra 4471"
    options = {"$retrieval": "contextual", "$user": "u1"}

    def score(ns: tuple[str, ...]) -> float:
        (hit,) = [h for h in mstore.search(ns, query=query, filter=options) if h.key == "b"]
        assert hit.score is not None
        return hit.score

    lifted = score(swept)  # b's context key carries a's text while a lives
    mstore.delete(deleted, "a")
    assert lifted > score(deleted)
    clock.now += 2 * 60 * MINUTE
    if how == "sweep_ttl":
        assert mstore.sweep_ttl() == 1
    else:
        assert [d["id"] for d in garbage_collect(mstore, swept, dry_run=False)["details"]] == ["a"]
    assert score(swept) == pytest.approx(score(deleted))
    tier: Any = mstore._long()
    records = {
        ns: len(tier._collection(ns, create=False).get(include=[])["ids"])
        for ns in (swept, deleted)
    }
    assert records[swept] == records[deleted]


# ------------------------------------------------------------------- rewrites keep TTLs


def test_update_importance_keeps_the_expiry(mstore: TieredMemoryStore, clock: Clock) -> None:
    mstore.put(NS, "m", {"content": "Door code 4471 today.", "importance": 0.5}, ttl=60)
    expires = _expiry(mstore, NS, "m")
    assert expires is not None
    clock.now += 30 * MINUTE
    assert mstore.update_importance(NS, "m", 0.2) == pytest.approx(0.7)
    assert _expiry(mstore, NS, "m") == expires  # neither dropped nor restarted
    clock.now += 31 * MINUTE
    assert mstore.get(NS, "m") is None


def test_update_importance_adds_no_default_ttl(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = make_store("long", scoring=None, clock=clock, index=INDEX, ttl={"default_ttl": 60})
    store.put(NS, "m", {"content": "Ana likes tea."}, ttl=None)
    store.update_importance(NS, "m", 0.1)
    assert _expiry(store, NS, "m") is None


async def test_aupdate_importance_keeps_the_expiry(redis_url: str, tmp_path: Any) -> None:
    clock = Clock()
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "c"),
        tiers={"default": "long"},
        index=INDEX,  # type: ignore[arg-type]
        clock=clock,
        key_prefix="ttlasync",
    ) as store:
        await store.aput(NS, "m", {"content": "Door code 4471 today.", "importance": 0.5}, ttl=60)
        expires = store._long().get(NS, ["m"], now=0.0)["m"].expires_at
        clock.now += 30 * MINUTE
        await store.aupdate_importance(NS, "m", -0.2)
        assert store._long().get(NS, ["m"], now=0.0)["m"].expires_at == expires
        clock.now += 31 * MINUTE
        assert await store.aget(NS, "m") is None


@pytest.mark.parametrize("originals", ["delete", "downweight"])
def test_consolidation_keeps_expiries(
    mstore: TieredMemoryStore, clock: Clock, originals: Any
) -> None:
    text = "Door code 4471 today."
    mstore.put(NS, "a", {"content": text}, ttl=60)
    clock.now += 10 * MINUTE
    mstore.put(NS, "b", {"content": text}, ttl=60)
    ends = {k: _expiry(mstore, NS, k) for k in ("a", "b")}
    (record,) = consolidate(mstore, NS, originals=originals)
    assert _expiry(mstore, NS, record["key"]) == max(ends.values())  # the last source's
    if originals == "downweight":
        assert {k: _expiry(mstore, NS, k) for k in ("a", "b")} == ends
    clock.now = max(v for v in ends.values() if v is not None) + 1
    assert mstore.search(NS, limit=10) == []


def test_memories_with_and_without_a_ttl_are_never_merged(mstore: TieredMemoryStore) -> None:
    text = "Door code 4471 today."
    mstore.put(NS, "temp1", {"content": text}, ttl=60)
    mstore.put(NS, "temp2", {"content": text}, ttl=60)
    mstore.put(NS, "kept1", {"content": text})
    mstore.put(NS, "kept2", {"content": text})
    records = consolidate(mstore, NS)
    groups = sorted(sorted(r["sources"]) for r in records)
    assert groups == [["kept1", "kept2"], ["temp1", "temp2"]]
    by_sources = {tuple(sorted(r["sources"])): r["key"] for r in records}
    assert _expiry(mstore, NS, by_sources[("kept1", "kept2")]) is None
    assert _expiry(mstore, NS, by_sources[("temp1", "temp2")]) is not None
