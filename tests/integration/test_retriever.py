"""`store.as_retriever`: memories as LangChain `Document`s, in LCEL, scoped to one user
(long-term stores only, no Redis)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda

from langgraph_tiered_memory import AsyncTieredMemoryStore, ConfigurationError, TieredMemoryStore
from langgraph_tiered_memory.ranking.scoring import ScoreBreakdown
from langgraph_tiered_memory.retriever import MemoryRetriever
from tests.fakes import HashingEmbeddings

DIMS = 16


def _options(path: Path, **kwargs: Any) -> dict[str, Any]:
    return {
        "chroma_path": str(path),
        "tiers": {"default": "long"},
        "index": {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
        **kwargs,
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TieredMemoryStore]:
    with TieredMemoryStore.from_conn_string(**_options(tmp_path / "chroma")) as s:
        s.put(("users", "u1"), "tea", {"content": "Ana drinks green tea", "importance": 0.9})
        s.put(("users", "u1"), "bike", {"content": "Ana rides a red bike"})
        s.put(("users", "u2"), "coffee", {"content": "Bob drinks black coffee"})
        s.put(("memories", "u1"), "walk", {"content": "u1 walks the dog at dawn"})
        s.put(("memories", "u2"), "run", {"content": "u2 walks to the river"})
        s.put(("kb",), "water", {"content": "People drink water", "memory_type": "fact"})
        yield s


def _format(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def test_documents_carry_the_memory_and_its_score_breakdown(store: TieredMemoryStore) -> None:
    retriever = store.as_retriever(("users", "{user_id}"), user_id="u1", k=1)
    assert isinstance(retriever, BaseRetriever) and isinstance(retriever, MemoryRetriever)
    [doc] = retriever.invoke("Ana drinks green tea")
    assert doc.page_content == "Ana drinks green tea"
    meta = doc.metadata
    assert meta["namespace"] == ["users", "u1"] and meta["key"] == "tea"
    assert meta["memory_type"] == "experience" and meta["importance"] == 0.9
    assert meta["score"] == meta["score_breakdown"]["score"]
    assert set(meta["score_breakdown"]) == {f.name for f in dataclasses.fields(ScoreBreakdown)}
    # the retrieval counted as an access, as search_memories does
    assert store.get_memory(("users", "u1"), "tea").access_count == 1  # type: ignore[union-attr]


def test_works_in_an_lcel_chain(store: TieredMemoryStore) -> None:
    chain = store.as_retriever(("users", "{user_id}"), user_id="u1", k=2) | _format
    assert chain.invoke("Ana drinks tea").splitlines()[0] == "Ana drinks green tea"
    batched = chain.batch(["red bike", "green tea"])
    assert batched[0].splitlines()[0] == "Ana rides a red bike"


def test_k_retrieval_and_min_score_apply(store: TieredMemoryStore) -> None:
    assert len(store.as_retriever(("users", "{user_id}"), user_id="u1", k=1).invoke("Ana")) == 1
    keyword = store.as_retriever(("users", "{user_id}"), user_id="u1", retrieval="keyword")
    assert [d.metadata["key"] for d in keyword.invoke("bike")] == ["bike"]
    assert store.as_retriever(("users",), user_id="u1", min_score=5.0).invoke("Ana") == []


def test_user_id_comes_from_the_run_config_when_not_fixed(store: TieredMemoryStore) -> None:
    retriever = store.as_retriever(("memories", "{user_id}"))
    docs = retriever.invoke("walks", {"configurable": {"user_id": "u2"}})
    assert [d.metadata["key"] for d in docs] == ["run"]
    with pytest.raises(ConfigurationError, match="user_id"):
        retriever.invoke("walks")
    # a fixed user wins over the config's
    fixed = store.as_retriever(("memories", "{user_id}"), user_id="u1")
    docs = fixed.invoke("walks", {"configurable": {"user_id": "u2"}})
    assert [d.metadata["key"] for d in docs] == ["walk"]


def test_user_namespace_outside_the_users_label_keeps_its_experiences(
    store: TieredMemoryStore,
) -> None:
    """`("memories", "u1")` is u1's by its placeholder: `$user` would hide non-shared types."""
    docs = store.as_retriever(("memories", "{user_id}"), user_id="u1").invoke("walks dog")
    assert [(d.metadata["key"], d.metadata["memory_type"]) for d in docs] == [
        ("walk", "experience")
    ]


def test_a_prefix_over_all_users_is_scoped_to_the_user(store: TieredMemoryStore) -> None:
    docs = store.as_retriever(("users",), user_id="u1", k=10).invoke("drinks coffee tea")
    assert {d.metadata["key"] for d in docs} == {"tea", "bike"}
    # the scope applies before the top k is cut: u2's best match does not take the slot
    docs = store.as_retriever(("users",), user_id="u1", k=1).invoke("Bob drinks black coffee")
    assert [d.metadata["key"] for d in docs] == ["tea"]
    # outside any user, shared facts are visible and other types are not (the store's
    # `$user` rule, as in contextual search)
    store.put(("kb",), "juice", {"content": "People drink juice", "memory_type": "experience"})
    docs = store.as_retriever(("kb",), user_id="u1", k=10).invoke("people drink water juice")
    assert [d.metadata["key"] for d in docs] == ["water"]
    assert len(store.as_retriever(("kb",), k=10).invoke("people drink water juice")) == 2


