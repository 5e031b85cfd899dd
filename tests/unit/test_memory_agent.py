"""The memory agent without Redis: its rules, its background writer, its graph on InMemoryStore."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory.agent.builder import (
    ImportanceRules,
    MemoryWriteError,
    MemoryWriter,
    WriteJob,
    WriteStep,
    create_memory_agent,
    interaction_importance,
    is_transient,
    used_memories,
)
from langgraph_tiered_memory.agent.nodes import fill_namespace, render_memory_context
from langgraph_tiered_memory.agent.writer import HELD_STEP, MemoryWriterFullError
from langgraph_tiered_memory.errors import BackendUnavailableError, ConfigurationError
from tests.fake_models import RecordingChatModel, prompt_text

# --------------------------------------------------------------------------- rules


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", 0.5),
        ("x" * 199, 0.5),
        ("x" * 200, 0.7),
        ("Remember that my flight is on Friday.", 0.8),
        ("This is IMPORTANT.", 0.8),
        ("Importantly, it rains.", 0.8),
        ("That is unimportant.", 0.5),
        ("I remembered nothing.", 0.8),
        ("请记住我的生日", 0.8),
        ("这件事很重要", 0.8),
        ("Please remember this: " + "y" * 200, 1.0),
    ],
)
def test_interaction_importance_follows_the_rules(text: str, expected: float) -> None:
    assert interaction_importance(text) == pytest.approx(expected)


def test_importance_rules_and_functions_are_configurable() -> None:
    rules = ImportanceRules(base=0.3, long_message_chars=10, emphasis_words=("urgent",))
    assert interaction_importance("urgent and long enough", rules) == pytest.approx(0.8)
    assert interaction_importance("remember", rules) == pytest.approx(0.3)
    assert interaction_importance("anything", lambda text: 7.0) == 1.0


def _memory(key: str, content: str) -> Any:
    return {
        "key": key,
        "namespace": ["memories", "u1"],
        "content": content,
        "memory_type": "fact",
        "importance": 0.5,
        "score": 1.0,
    }


def test_used_memories_by_lexical_overlap() -> None:
    memories = [
        _memory("city", "lives in Lisbon"),
        _memory("long", "works as a nurse at the central hospital on night shifts"),
        _memory("pet", "has a cat named Miso"),
        _memory("cjk", "喝绿茶"),
    ]
    reply = "Since you live in Lisbon and work night shifts at the hospital, try 绿茶."
    assert [m["key"] for m in used_memories(reply, memories)] == ["city", "long", "cjk"]
    assert used_memories("The and for with.", memories) == []


def test_namespace_templates_need_their_config_values() -> None:
    config = {"configurable": {"user_id": "u1", "org": "acme"}}
    assert fill_namespace(("memories", "{org}", "{user_id}"), config) == ("memories", "acme", "u1")
    kept = fill_namespace(("memories", "{org}", "{user_id}"), config, keep=("user_id",))
    assert kept == ("memories", "acme", "{user_id}")
    with pytest.raises(ConfigurationError, match="user_id"):
        fill_namespace(("memories", "{user_id}"), {"configurable": {}})


def test_memory_context_renders_every_part() -> None:
    text = render_memory_context(
        "P:{profile}|M:{memories}|S:{summary}",
        summary="talked about tea",
        memories=[_memory("city", "lives in Lisbon")],
        profile=None,
    )
    assert text == "P:(none)|M:- [fact] lives in Lisbon|S:talked about tea"


def test_bad_options_fail_when_the_graph_is_built() -> None:
    model = RecordingChatModel()
    with pytest.raises(ConfigurationError, match="placeholders"):
        create_memory_agent(model, prompt="{memories} {name}")
    with pytest.raises(ConfigurationError, match="user_id"):
        create_memory_agent(model, namespace=("memories", "shared"))
    with pytest.raises(ConfigurationError, match="summarize"):
        create_memory_agent(model, summarize="yes")
    with pytest.raises(TypeError, match="model"):
        create_memory_agent(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- writer


def _step(name: str, action: Any) -> WriteStep:
    async def arun() -> None:
        action()

    return WriteStep(name, action, arun)


def test_transient_errors_are_retried_and_done_steps_never_rerun() -> None:
    calls: list[str] = []
    failures = [ConnectionError("down"), TimeoutError("slow")]

    def flaky() -> None:
        calls.append("flaky")
        if failures:
            raise failures.pop(0)

    writer = MemoryWriter(retry_wait=0.0)
    job = WriteJob("u1", [_step("first", lambda: calls.append("first")), _step("flaky", flaky)])
    assert writer.wait(writer.submit(job))
    assert calls == ["first", "flaky", "flaky", "flaky"]
    assert is_transient(BackendUnavailableError("redis down"))
    assert not is_transient(ValueError("bad"))


def test_a_failed_job_is_kept_until_retried_and_flush_raises_it() -> None:
    broken = [True]
    written: list[str] = []

    def write() -> None:
        if broken[0]:
            raise ValueError("bad value")
        written.append("ok")

    writer = MemoryWriter(retry_wait=0.0, attempts=3)
    job_id = writer.submit(WriteJob("u1", [_step("write", write)], description="job A"))
    with pytest.raises(MemoryWriteError, match="job A.*bad value"):
        writer.wait(job_id)
    with pytest.raises(MemoryWriteError, match="job A.*bad value"):
        writer.flush()
    assert writer.status(job_id) == "failed"  # kept: waiting again raises again
    with pytest.raises(MemoryWriteError, match="job A.*bad value"):
        writer.wait(job_id)
    assert [f.step for f in writer.failed] == ["write"]
    broken[0] = False
    assert writer.retry_failed() == [job_id]
    assert writer.wait(job_id) is True
    writer.flush()
    assert written == ["ok"] and writer.failed == [] and writer.status(job_id) == "done"


def test_transient_errors_that_outlast_the_attempts_are_kept() -> None:
    def down() -> None:
        raise ConnectionError("still down")

    writer = MemoryWriter(retry_wait=0.0, attempts=2)
    writer.submit(WriteJob("u1", [_step("put", down)]))
    with pytest.raises(MemoryWriteError, match="still down"):
        writer.flush()
    assert len(writer.discard_failed()) == 1 and writer.failed == []
    writer.flush()


def test_jobs_of_one_lane_run_in_order_and_lanes_run_in_parallel() -> None:
    release = threading.Event()
    order: list[str] = []
    writer = MemoryWriter(max_workers=2)
    blocked = WriteJob("a", [_step("a1", lambda: (release.wait(10), order.append("a1")))])
    writer.submit(blocked)
    writer.submit(WriteJob("a", [_step("a2", lambda: order.append("a2"))]))
    other = writer.submit(WriteJob("b", [_step("b1", lambda: order.append("b1"))]))
    assert writer.wait(other, timeout=10)  # lane b is not stuck behind lane a
    assert order == ["b1"] and writer.pending == 2
    release.set()
    writer.flush(timeout=10)
    assert order == ["b1", "a1", "a2"]
    assert writer.wait("unknown-id") is False


def test_a_failed_job_holds_its_lane_so_a_users_writes_keep_their_order() -> None:
    broken = [True]
    order: list[str] = []

    def first() -> None:
        if broken[0]:
            raise ValueError("disk full")
        order.append("a1")

    writer = MemoryWriter(retry_wait=0.0)
    a1 = writer.submit(WriteJob("a", [_step("a1", first)]))
    with pytest.raises(MemoryWriteError, match="disk full"):
        writer.wait(a1)
    # the next job of the lane runs the kept one first; it fails again, so a2 waits
    a2 = writer.submit(WriteJob("a", [_step("a2", lambda: order.append("a2"))]))
    with pytest.raises(MemoryWriteError, match="held behind"):
        writer.wait(a2)
    b1 = writer.submit(WriteJob("b", [_step("b1", lambda: order.append("b1"))]))
    assert writer.wait(b1) and order == ["b1"]  # other lanes go on
    assert [(f.job.id, f.step) for f in writer.failed] == [(a1, "a1"), (a2, HELD_STEP)]
    assert writer.status(a2) == "failed" and writer.status("never-seen") == "unknown"
    broken[0] = False  # the cause is gone: the lane's next job heals it, in order
    writer.submit(WriteJob("a", [_step("a3", lambda: order.append("a3"))]))
    writer.flush(10)
    assert order == ["b1", "a1", "a2", "a3"] and writer.failed == []
    assert writer.status(a2) == "done"


def test_discarding_a_failed_job_lets_the_jobs_held_behind_it_run() -> None:
    order: list[str] = []

    def poison() -> None:
        raise ValueError("cannot be written")

    writer = MemoryWriter(retry_wait=0.0)
    bad = writer.submit(WriteJob("a", [_step("bad", poison)]))
    with pytest.raises(MemoryWriteError):
        writer.wait(bad)
    later = writer.submit(WriteJob("a", [_step("a2", lambda: order.append("a2"))]))
    with pytest.raises(MemoryWriteError, match="held behind"):
        writer.wait(later)
    [dropped] = writer.discard_failed([bad])
    assert dropped.job.id == bad and writer.status(bad) == "done"
    writer.retry_failed()
    writer.flush(10)
    assert order == ["a2"] and writer.failed == []


async def test_async_jobs_run_on_the_event_loop_and_are_awaited() -> None:
    seen: list[str] = []
    gate = asyncio.Event()

    async def write() -> None:
        await gate.wait()
        seen.append("async")

    writer = MemoryWriter(retry_wait=0.0)
    job_id = writer.asubmit(WriteJob("u1", [WriteStep("w", lambda: None, write)]))
    assert writer.pending == 1 and seen == []
    gate.set()
    assert await writer.await_job(job_id)
    await writer.aflush()
    assert seen == ["async"] and writer.pending == 0

    failures = [ValueError("bad")]

    async def fail_once() -> None:
        if failures:
            raise failures.pop()
        seen.append("retried")

    writer.asubmit(WriteJob("u1", [WriteStep("w", lambda: None, fail_once)]))
    with pytest.raises(MemoryWriteError, match="bad"):
        await writer.aflush()
    await writer.aretry_failed()
    await writer.aflush()
    assert seen == ["async", "retried"]


# --------------------------------------------------------------------------- graph


def _graph(model: Any, store: Any, **options: Any) -> Any:
    agent = create_memory_agent(model, writer=MemoryWriter(retry_wait=0.0), **options)
    return agent.compile(store=store, checkpointer=InMemorySaver())


def _cfg(user: str, thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def test_messages_in_every_form_and_the_context_stays_out_of_the_history() -> None:
    store = InMemoryStore()
    model = RecordingChatModel(replies=["one", "two", "three"])
    graph = _graph(model, store, extraction=False)
    config = _cfg("u1", "t1")
    graph.invoke({"messages": "as a string"}, config)
    graph.invoke({"messages": [("user", "as a tuple")]}, config)
    out = graph.invoke({"messages": [{"role": "user", "content": "as a dict"}]}, config)
    assert [m.content for m in out["messages"]] == [
        "as a string", "one", "as a tuple", "two", "as a dict", "three",
    ]  # fmt: skip
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])
    last_prompt = model.prompts[-1]
    assert isinstance(last_prompt[0], SystemMessage) and len(last_prompt) == 6
    assert "as a string" in last_prompt[0].content  # retrieved from the long-term store
    stored = store.search(("memories", "u1"), limit=10)
    assert len(stored) == 3 and out["unstored_turns"] == []


def test_a_run_without_a_user_id_fails_and_names_the_fix() -> None:
    graph = _graph(RecordingChatModel(), InMemoryStore(), extraction=False)
    with pytest.raises(ConfigurationError, match="user_id"):
        graph.invoke({"messages": "hi"}, {"configurable": {"thread_id": "t"}})


def test_storage_modes_inline_and_off() -> None:
    store = InMemoryStore()
    inline = _graph(RecordingChatModel(replies=["ok"]), store, extraction=False, background=False)
    inline.invoke({"messages": "remember my shoe size is 42"}, _cfg("u1", "t1"))
    [item] = store.search(("memories", "u1"))
    assert item.value["importance"] == pytest.approx(0.8)
    off = _graph(RecordingChatModel(replies=["ok"]), store, extraction=False, storage=False)
    off.invoke({"messages": "hello"}, _cfg("u2", "t2"))
    assert store.search(("memories", "u2")) == []
    assert "memory_storage" not in off.get_graph().nodes


def test_extraction_and_profile_run_with_any_store() -> None:
    store = InMemoryStore()
    model = RecordingChatModel(replies=["Noted.", "Enjoy!"])
    graph = _graph(model, store)
    graph.invoke({"messages": "I prefer window seats on trains."}, _cfg("u1", "t1"))
    graph.invoke({"messages": "Book me a train."}, _cfg("u1", "t2"))
    prompt = prompt_text(model.prompts[-1])
    assert "window seats" in prompt
    kinds = {i.value.get("memory_type") for i in store.search(("memories", "u1"), limit=20)}
    assert "experience" in kinds and len(kinds) > 1  # the interaction and an extraction


async def test_async_graph_on_in_memory_store() -> None:
    store = InMemoryStore()
    model = RecordingChatModel(replies=["Noted.", "Sure."])
    graph = _graph(model, store)
    await graph.ainvoke({"messages": [HumanMessage("Remember: I am allergic to nuts.")]},
                        _cfg("u1", "t1"))  # fmt: skip
    out = await graph.ainvoke({"messages": "Suggest a snack."}, _cfg("u1", "t2"))
    assert isinstance(out["messages"][-1], AIMessage)
    assert "allergic to nuts" in prompt_text(model.prompts[-1])
    stored = await store.asearch(("memories", "u1"), limit=20)
    assert any("allergic" in str(i.value.get("content")) for i in stored)


def test_redaction_runs_before_anything_is_stored() -> None:
    store = InMemoryStore()
    model = RecordingChatModel(replies=["I will write to ana@example.com."])
    graph = _graph(model, store, redactor=True)
    graph.invoke({"messages": "Remember: my email is ana@example.com."}, _cfg("u1", "t1"))
    stored = store.search(("memories", "u1"), limit=20)
    assert stored and not any("ana@example.com" in str(i.value) for i in stored)
    [turn] = [i for i in stored if i.key.startswith("turn-")]
    assert "[email]" in turn.value["content"] and turn.value["redactions"] == {"email": 2}


class FailingWrites(BaseStore):
    """Delegates to a store; its first writes to the memories raise `failures`."""

    def __init__(self, store: BaseStore, failures: list[BaseException]) -> None:
        self.store = store
        self.failures = failures

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        writes = [op for op in ops if isinstance(op, PutOp) and op.namespace[0] == "memories"]
        if writes and self.failures:
            raise self.failures.pop(0)
        return self.store.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def test_an_older_turn_written_after_a_failure_never_replaces_a_newer_fact() -> None:
    store = InMemoryStore()
    failing = FailingWrites(store, [ValueError("disk full")])
    writer = MemoryWriter(retry_wait=0.0)
    model = RecordingChatModel(replies=["Noted.", "Noted."])
    agent = create_memory_agent(model, store=failing, writer=writer, profile=False)
    graph = agent.compile(checkpointer=InMemorySaver())
    with pytest.raises(MemoryWriteError, match="disk full"):
        graph.invoke({"messages": "I live in Berlin."}, _cfg("ana", "monday"))
    graph.invoke({"messages": "I moved to Lisbon."}, _cfg("ana", "friday"))
    writer.retry_failed()
    writer.flush(10)
    facts = [
        i.value["content"]
        for i in store.search(("memories", "ana"), limit=20)
        if i.value.get("source") == "extraction"
    ]
    assert facts == ["I moved to Lisbon"]
    turns = [i for i in store.search(("memories", "ana"), limit=20) if i.key.startswith("turn-")]
    assert len(turns) == 2 and writer.failed == []


def _agent(saver: InMemorySaver, reply: str, on: BaseStore, writer: MemoryWriter) -> Any:
    """A memory agent on `on` whose writes go through `writer` (one per simulated process)."""
    model = RecordingChatModel(replies=[reply])
    return create_memory_agent(model, store=on, writer=writer, profile=False).compile(
        checkpointer=saver
    )


async def _turn_left_unstored(
    saver: InMemorySaver, store: BaseStore, config: Any, text: str
) -> None:
    """A turn whose storage failed in a process that then died with its kept job."""
    gone = MemoryWriter(retry_wait=0.0)
    failing = FailingWrites(store, [ValueError("disk full")])
    with pytest.raises(MemoryWriteError, match="disk full"):
        await _agent(saver, "Noted.", failing, gone).ainvoke({"messages": text}, config)
    gone.discard_failed()


async def test_a_turn_left_unstored_is_stored_by_the_threads_next_run_elsewhere() -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    config = _cfg("ana", "t1")
    await _turn_left_unstored(saver, store, config, "I live in Berlin.")
    # the thread's next message, in another process
    here = MemoryWriter(retry_wait=0.0)
    out = await _agent(saver, "In Berlin.", store, here).ainvoke(
        {"messages": "Where do I live?"}, config
    )
    assert out["unstored_turns"] == []
    found = store.search(("memories", "ana"), limit=20)
    assert [i.value["content"] for i in found if i.value.get("source") == "extraction"] == [
        "I live in Berlin"
    ]
    assert len([i for i in found if i.key.startswith("turn-")]) == 2


async def test_a_guests_unstored_turn_waits_for_the_guest_and_names_no_user() -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    await _turn_left_unstored(saver, store, _cfg("guest-7", "party"), "I live in Oslo.")
    here = MemoryWriter(retry_wait=0.0)  # another process
    left = (await saver.aget_tuple(_cfg("guest-7", "party"))).checkpoint  # type: ignore[union-attr]
    assert "guest-7" not in repr(left["channel_values"]["unstored_turns"])
    # the owner's next message stores the owner's turn only; the guest's turn waits
    out = await _agent(saver, "Hi.", store, here).ainvoke(
        {"messages": "Hello all."}, _cfg("host", "party")
    )
    assert len(out["unstored_turns"]) == 1
    assert store.search(("memories", "guest-7")) == []
    assert [i.key[:5] for i in store.search(("memories", "host"))] == ["turn-"]
    # the guest's next message stores it, in the guest's namespace
    out = await _agent(saver, "Oslo.", store, here).ainvoke(
        {"messages": "Where do I live?"}, _cfg("guest-7", "party")
    )
    assert out["unstored_turns"] == []
    found = store.search(("memories", "guest-7"), limit=20)
    assert [i.value["content"] for i in found if i.value.get("source") == "extraction"] == [
        "I live in Oslo"
    ]


def test_pending_writes_finish_and_failures_are_logged_at_exit(tmp_path: Any) -> None:
    import subprocess
    import sys
    import textwrap

    done = tmp_path / "written.txt"
    script = textwrap.dedent(
        f"""
        import logging, time
        from langgraph_tiered_memory.agent.builder import MemoryWriter, WriteJob, WriteStep

        logging.basicConfig(level=logging.ERROR)

        def slow():
            time.sleep(0.5)  # still running when the main thread ends
            open({str(done)!r}, "w").write("ok")

        def broken():
            raise ValueError("disk full")

        async def never():
            raise AssertionError

        writer = MemoryWriter(retry_wait=0.0)
        writer.submit(WriteJob("a", [WriteStep("slow", slow, never)]))
        writer.submit(WriteJob("b", [WriteStep("broken", broken, never)], description="job B"))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert done.read_text() == "ok"
    assert "At exit" in result.stderr and "job B" in result.stderr


