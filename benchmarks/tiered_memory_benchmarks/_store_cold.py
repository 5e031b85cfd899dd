"""Timed searches, and the child process that measures them cold.

``python -m tiered_memory_benchmarks._store_cold PLAN.json RESULT.json`` opens the
store the plan describes (data written by another process), runs one untimed search to
pay the process's one-time costs, then times the first search of each planned
namespace (the first touch of that namespace in this process) and writes the figures
to ``RESULT.json``. It prints nothing; errors end it with a traceback on stderr and a
non-zero exit code.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from langgraph.store.base import BaseStore

from tiered_memory_benchmarks._store_data import SeededEmbeddings
from tiered_memory_benchmarks._store_open import StoreSpec, open_store

__all__ = ["Query", "cold_plan", "run_cold_plan", "time_searches"]

logger = logging.getLogger("tiered_memory_benchmarks.store_cold")

Query = tuple[tuple[str, ...], str, str]
"""One search: namespace, query text, and the key of the item the text belongs to."""


def time_searches(store: BaseStore, queries: Sequence[Query], k: int) -> tuple[list[float], int]:
    """Run each query once, timing each `store.search` call alone.

    Args:
        store: The store.
        queries: The searches.
        k: Results per search.

    Returns:
        The seconds of each call, and how many calls ranked the query's own item first.
    """
    seconds: list[float] = []
    hits = 0
    for namespace, text, key in queries:
        start = time.perf_counter()
        found = store.search(namespace, query=text, limit=k)
        seconds.append(time.perf_counter() - start)
        hits += bool(found) and found[0].key == key
    return seconds, hits


def cold_plan(spec: StoreSpec, k: int, warmup: Query, queries: Sequence[Query]) -> dict[str, Any]:
    """The JSON-serialisable plan of a cold run.

    Args:
        spec: The store to open.
        k: Results per search.
        warmup: An untimed first search (a namespace not among `queries`).
        queries: One search per namespace, each timed.

    Returns:
        The plan, for `run_cold_plan` in another process.
    """
    return {"spec": asdict(spec), "k": k, "warmup": warmup, "queries": list(queries)}


def _query(raw: Sequence[Any]) -> Query:
    namespace, text, key = raw
    return tuple(namespace), str(text), str(key)


def run_cold_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """Open the planned store and time the first search of each planned namespace.

    Args:
        plan: What `cold_plan` returned (after a JSON round trip).

    Returns:
        ``open_seconds`` (constructing and setting up the store), ``seconds`` (one per
        query) and ``hits`` (queries whose own item ranked first).
    """
    spec = StoreSpec(**plan["spec"])
    k = int(plan["k"])
    warmup = _query(plan["warmup"])
    queries = [_query(q) for q in plan["queries"]]
    embeddings = SeededEmbeddings(spec.dims)
    embeddings.prefetch([warmup[1], *(q[1] for q in queries)])
    start = time.perf_counter()
    with open_store(spec, embeddings) as store:
        opened = time.perf_counter() - start
        time_searches(store, [warmup], k)
        seconds, hits = time_searches(store, queries, k)
    logger.debug("cold %s: %d first touches", spec.name, len(seconds))
    return {"open_seconds": opened, "seconds": seconds, "hits": hits}


def main(argv: Sequence[str]) -> int:
    """Read a plan file, run it, write the result file.

    Args:
        argv: ``[plan path, result path]``.

    Returns:
        The exit code.
    """
    plan_path, result_path = argv
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    result = run_cold_plan(plan)
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
