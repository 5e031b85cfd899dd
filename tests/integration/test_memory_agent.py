"""The memory agent end to end: two sessions of one user on Redis (sessions) and Chroma.

Fake chat models record every prompt, so the tests read what the model was shown:
a preference stated in one session reaches the next, never another user, and is gone
once the forgetting graph deletes it. Storage runs off the reply path: the reply is
streamed while a gated store holds the writes, and the run ends with them stored.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.store.base import BaseStore, Op, PutOp, Result

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.builder import (
    MemoryWriteError,
    MemoryWriter,
    create_memory_agent,
)
from langgraph_tiered_memory.agent.forgetting_graph import create_forgetting_graph
from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from tests.conftest import DIMS
from tests.fake_models import RecordingChatModel, prompt_text
from tests.fakes import Clock, HashingEmbeddings

DAY = 86_400.0
PREFERENCE = "Please remember that I am vegetarian and never eat fish."


def _config(user: str, thread: str | None = None) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread or uuid.uuid4().hex}}


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]}


@pytest.fixture
def mem_store(make_store: Callable[..., TieredMemoryStore], clock: Clock) -> TieredMemoryStore:
    return make_store(scoring=None, clock=clock, index=_index())


@pytest.fixture
def saver(redis_url: str, key_prefix: str) -> Iterator[RedisSessionSaver]:
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=key_prefix) as s:
        yield s


@pytest.fixture
def writer() -> MemoryWriter:
    return MemoryWriter(retry_wait=0.0)


def _contents(store: Any, user: str) -> list[str]:
    return [str(i.value.get("content", "")) for i in store.search(("memories", user), limit=100)]


class GatedStore:
    """Delegates to a store; writes wait for `gate` and may fail first (`failures`)."""

    def __init__(self, store: Any, failures: list[BaseException] | None = None) -> None:
        self.store = store
        self.gate = threading.Event()
        self.gate.set()
        self.writing = threading.Event()
        self.failures = list(failures or [])
        self.puts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _gated(self, args: tuple[Any, ...]) -> bool:
        return tuple(args[0])[:1] == ("memories",)  # not the profile cache

    def _before_put(self) -> None:
        self.puts += 1
        self.writing.set()
        if self.failures:
            raise self.failures.pop(0)

    def put(self, *args: Any, **kwargs: Any) -> None:
        if not self._gated(args):
            return self.store.put(*args, **kwargs)
        self._before_put()
        assert self.gate.wait(30), "the test never opened the gate"
        return self.store.put(*args, **kwargs)

    async def aput(self, *args: Any, **kwargs: Any) -> None:
        if not self._gated(args):
            return await self.store.aput(*args, **kwargs)
        self._before_put()
        assert await asyncio.to_thread(self.gate.wait, 30), "the test never opened the gate"
        return await self.store.aput(*args, **kwargs)


# --------------------------------------------------------------------------- recall


def test_a_preference_reaches_the_next_session_never_another_user_and_is_forgotten(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, clock: Clock, writer: MemoryWriter
) -> None:
    model = RecordingChatModel(replies=["Noted.", "How about a mushroom risotto?"])
    graph = create_memory_agent(model, writer=writer).compile(store=mem_store, checkpointer=saver)
    graph.invoke({"messages": [{"role": "user", "content": PREFERENCE}]}, _config("ana"))

    session2 = _config("ana")
    graph.invoke({"messages": [("user", "What should I cook tonight?")]}, session2)
    assert "vegetarian" in prompt_text(model.prompts[-1])
    # the memory context is a system message of the call, not part of the history
    history = graph.get_state(session2).values["messages"]
    assert [m.type for m in history] == ["human", "ai"]

    graph.invoke({"messages": "What should I cook tonight?"}, _config("bob"))
    assert "vegetarian" not in prompt_text(model.prompts[-1])

    clock.now += 400 * DAY
    forget = create_forgetting_graph(namespace=("memories", "ana"), policy={"max_age_days": 365})
    report = forget.compile(store=mem_store).invoke({})["report"]
    assert report["forgotten_count"] >= 1
    assert not any("vegetarian" in c for c in _contents(mem_store, "ana"))

    graph.invoke({"messages": "Any dinner ideas?"}, session2)
    assert "vegetarian" not in prompt_text(model.prompts[-1])
    graph.invoke({"messages": "Any dinner ideas?"}, _config("ana"))
    assert "vegetarian" not in prompt_text(model.prompts[-1])


def test_the_output_state_says_what_the_run_stored_and_recalled(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    model = RecordingChatModel(replies=["Noted.", "Try a lentil curry."])
    graph = create_memory_agent(model, writer=writer).compile(store=mem_store, checkpointer=saver)
    first = graph.invoke({"messages": [("user", PREFERENCE)]}, _config("cai"))
    [key] = first["stored_memories"]
    assert "cai" not in key  # keys only: no user id in the checkpoint
    item = mem_store.get(("memories", "cai"), key)
    assert item is not None and PREFERENCE in item.value["content"]
    later = graph.invoke({"messages": "What should I cook?"}, _config("cai"))
    assert [m["key"] for m in later["retrieved_memories"]].count(key) == 1  # recalled
    assert len(later["stored_memories"]) == 1 and later["stored_memories"] != [key]


def test_interaction_importance_and_reinforcement_of_used_memories(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    ns = ("memories", "ana")
    mem_store.put(ns, "tea", {"content": "drinks jasmine green tea", "memory_type": "preference"})
    mem_store.put(ns, "car", {"content": "owns a red bicycle", "memory_type": "fact"})
    model = RecordingChatModel(replies=["Then a jasmine green tea it is."])
    agent = create_memory_agent(model, writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    graph.invoke({"messages": "This is important: what should I drink?"}, _config("ana"))

    tea, car = mem_store.get_memory(ns, "tea"), mem_store.get_memory(ns, "car")
    assert tea is not None and car is not None
    assert tea.importance == pytest.approx(0.6) and car.importance == pytest.approx(0.5)
    turns = [i for i in mem_store.search(ns, limit=10) if i.key.startswith("turn-")]
    assert len(turns) == 1 and turns[0].value["importance"] == pytest.approx(0.8)
    assert turns[0].value["content"].endswith("Assistant: Then a jasmine green tea it is.")


def test_a_store_in_similarity_mode_works_too(
    make_store: Callable[..., TieredMemoryStore], saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    store = make_store(index=_index())  # scoring={"mode": "similarity"}: no memory records
    ns = ("memories", "ana")
    store.put(ns, "tea", {"content": "drinks jasmine green tea", "memory_type": "preference"})
    model = RecordingChatModel(replies=["Then a jasmine green tea it is."])
    graph = create_memory_agent(model, writer=writer).compile(store=store, checkpointer=saver)
    graph.invoke({"messages": "What should I drink?"}, _config("ana"))
    assert "jasmine" in prompt_text(model.prompts[-1])
    tea = store.get(ns, "tea")
    assert tea is not None and tea.value["importance"] == pytest.approx(0.6)
    assert len(_contents(store, "ana")) >= 2


# --------------------------------------------------------------------------- off the reply path


def test_the_reply_streams_before_storage_finishes_and_the_run_ends_stored(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    gated = GatedStore(mem_store)
    gated.gate.clear()
    model = RecordingChatModel(replies=["Noted, no fish."])
    agent = create_memory_agent(model, store=gated, writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    stream = graph.stream({"messages": PREFERENCE}, _config("ana"), stream_mode="updates")
    reply = None
    for update in stream:
        if "agent" in update:
            reply = update["agent"]["messages"][-1]
            break
    assert isinstance(reply, AIMessage) and reply.content == "Noted, no fish."
    # storage has started in the background while we hold the reply, and waits
    assert gated.writing.wait(10)
    assert writer.pending == 1 and _contents(mem_store, "ana") == []
    gated.gate.set()
    rest = list(stream)
    assert "memory_storage" in rest[-1]
    assert writer.pending == 0
    assert any("vegetarian" in c for c in _contents(mem_store, "ana"))


class GatedBatchStore(BaseStore):
    """A `BaseStore` whose batches with a put wait for `gate` (reads pass at once)."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self.gate = threading.Event()
        self.writing = threading.Event()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if any(isinstance(op, PutOp) for op in ops):
            self.writing.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return self.store.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, ops)


