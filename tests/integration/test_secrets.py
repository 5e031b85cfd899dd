"""Redis passwords never appear in CLI output, error messages, reprs or log records."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from langgraph_tiered_memory import BackendUnavailableError, TieredMemoryStore
from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.cli.app import app
from langgraph_tiered_memory.embedded.redis import EmbeddedRedis
from tests.net import free_port

PASSWORD = "Pa55-w0rd-zq7"


@pytest.fixture
def protected() -> Iterator[tuple[EmbeddedRedis, str]]:
    """A private server that requires PASSWORD, and the URL that carries it."""
    with EmbeddedRedis(port=free_port()) as server:
        client = redis.Redis(port=server.port)
        client.config_set("requirepass", PASSWORD)
        client.close()
        yield server, f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"


def test_demo_shows_the_redis_url_without_its_password(
    protected: tuple[EmbeddedRedis, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server, url = protected
    monkeypatch.setenv("REDIS_URL", url)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    result = CliRunner().invoke(
        app, ["demo", "--offline", "--chroma-path", str(tmp_path / "chroma")]
    )
    assert result.exit_code == 0, result.output
    assert f"redis://:***@127.0.0.1:{server.port}/0" in result.output
    assert "Session 2" in result.output  # the demo ran against the protected server
    assert PASSWORD not in result.output


def test_a_rejected_password_is_reported_without_it(
    protected: tuple[EmbeddedRedis, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = protected
    wrong = "Wr0ng-secret-xy9"
    url = f"redis://app:{wrong}@127.0.0.1:{server.port}/0"
    store = TieredMemoryStore(
        redis_url=url, tiers={"default": "short"}, chroma_path=str(tmp_path / "c")
    )
    try:
        assert wrong not in repr(store)
        with pytest.raises(BackendUnavailableError, match="credentials") as info:
            store.setup()
        assert wrong not in str(info.value) and wrong not in repr(info.value)
    finally:
        store.close()
    with pytest.raises(BackendUnavailableError, match="credentials") as info:
        RedisSessionSaver(redis_url=url)
    assert wrong not in str(info.value) and wrong not in repr(info.value)
    assert "app:***@" in str(info.value)
    assert wrong not in repr(server) and PASSWORD not in repr(server)


async def test_saver_errors_reprs_and_logs_never_hold_the_password(
    protected: tuple[EmbeddedRedis, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="langgraph_tiered_memory")
    server, url = protected
    async with AsyncRedisSessionSaver.from_conn_string(url, redis_timeout=2) as saver:
        assert PASSWORD not in repr(saver)
        server.stop()
        saver._recorder.submit("t-1", "u1", 1)
        with pytest.raises(BackendUnavailableError) as info:
            await saver.aflush_sessions()
        assert PASSWORD not in str(info.value)
        with pytest.raises(BackendUnavailableError) as info:
            await saver.aget_session("t-1")
        assert PASSWORD not in str(info.value)
        assert f"127.0.0.1:{server.port}" in str(info.value)
        saver._recorder._pending.clear()  # nothing left to write on exit
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "registry" in logged and PASSWORD not in logged
