"""The store-opening commands of `tiered-memory` on real stores: gc, search, inspect, ingest.

`bench ingest-locomo` (the benchmarks' LoCoMo loader, sharing ingest's writing) is here too.

Stores are embedded Chroma directories written through `TieredMemoryStore` and closed
before the CLI opens them, as a user would after the application stopped.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.cli.app import app

runner = CliRunner()


def _run(*args: str, **kwargs: Any) -> Any:
    return runner.invoke(app, list(args), **kwargs)


def _flat(text: str) -> str:
    """Output with rich's boxes, colours and line wrapping removed."""
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).replace("│", " ").split())


@pytest.fixture
def chroma_dir(tmp_path: Path) -> str:
    """A keyword-ranked store (no embedder) with two users' memories."""
    path = str(tmp_path / "chroma")
    store = TieredMemoryStore(chroma_path=path, tiers={"default": "long"})
    try:
        store.setup()
        store.put(("users", "u1"), "m1", {"content": "My sister Anna lives in Porto."})
        store.put(("users", "u1"), "m2", {"content": "I like green tea.", "importance": 0.9})
        store.put(("users", "u1"), "m3", {"content": "Porto is rainy in winter."})
        store.put(("users", "u2"), "m1", {"content": "Porto football club fan."})
    finally:
        store.close()
    return path


# --------------------------------------------------------------------------- missing paths


def test_gc_refuses_a_missing_chroma_path_unless_told_to_create_it(chroma_dir: str) -> None:
    typo = chroma_dir + "-typo"
    result = _run("gc", "--chroma-path", typo, "--dry-run")
    assert result.exit_code == 2, result.output
    assert "does not exist" in _flat(result.output) and "--create" in _flat(result.output)
    assert "typo" in result.output
    assert not os.path.exists(typo)  # no empty store was made there

    made = _run("gc", "--chroma-path", typo, "--dry-run", "--create", "--json")
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout.strip().splitlines()[-1])["scanned"] == 0
    assert os.path.isdir(typo)

    real = _run("gc", "--chroma-path", chroma_dir, "--dry-run", "--json")
    assert real.exit_code == 0, real.output
    assert json.loads(real.stdout.strip().splitlines()[-1])["scanned"] == 4


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    length=st.integers(1, 300),
    terminal=st.booleans(),  # Rich wraps to the width on a terminal (or FORCE_COLOR in CI)
    columns=st.sampled_from(["80", "160"]),
)
def test_a_file_is_not_a_chroma_directory_even_with_create(
    tmp_path: Path, length: int, terminal: bool, columns: str
) -> None:
    folder = tmp_path.joinpath(*("d" * min(200, length - i) for i in range(0, length, 200)))
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "notes.txt"
    file.write_text("x")
    env = {"TTY_COMPATIBLE": "1" if terminal else "0", "COLUMNS": columns, "FORCE_COLOR": None}
    result = _run("gc", "--chroma-path", str(file), "--create", env=env)
    assert result.exit_code == 2 and "is not a directory" in _flat(result.output)


# --------------------------------------------------------------------------- search


def test_search_shows_hits_with_their_score_breakdown(chroma_dir: str) -> None:
    result = _run(
        "search", "users/u1", "porto", "--chroma-path", chroma_dir, env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if " rel " in line).split()
    assert header == [
        "namespace",
        "key",
        "score",
        "rel",
        "sem",
        "kw",
        "imp",
        "rec",
        "acc",
        "content",
    ]
    with_user = _run("search", "users/u1", "porto", "--chroma-path", chroma_dir, "--user", "u1")
    assert " user " in next(line for line in with_user.stdout.splitlines() if " rel " in line)
    rows = [line for line in result.stdout.splitlines() if "users/" in line]
    assert "Anna lives in Porto" in rows[0] and "users/u2" not in result.stdout
    assert "can exceed 1" in _flat(result.stdout)  # the caption explains the figures

    data = json.loads(
        _run("search", "users", "porto", "--chroma-path", chroma_dir, "--json").stdout
    )
    assert data["namespace"] == ["users"] and data["query"] == "porto"
    top = data["hits"][0]
    assert top["breakdown"]["keyword_rank"] == 1 and top["breakdown"]["semantic_rank"] is None
    assert set(top["breakdown"]) >= {"relevance", "importance", "recency", "access", "user"}
    assert {tuple(h["namespace"]) for h in data["hits"]} >= {("users", "u1"), ("users", "u2")}
    assert top["score"] == pytest.approx(top["breakdown"]["score"])


