"""Memory history on the real stores: events, attribution, atomicity, tombstones."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings

from langgraph_tiered_memory import AsyncTieredMemoryStore, ConfigurationError, TieredMemoryStore
from langgraph_tiered_memory.agent.extraction import extract_memories
from langgraph_tiered_memory.agent.tools import create_manage_memory_tool
from langgraph_tiered_memory.privacy import (
    amemory_history,
    history_export,
    memory_history,
    tombstone_history,
)
from langgraph_tiered_memory.privacy.erasure import UserNamespaces, id_hash
from langgraph_tiered_memory.privacy.history import acting, content_hash
from langgraph_tiered_memory.store.maintenance import consolidate, garbage_collect, promote
from langgraph_tiered_memory.store.tiers.doc_mirror import MIRROR_FILE
from langgraph_tiered_memory.store.tiers.sqlite_history import HistoryTable
from tests.conftest import DIMS, drop_redis_keys
from tests.fakes import Clock, HashingEmbeddings
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401 - fixture
from tests.memory_tools_support import async_store

NS = ("users", "u1")


def _events(store: Any, ns: tuple[str, ...], key: str) -> list[tuple[str, str | None, str | None]]:
    return [(e.event, e.actor, e.reason) for e in memory_history(store, ns, key)]


def _rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_put_update_delete_and_ttl_expiry_leave_their_events(
    mstore: TieredMemoryStore, clock: Clock
) -> None:
    mstore.put(NS, "k", {"content": "likes tea"})
    clock.now += 10
    mstore.put(NS, "k", {"content": "likes green tea", "importance": 0.7})
    clock.now += 10
    mstore.delete(NS, "k")
    mstore.delete(NS, "never-stored")  # removes nothing: no event
    mstore.put(NS, "t", {"content": "in town this week"}, ttl=1)
    clock.now += 120
    assert mstore.sweep_ttl() == 1

    events = memory_history(mstore, NS, "k")
    assert [(e.seq, e.event, e.actor, e.at) for e in events] == [
        (1, "add", "user", 1_700_000_000.0),
        (2, "update", "user", 1_700_000_010.0),
        (3, "deleted", "user", 1_700_000_020.0),
    ]
    tea, green = content_hash("likes tea"), content_hash("likes green tea")
    assert [(e.previous_hash, e.content_hash, e.content) for e in events] == [
        (None, tea, "likes tea"),
        (tea, green, "likes green tea"),
        (green, None, None),
    ]
    assert _events(mstore, NS, "t") == [("add", "user", None), ("expired", "system", "ttl expired")]
    assert memory_history(mstore, NS, "never-stored") == []


def test_history_is_written_in_the_memorys_own_transaction_and_repaired_on_open(
    make_store: Callable[..., TieredMemoryStore], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"scoring": None, "clock": clock}
    store = make_store("long", **options)
    store.put(NS, "k", {"content": "likes tea"})
    store.put(NS, "d", {"content": "lives in Oslo"})

    def broken(*args: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(HistoryTable, "append", broken)
    clock.now += 10
    with pytest.raises(sqlite3.OperationalError):
        store.put(NS, "k", {"content": "likes coffee", "importance": 0.9})
    with pytest.raises(sqlite3.OperationalError):
        store.delete(NS, "d")
    monkeypatch.undo()
    # The failed commits took the memory index's updates with them: the statistics
    # still hold the first write, and no event was recorded.
    entry = store.get_memory(NS, "k")
    assert entry is not None and entry.importance == 0.5
    assert [e.event for e in memory_history(store, NS, "k")] == ["add"]
    store.close()

    # Opening again repairs the keys from Chroma, and records what happened.
    store = make_store("long", **options)
    entry = store.get_memory(NS, "k")
    assert entry is not None and entry.importance == 0.9
    (_, repaired) = memory_history(store, NS, "k")
    assert (repaired.event, repaired.actor, repaired.reason) == (
        "update",
        "system",
        "recovered after an interrupted write",
    )
    assert repaired.at == clock.now  # the interrupted write's time
    assert (repaired.previous_hash, repaired.content) == (content_hash("likes tea"), "likes coffee")
    (_, deleted) = memory_history(store, NS, "d")
    assert (deleted.event, deleted.previous_hash) == ("deleted", content_hash("lives in Oslo"))
    assert store.get(NS, "d") is None


def test_history_false_records_nothing_and_memory_history_says_so(
    make_store: Callable[..., TieredMemoryStore], tmp_path: Path
) -> None:
    store = make_store("long", scoring=None, history=False)
    store.put(NS, "k", {"content": "likes tea"})
    with pytest.raises(ConfigurationError, match="history=False"):
        memory_history(store, NS, "k")
    assert tombstone_history(store, [NS]) == {}
    assert history_export(store, [NS]) == []
    assert _rows(tmp_path / "chroma" / MIRROR_FILE, "SELECT count(*) FROM m_history") == [(0,)]


def test_similarity_stores_and_short_namespaces(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store()  # similarity scoring; short_term -> Redis, the rest -> Chroma
    store.put(NS, "k", {"text": "no content field"})  # similarity scoring: the mirror keeps it
    (event,) = memory_history(store, NS, "k")
    assert event.event == "add" and event.content == '{"text":"no content field"}'
    with pytest.raises(ConfigurationError, match="short-term tier"):
        memory_history(store, ("short_term", "x"), "k")


@pytest.mark.parametrize("scoring", [None, {"mode": "similarity"}], ids=["memory", "similarity"])
def test_an_in_memory_chroma_records_history_like_an_embedded_one(
    key_prefix: str, clock: Clock, scoring: Any
) -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    store = TieredMemoryStore(
        chroma_client=client,
        tiers={"default": "long"},
        key_prefix=key_prefix,
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        **({} if scoring is None else {"scoring": scoring}),
    )
    try:
        store.put(NS, "k", {"content": "likes tea"})
        store.put(NS, "k", {"content": "likes green tea"})
        store.delete(NS, "k")
        assert _events(store, NS, "k") == [
            ("add", "user", None),
            ("update", "user", None),
            ("deleted", "user", None),
        ]
        assert len(tombstone_history(store, [NS])["history.events"]) == 3
    finally:
        store.close()


def test_library_passes_attribute_their_writes(mstore: TieredMemoryStore, clock: Clock) -> None:
    # reinforcement: same content, importance moved, the caller's actor
    mstore.put(NS, "r", {"content": "drinks tea daily", "importance": 0.5})
    mstore.update_importance(NS, "r", 0.25)
    (_, reinforced) = memory_history(mstore, NS, "r")
    assert (reinforced.event, reinforced.actor) == ("reinforced", "user")
    assert reinforced.reason == "importance 0.50 -> 0.75"
    assert reinforced.previous_hash == reinforced.content_hash

    # consolidation: the merged memory and its sources
    mstore.put(NS, "a", {"content": "Ana drives a blue van."})
    mstore.put(NS, "b", {"content": "Ana drives a blue van."})
    (record,) = consolidate(mstore, NS)
    merged = record["key"]
    assert _events(mstore, NS, merged) == [("merged", "consolidation", "merged from a, b")]
    for source in ("a", "b"):
        last = ("merged", "consolidation", f"merged into {merged}")
        assert _events(mstore, NS, source) == [("add", "user", None), last]

    # forgetting: each memory's own reason
    mstore.put(NS, "weak", {"content": "said teh once", "importance": 0.05})
    report = garbage_collect(mstore, NS, dry_run=False, policy={"min_importance": 0.1})
    (row,) = [d for d in report["details"] if d["id"] == "weak"]
    assert _events(mstore, NS, "weak")[-1] == ("forgotten", "forgetting", row["reason"])

    # TTL expiry found by a forgetting pass
    mstore.put(NS, "ttl", {"content": "parked on level 2"}, ttl=1)
    clock.now += 120
    garbage_collect(mstore, NS, dry_run=False)
    assert _events(mstore, NS, "ttl")[-1] == ("expired", "forgetting", "ttl expired")


def test_tool_and_extraction_writes_name_their_actor(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store("long", scoring=None, index={"dims": DIMS, "embed": HashingEmbeddings(DIMS)})
    ns = ("memories", "u1")
    tool = create_manage_memory_tool(store=store)
    reply = tool.invoke({"content": "Prefers tea"}, {"configurable": {"user_id": "u1"}})
    key = reply.split()[-1].rstrip(".")
    assert _events(store, ns, key) == [("add", "tool", "manage_memory tool")]

    (added,) = extract_memories(store, ns, "I live in Berlin.").added
    assert _events(store, ns, added) == [("add", "extraction", "extracted from a conversation")]
    store.put(ns, "direct", {"content": "Likes jazz"})
    assert _events(store, ns, "direct") == [("add", "user", None)]


def test_promotion_is_the_systems(make_store: Callable[..., TieredMemoryStore]) -> None:
    store = make_store(scoring=None)  # short_term -> Redis, the rest -> Chroma
    store.put(("short_term", "s1"), "turn", {"content": "Ana moved to Porto", "importance": 0.9})
    ((ns, key),) = promote(store, ("short_term",), target=lambda ns: ("users", "u1"))
    (event,) = memory_history(store, ns, key)
    assert (event.event, event.actor, event.reason) == (
        "add",
        "system",
        "promoted from the short-term tier",
    )


async def test_async_writes_keep_their_actor_and_the_batch_task_keeps_none(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        with acting("tool", "the tool's writes"):
            # The store starts its batch task here, inside the tool's context.
            store = await stack.enter_async_context(
                async_store(redis_url, key_prefix, tmp_path, "long", scoring=None)
            )
            assert isinstance(store, AsyncTieredMemoryStore)
            await store.aput(NS, "t", {"content": "from the tool"})
            await store.adelete(NS, "never-stored")
        await store.aput(NS, "u", {"content": "from the user"})
        await store.adelete(NS, "t")
        assert await amemory_history(store, NS, "u") == memory_history(store, NS, "u")
        assert _events(store, NS, "u") == [("add", "user", None)]
        assert _events(store, NS, "t") == [
            ("add", "tool", "the tool's writes"),
            ("deleted", "user", None),
        ]


def test_tombstones_keep_no_content_and_are_found_by_namespace_and_key(
    mstore: TieredMemoryStore, tmp_path: Path
) -> None:
    mine, other = ("memories", "u1"), ("memories", "u2")
    marker, said = "zq-marker-7731", "reason-only-4471"  # `said` is kept in the history only
    with acting("tool", f"user u1 said {said}"):
        mstore.put(mine, "k", {"content": f"u1 likes {marker}"})
    mstore.put(mine, "k", {"content": f"u1 really likes {marker}"})
    mstore.put(mine, "gone", {"content": f"u1 once said {marker}"})
    mstore.delete(mine, "gone")
    mstore.put(mine, "k2", {"content": "u1 lives in Oslo"})
    mstore.delete(mine, "k2")  # the namespace now holds one memory ...
    mstore.put(other, "k", {"content": "u2 likes coffee"})
    owns = UserNamespaces("u1").owns

    exported = history_export(mstore, owns)
    assert {(tuple(m["namespace"]), m["key"]) for m in exported} == {
        (mine, "k"),
        (mine, "gone"),
        (mine, "k2"),
    }
    planned = tombstone_history(mstore, owns, dry_run=True)
    assert memory_history(mstore, mine, "k")[0].content == f"u1 likes {marker}"  # dry: unchanged
    done = tombstone_history(mstore, owns)
    assert done == planned
    assert sorted(done["history.events"]) == sorted(
        [(*mine, "k")] * 2 + [(*mine, "gone")] * 2 + [(*mine, "k2")] * 2
    )
    assert tombstone_history(mstore, owns) == {}  # idempotent

    events = memory_history(mstore, mine, "k")
    assert [(e.seq, e.event, e.actor, e.reason, e.content, e.content_hash) for e in events] == [
        (1, "erased", None, None, None, None),
        (2, "erased", None, None, None, None),
    ]
    assert [e.event for e in memory_history(mstore, mine, "gone")] == ["erased", "erased"]
    assert [e.content for e in memory_history(mstore, other, "k")] == ["u2 likes coffee"]

    path = tmp_path / "chroma" / MIRROR_FILE
    rows = _rows(path, "SELECT * FROM m_history WHERE nsid=''")
    assert len(rows) == 6
    text = repr(rows)
    assert "u1" not in text and marker not in text and "memories" not in text
    keys = {r[0] for r in _rows(path, "SELECT key FROM m_history WHERE nsid=''")}
    assert keys == {id_hash(*mine, k) for k in ("k", "gone", "k2")}
    wal = path.with_name(path.name + "-wal")
    raw = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert said.encode() not in raw  # not in free pages, nor in the WAL

    # the key written again starts a new history after its tombstones (the memory
    # itself is still stored: erasing it is the erasure's other steps)
    mstore.put(mine, "k", {"content": "u1 likes jazz"})
    assert [(e.seq, e.event) for e in memory_history(mstore, mine, "k")] == [
        (1, "erased"),
        (2, "erased"),
        (1, "update"),
    ]


def test_with_a_chroma_server_history_lives_in_redis_in_either_mode(
    chroma_server: tuple[str, int],  # noqa: F811
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    host, port = chroma_server
    client = chromadb.HttpClient(
        host=host, port=port, settings=Settings(anonymized_telemetry=False)
    )
    path = tmp_path / "memory-index.sqlite3"
    caplog.set_level(logging.WARNING, logger="langgraph_tiered_memory.store._backends")
    store = TieredMemoryStore(
        chroma_client=client,
        redis_url=redis_url,
        tiers={"default": "long"},
        key_prefix=key_prefix,
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        memory_index_path=str(path),  # legacy: a file to import (there is none)
    )
    assert "imported into it once" in caplog.text
    plain = TieredMemoryStore(
        chroma_client=client,
        redis_url=redis_url,
        tiers={"default": "long"},
        key_prefix=key_prefix + "s",
        scoring={"mode": "similarity"},
    )
    try:
        store.setup()
        store.put(NS, "k", {"content": "likes tea"})
        store.put(NS, "k", {"content": "likes green tea"})
        store.put(NS, "t", {"content": "here this week"}, ttl=1)
        clock.now += 120
        assert store.sweep_ttl() == 1
        store.delete(NS, "k")
        assert _events(store, NS, "k") == [
            ("add", "user", None),
            ("update", "user", None),
            ("deleted", "user", None),
        ]
        assert _events(store, NS, "t") == [
            ("add", "user", None),
            ("expired", "system", "ttl expired"),
        ]
        assert not path.exists()
        done = tombstone_history(store, [NS])
        assert len(done["history.events"]) == 5
        assert {e.event for e in memory_history(store, NS, "k")} == {"erased"}

        plain.setup()
        plain.put(NS, "k", {"content": "likes tea"})
        assert [e.event for e in memory_history(plain, NS, "k")] == ["add"]
    finally:
        store.close()
        plain.close()
        drop_redis_keys(redis_url, key_prefix + "s")


def test_shared_memories_are_selected_by_key_or_by_the_provenance_of_any_event(
    mstore: TieredMemoryStore,
) -> None:
    team = ("team", "notes")
    by_u1 = {"content": "u1 said the launch slips", "provenance": {"user_ids": ["u1"]}}
    in_s9 = {"content": "said in session s9", "provenance": {"session_ids": ["s9"]}}
    mstore.put(team, "u1-note", by_u1)
    mstore.delete(team, "u1-note")  # gone before the erasure: only its history is left
    mstore.put(team, "s9-note", in_s9)
    mstore.put(team, "picked", {"content": "matched by the caller"})
    mstore.put(team, "u2-note", {"content": "u2's", "provenance": {"user_ids": ["u2"]}})

    exported = history_export(mstore, (), user_id="u1", session_ids=["s9"])
    assert {m["key"]: len(m["events"]) for m in exported} == {"u1-note": 2, "s9-note": 1}
    done = tombstone_history(mstore, (), keys={team: ["picked"]}, user_id="u1", session_ids=["s9"])
    assert sorted(done["history.events"]) == sorted(
        [(*team, "u1-note"), (*team, "u1-note"), (*team, "s9-note"), (*team, "picked")]
    )
    for key in ("u1-note", "s9-note", "picked"):
        assert {e.event for e in memory_history(mstore, team, key)} == {"erased"}
    assert [e.content for e in memory_history(mstore, team, "u2-note")] == ["u2's"]
    assert tombstone_history(mstore, (), user_id="u1", session_ids=["s9"]) == {}
