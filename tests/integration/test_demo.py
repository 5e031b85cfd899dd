"""`tiered-memory demo` runs the memory agent over two sessions and shows all three tiers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from tests.conftest import delete_keys


def _section(out: str, start: str, end: str | None = None) -> str:
    assert start in out, f"{start!r} not in the output:\n{out}"
    rest = out.split(start, 1)[1]
    if end is not None:
        assert end in rest, f"{end!r} not after {start!r} in the output:\n{out}"
        rest = rest.split(end, 1)[0]
    return rest


def _drop_keys(url: str, patterns: list[str]) -> None:
    client = redis.Redis.from_url(url)
    try:
        for pattern in patterns:
            delete_keys(client, list(client.scan_iter(match=pattern, count=1000)))
    finally:
        client.close()


@pytest.fixture(scope="module")
def key_prefix() -> str:
    return "tdemo" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def demo_output(
    redis_url: str, key_prefix: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The output of one offline demo run on the test Redis and a temporary Chroma dir."""
    chroma = tmp_path_factory.mktemp("demo") / "chroma"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REDIS_URL", redis_url)
        env.delenv("OPENAI_API_KEY", raising=False)
        env.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        env.setenv("COLUMNS", "220")  # rich wraps to this width; no truncated rows
        result = CliRunner().invoke(
            app,
            ["demo", "--chroma-path", str(chroma), "--key-prefix", key_prefix, "--ttl", "30"],
        )
    assert result.exit_code == 0, result.output
    out = result.stdout
    threads = set(re.findall(r"alice-session-[12]-[0-9a-f]{6}", out))
    assert len(threads) == 2, out
    yield out
    patterns = [f"*{t}*" for t in threads] + [f"{key_prefix}_session:*", f"{key_prefix}:*"]
    _drop_keys(redis_url, patterns)


def test_session_1_is_summarized_and_the_summary_is_in_redis(demo_output: str) -> None:
    session_1 = _section(demo_output, "Session 1 (thread", "Session 2 (new thread")
    turns = _section(session_1, "Working memory, turn by turn", "Running summary")
    rows = re.findall(
        r"│\s*(\d)\s*│.*?│\s*(\d+) → (\d+)\s*│\s*(\d+) → (\d+)\s*│\s*(yes|no)\s*│", turns
    )
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4], turns
    folded = [r for r in rows if r[5] == "yes"]
    assert folded, f"the summarizer never ran:\n{turns}"
    for _, msgs_before, msgs_after, tokens_before, tokens_after, _ in folded:
        assert int(msgs_after) < int(msgs_before) and int(tokens_after) < int(tokens_before)
        assert int(tokens_before) > 120  # the demo's default budget triggered it
    summary = _section(session_1, "Running summary", "Session in Redis")
    assert "vegetarian" in summary  # the first turn was folded into the summary
    assert "the same text is stored in the session registry in Redis" in summary


def test_the_session_is_shown_in_redis_with_its_ttl(demo_output: str, key_prefix: str) -> None:
    panel = _section(demo_output, "Session in Redis", "Long-term memories in Chroma")
    assert re.search(r"owner\s+alice", panel)
    assert re.search(r"messages\s+4\b", panel)  # 4 kept after summarization
    assert "session TTL       30 min" in panel
    # The registry hash and the checkpoints carry the 30-minute TTL, read from Redis.
    assert re.search(rf"{key_prefix}_session:session\s+1\s+(29m [0-5]\ds|30m 00s)", panel), panel
    assert re.search(r"checkpoint\s+\d+\s+(29m [0-5]\ds|30m 00s)", panel), panel


def test_session_2_recalls_memories_of_session_1_with_their_scores(demo_output: str) -> None:
    session_2 = _section(demo_output, "Session 2 (new thread", "Forgetting: a dry run")
    turn_1 = _section(session_2, "Recalled for turn 1", "Recalled for turn 2")
    recalled = re.findall(
        r"│\s*\d\s*│\s*(.+?)\s*│\s*(turn of session 1|extracted fact)\s*│"
        r"\s*([\d.]+)\s*│\s*([\d.]+)\s*│\s*([\d.]+)\s*│\s*([\d.]+)\s*│\s*([01])\s*│\s*([\d.]+)\s*│"
        r"\s*yes\s*│",
        turn_1,
    )
    contents = " ".join(r[0] for r in recalled)
    assert "vegetarian" in contents and "peanuts" in contents, turn_1
    for _, _, relevance, importance, recency, access, time, score in recalled:
        expected = (
            (float(relevance) + 0.1 * float(importance) + 0.02 * float(recency))
            + 0.005 * float(access)
            + 0.1 * float(time)
        )
        assert abs(float(score) - expected) < 0.002  # the breakdown adds up to the score
    # The (scripted) reply used what was recalled.
    assert "vegetarian, has no peanuts" in turn_1
    explanation = _section(session_2, "How a recalled memory is scored")
    assert "score = 1 × relevance + 0.1 × importance" in explanation
    assert "Why scores can exceed 1.0" in explanation
    sessions = _section(session_2, "alice's sessions")
    assert len(re.findall(r"alice-session-[12]-[0-9a-f]{6}\s*│\s*active", sessions)) == 2


def test_the_forgetting_dry_run_lists_decay_deletions_and_merges(demo_output: str) -> None:
    forgetting = _section(demo_output, "Forgetting: a dry run 120 days ahead")
    decay = _section(forgetting, "decay now and 120 days", "would delete")
    assert re.search(r"I'm vegetarian, no meat and no fish.*│\s*keep\s*│", decay)
    assert re.search(r"delete \(decay 0\.8\d > 0\.8\)", decay)
    deleted = _section(forgetting, "would delete", "would merge")
    # Session 2's turns were never accessed: 120 days on, their decay passes 0.8.
    assert re.search(r"Is there a place nearby.*decay 0\.8\d > 0\.8", deleted), deleted
    assert "vegetarian" not in deleted
    merged = _section(forgetting, "would merge", "Done in")
    # The theme gathers what the user said about food, the vegetarian turn among them.
    assert re.search(r"theme 'what I eat'\s*│", merged), merged
    assert "I'm ve" in merged, merged
    assert "Done in" in demo_output


def test_the_installed_command_runs_offline_on_an_embedded_redis(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "OPENAI_API_KEY")}
    env.update({"HF_HUB_DISABLE_PROGRESS_BARS": "1", "COLUMNS": "200"})
    script = "from langgraph_tiered_memory.cli.app import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", script, "demo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "scripted offline model" in out
    assert "(temporary)" in out and "The embedded Redis stopped." in out
    assert "Recalled for turn 1" in out and "would delete" in out
    assert list(tmp_path.iterdir()) == []  # nothing left in the working directory
