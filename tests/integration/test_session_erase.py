"""`erase_user` on every session saver kind: the user's sessions go whole (every key
langgraph-checkpoint-redis keeps, registry hash, summary, index), and so do their
participant fields in other users' sessions; other users' data stays."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_tiered_memory.checkpoint import (
    AsyncRedisSessionSaver,
    AsyncShallowRedisSessionSaver,
    RedisSessionSaver,
    ShallowRedisSessionSaver,
    erase,
)
from langgraph_tiered_memory.checkpoint._base import Batch
from langgraph_tiered_memory.checkpoint.erase import Layout, erase_plan, run_erase
from langgraph_tiered_memory.privacy.erasure import id_hash

KINDS = ["sync", "async", "shallow", "async-shallow"]
SAVERS: dict[str, Any] = {
    "sync": RedisSessionSaver,
    "async": AsyncRedisSessionSaver,
    "shallow": ShallowRedisSessionSaver,
    "async-shallow": AsyncShallowRedisSessionSaver,
}


def _graph() -> Any:
    """A graph with a subgraph, so checkpoints exist in a namespace holding ':'."""

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    child = StateGraph(MessagesState)
    child.add_node("reply", reply)
    child.add_edge(START, "reply")
    g = StateGraph(MessagesState)
    g.add_node("child", child.compile())
    g.add_edge(START, "child")
    return g


@dataclass
class World:
    """Two users' sessions: `user` owns two (one a prefix of another user's thread id) and
    took part in `other`'s session."""

    user: str
    other: str
    marker: str
    mine: list[str]
    theirs: str
    lookalike: str
    """Another user's thread whose id starts with one of `mine` and ':'."""


def _world() -> World:
    tag = uuid.uuid4().hex[:8]
    user = f"user-{tag}"
    mine = [f"{user}-chat", f"t{tag}"]
    return World(
        user=user,
        other=f"other-{tag}",
        marker=f"MARKER{tag}",
        mine=mine,
        theirs=f"theirs-{tag}",
        lookalike=f"{mine[1]}:x",
    )


def _cfg(thread: str, user: str) -> Any:
    return {"configurable": {"thread_id": thread, "user_id": user}}


def _turns(world: World) -> list[tuple[str, str, str]]:
    """(thread, user, text) in order: the other user owns `theirs` before the user joins."""
    return [
        (world.mine[0], world.user, f"{world.marker} my first chat"),
        (world.mine[1], world.user, f"{world.marker} my second chat"),
        (world.theirs, world.other, "the other user's chat"),
        (world.theirs, world.user, "joining in"),
        (world.lookalike, world.other, "a look-alike thread id"),
    ]


def _fill_sync(saver: Any, world: World) -> None:
    graph = _graph().compile(checkpointer=saver)
    for thread, user, text in _turns(world):
        graph.invoke({"messages": [("user", text)]}, _cfg(thread, user))
    for thread in world.mine:
        saver.set_summary(thread, f"{world.marker} summary")
    saver.set_summary(world.theirs, "the other user's summary")
    saver.flush_sessions()


async def _fill_async(saver: Any, world: World) -> None:
    graph = _graph().compile(checkpointer=saver)
    for thread, user, text in _turns(world):
        await graph.ainvoke({"messages": [("user", text)]}, _cfg(thread, user))
    for thread in world.mine:
        await saver.aset_summary(thread, f"{world.marker} summary")
    await saver.aset_summary(world.theirs, "the other user's summary")
    await saver.aflush_sessions()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


def _strings(value: Any) -> Iterator[str]:
    """Every string inside `value`, and the text of those that are base64."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        yield text
        try:
            yield base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            pass


def _traces(client: redis.Redis, needles: list[str]) -> list[str]:
    """Names of the keys (anywhere in Redis) whose name or content holds a needle."""
    found: list[str] = []
    for raw in client.scan_iter(count=1000):
        name = raw.decode()
        kind = client.type(raw).decode()
        value: Any
        if kind == "string":
            value = client.get(raw)
        elif kind == "hash":
            value = {k.decode(): v for k, v in client.hgetall(raw).items()}
        elif kind == "zset":
            value = list(client.zrange(raw, 0, -1))
        elif kind == "set":
            value = list(client.smembers(raw))
        elif kind == "list":
            value = list(client.lrange(raw, 0, -1))
        elif kind == "ReJSON-RL":
            value = client.json().get(raw)
        else:
            value = None
        texts = [name, *_strings(value)]
        if any(n in t for n in needles for t in texts):
            found.append(name)
    return found


def _needles(world: World) -> list[str]:
    """What must not survive; `mine[1]` is checked by `_thread_traces` (a look-alike
    thread of another user starts with it)."""
    return [world.user, world.marker, world.mine[0]]


def _left(client: redis.Redis, world: World) -> list[str]:
    """Traces of the user: keys holding a needle, and keys of the user's second thread."""
    thread = world.mine[1]
    own = [
        k.decode()
        for k in client.scan_iter(match=f"*{thread}*", count=1000)
        if world.lookalike.encode() not in k
    ]
    return _traces(client, _needles(world)) + own + _tag_values(client, world)


