"""The repository's `langgraph.json` under `langgraph dev`, driven with `langgraph-sdk`."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
import redis
from langgraph_sdk import get_client

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.server import HashingEmbeddings
from tests.conftest import drop_redis_keys
from tests.net import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 60.0
USER = "studio-user"


class Served(NamedTuple):
    url: str
    redis_url: str
    chroma_path: str
    key_prefix: str
    session_prefix: str
    stop: Callable[[], None]


def _langgraph() -> str:
    found = Path(sys.executable).with_name("langgraph")
    if found.exists():
        return str(found)
    which = shutil.which("langgraph")
    assert which is not None, "langgraph-cli[inmem] (the dev extra) provides `langgraph`"
    return which


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"langgraph dev exited with {process.returncode}:\n{log.read_text()}")
            try:
                if http.get(f"{url}/ok").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)  # polling the health endpoint: the server signals nothing else
    pytest.fail(f"langgraph dev did not answer within {STARTUP_SECONDS}s:\n{log.read_text()}")


@pytest.fixture
def served(redis_url: str, tmp_path: Path) -> Iterator[Served]:
    port = free_port()
    key_prefix, session_prefix = f"st{uuid.uuid4().hex[:8]}", f"ss{uuid.uuid4().hex[:8]}"
    chroma_path, log = str(tmp_path / "chroma"), tmp_path / "langgraph-dev.log"
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "REDIS_URL": redis_url,
        "TIERED_MEMORY_CHROMA_PATH": chroma_path,
        "TIERED_MEMORY_EMBED": "hashing",
        "TIERED_MEMORY_KEY_PREFIX": key_prefix,
        "TIERED_MEMORY_SESSION_PREFIX": session_prefix,
        "TIERED_MEMORY_SUMMARY_MAX_MESSAGES": "3",
        "TIERED_MEMORY_SUMMARY_KEEP_LAST": "2",
    }
    for name in ("OPENAI_API_KEY", "TIERED_MEMORY_MODEL", "TIERED_MEMORY_CHROMA_HOST"):
        env.pop(name, None)
    command = [_langgraph(), "dev", "--no-browser", "--no-reload", "--port", str(port)]
    command += ["--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def stop() -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    try:
        _wait_until_up(url, process, log)
        yield Served(url, redis_url, chroma_path, key_prefix, session_prefix, stop)
    finally:
        stop()
        drop_redis_keys(redis_url, key_prefix)
        drop_redis_keys(redis_url, session_prefix)


def _keys_of(client: redis.Redis, thread_id: str) -> list[str]:
    return [k.decode() for k in client.scan_iter(match=f"*{thread_id}*", count=1000)]


async def _drive(served: Served, client: redis.Redis) -> None:
    sdk = get_client(url=served.url)
    assistants = await sdk.assistants.search()
    assert {a["graph_id"] for a in assistants} >= {"memory_agent", "summarizer", "forgetting"}

    # Two turns of the memory agent on one thread, with messages as dicts.
    thread = (await sdk.threads.create())["thread_id"]
    config: Any = {"configurable": {"user_id": USER}}
    first = {"messages": [{"role": "user", "content": "Remember: I am vegetarian and love dal."}]}
    await sdk.runs.wait(thread, "memory_agent", input=first, config=config)
    second = {"messages": [{"role": "user", "content": "What should I cook tonight?"}]}
    out: Any = await sdk.runs.wait(thread, "memory_agent", input=second, config=config)
    assert len(out["messages"]) == 4 and out["messages"][-1]["type"] == "ai"
    assert "vegetarian" in out["memory_context"]  # recalled from the first turn
    keys = _keys_of(client, thread)
    assert any(k.startswith("checkpoint:") for k in keys), keys
    assert f"{served.session_prefix}:session:{{{thread}}}" in keys
    session = client.hgetall(f"{served.session_prefix}:session:{{{thread}}}")
    assert session[b"user_id"].decode() == USER
    remembered = await sdk.store.search_items(["memories", USER], query="vegetarian", limit=10)
    assert any("vegetarian" in str(i["value"]) for i in remembered["items"])

    # threads.copy copies the session-registry entry (writing pending records first).
    copy = (await sdk.threads.copy(thread))["thread_id"]
    copied = client.hgetall(f"{served.session_prefix}:session:{{{copy}}}")
    assert copied[b"user_id"].decode() == USER and int(copied[b"message_count"]) == 4
    owned = client.zrange(f"{served.session_prefix}:user:{USER}", 0, -1)
    assert {m.decode() for m in owned} == {thread, copy}
    copied_state: Any = await sdk.threads.get_state(copy)
    assert len(copied_state["values"]["messages"]) == 4

    # The store API.
    await sdk.store.put_item(["notes", USER], "tea", {"content": "drinks green tea daily"})
    await sdk.store.put_item(["short_term", USER], "mood", {"content": "cheerful"})
    found = await sdk.store.search_items(["notes", USER], query="green tea")
    assert [i["key"] for i in found["items"]] == ["tea"]
    spaces = (await sdk.store.list_namespaces(prefix=["notes"]))["namespaces"]
    assert spaces == [["notes", USER]]
    short = await sdk.store.get_item(["short_term", USER], "mood")
    assert short["value"] == {"content": "cheerful"}
    assert list(client.scan_iter(match=f"{served.key_prefix}:*", count=1000))  # short tier

    # The summarizer, served alone, on message dicts and tuples-as-lists; the summary
    # reaches the served checkpointer's session layer.
    chat = (await sdk.threads.create())["thread_id"]
    talk = [{"role": "user", "content": f"My number {i} is {i * 7}."} for i in range(5)]
    summed: Any = await sdk.runs.wait(chat, "summarizer", input={"messages": talk})
    assert "number 0" in summed["summary"] and len(summed["messages"]) == 2
    stored = client.get(f"{served.session_prefix}:summary:{{{chat}}}")
    assert stored is not None and b"number 0" in stored

    # A forgetting run (a dry run by default, then a real one) over the served store.
    dry: Any = await sdk.runs.wait(None, "forgetting", input={})
    assert dry["report"]["dry_run"] is True and dry["report"]["scanned"] >= 2
    real: Any = await sdk.runs.wait(
        None, "forgetting", input={"namespace": ["notes"], "dry_run": False}
    )
    assert real["report"]["dry_run"] is False and real["report"]["forgotten_count"] == 0

    # Deleting the threads leaves none of their Redis keys.
    for gone in (thread, copy, chat):
        await sdk.threads.delete(gone)
        assert _keys_of(client, gone) == []
    assert {
        m.decode() for m in client.zrange(f"{served.session_prefix}:user:{USER}", 0, -1)
    } == set()


def test_langgraph_dev_serves_the_tiered_memory(served: Served) -> None:
    client = redis.Redis.from_url(served.redis_url)
    try:
        asyncio.run(_drive(served, client))
    finally:
        client.close()
    served.stop()  # the server holds the Chroma directory until it exits
    index = {"embed": HashingEmbeddings(), "dims": 256}
    with TieredMemoryStore.from_conn_string(
        served.redis_url,
        chroma_path=served.chroma_path,
        key_prefix=served.key_prefix,
        index=index,  # type: ignore[arg-type]
    ) as store:
        assert store.tier_for(("memories", USER)) == "long"
        memories = store.search(("memories", USER), limit=20)
        assert any("vegetarian" in str(item.value) for item in memories)
        assert store.get(("notes", USER), "tea") is not None


@pytest.mark.parametrize("reload", [True, False], ids=["reload", "no-reload"])
def test_langgraph_dev_without_redis_url_exits_non_zero(reload: bool, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "TIERED_MEMORY_CHROMA_PATH": str(tmp_path / "chroma"),
        "TIERED_MEMORY_EMBED": "hashing",
    }
    env.pop("REDIS_URL", None)
    command = [_langgraph(), "dev", "--no-browser", "--port", str(free_port())]
    command += ["--host", "127.0.0.1", *([] if reload else ["--no-reload"])]
    started = time.monotonic()
    # Without the fix the reloader waits for a file change: the timeout is the failure.
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=90)
    output = (done.stdout + done.stderr).decode(errors="replace")
    assert time.monotonic() - started < 60, output
    assert done.returncode != 0, output
    assert "Set REDIS_URL" in output
    if reload:
        assert "tiered-memory studio" in output and "Stopping `langgraph dev`" in output
