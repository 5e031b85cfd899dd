"""`erase_user(store, ...)`: every place of a user's data, shared memories, sessions, re-runs."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory import (
    AsyncRedisSessionSaver,
    AsyncTieredMemoryStore,
    RedisSessionSaver,
    TieredMemoryStore,
)
from langgraph_tiered_memory.agent.profile import get_user_profile
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy import aerase_user, erase_user, export_user, memory_history
from langgraph_tiered_memory.privacy.erasure import subject_hash
from tests.conftest import DIMS, drop_redis_keys
from tests.fakes import Clock, HashingEmbeddings

SHARED = ("shared", "facts")


def _options(redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock) -> dict[str, Any]:
    return {
        "redis_url": redis_url,
        "chroma_path": str(tmp_path / "chroma"),
        "key_prefix": key_prefix,
        "clock": clock,
        "index": {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        "graph": True,
    }


@pytest.fixture
def users() -> tuple[str, str, str]:
    """(user, other user, a marker string only the user says)."""
    tag = uuid.uuid4().hex[:8]
    return f"erin-{tag}", f"olga-{tag}", f"zebracake{tag}"


@pytest.fixture
def estore(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> Iterator[TieredMemoryStore]:
    store = TieredMemoryStore(**_options(redis_url, key_prefix, tmp_path, clock))
    store.setup()
    yield store
    store.close()


@pytest.fixture
def saver(redis_url: str, key_prefix: str) -> Iterator[RedisSessionSaver]:
    prefix = f"{key_prefix}s"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as s:
        yield s
    drop_redis_keys(redis_url, prefix)


def _chat(saver: Any, user: str, thread: str, text: str) -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    graph.invoke({"messages": [("user", text)]}, config)
    saver.flush_sessions()


def _fill(store: TieredMemoryStore, user: str, other: str, marker: str) -> None:
    """The user's data in every namespace layout, and data that must survive."""
    store.put(("users", user, "memories"), "m1", {"content": f"I love {marker} at Lisbon"})
    store.put(("users", user, "memories"), "m2", {"content": "I live in Porto"})
    store.put(("memories", user), "fact", {"content": f"My cat eats {marker}"})
    store.put(("short_term", "users", user), "turn", {"content": f"said {marker}"}, ttl=60)
    store.put(("users", other, "memories"), "m1", {"content": "I live in Oslo"})
    store.put(("short_term", "users", other), "turn", {"content": "hello"}, ttl=60)
    store.put(("short_term", user, "scratch"), "s", {"content": f"my {marker} bike"})
    store.put(("short_term", other, "scratch"), "s", {"content": "my red bike"})
    store.put(
        SHARED, "by-user", {"content": f"{marker} trivia", "provenance": {"user_ids": [user]}}
    )
    store.put(SHARED, "by-thread", {"content": "a turn", "thread_id": f"t-{user}"})
    store.put(SHARED, "by-other", {"content": "other", "provenance": {"user_ids": [other]}})
    store.put(SHARED, "plain", {"content": "water boils at 100 C"})
    get_user_profile(store, user)  # caches the profile in ("profiles", user)


def _left(store: TieredMemoryStore, user: str) -> list[tuple[tuple[str, ...], str]]:
    """Every item the store's API still shows under the user's namespaces."""
    found = []
    for ns in store.list_namespaces(limit=1000):
        if user in ns:
            for it in store.search(ns, limit=1000, filter={"$count_access": False}):
                found.append((tuple(ns), it.key))
    return found


