"""`tiered-memory erase` and `tiered-memory export` on real stores (Chroma, Redis, sessions).

The stores are written through the library and closed before the CLI opens them, as a
user would after the application stopped.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import START, MessagesState, StateGraph
from typer.testing import CliRunner

from langgraph_tiered_memory import RedisSessionSaver, TieredMemoryStore
from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.graph import graph_triples
from tests.conftest import drop_redis_keys

runner = CliRunner()


def _run(*args: str, **kwargs: Any) -> Any:
    return runner.invoke(app, list(args), **kwargs)


def _flat(text: str) -> str:
    """Output with rich's boxes and line wrapping removed."""
    return " ".join(text.replace("│", " ").split())


class Written:
    """What the fixture wrote: the ids and where."""

    def __init__(self, tmp_path: Path, key_prefix: str) -> None:
        tag = uuid.uuid4().hex[:8]
        self.user = f"cli-{tag}"
        self.other = f"keep-{tag}"
        self.chroma = str(tmp_path / "chroma")
        self.key_prefix = key_prefix
        self.sessions = f"{key_prefix}s"
        self.thread = f"t-{self.user}"

    def store_args(self) -> list[str]:
        return ["--chroma-path", self.chroma, "--key-prefix", self.key_prefix]

    def redis_args(self, redis_url: str) -> list[str]:
        return ["--redis-url", redis_url, "--session-prefix", self.sessions]


@pytest.fixture
def written(redis_url: str, key_prefix: str, tmp_path: Path) -> Iterator[Written]:
    w = Written(tmp_path, key_prefix)
    store = TieredMemoryStore(redis_url=redis_url, chroma_path=w.chroma, key_prefix=key_prefix)
    try:
        store.setup()
        store.put(("users", w.user), "m1", {"content": "My sister Anna lives in Porto."})
        store.put(("memories", w.user), "m2", {"content": "I like green tea."})
        store.put(("short_term", "users", w.user), "turn", {"content": "draft"}, ttl=60)
        store.put(("shared",), "t", {"content": "a turn", "thread_id": w.thread})
        store.put(("users", w.other), "m1", {"content": "Oslo"})
    finally:
        store.close()
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=w.sessions) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
        builder.add_edge(START, "reply")
        config = {"configurable": {"thread_id": w.thread, "user_id": w.user}}
        builder.compile(checkpointer=saver).invoke({"messages": [("user", "hi")]}, config)
    yield w
    drop_redis_keys(redis_url, w.sessions)


def _reopen(redis_url: str, w: Written) -> TieredMemoryStore:
    store = TieredMemoryStore(redis_url=redis_url, chroma_path=w.chroma, key_prefix=w.key_prefix)
    store.setup()
    return store


def test_erase_dry_run_json_then_erase_everywhere(redis_url: str, written: Written) -> None:
    w = written
    args = ["erase", "--user", w.user, *w.store_args(), *w.redis_args(redis_url), "--json"]
    preview = _run(*args, "--dry-run")
    assert preview.exit_code == 0, preview.output
    counts = json.loads(preview.output)["counts"]
    assert counts["long.items"] == 2 and counts["short.items"] == 1
    assert counts["sessions"] == 1 and counts["long.shared_items"] == 1
    assert w.user not in preview.output  # hashes only

    done = _run(*args)
    assert done.exit_code == 0, done.output
    receipt = json.loads(done.output)
    assert receipt["dry_run"] is False and receipt["counts"] == counts
    store = _reopen(redis_url, w)
    try:
        assert store.get(("users", w.user), "m1") is None
        assert store.get(("memories", w.user), "m2") is None
        assert store.get(("short_term", "users", w.user), "turn") is None
        assert store.get(("shared",), "t") is None
        assert store.get(("users", w.other), "m1") is not None
    finally:
        store.close()
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=w.sessions) as saver:
        assert saver.get_session(w.thread) is None

    again = _run(*args)
    assert again.exit_code == 0 and json.loads(again.output)["total"] == 0


