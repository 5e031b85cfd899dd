"""Tests for the `tiered-memory` command line (demo and `bench store`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from tiered_memory_benchmarks.cli_store import _parse_sizes
from tiered_memory_benchmarks.store import LookupEmbeddings, StoreBenchmarkError

runner = CliRunner()


def _last_json_line(output: str) -> dict[str, Any]:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert lines, "no output"
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def test_help_lists_demo_and_bench() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    assert "demo" in result.stdout
    assert "bench" in result.stdout


def test_bench_without_the_benchmarks_installed_names_the_fix() -> None:
    # As if only the package were installed: no distribution adds `tiered-memory` commands.
    script = (
        "import importlib.metadata as m\n"
        "m.entry_points = lambda **kw: m.EntryPoints([])\n"
        "from langgraph_tiered_memory.cli.app import main\n"
        "main()\n"
    )
    root = Path(__file__).resolve().parents[2]
    for args in (["bench", "store", "--sizes", "10"], ["bench", "--help"]):
        result = subprocess.run(
            [sys.executable, "-c", script, *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.strip() == (
            "Error: the benchmarks are not part of the installed package: from a checkout,"
            " pip install -e ./benchmarks"
        )


def test_bench_help_lists_store() -> None:
    result = runner.invoke(app, ["bench", "--help"])
    assert result.exit_code == 0, result.output
    assert "store" in result.stdout


def test_bench_store_json_reports_plausible_figures() -> None:
    result = runner.invoke(
        app,
        [
            "bench",
            "store",
            "--sizes",
            "200",
            "--gets",
            "20",
            "--searches",
            "10",
            "--stores",
            "long,inmemory",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = _last_json_line(result.stdout)
    assert {"benchmark", "config", "environment", "results"} <= data.keys()
    assert data["benchmark"] == "store"
    assert data["config"]["sizes"] == [200]
    rows = {row["store"]: row for row in data["results"]}
    assert set(rows) == {"long", "inmemory"}
    for row in rows.values():
        assert row["status"] == "ok"
        assert row["size"] == 200
        assert row["put_items"] == 200
        assert row["put_per_s"] > 0
        assert row["get_hit_rate"] == 1.0
        for key in ("get_p50_ms", "get_p95_ms", "search_p50_ms", "search_p95_ms"):
            assert row[key] > 0, key  # every call was timed
        assert row["get_p50_ms"] <= row["get_p95_ms"]
        assert row["search_p50_ms"] <= row["search_p95_ms"]
        # 200 items are far too few for HNSW to miss more than one of the top 10, and
        # each query is its source's vector plus small noise, so the source ranks first.
        assert row["recall_at_10"] >= 0.9, row
        assert row["source_at_1"] >= 0.9, row
    # InMemoryStore scans exactly, so it must find the exact top 10 and every source.
    assert rows["inmemory"]["recall_at_10"] == 1.0
    assert rows["inmemory"]["source_at_1"] == 1.0
    # The human-readable table comes before the JSON line.
    assert "recall@10" in result.stdout


def test_bench_store_reports_capped_sizes_instead_of_omitting_them() -> None:
    result = runner.invoke(
        app,
        [
            "bench",
            "store",
            "--sizes",
            "100,200",
            "--gets",
            "5",
            "--searches",
            "3",
            "--stores",
            "inmemory",
            "--max-inmemory",
            "100",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "skipped (cap)" in result.stdout
    rows = {row["size"]: row for row in _last_json_line(result.stdout)["results"]}
    assert rows[100]["status"] == "ok"
    assert rows[200]["status"] == "skipped (cap)"
    assert rows[200]["put_per_s"] is None


def test_bench_store_rejects_unknown_store() -> None:
    result = runner.invoke(app, ["bench", "store", "--stores", "long,mongo"])
    assert result.exit_code == 2
    assert "mongo" in result.output


def test_bench_store_module_example_runs() -> None:
    from tiered_memory_benchmarks import store as bench_store

    doc = bench_store.__doc__ or ""
    code = doc.split("```python", 1)[1].split("```", 1)[0]
    exec(textwrap.dedent(code), {})


def test_parse_sizes_accepts_k_suffix_and_underscores() -> None:
    assert _parse_sizes("1k, 10_000,100000") == [1000, 10000, 100000]


def test_lookup_embeddings_serve_items_and_queries_and_refuse_unknown_texts() -> None:
    vectors = np.eye(3, dtype=np.float32)
    emb = LookupEmbeddings(["a", "b", "c"], vectors)
    emb.add(["q"], np.array([[0.0, 0.6, 0.8]], dtype=np.float32))
    assert emb.embed_documents(["b", "a"]) == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert emb.embed_documents(["q", "c"])[0] == pytest.approx([0.0, 0.6, 0.8])
    assert emb.embed_query("c") == [0.0, 0.0, 1.0]
    with pytest.raises(StoreBenchmarkError, match="unplanned"):
        emb.embed_query("unplanned")


def test_bench_store_reports_a_failing_store_and_exits_non_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    result = runner.invoke(
        app,
        [
            "bench",
            "store",
            "--sizes",
            "50",
            "--gets",
            "5",
            "--searches",
            "3",
            "--stores",
            "short,inmemory",
            "--json",
        ],
    )
    assert result.exit_code == 1, result.output
    rows = {row["store"]: row for row in _last_json_line(result.stdout)["results"]}
    assert rows["short"]["status"].startswith("error: BackendUnavailableError")
    assert rows["inmemory"]["status"] == "ok"


def test_gc_command_dry_run_then_delete(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.cli.app import app
    from tests.fakes import HashingEmbeddings

    path = str(tmp_path / "chroma")
    store = TieredMemoryStore(
        chroma_path=path,
        tiers={"default": "long"},
        index={"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]},
        key_prefix="gcx",
    )
    store.put(("users", "u1"), "junk", {"content": "meh", "importance": 0.05})
    store.put(("users", "u1"), "keep", {"content": "my name is Ana", "importance": 0.9})
    store.close()
    base = ["gc", "--chroma-path", path, "--key-prefix", "gcx", "--dims", "16", "--json"]
    runner = CliRunner()
    dry = runner.invoke(app, [*base, "--dry-run", "--namespace", "users/u1"])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout.strip().splitlines()[-1])
    assert report["dry_run"] is True and [d["id"] for d in report["details"]] == ["junk"]
    real = runner.invoke(app, base)
    assert real.exit_code == 0, real.output
    assert json.loads(real.stdout.strip().splitlines()[-1])["forgotten_count"] == 1
    again = TieredMemoryStore(
        chroma_path=path,
        tiers={"default": "long"},
        index={"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]},
        key_prefix="gcx",
    )
    assert again.get_memory(("users", "u1"), "junk") is None
    assert again.get_memory(("users", "u1"), "keep") is not None
    again.close()
    bad = runner.invoke(app, [*base, "--policy", "nope"])
    assert bad.exit_code != 0 and "policy" in bad.output


def test_gc_command_consolidates_with_the_stores_embeddings(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.cli.app import app

    path = str(tmp_path / "chroma")
    index: Any = {"dims": 384, "embed": "local", "fields": ["content"]}
    store = TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index)
    store.put(("u",), "a", {"content": "Dana plays the cello.", "importance": 0.6})
    store.put(("u",), "b", {"content": "Dana plays the cello!", "importance": 0.8})
    store.put(("u",), "c", {"content": "The boiler was serviced in May.", "importance": 0.7})
    store.close()
    runner = CliRunner()
    base = ["gc", "--chroma-path", path, "--json"]
    refused = runner.invoke(app, [*base, "--consolidate"])
    assert refused.exit_code != 0 and "--embed" in refused.output
    done = runner.invoke(app, [*base, "--consolidate", "--embed", "local"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert [sorted(m["sources"]) for m in report["consolidated"]] == [["a", "b"]]
    again = TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index)
    try:
        merged = again.get_memory(("u",), report["consolidated"][0]["key"])
        assert merged is not None and merged.importance == 0.8
        hits = again.search(("u",), query="who plays the cello?", limit=1)
        assert [h.key for h in hits] == [merged.id]  # embedded like every other memory
    finally:
        again.close()


def test_gc_command_applies_a_budget(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.cli.app import app
    from tests.fakes import HashingEmbeddings

    path = str(tmp_path / "chroma")
    index: Any = {"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]}
    store = TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index)
    for i in range(3):  # equally important: the longest idle decays most
        store.put(("u",), f"k{i}", {"content": f"fact {i}", "importance": 0.5})
    store.close()
    args = ["gc", "--chroma-path", path, "--dims", "16", "--dry-run", "--json"]
    result = CliRunner().invoke(app, [*args, "--max-memories", "1"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(d["id"] for d in report["details"]) == ["k0", "k1"]
    assert all("max_memories 1" in d["reason"] for d in report["details"])


def test_gc_command_refuses_empty_or_malformed_namespaces_and_takes_literal_labels(
    tmp_path: Any,
) -> None:
    import json

    from typer.testing import CliRunner

    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.cli.app import app
    from tests.fakes import HashingEmbeddings

    path = str(tmp_path / "chroma")

    def open_store() -> TieredMemoryStore:
        return TieredMemoryStore(
            chroma_path=path,
            tiers={"default": "long"},
            index={"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]},
            key_prefix="gcn",
        )

    store = open_store()
    store.put(("users", "u1"), "junk", {"content": "meh", "importance": 0.05})
    store.put(("teams", "a/b"), "junk", {"content": "meh", "importance": 0.05})
    store.close()
    base = ["gc", "--chroma-path", path, "--key-prefix", "gcn", "--dims", "16", "--json"]
    runner = CliRunner()
    for bad in ["", "/", "users//u1", "users/", " "]:
        result = runner.invoke(app, [*base, "--namespace", bad])
        assert result.exit_code != 0, bad
        assert "empty" in result.output, result.output
    both = runner.invoke(app, [*base, "--namespace", "users", "--label", "users"])
    assert both.exit_code != 0 and "not both" in both.output
    # Nothing was deleted by the refused runs.
    check = open_store()
    assert check.get_memory(("users", "u1"), "junk") is not None
    check.close()
    labelled = runner.invoke(app, [*base, "--label", "teams", "--label", "a/b"])
    assert labelled.exit_code == 0, labelled.output
    report = json.loads(labelled.stdout.strip().splitlines()[-1])
    assert [(d["namespace"], d["id"]) for d in report["details"]] == [(["teams", "a/b"], "junk")]
    after = open_store()
    assert after.get_memory(("teams", "a/b"), "junk") is None
    assert after.get_memory(("users", "u1"), "junk") is not None
    after.close()


def _flat(text: str) -> str:
    """Help or table text with rich's boxes and line wrapping removed."""
    return " ".join(text.replace("│", " ").split())


