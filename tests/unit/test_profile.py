"""User profiles: the pure planning layer, and the entry points on LangGraph's InMemoryStore."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError, Item, SearchItem
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory.agent.profile import (
    MAX_PROMPT_CHARS,
    ProfileFields,
    aget_user_profile,
    cache_value,
    cached_profile,
    check_user_id,
    fact_subjects,
    fingerprint,
    get_user_profile,
    graph_fingerprint,
    known_facts,
    memories_profile,
    model_profile,
    plan_profile,
    profile_prompt,
    resolve_namespace,
)
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph.types import TripleRecord
from tests.fake_models import RecordedChatModel

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _item(
    key: str, value: dict[str, Any], minutes: int = 0, ns: tuple[str, ...] = ("m", "u")
) -> SearchItem:
    at = T0 + timedelta(minutes=minutes)
    return SearchItem(namespace=ns, key=key, value=value, created_at=at, updated_at=at)


@pytest.mark.parametrize("uid", ["u1", "ana@example", "José", "user 42", "a-b_c:d/e", "用户"])
def test_ordinary_user_ids_are_accepted(uid: str) -> None:
    assert check_user_id(uid) == uid


@pytest.mark.parametrize(
    ("uid", "why"),
    [
        ("", "non-empty"),
        (" \t", "non-empty"),
        ("a.b", "'.'"),
        ("*", "'\\*'"),
        ("{user_id}", "'{'"),
        ("x" * 257, "longer than 256 bytes"),
        ("\ud800", "'\\\\ud800'"),
        (7, "got int"),
        (None, "got NoneType"),
    ],
)
def test_crafted_user_ids_are_refused_with_the_reason(uid: Any, why: str) -> None:
    with pytest.raises(InvalidNamespaceError, match=why):
        check_user_id(uid)


def test_the_namespace_template_is_filled_and_checked() -> None:
    assert resolve_namespace(("memories", "{user_id}"), "u1") == ("memories", "u1")
    assert resolve_namespace(["users", "user-{user_id}", "mem"], "u1") == (
        "users",
        "user-u1",
        "mem",
    )
    for bad in ("memories", ("memories",), ("profiles", "{user_id}"), ("{team}", "{user_id}")):
        with pytest.raises(ConfigurationError):
            resolve_namespace(bad, "u1")
    with pytest.raises(ConfigurationError, match="profile cache"):
        resolve_namespace(("{user_id}",), "profiles")


def test_fingerprint_follows_every_write_and_nothing_else() -> None:
    items = [_item("a", {"content": "x"}), _item("b", {"content": "y"}, 1)]
    fp = fingerprint(items)
    assert fingerprint(list(reversed(items))) == fp  # listing order does not matter
    assert fp.startswith("2:")
    # same key, same update time, new value: still a change
    assert fingerprint([_item("a", {"content": "z"}), items[1]]) != fp
    assert fingerprint([_item("a", {"content": "x"}, 5), items[1]]) != fp
    assert fingerprint(items[:1]) != fp
    moved = _item("b", {"content": "y"}, 1, ns=("m", "u", "sub"))
    assert fingerprint([items[0], moved]) != fp


def test_memories_are_grouped_and_ordered_by_importance_then_recency() -> None:
    plan = plan_profile("u", ("m", "{user_id}"), None, 2)
    items = [
        _item("p1", {"content": "old pref", "memory_type": "preference"}, 0),
        _item("p2", {"content": "new pref", "memory_type": "preference"}, 5),
        _item("p3", {"content": "key pref", "memory_type": "preference", "importance": 1}, 1),
        _item("f1", {"content": " a fact ", "memory_type": "fact"}),
        _item("x", {"content": "odd type", "memory_type": "rumour", "importance": float("nan")}),
        _item("e", {"content": ""}),
        _item("n", {"title": "no content"}),
    ]
    profile = memories_profile(plan, items)
    assert profile.memories_by_type == {
        "preference": ["key pref", "new pref"],
        "fact": ["a fact"],
        "experience": ["odd type"],
        "skill": [],
    }
    assert profile.memory_count == len(items) and profile.source == "memories"


def test_prompt_lists_the_memories_and_cuts_long_ones() -> None:
    plan = plan_profile("u", ("m", "{user_id}"), None, 20)
    long_text = "z" * (MAX_PROMPT_CHARS + 100)
    profile = memories_profile(plan, [_item("a", {"content": long_text, "memory_type": "fact"})])
    system, human = profile_prompt(profile)
    assert "basics" in str(system.content)
    assert "Fact memories:" in str(human.content)
    assert "z" * MAX_PROMPT_CHARS in str(human.content)
    assert "z" * (MAX_PROMPT_CHARS + 1) not in str(human.content)


def test_model_output_is_accepted_as_instance_or_dict_and_malformed_output_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = memories_profile(plan_profile("u", ("m", "{user_id}"), None, 20), [])
    done = model_profile(base, ProfileFields(basics=[" Ana ", " "], special_needs=["wheelchair"]))
    assert done is not None and done.source == "model"
    assert done.basics == ["Ana"] and done.special_needs == ["wheelchair"]
    as_dict = model_profile(base, {"communication_preferences": ["formal"]})
    assert as_dict is not None and as_dict.communication_preferences == ["formal"]
    with caplog.at_level(logging.WARNING, logger="langgraph_tiered_memory.agent.profile"):
        assert model_profile(base, None) is None
        assert model_profile(base, {"basics": 3}) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]
    assert all("malformed" in r.getMessage() for r in caplog.records)


def test_a_cache_record_is_only_used_by_its_own_user_namespace_options_and_memories() -> None:
    model = RecordedChatModel()
    plan = plan_profile("u", ("m", "{user_id}"), model, 20)
    items = [_item("a", {"content": "x"}, ns=("m", "u"))]
    fp = fingerprint(items)
    profile = model_profile(memories_profile(plan, items), {"basics": ["b"]})
    assert profile is not None
    record = cache_value(plan, profile, fp)

    def stored(value: dict[str, Any]) -> Item:
        return Item(
            value=value, key="k", namespace=plan.cache_namespace, created_at=T0, updated_at=T0
        )

    assert cached_profile(plan, stored(record), fp, "model") == profile
    assert cached_profile(plan, None, fp, "model") is None
    assert cached_profile(plan, stored(record), "1:other", "model") is None
    assert cached_profile(plan, stored(record), fp, "memories") is None
    other_user = plan_profile("v", ("m", "{user_id}"), model, 20)
    assert cached_profile(other_user, stored(record), fp, "model") is None
    other_ns = plan_profile("u", ("n", "{user_id}"), model, 20)
    assert cached_profile(other_ns, stored(record), fp, "model") is None
    fewer = plan_profile("u", ("m", "{user_id}"), model, 5)
    assert cached_profile(fewer, stored(record), fp, "model") is None
    forged = {**record, "profile": {**record["profile"], "user_id": "v"}}
    assert cached_profile(plan, stored(forged), fp, "model") is None
    broken = {**record, "profile": {"basics": 1}}
    assert cached_profile(plan, stored(broken), fp, "model") is None
    assert plan.cache_namespace == ("profiles", "u")
    assert plan.cache_key("model") != other_ns.cache_key("model")


def test_any_base_store_works_and_the_cache_saves_model_calls() -> None:
    store = InMemoryStore()
    store.put(("memories", "ana"), "m1", {"content": "Ana is vegan", "memory_type": "fact"})
    store.put(("memories", "bob"), "m1", {"content": "Bob eats meat", "memory_type": "fact"})
    model = RecordedChatModel(structured=[{"special_needs": ["vegan meals"]}, {"basics": ["b2"]}])
    first = get_user_profile(store, "ana", model=model)
    assert first.special_needs == ["vegan meals"] and first.facts == ["Ana is vegan"]
    assert get_user_profile(store, "ana", model=model) == first
    assert len(model.structured_prompts) == 1
    assert "Bob" not in "\n".join(str(m.content) for m in model.structured_prompts[0])
    store.put(("memories", "ana"), "m2", {"content": "Ana has a dog"})
    assert get_user_profile(store, "ana", model=model).basics == ["b2"]
    assert len(model.structured_prompts) == 2
    assert store.search(("memories", "ana"), limit=10)[0].namespace == ("memories", "ana")
    assert [it.key for it in store.search(("memories", "ana"), limit=10)] == ["m1", "m2"]


def test_async_twin_on_any_base_store() -> None:
    async def main() -> None:
        store = InMemoryStore()
        await store.aput(
            ("memories", "ana"), "m1", {"content": "likes tea", "memory_type": "preference"}
        )
        model = RecordedChatModel(structured=[{"basics": ["tea drinker"]}])
        first = await aget_user_profile(store, "ana", model=model)
        again = await aget_user_profile(store, "ana", model=model)
        assert first == again and first.basics == ["tea drinker"]
        assert len(model.structured_prompts) == 1
        plain = await aget_user_profile(store, "ana")
        assert plain.source == "memories" and plain.preferences == ["likes tea"]
        with pytest.raises(InvalidNamespaceError):
            await aget_user_profile(store, "a.b")

    asyncio.run(main())


# ------------------------------------------------------------------ knowledge-graph facts


def _record(subject: str, relation: str, obj: str, keys: tuple[str, ...] = ("m1",)) -> TripleRecord:
    return TripleRecord(subject, relation, obj, ("memories", "ana"), None, keys)


def test_the_users_subjects_are_their_entity_name_and_user() -> None:
    assert fact_subjects("ana") == ["ana", "user"]
    assert fact_subjects("Ana Maria") == ["ana maria", "user"]
    assert fact_subjects("user") == ["user"]


def test_known_facts_read_relation_and_object_once_each() -> None:
    records = [
        _record("user", "lives_in", "porto"),
        _record("ana", "lives_in", "porto", ("m2",)),
        _record("user", "likes", "green tea"),
    ]
    assert known_facts(records) == ["lives in porto", "likes green tea"]
    fp = graph_fingerprint(records)
    assert graph_fingerprint(list(reversed(records))) == fp
    assert graph_fingerprint(records[:2]) != fp
    moved = [*records[:2], _record("user", "likes", "green tea", ("m3",))]
    assert graph_fingerprint(moved) != fp  # the supporting memory counts too


def test_prompt_and_text_show_known_facts_only_when_there_are_some() -> None:
    plan = plan_profile("ana", ("memories", "{user_id}"), None, 20)
    items = [_item("a", {"content": "likes tea", "memory_type": "preference"})]
    without = memories_profile(plan, items)
    with_facts = memories_profile(plan, items, facts=["lives in porto"])
    assert without.known_facts == []
    assert "Known facts" not in without.to_text()
    assert "Known facts" not in str(profile_prompt(without)[1].content)
    assert with_facts.to_text().endswith("Known facts about the user:\n- lives in porto")
    human = str(profile_prompt(with_facts)[1].content)
    assert "Known facts about the user (from the knowledge graph):\n- lives in porto" in human
