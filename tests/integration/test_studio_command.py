"""`tiered-memory studio` as a user runs it: no REDIS_URL, one command, Ctrl-C to stop.

One server start drives every graph of the repository's `langgraph.json` with the chat
input Studio sends (a dict message), then SIGINT must stop the server and the bundled
Redis the command started.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
from langgraph_sdk import get_client

from tests.net import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 90.0
USER = "studio-click"
CHAT = {"messages": [{"role": "user", "content": "Remember: I am vegetarian and love dal."}]}


def _command(port: int, tmp_path: Path, **extra: str) -> tuple[list[str], dict[str, str]]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TIERED_MEMORY_CHROMA_PATH": str(tmp_path / "chroma"),
        "TIERED_MEMORY_EMBED": "hashing",
        **extra,
    }
    for name in ("REDIS_URL", "OPENAI_API_KEY", "TIERED_MEMORY_MODEL"):
        if name not in extra:
            env.pop(name, None)
    command = [sys.executable, "-m", "langgraph_tiered_memory.cli.app", "studio"]
    return [*command, "--port", str(port)], env


def _wait_for_url(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode}:\n{log.read_text()}"
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("API: "):
                return line.removeprefix("API: ").strip()
        time.sleep(0.2)  # the command announces readiness only in its output
    raise AssertionError(f"no Studio URL within {STARTUP_SECONDS}s:\n{log.read_text()}")


async def _first_clicks(url: str) -> None:
    sdk = get_client(url=url)
    config: Any = {"configurable": {"user_id": USER}}

    # The memory agent answers, and its output state says what it stored and recalled.
    thread = (await sdk.threads.create())["thread_id"]
    first: Any = await sdk.runs.wait(thread, "memory_agent", input=CHAT, config=config)
    [key] = first["stored_memories"]
    item = await sdk.store.get_item(["memories", USER], key)
    assert "vegetarian" in item["value"]["content"]
    again = {"messages": [{"role": "user", "content": "What vegetarian dish should I cook?"}]}
    out: Any = await sdk.runs.wait(thread, "memory_agent", input=again, config=config)
    assert out["messages"][-1]["type"] == "ai"
    recalled = [m["content"] for m in out["retrieved_memories"]]
    assert any("vegetarian" in text for text in recalled), recalled

    # The summarizer shows the summary it kept, even before it folds anything.
    chat = (await sdk.threads.create())["thread_id"]
    summed: Any = await sdk.runs.wait(chat, "summarizer", input=CHAT)
    assert summed["summary"] == "" and len(summed["messages"]) == 1
    assert "Kept 1 messages" in summed["summary_status"]

    # Forgetting on the chat input is a dry run: a report, and nothing deleted.
    await sdk.store.put_item(["memories", USER], "old", {"content": "x", "importance": 0.0})
    before = await sdk.store.search_items(["memories", USER], limit=100)
    report: Any = (await sdk.runs.wait(None, "forgetting", input=CHAT))["report"]
    assert report["dry_run"] is True and report["scanned"] >= len(before["items"]) >= 2
    after = await sdk.store.search_items(["memories", USER], limit=100)
    assert sorted(i["key"] for i in after["items"]) == sorted(i["key"] for i in before["items"])


def test_studio_serves_every_graph_and_stops_what_it_started_on_ctrl_c(tmp_path: Path) -> None:
    log = tmp_path / "studio.log"
    command, env = _command(free_port(), tmp_path)
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        url = _wait_for_url(process, log)
        text = log.read_text(errors="replace")
        assert "Studio: https://smith.langchain.com/studio/?baseUrl=" + url in text
        assert "embeddings hashing (lexical, offline), 256 dims" in text  # the model, not a type
        started = psutil.Process(process.pid).children(recursive=True)  # Redis, langgraph
        redis = [p for p in started if "valkey-server" in p.name()]
        assert len(redis) == 1, [p.name() for p in started]
        asyncio.run(_first_clicks(url))

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0, log.read_text()
        gone, alive = psutil.wait_procs(started, timeout=10)
        assert alive == [], [p.name() for p in alive]
        assert not redis[0].is_running()
    finally:
        if process.poll() is None:  # a failed check: stop it the way a user would
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def test_studio_exits_with_an_error_when_the_store_cannot_start(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    command, env = _command(free_port(), tmp_path, REDIS_URL=f"redis://127.0.0.1:{closed}/0")
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode != 0
    errors = [line for line in done.stderr.decode().splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "langgraph dev exited with code 3" in errors[0], done.stderr
