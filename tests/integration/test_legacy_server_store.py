"""A store on a Chroma server opened with a legacy `memory_index_path` file.

The fixture (tests/data/legacy/legacy-server.tgz, written by make_server_store.py on the
code of 6da60d7) is a `chroma run` data directory, the memory index file that code kept
beside it, and what it answered. Opening a store of today on a copy of both imports the
file into Redis once: the store then answers as that code did.

The fixture's collections are named by its key prefix "legacy", so the tests use that
prefix and remove its Redis keys, RediSearch index and graph before and after each test.
"""

from __future__ import annotations

import json
import logging
import math
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
import redis
from chromadb.config import Settings

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy import memory_history
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from tests.conftest import delete_keys
from tests.erase_env import ChromaServer
from tests.fakes import Clock, HashingEmbeddings

FIXTURE = Path(__file__).parent.parent / "data" / "legacy" / "legacy-server.tgz"
PREFIX = "legacy"  # the fixture's key prefix (its Chroma collections carry it)
ALICE, BOB = ("users", "alice", "memories"), ("users", "bob", "memories")


def _clean(redis_url: str) -> None:
    """Remove everything a store with the fixture's prefix keeps in Redis."""
    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{PREFIX}:*", count=1000))
        delete_keys(client, [*keys, f"{PREFIX}_graph", f"telemetry{{{PREFIX}_graph}}"])
        if f"{PREFIX}:lt:kw".encode() in client.execute_command("FT._LIST"):
            client.execute_command("FT.DROPINDEX", f"{PREFIX}:lt:kw")
    finally:
        client.close()


class Legacy:
    """A copy of the fixture with its Chroma server running, and stores opened on it."""

    def __init__(self, root: Path, redis_url: str) -> None:
        with tarfile.open(FIXTURE) as tar:
            tar.extractall(root, filter="data")
        self.file = root / "memory-index.sqlite3"
        self.expected: dict[str, Any] = json.loads((root / "expected.json").read_text())
        self.redis_url = redis_url
        self.server = ChromaServer(root)  # serves root/data
        self.server.start()
        self.opened: list[TieredMemoryStore] = []

    def open(self, **options: Any) -> TieredMemoryStore:
        """A store as the generator opened it, on the test Redis (setup done)."""
        client = chromadb.HttpClient(
            host=self.server.host,
            port=self.server.port,
            settings=Settings(anonymized_telemetry=False),
        )
        dims = self.expected["dims"]
        kwargs: dict[str, Any] = {
            "memory_index_path": str(self.file),
            "graph": True,
            **options,
        }
        store = TieredMemoryStore(
            chroma_client=client,
            redis_url=self.redis_url,
            tiers={"default": "long"},
            key_prefix=PREFIX,
            index={"dims": dims, "embed": HashingEmbeddings(dims), "fields": ["content"]},
            clock=Clock(self.expected["now"]),
            **kwargs,
        )
        self.opened.append(store)
        store.setup()
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()
        self.server.stop()


@pytest.fixture
def legacy(tmp_path: Path, redis_url: str) -> Iterator[Legacy]:
    _clean(redis_url)
    made = Legacy(tmp_path, redis_url)
    try:
        yield made
    finally:
        made.close()
        _clean(redis_url)


def _keys(expected: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """(namespace, key) of every memory the fixture wrote, deleted ones too."""
    found = []
    for name in expected["history"]:
        *labels, key = name.split("/")
        found.append((tuple(labels), key))
    return found


def _hits(store: TieredMemoryStore, name: str) -> list[list[Any]]:
    mode, query = name.split(":", 1)
    found = store.search(
        ("users",), query=query, limit=5, filter={"$count_access": False, "$retrieval": mode}
    )
    return [[list(r.namespace), r.key, r.score] for r in found]


def _same_hits(got: list[list[Any]], want: list[list[Any]]) -> None:
    assert [h[:2] for h in got] == [h[:2] for h in want]
    for (*_, x), (*_, y) in zip(got, want, strict=True):
        assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)


def _counts(store: TieredMemoryStore, expected: dict[str, Any]) -> dict[str, list[Any]]:
    counts = {}
    for ns, key in _keys(expected):
        entry = store.get_memory(ns, key)
        if entry is not None:
            last = None if entry.last_accessed is None else entry.last_accessed.timestamp()
            counts[f"{'/'.join(ns)}/{key}"] = [entry.access_count, last]
    return counts


