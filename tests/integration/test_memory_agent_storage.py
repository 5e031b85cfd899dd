"""The memory agent's storage against erasure and crashes, on Redis (sessions) and Chroma.

Erasing a user leaves nothing of theirs in the background writer: kept jobs are
dropped (a later retry writes nothing) and a job already writing stops at its step.
A turn whose process is killed (SIGKILL) before its storage completes is stored by the
thread's next message in a new process, exactly once.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.agent.builder import (
    MemoryWriteError,
    MemoryWriter,
    create_memory_agent,
)
from langgraph_tiered_memory.checkpoint import RedisSessionSaver
from langgraph_tiered_memory.privacy import erase_user
from tests.conftest import DIMS
from tests.fake_models import RecordingChatModel
from tests.fakes import Clock, HashingEmbeddings

ROOT = Path(__file__).resolve().parents[2]
PREFERENCE = "Please remember that I am vegetarian and never eat fish."


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": uuid.uuid4().hex}}


@pytest.fixture
def mem_store(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    return make_store(scoring=None, clock=clock, index=index)


@pytest.fixture
def saver(redis_url: str, key_prefix: str) -> Iterator[RedisSessionSaver]:
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=key_prefix) as s:
        yield s


def _user() -> str:
    return "ana-" + uuid.uuid4().hex[:8]


def _contents(store: Any, user: str) -> list[str]:
    return [str(i.value.get("content", "")) for i in store.search(("memories", user), limit=100)]


class HookedStore:
    """Delegates to a store; `put` to the memories fails first (`failures`), waits for `gate`."""

    def __init__(self, store: Any, failures: list[BaseException] | None = None) -> None:
        self.store = store
        self.failures = list(failures or [])
        self.gate = threading.Event()
        self.gate.set()
        self.writing = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def put(self, namespace: tuple[str, ...], *args: Any, **kwargs: Any) -> None:
        if namespace[0] == "memories":
            self.writing.set()
            if self.failures:
                raise self.failures.pop(0)
            assert self.gate.wait(30), "the test never opened the gate"
        self.store.put(namespace, *args, **kwargs)


# --------------------------------------------------------------------------- erasure


def test_erasing_a_user_drops_their_kept_writes_so_a_retry_writes_nothing(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver
) -> None:
    user = _user()  # erasure reaches every writer of the process: a user of this test only
    writer = MemoryWriter(retry_wait=0.0)
    hooked = HookedStore(mem_store, failures=[ValueError("bad value")])
    agent = create_memory_agent(
        RecordingChatModel(replies=["Noted."]), store=hooked, writer=writer, extraction=False
    )
    graph = agent.compile(store=mem_store, checkpointer=saver)
    with pytest.raises(MemoryWriteError, match="bad value"):
        graph.invoke({"messages": PREFERENCE}, _config(user))
    assert erase_user(mem_store, user, dry_run=True).counts["writer.jobs"] == 1
    assert len(writer.failed) == 1  # a dry run drops nothing

    receipt = erase_user(mem_store, user)
    assert receipt.counts["writer.jobs"] == 1 and writer.failed == []
    writer.retry_failed()
    writer.flush(30)
    assert _contents(mem_store, user) == []


def test_a_write_running_when_the_erasure_starts_leaves_nothing_after_it(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver
) -> None:
    user = _user()
    writer = MemoryWriter(retry_wait=0.0)
    hooked = HookedStore(mem_store)
    hooked.gate.clear()
    agent = create_memory_agent(
        RecordingChatModel(replies=["Noted."]), store=hooked, writer=writer, extraction=False
    )
    graph = agent.compile(store=mem_store, checkpointer=saver)
    stream = graph.stream({"messages": PREFERENCE}, _config(user), stream_mode="updates")
    for update in stream:
        if "agent" in update:
            break
    assert hooked.writing.wait(10)  # the interaction memory's put is under way
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        erasing = pool.submit(erase_user, mem_store, user)
        time.sleep(0.5)
        assert not erasing.done()  # it waits for the step in flight
        hooked.gate.set()
        receipt = erasing.result(60)
    assert "memory_storage" in list(stream)[-1]  # the run ends without an error
    assert receipt.counts["writer.jobs"] == 1  # the job's last step (the profile) never ran
    assert _contents(mem_store, user) == [] and writer.pending == 0


# --------------------------------------------------------------------------- crash

_CHILD = r"""
import json, os, signal, sys, threading, time

