"""`store.as_retriever` on a store with both tiers (Redis and Chroma): the memories the
memory agent stored, read back by an LCEL chain for the same user only."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document

from langgraph_tiered_memory import AsyncTieredMemoryStore, ConfigurationError, TieredMemoryStore
from langgraph_tiered_memory.agent.builder import MemoryWriter, create_memory_agent
from tests.conftest import DIMS
from tests.fake_models import RecordingChatModel
from tests.fakes import Clock, HashingEmbeddings

PREFERENCE = "Please remember that I am vegetarian and never eat fish."


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": uuid.uuid4().hex}}


def _format(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def test_an_lcel_chain_reads_what_the_memory_agent_stored(
    make_store: Callable[..., TieredMemoryStore], clock: Clock
) -> None:
    store = make_store(scoring=None, clock=clock, index=_index())
    model = RecordingChatModel(replies=["Noted."])
    writer = MemoryWriter(retry_wait=0.0)
    graph = create_memory_agent(model, writer=writer).compile(store=store)
    graph.invoke({"messages": PREFERENCE}, _config("ana"))
    graph.invoke({"messages": "Remember that I drink oat milk."}, _config("bob"))
    writer.flush()

    # one retriever for every user, filled from the run config like the agent's namespace
    chain = store.as_retriever(("memories", "{user_id}"), k=10) | _format
    ana = chain.invoke("what does the user eat", {"configurable": {"user_id": "ana"}})
    assert "vegetarian" in ana and "oat milk" not in ana
    bob = chain.invoke("what does the user eat", {"configurable": {"user_id": "bob"}})
    assert "oat milk" in bob and "vegetarian" not in bob
    docs = store.as_retriever(("memories", "{user_id}"), user_id="ana").invoke("fish")
    assert docs and all(d.metadata["namespace"] == ["memories", "ana"] for d in docs)
    assert {"semantic", "keyword", "recency"} <= set(docs[0].metadata["score_breakdown"])


def test_short_term_namespaces_are_refused(make_store: Callable[..., TieredMemoryStore]) -> None:
    store = make_store(scoring=None, index=_index())
    with pytest.raises(ConfigurationError, match="short-term tier"):
        store.as_retriever(("short_term", "{user_id}"), user_id="ana")


def test_async_store_on_redis_and_chroma(redis_url: str, key_prefix: str, tmp_path: Any) -> None:
    async def main() -> tuple[list[Document], list[Document]]:
        async with AsyncTieredMemoryStore.from_conn_string(
            redis_url, chroma_path=str(tmp_path / "c"), key_prefix=key_prefix, index=_index()
        ) as store:
            await store.aput(("users", "ana", "memories"), "m1", {"content": "Ana likes jazz"})
            await store.aput(("users", "bob", "memories"), "m1", {"content": "Bob likes jazz"})
            await store.aput(("short_term", "s1"), "t", {"content": "jazz tonight"})
            retriever = store.as_retriever(("users",), user_id="ana")
            return await retriever.ainvoke("jazz"), await asyncio.to_thread(
                retriever.invoke, "jazz"
            )

    for docs in asyncio.run(main()):
        assert [(d.page_content, d.metadata["namespace"]) for d in docs] == [
            ("Ana likes jazz", ["users", "ana", "memories"])
        ]
