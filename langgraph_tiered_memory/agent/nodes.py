"""Node logic of the memory agent: the `memory_retrieval` node and the storage jobs.

`MemoryNodes` holds the agent's options. Retrieval (profile, memories, known facts of
the knowledge graph, summary rendered into the memory context) and each step of a
finished turn's storage job (extraction, reinforcement of the memories the reply used,
the interaction memory, profile refresh) are plans of store calls (`_drive`), run
blocking or awaited; `finish` / `afinish` are the `memory_storage` node that waits for
the jobs of the thread's unstored turns. The pure rules (importance, "used" memories,
prompt rendering) live in `agent._rules` and are re-exported here.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langgraph_tiered_memory._drive import Call, adrive, drive
from langgraph_tiered_memory.agent._rules import (
    DEFAULT_IMPORTANCE_RULES,
    DEFAULT_MEMORY_PROMPT,
    ImportanceRules,
    RetrievedMemory,
    UnstoredTurn,
    check_prompt,
    fact_lines,
    fill_namespace,
    interaction_importance,
    last_human,
    message_text,
    render_memory_context,
    used_memories,
)
from langgraph_tiered_memory.agent.profile import build_profile
from langgraph_tiered_memory.agent.writer import MemoryWriter, WriteJob, WriteStep
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph import queries
from langgraph_tiered_memory.graph.extract import query_entities
from langgraph_tiered_memory.privacy.provenance import stamp
from langgraph_tiered_memory.ranking.scoring import UserScope
from langgraph_tiered_memory.store.base import TieredStoreCore

__all__ = [
    "DEFAULT_IMPORTANCE_RULES",
    "DEFAULT_MEMORY_PROMPT",
    "ImportanceRules",
    "MemoryNodes",
    "RetrievedMemory",
    "UnstoredTurn",
    "check_prompt",
    "fact_lines",
    "fill_namespace",
    "interaction_importance",
    "render_memory_context",
    "used_memories",
]

# ------------------------------------------------------------------ nodes

_FACT_ENTITIES = 5
"""At most this many entities of a message are looked up for known facts."""

Plan = Callable[[str], Generator[Call, Any, Any]]
"""A write step's store calls: called with "" to run blocking, "a" to run awaited."""


