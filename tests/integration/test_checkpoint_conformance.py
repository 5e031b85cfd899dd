"""The session checkpointers against LangGraph's checkpointer conformance suite.

The suite (``langgraph-checkpoint-conformance``) is async-only: it validates
`AsyncRedisSessionSaver`. The sync tests below check the same semantics on
`RedisSessionSaver`, mirroring the suite's tests the upstream savers fail.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver


@pytest.fixture
def prefixes(redis_url: str, key_prefix: str) -> Iterator[dict[str, str]]:
    """Per-test checkpoint key prefixes (so per-test indexes); the indexes are dropped after.

    The keys live under ``key_prefix:`` and are removed by the `key_prefix` fixture.
    """
    names = {
        "checkpoint_prefix": f"{key_prefix}:checkpoint",
        "checkpoint_write_prefix": f"{key_prefix}:checkpoint_write",
    }
    yield names
    client = redis.Redis.from_url(redis_url)
    try:
        for index in names.values():
            try:
                client.ft(index).dropindex(delete_documents=False)
            except redis.ResponseError:
                pass
    finally:
        client.close()


# ---------------------------------------------------------------------------
# Async: the conformance suite itself.
# ---------------------------------------------------------------------------


async def test_async_saver_passes_every_conformance_capability(
    redis_url: str, prefixes: dict[str, str]
) -> None:
    @checkpointer_test(name="AsyncRedisSessionSaver")
    async def factory() -> AsyncIterator[AsyncRedisSessionSaver]:
        async with AsyncRedisSessionSaver.from_conn_string(redis_url, **prefixes) as saver:
            yield saver

    report = await validate(factory, progress=ProgressCallbacks.quiet())

    expected = {cap.value for cap in Capability}
    assert set(report.results) == expected, f"capabilities reported: {sorted(report.results)}"
    undetected = sorted(name for name, r in report.results.items() if not r.detected)
    failures = {
        name: r.failures or [f"passed={r.passed}"]
        for name, r in report.results.items()
        if r.passed is not True
    }
    assert not undetected and not failures, (
        f"capabilities not detected: {undetected}; conformance failures: {failures}"
    )
    assert report.passed_all() and report.conformance_level() == "FULL"
    assert all(r.tests_passed > 0 and r.tests_failed == 0 for r in report.results.values())


async def test_async_list_applies_limit_after_filters(
    redis_url: str, prefixes: dict[str, str]
) -> None:
    async with AsyncRedisSessionSaver.from_conn_string(redis_url, **prefixes) as saver:
        tid = str(uuid.uuid4())
        parent: RunnableConfig | None = None
        ids = []
        for step, source in enumerate(["input", "loop", "input", "loop", "loop"]):
            cfg = generate_config(tid)
            if parent is not None:
                cfg["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
            cp = generate_checkpoint()
            parent = await saver.aput(cfg, cp, generate_metadata(source=source, step=step), {})
            ids.append(cp["id"])
        await saver.aput(
            generate_config(tid, checkpoint_ns="child:1"), generate_checkpoint(), {}, {}
        )

        got = [
            t.checkpoint["id"]
            async for t in saver.alist(generate_config(tid), limit=2, filter={"source": "input"})
        ]
        assert got == [ids[2], ids[0]]
        everything = [t async for t in saver.alist({"configurable": {"thread_id": tid}})]
        assert len(everything) == 6
        assert {t.config["configurable"]["checkpoint_ns"] for t in everything} == {"", "child:1"}
        assert [t async for t in saver.alist(generate_config(tid), limit=0)] == []


# ---------------------------------------------------------------------------
# Sync: the same semantics on RedisSessionSaver.
# ---------------------------------------------------------------------------


@pytest.fixture
def saver(redis_url: str, prefixes: dict[str, str]) -> Iterator[RedisSessionSaver]:
    with RedisSessionSaver.from_conn_string(redis_url, **prefixes) as s:
        s.setup()
        yield s


def _chain(
    saver: RedisSessionSaver,
    tid: str,
    n: int,
    *,
    ns: str = "",
    run_id: str | None = None,
    **metadata: Any,
) -> list[RunnableConfig]:
    """Put ``n`` checkpoints, each the child of the previous one; return the stored configs."""
    stored: list[RunnableConfig] = []
    for step in range(n):
        cfg = generate_config(tid, checkpoint_ns=ns)
        if stored:
            cfg["configurable"]["checkpoint_id"] = stored[-1]["configurable"]["checkpoint_id"]
        cp = generate_checkpoint(channel_values={"step": step})
        cp["channel_versions"] = {"step": 1}
        md = generate_metadata(source="input" if step % 2 == 0 else "loop", step=step, **metadata)
        if run_id is not None:
            md["run_id"] = run_id
        stored.append(saver.put(cfg, cp, md, {"step": 1}))
    return stored


def _ids(tuples: Iterator[CheckpointTuple] | list[CheckpointTuple]) -> list[str]:
    return [t.checkpoint["id"] for t in tuples]


def _cid(config: RunnableConfig) -> str:
    return str(config["configurable"]["checkpoint_id"])


def test_sync_list_by_namespace(saver: RedisSessionSaver) -> None:
    tid = str(uuid.uuid4())
    root = _chain(saver, tid, 2)
    child1 = _chain(saver, tid, 1, ns="child:1")
    child2 = _chain(saver, tid, 1, ns="outer:a|inner:b")

    assert _ids(saver.list(generate_config(tid, checkpoint_ns=""))) == [
        _cid(root[1]),
        _cid(root[0]),
    ]
    assert _ids(saver.list(generate_config(tid, checkpoint_ns="child:1"))) == [_cid(child1[0])]
    assert _ids(saver.list(generate_config(tid, checkpoint_ns="outer:a|inner:b"))) == [
        _cid(child2[0])
    ]
    # No checkpoint_ns key at all: every namespace, newest first.
    every = list(saver.list({"configurable": {"thread_id": tid}}))
    assert _ids(every) == sorted([_cid(c) for c in (*root, *child1, *child2)], reverse=True)
    # checkpoint_id in the config selects one checkpoint.
    assert _ids(saver.list(generate_config(tid, checkpoint_id=_cid(root[0])))) == [_cid(root[0])]


def test_sync_list_before_and_limit(saver: RedisSessionSaver) -> None:
    tid = str(uuid.uuid4())
    ids = [_cid(c) for c in _chain(saver, tid, 4)]

    before = generate_config(tid, checkpoint_id=ids[2])
    assert _ids(saver.list(generate_config(tid), before=before)) == [ids[1], ids[0]]
    before = generate_config(tid, checkpoint_id=ids[3])
    assert _ids(saver.list(generate_config(tid), before=before, limit=1)) == [ids[2]]
    assert _ids(saver.list(generate_config(tid), limit=2)) == [ids[3], ids[2]]
    # The limit counts matches, not scanned checkpoints.
    assert _ids(saver.list(generate_config(tid), filter={"source": "input"}, limit=2)) == [
        ids[2],
        ids[0],
    ]
    assert list(saver.list(generate_config(tid), limit=0)) == []


def test_sync_list_custom_metadata_keys(saver: RedisSessionSaver) -> None:
    tid = str(uuid.uuid4())
    first = saver.put(
        generate_config(tid),
        generate_checkpoint(),
        generate_metadata(score=42, run_id="run-abc", tags=["a", "b"]),
        {},
    )
    saver.put(
        generate_config(tid),
        generate_checkpoint(),
        generate_metadata(score=99, run_id="run-xyz"),
        {},
    )

    got = list(saver.list(generate_config(tid), filter={"score": 42}))
    assert _ids(got) == [_cid(first)]
    assert got[0].metadata["run_id"] == "run-abc"
    assert _ids(saver.list(generate_config(tid), filter={"tags": ["a", "b"]})) == [_cid(first)]
    assert list(saver.list(generate_config(tid), filter={"score": 42, "run_id": "run-xyz"})) == []
    assert list(saver.list(generate_config(tid), filter={"missing": "x"})) == []


def test_sync_prune_keep_latest_across_namespaces(
    saver: RedisSessionSaver, redis_url: str, prefixes: dict[str, str]
) -> None:
    tid, other = str(uuid.uuid4()), str(uuid.uuid4())
    root = _chain(saver, tid, 3)
    child = _chain(saver, tid, 2, ns="child:1")
    _chain(saver, other, 2)
    kept_other = _ids(saver.list(generate_config(other)))
    saver.put_writes(root[0], [("ch", "old")], str(uuid.uuid4()))
    saver.put_writes(root[-1], [("ch", "new")], str(uuid.uuid4()))

    saver.prune([tid], strategy="keep_latest")

    assert _ids(saver.list(generate_config(tid, checkpoint_ns=""))) == [_cid(root[-1])]
    assert _ids(saver.list(generate_config(tid, checkpoint_ns="child:1"))) == [_cid(child[-1])]
    assert _ids(saver.list(generate_config(other))) == kept_other
    latest = saver.get_tuple(generate_config(tid))
    assert latest is not None and _cid(latest.config) == _cid(root[-1])
    assert [(w[1], w[2]) for w in latest.pending_writes or []] == [("ch", "new")]
    child_latest = saver.get_tuple(generate_config(tid, checkpoint_ns="child:1"))
    assert child_latest is not None and _cid(child_latest.config) == _cid(child[-1])
    assert saver.get_tuple(root[0]) is None
    # The pruned checkpoint's writes are gone from Redis, the kept one's are not.
    client = redis.Redis.from_url(redis_url)
    try:
        write_keys = list(client.scan_iter(match=f"{prefixes['checkpoint_write_prefix']}:{tid}:*"))
    finally:
        client.close()
    assert len(write_keys) == 1 and _cid(root[-1]).encode() in write_keys[0]


def test_sync_prune_empty_list_delete_strategy_and_bad_input(saver: RedisSessionSaver) -> None:
    tid = str(uuid.uuid4())
    stored = _chain(saver, tid, 2)

    saver.prune([], strategy="keep_latest")
    assert len(list(saver.list(generate_config(tid)))) == 2
    saver.prune([str(uuid.uuid4())])
    with pytest.raises(ValueError):
        saver.prune([tid], strategy="keep_newest")
    assert len(list(saver.list(generate_config(tid)))) == 2

    saver.prune([tid], strategy="delete")
    assert list(saver.list(generate_config(tid))) == []
    assert saver.get_tuple(generate_config(tid)) is None
    assert saver.get_tuple(stored[-1]) is None


def test_sync_delete_for_runs(saver: RedisSessionSaver) -> None:
    tid = str(uuid.uuid4())
    run1, run2, run3 = (str(uuid.uuid4()) for _ in range(3))
    first = _chain(saver, tid, 1, run_id=run1)[0]
    child = _chain(saver, tid, 1, ns="child:1", run_id=run1)[0]
    cfg = generate_config(tid)
    cfg["configurable"]["checkpoint_id"] = _cid(first)
    second = saver.put(cfg, generate_checkpoint(), generate_metadata(run_id=run2), {})
    cfg["configurable"]["checkpoint_id"] = _cid(second)
    third = saver.put(cfg, generate_checkpoint(), generate_metadata(run_id=run3), {})
    saver.put_writes(first, [("ch", "val")], str(uuid.uuid4()))
    before = {t.metadata.get("run_id") for t in saver.list({"configurable": {"thread_id": tid}})}
    assert before == {run1, run2, run3}

    saver.delete_for_runs([])
    saver.delete_for_runs([str(uuid.uuid4())])
    assert len(list(saver.list({"configurable": {"thread_id": tid}}))) == 4

    saver.delete_for_runs([run1])
    remaining = list(saver.list({"configurable": {"thread_id": tid}}))
    assert _ids(remaining) == [_cid(third), _cid(second)]
    assert saver.get_tuple(first) is None
    assert saver.get_tuple(child) is None
    assert saver.get_tuple(generate_config(tid, checkpoint_ns="child:1")) is None

    # Deleting the run of the latest checkpoint moves "latest" to the newest one left.
    saver.delete_for_runs([run3])
    latest = saver.get_tuple(generate_config(tid))
    assert latest is not None and _cid(latest.config) == _cid(second)
    saver.delete_for_runs([run2])
    assert saver.get_tuple(generate_config(tid)) is None
    assert list(saver.list({"configurable": {"thread_id": tid}})) == []


def test_sync_copy_thread(saver: RedisSessionSaver) -> None:
    src, dst = str(uuid.uuid4()), str(uuid.uuid4())
    root = _chain(saver, src, 3)
    _chain(saver, src, 1, ns="child:1")
    saver.put_writes(root[-1], [("ch", "write_val"), ("other", 7)], "task-1")
    src_before = list(saver.list({"configurable": {"thread_id": src}}))

    saver.copy_thread(src, dst)

    src_after = list(saver.list({"configurable": {"thread_id": src}}))
    copied = list(saver.list({"configurable": {"thread_id": dst}}))
    assert _ids(src_after) == _ids(src_before)
    assert _ids(copied) == _ids(src_before) and len(copied) == 4
    for s, d in zip(src_before, copied, strict=True):
        assert d.config["configurable"]["thread_id"] == dst
        assert (
            d.config["configurable"]["checkpoint_ns"] == s.config["configurable"]["checkpoint_ns"]
        )
        assert d.checkpoint["channel_values"] == s.checkpoint["channel_values"]
        assert d.metadata == s.metadata
        if s.parent_config is None:
            assert d.parent_config is None
        else:
            assert d.parent_config is not None
            assert d.parent_config["configurable"]["thread_id"] == dst
            assert _cid(d.parent_config) == _cid(s.parent_config)

    latest = saver.get_tuple(generate_config(dst))
    assert latest is not None and _cid(latest.config) == _cid(root[-1])
    assert [(w[0], w[1], w[2]) for w in latest.pending_writes or []] == [
        ("task-1", "ch", "write_val"),
        ("task-1", "other", 7),
    ]
    child_latest = saver.get_tuple(generate_config(dst, checkpoint_ns="child:1"))
    assert child_latest is not None

    # The copy is independent of its source.
    saver.delete_thread(src)
    assert len(list(saver.list({"configurable": {"thread_id": dst}}))) == 4
    assert list(saver.list({"configurable": {"thread_id": src}})) == []

    # Copying a thread that does not exist creates nothing.
    empty = str(uuid.uuid4())
    saver.copy_thread(str(uuid.uuid4()), empty)
    assert list(saver.list({"configurable": {"thread_id": empty}})) == []