def test_search_shows_the_time_factor_when_the_query_asks_when(chroma_dir: str) -> None:
    with TieredMemoryStore(chroma_path=chroma_dir, tiers={"default": "long"}) as store:
        store.put(("users", "u1"), "m4", {"content": "Anna moved to Porto in 2019."})
    # m4 states a time; the other memories about Anna and Porto do not.
    query = "when did Anna move to Porto"
    wide = {"COLUMNS": "200"}
    result = _run("search", "users/u1", query, "--chroma-path", chroma_dir, env=wide)
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if " rel " in line).split()
    assert header[-2:] == ["time", "content"]
    assert "time (shown when the query asks when" in _flat(result.stdout)
    data = json.loads(
        _run("search", "users/u1", query, "--chroma-path", chroma_dir, "--json").stdout
    )
    times = {h["key"]: h["breakdown"]["time"] for h in data["hits"]}
    assert times["m4"] == 1.0 and times["m1"] == 0.0
    plain = _run("search", "users/u1", "porto", "--chroma-path", chroma_dir, env=wide)
    assert " time " not in next(line for line in plain.stdout.splitlines() if " rel " in line)


def test_search_with_an_embedder_and_a_user_ranks_contextually(tmp_path: Path) -> None:
    path = str(tmp_path / "chroma")
    index: Any = {"dims": 384, "embed": "local", "fields": ["content"]}
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index) as store:
        store.put(("users", "u1"), "home", {"content": "My sister Anna lives in Porto."})
        store.put(("users", "u1"), "tea", {"content": "I like green tea."})
    args = ["search", "users", "where does Anna live?", "--chroma-path", path, "--embed", "local"]
    data = json.loads(_run(*args, "--user", "u1", "--json").stdout)
    top = data["hits"][0]
    assert top["key"] == "home" and top["breakdown"]["semantic_rank"] == 1
    assert top["breakdown"]["user"] == 1.0  # the user's own namespace
    refused = _run("search", "users", "x", "--chroma-path", path, "--retrieval", "semantic")
    assert refused.exit_code == 2 and "--embed" in refused.output


def test_search_counts_no_access(chroma_dir: str) -> None:
    for _ in range(2):
        assert _run("search", "users/u1", "porto", "--chroma-path", chroma_dir).exit_code == 0
    with TieredMemoryStore(chroma_path=chroma_dir, tiers={"default": "long"}) as store:
        entry = store.get_memory(("users", "u1"), "m1")
    assert entry is not None and entry.access_count == 0


def test_search_refuses_a_missing_store_and_bad_namespaces(chroma_dir: str) -> None:
    typo = chroma_dir + "-typo"
    missing = _run("search", "users/u1", "porto", "--chroma-path", typo)
    assert missing.exit_code == 2 and "does not exist" in _flat(missing.output)
    assert "--create" not in missing.output  # a read-only command offers no --create
    assert not os.path.exists(typo)
    bad = _run("search", "users//u1", "porto", "--chroma-path", chroma_dir)
    assert bad.exit_code == 2 and "empty label" in bad.output
    none = _run("search", "users/u9", "porto", "--chroma-path", chroma_dir)
    assert none.exit_code == 0 and "no memories under users/u9" in none.stdout


# --------------------------------------------------------------------------- inspect