def test_bench_store_help_lists_hybrid_and_explains_recall() -> None:
    result = runner.invoke(app, ["bench", "store", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = _flat(result.stdout)
    assert "long, hybrid, short, inmemory, redisstore" in text
    assert "overlap of a search's 10 hits with the exact dense (cosine) top 10" in text
    assert "does not try to match that list" in text


def test_bench_store_output_explains_recall_of_hybrid() -> None:
    args = ["bench", "store", "--sizes", "60", "--gets", "5", "--searches", "5"]
    result = runner.invoke(app, [*args, "--stores", "hybrid", "--json"])
    assert result.exit_code == 0, result.output
    assert [r["store"] for r in _last_json_line(result.stdout)["results"]] == ["hybrid"]
    text = _flat(result.stdout)
    assert "recall@10: overlap of the 10 hits with the exact dense (cosine) top 10" in text
    assert "does not try to match that list" in text


def test_bench_store_masks_urls_in_its_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiered_memory_benchmarks.store as bench_store

    def unreachable(config: Any, console: Any) -> Any:
        raise StoreBenchmarkError("Redis at redis://bench:hunter2@cache:6379/0 refused")

    monkeypatch.setattr(bench_store, "run_store_benchmark", unreachable)
    result = runner.invoke(app, ["bench", "store", "--sizes", "10", "--stores", "short"])
    assert result.exit_code == 2
    assert "hunter2" not in result.output and "redis://bench:***@cache" in _flat(result.output)
