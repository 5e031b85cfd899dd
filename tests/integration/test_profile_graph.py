"""User profiles on a store with a knowledge graph: the user's triples as `known_facts`.

Real Redis and Chroma, the embedded SQLite graph, recorded fake models.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.profile import (
    PROFILE_CACHE_LABEL,
    aget_user_profile,
    get_user_profile,
)
from langgraph_tiered_memory.graph import rebuild_graph
from langgraph_tiered_memory.graph.extract import RuleExtractor
from langgraph_tiered_memory.graph.types import Triple
from tests.fake_models import RecordedChatModel, prompt_text
from tests.fakes import Clock
from tests.memory_tools_support import indexed_store_options

ALICE = ("memories", "alice")
BOB = ("memories", "bob")


class SwitchableExtractor:
    """The rule extractor, plus `extra` on every text once it is set."""

    def __init__(self) -> None:
        self.rules = RuleExtractor()
        self.extra: Triple | None = None

    def extract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        found = self.rules.extract(texts, speakers=speakers)
        return [[*f, self.extra] if self.extra else f for f in found]

    async def aextract(
        self, texts: Sequence[str], *, speakers: Sequence[str | None] | None = None
    ) -> list[list[Triple]]:
        return self.extract(texts, speakers=speakers)


_options = indexed_store_options


@pytest.fixture
def extractor() -> SwitchableExtractor:
    return SwitchableExtractor()


@pytest.fixture
def gstore(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock, extractor: SwitchableExtractor
) -> Iterator[TieredMemoryStore]:
    graph = {"backend": "sqlite", "extractor": extractor}
    store = TieredMemoryStore(**_options(redis_url, key_prefix, tmp_path, clock, graph=graph))
    store.setup()
    yield store
    store.close()


def _reply(**fields: list[str]) -> dict[str, list[str]]:
    return {"basics": [], "communication_preferences": [], "special_needs": [], **fields}


def _put_alice_and_bob(store: Any) -> None:
    store.put(ALICE, "city", {"content": "I live in Porto", "memory_type": "fact"})
    store.put(ALICE, "tea", {"content": "I like green tea", "memory_type": "preference"})
    # a memory with a speaker: its "I" is the speaker, not "user"
    store.put(ALICE, "job", {"content": "I work at Siemens", "speaker": "alice"})
    store.put(BOB, "city", {"content": "I live in Oslo", "memory_type": "fact"})


ALICE_FACTS = ["works at siemens", "likes green tea", "lives in porto"]


def test_profile_lists_the_users_triples_and_the_model_sees_them(
    gstore: TieredMemoryStore,
) -> None:
    _put_alice_and_bob(gstore)

    plain = get_user_profile(gstore, "alice")
    model = RecordedChatModel(structured=[_reply(basics=["Lives in Porto"])])
    built = get_user_profile(gstore, "alice", model=model)

    assert plain.known_facts == ALICE_FACTS and plain.source == "memories"
    assert built.known_facts == ALICE_FACTS and built.basics == ["Lives in Porto"]
    prompt = prompt_text(model.structured_prompts[0])
    assert "Known facts about the user" in prompt
    assert all(f"- {fact}" in prompt for fact in ALICE_FACTS)
    assert "oslo" not in prompt.casefold()
    assert "Known facts about the user:\n- works at siemens" in plain.to_text()
    # another user's profile holds only their own triples
    bob = get_user_profile(gstore, "bob")
    assert bob.known_facts == ["lives in oslo"]
    assert get_user_profile(gstore, "alice") == plain  # the function shares the cache


def test_cached_profile_follows_triples_of_changed_memories(gstore: TieredMemoryStore) -> None:
    _put_alice_and_bob(gstore)
    model = RecordedChatModel(structured=[_reply(basics=["v1"]), _reply(basics=["v2"])])
    first = get_user_profile(gstore, "alice", model=model)
    assert get_user_profile(gstore, "alice", model=model) == first  # cached: no model call
    assert len(model.structured_prompts) == 1

    gstore.put(ALICE, "city", {"content": "I moved to Lisbon", "memory_type": "fact"})
    gstore.delete(ALICE, "job")
    moved = get_user_profile(gstore, "alice", model=model)

    assert moved.basics == ["v2"] and len(model.structured_prompts) == 2
    assert moved.known_facts == ["likes green tea", "moved to lisbon"]
    assert "lives in porto" not in prompt_text(model.structured_prompts[-1])
    assert get_user_profile(gstore, "alice").known_facts == moved.known_facts


def test_cached_profile_is_rebuilt_when_only_the_graph_changed(
    gstore: TieredMemoryStore, extractor: SwitchableExtractor
) -> None:
    _put_alice_and_bob(gstore)
    model = RecordedChatModel(structured=[_reply(basics=["v1"]), _reply(basics=["v2"])])
    assert get_user_profile(gstore, "alice", model=model).basics == ["v1"]
    plain = get_user_profile(gstore, "alice")
    memories_before = gstore.search(ALICE, limit=10)

    # Re-extracting with another extractor changes the triples, not the memories.
    extractor.extra = Triple.of("user", "speaks", "Portuguese")
    assert rebuild_graph(gstore, ALICE) == 3
    assert gstore.search(ALICE, limit=10) == memories_before

    rebuilt = get_user_profile(gstore, "alice", model=model)
    assert rebuilt.basics == ["v2"] and "speaks portuguese" in rebuilt.known_facts
    assert "- speaks portuguese" in prompt_text(model.structured_prompts[-1])
    again = get_user_profile(gstore, "alice")
    assert again != plain and "speaks portuguese" in again.known_facts
    assert "speaks portuguese" not in get_user_profile(gstore, "bob").known_facts


def test_without_a_graph_the_profile_and_its_cache_are_as_before(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> None:
    store = TieredMemoryStore(**_options(redis_url, key_prefix, tmp_path, clock))
    store.setup()
    try:
        _put_alice_and_bob(store)
        model = RecordedChatModel(structured=[_reply(basics=["Lives in Porto"])])
        profile = get_user_profile(store, "alice", model=model)
        assert store.graph is None and profile.known_facts == []
        assert "Known facts" not in prompt_text(model.structured_prompts[0])
        assert "Known facts" not in profile.to_text()
        [cached] = store.search((PROFILE_CACHE_LABEL, "alice"), limit=10)
        assert "+" not in cached.value["fingerprint"]  # the memories' fingerprint alone
    finally:
        store.close()


def test_async_profile_has_the_same_known_facts(
    redis_url: str, key_prefix: str, tmp_path: Path, clock: Clock
) -> None:
    async def main() -> tuple[list[str], list[str], str]:
        store = AsyncTieredMemoryStore(
            **_options(redis_url, key_prefix, tmp_path, clock, graph=True)
        )
        await store.asetup()
        try:
            for ns, key, text in (
                (ALICE, "city", "I live in Porto"),
                (ALICE, "tea", "I like green tea"),
                (BOB, "city", "I live in Oslo"),
            ):
                await store.aput(ns, key, {"content": text, "memory_type": "fact"})
            model = RecordedChatModel(structured=[_reply(basics=["Porto"])])
            built = await aget_user_profile(store, "alice", model=model)
            await store.aput(ALICE, "city", {"content": "I moved to Lisbon"})
            plain = await aget_user_profile(store, "alice")
            return built.known_facts, plain.known_facts, prompt_text(model.structured_prompts[0])
        finally:
            await asyncio.to_thread(store.close)

    built, plain, prompt = asyncio.run(main())
    assert built == ["likes green tea", "lives in porto"]
    assert plain == ["likes green tea", "moved to lisbon"]
    assert "- lives in porto" in prompt and "oslo" not in prompt