def test_a_full_writer_refuses_new_jobs_and_loses_none_it_accepted() -> None:
    writer = MemoryWriter(max_jobs=2, retry_wait=0.0)
    release, order = threading.Event(), []

    def first() -> None:
        assert release.wait(10)
        order.append("a1")

    writer.submit(WriteJob("a", [_step("a1", first)]))
    assert writer.wait(writer.submit(WriteJob("b", [_step("b1", lambda: order.append("b1"))])))
    writer.submit(WriteJob("a", [_step("a2", lambda: order.append("a2"))]))
    with pytest.raises(MemoryWriterFullError, match="max_jobs"):
        writer.submit(WriteJob("c", [_step("c1", lambda: order.append("c1"))]))
    assert writer.pending == 2
    release.set()
    writer.flush(10)
    assert order == ["b1", "a1", "a2"]
    writer.submit(WriteJob("c", [_step("c1", lambda: order.append("c1"))]))  # room again
    writer.flush(10)
    assert order[-1] == "c1"


async def test_a_flush_from_another_thread_waits_for_the_jobs_of_async_runs() -> None:
    writer = MemoryWriter(retry_wait=0.0)
    written: list[str] = []

    async def slow() -> None:
        await asyncio.sleep(0.2)
        written.append("async")

    writer.asubmit(WriteJob("u1", [WriteStep("put", lambda: None, slow)]))
    await asyncio.to_thread(writer.flush, 10)  # as flush_memory_writes() in a worker
    assert written == ["async"] and writer.pending == 0


