"""Write the fixture `legacy-embedded-registry.tgz`: an embedded store with a Chroma registry.

It runs the code of commit 9e8229f, the last whose long tier, beside an embedded Chroma,
kept the namespace registry in the Chroma collection `P-registry` (the SQLite file held
a copy, made again at every open), and records what that code answered. The prefix has
3 buckets (not the default 4), and its namespaces are in every state a registry entry
records: in a bucket, holding a TTL item, moved to an own collection, and moved with the
bucket clean-up not done (the flag `m`). To re-run it (from the repository root)::

    git archive 9e8229f | tar -x -C /tmp/lt-9e8229f
    cp tests/data/legacy/make_embedded_registry.py /tmp/lt-9e8229f/
    (cd /tmp/lt-9e8229f && PYTHONPATH=. python make_embedded_registry.py /tmp/lt-reg)
    tar -czf tests/data/legacy/legacy-embedded-registry.tgz -C /tmp/lt-reg chroma expected.json

It leaves in OUT_DIR: chroma/ (the Chroma directory with the tier's SQLite files) and
expected.json (what that code answered on opening the store: the namespaces listed,
each one's keys, its bucket or null (own collection), which held TTL items, and the
search hits of each namespace's query).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from langgraph_tiered_memory import TieredMemoryStore
from tests.fakes import Clock, HashingEmbeddings

DIMS = 64
PREFIX = "lreg"
FACTS: dict[tuple[str, ...], list[str]] = {
    ("users", "ana", "notes"): ["Ana keeps bees on her roof", "Ana sells honey"],
    ("users", "bo", "notes"): ["Bo keeps goats", "Bo makes cheese"],  # the second with a TTL
    ("users", "cy", "memories"): [f"Cy visited city number {i}" for i in range(5)],  # own
    ("users", "di", "memories"): [f"Di planted tree number {i}" for i in range(5)],  # moving
}
QUERY = {ns: texts[0] for ns, texts in FACTS.items()}


def main(out: Path) -> None:
    out.mkdir(parents=True)
    clock = Clock()
    store = TieredMemoryStore(
        chroma_path=str(out / "chroma"),
        key_prefix=PREFIX,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=clock,
    )
    tier: Any = store.tiers["long"]
    tier._layout._wanted_buckets = 3
    store.setup()
    tier._layout.graduate_at = 5  # an own collection once it holds 5 records

    def crash(nsid: str, bucket: int) -> None:
        raise RuntimeError("stopped before the bucket clean-up")

    for ns, texts in FACTS.items():
        if ns[1] == "di":  # the put that moves it stops there (its item is written)
            tier._layout.clear_bucket = crash
        for i, text in enumerate(texts):
            try:
                store.put(ns, f"k{i}", {"content": text}, ttl=600 if ns[1] == "bo" and i else None)
            except RuntimeError:
                break
        tier._layout.__dict__.pop("clear_bucket", None)
    from langgraph_tiered_memory.store.tiers._namespaces import namespace_id

    reg = tier._layout.registry()
    got = reg.get(ids=[namespace_id(ns) for ns in FACTS], include=["metadatas"])
    metas = dict(zip(got["ids"], got["metadatas"], strict=True))
    assert metas[namespace_id(("users", "di", "memories"))].get("m") is not None
    assert reg.metadata["tm_buckets"] == 3
    store.close()
    # What 9e8229f answers on opening the store, from a copy (opening finishes the move).
    copy = Path(tempfile.mkdtemp()) / "chroma"
    shutil.copytree(out / "chroma", copy)
    store = TieredMemoryStore(
        chroma_path=str(copy),
        key_prefix=PREFIX,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        clock=clock,
    )
    expected: dict[str, Any] = {
        "dims": DIMS,
        "prefix": PREFIX,
        "now": clock.now,
        "listed": [list(ns) for ns in store.list_namespaces(prefix=("users",))],
        "namespaces": [],
    }
    for ns in FACTS:
        meta = metas[namespace_id(ns)]
        hits = store.search(ns, query=QUERY[ns], limit=10)
        expected["namespaces"].append(
            {
                "ns": list(ns),
                "keys": sorted(it.key for it in store.search(ns, limit=100)),
                "bucket": meta.get("b"),
                "ttl": bool(meta.get("ttl")),
                "query": QUERY[ns],
                "hits": [[h.key, h.score] for h in hits],
            }
        )
    store.close()
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