def test_the_first_reply_of_a_user_waits_on_no_store_write(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    gated = GatedBatchStore(mem_store)
    model = RecordingChatModel(replies=["Noted, no fish."])
    graph = create_memory_agent(model, writer=writer).compile(store=gated, checkpointer=saver)
    stream = graph.stream({"messages": PREFERENCE}, _config("ana"), stream_mode="updates")
    assert "memory_retrieval" in next(stream)
    assert next(stream)["agent"]["messages"][-1].content == "Noted, no fish."
    assert gated.writing.wait(10) and _contents(mem_store, "ana") == []
    gated.gate.set()
    assert "memory_storage" in list(stream)[-1]
    assert any("vegetarian" in c for c in _contents(mem_store, "ana"))


def test_a_transient_store_error_is_retried(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    gated = GatedStore(mem_store, failures=[ConnectionError("redis hiccup")])
    model = RecordingChatModel(replies=["Noted."])
    agent = create_memory_agent(model, store=gated, writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    graph.invoke({"messages": PREFERENCE}, _config("ana"))
    assert gated.puts == 2
    assert any("vegetarian" in c for c in _contents(mem_store, "ana"))
    assert writer.failed == []


def test_a_failed_write_is_kept_raised_and_written_on_retry(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    gated = GatedStore(mem_store, failures=[ValueError("bad value")])
    model = RecordingChatModel(replies=["Noted."])
    agent = create_memory_agent(model, store=gated, writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    config = _config("ana")
    with pytest.raises(MemoryWriteError, match="bad value"):
        graph.invoke({"messages": PREFERENCE}, config)
    assert gated.puts == 1 and len(writer.failed) == 1
    # the reply was produced and checkpointed before the storage failed
    assert graph.get_state(config).values["messages"][-1].content == "Noted."
    with pytest.raises(MemoryWriteError):
        writer.flush()
    writer.retry_failed()
    writer.flush()
    assert any("vegetarian" in c for c in _contents(mem_store, "ana"))


# --------------------------------------------------------------------------- tools, summary


def test_tool_calls_loop_through_the_tool_node(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}."

    call = AIMessage(
        content="", tool_calls=[{"name": "weather", "args": {"city": "Lisbon"}, "id": "c1"}]
    )
    model = RecordingChatModel(replies=[call, "It is sunny in Lisbon."])
    agent = create_memory_agent(model, tools=[weather], writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    out = graph.invoke({"messages": "Weather in Lisbon?"}, _config("ana"))
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert isinstance(model.prompts[1][-1], ToolMessage)
    assert model.prompts[1][-1].content == "Sunny in Lisbon."
    assert model.bound_tools == [weather]
    stored = _contents(mem_store, "ana")
    assert stored == ["User: Weather in Lisbon?\nAssistant: It is sunny in Lisbon."]


def test_the_memory_tools_write_the_users_memories(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    from langgraph_tiered_memory.agent.tools import (
        create_manage_memory_tool,
        create_search_memory_tool,
    )

    args = {"content": "Prefers aisle seats on planes", "action": "create",
            "memory_type": "preference"}  # fmt: skip
    call = AIMessage(content="", tool_calls=[{"name": "manage_memory", "args": args, "id": "m1"}])
    model = RecordingChatModel(replies=[call, "Saved.", "An aisle seat, then."])
    tools = [create_manage_memory_tool(), create_search_memory_tool()]
    agent = create_memory_agent(model, tools=tools, writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    graph.invoke({"messages": "Note that I like aisle seats."}, _config("ana"))
    assert "Prefers aisle seats on planes" in _contents(mem_store, "ana")
    graph.invoke({"messages": "Book my flight."}, _config("ana"))
    assert "Prefers aisle seats on planes" in prompt_text(model.prompts[-1])


def test_the_summarizer_keeps_working_memory_bounded(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    from langgraph_tiered_memory import SummarizationNode

    model = RecordingChatModel(replies=["ok"])
    summarize = SummarizationNode(max_messages=4, keep_last=2)
    agent = create_memory_agent(model, summarize=summarize, writer=writer, extraction=False)
    graph = agent.compile(store=mem_store, checkpointer=saver)
    config = _config("ana")
    for i in range(4):
        graph.invoke({"messages": f"My locker number {i} is {i * 7 + 100}."}, config)
    state = graph.get_state(config).values
    assert len(state["messages"]) <= 4
    assert "locker number 0" in state["summary"]
    assert "locker number 0" in prompt_text(model.prompts[-1])


# --------------------------------------------------------------------------- async


@pytest.fixture
async def amem_store(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> AsyncIterator[AsyncTieredMemoryStore]:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma-async"),
        key_prefix=key_prefix,
        index=_index(),  # type: ignore[arg-type]
        clock=clock,
    ) as store:
        yield store


async def test_async_runs_recall_isolate_and_store_off_the_reply_path(
    amem_store: AsyncTieredMemoryStore, redis_url: str, key_prefix: str, writer: MemoryWriter
) -> None:
    model = RecordingChatModel(replies=["Noted.", "A mushroom risotto?"])
    gated = GatedStore(amem_store)
    agent = create_memory_agent(model, writer=writer)
    gated_agent = create_memory_agent(model, store=gated, writer=writer, extraction=False)
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, session_prefix=key_prefix
    ) as asaver:
        graph = agent.compile(store=amem_store, checkpointer=asaver)
        await graph.ainvoke({"messages": PREFERENCE}, _config("ana"))
        # no node blocks the event loop (the saver's first connection, made above, would)
        with blockbuster_ctx():
            await graph.ainvoke({"messages": "What should I cook tonight?"}, _config("ana"))
        assert "vegetarian" in prompt_text(model.prompts[-1])
        await graph.ainvoke({"messages": "What should I cook tonight?"}, _config("bob"))
        assert "vegetarian" not in prompt_text(model.prompts[-1])

        gated.gate.clear()
        graph = gated_agent.compile(store=amem_store, checkpointer=asaver)
        stream = graph.astream({"messages": "I love hiking."}, _config("ana"))
        async for update in stream:
            if "agent" in update:
                break
        assert await asyncio.to_thread(gated.writing.wait, 10)
        assert writer.pending == 1
        gated.gate.set()
        rest = [u async for u in stream]
        assert "memory_storage" in rest[-1] and writer.pending == 0
    found = await amem_store.asearch(("memories", "ana"), limit=100)
    assert any("hiking" in str(i.value.get("content")) for i in found)


def _spy(store: Any, name: str, calls: list[str]) -> None:
    real = getattr(store, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    async def aspy(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return await real(*args, **kwargs)

    setattr(store, name, aspy if asyncio.iscoroutinefunction(real) else spy)


def test_the_sync_store_ranks_and_reinforces_through_its_own_methods(
    mem_store: TieredMemoryStore, saver: RedisSessionSaver, writer: MemoryWriter
) -> None:
    ns = ("memories", "ana")
    mem_store.put(ns, "tea", {"content": "drinks jasmine green tea", "memory_type": "preference"})
    calls: list[str] = []
    for name in ("search_memories", "update_importance", "put"):
        _spy(mem_store, name, calls)
    model = RecordingChatModel(replies=["Then a jasmine green tea it is."])
    graph = create_memory_agent(model, writer=writer, extraction=False).compile(
        store=mem_store, checkpointer=saver
    )
    graph.invoke({"messages": "What should I drink?"}, _config("ana"))
    assert "search_memories" in calls and "update_importance" in calls
    tea = mem_store.get_memory(ns, "tea")
    # one access: the ranked search; a get + put reinforcement would count a second
    assert tea is not None and tea.access_count == 1 and tea.importance == pytest.approx(0.6)


async def test_the_async_store_reinforces_through_aupdate_importance(
    amem_store: AsyncTieredMemoryStore, redis_url: str, key_prefix: str, writer: MemoryWriter
) -> None:
    ns = ("memories", "ana")
    await amem_store.aput(
        ns, "tea", {"content": "drinks jasmine green tea", "memory_type": "preference"}
    )
    calls: list[str] = []
    for name in ("asearch_memories", "aupdate_importance"):
        _spy(amem_store, name, calls)
    model = RecordingChatModel(replies=["Then a jasmine green tea it is."])
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, session_prefix=key_prefix
    ) as asaver:
        graph = create_memory_agent(model, writer=writer, extraction=False).compile(
            store=amem_store, checkpointer=asaver
        )
        await graph.ainvoke({"messages": "What should I drink?"}, _config("ana"))
    assert calls.count("asearch_memories") == 1 and calls.count("aupdate_importance") == 1
    tea = await amem_store.aget_memory(ns, "tea")
    assert tea is not None and tea.access_count == 1 and tea.importance == pytest.approx(0.6)
