"""Sharing one embedded Chroma directory: between key prefixes, stores and processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.errors import ChromaDirectoryInUseError, ConfigurationError
from langgraph_tiered_memory.store.tiers._dirlock import lock_directory
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- prefixes that differ by case

TEXTS = {
    "tm": ["apple orchard in autumn", "apple pie recipe"],
    "TM": ["banana harbor at dawn", "banana bread recipe"],
    "Tm": ["cherry volcano eruption", "cherry jam recipe"],
}
WORD = {"tm": "apple", "TM": "banana", "Tm": "cherry"}
NS = ("users", "u1")


def _memory_store(path: Path, prefix: str, clock: Clock) -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": "long"},
        clock=clock,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    )
    store.setup()
    return store


def _write(store: TieredMemoryStore, prefix: str) -> None:
    for i, text in enumerate(TEXTS[prefix]):
        # The same keys in the same namespace for every prefix.
        store.put(NS, f"m{i}", {"content": text})
    store.put(("only", prefix), "k", {"content": f"{WORD[prefix]} alone"})


def _check_isolated(stores: dict[str, TieredMemoryStore]) -> None:
    for prefix, store in stores.items():
        for other, word in WORD.items():
            hits = store.search_memories(("users",), word, retrieval="keyword")
            if other == prefix:
                assert {h.entry.content for h in hits} == set(TEXTS[prefix]), prefix
            else:
                assert hits == [], (prefix, word, [h.entry.content for h in hits])
            # Hybrid: dense finds the store's own memories, but no keyword score may
            # come from another prefix's text.
            hybrid = store.search_memories(("users",), word, retrieval="hybrid")
            assert {h.entry.content for h in hybrid} <= set(TEXTS[prefix])
            if other != prefix:
                assert all(h.breakdown.keyword is None for h in hybrid), (prefix, word)
        for i, text in enumerate(TEXTS[prefix]):
            item = store.get(NS, f"m{i}")
            assert item is not None and item.value == {"content": text}
            entry = store.get_memory(NS, f"m{i}")
            assert entry is not None and entry.content == text
        assert sorted(store.list_namespaces()) == sorted([NS, ("only", prefix)])
        assert store.list_namespaces(prefix=("only",)) == [("only", prefix)]


def _access_counts(store: TieredMemoryStore) -> list[int]:
    out = []
    for i in range(2):
        entry = store.get_memory(NS, f"m{i}")
        assert entry is not None
        out.append(entry.access_count)
    return out


def _keyword_scores(store: TieredMemoryStore, query: str) -> dict[str, float]:
    hits = store.search_memories(("users",), query, retrieval="keyword")
    return {h.entry.id: float(h.breakdown.keyword or 0.0) for h in hits}


def test_prefixes_that_differ_only_by_case_keep_their_own_data(tmp_path: Path) -> None:
    clock = Clock()
    stores = {p: _memory_store(tmp_path / "shared", p, clock) for p in TEXTS}
    for prefix, store in stores.items():
        _write(store, prefix)
    _check_isolated(stores)
    # BM25 statistics come from the store's own memories only: the same scores as in a
    # directory of its own.
    for prefix, store in stores.items():
        alone = _memory_store(tmp_path / prefix.encode().hex(), prefix, clock)
        _write(alone, prefix)
        for query in (WORD[prefix], "recipe"):
            expected = _keyword_scores(alone, query)
            assert expected and _keyword_scores(store, query) == pytest.approx(expected)
        alone.close()
    # Access statistics are counted per prefix: search one store only.
    before = {p: _access_counts(s) for p, s in stores.items()}
    stores["TM"].search_memories(("users",), "banana", retrieval="keyword")
    after = {p: _access_counts(s) for p, s in stores.items()}
    assert after["tm"] == before["tm"] and after["Tm"] == before["Tm"]
    assert after["TM"] == [n + 1 for n in before["TM"]]
    # Deleting in one store leaves the others' memories and keyword entries alone.
    stores["Tm"].delete(NS, "m1")
    assert stores["Tm"].get(NS, "m1") is None
    assert stores["tm"].get(NS, "m1") is not None and stores["TM"].get(NS, "m1") is not None
    assert len(stores["TM"].search_memories(("users",), "recipe", retrieval="keyword")) == 1
    for store in stores.values():
        store.close()
    reopened = {p: _memory_store(tmp_path / "shared", p, clock) for p in TEXTS}
    reopened["Tm"].put(NS, "m1", {"content": TEXTS["Tm"][1]})
    _check_isolated(reopened)
    for store in reopened.values():
        store.close()


# ---------------------------------------------------------------- several stores, one process


def test_several_stores_in_one_process_share_the_directory(tmp_path: Path) -> None:
    first = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    second = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    first.put(("a",), "k", {"v": 1})
    second.put(("a",), "j", {"v": 2})
    assert first.get(("a",), "j") is not None and second.get(("a",), "k") is not None
    first.close()
    # The process still holds the directory for the second store.
    assert "error" in _child(tmp_path, "try")
    second.put(("a",), "i", {"v": 3})
    assert second.get(("a",), "k") is not None
    second.close()
    assert _child(tmp_path, "try") == {"ok": {"by": "try"}}


def test_a_caller_supplied_client_takes_no_lock(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    store = TieredMemoryStore(chroma_client=client, tiers={"default": "long"})
    store.put(("a",), "k", {"v": 1})
    assert not (tmp_path / "tiered-memory.lock").exists()
    lock = lock_directory(str(tmp_path))  # nothing else holds it
    lock.release()
    store.close()
    names = [c.name for c in client.list_collections()]  # the caller's client stays open
    assert any(n.startswith("tm-ns-bucket-") for n in names)


# ---------------------------------------------------------------- several processes

_CHILD = r"""
import json, sys, time
from langgraph_tiered_memory import TieredMemoryStore
path, mode = sys.argv[1], sys.argv[2]
store = TieredMemoryStore(
    chroma_path=path, tiers={"default": "long"}, scoring={"mode": "similarity"}
)
try:
    store.put(("shared",), mode, {"by": mode})
    got = store.get(("shared",), mode)