def test_inspect_lists_namespaces_and_memories_with_their_statistics(chroma_dir: str) -> None:
    with TieredMemoryStore(chroma_path=chroma_dir, tiers={"default": "long"}) as store:
        store.get(("users", "u1"), "m3")  # one access, counted by the store
    data = json.loads(_run("inspect", "--chroma-path", chroma_dir, "--json").stdout)
    assert data["sessions"] is None and data["memory_count"] == 4
    spaces = {tuple(n["namespace"]): n for n in data["namespaces"]}
    assert set(spaces) == {("users", "u1"), ("users", "u2")}
    assert spaces["users", "u1"]["memories"] == 3 and spaces["users", "u1"]["accesses"] == 1
    assert spaces["users", "u1"]["mean_importance"] == pytest.approx((0.5 + 0.9 + 0.5) / 3)
    assert spaces["users", "u1"]["last_access_s"] is not None
    assert spaces["users", "u2"]["last_access_s"] is None
    top = data["memories"][0]  # most accessed first
    assert (top["key"], top["access_count"]) == ("m3", 1)
    assert top["content"] == "Porto is rainy in winter." and top["age_s"] >= 0
    again = json.loads(_run("inspect", "--chroma-path", chroma_dir, "--json").stdout)
    assert again["memories"][0]["access_count"] == 1  # inspecting counts no access

    only = json.loads(
        _run("inspect", "--namespace", "users/u2", "--chroma-path", chroma_dir, "--json").stdout
    )
    assert [n["namespace"] for n in only["namespaces"]] == [["users", "u2"]]
    table = _run("inspect", "--chroma-path", chroma_dir, "--limit", "1", env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    text = _flat(table.stdout)
    assert "Namespaces (2)" in text and "Memories: 1 of 4, most accessed first" in text
    assert "users/u1 3 1 0.63" in text and "raise --limit" in text


def test_inspect_reads_a_store_written_with_embeddings(tmp_path: Path) -> None:
    path = str(tmp_path / "chroma")
    index: Any = {"dims": 16, "embed": lambda texts: [[1.0] * 16 for _ in texts]}
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index) as store:
        store.put(("notes",), "n1", {"content": "buy milk"})
    data = json.loads(_run("inspect", "--chroma-path", path, "--json").stdout)
    assert [m["content"] for m in data["memories"]] == ["buy milk"]
    hits = json.loads(_run("search", "notes", "milk", "--chroma-path", path, "--json").stdout)
    assert [h["key"] for h in hits["hits"]] == ["n1"]  # keyword search, nothing embedded


def test_inspect_shows_sessions_from_redis_and_masks_the_url(
    chroma_dir: str, redis_url: str
) -> None:
    import uuid

    import redis

    from langgraph_tiered_memory.checkpoint.registry import SessionRegistry

    prefix = "c16" + uuid.uuid4().hex[:8]
    user, password = f"u{prefix}", "s3cret-pw"
    client = redis.Redis.from_url(redis_url)
    client.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "+@all")
    registry = SessionRegistry(client, key_prefix=prefix, ttl=3600)
    try:
        registry.touch("thread-a", user_id="u1", messages=4)
        registry.touch("thread-b", user_id="u2", messages=1)
        registry.touch("thread-b", user_id="u3")
        secret_url = redis_url.replace("redis://", f"redis://{user}:{password}@", 1)
        base = ["inspect", "--chroma-path", chroma_dir, "--session-prefix", prefix]
        data = json.loads(_run(*base, "--json", env={"REDIS_URL": secret_url}).stdout)
        assert data["redis"] == secret_url.replace(password, "***")
        sessions = {s["session_id"]: s for s in data["sessions"]}
        assert set(sessions) == {"thread-a", "thread-b"}
        assert sessions["thread-a"]["user_id"] == "u1" and sessions["thread-a"]["messages"] == 4
        assert sessions["thread-b"]["participants"] == ["u3"]
        assert 0 < sessions["thread-a"]["ttl_s"] <= 3600
        table = _run(*base, "--redis-url", secret_url, env={"COLUMNS": "200"})
        assert table.exit_code == 0, table.output
        assert password not in table.output and "***" in table.output
        assert "thread-a u1 - 4 active" in _flat(table.stdout)

        wrong = secret_url.replace(password, "wrong-pw")
        refused = _run(*base, "--redis-url", wrong)
        assert refused.exit_code == 2 and "wrong-pw" not in refused.output
        assert refused.stderr.startswith("Error: Redis at redis://") and "***" in refused.stderr
    finally:
        for key in client.scan_iter(match=f"{prefix}:*"):
            client.delete(key)
        client.execute_command("ACL", "DELUSER", user)
        client.close()


