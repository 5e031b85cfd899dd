"""`import_langchain_chroma`: a real `langchain_chroma.Chroma` imported into a memory
namespace of a store on Redis and Chroma, then found by search and by the retriever."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma

from langgraph_tiered_memory import ConfigurationError, InvalidItemError, TieredMemoryStore
from langgraph_tiered_memory.interop import ImportCounts, import_langchain_chroma, memory_key
from tests.fakes import HashingEmbeddings

DIMS = 16
TEXTS = [
    "Ana drinks green tea every morning",
    "Bob rides a red bike to work",
    "The office is in Lisbon",
    "Ana's dog is called Rex",
    "Bob plays chess on Fridays",
]


class RecordingEmbeddings(HashingEmbeddings):
    """Hashing embeddings that remember every text they embedded as a document."""

    def __init__(self, dims: int = DIMS, ngram: int = 2) -> None:
        super().__init__(dims, ngram)
        self.documents: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return super().embed_documents(texts)


def _chroma(path: Path, embeddings: Any = None, texts: list[str] = TEXTS) -> Chroma:
    vs = Chroma(
        collection_name="knowledge",
        embedding_function=embeddings or HashingEmbeddings(DIMS),
        persist_directory=str(path / "lc"),
    )
    ids = [f"doc-{i}" for i in range(len(texts))]
    vs.add_texts(texts, metadatas=[{"i": i, "src": "kb"} for i in range(len(texts))], ids=ids)
    return vs


@pytest.fixture
def embedder() -> RecordingEmbeddings:
    return RecordingEmbeddings()


@pytest.fixture
def mstore(make_store: Callable[..., TieredMemoryStore], embedder: RecordingEmbeddings) -> Any:
    """A memory store with the default tier routing (short_term on Redis) and an index."""
    return make_store(scoring=None, index={"dims": DIMS, "embed": embedder, "fields": ["content"]})


def test_import_keeps_documents_metadata_and_ids(mstore: Any, tmp_path: Path) -> None:
    vs = _chroma(tmp_path)
    seen: list[tuple[int, int]] = []
    counts = import_langchain_chroma(
        mstore, vs, ("kb",), batch_size=2, progress=lambda d, t: seen.append((d, t))
    )
    assert counts == ImportCounts(read=5, written=5, unchanged=0, skipped=0, reused_vectors=True)
    assert seen == [(2, 5), (4, 5), (5, 5)]
    item = mstore.get(("kb",), "doc-3")
    assert item.value == {
        "content": "Ana's dog is called Rex",
        "memory_type": "fact",
        "source": "langchain_chroma",
        "chroma_id": "doc-3",
        "chroma_metadata": {"i": 3, "src": "kb"},
    }
    hits = mstore.search_memories(("kb",), "what is Ana's dog called", limit=1)
    assert hits[0].entry.id == "doc-3"
    docs = mstore.as_retriever(("kb",), k=1).invoke("red bike")
    assert docs[0].metadata["key"] == "doc-1"


def test_matching_vectors_are_reused_not_embedded_again(
    mstore: Any, embedder: RecordingEmbeddings, tmp_path: Path
) -> None:
    vs = _chroma(tmp_path)
    embedder.documents.clear()
    counts = import_langchain_chroma(mstore, vs, ("kb",))
    assert counts.reused_vectors
    # one sample to compare the models; every other document vector came from Chroma
    # (what the store embeds besides are its context keys, which join two texts)
    assert [t for t in embedder.documents if t in TEXTS] == [TEXTS[0]]
    stored = mstore._long().memory_stats(("kb",), ["doc-2"])
    assert "doc-2" in stored


def test_other_models_vectors_are_reembedded(
    mstore: Any, embedder: RecordingEmbeddings, tmp_path: Path
) -> None:
    # same dims, another model (trigrams): the sample check notices and re-embeds
    other = _chroma(tmp_path / "a", HashingEmbeddings(DIMS, ngram=3))
    embedder.documents.clear()
    counts = import_langchain_chroma(mstore, other, ("kb",))
    assert not counts.reused_vectors and counts.written == 5
    assert set(TEXTS) <= set(embedder.documents)
    # other dims: re-embedded, and "reuse" refuses
    small = _chroma(tmp_path / "b", HashingEmbeddings(8))
    assert not import_langchain_chroma(mstore, small, ("kb2",)).reused_vectors
    with pytest.raises(ConfigurationError, match="8 dimensions"):
        import_langchain_chroma(mstore, small, ("kb3",), vectors="reuse")
    hits = mstore.search_memories(("kb2",), "green tea morning", limit=1)
    assert hits[0].entry.id == "doc-0"


def test_rerun_is_idempotent_and_picks_up_changes(mstore: Any, tmp_path: Path) -> None:
    vs = _chroma(tmp_path)
    import_langchain_chroma(mstore, vs, ("kb",), batch_size=3)
    before = {i.key: i.updated_at for i in mstore.search(("kb",), limit=50)}
    again = import_langchain_chroma(mstore, vs, ("kb",), batch_size=3)
    assert again == ImportCounts(read=5, written=0, unchanged=5, skipped=0, reused_vectors=True)
    assert {i.key: i.updated_at for i in mstore.search(("kb",), limit=50)} == before
    vs.update_document(
        "doc-4",
        vs.get_by_ids(["doc-4"])[0].model_copy(
            update={"page_content": "Bob plays chess on Sundays"}
        ),
    )
    changed = import_langchain_chroma(mstore, vs, ("kb",), batch_size=3)
    assert (changed.written, changed.unchanged) == (1, 4)
    assert mstore.get(("kb",), "doc-4").value["content"] == "Bob plays chess on Sundays"


def test_awkward_ids_get_stable_keys_and_empty_documents_are_skipped(
    mstore: Any, tmp_path: Path
) -> None:
    vs = Chroma(
        collection_name="awkward",
        embedding_function=HashingEmbeddings(DIMS),
        persist_directory=str(tmp_path / "lc"),
    )
    long_id = "x" * 2000
    vs.add_texts(["a long id", "   "], ids=[long_id, "blank"])
    counts = import_langchain_chroma(mstore, vs, ("kb",), memory_type="experience")
    assert (counts.read, counts.written, counts.skipped) == (2, 1, 1)
    key = memory_key(long_id)
    assert key.startswith("lc-") and key == memory_key(long_id)
    item = mstore.get(("kb",), key)
    assert item.value["chroma_id"] == long_id and item.value["memory_type"] == "experience"
    assert mstore.get(("kb",), "blank") is None


def test_clear_errors(mstore: Any, tmp_path: Path) -> None:
    vs = _chroma(tmp_path)
    with pytest.raises(TypeError, match="langchain_chroma.Chroma"):
        import_langchain_chroma(mstore, object(), ("kb",))
    with pytest.raises(TypeError, match="TieredMemoryStore"):
        import_langchain_chroma(object(), vs, ("kb",))
    with pytest.raises(ValueError, match="batch_size"):
        import_langchain_chroma(mstore, vs, ("kb",), batch_size=0)
    with pytest.raises(ValueError, match="vectors"):
        import_langchain_chroma(mstore, vs, ("kb",), vectors="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="short-term tier"):
        import_langchain_chroma(mstore, vs, ("short_term", "s1"))
    with pytest.raises(InvalidItemError):
        import_langchain_chroma(mstore, vs, ("kb",), memory_type="nonsense")
    assert mstore.search(("kb",)) == []  # nothing was written by a refused import


def test_async_store_imports_from_a_worker_thread(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    from langgraph_tiered_memory import AsyncTieredMemoryStore

    vs = _chroma(tmp_path)

    async def main() -> tuple[ImportCounts, list[str]]:
        async with AsyncTieredMemoryStore.from_conn_string(
            redis_url,
            chroma_path=str(tmp_path / "c"),
            key_prefix=key_prefix,
            index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        ) as store:
            counts = await asyncio.to_thread(import_langchain_chroma, store, vs, ("kb",))
            docs = await store.as_retriever(("kb",), k=1).ainvoke("chess on Fridays")
            return counts, [d.metadata["key"] for d in docs]

    counts, keys = asyncio.run(main())
    assert (counts.written, counts.reused_vectors) == (5, True)
    assert keys == ["doc-4"]


def test_a_model_returning_too_few_vectors_fails_the_import_before_any_write(
    make_store: Callable[..., TieredMemoryStore], tmp_path: Path
) -> None:
    class ShortEmbeddings(HashingEmbeddings):
        """Drops the last vector of every document batch of more than one text."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            out = super().embed_documents(texts)
            return out[:-1] if len(out) > 1 else out

    index = {"dims": DIMS, "embed": ShortEmbeddings(DIMS), "fields": ["content"]}
    store = make_store(scoring=None, index=index)
    # Same model: the documents' vectors are reused and only the index keys (context
    # texts) are embedded, by the import's own embedding step.
    same = _chroma(tmp_path / "a", HashingEmbeddings(DIMS))
    with pytest.raises(ConfigurationError, match="one vector per"):
        import_langchain_chroma(store, same, ("kb",), vectors="reuse")
    assert store.search(("kb",)) == []


