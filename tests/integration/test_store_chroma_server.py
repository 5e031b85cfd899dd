"""The long-term tier against a real Chroma server (`chroma run`) through `HttpClient`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import httpx
import pytest
from chromadb.config import Settings

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store.tiers.index_redis import RedisIndex
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings
from tests.net import free_port


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    exe = Path(sys.executable).parent / "chroma"
    if not exe.exists():
        found = shutil.which("chroma")
        assert found, "the chroma CLI (installed with chromadb) is missing"
        exe = Path(found)
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    log = open(path / "server.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [str(exe), "run", "--path", str(path / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, (path / "server.log").read_text()[-2000:]
        assert time.time() < deadline, "chroma server did not start in 60 s"
        time.sleep(0.3)
    yield "127.0.0.1", port
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


def _store(host: str, port: int, prefix: str, redis_url: str, **kwargs: Any) -> TieredMemoryStore:
    client = chromadb.HttpClient(
        host=host, port=port, settings=Settings(anonymized_telemetry=False)
    )
    store = TieredMemoryStore(
        chroma_client=client,
        redis_url=redis_url,
        tiers={"default": "long"},
        key_prefix=prefix,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
        **kwargs,
    )
    store.setup()
    return store


def test_store_over_http_client(
    chroma_server: tuple[str, int], redis_url: str, key_prefix: str
) -> None:
    host, port = chroma_server
    store = _store(host, port, key_prefix, redis_url, scoring={"mode": "similarity"})
    assert isinstance(store.tiers["long"].index, RedisIndex)  # type: ignore[attr-defined]  # documents stay in Chroma
    store.put(("users", "u1"), "a", {"text": "green tea", "n": 1})
    store.put(("users", "u1"), "b", {"text": "black coffee", "n": 2})
    store.put(("users", "u2"), "c", {"text": "tea ceremony", "n": 3}, ttl=10)
    assert store.get(("users", "u1"), "a").value == {"text": "green tea", "n": 1}  # type: ignore[union-attr]
    hits = store.search(("users",), query="green tea", limit=3)
    assert hits[0].key == "a" and hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert [r.key for r in store.search(("users",), filter={"n": {"$gte": 2}})] == ["b", "c"]
    assert store.list_namespaces() == [("users", "u1"), ("users", "u2")]
    store.delete(("users", "u1"), "a")
    assert store.get(("users", "u1"), "a") is None
    store.close()
    # A second client (another process, in real deployments) sees the same data.
    again = _store(host, port, key_prefix, redis_url, scoring={"mode": "similarity"})
    assert again.get(("users", "u2"), "c", refresh_ttl=False).value["n"] == 3  # type: ignore[union-attr]
    assert again.list_namespaces() == [("users", "u1"), ("users", "u2")]
    again.close()


def test_memory_mode_over_http_client_keeps_its_index_in_redis(
    chroma_server: tuple[str, int], redis_url: str, key_prefix: str
) -> None:
    host, port = chroma_server
    store = _store(host, port, key_prefix, redis_url)
    store.put(("m",), "a", {"text": "invoice XK-4471"})
    store.put(("m",), "b", {"text": "green tea"})
    assert [h.key for h in store.search(("m",), query="XK-4471", limit=1)] == ["a"]
    store.close()
    # Another process (a new client) finds the keyword index and the statistics.
    again = _store(host, port, key_prefix, redis_url)
    hits = again.search(("m",), query="XK-4471", filter={"$retrieval": "keyword"}, limit=1)
    assert [h.key for h in hits] == ["a"]
    entry = again.get_memory(("m",), "a")
    assert entry is not None and entry.access_count == 2
    again.close()