from langgraph.store.base import BaseStore, PutOp

from langgraph_tiered_memory import TieredMemoryStore, create_memory_agent
from langgraph_tiered_memory.checkpoint import RedisSessionSaver
from tests.fake_models import RecordingChatModel
from tests.fakes import HashingEmbeddings

url, chroma, prefix, kill = sys.argv[1:5]
NS = ("memories", "ana")
CONFIG = {"configurable": {"user_id": "ana", "thread_id": prefix}}


class Dying(BaseStore):
    # The store of the agent: the process dies at its `kill` point, once the turn's
    # reply is checkpointed ("write": the turn's first memory write; "stored": after
    # the turn's storage, in the profile refresh, before the run records it).

    def __init__(self, store):
        self.store, self.agent = store, None

    def __getattr__(self, name):
        return getattr(self.store, name)

    def _die(self):
        for _ in range(300):
            messages = self.agent.get_state(CONFIG).values.get("messages") or []
            if messages and messages[-1].type == "ai":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(0.1)
        raise AssertionError("the reply was never checkpointed")

    def batch(self, ops):
        ops = list(ops)
        if kill == "write" and any(isinstance(o, PutOp) and o.namespace == NS for o in ops):
            self._die()
        if (
            kill == "stored"
            and threading.current_thread().name.startswith("memory-writer")
            and any(getattr(o, "namespace", ("",))[0] == "profiles" for o in ops)
        ):
            self._die()  # the profile refresh reads its cache
        return self.store.batch(ops)

    async def abatch(self, ops):
        raise NotImplementedError


index = {"dims": 64, "embed": HashingEmbeddings(64), "fields": ["content"]}
with (
    TieredMemoryStore.from_conn_string(
        url, chroma_path=chroma, key_prefix=prefix, index=index
    ) as store,
    RedisSessionSaver.from_conn_string(url, session_prefix=prefix) as saver,
):
    if kill != "no":
        store.put(NS, "hives", {"content": "My beehives sit on the roof", "memory_type": "fact"})
        model = RecordingChatModel(replies=["Your beehives on the roof sound lovely."])
        dying = Dying(store)
        graph = create_memory_agent(model, store=dying).compile(store=store, checkpointer=saver)
        dying.agent = graph
        graph.invoke({"messages": "Remember that I keep bees on my roof in Tromso."}, CONFIG)
        sys.exit("the process should have died")
    graph = create_memory_agent(RecordingChatModel(replies=["Try lavender."])).compile(
        store=store, checkpointer=saver
    )
    graph.invoke({"messages": "What should I plant up there?"}, CONFIG)
    found = [i.value for i in store.search(NS, limit=100)]
    print(json.dumps({
        "memories": [[v["content"], v.get("source")] for v in found],
        "hives": store.get_memory(NS, "hives").importance,
        "messages": len(graph.get_state(CONFIG).values["messages"]),
    }))
"""


def _child(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("kill", ["write", "stored"])
def test_a_turn_whose_process_died_is_stored_once_by_the_threads_next_message(
    redis_url: str, key_prefix: str, tmp_path: Path, kill: str
) -> None:
    args = [redis_url, str(tmp_path / "chroma"), key_prefix]
    died = _child([*args, kill])
    assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]
    nxt = _child([*args, "no"])
    assert nxt.returncode == 0, nxt.stderr[-3000:]
    found = json.loads(nxt.stdout.strip().splitlines()[-1])
    memories = found["memories"]
    turns = [c for c, source in memories if source == "memory_agent" and "Tromso" in c]
    facts = [c for c, source in memories if source == "extraction" and "bees" in c]
    assert len(turns) == 1 and facts == ["I keep bees on my roof in Tromso"]
    assert any("plant up there" in c for c, _ in memories)  # the new turn is stored too
    assert found["hives"] == pytest.approx(0.6)  # the reply used it: reinforced once
    assert found["messages"] == 4  # the killed turn's reply stayed in the thread