def _history(store: TieredMemoryStore, expected: dict[str, Any]) -> dict[str, list[Any]]:
    return {
        f"{'/'.join(ns)}/{key}": [
            [e.event, e.at, e.actor, e.content_hash] for e in memory_history(store, ns, key)
        ]
        for ns, key in _keys(expected)
    }


def _triples(store: TieredMemoryStore) -> list[list[Any]]:
    return sorted(
        [list(t.namespace), t.subject, t.relation, t.object]
        for t in graph_triples(store, ("users",), limit=1000)
    )


def _answers_as_legacy(store: TieredMemoryStore, expected: dict[str, Any]) -> None:
    """Everything the store answers that counts nothing is what the legacy code answered."""
    for name, want in expected["hits"].items():
        if name.startswith("keyword:"):
            _same_hits(_hits(store, name), want)
    assert _counts(store, expected) == expected["counts"]
    assert _history(store, expected) == expected["history"]
    assert _triples(store) == expected["triples"]


def _stored(store: TieredMemoryStore, ns: tuple[str, ...], key: str) -> bool:
    """Whether the long tier's Redis index holds a memory row for the key."""
    tier: Any = store.tiers["long"]
    return key in tier.index.memory_stats(PREFIX, namespace_id(ns), [key])


def test_a_server_store_opened_with_a_legacy_file_answers_as_the_code_that_wrote_it(
    legacy: Legacy,
) -> None:
    expected = legacy.expected
    store = legacy.open()
    _answers_as_legacy(store, expected)
    # Hybrid hits add dense similarities and memory scoring. The order below the best
    # hit and the scores were recorded under 0.1.0's neighbour smoothing, which 0.2.0
    # replaced (it never moves a memory past the best match): the same best hit, as
    # many hits.
    for name, want in expected["hits"].items():
        if name.startswith("hybrid:"):
            got = _hits(store, name)
            assert len(got) == len(want) and got[0][:2] == want[0][:2]
            assert [h[2] for h in got] == sorted((h[2] for h in got), reverse=True)
    store.close()

    # Opened again (a restart, another replica with the same file): nothing is added.
    again = legacy.open()
    _answers_as_legacy(again, expected)
    for name, value in expected["values"].items():
        *labels, key = name.split("/")
        item = again.get(tuple(labels), key)
        assert item is not None and item.value == value
    assert again.get(BOB, "b2") is None
    counted = _counts(again, expected)
    assert counted == {
        name: [count + 1, expected["now"]] for name, (count, _) in expected["counts"].items()
    }


def test_memories_deleted_since_the_file_was_written_are_not_brought_back(
    legacy: Legacy,
) -> None:
    first = legacy.open(memory_index_path=None)  # a replica without a file opened first
    first.delete(ALICE, "m3")
    first.close()
    assert legacy.expected["counts"]["users/alice/memories/m3"]  # the file holds m3

    store = legacy.open()
    assert not _stored(store, ALICE, "m3")
    assert _stored(store, ALICE, "m4")
    m4 = store.get_memory(ALICE, "m4")
    assert m4 is not None
    assert m4.access_count == legacy.expected["counts"]["users/alice/memories/m4"][0]
    assert [e.event for e in memory_history(store, ALICE, "m3")] == ["add", "deleted"]
    hits = store.search(("users",), query="Quokka", filter={"$count_access": False})
    assert "m3" not in {h.key for h in hits}


def test_triples_of_a_file_opened_without_a_graph_come_with_the_first_open_with_one(
    legacy: Legacy,
) -> None:
    expected = legacy.expected
    plain = legacy.open(graph=None)
    assert plain.graph is None
    assert _counts(plain, expected) == expected["counts"]
    plain.close()

    store = legacy.open()
    assert _triples(store) == expected["triples"]
    assert _counts(store, expected) == expected["counts"]  # counts added once
    assert _history(store, expected) == expected["history"]


def test_a_replica_without_its_file_opens_with_what_chroma_holds(
    legacy: Legacy, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "never-written.sqlite3"
    with caplog.at_level(logging.WARNING, "langgraph_tiered_memory"):
        store = legacy.open(memory_index_path=str(missing))
    assert f"no file at {missing}, nothing to import" in caplog.text
    assert not missing.exists()
    counts = _counts(store, legacy.expected)
    assert counts == {name: [0, None] for name in legacy.expected["counts"]}
    assert memory_history(store, ALICE, "m1") == [] and _triples(store) == []
