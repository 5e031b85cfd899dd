"""One ownership rule for search, erase, export, the agent and the profile.

The library's per-user layouts (`("memories", id)` of the tools, agent and profile) are
their user's for a `$user` search too, not shared: another user's search never sees a
fact stored there. The user label wins over a layout: `("memories", "users", "bob")` is
bob's, so a user whose id is `"users"` neither sees, exports nor erases it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.agent.builder import MemoryWriter, create_memory_agent
from langgraph_tiered_memory.agent.profile import get_user_profile
from langgraph_tiered_memory.agent.tools import create_manage_memory_tool
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph import graph_triples
from langgraph_tiered_memory.privacy import erase_user, export_user
from langgraph_tiered_memory.privacy.erasure import UserNamespaces
from langgraph_tiered_memory.privacy.ownership import namespace_owner
from langgraph_tiered_memory.ranking.scoring import UserScope
from tests.conftest import DIMS
from tests.fake_models import RecordingChatModel, prompt_text
from tests.fakes import HashingEmbeddings
from tests.integration.test_isolation import _owner  # the rule written independently

PIN = "Alice's bank PIN is 4321"
BOB = ("memories", "users", "bob", "s1")


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


@pytest.fixture(params=["long", "short"])
def mem_store(
    request: pytest.FixtureRequest, make_store: Callable[..., TieredMemoryStore]
) -> TieredMemoryStore:
    return make_store(request.param, scoring=None, index=_index())


def _texts(items: Any) -> list[str]:
    return [str(i.value.get("content")) for i in items]


def test_a_fact_in_a_users_memory_namespace_is_not_shared_with_others(
    mem_store: TieredMemoryStore,
) -> None:
    tool = create_manage_memory_tool(store=mem_store)  # ("memories", "{user_id}")
    tool.invoke({"content": PIN, "memory_type": "fact"}, {"configurable": {"user_id": "alice"}})
    mem_store.put(("memories", "bob"), "diary", {"content": "bob's own PIN diary"})
    for prefix in [(), ("memories",)]:
        seen = _texts(mem_store.search(prefix, query="PIN", filter={"$user": "bob"}))
        assert PIN not in seen and "bob's own PIN diary" in seen
        assert PIN in _texts(mem_store.search(prefix, query="PIN", filter={"$user": "alice"}))
    if mem_store.tier_for(("memories", "alice")) == "short":
        # memory ranking is the long tier's: a store without one says so
        with pytest.raises(ConfigurationError, match="no long-term tier"):
            mem_store.search_memories((), "PIN", user_id="bob")
        return
    hits = mem_store.search_memories((), "PIN", user_id="bob")
    assert PIN not in [h.entry.content for h in hits]
    docs = mem_store.as_retriever(("memories",), user_id="bob").invoke("PIN")
    assert PIN not in [d.page_content for d in docs]


def test_a_user_named_like_the_user_label_gets_nothing_of_another_user(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = make_store(scoring=None, index=_index())
    store.put(BOB, "k1", {"content": "bob's diagnosis is diabetes", "importance": 0.9})
    store.put(("memories", "users"), "own", {"content": "the users account's own note"})

    exported = export_user(store, "users")
    assert [tuple(m["namespace"]) for m in exported["memories"]] == [("memories", "users")]
    assert BOB in [tuple(m["namespace"]) for m in export_user(store, "bob")["memories"]]
    assert "diabetes" not in str(get_user_profile(store, "users"))

    model = RecordingChatModel(replies=["ok", "ok"])
    agent = create_memory_agent(
        model, writer=MemoryWriter(retry_wait=0.0), extraction=False, profile=False
    )
    graph = agent.compile(store=store)
    graph.invoke(
        {"messages": [("user", "what is the diagnosis?")]},
        {"configurable": {"user_id": "users", "thread_id": "t1"}},
    )
    assert "diabetes" not in prompt_text(model.prompts[-1])

    erase_user(store, "users")
    assert store.get(BOB, "k1") is not None
    assert store.get(("memories", "users"), "own") is None


def test_nor_another_users_graph_facts(make_store: Callable[..., TieredMemoryStore]) -> None:
    store = make_store(scoring=None, index=_index(), graph=True)
    store.put(BOB, "k2", {"content": "My sister Anna lives in Paris.", "importance": 0.9})
    assert graph_triples(store, ("memories",))  # bob's memory gave the graph its facts
    assert "anna" not in str(get_user_profile(store, "users")).lower()
    model = RecordingChatModel(replies=["ok"])
    agent = create_memory_agent(
        model, writer=MemoryWriter(retry_wait=0.0), extraction=False, profile=False
    )
    agent.compile(store=store).invoke(
        {"messages": [("user", "Where does Anna live?")]},
        {"configurable": {"user_id": "users", "thread_id": "t2"}},
    )
    assert "paris" not in prompt_text(model.prompts[-1]).lower()


labels = st.sampled_from(["users", "memories", "profiles", "short_term", "u1", "u2", "x"])


@given(namespace=st.lists(labels, min_size=1, max_size=5).map(tuple), user=labels)
@example(namespace=BOB, user="users")  # the label wins over the ("memories", id) layout
@example(namespace=BOB, user="bob")
@example(namespace=("memories", "u1"), user="u1")
def test_search_and_erase_agree_on_whose_a_namespace_is(
    namespace: tuple[str, ...], user: str
) -> None:
    expected = _owner(namespace)
    assert namespace_owner(namespace) == expected
    assert UserScope(user).owns(namespace) == (expected == user)
    assert UserNamespaces(user).owns(namespace) == (expected == user)
