"""Write the fixture `legacy-embedded-keys.tgz`: an embedded store with a vector copy.

It runs the code of commit 96c17ec, the last whose long tier kept, beside an embedded
Chroma, the key vectors (context keys) of namespaces with an own collection only in
`tiered-memory-vectors.sqlite3`, and records what that code answered. Two key prefixes
share the directory, so the file holds the rows of both. To re-run it (from the
repository root)::

    git archive 96c17ec | tar -x -C /tmp/lt-96c17ec
    cp tests/data/legacy/make_embedded_store.py /tmp/lt-96c17ec/
    (cd /tmp/lt-96c17ec && PYTHONPATH=. python make_embedded_store.py /tmp/lt-emb)
    tar -czf tests/data/legacy/legacy-embedded-keys.tgz -C /tmp/lt-emb chroma expected.json

It leaves in OUT_DIR: chroma/ (the Chroma directory with the tier's SQLite files) and
expected.json (per prefix and query: key, best, own and key-vector similarity of every
dense hit of memory retrieval, and the key vector ids the copy held).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langgraph_tiered_memory import TieredMemoryStore
from tests.fakes import Clock, HashingEmbeddings

DIMS = 64
PREFIXES = ["lega", "legb"]
NS = ("mem", "hana")
FACTS = [
    "Hana adopted a greyhound named Biscuit.",
    "The clinic door code is 4471.",
    "Ivo bought a red kayak last summer.",
    "Biscuit the greyhound hates thunder.",
    "Hana works night shifts at the clinic.",
    "The kayak club meets on Sundays.",
]
QUERIES = ["greyhound at the clinic", "kayak on Sunday", "thunder"]


def main(out: Path) -> None:
    out.mkdir(parents=True)
    clock = Clock()
    emb = HashingEmbeddings(DIMS)
    expected: dict[str, object] = {"dims": DIMS, "now": None}
    for n, prefix in enumerate(PREFIXES):
        store = TieredMemoryStore(
            chroma_path=str(out / "chroma"),
            key_prefix=prefix,
            tiers={"default": "long"},
            index={"dims": DIMS, "embed": emb, "fields": ["content"]},
            clock=clock,
        )
        store.setup()
        tier = store.tiers["long"]
        tier._layout.graduate_at = 4  # an own collection once it holds 4 records
        for i, text in enumerate(FACTS[: len(FACTS) - n]):
            store.put(NS, f"m{i}", {"content": text})
        store.put(NS, "m2", {"content": "Ivo sold the red kayak."})  # a stale key vector
        dense = {}
        for q in QUERIES:
            hits = tier.retrieve(
                NS, query_vector=emb.embed_query(q), match=None, filter=None, limit=5, now=clock()
            ).dense
            dense[q] = sorted([h.item.key, h.best, h.own, h.context] for h in hits)
        from langgraph_tiered_memory.store.tiers._namespaces import namespace_id

        keys = [f"m{i}" for i in range(len(FACTS))]
        held = sorted(tier._vcopy.key_rids(prefix, namespace_id(NS), keys))
        assert held and not any(
            r[:2] == "x:" for r in tier._collection(NS, create=False).get()["ids"]
        )
        expected[prefix] = {"dense": dense, "key_rids": held}
        store.close()
    expected["now"] = clock.now
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
