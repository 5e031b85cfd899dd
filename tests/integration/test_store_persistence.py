"""Reopening a store on the same Redis and Chroma directory finds everything again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from langgraph.store.base import PutOp

from langgraph_tiered_memory import ConfigurationError, TieredMemoryStore
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings


def _open(redis_url: str, path: Path, prefix: str, dims: int = DIMS) -> TieredMemoryStore:
    store = TieredMemoryStore(
        redis_url=redis_url,
        chroma_path=str(path),
        key_prefix=prefix,
        index={"dims": dims, "embed": HashingEmbeddings(dims), "fields": ["text"]},
        scoring={"mode": "similarity"},
    )
    store.setup()
    return store


def test_everything_persists_across_reopen(redis_url: str, key_prefix: str, tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    first = _open(redis_url, path, key_prefix)
    first.put(("users", "u1", "memories"), "m1", {"text": "likes green tea"})
    first.put(("users", "u1", "memories"), "m2", {"text": "lives in Lisbon"}, index=False)
    first.put(("users", "u2"), "m1", {"text": "plays chess"})
    first.put(("short_term", "s1"), "turn1", {"text": "hello there"}, ttl=10)
    before = {
        "get": first.get(("users", "u1", "memories"), "m1"),
        "search": first.search(("users",), query="green tea", limit=10),
        "namespaces": first.list_namespaces(),
        "short": first.get(("short_term", "s1"), "turn1", refresh_ttl=False),
    }
    assert first.tier_for(("short_term", "s1")) == "short"
    first.close()

    second = _open(redis_url, path, key_prefix)
    assert second.get(("users", "u1", "memories"), "m1") == before["get"]
    after = second.search(("users",), query="green tea", limit=10)
    assert [(r.namespace, r.key, r.score) for r in after] == [
        (r.namespace, r.key, r.score) for r in before["search"]
    ]
    assert after[-1].key == "m2" and after[-1].score is None
    assert second.list_namespaces() == before["namespaces"]
    assert second.get(("short_term", "s1"), "turn1", refresh_ttl=False) == before["short"]
    # Another key prefix on the same servers sees none of it.
    other = _open(redis_url, path, key_prefix + "x")
    assert other.list_namespaces() == [] and other.search(()) == []
    other.close()
    second.close()


def test_reopening_with_other_embedding_size_is_a_clear_error(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    path = tmp_path / "chroma"
    first = _open(redis_url, path, key_prefix)
    first.put(("n",), "k", {"text": "x"})
    first.close()
    second = _open(redis_url, path, key_prefix, dims=DIMS * 2)
    with pytest.raises(ConfigurationError, match="dimensions"):
        second.get(("n",), "k")
    second.close()


def test_chroma_client_given_by_the_caller_is_used(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    client = chromadb.PersistentClient(
        path=str(tmp_path / "own"), settings=Settings(anonymized_telemetry=False)
    )
    store = TieredMemoryStore(
        chroma_client=client, key_prefix=key_prefix, tiers={"default": "long"}
    )
    store.put(("a",), "k", {"v": 1})
    names = {c.name for c in client.list_collections()}
    assert any(n.startswith(f"{key_prefix}-ns-") for n in names)
    # Its namespace registry is in the tier's SQLite file beside Chroma, not a collection.
    assert f"{key_prefix}-registry" not in names
    assert store.list_namespaces() == [("a",)]
    store.close()


class _Model(HashingEmbeddings):
    """Hashing vectors under a model name, as a LangChain integration reports one."""

    def __init__(self, model: str, dims: int = DIMS) -> None:
        super().__init__(dims)
        self.model = model


def _open_with(redis_url: str, path: Path, prefix: str, embed: HashingEmbeddings) -> Any:
    store = TieredMemoryStore(
        redis_url=redis_url,
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": "long"},
        index={"dims": DIMS, "embed": embed, "fields": ["text"]},
    )
    store.setup()
    return store


def test_reopening_with_another_embedding_model_of_the_same_size_is_a_clear_error(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    path = tmp_path / "chroma"
    first = _open_with(redis_url, path, key_prefix, _Model("model-a"))
    first.put(("users", "u1"), "k", {"text": "likes green tea"})
    first.close()
    client = chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False)
    )
    models = {(c.metadata or {}).get("tm_model") for c in client.list_collections()}
    assert "_Model:model-a" in models
    del client
    other = _open_with(redis_url, path, key_prefix, _Model("model-b"))
    with pytest.raises(ConfigurationError, match=r"'_Model:model-a'.*'_Model:model-b'"):
        other.search(("users",), query="tea")
    other.close()
    same = _open_with(redis_url, path, key_prefix, _Model("model-a"))
    assert [h.key for h in same.search(("users",), query="tea")] == ["k"]
    same.close()


def test_collections_that_record_no_model_open_with_any_embedder(
    redis_url: str, key_prefix: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A function (or an older store) names no model: nothing is recorded or refused."""
    path = tmp_path / "chroma"
    first = _open_with(redis_url, path, key_prefix, HashingEmbeddings(DIMS))
    first.put(("users", "u1"), "k", {"text": "likes green tea"})
    first.close()
    named = _open_with(redis_url, path, key_prefix, _Model("model-a"))
    assert [h.key for h in named.search(("users",), query="tea")] == ["k"]
    named.close()
    warnings = [r.getMessage() for r in caplog.records if "records no embedding" in r.getMessage()]
    assert len(warnings) == 1 and "embed='local:minilm'" in warnings[0]