def _tag_values(client: redis.Redis, world: World) -> list[str]:
    """Tag values of the checkpoint search indexes naming the user or their threads."""
    needles = [n.lower() for n in (*_needles(world), world.mine[1])]
    out: list[str] = []
    for index in ("checkpoint", "checkpoint_write"):
        for raw in client.execute_command("FT.TAGVALS", index, "thread_id"):
            value = raw.decode()
            if value != world.lookalike.lower() and any(n in value for n in needles):
                out.append(f"{index} tag {value}")
    return out


def _other_keys(client: redis.Redis, world: World) -> list[bytes]:
    """Names of every key of the other user's threads (the look-alike one included)."""
    return sorted(
        k
        for thread in (world.theirs, world.lookalike)
        for k in client.scan_iter(match=f"*{thread}*", count=1000)
    )


def _check_other_user_intact(client: redis.Redis, prefix: str, world: World) -> None:
    for thread in (world.theirs, world.lookalike):
        assert client.exists(f"{prefix}:session:{{{thread}}}")
        assert list(client.scan_iter(match=f"checkpoint:{thread}:*", count=1000))
    assert client.exists(f"{prefix}:summary:{{{world.theirs}}}")
    fields = client.hgetall(f"{prefix}:session:{{{world.theirs}}}")
    assert fields[b"user_id"] == world.other.encode()
    assert not any(world.user.encode() in k for k in fields)
    members = client.zrange(f"{prefix}:user:{world.other}", 0, -1)
    assert sorted(members) == sorted([world.theirs.encode(), world.lookalike.encode()])


@pytest.mark.parametrize("kind", KINDS)
async def test_erase_user_removes_every_trace_on_each_saver_kind(
    redis_url: str, client: redis.Redis, kind: str
) -> None:
    world, prefix = _world(), f"s{uuid.uuid4().hex[:8]}"
    cls = SAVERS[kind]
    threshold = client.execute_command("FT.CONFIG", "GET", "FORK_GC_CLEAN_THRESHOLD")
    if kind.startswith("async"):
        async with cls.from_conn_string(redis_url, session_prefix=prefix) as saver:
            await _fill_async(saver, world)
            assert await saver.auser_sessions(world.user) == sorted(world.mine)
            assert _left(client, world)
            before = _other_keys(client, world)
            planned = await saver.aerase_user(world.user, dry_run=True)
            assert _left(client, world)  # nothing removed by the dry run
            receipt = await saver.aerase_user(world.user)
            again = await saver.aerase_user(world.user)
            assert await saver.alist_sessions(world.user) == []
            other_meta = await saver.aget_session(world.theirs)
    else:
        with cls.from_conn_string(redis_url, session_prefix=prefix) as saver:
            _fill_sync(saver, world)
            assert saver.user_sessions(world.user) == sorted(world.mine)
            assert _left(client, world)
            before = _other_keys(client, world)
            planned = saver.erase_user(world.user, dry_run=True)
            assert _left(client, world)
            receipt = saver.erase_user(world.user)
            again = saver.erase_user(world.user)
            assert saver.list_sessions(world.user) == []
            other_meta = saver.get_session(world.theirs)
    assert _left(client, world) == []
    assert _other_keys(client, world) == before
    _check_other_user_intact(client, prefix, world)
    # The index collector ran (no tag values left, see `_left`) and restored the setting.
    assert client.execute_command("FT.CONFIG", "GET", "FORK_GC_CLEAN_THRESHOLD") == threshold
    assert other_meta is not None and other_meta.participants == ()
    # The receipt: counts and hashes only, the same in the dry run; nothing on a re-run.
    assert planned.dry_run and not receipt.dry_run
    assert planned.counts == receipt.counts and planned.removed == receipt.removed
    assert receipt.counts["sessions"] == 2
    assert receipt.counts["sessions.summaries"] == 2
    assert receipt.counts["sessions.participations"] == 1
    assert receipt.removed["sessions"] == sorted(id_hash(t) for t in world.mine)
    assert receipt.counts["checkpoints"] >= 4 and receipt.counts["checkpoints.writes"] >= 2
    assert receipt.kept  # the other user's session the user took part in
    dumped = json.dumps(receipt.to_dict())
    assert not any(n in dumped for n in _needles(world))
    assert again.total == 0