except Exception as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}), flush=True)
    sys.exit(0)
print(json.dumps({"ok": got.value}), flush=True)
if mode == "hold":
    time.sleep(300)
store.close()
"""


def _spawn(path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _child(path: Path, mode: str) -> dict[str, Any]:
    """Run a process that opens a store on `path` and writes one item; its outcome."""
    proc = _spawn(path, mode)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[TieredMemoryStore]:
    store = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    store.put(("shared",), "parent", {"by": "parent"})
    yield store
    store.close()


def test_a_second_process_cannot_open_a_directory_in_use(
    tmp_path: Path, holder: TieredMemoryStore
) -> None:
    outcome = _child(tmp_path, "try")
    assert outcome["error"] == "ChromaDirectoryInUseError"
    message = outcome["message"]
    assert str(tmp_path) in message and f"pid {os.getpid()}" in message
    assert "chroma run --path" in message and "chromadb.HttpClient" in message
    assert "redis_url" in message
    assert issubclass(ChromaDirectoryInUseError, ConfigurationError)
    # The parent's store still works, and the child wrote nothing.
    assert holder.get(("shared",), "parent") is not None
    assert holder.get(("shared",), "try") is None


def test_the_directory_is_free_once_the_holder_closes(
    tmp_path: Path, holder: TieredMemoryStore
) -> None:
    assert holder.get(("shared",), "try") is None  # read (and cached) before the child runs
    holder.close()
    assert _child(tmp_path, "try") == {"ok": {"by": "try"}}
    again = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    try:
        # The reopened store sees the child's write, not a stale copy.
        assert again.get(("shared",), "try") is not None
        assert {it.key for it in again.search(("shared",))} == {"parent", "try"}
    finally:
        again.close()


def test_a_killed_process_releases_the_directory(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, "hold")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert json.loads(line) == {"ok": {"by": "hold"}}, proc.stderr.read() if proc.stderr else ""
        store = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
        with pytest.raises(ChromaDirectoryInUseError):
            store.get(("shared",), "hold")
        store.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    store = TieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    try:
        item = store.get(("shared",), "hold")
        assert item is not None and item.value == {"by": "hold"}
    finally:
        store.close()


async def test_the_async_store_holds_the_directory_until_closed(tmp_path: Path) -> None:
    store = AsyncTieredMemoryStore(chroma_path=str(tmp_path), tiers={"default": "long"})
    await store.aput(("shared",), "async", {"by": "async"})
    assert _child(tmp_path, "try")["error"] == "ChromaDirectoryInUseError"
    await asyncio.to_thread(store.close)
    assert _child(tmp_path, "try") == {"ok": {"by": "try"}}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_inherit_the_lock(tmp_path: Path) -> None:
    lock = lock_directory(str(tmp_path))
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 1
            try:
                lock_directory(str(tmp_path))
            except ChromaDirectoryInUseError:
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The child's exit (closing its copy of the descriptor) left the parent's lock.
        assert "error" in _child(tmp_path, "try")
    finally:
        lock.release()
    assert "ok" in _child(tmp_path, "try")