def test_inspect_refuses_a_missing_store(chroma_dir: str) -> None:
    typo = chroma_dir + "-typo"
    result = _run("inspect", "--chroma-path", typo)
    assert result.exit_code == 2 and "does not exist" in _flat(result.output)
    assert not os.path.exists(typo)


# --------------------------------------------------------------------------- ingest


def _jsonl(path: Path, *values: Any) -> str:
    path.write_text("".join(json.dumps(v) + "\n" for v in values) + "\n")
    return str(path)


def test_ingest_jsonl_creates_a_store_only_with_create_and_writes_in_batches(
    tmp_path: Path,
) -> None:
    src = _jsonl(
        tmp_path / "m.jsonl",
        {"content": "I like green tea.", "importance": 0.8},
        {"content": "Anna lives in Porto.", "key": "anna", "memory_type": "fact"},
        *({"content": f"note {i}"} for i in range(5)),
    )
    path = str(tmp_path / "new-store")
    base = ["ingest", src, "--namespace", "users/u1", "--chroma-path", path]
    refused = _run(*base)
    assert refused.exit_code == 2 and "--create" in _flat(refused.output)
    assert not os.path.exists(path)

    done = _run(*base, "--create", "--batch-size", "3", "--json")
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["memories"] == 7 and summary["format"] == "jsonl"
    assert summary["namespaces"] == [["users", "u1"]] and summary["embedded"] is False
    assert _run(*base, "--json").exit_code == 0  # again: hashed keys write each memory once
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}) as store:
        items = store.search(("users", "u1"), limit=100)
        anna = store.get_memory(("users", "u1"), "anna")
    assert len(items) == 7
    assert anna is not None and anna.memory_type == "fact" and "key" not in anna.metadata
    tea = next(i for i in items if i.value["content"] == "I like green tea.")
    assert tea.key.startswith("m-") and tea.value["importance"] == 0.8
    hits = json.loads(_run("search", "users/u1", "porto", "--chroma-path", path, "--json").stdout)
    assert hits["hits"][0]["key"] == "anna"


def test_ingest_embeds_with_embed_and_shows_a_summary(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "m.jsonl", {"content": "My sister Anna lives in Porto."})
    path = str(tmp_path / "chroma")
    args = ["ingest", src, "--namespace", "u", "--chroma-path", path, "--create"]
    result = _run(*args, "--embed", "local")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ingested 1 memories (jsonl) into u in ")
    again = _run(*args)  # the store now holds embeddings: writing without them is refused
    assert again.exit_code == 2 and "--embed" in _flat(again.output)
    query = ["search", "u", "where is Anna's home?", "--chroma-path", path, "--embed", "local"]
    hits = json.loads(_run(*query, "--json").stdout)["hits"]
    assert hits[0]["breakdown"]["semantic_rank"] == 1  # embedded on the way in


def test_ingest_refuses_bad_lines_before_writing_anything(tmp_path: Path) -> None:
    path = str(tmp_path / "chroma")
    cases = {
        '{"content": "ok"}\nnot json\n': "m.jsonl:2 is not JSON",
        '{"content": "ok"}\n["a list"]\n': "m.jsonl:2 is not a JSON object",
        '{"text": "no content"}\n': "m.jsonl:1 has no 'content' string",
        '{"content": "x", "key": 5}\n': "'key' must be a non-empty string",
    }
    for text, message in cases.items():
        (tmp_path / "m.jsonl").write_text(text)
        args = ["ingest", str(tmp_path / "m.jsonl"), "--namespace", "u", "--chroma-path", path]
        result = _run(*args, "--create")
        assert result.exit_code == 2 and message in _flat(result.output), result.output
    bad = _jsonl(tmp_path / "imp.jsonl", {"content": "a"}, {"content": "b", "importance": 7})
    args = ["ingest", bad, "--namespace", "u", "--chroma-path", path, "--create"]
    result = _run(*args, "--batch-size", "1")  # memory fields are checked up front too
    assert result.exit_code == 2 and "imp.jsonl:2: " in _flat(result.output)
    assert not os.path.exists(path)  # refused before the store was opened


