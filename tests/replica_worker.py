"""One replica of the three-process test (tests/integration/test_replicas.py).

Run as a script with PYTHONPATH at the repository root. `REPLICA_CONFIG` (JSON) names the
Chroma server, the Redis URL, the key prefix and the embedding size. The worker opens one
`TieredMemoryStore` on them (memory scoring, history on, the default knowledge graph:
FalkorDB on that Redis, a clock set by the driver) and then reads requests from stdin,
one JSON object a line:

    {"now": <epoch seconds>, "ops": [{"op": "put", ...}, ...]}

It sets its clock to `now`, runs the ops in order and writes one JSON line to stdout:
`{"results": [...]}`, one result per op; an op that raises answers
`{"error": "<traceback>"}` and the worker goes on with the next op. End of input closes
the store and exits with code 0.

Kill switch (test only): with `REPLICA_EXIT_ON_UPSERT=N`, the Nth call of chromadb's
`Collection.upsert` made while running a put op returns from Chroma and then ends the
process at once (`os._exit(3)`): the write is in Chroma, and nothing after it ran.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import chromadb
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings
from langgraph.store.base import PutOp

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy import memory_history
from tests.fakes import Clock, HashingEmbeddings

_in_put = False


def _arm_exit_on_upsert(nth: int) -> None:
    """Make the `nth` upsert of a put op end the process right after Chroma took it."""
    original = Collection.upsert
    calls = 0

    def upsert(self: Collection, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        result = original(self, *args, **kwargs)
        if _in_put:
            calls += 1
            if calls == nth:
                os._exit(3)
        return result

    Collection.upsert = upsert  # type: ignore[method-assign]


@contextmanager
def _putting() -> Iterator[None]:
    global _in_put
    _in_put = True
    try:
        yield
    finally:
        _in_put = False


def _ns(raw: list[str]) -> tuple[str, ...]:
    return tuple(raw)


def _hits(found: list[Any]) -> list[dict[str, Any]]:
    return [
        {"ns": list(h.namespace), "key": h.key, "score": h.score, "value": h.value} for h in found
    ]


def _entry(store: TieredMemoryStore, ns: tuple[str, ...], key: str) -> dict[str, Any] | None:
    entry = store.get_memory(ns, key)
    if entry is None:
        return None
    return {
        "content": entry.content,
        "importance": entry.importance,
        "access_count": entry.access_count,
        "created_at": entry.created_at.timestamp(),
        "last_accessed": None if entry.last_accessed is None else entry.last_accessed.timestamp(),
    }


def _graph(store: TieredMemoryStore, listings: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The graph's triples per memory, and those the listed memories' values give.

    Both are sorted `[namespace, key, subject, relation, object]` rows.
    """
    held = sorted(
        [list(r.namespace), key, r.subject, r.relation, r.object]
        for ns in listings
        for r in graph_triples(store, _ns(json.loads(ns)), limit=100_000)
        for key in r.memory_keys
    )
    listed = [(h["ns"], h["key"], h["value"]) for hits in listings.values() for h in hits]
    found = store.graph_extractor.extract(
        [v["content"] for _, _, v in listed], speakers=[v.get("speaker") for _, _, v in listed]
    )
    given = sorted(
        [ns, key, *triple]
        for (ns, key, _), triples in zip(listed, found, strict=True)
        for triple in triples
    )
    return {"held": held, "given": given}


def _snapshot(store: TieredMemoryStore, op: dict[str, Any]) -> dict[str, Any]:
    """Everything the test compares, read without counting an access."""
    quiet = {"$count_access": False}
    listings = {
        json.dumps(ns): _hits(store.search(_ns(ns), filter=quiet, limit=1000))
        for ns in op["namespaces"]
    }
    queries = [
        _hits(store.search(_ns(q["prefix"]), query=q["query"], filter=quiet, limit=q["limit"]))
        for q in op["queries"]
    ]
    memories, history = {}, {}
    for ns, key in op["keys"]:
        name = json.dumps([ns, key])
        memories[name] = _entry(store, _ns(ns), key)
        history[name] = [e.to_dict() for e in memory_history(store, _ns(ns), key)]
    return {
        "listings": listings,
        "queries": queries,
        "memories": memories,
        "history": history,
        "graph": _graph(store, listings),
    }


def _run(store: TieredMemoryStore, op: dict[str, Any]) -> Any:
    kind = op["op"]
    if kind == "put":
        with _putting():
            store.batch([PutOp(_ns(ns), key, value) for ns, key, value in op["items"]])
        return None
    if kind == "delete":
        store.delete(_ns(op["ns"]), op["key"])
        return None
    if kind == "get":
        item = store.get(_ns(op["ns"]), op["key"])
        return None if item is None else {"key": item.key, "value": item.value}
    if kind == "search":
        extra = {} if op.get("count", True) else {"$count_access": False}
        retrieval = {"$retrieval": op["retrieval"]} if "retrieval" in op else {}
        found = store.search(
            _ns(op["prefix"]), query=op["query"], filter={**extra, **retrieval}, limit=op["limit"]
        )
        return _hits(found)
    if kind == "reinforce":
        return store.update_importance(_ns(op["ns"]), op["key"], op["delta"])
    if kind == "tier":
        return store.tier_for(_ns(op["ns"]))
    if kind == "snapshot":
        return _snapshot(store, op)
    raise ValueError(f"unknown op {kind!r}")


def main() -> int:
    """Serve requests from stdin until it closes."""
    config = json.loads(os.environ["REPLICA_CONFIG"])
    nth = os.environ.get("REPLICA_EXIT_ON_UPSERT")
    if nth:
        _arm_exit_on_upsert(int(nth))
    clock = Clock(config["now"])
    embed: Callable[..., Any] = HashingEmbeddings(config["dims"])
    client = chromadb.HttpClient(
        host=config["chroma_host"],
        port=config["chroma_port"],
        settings=Settings(anonymized_telemetry=False),
    )
    store = TieredMemoryStore(
        redis_url=config["redis_url"],
        chroma_client=client,
        key_prefix=config["key_prefix"],
        scoring={"mode": "memory"},
        index={"dims": config["dims"], "embed": embed, "fields": ["content"]},
        clock=clock,
        history=True,
        graph=True,
    )
    try:
        store.setup()
        for line in sys.stdin:
            request = json.loads(line)
            clock.now = float(request["now"])
            results: list[Any] = []
            for op in request["ops"]:
                try:
                    results.append({"ok": _run(store, op)})
                except Exception:  # reported to the driver, which fails the test with it
                    results.append({"error": traceback.format_exc()})
            sys.stdout.write(json.dumps({"results": results}) + "\n")
            sys.stdout.flush()
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