def test_a_job_left_on_a_finished_event_loop_is_written_by_the_worker_threads() -> None:
    writer = MemoryWriter(retry_wait=0.0)
    written: list[str] = []

    async def never_finishes() -> None:
        await asyncio.Event().wait()

    async def run() -> str:  # returns before its job is written, as a cancelled run does
        job = WriteJob("u1", [WriteStep("put", lambda: written.append("sync"), never_finishes)])
        job_id = writer.asubmit(job)
        await asyncio.sleep(0)
        return job_id

    job_id = asyncio.run(run())
    assert writer.wait(job_id, timeout=10) and written == ["sync"]
    writer.submit(WriteJob("u1", [_step("next", lambda: written.append("next"))]))
    writer.flush(10)
    assert written == ["sync", "next"] and writer.pending == 0


def test_a_busy_lane_does_not_keep_the_only_worker_from_other_users() -> None:
    writer = MemoryWriter(max_workers=1, retry_wait=0.0)
    order: list[str] = []
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        started.set()
        assert release.wait(10)
        order.append("a1")

    writer.submit(WriteJob("a", [_step("a1", first)]))
    assert started.wait(10)
    for name in ("a2", "a3"):
        writer.submit(WriteJob("a", [_step(name, lambda name=name: order.append(name))]))
    writer.submit(WriteJob("b", [_step("b1", lambda: order.append("b1"))]))
    release.set()
    writer.flush(10)
    # user b waited for one job of user a, not for a's whole queue; a's stay in order
    assert order == ["a1", "b1", "a2", "a3"]
    writer.close()
