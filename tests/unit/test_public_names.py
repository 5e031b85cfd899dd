"""Direct tests of public names: configs and their validation, the summarization node,
the forgetting policy and the error hierarchy (no Redis: long-tier stores only)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph, add_messages
from langgraph.store.base import InvalidNamespaceError
from typing_extensions import TypedDict

import langgraph_tiered_memory as tm
from langgraph_tiered_memory import (
    BackendUnavailableError,
    ConfigurationError,
    ForgettingPolicy,
    InvalidFilterError,
    InvalidItemError,
    MemoryEntry,
    ScoringConfig,
    SummarizationNode,
    TieredMemoryError,
    TieredMemoryStore,
)
from langgraph_tiered_memory import errors as errors_module
from langgraph_tiered_memory.ranking.forgetting import (
    DEFAULT_FORGETTING_POLICY,
    calculate_decay,
    should_forget,
)
from tests.fakes import HashingEmbeddings

DIMS = 16


def _long_store(tmp_path: Path, name: str = "chroma", **kwargs: Any) -> TieredMemoryStore:
    return TieredMemoryStore(
        chroma_path=str(tmp_path / name),
        tiers={"default": "long"},
        scoring={"mode": "similarity"},
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["text"]},
        **kwargs,
    )


# --------------------------------------------------------------------------- HNSW


@pytest.mark.parametrize(
    ("hnsw", "match"),
    [
        ({"ef": 10}, r"Unknown chroma_hnsw keys \['ef'\]"),
        ({"ef_search": 1}, r"chroma_hnsw\['ef_search'\] must be an int >= 2, got 1"),
        ({"max_neighbors": True}, r"chroma_hnsw\['max_neighbors'\].*got True"),
        ({"ef_construction": 64.0}, r"chroma_hnsw\['ef_construction'\].*got 64.0"),
        ([("ef_search", 10)], "chroma_hnsw must be a dict"),
    ],
)
def test_chroma_hnsw_validation_names_the_bad_value(tmp_path: Path, hnsw: Any, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        _long_store(tmp_path, chroma_hnsw=hnsw)


# --------------------------------------------------------------------------- scoring


def test_scoring_config_keys_are_the_validated_keys(tmp_path: Path) -> None:
    from langgraph_tiered_memory.ranking.scoring import Scoring

    assert set(get_type_hints(ScoringConfig)) == set(Scoring.__dataclass_fields__)
    config: ScoringConfig = {
        "mode": "memory",
        "retrieval": "keyword",
        "candidates": 7,
        "rrf_k": 3,
        "half_life_days": 2.5,
        "importance_weight": 0,
        "min_score": -1,
        "user_label": "people",
        "shared_types": ["fact"],
        "recency_from": "last_access",
        "context_keys": False,
        "sentence_keys": 2,
    }
    store = TieredMemoryStore(
        chroma_path=str(tmp_path / "c"), tiers={"default": "long"}, scoring=config
    )
    s = store.scoring
    assert (s.mode, s.retrieval, s.candidates, s.rrf_k, s.half_life_days) == (
        "memory",
        "keyword",
        7,
        3.0,
        2.5,
    )
    assert (s.importance_weight, s.min_score, s.user_label, s.shared_types) == (
        0.0,
        -1.0,
        "people",
        ("fact",),
    )
    assert (s.recency_from, s.context_keys, s.sentence_keys) == ("last_access", False, 2)
    assert s.keyword_weight == 1.0 and s.time_keys is True  # untouched keys keep defaults
    store.close()


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"mod": "memory"}, r"Unknown scoring keys \['mod'\]"),
        ({"mode": "cosine"}, "scoring mode 'cosine' is unknown"),
        ({"retrieval": "bm25"}, "scoring retrieval 'bm25' is unknown"),
        ({"rrf_k": 0}, "scoring rrf_k must be > 0, got 0"),
        ({"half_life_days": -1}, "scoring half_life_days must be > 0"),
        ({"importance_weight": -0.1}, "scoring importance_weight must be >= 0"),
        ({"recency_weight": math.nan}, "scoring recency_weight must be a finite number"),
        ({"keyword_weight": True}, "scoring keyword_weight must be a finite number"),
        ({"candidates": 0}, "scoring candidates must be an int >= 1, got 0"),
        ({"sentence_keys": -1}, "scoring sentence_keys must be an int >= 0"),
        ({"context_keys": 1}, "scoring context_keys must be True or False"),
        ({"user_label": ""}, "scoring user_label must be a non-empty string"),
        ({"shared_types": "fact"}, "scoring shared_types must be a list of"),
        ({"shared_types": ["gossip"]}, "scoring shared_types must be a list of"),
        ({"recency_from": "now"}, "scoring recency_from must be"),
        ("memory", "scoring must be a dict"),
    ],
)
def test_scoring_config_validation_names_the_bad_value(
    tmp_path: Path, config: Any, match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        TieredMemoryStore(
            chroma_path=str(tmp_path / "c"), tiers={"default": "long"}, scoring=config
        )


# --------------------------------------------------------------------------- forgetting

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _memory(importance: float, days: float, count: int = 0) -> tuple[MemoryEntry, float]:
    now = (T0 + timedelta(days=days)).timestamp()
    return MemoryEntry("m", "x", "fact", importance, T0, None, count), now


def test_default_forgetting_policy_is_the_documented_one() -> None:
    assert set(DEFAULT_FORGETTING_POLICY) == set(get_type_hints(ForgettingPolicy))
    assert DEFAULT_FORGETTING_POLICY == {
        "half_life_days": 30.0,
        "importance_factor": 0.2,
        "access_factor": 0.05,
        "decay_threshold": 0.8,
        "unaccessed_max_days": 90.0,
        "stale_max_days": 180.0,
        "stale_importance": 0.4,
        "min_importance": 0.2,
        "max_age_days": None,
        "max_memories": None,
    }
    e, now = _memory(0.5, 45, count=1)
    assert calculate_decay(e, now=now, policy=DEFAULT_FORGETTING_POLICY) == calculate_decay(
        e, now=now
    )


def test_each_forgetting_policy_key_changes_the_verdict() -> None:
    # Never accessed for 100 days, importance 0.9: decay (1 - 2**(-100/30)) * 0.82 = 0.739,
    # so of the default rules only "never accessed" holds.
    e, now = _memory(0.9, 100)
    assert should_forget(e, now=now) == (True, "never accessed in 100 days (> 90)")
    assert should_forget(e, now=now, policy={"unaccessed_max_days": 120}) == (False, "")
    off: ForgettingPolicy = {"unaccessed_max_days": None}
    assert should_forget(e, now=now, policy=off) == (False, "")
    verdicts: list[tuple[ForgettingPolicy, str]] = [
        ({"max_age_days": 99}, "100 days old (> 99)"),
        ({"min_importance": 0.95}, "importance 0.9 < 0.95"),
        (
            {"stale_max_days": 50, "stale_importance": 0.95},
            "100 days old (> 50) with importance 0.9 < 0.95",
        ),
        ({"decay_threshold": 0.7}, "decay 0.74 > 0.7"),
        ({"half_life_days": 10}, "decay 0.82 > 0.8"),  # (1 - 2**-10) * 0.82
        ({"importance_factor": 0}, "decay 0.90 > 0.8"),  # 1 - 2**(-100/30)
    ]
    for policy, reason in verdicts:
        assert should_forget(e, now=now, policy={**off, **policy}) == (True, reason), policy
    assert calculate_decay(e, now=now, policy={"half_life_days": 100}) == pytest.approx(0.41)
    e3, now3 = _memory(0.0, 30, count=3)
    assert calculate_decay(e3, now=now3, policy={"access_factor": 0.1}) == pytest.approx(
        0.5 * (1 - 0.1 * math.log(4))
    )


@pytest.mark.parametrize(
    "policy",
    [
        {"half_life_days": 0},
        {"importance_factor": -0.1},
        {"decay_threshold": "high"},
        {"min_importance": True},
        {"max_memories": 0},
        {"max_memories": 2.5},
        {"forget_after": 3},
    ],
)
def test_forgetting_policy_validation(policy: Any) -> None:
    e, now = _memory(0.5, 1)
    key = next(iter(policy))
    with pytest.raises(ConfigurationError, match=key):
        should_forget(e, now=now, policy=policy)


# --------------------------------------------------------------------------- summarization


class ChatState(TypedDict, total=False):
    chat: Annotated[list[AnyMessage], add_messages]
    digest: str


def _chat(n: int) -> list[AnyMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            f"Fact {i}: item {i} costs {i * 3} euros.", id=f"m{i}"
        )
        for i in range(n)
    ]


class _Sessions:
    def __init__(self) -> None:
        self.saved: dict[str, str] = {}

    def set_summary(self, thread_id: str, summary: str) -> None:
        self.saved[thread_id] = summary


def _summary_graph(node: Any) -> Any:
    builder = StateGraph(ChatState)
    builder.add_node("summarize", node)
    builder.add_edge(START, "summarize")
    return builder.compile()


def test_summarization_node_reads_and_writes_custom_keys() -> None:
    sessions = _Sessions()
    node = SummarizationNode(
        messages_key="chat", summary_key="digest", max_messages=4, keep_last=2, sessions=sessions
    )
    graph = _summary_graph(node.as_runnable())
    out = graph.invoke({"chat": _chat(6)}, {"configurable": {"thread_id": "t1"}})
    assert [m.id for m in out["chat"]] == ["m4", "m5"]
    assert "Fact 0" in out["digest"] and "Fact 3" in out["digest"]
    assert "Fact 4" not in out["digest"]
    assert "messages" not in out and "summary" not in out
    assert sessions.saved == {"t1": out["digest"]}
    # Below the trigger nothing changes and nothing is saved.
    quiet = graph.invoke({"chat": _chat(3)}, {"configurable": {"thread_id": "t2"}})
    assert [m.id for m in quiet["chat"]] == ["m0", "m1", "m2"] and "digest" not in quiet
    assert set(sessions.saved) == {"t1"}


def test_summarization_node_added_directly_saves_the_session_summary() -> None:
    sessions = _Sessions()
    node = SummarizationNode(max_messages=4, keep_last=2, sessions=sessions)
    builder = StateGraph(tm.agent.summarizer.SummaryState)
    builder.add_node("summarize", node)
    builder.add_edge(START, "summarize")
    out = builder.compile().invoke({"messages": _chat(6)}, {"configurable": {"thread_id": "t1"}})
    assert sessions.saved == {"t1": out["summary"]}


async def test_summarization_node_async_keeps_the_running_summary() -> None:
    node = SummarizationNode(messages_key="chat", summary_key="digest", max_messages=3, keep_last=1)
    update = await node.acall({"chat": _chat(4), "digest": "Earlier: the user is Ana."})
    assert "Ana" in update["digest"] and "Fact 0" in update["digest"]
    assert [m.id for m in update["chat"]] == ["m0", "m1", "m2"]  # RemoveMessage ids


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_messages": None}, ValueError, "max_messages, max_tokens or both"),
        ({"keep_last": -1}, ValueError, "keep_last must be >= 0, got -1"),
        ({"model": 42}, TypeError, "model must be None, a BaseChatModel"),
    ],
)
def test_summarization_node_constructor_errors(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        SummarizationNode(**kwargs)


# --------------------------------------------------------------------------- errors


def test_every_package_error_is_a_tiered_memory_error() -> None:
    classes = [getattr(errors_module, name) for name in errors_module.__all__]
    assert TieredMemoryError in classes and len(classes) >= 5
    for cls in classes:
        assert issubclass(cls, TieredMemoryError), cls
        assert getattr(tm, cls.__name__, cls) is cls  # the root re-exports the same class
    for cls in (ConfigurationError, InvalidItemError, InvalidFilterError):
        assert issubclass(cls, ValueError)  # `except ValueError` keeps working
    assert issubclass(BackendUnavailableError, ConnectionError)
    assert not issubclass(BackendUnavailableError, ValueError)
    assert not issubclass(TieredMemoryError, ValueError)


def test_store_errors_are_caught_by_the_base_class(tmp_path: Path) -> None:
    with pytest.raises(TieredMemoryError) as bad_config:
        TieredMemoryStore(chroma_path=str(tmp_path / "c"), tiers={"default": "middle"})  # type: ignore[typeddict-item]
    assert isinstance(bad_config.value, ConfigurationError)
    with _long_store(tmp_path) as store:
        with pytest.raises(TieredMemoryError) as bad_item:
            store.put(("a",), "k", {"n": math.inf})
        assert isinstance(bad_item.value, InvalidItemError)
        with pytest.raises(TieredMemoryError) as bad_filter:
            store.search(("a",), filter={"n": {"$regex": "x"}})
        assert isinstance(bad_filter.value, InvalidFilterError)
        # LangGraph's own namespace error stays LangGraph's (it is a ValueError too).
        with pytest.raises(InvalidNamespaceError):
            store.put(("a.b",), "k", {"n": 1})
    closed_port = "redis://127.0.0.1:1/0"
    with pytest.raises(TieredMemoryError) as down:
        with TieredMemoryStore.from_conn_string(
            closed_port, chroma_path=str(tmp_path / "c2"), redis_timeout=2
        ):
            pass
    assert isinstance(down.value, BackendUnavailableError)
