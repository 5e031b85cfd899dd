"""The load benchmark's pure parts: scripts, fake model, lost-update comparison, options."""

from __future__ import annotations

from collections import Counter

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from tiered_memory_benchmarks._load_compare import UserState, compare_states
from tiered_memory_benchmarks._load_script import (
    ScriptedChatModel,
    build_sessions,
    seed_memories,
    user_of,
)
from tiered_memory_benchmarks.load import LoadBenchConfig, LoadBenchmarkError


def test_sessions_are_spread_over_users_round_robin_with_unique_messages() -> None:
    scripts = build_sessions(7, 8, 3, thread_prefix="p")
    assert [s.user_id for s in scripts] == [user_of(i, 3) for i in range(7)]
    assert [s.user_id for s in scripts[:4]] == ["user-000", "user-001", "user-002", "user-000"]
    assert len({s.thread_id for s in scripts}) == 7
    messages = [m for s in scripts for m in s.messages]
    assert len(messages) == 56 and len(set(messages)) == 56
    assert build_sessions(7, 8, 3, thread_prefix="p") == scripts  # deterministic


def test_scripted_model_replies_depend_only_on_the_last_user_message() -> None:
    model = ScriptedChatModel()
    a = model.invoke([SystemMessage("memories: A"), HumanMessage("I like tea.")])
    b = model.invoke(
        [
            SystemMessage("memories: B, C"),
            HumanMessage("hi"),
            AIMessage("x"),
            HumanMessage("I like tea."),
        ]
    )
    c = model.invoke([HumanMessage("I like coffee.")])
    assert a.content == b.content != c.content


async def test_scripted_model_async_path_matches_sync() -> None:
    model = ScriptedChatModel(delay=0.001)
    msgs = [HumanMessage("Remember my code word is teal.")]
    assert (await model.ainvoke(msgs)).content == model.invoke(msgs).content


def test_seed_memories_are_deterministic_per_user() -> None:
    assert seed_memories("user-001", 3) == seed_memories("user-001", 3)
    assert [k for k, _ in seed_memories("u", 3)] == ["seed-000", "seed-001", "seed-002"]
    assert seed_memories("u", 1)[0][1]["content"] != seed_memories("v", 1)[0][1]["content"]


def _state(*contents: str, accesses: int = 0) -> UserState:
    return UserState(Counter(contents), accesses)


def test_compare_counts_missing_contents_with_multiplicity_and_short_accesses() -> None:
    replay = {"u1": _state("a", "b", "b", accesses=30), "u2": _state("c", accesses=10)}
    run = {"u1": _state("a", "b", "x", accesses=27), "u2": _state("c", accesses=12)}
    lost = compare_states(run, replay)
    assert lost.lost_memories == {"u1": 1}  # one of the two "b"
    assert lost.unexpected_memories == {"u1": 1}  # "x"
    assert lost.lost_accesses == {"u1": 3}  # u2 has more accesses, not fewer: not lost
    assert lost.total == 4
    data = lost.to_dict()
    assert data["lost_updates"] == 4 and data["users_with_lost_updates"] == ["u1"]
    assert data["examples"] == ["u1: b"]


def test_compare_counts_a_user_missing_from_the_run_entirely() -> None:
    lost = compare_states({}, {"u1": _state("a", "b", accesses=5)})
    assert lost.lost_memories == {"u1": 2} and lost.lost_accesses == {"u1": 5}


def test_identical_states_lose_nothing() -> None:
    state = {"u1": _state("a", "b", accesses=7)}
    assert compare_states(state, dict(state)).total == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sessions": 0}, "sessions must be >= 1"),
        ({"users": 5, "sessions": 3}, "users must be from 1 to sessions"),
        ({"mode": "processes"}, "mode must be one of async, threads"),
        ({"memory_limit": 30, "seed_memories": 10}, "must exceed memory_limit"),
    ],
)
def test_config_refuses_bad_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(LoadBenchmarkError, match=message):
        LoadBenchConfig(**options).validate()  # type: ignore[arg-type]


def test_default_users_is_one_per_five_sessions() -> None:
    assert LoadBenchConfig(sessions=50).user_count == 10
    assert LoadBenchConfig(sessions=3).user_count == 1
    assert LoadBenchConfig(memory_limit=10).seed_count == 40


def _stored_texts(sessions: int, turns: int, users: int, user: str) -> list[str]:
    """What the agent can store for `user`: seeds, interactions, extracted statements."""
    from langgraph_tiered_memory.agent.extraction import find_statements

    texts = [v["content"] for _, v in seed_memories(user, 20)]
    for script in build_sessions(sessions, turns, users, thread_prefix="p"):
        if script.user_id != user:
            continue
        for message in script.messages:
            reply = ScriptedChatModel().invoke([HumanMessage(message)]).text
            texts.append(f"User: {message}\nAssistant: {reply}")
            texts.extend(s.content for s in find_statements(message))
    return texts


def test_every_memory_a_run_stores_counts_as_used_by_every_reply() -> None:
    # the number of reinforcements of a turn must not depend on which memories it got
    from langgraph_tiered_memory.agent.builder import RetrievedMemory, used_memories

    texts = _stored_texts(6, 8, 2, "user-000")
    memories = [
        RetrievedMemory(
            key=str(i), namespace=["m"], content=t, memory_type="fact", importance=0.5, score=1.0
        )
        for i, t in enumerate(texts)
    ]
    for message in ("hello", "What do you remember about my task 3-0?"):
        reply = ScriptedChatModel().invoke([HumanMessage(message)]).text
        assert len(used_memories(reply, memories)) == len(memories)


def test_no_two_stored_texts_of_a_user_are_near_duplicates_or_share_a_slot() -> None:
    # otherwise extraction would update one with the other, in an order-dependent way
    import numpy as np

    from langgraph_tiered_memory.agent.extraction import DEFAULT_SIMILARITY_THRESHOLD, slot_of
    from tiered_memory_benchmarks.forgetting import TopicEmbeddings

    texts = _stored_texts(15, 12, 3, "user-001")
    vectors = np.array(TopicEmbeddings(LoadBenchConfig().dims).embed_documents(texts))
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, 0.0)
    assert sims.max() < 0.75 < DEFAULT_SIMILARITY_THRESHOLD
    slots = [s.name for s in map(slot_of, texts) if s is not None]
    assert slots and len(slots) == len(set(slots))