@dataclass
class MemoryNodes:
    """The options of one memory agent, and its retrieval and storage logic.

    `store` None means the store the graph runs with (`get_store()`).
    """

    namespace: tuple[str, ...]
    prompt: str | Callable[[dict[str, str]], str]
    memory_limit: int
    writer: MemoryWriter
    extraction: bool = True
    extraction_model: Any = None
    profile: bool = True
    profile_model: Any = None
    redactor: Any = None
    importance: ImportanceRules | Callable[[str], float] = DEFAULT_IMPORTANCE_RULES
    reinforce_delta: float = 0.1
    store: Any = None
    known_facts: bool | None = None
    """True: always (the store must have a graph); None: when the store has one."""
    facts_limit: int = 20

    # ---------------------------------------------------------------- helpers
    def resolve_store(self) -> Any:
        """The store of this agent (given, or the graph's)."""
        found = self.store
        if found is None:
            from langgraph.config import get_store

            try:
                found = get_store()
            except RuntimeError:  # outside a run: reported just below
                found = None
        if found is None:
            raise ConfigurationError(
                "The memory agent needs a store: compile it with graph.compile(store=...)"
                " (or serve it with one), or pass create_memory_agent(store=...)."
            )
        return found

    @staticmethod
    def _user(config: Mapping[str, Any] | None) -> str | None:
        user = ((config or {}).get("configurable") or {}).get("user_id")
        return None if user in (None, "") else str(user)

    @staticmethod
    def _thread(config: Mapping[str, Any] | None) -> str:
        return str(((config or {}).get("configurable") or {}).get("thread_id") or "")

    @staticmethod
    def _memory_method(store: Any, namespace: tuple[str, ...], name: str) -> bool:
        """Whether the store ranks this namespace's memories and has the method `name`.

        The sync store has `search_memories` and `update_importance` (and the async
        `aupdate_importance`); the async store has `asearch_memories` and
        `aupdate_importance`: each call path asks for the method it calls.
        """
        return (
            bool(getattr(store, "memory_mode", False))
            and callable(getattr(store, name, None))
            and getattr(store, "tier_for", lambda ns: None)(namespace) == "long"
        )

    @staticmethod
    def _scope(store: Any, user: str | None) -> UserScope | None:
        """The store's visibility rule for `user` (None: the run names no user)."""
        if user is None:
            return None
        return UserScope(user, getattr(getattr(store, "scoring", None), "user_label", "users"))

    @staticmethod
    def _from_hit(hit: Any) -> RetrievedMemory | None:
        entry = hit.entry
        if not entry.content:
            return None
        return RetrievedMemory(
            key=entry.id,
            namespace=list(entry.namespace),
            content=entry.content,
            memory_type=entry.memory_type,
            importance=float(entry.importance),
            score=float(hit.score),
        )

    @staticmethod
    def _from_item(item: Any) -> RetrievedMemory | None:
        value = item.value or {}
        content = value.get("content")
        if not isinstance(content, str) or not content:
            return None
        importance = value.get("importance", 0.5)
        return RetrievedMemory(
            key=item.key,
            namespace=list(item.namespace),
            content=content,
            memory_type=str(value.get("memory_type", "experience")),
            importance=float(importance) if isinstance(importance, (int, float)) else 0.5,
            score=None if getattr(item, "score", None) is None else float(item.score),
        )

    def _facts_plan(
        self, store: Any, namespace: tuple[str, ...], query: str, user: str | None
    ) -> Generator[Call, Any, list[str] | None]:
        """Fact lines about the entities of `query` (1 hop, in `namespace`), or None if off.

        Off when `known_facts` is False, and by default (None) when the store is not a
        tiered store with a graph that ranks this namespace's memories; with
        `known_facts=True` such a store is a configuration error. Each path gives its
        first triple; with `user`, triples from another user's namespace below
        `namespace` are left out.
        """
        if self.known_facts is False or self.facts_limit <= 0:
            return None
        usable = (
            isinstance(store, TieredStoreCore)
            and store.graph is not None
            and store.memory_mode
            and store.tier_for(namespace) == "long"
        )
        if self.known_facts is None and not usable:
            return None
        if not usable:
            raise ConfigurationError(
                f"known_facts=True needs a store with a knowledge graph (graph=) that keeps"
                f" {namespace} in its long-term tier in memory mode; pass"
                " known_facts=False or open the store with graph=True."
            )
        entities = list(dict.fromkeys(query_entities(query)))[:_FACT_ENTITIES] if query else []
        found = []
        for e in entities:
            kwargs = {"hops": 1, "limit": self.facts_limit}
            found.append((yield Call(queries, "graph_neighbors", (store, namespace, e), kwargs)))
        scope = self._scope(store, user)
        records = (rec for neighbors in found for n in neighbors for rec in n.path[:1])
        visible = (r for r in records if scope is None or scope.may_hold(r.namespace))
        return fact_lines(visible, limit=self.facts_limit)

    def _profile_plan(
        self, store: Any, config: Mapping[str, Any], read_only: bool
    ) -> Generator[Call, Any, Any]:
        """The user's profile (cached by the profile module), or None when off.

        A tiered store is read and cached as `get_user_profile` does; on any other
        store, `read_only` (the reply path) skips the cache write, so a turn's reply
        never waits on a store write there.
        """
        if not self.profile:
            return None
        template = fill_namespace(self.namespace, config, keep=("user_id",))
        user = self._user(config)
        if user is None:
            return None
        write = not read_only or isinstance(store, TieredStoreCore)
        profile = build_profile(store, user, self.profile_model, template, write_cache=write)
        return (yield from profile)

    # ---------------------------------------------------------------- retrieval
    def _retrieve_plan(
        self, state: Mapping[str, Any], config: Mapping[str, Any], a: str
    ) -> Generator[Call, Any, dict[str, Any]]:
        """The `memory_retrieval` node: profile, memories, summary rendered."""
        namespace = fill_namespace(self.namespace, config)
        store = self.resolve_store()
        human = last_human(state.get("messages") or [])
        query = message_text(human).strip() if human is not None else ""
        found: list[Any] = []
        if query and self.memory_limit > 0:
            limit = {"limit": self.memory_limit}
            if self._memory_method(store, namespace, a + "search_memories"):
                hits = yield Call(store, "search_memories", (namespace, query), limit)
                found = [self._from_hit(h) for h in hits]
            else:
                items = yield Call(store, "search", (namespace,), {"query": query, **limit})
                found = [self._from_item(i) for i in items]
        facts = yield from self._facts_plan(store, namespace, query, self._user(config))
        profile = yield from self._profile_plan(store, config, True)
        # The run's user's memories and no user's (all when the run names none): the
        # user's prefix can hold another user's namespace below it (`("memories",
        # "users", "bob")` for a user id `"users"`); `UserScope.may_hold` says whose.
        scope = self._scope(store, self._user(config))
        found = [m for m in found if m is not None]
        found = [m for m in found if scope is None or scope.may_hold(m["namespace"])]
        context = render_memory_context(
            self.prompt,
            summary=state.get("summary"),
            memories=found,
            profile=profile,
            known_facts=facts or (),
        )
        update: dict[str, Any] = {"memory_context": context, "retrieved_memories": found}
        if facts is not None:
            update["known_facts"] = facts
        return update

    def retrieve(self, state: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """The `memory_retrieval` node (sync)."""
        return drive(self._retrieve_plan(state, config, ""))

    async def aretrieve(
        self, state: Mapping[str, Any], config: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The `memory_retrieval` node (async twin of `retrieve`)."""
        return await adrive(self._retrieve_plan(state, config, "a"))

    # ---------------------------------------------------------------- storage
    def unstored_turn(
        self, state: Mapping[str, Any], reply: BaseMessage, config: Mapping[str, Any]
    ) -> UnstoredTurn | None:
        """What storing the turn that `reply` ends needs (None without a user message).

        The interaction memory's key is deterministic per thread and user message, so a
        retry or a second run rewrites it rather than adding one.
        """
        human = last_human(state.get("messages") or [])
        if human is None:
            return None
        user_text, reply_text = message_text(human), message_text(reply)
        thread = self._thread(config)
        ident = f"{thread}\x00{human.id or user_text}".encode()
        retrieved = cast(list[RetrievedMemory], state.get("retrieved_memories") or [])
        return UnstoredTurn(
            job=uuid.uuid4().hex,
            owner=self._owner(config),
            thread=thread,
            key="turn-" + hashlib.sha256(ident).hexdigest()[:24],
            user_text=user_text,
            reply_text=reply_text,
            used=used_memories(reply_text, retrieved),
        )

    @classmethod
    def _owner(cls, config: Mapping[str, Any]) -> str:
        """The `UnstoredTurn.owner` of a run: a hash of its thread and user ids."""
        ident = f"{cls._thread(config)}\x00{cls._user(config) or ''}".encode()
        return hashlib.sha256(ident).hexdigest()[:32]

    def earlier_turns(self, state: Mapping[str, Any]) -> list[UnstoredTurn]:
        """The state's unstored turns this process has not settled (their storage is due)."""
        turns = cast(list[UnstoredTurn], state.get("unstored_turns") or [])
        return [t for t in turns if self.writer.status(t["job"]) != "done"]

    def replanned(self, turns: Sequence[UnstoredTurn], config: Mapping[str, Any]) -> list[WriteJob]:
        """Jobs of the run's user's turns that this writer does not know (checked first).

        Another user's turns (a guest's, in a shared thread) wait for a run of theirs.
        """
        owner = self._owner(config)
        return [
            self.storage_job(t, config, recheck=True)
            for t in turns
            if t["owner"] == owner and self.writer.status(t["job"]) == "unknown"
        ]

    def storage_job(
        self, turn: UnstoredTurn, config: Mapping[str, Any], *, recheck: bool = False
    ) -> WriteJob:
        """The writes of one finished turn, in order.

        Steps: extraction, one reinforcement per used memory, the interaction memory,
        the profile refresh. The interaction memory comes after everything else the
        turn changes, so its presence means the turn was stored: with `recheck` (a
        turn planned again from the graph state, whose first run may have completed
        before its process died) a first step looks for it and skips the rest.
        """
        store = self.resolve_store()
        namespace = fill_namespace(self.namespace, config)
        key, user = turn["key"], self._user(config)
        value: dict[str, Any] = {
            "content": f"User: {turn['user_text']}\nAssistant: {turn['reply_text']}",
            "memory_type": "experience",
            "importance": interaction_importance(turn["user_text"], self.importance),
            "source": "memory_agent",
        }
        if turn["thread"]:
            value["thread_id"] = turn["thread"]
        value = stamp(self._redacted(value), namespace, user, turn["thread"])  # provenance
        steps: list[tuple[str, Plan]] = []
        if self.extraction:
            from langgraph_tiered_memory.agent import extraction

            messages = [HumanMessage(content=turn["user_text"]), AIMessage(turn["reply_text"])]
            options = {
                "model": self.extraction_model,
                "redactor": self.redactor,
                "user_id": user,
                "session_id": turn["thread"] or None,
            }
            extract = Call(extraction, "extract_memories", (store, namespace, messages), options)
            steps.append(("extract memories", _once(extract)))
        steps += [
            (f"reinforce {m['key']}", self._reinforce(store, m))
            for m in turn["used"]
            if m["key"] != key
        ]
        steps.append(("store interaction", _once(Call(store, "put", (namespace, key, value)))))
        if self.profile and user is not None:
            # Rebuild the cached profile now, so the next turn's read is a cache hit.
            given = config.get("configurable") or {}
            run = {"configurable": {k: v for k, v in given.items() if not k.startswith("__")}}
            steps.append(("refresh profile", lambda a: self._profile_plan(store, run, False)))
        if recheck:
            steps = _unless_stored(store, namespace, key, steps)
        return WriteJob(
            lane=repr(namespace),
            steps=[_write_step(name, plan) for name, plan in steps],
            description=f"memory storage of thread {turn['thread'] or '?'} in {namespace}",
            id=turn["job"],
            user=user,
        )

    def _redacted(self, value: dict[str, Any]) -> dict[str, Any]:
        if self.redactor is None:
            return value
        from langgraph_tiered_memory.privacy.redaction import REDACTIONS_FIELD, redact_value

        redacted, counts = redact_value(value, self.redactor)
        if counts:
            redacted[REDACTIONS_FIELD] = dict(counts)
        return redacted

    def _reinforce(self, store: Any, memory: RetrievedMemory) -> Plan:
        namespace, key, delta = tuple(memory["namespace"]), memory["key"], self.reinforce_delta
        # memory-mode stores keep importance beside the access statistics; others: get + put
        native = {
            a: self._memory_method(store, namespace, a + "update_importance") for a in ("", "a")
        }

        def plan(a: str) -> Generator[Call, Any, None]:
            if native[a]:
                yield Call(store, "update_importance", (namespace, key, delta))
                return
            item = yield Call(store, "get", (namespace, key))
            if item is not None:
                old = item.value.get("importance", 0.5)
                old = float(old) if isinstance(old, (int, float)) else 0.5
                value = {**item.value, "importance": min(1.0, max(0.0, old + delta))}
                yield Call(store, "put", (namespace, key, value))

        return plan

    # ---------------------------------------------------------------- storage node
    def finish(self, state: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """The `memory_storage` node (sync): store the thread's unstored turns, then return.

        It waits for the jobs the agent node submitted, and submits (then waits for)
        those of turns this process does not know: every turn when storage is not in
        the background, and turns of a run that resumed here or whose process died
        before storing them.
        """
        turns = cast(list[UnstoredTurn], state.get("unstored_turns") or [])
        for job in self.replanned(turns, config):
            self.writer.submit(job)
        return self._settled(turns, [self.writer.wait(t["job"]) for t in turns], config)

    async def afinish(self, state: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """The `memory_storage` node (async twin of `finish`)."""
        turns = cast(list[UnstoredTurn], state.get("unstored_turns") or [])
        for job in self.replanned(turns, config):
            self.writer.asubmit(job)
        done = [await self.writer.await_job(t["job"]) for t in turns]
        return self._settled(turns, done, config)

    def _settled(
        self, turns: list[UnstoredTurn], done: list[bool], config: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The `memory_storage` update: turns still unstored, and what this run stored.

        `stored_memories` holds keys only: the namespace names the user, and a user id
        kept in a checkpoint channel would outlive that user's erasure in the sessions
        of others they took part in.
        """
        if not turns:
            return {"stored_memories": []}
        owner = self._owner(config)
        return {
            "unstored_turns": [t for t, ok in zip(turns, done, strict=True) if not ok],
            "stored_memories": [
                t["key"] for t, ok in zip(turns, done, strict=True) if ok and t["owner"] == owner
            ],
        }


def _once(call: Call) -> Plan:
    def plan(a: str) -> Generator[Call, Any, Any]:
        return (yield call)

    return plan


def _write_step(name: str, plan: Plan) -> WriteStep:
    """A `WriteStep` that runs `plan` blocking (`drive`) or awaited (`adrive`)."""

    async def arun() -> Any:  # a coroutine function: tenacity awaits only those
        return await adrive(plan("a"))

    return WriteStep(name, lambda: drive(plan("")), arun)


def _unless_stored(
    store: Any, namespace: tuple[str, ...], key: str, steps: list[tuple[str, Plan]]
) -> list[tuple[str, Plan]]:
    """`steps` after a check for the memory `key`; when it exists they do nothing."""
    stored: list[bool] = []

    def check(a: str) -> Generator[Call, Any, None]:
        stored.append((yield Call(store, "get", (namespace, key))) is not None)

    def guarded(plan: Plan) -> Plan:
        def run(a: str) -> Generator[Call, Any, Any]:
            if not stored[-1]:
                yield from plan(a)

        return run

    return [("check stored", check), *((name, guarded(plan)) for name, plan in steps)]