def test_another_users_namespace_is_refused(store: TieredMemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="belongs to user 'u2'"):
        store.as_retriever(("users", "u2"), user_id="u1")
    retriever = store.as_retriever(("users", "{user_id}", "notes"), user_id="u1")
    assert retriever.invoke("anything") == []


def test_bad_options_are_refused_when_built(store: TieredMemoryStore, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="k must be"):
        store.as_retriever(("users",), k=0)
    with pytest.raises(ConfigurationError, match="user_id"):
        store.as_retriever(("users",), user_id="")
    with pytest.raises(ConfigurationError, match="placeholder"):
        store.as_retriever(("users", "{user.id}"))
    with TieredMemoryStore.from_conn_string(
        **_options(tmp_path / "sim", scoring={"mode": "similarity"})
    ) as similarity:
        with pytest.raises(ConfigurationError, match="mode"):
            similarity.as_retriever(("users",))


def test_async_path_of_the_sync_store(store: TieredMemoryStore) -> None:
    retriever = store.as_retriever(("users", "{user_id}"), user_id="u1", k=1)
    docs = asyncio.run(retriever.ainvoke("green tea"))
    assert [d.metadata["key"] for d in docs] == ["tea"]


def test_async_store_uses_its_async_search_and_sync_invoke_works(tmp_path: Path) -> None:
    calls: list[tuple[str, ...]] = []

    async def main() -> tuple[list[Document], list[Document]]:
        async with AsyncTieredMemoryStore.from_conn_string(**_options(tmp_path / "c")) as s:
            await s.aput(("users", "u1"), "tea", {"content": "Ana drinks green tea"})
            await s.aput(("users", "u2"), "tea", {"content": "Bob drinks green tea"})
            real = s.asearch_memories

            async def spy(namespace: tuple[str, ...], query: str, **kw: Any) -> Any:
                calls.append(namespace)
                return await real(namespace, query, **kw)

            s.asearch_memories = spy  # type: ignore[method-assign]
            retriever = s.as_retriever(("users",), user_id="u1")
            adocs = await (retriever | RunnableLambda(lambda d: d)).ainvoke("green tea")
            sdocs = await asyncio.to_thread(retriever.invoke, "green tea")
            return adocs, sdocs

    adocs, sdocs = asyncio.run(main())
    assert calls == [("users",)]  # ainvoke went through asearch_memories
    for docs in (adocs, sdocs):
        assert [(d.metadata["namespace"], d.page_content) for d in docs] == [
            (["users", "u1"], "Ana drinks green tea")
        ]


# ---------------------------------------------------------------- isolation property
_WORDS = ["tea", "coffee", "bike", "river", "dog", "paris", "music", "chess"]
_LAYOUTS = [
    ("users", "{u}"),
    ("users", "{u}", "notes"),
    ("memories", "{u}"),
    ("memories", "{u}", "users", "{other}"),  # nested under another user's label
]
_TEMPLATES = [
    (("users", "{user_id}"), True),
    (("users",), False),
    (("memories", "{user_id}"), True),
]
_memory = st.tuples(
    st.sampled_from(["u1", "u2"]),
    st.sampled_from(range(len(_LAYOUTS))),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
    st.sampled_from(["experience", "fact", "preference", "skill"]),
)
_roots = itertools.count()


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TieredMemoryStore]:
    path = tmp_path_factory.mktemp("retriever") / "chroma"
    with TieredMemoryStore.from_conn_string(**_options(path)) as s:
        yield s


def _owner(namespace: tuple[str, ...]) -> str:
    """Whose memory it is by the layouts above: the user after the last user label."""
    if "users" in namespace[1:-1] and namespace[1] == "memories":
        return namespace[namespace.index("users", 2) + 1]
    return namespace[2]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    memories=st.lists(_memory, min_size=1, max_size=12),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3),
    template=st.sampled_from(_TEMPLATES),
    retrieval=st.sampled_from([None, "semantic", "keyword", "contextual"]),
)
def test_a_users_retriever_never_returns_another_users_memory(
    shared_store: TieredMemoryStore,
    memories: list[tuple[str, int, list[str], str]],
    query: list[str],
    template: tuple[tuple[str, ...], bool],
    retrieval: Any,
) -> None:
    root = f"r{next(_roots)}"
    for i, (user, layout, words, memory_type) in enumerate(memories):
        other = "u2" if user == "u1" else "u1"
        labels = tuple(x.format(u=user, other=other) for x in _LAYOUTS[layout])
        namespace = (root, *labels)
        owner = _owner(namespace)
        shared_store.put(
            namespace,
            f"{owner}-{i}",
            {"content": " ".join(words), "memory_type": memory_type},
        )
    labels, _ = template
    retriever = shared_store.as_retriever((root, *labels), user_id="u1", k=20, retrieval=retrieval)
    docs = retriever.invoke(" ".join(query))
    assert all(d.metadata["key"].startswith("u1-") for d in docs), [
        (d.metadata["namespace"], d.metadata["key"]) for d in docs
    ]
    # the same memories through the async path
    adocs = asyncio.run(retriever.ainvoke(" ".join(query)))
    assert all(d.metadata["key"].startswith("u1-") for d in adocs)