def test_an_id_shaped_like_a_hashed_key_never_takes_another_documents_key(
    mstore: Any, tmp_path: Path
) -> None:
    long_id = "y" * 1100  # over the 1,024-byte key limit: hashed
    vs = Chroma(
        collection_name="lookalike",
        embedding_function=HashingEmbeddings(DIMS),
        persist_directory=str(tmp_path / "lc"),
    )
    lookalike = "lc-" + hashlib.sha256(long_id.encode()).hexdigest()[:32]
    vs.add_texts(["the long one", "the lookalike"], ids=[long_id, lookalike])
    counts = import_langchain_chroma(mstore, vs, ("kb",))
    assert (counts.read, counts.written) == (2, 2)
    keys = {memory_key(long_id), memory_key(lookalike)}
    assert len(keys) == 2
    stored = {mstore.get(("kb",), k).value["chroma_id"] for k in keys}
    assert stored == {long_id, lookalike}  # both documents kept, neither overwritten
    assert len(mstore.search(("kb",), limit=10)) == 2


def test_reimport_into_a_redacting_store_writes_nothing(
    make_store: Callable[..., TieredMemoryStore], tmp_path: Path
) -> None:
    index = {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}
    store = make_store(scoring=None, index=index, redactor=True)
    texts = ["Mail ana@example.com about tea", "Call Bob on 020 7946 0958", "No PII here"]
    vs = _chroma(tmp_path, texts=texts)
    first = import_langchain_chroma(store, vs, ("kb",))
    assert first.written == 3
    assert store.get(("kb",), "doc-0").value["content"] == "Mail [email] about tea"
    before = {i.key: (i.updated_at, i.value) for i in store.search(("kb",), limit=10)}
    again = import_langchain_chroma(store, vs, ("kb",))
    assert (again.written, again.unchanged) == (0, 3)
    assert {i.key: (i.updated_at, i.value) for i in store.search(("kb",), limit=10)} == before
