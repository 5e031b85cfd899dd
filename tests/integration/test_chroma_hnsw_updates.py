"""Bucket HNSW graphs survive a year of puts, forgetting passes and consolidation.

Embedded Chroma 1.5.9 crashed the process (SIGSEGV in an add/upsert, or "Failed to
apply logs to the hnsw segment writer") after many deletes from a bucket created with
`max_neighbors` 2; see `BUCKET_HNSW`. The crash needs no rewrite of an existing id:
every record written to a bucket there has a new id.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, get_type_hints

import chromadb
import pytest

from langgraph_tiered_memory import ChromaHnswConfig, TieredMemoryStore
from langgraph_tiered_memory.config import DEFAULT_CHROMA_HNSW
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings

# A simulated year (the 04_forgetting notebook's workload): weekly batch puts to three
# users, searches, and a forgetting pass (deletes) that consolidates every 4th week.
# It ends by checking that a search with each live memory's own text finds it.
_YEAR = textwrap.dedent(
    """
    import hashlib, math, random, sys
    from langchain_core.embeddings import Embeddings
    from langgraph.store.base import PutOp
    from langgraph_tiered_memory import TieredMemoryStore, create_forgetting_graph

    class Seeded(Embeddings):
        def _one(self, text):
            rng = random.Random(hashlib.blake2b(text.encode(), digest_size=8).digest())
            v = [rng.gauss(0.0, 1.0) for _ in range(64)]
            n = math.sqrt(sum(x * x for x in v))
            return [x / n for x in v]
        def embed_documents(self, texts):
            return [self._one(t) for t in texts]
        def embed_query(self, text):
            return self._one(text)

    DAY, START = 86_400.0, 1_767_225_600.0
    TOPICS = ["tea", "running", "the garden", "work", "the cat", "books", "cooking"]
    rng = random.Random(int(sys.argv[2]))
    now = [START]
    store = TieredMemoryStore(
        chroma_path=sys.argv[1], tiers={"default": "long"}, key_prefix="yr",
        index={"dims": 64, "embed": Seeded(), "fields": ["content"]},
        clock=lambda: now[0],
    )
    store.setup()
    opts = {"store": store, "namespace": ("users",), "clock": lambda: now[0]}
    gc_only = create_forgetting_graph(**opts, consolidate=False).compile()
    full = create_forgetting_graph(**opts).compile()
    written = []
    for week in range(52):
        now[0] = START + week * 7 * DAY
        ops = []
        for i in range(30):
            if written and rng.random() < 0.1:
                ns, content = written[rng.randrange(max(0, len(written) - 80), len(written))]
            else:
                user = rng.randrange(3)
                ns = ("users", f"u{user}", "memories")
                content = f"In week {week} user {user} wrote note {i} about {rng.choice(TOPICS)}."
            value = {"content": content, "importance": round(rng.random(), 2)}
            ops.append(PutOp(ns, f"w{week:02d}-{i:02d}", value))
            written.append((ns, content))
        store.batch(ops)
        for _ in range(6):
            user = rng.randrange(3)
            store.search(("users", f"u{user}", "memories"), query=rng.choice(TOPICS), limit=3)
        now[0] += 6 * DAY
        (full if week % 4 == 3 else gc_only).invoke({})
    lost, live = [], 0
    for user in range(3):
        ns = ("users", f"u{user}", "memories")
        for item in store.search(ns, limit=10_000):
            content = item.value.get("content")
            if not isinstance(content, str):
                continue
            live += 1
            hits = store.search(ns, query=content, limit=10)
            if item.key not in {h.key for h in hits}:
                lost.append(item.key)
    store.close()
    print(f"live={live} lost={lost}")
    """
)


def _long_store(path: Path, **kwargs: Any) -> TieredMemoryStore:
    return TieredMemoryStore(
        chroma_path=str(path),
        key_prefix="hn",
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
        **kwargs,
    )


def _hnsw_of(store: TieredMemoryStore, ns: tuple[str, ...]) -> dict[str, Any]:
    col = store.tiers["long"]._collection(ns, create=False)  # type: ignore[attr-defined]
    hnsw = dict(col.configuration["hnsw"])
    return {k: hnsw[k] for k in ("ef_construction", "ef_search", "max_neighbors", "space")}


def test_chroma_hnsw_defaults_and_overrides_reach_new_collections(tmp_path: Path) -> None:
    assert set(DEFAULT_CHROMA_HNSW) == set(get_type_hints(ChromaHnswConfig))
    assert DEFAULT_CHROMA_HNSW == {"ef_construction": 64, "ef_search": 128, "max_neighbors": 12}
    with _long_store(tmp_path) as store:
        # Small namespaces share buckets searched exactly; chroma_hnsw shapes the
        # collection a namespace gets of its own past the size threshold (here: at once).
        store.tiers["long"]._layout.graduate_at = 1  # type: ignore[attr-defined]
        store.put(("old",), "k", {"text": "x"})
        assert _hnsw_of(store, ("old",)) == {**DEFAULT_CHROMA_HNSW, "space": "cosine"}
    custom: ChromaHnswConfig = {"ef_search": 50, "max_neighbors": 8}
    with _long_store(tmp_path, chroma_hnsw=custom) as store:
        store.tiers["long"]._layout.graduate_at = 1  # type: ignore[attr-defined]
        store.put(("new",), "k", {"text": "y"})
        assert _hnsw_of(store, ("new",)) == {
            "ef_construction": 64,
            "ef_search": 50,
            "max_neighbors": 8,
            "space": "cosine",
        }
        # Namespaces created before keep the settings they were created with.
        assert _hnsw_of(store, ("old",))["ef_search"] == 128
        assert [r.key for r in store.search(("new",), query="y")] == ["k"]


def test_buckets_get_a_graph_that_survives_deletes(tmp_path: Path) -> None:
    store = _long_store(tmp_path)
    store.setup()
    store.put(("a",), "k", {"text": "one"})
    store.close()
    client = chromadb.PersistentClient(path=str(tmp_path))
    buckets = [c for c in client.list_collections() if "-bucket-" in c.name]
    assert buckets
    for col in buckets:
        # max_neighbors 2 crashed embedded Chroma after many deletes; 4 and 8 did not.
        assert col.configuration["hnsw"]["max_neighbors"] >= 4


@pytest.mark.soak
def test_a_year_of_rewrites_and_deletes_does_not_crash(tmp_path: Path) -> None:
    # A soak test (`pytest -m soak`; deselected by default):
    # `test_buckets_get_a_graph_that_survives_deletes` is the deterministic guard of the
    # setting. The crash depends on Chroma's own timing, not on the workload: with
    # `max_neighbors` 2, 4 of 10 seeded years crashed, and the same seed crashed in one
    # run of three, so no seeding makes this catch it every time. Three years with
    # different workloads (fixed seeds), in separate processes since a crash kills the
    # process.
    procs = [
        subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-c", _YEAR, str(tmp_path / f"y{seed}"), seed],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in ("2", "5", "8")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        live = int(out.split("live=")[1].split()[0])
        assert live > 100
        assert "lost=[]" in out, out