def test_erase_without_redis_reaches_the_long_tier_only(
    redis_url: str, written: Written, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = written
    monkeypatch.delenv("REDIS_URL", raising=False)
    result = _run("erase", "--user", w.user, *w.store_args())
    assert result.exit_code == 0, result.output
    assert "long.items" in result.output and "sessions not reached" in result.output
    store = _reopen(redis_url, w)
    try:
        assert store.get(("users", w.user), "m1") is None
        assert store.get(("short_term", "users", w.user), "turn") is not None
    finally:
        store.close()


def test_erase_refuses_a_blank_user_and_a_missing_store(tmp_path: Path) -> None:
    blank = _run("erase", "--user", " ", "--chroma-path", str(tmp_path))
    assert blank.exit_code == 2 and "user_id" in _flat(blank.output)
    for command in ("erase", "export"):
        nameless = _run(command, "--user", "u1", "--name", " ", "--chroma-path", str(tmp_path))
        assert nameless.exit_code == 2 and "names must be" in _flat(nameless.output)
    missing = _run("erase", "--user", "u1", "--chroma-path", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "does not exist" in _flat(missing.output)


def test_export_writes_the_users_data_as_json(
    redis_url: str, written: Written, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = written
    out = tmp_path / "export.json"
    result = _run(
        "export", "--user", w.user, *w.store_args(), *w.redis_args(redis_url), "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["user_id"] == w.user
    assert sorted(m["key"] for m in data["memories"]) == ["m1", "m2"]
    assert [i["key"] for i in data["short_items"]] == ["turn"]
    assert [m["key"] for m in data["shared_memories"]] == ["t"]
    assert [s["session_id"] for s in data["sessions"]] == [w.thread]
    said = [(m["type"], m["content"]) for m in data["sessions"][0]["messages"]]
    assert said == [("human", "hi"), ("ai", "noted")]
    assert "Oslo" not in out.read_text(encoding="utf-8")

    monkeypatch.delenv("REDIS_URL", raising=False)
    printed = _run("export", "--user", w.user, *w.store_args())
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output)["sessions"] is None


def test_erase_and_export_reach_a_falkordb_graph(
    redis_url: str, key_prefix: str, tmp_path: Path, falkordb_url: str
) -> None:
    user, other = f"fg-{uuid.uuid4().hex[:8]}", f"fo-{uuid.uuid4().hex[:8]}"
    chroma = str(tmp_path / "chroma")
    name = f"{key_prefix}_cli"
    options: dict[str, Any] = {
        "redis_url": redis_url,
        "chroma_path": chroma,
        "key_prefix": key_prefix,
        "graph": {"backend": "falkordb", "url": falkordb_url, "graph_name": name},
    }
    with TieredMemoryStore(**options) as store:
        store.setup()
        store.put(("users", user), "home", {"content": "I live in Porto"})
        store.put(("users", other), "home", {"content": "I live in Oslo"})
    args = ["--chroma-path", chroma, "--key-prefix", key_prefix]
    graph_args = ["--falkordb-url", falkordb_url, "--graph-name", name]

    exported = _run("export", "--user", user, *args, *graph_args)
    assert exported.exit_code == 0, exported.output
    assert [t["object"] for t in json.loads(exported.output)["triples"]] == ["porto"]

    erased = _run("erase", "--user", user, *args, *graph_args, "--json")
    assert erased.exit_code == 0, erased.output
    assert json.loads(erased.output)["counts"]["graph.triples"] == 1
    with TieredMemoryStore(**options) as store:
        assert graph_triples(store, ("users", user)) == []
        assert [r.object for r in graph_triples(store, ("users", other))] == ["oslo"]

    lone = _run("erase", "--user", user, *args, "--graph-name", name)
    assert lone.exit_code == 2 and "--falkordb-url" in _flat(lone.output)


def test_export_and_erase_take_the_same_triples_by_name(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    user, other = f"nm-{uuid.uuid4().hex[:8]}", f"no-{uuid.uuid4().hex[:8]}"
    chroma = str(tmp_path / "chroma")
    options: dict[str, Any] = {"chroma_path": chroma, "key_prefix": key_prefix, "graph": True}
    with TieredMemoryStore(redis_url=redis_url, **options) as store:
        store.put(("users", user), "home", {"content": "I live in Porto"})
        store.put(("kb",), "carol", {"content": f"Carol met {user}"})
        store.put(("users", other), "met", {"content": f"I met {user}", "speaker": other})
    args = ["--chroma-path", chroma, "--key-prefix", key_prefix]

    def exported(*extra: str) -> list[tuple[str, ...]]:
        result = _run("export", "--user", user, *args, *extra)
        assert result.exit_code == 0, result.output
        return [(*t["namespace"], t["object"]) for t in json.loads(result.output)["triples"]]

    assert exported() == [("users", user, "porto")]
    named = exported("--name", user)
    assert named == [("kb", user), ("users", user, "porto")]  # never the other user's
    erased = _run("erase", "--user", user, *args, "--name", user, "--json")
    assert erased.exit_code == 0, erased.output
    assert json.loads(erased.output)["counts"]["graph.triples"] == len(named)
    with TieredMemoryStore(redis_url=redis_url, **options) as store:
        assert [t.object for t in graph_triples(store, ())] == [user]  # the other user's