def test_a_store_of_centred_e5_vectors_names_the_embedder_that_opens_it(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """0.1.0 wrote centred e5 vectors with embed='local'; 'local' now writes raw ones."""

    def open_with(embed: str) -> Any:
        return TieredMemoryStore(
            redis_url=redis_url,
            chroma_path=str(tmp_path / "chroma"),
            key_prefix=key_prefix,
            tiers={"default": "long"},
            index={"dims": 384, "embed": embed, "fields": ["text"]},
        )

    old = open_with("local:e5-centred")
    old.put(("users", "u1"), "k", {"text": "likes green tea"})
    old.close()
    new = open_with("local")
    with pytest.raises(
        ConfigurationError,
        match=r"'multilingual-e5-small-q4'.*'multilingual-e5-small-q4-raw'.*'local:e5-centred'",
    ):
        new.search(("users",), query="tea")
    new.close()
    again = open_with("local:e5-centred")
    assert [h.key for h in again.search(("users",), query="green tea")] == ["k"]
    again.close()


def _sessions(redis_url: str, prefix: str, embed: HashingEmbeddings, **options: Any) -> Any:
    """A store of session items (the short tier; `options` may route others elsewhere)."""
    return TieredMemoryStore(
        redis_url=redis_url,
        key_prefix=prefix,
        index={"dims": embed.dims, "embed": embed, "fields": ["text"]},
        **{"tiers": {"default": "short"}, **options},
    )


def test_the_short_tier_refuses_vectors_of_another_model(redis_url: str, key_prefix: str) -> None:
    """Session items are embedded too: a store of another model must not rank them."""
    first = _sessions(redis_url, key_prefix, _Model("model-a"))
    first.put(("sessions", "s1"), "k", {"text": "likes green tea"})
    first.close()
    other = _sessions(redis_url, key_prefix, _Model("model-b"))
    with pytest.raises(ConfigurationError, match=r"'_Model:model-a'.*'_Model:model-b'"):
        other.search(("sessions",), query="tea")
    with pytest.raises(ConfigurationError, match=r"'_Model:model-a'.*'_Model:model-b'"):
        other.put(("sessions", "s1"), "k2", {"text": "likes coffee"})
    assert other.get(("sessions", "s1"), "k2") is None  # nothing written
    assert other.get(("sessions", "s1"), "k") is not None  # reading without vectors is fine
    other.close()
    same = _sessions(redis_url, key_prefix, _Model("model-a"))
    assert [h.key for h in same.search(("sessions",), query="tea")] == ["k"]
    same.close()


def test_the_short_tier_refuses_vectors_of_another_size(redis_url: str, key_prefix: str) -> None:
    """A function names no model: the size of its vectors is still checked."""
    first = _sessions(redis_url, key_prefix, HashingEmbeddings(DIMS))
    first.put(("sessions", "s1"), "k", {"text": "likes green tea"})
    first.close()
    other = _sessions(redis_url, key_prefix, HashingEmbeddings(DIMS * 2))
    with pytest.raises(ConfigurationError, match=rf"{DIMS} dimensions.*{DIMS * 2}"):
        other.search(("sessions",), query="tea")
    other.close()
    # An unnamed model after a named one (or the reverse) is compared by size only.
    named = _sessions(redis_url, key_prefix, _Model("model-a"))
    assert [h.key for h in named.search(("sessions",), query="tea")] == ["k"]
    named.close()


def test_a_batch_the_short_tier_refuses_writes_nothing_on_the_long_tier(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    first = _sessions(redis_url, key_prefix, _Model("model-a"))
    first.put(("sessions", "s1"), "k", {"text": "likes green tea"})
    first.close()
    mixed = _sessions(
        redis_url,
        key_prefix,
        _Model("model-b"),
        chroma_path=str(tmp_path / "chroma"),
        tiers={"default": "long", "short": [("sessions",)]},
    )
    ops = [
        PutOp(("users", "u1"), "m", {"text": "likes coffee"}),
        PutOp(("sessions", "s1"), "k2", {"text": "likes coffee"}),
    ]
    with pytest.raises(ConfigurationError, match=r"'_Model:model-a'.*'_Model:model-b'"):
        mixed.batch(ops)
    assert mixed.get(("users", "u1"), "m") is None  # refused before any tier wrote
    assert mixed.get(("sessions", "s1"), "k2") is None
    mixed.close()
