"""What a memory write costs Chroma, without changing what is stored or found.

Beside an embedded Chroma, an own collection's key vectors (context keys) are not
Chroma records at all: they live in the vector copy (one HNSW record per memory).
Its other extra vectors carry no Chroma metadata: their id names the item and the
write, and every metadata key costs Chroma a row per record.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store._common import namespace_id
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

pytestmark = pytest.mark.integration


def test_an_own_collections_context_vectors_are_not_chroma_records_and_still_rank(
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
        assert sorted(metas) == ["p:a", "p:b", "p:c"]  # no context key in HNSW
        assert all("_d" in metas[f"p:{k}"] for k in "abc")
        copy, nsid = tier._vcopy, namespace_id(ns)  # type: ignore[attr-defined]
        copied = copy.key_rids("wc", nsid, list("abc"))
        assert sorted(rid.split(":", 3)[3] for rid in copied) == ["b", "c"]  # context keys
        # b's context vector embeds a's text: a query for a finds b through it too.
        hits = store.search(ns, query="Hana adopted a greyhound.", limit=3)
        assert hits[0].key == "a"
        # Deleting b removes its vectors and c's context vector made with b's text.
        store.delete(ns, "b")
        left = col.get(include=[])["ids"]
        assert sorted(left) == ["p:a", "p:c"]
        assert copy.key_rids("wc", nsid, list("abc")) == set()
        assert store.search(ns, query="zebracactus", filter={"$retrieval": "keyword"}) == []
    finally:
        store.close()
