"""Write the fixture `legacy-server.tgz`: a server-mode store with `memory_index_path`.

It runs the code of commit 6da60d7, the last whose long tier kept the memory index of a
Chroma server in a per-process SQLite file, against a `chroma run` server, and records
what that code answered. To re-run it (from the repository root)::

    git archive 6da60d7 | tar -x -C /tmp/lt-6da60d7
    cp tests/data/legacy/make_server_store.py /tmp/lt-6da60d7/
    (cd /tmp/lt-6da60d7 && PYTHONPATH=. python make_server_store.py /tmp/lt-out)
    tar -czf tests/data/legacy/legacy-server.tgz -C /tmp/lt-out \
        data memory-index.sqlite3 expected.json

It leaves in OUT_DIR: data/ (the server's data directory), memory-index.sqlite3 (the
memory index file) and expected.json (keyword and hybrid hits per query, access counts,
history events, triples and values, as that code answered them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import chromadb
from chromadb.config import Settings

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy import memory_history
from tests.erase_env import ChromaServer
from tests.fakes import Clock, HashingEmbeddings

DIMS = 64
PREFIX = "legacy"
NS = [("users", "alice", "memories"), ("users", "bob", "memories")]
TEXTS = {
    NS[0]: [
        ("m1", "My sister Anna lives in Paris and loves sardines."),
        ("m2", "Anna works at Google as an engineer."),
        ("m3", "I adopted a cat named Quokka last spring."),
        ("m4", "Quokka the cat eats sardines every morning."),
        ("m5", "My favourite tea is a smoky lapsang souchong."),
    ],
    NS[1]: [
        ("b1", "Bob moved to Boston in 2019."),
        ("b2", "Bob plays the cello in a community orchestra."),
        ("b3", "The orchestra rehearses in Boston on Tuesdays."),
    ],
}
QUERIES = ["sardines", "Quokka cat", "Anna Google", "tea", "Boston orchestra", "cello"]


def main(out: Path) -> None:
    out.mkdir(parents=True)
    server = ChromaServer(out)
    server.start()
    clock = Clock()
    try:
        client = chromadb.HttpClient(
            host=server.host, port=server.port, settings=Settings(anonymized_telemetry=False)
        )
        store = TieredMemoryStore(
            chroma_client=client,
            tiers={"default": "long"},
            key_prefix=PREFIX,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
            memory_index_path=str(out / "memory-index.sqlite3"),
            graph=True,
            clock=clock,
        )
        store.setup()
        for ns, items in TEXTS.items():
            for key, text in items:
                clock.now += 60
                store.put(ns, key, {"content": text, "memory_type": "fact", "importance": 0.5})
        clock.now += 60
        store.put(
            NS[0],
            "m5",
            {
                "content": "My favourite tea is now a green sencha.",
                "memory_type": "preference",
                "importance": 0.7,
            },
        )
        clock.now += 60
        store.delete(NS[1], "b2")
        # Counted searches: access counts.
        for q in ["sardines", "Quokka", "sardines", "Boston"]:
            clock.now += 60
            store.search(("users",), query=q, limit=3)
        expected: dict[str, object] = {"now": clock.now, "dims": DIMS, "prefix": PREFIX}
        # Read before the hits: each get counts an access, and the hits must be ranked
        # with the counts the file keeps.
        expected["values"] = {
            f"{'/'.join(ns)}/{key}": store.get(ns, key).value  # type: ignore[union-attr]
            for ns, items in TEXTS.items()
            for key, _ in items
            if not (ns == NS[1] and key == "b2")
        }
        hits = {}
        for mode in ("hybrid", "keyword"):
            for q in QUERIES:
                res = store.search(
                    ("users",),
                    query=q,
                    limit=5,
                    filter={"$count_access": False, "$retrieval": mode},
                )
                hits[f"{mode}:{q}"] = [[list(r.namespace), r.key, r.score] for r in res]
        expected["hits"] = hits
        tier = store.tiers["long"]
        idx = tier.memindex  # type: ignore[attr-defined]
        from langgraph_tiered_memory.store.tiers._namespaces import namespace_id

        counts = {}
        for ns, items in TEXTS.items():
            stats = idx.memory_stats(PREFIX, namespace_id(ns), [k for k, _ in items])
            for k, s in stats.items():
                counts[f"{'/'.join(ns)}/{k}"] = [s.access_count, s.last_accessed]
        expected["counts"] = counts
        expected["history"] = {
            f"{'/'.join(ns)}/{key}": [
                [e.event, e.at, e.actor, e.content_hash] for e in memory_history(store, ns, key)
            ]
            for ns, items in TEXTS.items()
            for key, _ in items
        }
        expected["triples"] = sorted(
            [list(t.namespace), t.subject, t.relation, t.object]
            for t in graph_triples(store, ("users",), limit=1000)
        )
        store.close()
        (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))
    finally:
        server.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