def _crash_before(plan: Generator[Any, Any, Any], doomed: str) -> Generator[Any, Any, Any]:
    """Forward `plan`'s requests; fail at its first batch deleting a key holding `doomed`."""
    request = next(plan)
    while True:
        if isinstance(request, Batch) and any(
            name == "delete" and doomed in str(args[0]) for name, args, _ in request.commands
        ):
            raise RuntimeError(f"crash before deleting {doomed}")
        reply = yield request
        try:
            request = plan.send(reply)
        except StopIteration as stop:
            return stop.value


@pytest.mark.parametrize("doomed", ["checkpoint:", ":summary:", ":session:", ":user:"])
def test_a_crash_midway_is_finished_by_a_rerun(
    redis_url: str, client: redis.Redis, doomed: str
) -> None:
    world, prefix = _world(), f"s{uuid.uuid4().hex[:8]}"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver:
        _fill_sync(saver, world)
        before = _other_keys(client, world)
        plan = erase_plan(Layout.of(saver), world.user, dry_run=False)
        with pytest.raises(RuntimeError, match="crash"):
            run_erase(saver, _crash_before(plan, doomed))
        assert _left(client, world)  # the crash left something
        saver.erase_user(world.user)
        assert _left(client, world) == []
        assert saver.erase_user(world.user).total == 0
    assert _other_keys(client, world) == before
    _check_other_user_intact(client, prefix, world)


def test_sessions_known_only_from_the_user_index_are_erased(
    redis_url: str, client: redis.Redis
) -> None:
    world, prefix = _world(), f"s{uuid.uuid4().hex[:8]}"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver:
        _fill_sync(saver, world)
        # The registry hash of one session is gone (expired earlier than its checkpoints).
        client.delete(f"{prefix}:session:{{{world.mine[0]}}}")
        assert saver.user_sessions(world.user) == sorted(world.mine)
        receipt = saver.erase_user(world.user)
    assert receipt.counts["sessions"] == 1  # one hash left to delete
    assert _left(client, world) == []
    _check_other_user_intact(client, prefix, world)


@pytest.mark.parametrize("scans", ["per-thread", "per-family"])
def test_orphan_keys_found_only_by_scan_are_erased(
    redis_url: str, client: redis.Redis, monkeypatch: pytest.MonkeyPatch, scans: str
) -> None:
    if scans == "per-family":  # as with a user owning many sessions
        monkeypatch.setattr(erase, "_PER_THREAD_SCANS", 0)
    world, prefix = _world(), f"s{uuid.uuid4().hex[:8]}"
    thread = world.mine[1]
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=prefix) as saver:
        _fill_sync(saver, world)
        # Keys no search finds: an old upstream's blob key and a pointer whose checkpoints
        # are gone, next to keys of the look-alike thread (another user's) that must stay.
        client.set(f"checkpoint_blob:{thread}:__empty__:messages:1", world.marker)
        client.set(f"checkpoint_latest:{thread}:gone-ns", "checkpoint:x")
        receipt = saver.erase_user(world.user)
    assert _left(client, world) == []
    assert (
        id_hash(f"checkpoint_blob:{thread}:__empty__:messages:1")
        in receipt.removed["checkpoints.keys"]
    )
    assert client.exists(f"checkpoint_latest:{world.lookalike}:__empty__")
    _check_other_user_intact(client, prefix, world)


def test_erase_user_checks_the_user_id(redis_url: str) -> None:
    with RedisSessionSaver.from_conn_string(redis_url) as saver:
        for bad in ("", " padded ", None):
            with pytest.raises(ValueError, match="user_id"):
                saver.erase_user(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_server_refusing_the_index_collector_is_reported(
    redis_url: str, client: redis.Redis, kind: str
) -> None:
    world, prefix = _world(), f"s{uuid.uuid4().hex[:8]}"
    user, password = f"u{prefix}", "s3cret-pw"  # may lower the collector's threshold, not run it
    client.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "+@all", "-ft.debug")
    limited = redis_url.replace("redis://", f"redis://{user}:{password}@", 1)
    threshold = client.execute_command("FT.CONFIG", "GET", "FORK_GC_CLEAN_THRESHOLD")
    cls = SAVERS[kind]
    try:
        if kind == "async":
            async with cls.from_conn_string(limited, session_prefix=prefix) as saver:
                await _fill_async(saver, world)
                receipt = await saver.aerase_user(world.user)
                assert await saver.auser_sessions(world.user) == []
        else:
            with cls.from_conn_string(limited, session_prefix=prefix) as saver:
                _fill_sync(saver, world)
                receipt = saver.erase_user(world.user)
                assert saver.user_sessions(world.user) == []
    finally:
        client.execute_command("ACL", "DELUSER", user)
    assert erase.KEPT_INDEX_TAGS in receipt.kept
    assert receipt.counts["sessions"] == 2
    restored = client.execute_command("FT.CONFIG", "GET", "FORK_GC_CLEAN_THRESHOLD")
    assert restored == threshold
    assert _traces(client, _needles(world)) == []  # every key is gone all the same
