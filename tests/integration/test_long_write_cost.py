"""What a memory write costs Chroma, without changing what is stored or found.

An own collection's extra vectors (context keys included) carry no Chroma metadata:
their id names the item and the write, and every metadata key costs Chroma a row per
record.
"""

from __future__ import annotations

from pathlib import Path

from langgraph_tiered_memory import TieredMemoryStore
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings


def test_an_own_collections_context_vectors_carry_no_metadata_and_still_rank(
    tmp_path: Path,
) -> None:
    store = TieredMemoryStore(
        chroma_path=str(tmp_path),
        key_prefix="wc",
        tiers={"default": "long"},
        clock=Clock(),
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    )
    store.setup()
    try:
        tier = store.tiers["long"]
        tier._layout.graduate_at = 1  # type: ignore[attr-defined]  # own collection at once
        ns = ("mem", "hana")
        store.put(ns, "a", {"content": "Hana adopted a greyhound."})
        store.put(ns, "b", {"content": "The clinic door code is zebracactus."})
        store.put(ns, "c", {"content": "Ivo bought a red kayak."})
        col = tier._collection(ns, create=False)  # type: ignore[attr-defined]
        assert type(col).__name__ != "NamespaceView"
        got = col.get(include=["metadatas"])
        metas = dict(zip(got["ids"], got["metadatas"], strict=True))
        keyed = [rid for rid in metas if rid[:2] == "x:"]
        assert sorted(rid.split(":", 3)[3] for rid in keyed) == ["b", "c"]  # context keys
        assert all(metas[rid] is None for rid in keyed)
        assert all("_d" in metas[f"p:{k}"] for k in "abc")
        # b's context vector embeds a's text: a query for a finds b through it too.
        hits = store.search(ns, query="Hana adopted a greyhound.", limit=3)
        assert hits[0].key == "a"
        # Deleting b removes its vectors and c's context vector made with b's text.
        store.delete(ns, "b")
        left = col.get(include=[])["ids"]
        assert sorted(left) == ["p:a", "p:c"]
        assert store.search(ns, query="zebracactus", filter={"$retrieval": "keyword"}) == []
    finally:
        store.close()
