"""Support of the raw-scan erase tests: a Chroma server, the test environment, scans.

`Env` is one store and one session saver on the test Redis with every directory whose
bytes the tests read; the functions scan all of it for a user (`tests/erase_scan.py`)
and snapshot what the public API shows of a user.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.checkpoint import RedisSessionSaver
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy.erasure import ErasureReceipt
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from tests.conftest import DIMS
from tests.erase_scan import (
    Needles,
    Trace,
    chroma_vectors,
    describe,
    redis_vectors,
    scan_chroma,
    scan_files,
    scan_redis,
    scan_sqlite,
    scan_vectors,
    split_vectors,
    sqlite_files,
    sqlite_vectors,
)
from tests.erase_writes import SHARED_NS, TEAM_NS, Person
from tests.fakes import Clock
from tests.net import free_port


class ChromaServer:
    """A `chroma run` server on a data directory; it can be stopped and started again."""

    def __init__(self, root: Path) -> None:
        exe = Path(sys.executable).parent / "chroma"
        if not exe.exists():
            found = shutil.which("chroma")
            assert found, "the chroma CLI (installed with chromadb) is missing"
            exe = Path(found)
        self.exe, self.root, self.data = exe, root, root / "data"
        self.host, self.port = "127.0.0.1", free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.root / "server.log", "a") as log:
            self.proc = subprocess.Popen(
                [
                    str(self.exe),
                    "run",
                    "--path",
                    str(self.data),
                    "--host",
                    self.host,
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.time() + 60
        while True:
            try:
                url = f"http://{self.host}:{self.port}/api/v2/heartbeat"
                if httpx.get(url, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, (self.root / "server.log").read_text()[-2000:]
            assert time.time() < deadline, "chroma server did not start in 60 s"
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None

    def scrub(self) -> None:
        """The operator's step on the server host (privacy docs), with the server stopped:
        `tiered-memory scrub-chroma --path DIR`."""
        from typer.testing import CliRunner

        from langgraph_tiered_memory.cli.app import app

        done = CliRunner().invoke(app, ["scrub-chroma", "--path", str(self.data), "--json"])
        assert done.exit_code == 0, done.output


@dataclass
class Env:
    """A store and a saver on one Redis, and every directory whose bytes are scanned."""

    redis_urls: list[str]
    """The store's Redis, and FalkorDB's when the graph lives there."""
    store: TieredMemoryStore
    saver: RedisSessionSaver
    chroma: Any
    roots: list[Path]
    reopen: Callable[[], TieredMemoryStore]
    clock: Clock
    server: ChromaServer | None = None
    """The Chroma server (its data directory is among `roots`), if any."""


def needles_of(env: Env, p: Person) -> Needles:
    """The user's id, marker, and the ids of each of the user's namespaces."""
    named = {"uid": p.uid, "marker": p.marker}
    for ns in namespaces_of(env.store, p):
        named[f"nsid of {ns}"] = namespace_id(ns)
    return Needles(**named)


def vectors_of(env: Env, p: Person) -> set[bytes]:
    """Every stored vector of `p`'s namespaces: Chroma records, SQLite copies, Redis."""
    nsids = [namespace_id(ns) for ns in namespaces_of(env.store, p)]
    found = chroma_vectors(env.chroma, nsids)
    for root in env.roots:
        found |= sqlite_vectors(root, nsids)
    blobs = {b for url in env.redis_urls for b in redis_vectors(url, nsids)}
    return split_vectors(found | blobs, DIMS)


def namespaces_of(store: TieredMemoryStore, p: Person) -> list[tuple[str, ...]]:
    return [ns for ns in store.list_namespaces(limit=10_000) if p.uid in ns]


def scan_everything(
    env: Env, needles: Needles, *, files: bool = True, apis: bool = True
) -> list[Trace]:
    """Every SQLite file, the raw bytes of every file, then Redis and the Chroma API (`apis`).

    Files come first: reading an embedded Chroma through its API may load an HNSW index
    and persist it again, and Chroma fills the unused capacity of what it writes with
    bytes of the reading process's heap, which here holds the needles themselves. Those
    bytes would come from this scan, not from what erase left.
    """
    found: list[Trace] = []
    for root in env.roots:
        for path in sqlite_files(root):
            found += scan_sqlite(path, needles)
        if files:
            found += scan_files(root, needles, skip=("server.log",))
    if apis:
        for url in env.redis_urls:
            found += scan_redis(url, needles)
        found += scan_chroma(env.chroma, needles)
    return found


