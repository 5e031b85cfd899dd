"""The memory agent's "known facts": the rules, and the retrieval node on a fake graph store.

The store here is a long-tier-only tiered store whose knowledge graph is faked
(`FakeGraph`, answering `neighbors` from fixed triples), so the node's behaviour is
checked without Redis: what it asks, in which namespace, and
what reaches the prompt. The end-to-end test on real stores is in
tests/integration/test_memory_agent_facts.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.agent.builder import (
    DEFAULT_MEMORY_PROMPT,
    MemoryWriter,
    create_memory_agent,
)
from langgraph_tiered_memory.agent.nodes import check_prompt, fact_lines, render_memory_context
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.types import Neighbor, Triple, TripleRecord
from tests.fake_models import RecordingChatModel, prompt_text
from tests.fakes import HashingEmbeddings

# --------------------------------------------------------------------------- rules


def test_fact_lines_read_as_sentences_deduplicated_and_capped() -> None:
    triples = [
        Triple("anna", "lives_in", "porto"),
        Triple("anna", "lives_in", "porto"),
        Triple("user", "has_sister", "anna"),
        Triple("anna", "works_at", "the\nport\tauthority"),
    ]
    assert fact_lines(triples) == [
        "- anna lives in porto",
        "- user has sister anna",
        "- anna works at the port authority",  # one line whatever the names hold
    ]
    assert fact_lines(triples, limit=1) == ["- anna lives in porto"]
    assert fact_lines([]) == []


def test_a_template_with_a_known_facts_slot_gets_the_lines_or_none() -> None:
    check_prompt("{profile}{memories}{summary}{known_facts}")
    facts = ["- anna lives in porto"]
    slot = "F:{known_facts}|S:{summary}"
    assert render_memory_context(slot, summary=None, memories=[], known_facts=facts) == (
        "F:- anna lives in porto|S:(none)"
    )
    assert render_memory_context(slot, summary=None, memories=[]) == "F:(none)|S:(none)"


def test_a_template_without_the_slot_gets_a_block_only_when_there_are_facts() -> None:
    plain = render_memory_context(DEFAULT_MEMORY_PROMPT, summary="s", memories=[])
    assert plain == DEFAULT_MEMORY_PROMPT.format(
        profile="(none)", memories="(none)", summary="s", known_facts="(none)"
    )
    assert "Known facts" not in plain
    with_facts = render_memory_context(
        DEFAULT_MEMORY_PROMPT, summary="s", memories=[], known_facts=["- anna lives in porto"]
    )
    assert with_facts == plain + (
        "\n\nKnown facts about what the message mentions:\n- anna lives in porto"
    )
    text = render_memory_context(
        lambda parts: parts["known_facts"], summary=None, memories=[], known_facts=["- f"]
    )
    assert text == "- f"


def test_bad_known_facts_options_fail_when_the_graph_is_built() -> None:
    with pytest.raises(ConfigurationError, match="known_facts"):
        create_memory_agent(RecordingChatModel(), known_facts="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="facts_limit"):
        create_memory_agent(RecordingChatModel(), facts_limit=-1)


# --------------------------------------------------------------------------- the node


def _rec(ns: tuple[str, ...], s: str, r: str, o: str) -> TripleRecord:
    return TripleRecord(s, r, o, ns, ns[-1], ("m1",))


class FakeGraph:
    """A `GraphStore` answering `neighbors` from `facts` and recording what was asked."""

    name = "fake"
    in_tier_transaction = False

    def __init__(self, facts: dict[tuple[str, ...], list[TripleRecord]]) -> None:
        self.facts = facts
        self.asked: list[tuple[tuple[str, ...], str, int, int]] = []
        self.threads: list[str] = []

    def setup(self) -> None:
        pass

    def replace(self, changes: Any) -> None:
        pass

    def repoint(self, *args: Any) -> None:
        raise NotImplementedError  # no test here merges memories

    def memory_triples(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}

    def triples(self, *args: Any, **kwargs: Any) -> list[TripleRecord]:
        return []

    def memories_for(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    def erase(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError  # no test here erases a user

    def neighbors(
        self, namespace: tuple[str, ...], entity: str, *, hops: int = 1, limit: int = 50, **_: Any
    ) -> list[Neighbor]:
        self.asked.append((tuple(namespace), entity, hops, limit))
        self.threads.append(threading.current_thread().name)
        out = []
        for rec in self.facts.get(tuple(namespace), []):
            if entity in (rec.subject, rec.object):
                other = rec.object if rec.subject == entity else rec.subject
                out.append(Neighbor(other, 1, (rec,)))
        return out[:limit]

    def close(self) -> None:
        pass


def graph_store(
    tmp_path: Path, facts: dict[tuple[str, ...], list[TripleRecord]], *, graph: bool = True
) -> TieredMemoryStore:
    """A long-tier-only tiered store whose knowledge graph is a `FakeGraph` (or none)."""
    return TieredMemoryStore(
        chroma_path=str(tmp_path / "chroma"),
        tiers={"default": "long"},
        index={"dims": 16, "embed": HashingEmbeddings(16), "fields": ["content"]},
        graph=FakeGraph(facts) if graph else None,
    )


def asked(store: TieredMemoryStore) -> list[tuple[tuple[str, ...], str, int, int]]:
    assert isinstance(store.graph, FakeGraph)
    return store.graph.asked


ANA: tuple[str, ...] = ("memories", "ana")
BOB: tuple[str, ...] = ("memories", "bob")
FACTS: dict[tuple[str, ...], list[TripleRecord]] = {
    ANA: [
        _rec(ANA, "anna", "lives_in", "porto"),
        _rec(ANA, "ana", "has_sister", "anna"),
        _rec(ANA, "porto", "located_in", "portugal"),
    ],
    BOB: [_rec(BOB, "anna", "lives_in", "lima")],
}


def _graph(model: Any, store: Any, **options: Any) -> Any:
    agent = create_memory_agent(
        model, writer=MemoryWriter(retry_wait=0.0), extraction=False, profile=False, **options
    )
    return agent.compile(store=store, checkpointer=InMemorySaver())


def _cfg(user: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": f"t-{user}"}}


def test_the_node_asks_one_hop_about_the_messages_entities_in_the_users_namespace(
    tmp_path: Path,
) -> None:
    store = graph_store(tmp_path, FACTS)
    model = RecordingChatModel(replies=["In Porto.", "In Lima."])
    graph = _graph(model, store, facts_limit=7)
    out = graph.invoke({"messages": "Where does Anna live?"}, _cfg("ana"))
    assert asked(store) == [(ANA, "anna", 1, 7)]
    assert out["known_facts"] == ["- anna lives in porto", "- ana has sister anna"]
    prompt = prompt_text(model.prompts[-1])
    assert "- anna lives in porto" in prompt and "lima" not in prompt
    assert "portugal" not in prompt  # two hops away

    graph.invoke({"messages": "Where does Anna live?"}, _cfg("bob"))
    prompt = prompt_text(model.prompts[-1])
    assert asked(store)[-1][0] == BOB
    assert "- anna lives in lima" in prompt and "porto" not in prompt


async def test_the_async_node_queries_the_graph_off_the_event_loop(tmp_path: Path) -> None:
    store = graph_store(tmp_path, FACTS)
    model = RecordingChatModel(replies=["In Porto."])
    out = await _graph(model, store).ainvoke({"messages": "Where does Anna live?"}, _cfg("ana"))
    assert isinstance(store.graph, FakeGraph) and len(store.graph.threads) == 1
    assert store.graph.threads[0] != threading.current_thread().name  # a worker thread
    assert "- anna lives in porto" in out["memory_context"]


def test_a_store_without_a_graph_leaves_the_prompt_as_it_was(tmp_path: Path) -> None:
    plain = RecordingChatModel(replies=["ok"])
    _graph(plain, InMemoryStore()).invoke({"messages": "Where does Anna live?"}, _cfg("ana"))
    no_graph = graph_store(tmp_path, FACTS, graph=False)
    model = RecordingChatModel(replies=["ok"])
    out = _graph(model, no_graph).invoke({"messages": "Where does Anna live?"}, _cfg("ana"))
    assert no_graph.graph is None and "known_facts" not in out
    assert prompt_text(model.prompts[-1]) == prompt_text(plain.prompts[-1])
    assert "Known facts" not in prompt_text(model.prompts[-1])


def test_known_facts_off_or_on_explicitly(tmp_path: Path) -> None:
    store = graph_store(tmp_path, FACTS)
    model = RecordingChatModel(replies=["ok"])
    _graph(model, store, known_facts=False).invoke({"messages": "Anna?"}, _cfg("ana"))
    assert asked(store) == [] and "Known facts" not in prompt_text(model.prompts[-1])
    graph = _graph(RecordingChatModel(replies=["ok"]), InMemoryStore(), known_facts=True)
    with pytest.raises(ConfigurationError, match="graph="):
        graph.invoke({"messages": "Where does Anna live?"}, _cfg("ana"))


def test_facts_are_deduplicated_across_entities_and_capped(tmp_path: Path) -> None:
    store = graph_store(tmp_path, FACTS)
    model = RecordingChatModel(replies=["ok"])
    graph = _graph(model, store, prompt="{known_facts}")
    out = graph.invoke({"messages": "Does Anna still live in Porto?"}, _cfg("ana"))
    assert sorted(a[1] for a in asked(store)) == ["anna", "porto"]
    # `anna lives_in porto` is a neighbour of both, shown once
    assert sorted(out["memory_context"].splitlines()) == [
        "- ana has sister anna",
        "- anna lives in porto",
        "- porto located in portugal",
    ]
    capped = graph_store(tmp_path / "capped", FACTS)
    graph = _graph(
        RecordingChatModel(replies=["ok"]), capped, prompt="{known_facts}", facts_limit=1
    )
    out = graph.invoke({"messages": "Does Anna still live in Porto?"}, _cfg("ana"))
    assert len(out["known_facts"]) == 1