def _locomo_file(tmp_path: Path) -> str:
    def turn(dia_id: str, speaker: str, text: str) -> dict[str, str]:
        return {"dia_id": dia_id, "speaker": speaker, "text": text}

    samples = [
        {
            "sample_id": "conv-1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [turn("D1:1", "Ann", "I adopted a cat."), turn("D1:2", "Bo", "Nice!")],
                "session_2_date_time": "10:00 am on 9 May, 2023",
                "session_2": [turn("D2:1", "Ann", "The cat is called Miso.")],
            },
            "qa": [],
        },
        {
            "sample_id": "conv-2",
            "conversation": {
                "session_1_date_time": "9:00 am on 1 June, 2023",
                "session_1": [turn("D1:1", "Cy", "I run marathons.")],
            },
        },
    ]
    src = tmp_path / "locomo.json"
    src.write_text(json.dumps(samples))
    return str(src)


def test_bench_ingest_locomo_puts_each_conversation_in_its_own_namespace(tmp_path: Path) -> None:
    src, path = _locomo_file(tmp_path), str(tmp_path / "chroma")
    args = ["bench", "ingest-locomo", src, "--namespace", "bench/locomo", "--chroma-path", path]
    result = _run(*args, "--create", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["format"] == "locomo" and summary["memories"] == 4
    assert summary["namespaces"] == [["bench", "locomo", "conv-1"], ["bench", "locomo", "conv-2"]]
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}) as store:
        miso = store.get_memory(("bench", "locomo", "conv-1"), "D2:1")
    assert miso is not None and miso.content == 'Ann said, "The cat is called Miso."'
    assert miso.occurred_at is not None and miso.occurred_at.day == 9


def test_ingest_refuses_locomo_and_names_the_benchmarks_command(tmp_path: Path) -> None:
    src, path = _locomo_file(tmp_path), str(tmp_path / "chroma")
    args = ["ingest", src, "--namespace", "bench/locomo", "--chroma-path", path, "--create"]
    for extra in ([], ["--format", "locomo"]):  # detected from the JSON list, or asked for
        result = _run(*args, *extra)
        assert result.exit_code == 2, result.output
        assert "tiered-memory bench ingest-locomo" in _flat(result.output)
        assert "pip install -e ./benchmarks" in _flat(result.output)
    wrong = _run(*args, "--format", "jsonl")
    assert wrong.exit_code == 2 and "is not a JSON object" in _flat(wrong.output)
    assert not os.path.exists(path)  # refused before the store was opened


def test_ingest_imports_a_langchain_chroma_collection(tmp_path: Path) -> None:
    from langchain_chroma import Chroma

    from langgraph_tiered_memory.embeddings import LocalE5Embeddings

    lc_dir = tmp_path / "lc"
    kb = Chroma(
        collection_name="company-kb",
        embedding_function=LocalE5Embeddings(),
        persist_directory=str(lc_dir),
    )
    kb.add_texts(["The office is in Lisbon.", "Support answers within a day."], ids=["o", "s"])
    path = str(tmp_path / "chroma")
    args = ["ingest", "--from-langchain-chroma", str(lc_dir), "--namespace", "kb"]
    args += ["--chroma-path", path, "--create", "--embed", "local"]
    missing = _run(*args[:-2], "--collection", "nope")
    assert missing.exit_code == 2 and "no collection 'nope'" in _flat(missing.output)
    result = _run(*args, "--collection", "company-kb", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["read"], summary["written"], summary["reused_vectors"]) == (2, 2, True)
    again = json.loads(
        _run(*args, "--collection", "company-kb", "--json").stdout.strip().splitlines()[-1]
    )
    assert (again["written"], again["unchanged"]) == (0, 2)  # idempotent
    query = ["search", "kb", "where is the office?", "--chroma-path", path, "--embed", "local"]
    hits = json.loads(_run(*query, "--json").stdout)["hits"]
    assert "Lisbon" in hits[0]["content"]
    both = _run("ingest", str(lc_dir), "--from-langchain-chroma", str(lc_dir), "--namespace", "kb")
    assert both.exit_code != 0