def scan_on_disk(
    env: Env, needles: Needles, vectors: set[bytes]
) -> tuple[list[Trace], list[Trace]]:
    """Traces in every SQLite file and file byte, and where the `vectors` survive.

    A Chroma server's files are read as the privacy docs' operator step leaves them:
    its SQLite tables as the running server keeps them, then its raw bytes after the
    server is stopped and `tiered-memory scrub-chroma --path DIR` has run (it is
    started again afterwards).
    """
    if env.server is None:
        found = scan_everything(env, needles, apis=False)
        return found, scan_vectors(vectors, env.redis_urls, env.roots)
    server = env.server
    found = [t for path in sqlite_files(server.data) for t in scan_sqlite(path, needles)]
    for root in env.roots:
        if root != server.data:
            found += [t for path in sqlite_files(root) for t in scan_sqlite(path, needles)]
            found += scan_files(root, needles)
    server.stop()
    try:
        server.scrub()
        found += [
            Trace(
                f"{t.where} (chroma server, after `tiered-memory scrub-chroma`)",
                t.needle,
                t.context,
            )
            for t in scan_files(server.data, needles)
        ]
        vectors_left = scan_vectors(vectors, env.redis_urls, env.roots)
    finally:
        server.start()
    return found, vectors_left


def places(traces: list[Trace]) -> set[tuple[str, str, str]]:
    """The traces without row numbers (rows shift when a row is added before them)."""
    return {(re.sub(r" row \d+", "", t.where), t.needle, t.context) for t in traces}


def kinds(traces: list[Trace]) -> set[str]:
    kinds = set()
    for t in traces:
        if t.where.startswith("redis"):
            kinds.add("redis")
        elif t.where.startswith("chroma"):
            kinds.add("chroma")
        elif t.where.startswith("sqlite"):
            kinds.add("sqlite")
    return kinds


def snapshot(env: Env, p: Person, erased: Person | None = None) -> dict[str, Any]:
    """What the public API shows of `p` (to check another user survives whole).

    Shared memories that also hold the words of the `erased` user (merged by
    consolidation) are left out: erasing that user rightly removes them.
    """
    store, saver = env.store, env.saver
    items = {}
    for ns in namespaces_of(store, p):
        for it in store.search(ns, limit=1000):
            if it.namespace == ns:
                items[(ns, it.key)] = it.value
    shared = {
        (it.namespace, it.key): it.value
        for ns in (SHARED_NS, TEAM_NS)
        for it in store.search(ns, limit=1000)
        if p.marker in json.dumps(it.value).lower()
        and (erased is None or erased.marker not in json.dumps(it.value).lower())
    }
    threads = {}
    for t in p.threads:
        state = saver.get_tuple({"configurable": {"thread_id": t}})
        threads[t] = (
            None if state is None else len(state.checkpoint["channel_values"].get("messages", []))
        )
    return {
        "items": items,
        "shared": shared,
        "sessions": sorted(s.session_id for s in saver.list_sessions(p.uid)),
        "summaries": {t: saver.get_summary(t) for t in p.threads},
        "threads": threads,
        "triples": sorted(map(repr, graph_triples(store, ("memories", p.uid), limit=1000))),
    }


def diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What differs between two snapshots (for messages)."""
    out = []
    for part in before:
        b, a = before[part], after[part]
        if b == a:
            continue
        if isinstance(b, dict):
            for k in sorted(set(b) | set(a), key=repr):
                if b.get(k) != a.get(k):
                    out.append(f"{part}[{k!r}]: {b.get(k)!r} -> {a.get(k)!r}")
        else:
            out.append(f"{part}: {b!r} -> {a!r}")
    return "; ".join(out)[:3000]


def assert_no_trace(traces: list[Trace], what: str) -> None:
    assert not traces, f"{what}: the erased user survives in {len(traces)} places:\n" + describe(
        traces
    )


def assert_receipt_has_no_content(receipt: ErasureReceipt, needles: Needles) -> None:
    data = json.dumps(receipt.to_dict())
    hits = list(needles.find_text(data))
    assert not hits, f"the receipt holds the user's id or words: {hits}"
