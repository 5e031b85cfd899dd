"""Extraction updates memories instead of duplicating them, with and without a model.

The model path runs on `RecordedChatModel` (recorded structured replies, recorded
prompts); the stores are LangGraph's `InMemoryStore`, with and without an index.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langgraph_tiered_memory.agent.extraction import (
    ExtractionResult,
    aextract_memories,
    extract_memories,
)
from tests.fake_models import RecordedChatModel
from tests.fakes import HashingEmbeddings

NS = ("memories", "u1")
T0 = 1_700_000_000.0


def _store(index: bool = False) -> InMemoryStore:
    if not index:
        return InMemoryStore()
    return InMemoryStore(index={"dims": 64, "embed": HashingEmbeddings(64), "fields": ["content"]})


def _contents(store: InMemoryStore, ns: tuple[str, ...] = NS) -> list[str]:
    return sorted(i.value["content"] for i in store.search(ns, limit=100) if i.namespace == ns)


def _memories(*items: tuple[str, str, float]) -> dict[str, Any]:
    return {
        "memories": [{"content": c, "memory_type": t, "importance": imp} for c, t, imp in items]
    }


def _text(prompt: list[Any]) -> str:
    return "\n".join(str(m.content) for m in prompt)


def _stored(
    memory: tuple[str, str, float], said: str, **options: Any
) -> tuple[InMemoryStore, RecordedChatModel, str]:
    """A store holding the one memory the model extracted from `said`: (store, model, key)."""
    store = _store()
    model = RecordedChatModel(structured=[_memories(memory)])
    key = extract_memories(store, NS, [("user", said)], model=model, **options).added[0]
    return store, model, key


# --------------------------------------------------------------------------- model path
def test_model_fact_stated_twice_is_stored_once() -> None:
    store = _store()
    model = RecordedChatModel(structured=[_memories(("The user lives in Berlin", "fact", 0.6))])
    first = extract_memories(store, NS, [("user", "I live in Berlin")], model=model)
    assert first.method == "model" and len(first.added) == 1
    berlin = first.added[0]
    # Nothing similar was stored: added without a decision call.
    assert len(model.structured_prompts) == 1

    model.structured.extend(
        [
            _memories(("The user lives in Berlin, Germany", "fact", 0.6)),
            {"action": "NOOP", "memory_id": berlin},
        ]
    )
    again = extract_memories(store, NS, [("user", "As I said, I live in Berlin")], model=model)
    assert again.unchanged == [berlin] and again.added == [] and again.updated == []
    assert _contents(store) == ["The user lives in Berlin"]
    decision_prompt = _text(model.structured_prompts[-1])
    assert berlin in decision_prompt and "The user lives in Berlin" in decision_prompt

    # The very same text again is known without asking the model at all.
    model.structured.append(_memories(("the user lives in berlin.", "fact", 0.6)))
    third = extract_memories(store, NS, [("user", "I live in Berlin")], model=model)
    assert third.unchanged == [berlin] and model.structured == []
    assert len(model.structured_prompts) == 4


def test_model_changed_preference_updates_with_provenance() -> None:
    store, model, coffee = _stored(
        ("The user likes coffee", "preference", 0.5), "I like coffee", clock=lambda: T0
    )
    before = store.get(NS, coffee)
    assert before is not None
    model.structured.extend(
        [
            _memories(("The user likes tea more than coffee now", "preference", 0.7)),
            {
                "action": "UPDATE",
                "memory_id": coffee,
                "content": "The user prefers tea to coffee",
            },
        ]
    )
    result = extract_memories(
        store, NS, [("user", "Tea is my thing now, more than coffee")], model=model
    )
    assert result.updated == [coffee] and result.added == [] and result.deleted == []
    item = store.get(NS, coffee)
    assert item is not None
    assert item.value["content"] == "The user prefers tea to coffee"
    assert item.value["importance"] == 0.7 and item.value["source"] == "extraction"
    (entry,) = item.value["replaced"]
    assert entry["key"] == coffee and entry["action"] == "UPDATE"
    assert entry["updated_at"] == before.updated_at.isoformat()
    assert len(entry["content_sha256"]) == 16
    assert "coffee" not in str(entry)  # only a hash of the replaced text is kept
    assert _contents(store) == ["The user prefers tea to coffee"]


def test_model_contradiction_deletes_berlin_and_stores_lisbon() -> None:
    store, model, berlin = _stored(("The user lives in Berlin", "fact", 0.6), "I live in Berlin")
    model.structured.extend(
        [
            _memories(("The user moved to Lisbon", "fact", 0.7)),
            {"action": "DELETE", "memory_id": berlin},
        ]
    )
    result = extract_memories(store, NS, [("user", "I moved to Lisbon")], model=model)
    assert result.deleted == [berlin] and len(result.added) == 1
    assert store.get(NS, berlin) is None
    lisbon = store.get(NS, result.added[0])
    assert lisbon is not None and lisbon.value["content"] == "The user moved to Lisbon"
    assert lisbon.value["replaced"][0]["key"] == berlin
    assert lisbon.value["replaced"][0]["action"] == "DELETE"
    # Berlin was offered because it fills the same slot (no index: no similarity search).
    assert berlin in _text(model.structured_prompts[-1])


def test_model_update_then_delete_in_one_run_records_the_stored_version() -> None:
    store, model, berlin = _stored(("The user lives in Berlin", "fact", 0.6), "I live in Berlin")
    stored_sha = hashlib.sha256(b"The user lives in Berlin").hexdigest()[:16]
    model.structured.extend(
        [
            _memories(
                ("The user lives in Berlin-Mitte", "fact", 0.6),
                ("The user moved to Lisbon", "fact", 0.7),
            ),
            {"action": "UPDATE", "memory_id": berlin, "content": "The user lives in Mitte"},
            {"action": "DELETE", "memory_id": berlin},
        ]
    )
    result = extract_memories(store, NS, "Berlin-Mitte, then I moved to Lisbon", model=model)
    assert result.updated == [] and result.deleted == [berlin] and len(result.added) == 1
    # Both decision prompts offered the memory as this run sees it.
    assert "The user lives in Mitte" in _text(model.structured_prompts[-1])
    lisbon = store.get(NS, result.added[0])
    assert lisbon is not None
    assert [(e["key"], e["content_sha256"]) for e in lisbon.value["replaced"]] == [
        (berlin, stored_sha)
    ]


def test_model_decision_naming_a_key_not_offered_is_rejected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, model, berlin = _stored(("The user lives in Berlin", "fact", 0.6), "I live in Berlin")
    other = ("memories", "u2")
    store.put(other, "victim", {"content": "The user lives in Paris"})
    model.structured.extend(
        [
            _memories(("The user lives in Berlin-Mitte", "fact", 0.6)),
            {"action": "DELETE", "memory_id": "victim"},
        ]
    )
    with caplog.at_level(logging.WARNING, logger="langgraph_tiered_memory.agent.extraction"):
        result = extract_memories(store, NS, [("user", "I live in Berlin-Mitte")], model=model)
    assert [d.memory_id for d in result.rejected] == ["victim"]
    assert "not one of the memories offered" in caplog.text
    assert "victim" not in caplog.text  # the model's memory_id is model output: not logged
    other_item = store.get(other, "victim")
    assert other_item is not None and other_item.value == {"content": "The user lives in Paris"}
    # The heuristic decided instead: same slot (residence), another value.
    assert result.decisions[0].action == "DELETE" and result.deleted == [berlin]
    assert _contents(store) == ["The user lives in Berlin-Mitte"]


def test_model_update_without_memory_id_is_rejected() -> None:
    store, model, jazz = _stored(("The user likes jazz", "preference", 0.5), "I like jazz")
    model.structured.extend(
        [_memories(("The user likes jazz a lot", "preference", 0.6)), {"action": "UPDATE"}]
    )
    result = extract_memories(store, NS, [("user", "I like jazz a lot")], model=model)
    assert [d.action for d in result.rejected] == ["UPDATE"]
    assert result.unchanged == [jazz]  # heuristic: same slot, same value
    assert _contents(store) == ["The user likes jazz"]


def test_malformed_extraction_falls_back_to_the_heuristic_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _store()
    model = RecordedChatModel(structured=["{not json: ana@example.com"])
    with caplog.at_level(logging.WARNING, logger="langgraph_tiered_memory.agent.extraction"):
        result = extract_memories(
            store, NS, [("user", "I work at Siemens."), ("ai", "I love that.")], model=model
        )
    assert result.method == "heuristic"
    assert "malformed" in caplog.text and "heuristic" in caplog.text
    assert "ana@example.com" not in caplog.text  # the model's text is never logged
    assert _contents(store) == ["I work at Siemens"]  # the assistant's words are not mined


def test_malformed_decision_falls_back_for_that_candidate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, model, berlin = _stored(("The user lives in Berlin", "fact", 0.6), "I live in Berlin")
    model.structured.extend(
        [
            _memories(("The user lives in Lisbon", "fact", 0.6)),
            {"action": "MERGE", "memory_id": berlin},  # not an action: ValidationError
        ]
    )
    with caplog.at_level(logging.WARNING, logger="langgraph_tiered_memory.agent.extraction"):
        result = extract_memories(store, NS, [("user", "I live in Lisbon")], model=model)
    assert "decision is malformed" in caplog.text
    assert result.method == "model" and result.deleted == [berlin]
    assert _contents(store) == ["The user lives in Lisbon"]


def test_model_extraction_input_is_redacted_before_the_model_sees_it() -> None:
    store = _store()
    model = RecordedChatModel(structured=[_memories(("The user's email is [email]", "fact", 0.6))])
    result = extract_memories(
        store, NS, [("user", "My email is ana@example.com")], model=model, redactor=True
    )
    assert "ana@example.com" not in _text(model.structured_prompts[0])
    assert result.redactions == {"email": 1}


def test_model_as_init_chat_model_string_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    model = RecordedChatModel(structured=[_memories(("The user likes tea", "preference", 0.5))])
    import langchain.chat_models

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", lambda name: model)
    store = _store()
    result = extract_memories(store, NS, "I like tea", model="openai:gpt-4o-mini")
    assert result.method == "model" and _contents(store) == ["The user likes tea"]


# --------------------------------------------------------------------------- heuristic
def test_heuristic_fact_stated_twice_is_stored_once() -> None:
    store = _store(index=True)
    first = extract_memories(store, NS, [("user", "I am vegetarian.")])
    again = extract_memories(store, NS, [("user", "I'm vegetarian")])
    assert again.unchanged == first.added and again.added == []
    assert _contents(store) == ["I am vegetarian"]


def test_heuristic_changed_preference_replaces_the_old_one() -> None:
    store = _store(index=True)
    love = extract_memories(store, NS, "I love coffee").added
    colour = extract_memories(store, NS, "My favourite colour is green").added
    result = extract_memories(
        store, NS, "I don't like coffee anymore. My favourite colour is blue now."
    )
    assert sorted(result.deleted) == sorted(love + colour) and len(result.added) == 2
    assert _contents(store) == ["I don't like coffee anymore", "My favourite colour is blue now"]
    types = {i.value["memory_type"] for i in store.search(NS)}
    assert types == {"preference"}


def test_heuristic_contradiction_lisbon_replaces_berlin() -> None:
    store = _store()  # no index: the slot finds Berlin by a filter
    berlin = extract_memories(store, NS, "I live in Berlin").added[0]
    result = extract_memories(store, NS, "Actually, I moved to Lisbon!")
    assert result.deleted == [berlin] and result.decisions[0].action == "DELETE"
    (item,) = store.search(NS)
    assert item.value["content"] == "I moved to Lisbon" and item.value["slot"] == "residence"
    assert item.value["replaced"][0]["key"] == berlin


def test_heuristic_near_duplicate_by_cosine_updates_instead_of_adding() -> None:
    store = _store(index=True)
    first = extract_memories(store, NS, "Remember that the gate code is 4512")
    # Cosine 0.93 with the test embeddings (>= the default 0.9); as text only 0.86.
    result = extract_memories(store, NS, "Remember that the garden gate code is 4512")
    assert result.updated == first.added and result.added == []
    assert _contents(store) == ["The garden gate code is 4512"]
    strict = extract_memories(
        store, NS, "Remember that the gate code is 4512", similarity_threshold=0.95
    )
    assert len(strict.added) == 1 and strict.updated == []
    assert len(_contents(store)) == 2


def test_heuristic_without_index_compares_normalised_text() -> None:
    store = _store()
    first = extract_memories(store, NS, "I am allergic to peanuts")
    near = extract_memories(
        store, NS, "I am allergic to peanuts and cashews", similarity_threshold=0.75
    )
    assert near.updated == first.added
    far = extract_memories(store, NS, "I am allergic to peanuts and cashews and shellfish")
    assert far.added and far.updated == []  # below the default 0.9


def test_heuristic_statements_in_one_run_see_each_other() -> None:
    store = _store()
    result = extract_memories(
        store,
        NS,
        [
            ("user", "I live in Berlin and I work at Siemens. What's the weather?"),
            ("ai", "Sunny. I live in the cloud."),
            ("user", "Oh, I moved to Lisbon last month. I work at Siemens."),
        ],
    )
    assert result.deleted == [] and len(result.added) == 2  # Berlin was never written
    assert _contents(store) == ["I moved to Lisbon last month", "I work at Siemens"]
    assert [d.action for d in result.decisions] == ["ADD", "ADD", "DELETE", "NOOP"]


def test_heuristic_importance_and_fields() -> None:
    store = _store()
    result = extract_memories(
        store, NS, "Please remember that I am allergic to penicillin, it's important. I like jazz."
    )
    items = [store.get(NS, k) for k in result.added]
    values = {i.value["content"]: i.value for i in items if i is not None}
    allergy = values["I am allergic to penicillin, it's important"]
    assert allergy["importance"] == 0.8 and allergy["memory_type"] == "fact"
    assert values["I like jazz"] == {
        "content": "I like jazz",
        "memory_type": "preference",
        "importance": 0.5,
        "source": "extraction",
        "slot": "pref:jazz",
    }
    assert all(len(k) == 32 and int(k, 16) >= 0 for k in result.added)  # uuid4 hex


def test_only_the_exact_namespace_is_read_and_written() -> None:
    store = _store()
    child = (*NS, "archive")
    store.put(child, "old", {"content": "I live in Berlin", "slot": "residence"})
    store.put(("memories", "u2"), "b", {"content": "I live in Berlin", "slot": "residence"})
    result = extract_memories(store, NS, "I live in Lisbon")
    assert result.deleted == [] and len(result.added) == 1
    assert store.get(child, "old") is not None and store.get(("memories", "u2"), "b")


def test_pinned_memories_are_never_replaced() -> None:
    store = _store()
    store.put(NS, "home", {"content": "I live in Berlin", "pinned": True})
    result = extract_memories(store, NS, "I live in Lisbon")
    assert result.deleted == [] and len(result.added) == 1
    assert store.get(NS, "home") is not None


def test_redactor_runs_before_memories_are_stored() -> None:
    store = _store()
    result = extract_memories(store, NS, "My email is ana@example.com", redactor=True)
    item = store.get(NS, result.added[0])
    assert item is not None and "ana@example.com" not in str(item.value)
    assert item.value["redactions"] == {"email": 1} and result.redactions == {"email": 1}


def test_user_id_fills_the_namespace_template() -> None:
    store = _store()
    result = extract_memories(store, ("memories", "{user_id}"), "I like tea", user_id="u7")
    assert store.get(("memories", "u7"), result.added[0]) is not None
    with pytest.raises(ValueError, match="user_id"):
        extract_memories(store, ("memories", "{user_id}"), "I like tea")


def test_nothing_to_extract_does_no_store_io() -> None:
    class NoIO(InMemoryStore):
        def batch(self, ops: Any) -> Any:
            raise AssertionError("no store call expected")

    result = extract_memories(NoIO(), NS, ["Hello!", ("ai", "I like you"), "Where do I live?"])
    assert result == ExtractionResult()


# --------------------------------------------------------------------------- async twin
def _twin_run(extract: Any) -> tuple[list[ExtractionResult], list[str], list[str]]:
    """One scenario through `extract` (sync-shaped): (results, contents, prompt texts).

    Memory keys are random, so they are renamed K0, K1, ... in order of appearance in
    the returned reprs and prompts.
    """
    store = _store(index=True)
    model = RecordedChatModel(structured=[_memories(("The user lives in Berlin", "fact", 0.6))])
    results = [extract(store, NS, [("user", "I live in Berlin")], model=model)]
    model.structured.extend(
        [
            _memories(("The user moved to Lisbon", "fact", 0.7)),
            {"action": "DELETE", "memory_id": results[0].added[0]},
        ]
    )
    results.append(extract(store, NS, [("user", "I moved to Lisbon")], model=model))
    results.append(extract(store, NS, "I moved to Porto"))
    return results, _contents(store), [_text(p) for p in model.structured_prompts]


def _renamed(results: list[ExtractionResult], texts: list[str]) -> list[str]:
    keys = [k for r in results for k in r.added]
    out = [repr(results), *texts]
    for i, key in enumerate(keys):
        out = [t.replace(key, f"K{i}") for t in out]
    return out


def test_async_twin_matches_the_sync_run() -> None:
    results, contents, prompts = _twin_run(extract_memories)
    assert [len(r.added) for r in results] == [1, 1, 1]
    assert results[1].deleted == results[0].added
    assert results[2].deleted == results[1].added  # heuristic: same residence slot
    assert contents == ["I moved to Porto"]

    def run_async(*args: Any, **kwargs: Any) -> ExtractionResult:
        return asyncio.run(aextract_memories(*args, **kwargs))

    aresults, acontents, aprompts = _twin_run(run_async)
    assert acontents == contents
    assert _renamed(aresults, aprompts) == _renamed(results, prompts)


def test_heuristic_with_e5_adds_a_different_fact_and_updates_a_rephrasing() -> None:
    """Raw e5 scores any two sentences about 0.8: the 0.9 threshold compares them centred."""
    from langgraph_tiered_memory.embeddings import LocalE5Embeddings

    index: Any = {"dims": 384, "embed": LocalE5Embeddings(), "fields": ["content"]}
    store = InMemoryStore(index=index)
    first = extract_memories(store, NS, "Remember that my sister lives in Porto")
    other = extract_memories(store, NS, "Remember that my brother lives in Lisbon")
    assert len(other.added) == 1 and other.updated == []
    again = extract_memories(store, NS, "Remember that my sister lives in Porto!")
    assert again.added == [] and again.updated + again.unchanged == first.added
    assert len(_contents(store)) == 2
