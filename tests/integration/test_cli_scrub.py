"""`tiered-memory scrub-chroma --path DIR`: the operator's step for a stopped Chroma server.

The data directory is written by a Chroma in another process (as a server's is), which
then exits; the command must remove what Chroma leaves of a deleted collection, and
refuse a directory that a process still holds open.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.store.tiers.chroma_scrub import processes_holding

runner = CliRunner()

_WRITE = """
import sys
import chromadb
from chromadb.config import Settings

client = chromadb.PersistentClient(sys.argv[1], settings=Settings(anonymized_telemetry=False))
small = {"hnsw": {"batch_size": 2, "sync_threshold": 4}}
gone = client.create_collection("gone", configuration=small)
gone.add(ids=["a", "b"], embeddings=[[0.5, 0.25, 0.125], [0.75, 0.5, 0.25]],
         documents=[sys.argv[2], sys.argv[2]])
client.create_collection("kept").add(ids=["k"], embeddings=[[1.0, 0.0, 0.0]], documents=["ok"])
# Push the deleted collection's vectors into its HNSW files, as a long-running server does.
for i in range(int(sys.argv[3])):
    gone.upsert(ids=["c"], embeddings=[[0.1 * (i % 7), 0.2, 0.3]], documents=[sys.argv[2]])
client.delete_collection("gone")
"""


def _chroma_dir(tmp_path: Path, marker: str, writes: int = 0) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run(
        [sys.executable, "-c", _WRITE, str(data), marker, str(writes)], check=True, timeout=300
    )
    return data


def _files_with(data: Path, needle: str) -> list[Path]:
    return [p for p in data.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def _segments(data: Path) -> set[str]:
    return {p.parent.name for p in data.glob("*/header.bin")}


def test_scrub_removes_what_a_deleted_collection_left_on_disk(tmp_path: Path) -> None:
    marker = f"mk{uuid.uuid4().hex[:12]}"
    data = _chroma_dir(tmp_path, marker, writes=10)
    assert _files_with(data, marker)  # deleted rows in chroma.sqlite3's free pages
    conn = sqlite3.connect(data / "chroma.sqlite3")
    try:
        live = {str(i) for (i,) in conn.execute("SELECT id FROM segments")}
    finally:
        conn.close()
    orphans = _segments(data) - live
    assert orphans  # Chroma left the deleted collection's HNSW directory behind

    result = runner.invoke(app, ["scrub-chroma", "--path", str(data), "--json"])

    assert result.exit_code == 0, result.output
    done = json.loads(result.output.strip().splitlines()[-1])
    assert done["orphan_segments"] == len(orphans)
    assert _segments(data) & orphans == set()
    assert _files_with(data, marker) == []
    # The other collection's segments are intact.
    assert _segments(data) == live & _segments(data) != set()


def test_scrub_refuses_a_directory_a_process_holds_open(tmp_path: Path) -> None:
    data = _chroma_dir(tmp_path, "m")
    before = (data / "chroma.sqlite3").read_bytes()
    held = sqlite3.connect(data / "chroma.sqlite3")  # as a running server holds it
    try:
        holders = processes_holding(data)
        if holders is None:
            pytest.skip("no /proc: holders cannot be detected here")
        result = runner.invoke(app, ["scrub-chroma", "--path", str(data)])
    finally:
        held.close()
    assert result.exit_code == 2
    assert "stop the Chroma server" in result.output
    assert (data / "chroma.sqlite3").read_bytes() == before  # untouched


@pytest.mark.parametrize("what", ["missing", "not-chroma"])
def test_scrub_explains_a_wrong_path(tmp_path: Path, what: str) -> None:
    path = tmp_path / "nowhere"
    if what == "not-chroma":
        path.mkdir()
    result = runner.invoke(app, ["scrub-chroma", "--path", str(path)])
    assert result.exit_code == 2
    expected = "is not a directory" if what == "missing" else "not a Chroma data directory"
    assert expected in result.output