def test_erase_removes_every_namespace_layout_and_keeps_other_users(
    estore: TieredMemoryStore, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    assert _left(estore, user)  # the layouts were written

    receipt = erase_user(estore, user)

    assert _left(estore, user) == []
    assert estore.get(("profiles", user), "profile") is None
    assert estore.search(("profiles", user)) == []
    assert estore.get(("users", other, "memories"), "m1") is not None
    assert estore.get(("short_term", "users", other), "turn") is not None
    assert estore.get(("short_term", other, "scratch"), "s") is not None
    assert receipt.subject == subject_hash(user)
    assert receipt.counts["long.items"] >= 3 + 1  # 3 memories and the profile cache
    assert receipt.counts["short.items"] == 2  # the users scope and the promotion layout
    assert receipt.counts["graph.triples"] >= 1  # "I live in Porto"
    assert graph_triples(estore, ("users", user)) == []
    assert graph_triples(estore, ("users", other))  # Oslo is still known
    assert receipt.finished_at is not None
    history = memory_history(estore, ("users", user, "memories"), "m1")
    assert history and {e.event for e in history} == {"erased"}
    assert all(e.content is None for e in history)


def test_receipt_and_log_hold_no_raw_id_or_content(
    estore: TieredMemoryStore, users: tuple[str, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    with caplog.at_level(logging.INFO, logger="langgraph_tiered_memory"):
        receipt = erase_user(estore, user)
    text = json.dumps(receipt.to_dict())
    assert receipt.total > 0
    assert user not in text and marker not in text
    logged = [r.getMessage() for r in caplog.records if "erase_user" in r.getMessage()]
    assert logged, "erase_user logs what it does"
    assert not any(user in m or marker in m for m in caplog.messages)


def test_shared_memories_go_by_provenance_and_unattributed_ones_are_kept(
    estore: TieredMemoryStore, saver: RedisSessionSaver, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    _chat(saver, user, f"t-{user}", f"remember {marker}")

    receipt = erase_user(estore, user, checkpointer=saver)

    assert estore.get(SHARED, "by-user") is None
    assert estore.get(SHARED, "by-thread") is None  # named the user's session
    assert estore.get(SHARED, "by-other") is not None
    assert estore.get(SHARED, "plain") is not None
    assert receipt.counts["long.shared_items"] == 2
    assert any("shared namespaces" in reason for reason in receipt.kept)
    assert any("retrieved into their own sessions" in reason for reason in receipt.kept)


def test_without_checkpointer_session_provenance_is_not_known(
    estore: TieredMemoryStore, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    receipt = erase_user(estore, user)
    assert estore.get(SHARED, "by-user") is None
    assert estore.get(SHARED, "by-thread") is not None  # no session ids to match
    assert any("no session saver" in reason for reason in receipt.kept)


def test_checkpointer_sessions_are_erased_and_receipts_merged(
    estore: TieredMemoryStore, saver: RedisSessionSaver, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    _chat(saver, user, f"t-{user}", f"remember {marker}")
    saver.set_summary(f"t-{user}", f"the user likes {marker}")
    _chat(saver, other, f"t-{other}", "hi")
    estore.put(("users", user), "m", {"content": "x"})

    receipt = erase_user(estore, user, checkpointer=saver)

    assert saver.get_session(f"t-{user}") is None
    assert saver.get_summary(f"t-{user}") is None
    assert saver.get_tuple({"configurable": {"thread_id": f"t-{user}"}}) is None
    assert saver.get_session(f"t-{other}") is not None
    assert receipt.counts["sessions"] == 1
    assert receipt.counts["long.items"] == 1
    assert not any("no session saver" in reason for reason in receipt.kept)


def test_dry_run_removes_nothing_and_reports_the_same_counts(
    estore: TieredMemoryStore, saver: RedisSessionSaver, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    _chat(saver, user, f"t-{user}", "hello")
    before = _left(estore, user)

    preview = erase_user(estore, user, dry_run=True, checkpointer=saver)

    assert preview.dry_run and preview.total > 0
    assert _left(estore, user) == before
    assert estore.get(SHARED, "by-user") is not None
    assert saver.get_session(f"t-{user}") is not None
    real = erase_user(estore, user, checkpointer=saver)
    assert {k: v for k, v in preview.counts.items() if v} == {
        k: v for k, v in real.counts.items() if v
    }
    assert preview.removed == real.removed


def test_erase_is_idempotent(
    estore: TieredMemoryStore, saver: RedisSessionSaver, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    _chat(saver, user, f"t-{user}", "hello")
    first = erase_user(estore, user, checkpointer=saver)
    second = erase_user(estore, user, checkpointer=saver)
    assert first.total > 0
    assert second.total == 0


def test_a_crash_midway_is_finished_by_a_rerun(
    estore: TieredMemoryStore,
    saver: RedisSessionSaver,
    users: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user, other, marker = users
    _fill(estore, user, other, marker)
    _chat(saver, user, f"t-{user}", "hello")
    short = estore.tiers["short"]

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("power cut")

    # Shared items and the long tier are gone when the short tier's step crashes.
    monkeypatch.setattr(short, "erase_namespaces", crash)
    with pytest.raises(RuntimeError, match="power cut"):
        erase_user(estore, user, checkpointer=saver)
    assert estore.get(("users", user, "memories"), "m1") is None
    assert saver.get_session(f"t-{user}") is not None  # sessions go last
    monkeypatch.undo()

    receipt = erase_user(estore, user, checkpointer=saver)

    assert receipt.counts["short.items"] >= 1
    assert receipt.counts["sessions"] == 1
    assert _left(estore, user) == []
    assert estore.get(SHARED, "by-thread") is None  # still found by session after the crash
    assert erase_user(estore, user, checkpointer=saver).total == 0


def test_history_keeps_only_content_free_tombstones(
    estore: TieredMemoryStore, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    ns = ("users", user, "memories")
    estore.put(ns, "m1", {"content": f"first {marker}"})
    estore.put(ns, "m1", {"content": f"second {marker}"})
    estore.delete(ns, "m1")  # gone before the erase: only the history holds it
    estore.put(("users", other), "m", {"content": "kept"})

    receipt = erase_user(estore, user)

    events = memory_history(estore, ns, "m1")
    assert events and all(e.event == "erased" for e in events)
    assert all(e.content is None and e.reason is None and e.actor is None for e in events)
    assert receipt.counts["history.events"] == 3
    assert [e.event for e in memory_history(estore, ("users", other), "m")] == ["add"]


def test_extra_templates_reach_custom_layouts(
    estore: TieredMemoryStore, users: tuple[str, str, str]
) -> None:
    user, other, _ = users
    estore.put(("notes", user), "n", {"content": "custom layout"})
    estore.put(("notes", other), "n", {"content": "custom layout"})
    assert erase_user(estore, user).counts.get("long.items", 0) == 0
    receipt = erase_user(estore, user, namespaces=[("notes", "{user_id}")])
    assert receipt.counts["long.items"] == 1
    assert estore.get(("notes", user), "n") is None
    assert estore.get(("notes", other), "n") is not None


def test_bad_user_ids_are_refused(estore: TieredMemoryStore) -> None:
    for bad in ("", " u1", None):
        with pytest.raises(ValueError, match="user_id"):
            erase_user(estore, bad)  # type: ignore[arg-type]


def test_async_erase_with_an_async_saver(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock, users: tuple[str, str, str]
) -> None:
    user, other, marker = users

    async def main() -> tuple[Any, Any, Any, Any]:
        async with (
            AsyncTieredMemoryStore.from_conn_string(
                **_options(redis_url, key_prefix, tmp_path, clock)
            ) as store,
            AsyncRedisSessionSaver.from_conn_string(
                redis_url, session_prefix=f"{key_prefix}s"
            ) as asaver,
        ):
            builder = StateGraph(MessagesState)
            builder.add_node("reply", lambda state: {"messages": [("ai", "ok")]})
            builder.add_edge(START, "reply")
            graph = builder.compile(checkpointer=asaver)
            config = {"configurable": {"thread_id": f"t-{user}", "user_id": user}}
            await graph.ainvoke({"messages": [("user", marker)]}, config)
            await asaver.aflush_sessions()
            await store.aput(("users", user), "m", {"content": marker})
            await store.aput(SHARED, "t", {"content": "turn", "thread_id": f"t-{user}"})
            receipt = await aerase_user(store, user, checkpointer=asaver)
            return (
                receipt,
                await store.aget(("users", user), "m"),
                await store.aget(SHARED, "t"),
                await asaver.aget_session(f"t-{user}"),
            )

    try:
        receipt, mem, shared, session = asyncio.run(main())
    finally:
        drop_redis_keys(redis_url, f"{key_prefix}s")
    assert mem is None and shared is None and session is None
    assert receipt.counts["sessions"] == 1
    assert receipt.counts["long.items"] == 1
    assert receipt.counts["long.shared_items"] == 1


def test_a_checkpointer_that_is_no_session_saver_is_refused_before_erasing(
    estore: TieredMemoryStore, users: tuple[str, str, str]
) -> None:
    user, _, _ = users
    estore.put(("users", user), "m", {"content": "kept"})
    with pytest.raises(ConfigurationError, match="aerase_user"):
        erase_user(estore, user, checkpointer=object())
    assert estore.get(("users", user), "m") is not None


def test_graph_tables_are_erased_by_a_store_opened_without_a_graph(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock, users: tuple[str, str, str]
) -> None:
    user, other, _ = users
    options = _options(redis_url, key_prefix, tmp_path, clock)
    with TieredMemoryStore(**options) as store:
        store.put(("users", user), "home", {"content": "I live in Porto"})
        store.put(("users", other), "home", {"content": "I live in Oslo"})
        assert graph_triples(store, ("users", user))
    with TieredMemoryStore(**{**options, "graph": None}) as plain:
        receipt = erase_user(plain, user)
    assert receipt.counts["graph.triples"] >= 1
    with TieredMemoryStore(**options) as store:
        assert graph_triples(store, ("users", user)) == []
        assert graph_triples(store, ("users", other))


def test_history_of_shared_memories_goes_too_even_when_deleted_earlier(
    estore: TieredMemoryStore, users: tuple[str, str, str]
) -> None:
    user, other, marker = users
    estore.put(SHARED, "live", {"content": f"{marker} live", "provenance": {"user_ids": [user]}})
    estore.put(SHARED, "gone", {"content": f"{marker} gone", "provenance": {"user_ids": [user]}})
    estore.delete(SHARED, "gone")  # only its history holds the words now
    estore.put(SHARED, "theirs", {"content": "theirs", "provenance": {"user_ids": [other]}})

    receipt = erase_user(estore, user)

    for key in ("live", "gone"):
        events = memory_history(estore, SHARED, key)
        assert events and {e.event for e in events} == {"erased"}, key
        assert all(e.content is None for e in events)
    assert [e.event for e in memory_history(estore, SHARED, "theirs")] == ["add"]
    assert receipt.counts["history.events"] == 1 + 2  # live: add; gone: add, deleted
    exported = json.dumps(export_user(estore, user))
    assert marker not in exported


def test_a_falkordb_graph_loses_the_triples_of_erased_shared_memories(
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    clock: Clock,
    falkordb_url: str,
    users: tuple[str, str, str],
) -> None:
    user, other, _ = users
    graph = {"backend": "falkordb", "url": falkordb_url, "graph_name": f"{key_prefix}_erase"}
    options = {**_options(redis_url, key_prefix, tmp_path, clock), "graph": graph}
    with TieredMemoryStore(**options) as store:
        store.setup()
        mine = {"content": "I live in Porto", "provenance": {"user_ids": [user]}}
        theirs = {"content": "I live in Oslo", "provenance": {"user_ids": [other]}}
        store.put(SHARED, "mine", mine)
        store.put(SHARED, "theirs", theirs)
        store.put(("users", user), "home", {"content": "I live in Lisbon"})
        assert {r.object for r in graph_triples(store, SHARED)} == {"porto", "oslo"}

        preview = erase_user(store, user, dry_run=True)
        assert {r.object for r in graph_triples(store, SHARED)} == {"porto", "oslo"}
        receipt = erase_user(store, user)

        assert {r.object for r in graph_triples(store, SHARED)} == {"oslo"}
        assert graph_triples(store, ("users", user)) == []
        assert receipt.counts["graph.shared_supports"] == 1
        assert preview.counts == receipt.counts


@pytest.mark.parametrize("backend", ["sqlite", "falkordb"])
def test_a_put_that_lands_while_erase_runs_leaves_no_triple_of_a_deleted_memory(
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    clock: Clock,
    users: tuple[str, str, str],
    backend: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user, other, _ = users
    options = _options(redis_url, key_prefix, tmp_path, clock)
    if backend == "falkordb":
        url = request.getfixturevalue("falkordb_url")
        options["graph"] = {"backend": "falkordb", "url": url, "graph_name": f"{key_prefix}_race"}
    ns = ("users", user, "memories")
    with TieredMemoryStore(**options) as store:
        store.setup()
        store.put(ns, "home", {"content": "I live in Porto"})
        store.put(("users", other, "memories"), "home", {"content": "I live in Oslo"})
        long_tier = store.tiers["long"]
        erase_namespaces = long_tier.erase_namespaces

        def put_then_erase(namespaces: Any, *, dry_run: bool = False) -> Any:
            # The user's agent writes once more, just before the memories go.
            store.put(ns, "late", {"content": "I work at Acme"})
            assert graph_triples(store, ns, object="acme")
            return erase_namespaces(namespaces, dry_run=dry_run)

        monkeypatch.setattr(long_tier, "erase_namespaces", put_then_erase)
        erase_user(store, user)
        monkeypatch.undo()

        assert store.get(ns, "late") is None  # the memory step took the late memory
        left = graph_triples(store, (), limit=1000)
        orphans = [
            (r.namespace, key)
            for r in left
            for key in r.memory_keys
            if store.get(r.namespace, key) is None
        ]
        assert orphans == []
        assert [r.object for r in left] == ["oslo"]
