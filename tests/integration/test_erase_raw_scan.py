"""The acceptance test of `erase_user`: nothing of the user survives, byte for byte.

A user (random id with a non-ASCII letter and glob metacharacters, a random marker word
in everything they say) and another user write through every public path
(`tests/erase_writes.py`): store puts on both tiers, TTL items, deletes, reinforcement,
consolidation, forgetting, promotion, the memory agent with its tools, summarizer,
extraction and profile (also writing to a shared namespace), the memory tools in a
shared namespace, the knowledge graph and a namespace big enough for its own Chroma
collection and FTS5 table. Then `erase_user(store, uid, namespaces=..., checkpointer=saver)`
and raw scans (`tests/erase_scan.py`, `tests/erase_env.py`): every Redis key of the
server (RediSearch tag values and FalkorDB graphs included), every Chroma collection
(API), every SQLite table (FTS5 shadow tables and terms included), the raw bytes of
every file under the store's directories, and the user's float32 vectors, looking for
the user's id, the marker and the ids of the user's namespaces. Nothing may remain; the
other user's data must be whole.

Parametrized: embedded defaults, a Chroma server (`chroma run`, its index in Redis and
its graph in FalkorDB; its own files are read after the privacy docs' operator step,
`tiered-memory scrub-chroma`), and a FalkorDB graph. Also: dry run, idempotence, a crash
midway then a re-run from a fresh store, the async store and saver, the shallow savers,
a guest in another user's session, shared memories another user's agent retrieved
(declared kept), and the `tiered-memory erase` command.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings
from typer.testing import CliRunner

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore, create_memory_agent
from langgraph_tiered_memory.checkpoint import (
    AsyncRedisSessionSaver,
    AsyncShallowRedisSessionSaver,
    RedisSessionSaver,
    ShallowRedisSessionSaver,
)
from langgraph_tiered_memory.cli.app import app as cli_app
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy import aerase_user, erase_user, export_user, memory_history
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from tests.conftest import DIMS, drop_graph
from tests.erase_env import (
    ChromaServer,
    Env,
    assert_no_trace,
    assert_receipt_has_no_content,
    diff,
    kinds,
    namespaces_of,
    needles_of,
    places,
    scan_everything,
    scan_on_disk,
    snapshot,
    vectors_of,
)
from tests.erase_scan import Needles, chroma_records, describe
from tests.erase_writes import (
    EXPIRED_AFTER,
    EXTRA_TEMPLATES,
    SHARED_NS,
    TEAM_NS,
    Person,
    awrite_user,
    write_team,
    write_user,
)
from tests.fake_models import RecordingChatModel
from tests.fakes import Clock, HashingEmbeddings

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A `chroma run` server for the module."""
    server = ChromaServer(tmp_path_factory.mktemp("erase-chroma-server"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["embedded", "chroma-server", "falkordb-graph"])
def env(
    request: pytest.FixtureRequest, redis_url: str, key_prefix: str, tmp_path: Path
) -> Iterator[Env]:
    opened: list[Any] = []
    clock = Clock(time.time())

    def make() -> TieredMemoryStore:
        options: dict[str, Any] = {
            "redis_url": redis_url,
            "key_prefix": key_prefix,
            "graph": True,
            "clock": clock,
            "index": {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        }
        if request.param != "embedded":  # a Chroma server's tier keeps no SQLite graph
            options["graph"] = {
                "backend": "falkordb",
                "url": request.getfixturevalue("falkordb_url"),
                "graph_name": f"{key_prefix}_erase",
            }
        if request.param != "chroma-server":
            options["chroma_path"] = str(tmp_path / "chroma")
        else:
            server = request.getfixturevalue("chroma_server")
            options["chroma_client"] = chromadb.HttpClient(
                host=server.host, port=server.port, settings=Settings(anonymized_telemetry=False)
            )
        store = TieredMemoryStore(**options)
        store.setup()
        opened.append(store)
        return store

    (tmp_path / "index").mkdir()
    store = make()
    roots = [tmp_path]
    urls = [redis_url]
    if request.param == "chroma-server":
        roots.append(request.getfixturevalue("chroma_server").data)
    if request.param != "embedded":
        urls.append(request.getfixturevalue("falkordb_url"))
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=key_prefix) as saver:
        server = (
            request.getfixturevalue("chroma_server") if request.param == "chroma-server" else None
        )
        yield Env(urls, store, saver, store.tiers["long"].client, roots, make, clock, server)  # type: ignore[attr-defined]
    for s in opened:
        s.close()
    if request.param == "falkordb-graph":
        drop_graph(urls[1], f"{key_prefix}_erase")


# --------------------------------------------------------------------------- tests


def test_erase_user_leaves_no_trace_anywhere(env: Env) -> None:
    subject, other = Person.new("s"), Person.new("o")
    # The other user writes first: the subject's agent then retrieves the other's shared
    # memories (fine), while the other's sessions never show the subject's words
    # (that case: test_words_another_users_agent_retrieved_are_erased_or_declared_kept).
    write_user(env.store, env.saver, other)
    write_user(env.store, env.saver, subject)
    # A memory of the other user written right after the subject's in the shared namespace:
    # its context key and keyword context are made with the subject's text.
    env.store.put(
        SHARED_NS, "after", {"content": f"{other.marker} follows up", "user_id": other.uid}
    )
    needles, other_needles = needles_of(env, subject), needles_of(env, other)
    env.clock.now += EXPIRED_AFTER  # some namespaces now hold only expired items
    before = scan_everything(env, needles, files=False)
    # the scans see the data where it lives (else a clean scan would prove nothing)
    assert kinds(before) == {"redis", "chroma", "sqlite"}, describe(before)
    other_before = snapshot(env, other, subject)
    other_nsids = {namespace_id(ns) for ns, _ in other_before["items"]}
    # the subject's vectors (those the other user's identical texts also have are not theirs)
    vectors = vectors_of(env, subject) - vectors_of(env, other)
    # and the vectors of the memories deleted before the erase (HNSW keeps deleted slots)
    vectors |= {
        np.asarray(v, dtype="<f4").tobytes()
        for v in HashingEmbeddings(DIMS).embed_documents(subject.gone)
    }
    assert vectors, "no vector of the user found before the erase"
    records_before = chroma_records(env.chroma)

    receipt = erase_user(env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)

    # Every check runs and the failure lists all that is wrong, place by place.
    problems: list[str] = []

    def check(ok: bool, what: str) -> None:
        if not ok:
            problems.append(what)

    assert not receipt.dry_run
    for place in ("long.items", "short.items", "sessions", "checkpoints", "graph.triples"):
        check(receipt.counts.get(place, 0) > 0, f"receipt: nothing counted in {place}")
    hits = list(needles.find_text(json.dumps(receipt.to_dict())))
    check(not hits, f"the receipt holds the user's id or words: {hits}")
    live = scan_everything(env, needles, files=False)
    check(not live, "after erase_user, live scan (Redis, Chroma API, SQLite):\n" + describe(live))

    # what the public API shows
    check(namespaces_of(env.store, subject) == [], "list_namespaces still lists the user's")
    check(env.saver.list_sessions(subject.uid) == [], "list_sessions still lists the user's")
    for t in subject.threads:
        check(env.saver.get_tuple({"configurable": {"thread_id": t}}) is None, f"thread {t} kept")
        check(env.saver.get_summary(t) is None, f"summary of thread {t} kept")
    triples = graph_triples(env.store, ("memories", subject.uid), limit=10)
    check(triples == [], f"graph_triples still has {triples}")
    for shared_ns in (SHARED_NS, TEAM_NS):
        found = env.store.search(shared_ns, query=subject.marker, limit=100)
        check(
            not any(subject.marker in json.dumps(h.value).lower() for h in found),
            f"a memory of shared namespace {shared_ns} with the user's words is still found",
        )
    # history keeps content-free tombstones only
    for ns, key in [(("memories", subject.uid), "sister"), (("memories", subject.uid), "doomed")]:
        events = memory_history(env.store, ns, key)
        leaked = [e for e in events if list(needles.find_text(repr(e)))]
        check(not leaked, f"memory_history{ns, key} still shows {leaked}")
    exported = json.dumps(export_user(env.store, subject.uid, checkpointer=env.saver))
    check(subject.marker not in exported.lower(), "export_user still exports the user's words")

    # the other user is whole
    other_after = snapshot(env, other, subject)
    check(
        other_after == other_before,
        "the other user's data changed: " + diff(other_before, other_after),
    )
    found_kinds = kinds(scan_everything(env, other_needles, files=False))
    check(
        found_kinds == {"redis", "chroma", "sqlite"},
        f"the other user's data is gone from some of {found_kinds}",
    )
    records_after = chroma_records(env.chroma)
    for name, ids in records_before.items():
        kept = set(records_after.get(name, []))
        lost = [i for i in ids if i not in kept and any(n in i for n in other_nsids)]
        check(not lost, f"Chroma records of the other user removed from {name}: {lost}")

    # closed and flushed: the bytes on disk
    env.store.close()
    on_disk, left = scan_on_disk(env, needles, vectors)
    check(
        not on_disk, "after erase_user and close, SQLite files and raw bytes:\n" + describe(on_disk)
    )
    check(
        not left,
        f"the user's vectors (of {len(vectors)}) survive byte for byte:\n" + describe(left),
    )
    reopened = env.reopen()
    check(
        [ns for ns in reopened.list_namespaces(limit=10_000) if subject.uid in ns] == [],
        "a reopened store lists the user's namespaces",
    )
    check(
        reopened.search(("memories", subject.uid), query=subject.marker) == [],
        "a reopened store finds the user's memories",
    )
    assert not problems, "erase_user left the user behind:\n\n" + "\n\n".join(problems)


def test_erase_user_is_idempotent_and_a_dry_run_removes_nothing(env: Env) -> None:
    subject, other = Person.new("s", plain=True), Person.new("o", plain=True)
    write_user(env.store, env.saver, other, big=False)  # first: see the main test
    write_user(env.store, env.saver, subject, big=False)
    needles = needles_of(env, subject)
    before = places(scan_everything(env, needles, files=False))

    dry = erase_user(
        env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver, dry_run=True
    )
    assert dry.dry_run and dry.total > 0
    assert_receipt_has_no_content(dry, needles)
    # nothing removed (a read may add derived rows, e.g. statistics filled from Chroma)
    gone = before - places(scan_everything(env, needles, files=False))
    assert not gone, "the dry run removed:\n" + "\n".join(map(str, sorted(gone)))

    real = erase_user(env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)
    assert {p: n for p, n in real.counts.items() if n} == {p: n for p, n in dry.counts.items() if n}
    assert real.removed == dry.removed

    again = erase_user(env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)
    assert again.total == 0, f"a second erase still removed {again.counts}"
    assert_no_trace(scan_everything(env, needles, files=False), "after two erase_user runs")


def _crash_in_short_tier(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    tier = env.store.tiers["short"]
    real = tier.erase_namespaces

    def crash(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dry_run"):
            return real(*args, **kwargs)
        raise ConnectionError("redis went away (test)")

    monkeypatch.setattr(tier, "erase_namespaces", crash)


def _crash_in_sessions(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("redis went away (test)")

    monkeypatch.setattr(env.saver, "erase_user", crash)


def _crash_in_chroma_delete(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second Chroma delete call fails: a crash inside the long tier's erase."""
    calls = {"n": 0}
    from chromadb.api.models.Collection import Collection

    real = Collection.delete

    def delete(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ConnectionError("chroma went away (test)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "delete", delete)


@pytest.mark.parametrize(
    "crash",
    [_crash_in_chroma_delete, _crash_in_short_tier, _crash_in_sessions],
    ids=["in-chroma-delete", "in-short-tier", "in-sessions"],
)
def test_a_crash_midway_then_a_rerun_leaves_nothing(
    env: Env, monkeypatch: pytest.MonkeyPatch, crash: Callable[[Env, pytest.MonkeyPatch], None]
) -> None:
    subject, other = Person.new("s", plain=True), Person.new("o", plain=True)
    write_user(env.store, env.saver, other, big=False)  # first: see the main test
    write_user(env.store, env.saver, subject)
    needles = needles_of(env, subject)
    other_before = snapshot(env, other, subject)
    with monkeypatch.context() as m:
        crash(env, m)
        with pytest.raises(ConnectionError, match="went away"):
            erase_user(env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)
    assert scan_everything(env, needles, files=False), "the crash left nothing to find"
    # the re-run comes from a new process: a store opened afresh, no cache of the first run
    env.store.close()
    store = env.reopen()
    env = dataclasses.replace(env, store=store, chroma=store.tiers["long"].client)  # type: ignore[attr-defined]
    erase_user(store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)
    assert_no_trace(scan_everything(env, needles, files=False), "after a crash and a re-run")
    assert snapshot(env, other, subject) == other_before
    store.close()
    on_disk, _ = scan_on_disk(env, needles, set())
    assert_no_trace(on_disk, "after a crash, a re-run and close (SQLite files, raw bytes)")


async def test_async_erase_user_leaves_no_trace(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with (
        AsyncTieredMemoryStore.from_conn_string(
            redis_url,
            chroma_path=str(tmp_path / "chroma"),
            key_prefix=key_prefix,
            graph=True,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        ) as store,
        AsyncRedisSessionSaver.from_conn_string(redis_url, session_prefix=key_prefix) as saver,
    ):
        env = Env(
            [redis_url],
            store,
            saver,
            store.tiers["long"].client,
            [tmp_path],
            lambda: store,
            Clock(),
        )  # type: ignore[arg-type, attr-defined]
        subject, other = Person.new("s"), Person.new("o")
        await awrite_user(store, saver, other)  # first: see the main test
        await awrite_user(store, saver, subject)
        needles = await asyncio.to_thread(needles_of, env, subject)
        before = await asyncio.to_thread(scan_everything, env, needles, files=False)
        assert kinds(before) == {"redis", "chroma", "sqlite"}, describe(before)
        other_sessions = sorted(s.session_id for s in await saver.alist_sessions(other.uid))

        receipt = await aerase_user(
            store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=saver
        )

        assert receipt.counts.get("sessions", 0) > 0 and receipt.counts.get("long.items", 0) > 0
        assert_receipt_has_no_content(receipt, needles)
        after = await asyncio.to_thread(scan_everything, env, needles, files=False)
        assert_no_trace(after, "after aerase_user")
        assert sorted(s.session_id for s in await saver.alist_sessions(other.uid)) == other_sessions
        again = await aerase_user(
            store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=saver
        )
        assert again.total == 0, f"a second aerase_user still removed {again.counts}"
    assert_no_trace(
        scan_everything(env, needles, apis=False), "after aerase_user and close (raw bytes)"
    )


def test_a_guest_in_another_users_session_loses_the_participant_record(env: Env) -> None:
    """The user's words in a session another user owns are kept, and the receipt says so."""
    subject, owner = Person.new("s"), Person.new("o")
    graph = create_memory_agent(
        RecordingChatModel(replies=["Hello both."]), extraction=False, profile=False
    ).compile(store=env.store, checkpointer=env.saver)
    thread = owner.uid + "-party"
    graph.invoke(
        {"messages": "I host this chat."},
        {"configurable": {"user_id": owner.uid, "thread_id": thread}},
    )
    graph.invoke(
        {"messages": f"Guest here, I like {subject.marker}."},
        {"configurable": {"user_id": subject.uid, "thread_id": thread}},
    )
    meta = env.saver.get_session(thread)
    assert meta is not None and subject.uid in meta.participants

    receipt = erase_user(env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)

    assert receipt.counts.get("sessions.participations") == 1
    assert any("took part" in k or "other users" in k for k in receipt.kept), receipt.kept
    meta = env.saver.get_session(thread)
    assert meta is not None and meta.user_id == owner.uid
    assert subject.uid not in meta.participants
    # the uid itself is nowhere; the words stay in the owner's checkpoints (kept, documented)
    uid_only = Needles(uid=subject.uid)
    assert_no_trace(scan_everything(env, uid_only, files=False), "guest erased")


def test_words_another_users_agent_retrieved_are_erased_or_declared_kept(env: Env) -> None:
    """Another user's agent retrieves the user's shared memory into its own session.

    The rendered memory context (with the user's words) is checkpointed in the other
    user's session, which the user never took part in. Erase must remove it, or the
    receipt must say that such copies are kept; nothing else may remain.
    """
    subject, other = Person.new("s"), Person.new("o")
    write_team(env.store, env.saver, subject)
    write_team(env.store, env.saver, other)
    needles = needles_of(env, subject)
    retrieved = [
        t for t in scan_everything(env, needles, files=False) if other.threads[0] in t.where
    ]
    assert retrieved, "the other user's session never saw the user's shared memory"

    receipt = erase_user(env.store, subject.uid, namespaces=EXTRA_TEMPLATES, checkpointer=env.saver)

    left = scan_everything(env, needles, files=False)
    in_other_sessions = [t for t in left if other.threads[0] in t.where]
    elsewhere = [t for t in left if t not in in_other_sessions]
    assert_no_trace(elsewhere, "after erase_user, outside the other user's session")
    declared = [k for k in receipt.kept if "retriev" in k.lower()]
    assert not in_other_sessions or declared, (
        "the user's words stay in another user's session checkpoints (retrieved from a shared"
        " namespace) and the receipt does not declare them kept:\n" + describe(in_other_sessions)
    )


@pytest.mark.parametrize("saver_kind", ["shallow", "async-shallow"])
async def test_shallow_savers_erase_the_users_sessions(
    saver_kind: str, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The shallow savers (latest checkpoint only) erase a user's sessions with the store."""
    subject, other = Person.new("s", plain=True), Person.new("o", plain=True)
    options: dict[str, Any] = {"session_prefix": key_prefix}
    async with (
        AsyncTieredMemoryStore.from_conn_string(
            redis_url,
            chroma_path=str(tmp_path / "chroma"),
            key_prefix=key_prefix,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        ) as store,
    ):
        if saver_kind == "shallow":
            cm: Any = ShallowRedisSessionSaver.from_conn_string(redis_url, **options)
            saver = cm.__enter__()
        else:
            cm = AsyncShallowRedisSessionSaver.from_conn_string(redis_url, **options)
            saver = await cm.__aenter__()
        try:
            graph = create_memory_agent(
                RecordingChatModel(replies=["Noted."]), profile=False
            ).compile(store=store, checkpointer=saver)
            for p in (other, subject):
                for day in ("monday", "tuesday"):
                    config = {"configurable": {"user_id": p.uid, "thread_id": f"{p.uid}-{day}"}}
                    message = {"messages": f"I love {p.marker} tea."}
                    if saver_kind == "shallow":  # a sync saver runs sync graphs only
                        await asyncio.to_thread(graph.invoke, message, config)
                    else:
                        await graph.ainvoke(message, config)
            env = Env(
                [redis_url],
                store,
                saver,
                store.tiers["long"].client,
                [tmp_path],
                lambda: store,
                Clock(),
            )  # type: ignore[arg-type, attr-defined]
            needles = Needles(uid=subject.uid, marker=subject.marker)
            before = await asyncio.to_thread(scan_everything, env, needles, files=False)
            assert kinds(before) >= {"redis", "chroma"}, describe(before)

            receipt = await aerase_user(store, subject.uid, checkpointer=saver)

            assert receipt.counts.get("sessions", 0) == 2, receipt.counts
            after = await asyncio.to_thread(scan_everything, env, needles, files=False)
            assert_no_trace(after, f"after aerase_user with the {saver_kind} saver")
            other_needles = Needles(uid=other.uid, marker=other.marker)
            kept = await asyncio.to_thread(scan_everything, env, other_needles, files=False)
            assert kinds(kept) >= {"redis", "chroma"}, "the other user's sessions went too"
        finally:
            if saver_kind == "shallow":
                cm.__exit__(None, None, None)
            else:
                await cm.__aexit__(None, None, None)


def test_the_cli_erase_leaves_no_trace(redis_url: str, key_prefix: str, tmp_path: Path) -> None:
    """`tiered-memory erase --user ID` reaches the same places as `erase_user(store, ...)`."""
    chroma_path, sessions = str(tmp_path / "chroma"), f"{key_prefix}s"

    def open_store() -> TieredMemoryStore:
        store = TieredMemoryStore(
            redis_url=redis_url,
            chroma_path=chroma_path,
            key_prefix=key_prefix,
            graph=True,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        )
        store.setup()
        return store

    subject, other = Person.new("s"), Person.new("o")
    store = open_store()
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=sessions) as saver:
        write_user(store, saver, other, big=False)
        write_user(store, saver, subject, big=False)
        env = Env(
            [redis_url], store, saver, store.tiers["long"].client, [tmp_path], open_store, Clock()
        )  # type: ignore[attr-defined]
        needles, other_needles = needles_of(env, subject), needles_of(env, other)
    store.close()

    args = ["erase", "--user", subject.uid, "--json", "--chroma-path", chroma_path]
    args += ["--key-prefix", key_prefix, "--redis-url", redis_url, "--session-prefix", sessions]
    done = CliRunner().invoke(cli_app, [*args, "--template", "notes/{user_id}"])

    assert done.exit_code == 0, done.output
    receipt = json.loads(done.output)
    assert receipt["counts"].get("sessions", 0) > 0 and receipt["total"] > 0, receipt
    assert not list(needles.find_text(done.output)), "the CLI printed the user's id or words"
    # The files as the CLI left them, before this process opens Chroma again: opening it
    # may persist an index, padded with bytes of this process's heap (which holds the
    # needles themselves).
    assert_no_trace(scan_everything(env, needles, apis=False), "after `tiered-memory erase`")
    store = open_store()
    try:
        env = dataclasses.replace(env, store=store, chroma=store.tiers["long"].client)  # type: ignore[attr-defined]
        assert_no_trace(scan_everything(env, needles, files=False), "after `tiered-memory erase`")
        kept = kinds(scan_everything(env, other_needles, files=False))
        assert kept == {"redis", "chroma", "sqlite"}, f"the other user's data left {kept}"
    finally:
        store.close()
