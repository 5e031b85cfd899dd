"""The memory agent's "known facts" end to end, on stores that keep a knowledge graph.

Session 1 states a fact; the extraction model (a recorded fake) turns it into a fact
memory, and the store extracts its triples on write (the rule extractor). Session 2
asks about the entity and the prompt the chat model receives holds the fact line;
another user's prompt never does, and a store without a graph renders the prompt of
before. The graph writes happen in the deferred storage, off the reply path.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.builder import MemoryWriter, create_memory_agent
from langgraph_tiered_memory.graph import graph_triples, queries
from tests.conftest import DIMS
from tests.fake_models import RecordedChatModel, RecordingChatModel, prompt_text
from tests.fakes import Clock, HashingEmbeddings

STATEMENT = "My sister Anna lives in Porto."
QUESTION = "Where does Anna live?"
FACT = "- anna lives in porto"
BLOCK = "Known facts about what the message mentions:"
# what the extraction model makes of the statement, and of the question
EXTRACTED = {"memories": [{"content": "User's sister Anna lives in Porto.",
                           "memory_type": "fact", "importance": 0.7}]}  # fmt: skip
NOTHING: dict[str, Any] = {"memories": []}
ADD = {"action": "ADD"}


def _config(user: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": uuid.uuid4().hex}}


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


def _extractor() -> RecordedChatModel:
    # session 1 (extraction, then the decision about the similar interaction memory),
    # then one empty extraction per later turn
    return RecordedChatModel(structured=[EXTRACTED, ADD, NOTHING, NOTHING, NOTHING])


def _agent(model: Any, extractor: Any, **options: Any) -> Any:
    return create_memory_agent(
        model,
        extraction_model=extractor,
        profile=False,
        writer=MemoryWriter(retry_wait=0.0),
        **options,
    )


def _two_sessions(store: Any, **options: Any) -> tuple[RecordingChatModel, Any]:
    model = RecordingChatModel(replies=["Noted.", "She lives in Porto.", "I do not know."])
    graph = _agent(model, _extractor(), **options).compile(
        store=store, checkpointer=InMemorySaver()
    )
    graph.invoke({"messages": STATEMENT}, _config("ana"))
    out = graph.invoke({"messages": QUESTION}, _config("ana"))
    return model, (graph, out)


@pytest.fixture
def graph_store(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    return make_store(scoring=None, clock=clock, index=_index(), graph=True)


def test_a_fact_of_one_session_reaches_the_next_as_a_known_fact_never_another_user(
    graph_store: TieredMemoryStore,
) -> None:
    model, (graph, out) = _two_sessions(graph_store)
    prompt = prompt_text(model.prompts[-1])
    assert f"{BLOCK}\n" in prompt and FACT in prompt.split(BLOCK)[1].splitlines()
    assert FACT in out["known_facts"]
    # the facts come from the user's own namespace only
    triples = graph_triples(graph_store, ("memories", "ana"))
    assert ("anna", "lives_in", "porto") in {r.triple for r in triples}

    graph.invoke({"messages": QUESTION}, _config("bob"))
    prompt = prompt_text(model.prompts[-1])
    assert BLOCK not in prompt and "porto" not in prompt.casefold()


def test_known_facts_can_be_turned_off_and_take_a_template_slot(
    graph_store: TieredMemoryStore,
) -> None:
    model, (_, out) = _two_sessions(graph_store, known_facts=False)
    assert "known_facts" not in out and BLOCK not in prompt_text(model.prompts[-1])

    model = RecordingChatModel(replies=["In Porto."])
    graph = _agent(model, RecordedChatModel(structured=[NOTHING]), prompt="FACTS:\n{known_facts}")
    graph.compile(store=graph_store, checkpointer=InMemorySaver()).invoke(
        {"messages": QUESTION}, _config("ana")
    )
    lines = prompt_text(model.prompts[-1]).splitlines()
    assert lines[0] == "FACTS:" and FACT in lines


def test_a_store_without_a_graph_renders_the_prompt_of_before(
    make_store: Callable[..., TieredMemoryStore], tmp_path: Path, clock: Clock
) -> None:
    with_graph = make_store(scoring=None, clock=clock, index=_index(), graph=True)
    plain = make_store(
        scoring=None, clock=clock, index=_index(), chroma_path=str(tmp_path / "plain")
    )
    graph_model, _ = _two_sessions(with_graph)
    plain_model, (_, out) = _two_sessions(plain)
    plain_prompt = prompt_text(plain_model.prompts[-1])
    assert BLOCK not in plain_prompt and "known_facts" not in out
    # the same memories, so the same prompt but for the appended block of facts
    graph_prompt = prompt_text(graph_model.prompts[-1])
    head, block = graph_prompt.split(f"\n\n{BLOCK}\n")
    assert plain_prompt == head + "\n" + QUESTION
    assert FACT in block.splitlines()


def test_the_triples_are_written_in_the_deferred_storage_not_before_the_reply(
    graph_store: TieredMemoryStore,
) -> None:
    opened, writing = threading.Event(), threading.Event()
    real_batch = graph_store.batch
    seen_at_reply: list[int] = []

    def gated_batch(ops: Any) -> Any:
        ops = list(ops)
        if any(isinstance(op, PutOp) for op in ops):  # every write; reads pass
            writing.set()
            assert opened.wait(30), "the test never opened the gate"
        return real_batch(ops)

    graph_store.batch = gated_batch  # type: ignore[method-assign]
    model = RecordingChatModel(replies=["Noted."])
    graph = _agent(model, _extractor(), known_facts=True).compile(
        store=graph_store, checkpointer=InMemorySaver()
    )
    stream = graph.stream({"messages": STATEMENT}, _config("ana"), stream_mode="updates")
    for update in stream:
        if "agent" in update:  # the reply, while the storage waits at the gate
            assert writing.wait(10)
            seen_at_reply.append(len(graph_triples(graph_store, ("memories", "ana"))))
            break
    opened.set()
    for _ in stream:
        pass
    assert seen_at_reply == [0]
    triples = {r.triple for r in graph_triples(graph_store, ("memories", "ana"))}
    assert ("anna", "lives_in", "porto") in triples


# --------------------------------------------------------------------------- async


@pytest.fixture
async def agraph_store(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> AsyncIterator[AsyncTieredMemoryStore]:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma-async"),
        key_prefix=key_prefix,
        index=_index(),
        clock=clock,
        graph=True,
    ) as store:
        yield store


async def test_async_runs_read_the_facts_through_agraph_neighbors(
    agraph_store: AsyncTieredMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = queries.agraph_neighbors

    async def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2])  # (store, namespace, entity)
        return await real(*args, **kwargs)

    monkeypatch.setattr(queries, "agraph_neighbors", spy)
    model = RecordingChatModel(replies=["Noted.", "She lives in Porto.", "No idea."])
    graph = _agent(model, _extractor()).compile(store=agraph_store, checkpointer=InMemorySaver())
    await graph.ainvoke({"messages": STATEMENT}, _config("ana"))
    out = await graph.ainvoke({"messages": QUESTION}, _config("ana"))
    assert FACT in out["known_facts"] and "anna" in calls
    assert FACT in prompt_text(model.prompts[-1])
    await graph.ainvoke({"messages": QUESTION}, _config("bob"))
    assert BLOCK not in prompt_text(model.prompts[-1])
