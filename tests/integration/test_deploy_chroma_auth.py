"""A Chroma server behind token auth: the store's client sends the auth headers.

`chroma run` is put behind a small gateway that answers 401 unless a request carries
`Authorization: Bearer <token>` and the `X-Api-Key` header, as an authenticating
proxy or a managed Chroma does, and forwards the rest.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.errors import BackendUnavailableError, ConfigurationError
from langgraph_tiered_memory.store._backends import chroma_http_client
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings
from tests.integration.test_store_chroma_server import chroma_server  # noqa: F401 (fixture)

TOKEN = "tok-3f9a"
API_KEY = "key-77"


class _Gateway(ThreadingHTTPServer):
    upstream: str
    seen: list[dict[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _Gateway

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _forward(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append(headers)
        if headers.get("authorization") != f"Bearer {TOKEN}" or headers.get("x-api-key") != API_KEY:
            body = json.dumps({"error": "Unauthorized"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else None
        reply = httpx.request(
            self.command,
            self.server.upstream + self.path,
            content=data,
            headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
            timeout=30,
        )
        self.send_response(reply.status_code)
        self.send_header("Content-Type", reply.headers.get("content-type", "application/json"))
        self.send_header("Content-Length", str(len(reply.content)))
        self.end_headers()
        self.wfile.write(reply.content)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward


@pytest.fixture(scope="module")
def gateway(chroma_server: tuple[str, int]) -> Iterator[_Gateway]:  # noqa: F811
    host, port = chroma_server
    server = _Gateway(("127.0.0.1", 0), _Handler)
    server.upstream = f"http://{host}:{port}"
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join(timeout=10)
    server.server_close()


def _url(gateway: _Gateway) -> str:
    return f"http://127.0.0.1:{gateway.server_address[1]}"


def _store(client: object, prefix: str, redis_url: str) -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_client=client,
        tiers={"default": "long"},
        key_prefix=prefix,
        redis_url=redis_url,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    store.setup()
    return store


def test_store_works_through_a_token_gateway(
    gateway: _Gateway, redis_url: str, key_prefix: str
) -> None:
    client = chroma_http_client(_url(gateway), token=TOKEN, headers={"X-Api-Key": API_KEY})
    store = _store(client, key_prefix, redis_url)
    store.put(("users", "u1"), "a", {"text": "green tea"})
    assert store.get(("users", "u1"), "a").value == {"text": "green tea"}  # type: ignore[union-attr]
    assert [h.key for h in store.search(("users",), query="green tea", limit=1)] == ["a"]
    store.close()
    assert gateway.seen and all(h["authorization"] == f"Bearer {TOKEN}" for h in gateway.seen)


def test_missing_token_is_refused_with_the_url_masked(gateway: _Gateway) -> None:
    with pytest.raises(BackendUnavailableError, match="Unauthorized") as info:
        chroma_http_client(_url(gateway) + "?token=leak", headers={"X-Api-Key": API_KEY})
    assert "leak" not in str(info.value)


def test_env_selects_the_server_and_its_headers(
    gateway: _Gateway,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_url: str,
    key_prefix: str,
) -> None:
    monkeypatch.delenv("TIERED_MEMORY_CHROMA_PATH", raising=False)
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_URL", _url(gateway))
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_TOKEN", TOKEN)
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_HEADERS", json.dumps({"X-Api-Key": API_KEY}))
    store = TieredMemoryStore(
        tiers={"default": "long"},
        key_prefix=key_prefix,
        redis_url=redis_url,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    before = len(gateway.seen)
    store.put(("docs",), "d", {"text": "served"})
    assert store.get(("docs",), "d").value == {"text": "served"}  # type: ignore[union-attr]
    assert len(gateway.seen) > before  # the long tier went through the gateway
    assert not (Path.cwd() / ".tiered-memory" / "chroma" / key_prefix).exists()
    store.close()

    monkeypatch.setenv("TIERED_MEMORY_CHROMA_HEADERS", "[1]")
    with pytest.raises(ConfigurationError, match="JSON object"):
        TieredMemoryStore(tiers={"default": "long"}, key_prefix="auth3").put(("x",), "k", {})
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_HEADERS", json.dumps({"X-Api-Key": API_KEY}))
    monkeypatch.delenv("TIERED_MEMORY_CHROMA_URL")
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_PORT", str(gateway.server_address[1]))
    host_store = TieredMemoryStore(
        tiers={"default": "long"},
        key_prefix=key_prefix,
        redis_url=redis_url,
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
    )
    assert host_store.get(("docs",), "d").value == {"text": "served"}  # type: ignore[union-attr]
    host_store.close()
    monkeypatch.setenv("TIERED_MEMORY_CHROMA_PATH", str(tmp_path / "c"))
    with pytest.raises(ConfigurationError, match="Both"):
        TieredMemoryStore(tiers={"default": "long"}, key_prefix="auth4")
