"""Node logic of the memory agent: the `memory_retrieval` node and the storage jobs.

`MemoryNodes` holds the agent's options. Retrieval (profile, memories, known facts of
the knowledge graph, summary rendered into the memory context) and each step of a
finished turn's storage job (extraction, reinforcement of the memories the reply used,
the interaction memory, profile refresh) are plans of store calls (`_drive`), run
blocking or awaited; `finish` / `afinish` are the `memory_storage` node that waits for
the jobs of the thread's unstored turns. The pure rules they apply (no I/O):

**Importance of a stored interaction** (`ImportanceRules`): 0.5; +0.2 when the user's
message has at least 200 characters; +0.3 when it asks to remember something or calls
it important (`remember`, `important` as words or word starts, case-insensitive;
`记住`, `重要` anywhere); at most 1.0.

**Which retrieved memories the reply used** (`used_memories`), without a model:
lexical overlap. Both texts are reduced to content words (letters, 3+ characters,
case-folded, minus a short stopword list; numbers; and character pairs of CJK text).
A memory counts as used when the reply contains at least half of its content words,
or at least 3 of them.

**The memory context** (`render_memory_context`): the prompt template filled with the
user's profile (its structured fields, and its preference, fact and skill memories;
experiences reach the prompt through retrieval, by relevance), the retrieved
memories, best first, the running summary, and the known facts (knowledge-graph
triples about the entities of the user's message, one line each: `- anna lives in
porto`); an empty part reads "(none)". A template without `{known_facts}` (the
default one included) gets the facts as a block appended at its end when there are
any, so without facts the context is exactly the template's.
"""

from __future__ import annotations

import hashlib
import re
import string
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from typing_extensions import TypedDict

from langgraph_tiered_memory._drive import Call, adrive, drive
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

# ------------------------------------------------------------------ rules

DEFAULT_MEMORY_PROMPT = (
    "You are a helpful assistant with a long-term memory of this user. Use what you"
    " remember when it helps; do not mention memories that are irrelevant.\n\n"
    "What you know about the user:\n{profile}\n\n"
    "Memories relevant to the current message (most relevant first):\n{memories}\n\n"
    "Summary of the earlier conversation in this session:\n{summary}"
)
"""Memory context of the model call; placeholders `{profile}`, `{memories}`, `{summary}`."""

PROMPT_FIELDS = frozenset({"profile", "memories", "summary", "known_facts"})
_NONE = "(none)"
KNOWN_FACTS_BLOCK = "\n\nKnown facts about what the message mentions:\n{known_facts}"
"""Appended to a template without `{known_facts}` when there are facts."""


@dataclass(frozen=True)
class ImportanceRules:
    """How important a stored interaction is, from the user's message.

    Attributes:
        base: Importance of any interaction.
        long_message_chars: A user message this long (in characters) is "long".
        long_message_bonus: Added for a long user message.
        emphasis_bonus: Added when the user asks to remember or says it is important.
        emphasis_words: Words that signal emphasis. Words of Latin script match as
            whole words or word starts, case-insensitively; others anywhere.
    """

    base: float = 0.5
    long_message_chars: int = 200
    long_message_bonus: float = 0.2
    emphasis_bonus: float = 0.3
    emphasis_words: tuple[str, ...] = ("remember", "important", "记住", "重要")


DEFAULT_IMPORTANCE_RULES = ImportanceRules()


def _emphasised(text: str, words: Sequence[str]) -> bool:
    lowered = text.casefold()
    for word in words:
        w = word.casefold()
        if w.isascii():
            if re.search(rf"(?<![^\W_]){re.escape(w)}", lowered):
                return True
        elif w in lowered:
            return True
    return False


def interaction_importance(
    user_text: str, rules: ImportanceRules | Callable[[str], float] = DEFAULT_IMPORTANCE_RULES
) -> float:
    """Importance of an interaction, from its user message (see `ImportanceRules`).

    Args:
        user_text: The user's message.
        rules: The rules, or a function of the text returning an importance.

    Returns:
        A number from 0 to 1.

    Example:
        >>> from langgraph_tiered_memory.agent.nodes import interaction_importance
        >>> interaction_importance("hi")
        0.5
        >>> interaction_importance("Please remember: my sister is Ana.")
        0.8
        >>> interaction_importance("记住我对花生过敏，这很重要")
        0.8
    """
    if not isinstance(rules, ImportanceRules):
        value = float(rules(user_text))
    else:
        value = rules.base
        if len(user_text.strip()) >= rules.long_message_chars:
            value += rules.long_message_bonus
        if _emphasised(user_text, rules.emphasis_words):
            value += rules.emphasis_bonus
    return round(min(1.0, max(0.0, value)), 6)


# ------------------------------------------------------------------ lexical overlap

_STOPWORDS = frozenset(
    "the and for are but not you your yours with this that these those from have has had"
    " was were will would can could should what when where which who whom why how all any"
    " our out about into over than then them they their there here its it's i'm i've"
    " also just very some such only own same too does did doing been being user assistant"
    " please thanks thank yes okay".split()
)
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_WORD = re.compile(rf"[^\W\d_{_CJK}]{{3,}}|\d+|[{_CJK}]+")


def content_words(text: str) -> set[str]:
    """Case-folded content words of a text (CJK runs as character pairs)."""
    out: set[str] = set()
    for token in _WORD.findall(text.casefold()):
        if re.match(rf"[{_CJK}]", token):
            out.update(token[i : i + 2] for i in range(max(1, len(token) - 1)))
        elif token not in _STOPWORDS:
            out.add(token)
    return out


class RetrievedMemory(TypedDict):
    """A long-term memory put in the model's context (kept in the graph state)."""

    key: str
    namespace: list[str]
    content: str
    memory_type: str
    importance: float
    score: float | None


class UnstoredTurn(TypedDict):
    """A finished turn whose storage has not completed (graph state `unstored_turns`).

    Kept in the thread's checkpoint from the reply until its storage completes, so a
    turn whose process died before storing it is stored by the thread's next run.
    """

    job: str
    """Id of its storage job."""
    owner: str
    """Whose turn it is: a hash of the thread and user ids (`turn_owner`), never the id
    itself, since the checkpoint outlives an erasure of a guest in another's thread.
    Only a run of the same user stores it, in the namespace that run's config gives."""
    thread: str
    key: str
    """Key of its interaction memory, the last memory the turn writes."""
    user_text: str
    reply_text: str
    used: list[RetrievedMemory]
    """The retrieved memories the reply used (reinforced)."""


def used_memories(
    reply: str,
    memories: Sequence[RetrievedMemory],
    *,
    min_ratio: float = 0.5,
    min_shared: int = 3,
) -> list[RetrievedMemory]:
    """The memories a reply drew on, judged by lexical overlap (no model).

    Args:
        reply: The model's reply.
        memories: The memories that were in its context.
        min_ratio: Share of a memory's content words the reply must contain.
        min_shared: Or this many of them.

    Example:
        >>> from langgraph_tiered_memory.agent.nodes import used_memories
        >>> mem = {"key": "k", "namespace": ["memories", "u1"], "content": "likes green tea",
        ...        "memory_type": "preference", "importance": 0.5, "score": 1.0}
        >>> [m["key"] for m in used_memories("Here is a green tea you may like.", [mem])]
        ['k']
        >>> used_memories("Coffee it is.", [mem])
        []
    """
    said = content_words(reply)
    out: list[RetrievedMemory] = []
    for memory in memories:
        words = content_words(memory["content"])
        shared = len(words & said)
        if words and shared and (shared >= min_shared or shared / len(words) >= min_ratio):
            out.append(memory)
    return out


# ------------------------------------------------------------------ rendering


def check_prompt(prompt: str) -> str:
    """Refuse a memory prompt with unknown placeholders (see `PROMPT_FIELDS`)."""
    try:
        fields = _fields(prompt)
    except ValueError as e:
        raise ConfigurationError(f"The memory prompt is not a valid format string: {e}.") from e
    unknown = sorted(f for f in fields if f not in PROMPT_FIELDS)
    if unknown:
        raise ConfigurationError(
            f"The memory prompt has unknown placeholders {unknown}; use {sorted(PROMPT_FIELDS)}"
            " (write {{ and }} for literal braces)."
        )
    return prompt


def _flat(value: Any) -> str:
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_flat(v)}" for k, v in value.items() if v not in (None, "", []))
    if isinstance(value, (list, tuple, set)):
        return "; ".join(_flat(v) for v in value if v not in (None, ""))
    return str(value)


_PROFILE_FIELDS = ("basics", "communication_preferences", "special_needs", "interaction_history")


def render_profile(profile: Any) -> str:
    """A user profile (`UserProfile` or any object with its fields) as prompt lines."""
    if profile is None:
        return ""
    lines = []
    for name in _PROFILE_FIELDS:
        value = getattr(profile, name, None)
        text = _flat(value) if value else ""
        if text:
            lines.append(f"- {name.replace('_', ' ')}: {text}")
    by_type = getattr(profile, "memories_by_type", None) or {}
    for mtype, items in by_type.items():
        if mtype == "experience":  # reached by relevance through retrieval instead
            continue
        texts = [str(i) for i in items if i]
        if texts:
            lines.append(f"- {mtype}: " + "; ".join(texts))
    return "\n".join(lines)


def fact_lines(triples: Iterable[Any], *, limit: int = 20) -> list[str]:
    """Prompt lines of knowledge-graph triples: `- subject relation object`, deduplicated.

    Args:
        triples: Objects with `subject`, `relation` and `object` (`Triple`,
            `TripleRecord`), in the order to keep.
        limit: At most this many lines.

    Example:
        >>> from langgraph_tiered_memory.agent.nodes import fact_lines
        >>> from langgraph_tiered_memory.graph.types import Triple
        >>> t = Triple("anna", "lives_in", "porto")
        >>> fact_lines([t, t, Triple("user", "sister", "anna")])
        ['- anna lives in porto', '- user sister anna']
    """
    out: dict[str, None] = {}
    for t in triples:
        if len(out) >= limit:
            break
        text = " ".join(str(part) for part in (t.subject, t.relation.replace("_", " "), t.object))
        out["- " + " ".join(text.split())] = None
    return list(out)


def render_memory_context(
    prompt: str | Callable[[dict[str, str]], str],
    *,
    summary: str | None,
    memories: Sequence[RetrievedMemory],
    profile: Any = None,
    known_facts: Sequence[str] = (),
) -> str:
    """The memory context the model sees, from the prompt template.

    Args:
        prompt: Template with `{profile}`, `{memories}`, `{summary}` and optionally
            `{known_facts}`, or a function of those rendered parts (a dict).
        summary: The session's running summary.
        memories: Relevant long-term memories, best first.
        profile: The user's profile.
        known_facts: Fact lines (`fact_lines`). A string template without
            `{known_facts}` gets them appended as a block (`KNOWN_FACTS_BLOCK`).

    Example:
        >>> from langgraph_tiered_memory.agent.nodes import render_memory_context
        >>> print(render_memory_context("{memories}|{summary}", summary=None, memories=[]))
        (none)|(none)
    """
    parts = {
        "profile": render_profile(profile) or _NONE,
        "memories": "\n".join(f"- [{m['memory_type']}] {m['content']}" for m in memories) or _NONE,
        "summary": summary or _NONE,
        "known_facts": "\n".join(known_facts) or _NONE,
    }
    if callable(prompt):
        return prompt(parts)
    text = prompt.format(**parts)
    if known_facts and "known_facts" not in _fields(prompt):
        text += KNOWN_FACTS_BLOCK.format(known_facts=parts["known_facts"])
    return text


def _fields(prompt: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(prompt) if f is not None}


def fill_namespace(
    template: Sequence[str], config: Mapping[str, Any] | None, *, keep: Sequence[str] = ()
) -> tuple[str, ...]:
    """A namespace template with its `{placeholders}` filled from `config["configurable"]`.

    Placeholders named in `keep` stay as they are.

    Raises:
        ConfigurationError: A placeholder has no value in the run config.

    Example:
        >>> from langgraph_tiered_memory.agent.nodes import fill_namespace
        >>> fill_namespace(("memories", "{user_id}"), {"configurable": {"user_id": "u1"}})
        ('memories', 'u1')
    """
    configurable = dict((config or {}).get("configurable") or {})
    out = []
    for label in template:
        names = [f for _, f, _, _ in string.Formatter().parse(label) if f and f not in keep]
        missing = [n for n in names if configurable.get(n) in (None, "")]
        if missing:
            raise ConfigurationError(
                f"The memory namespace {tuple(template)} needs {missing} in the run config:"
                f" invoke with config={{'configurable': {{'{missing[0]}': ...}}}}."
            )
        values = {n: str(configurable[n]) for n in names} | {k: f"{{{k}}}" for k in keep}
        out.append(label.format(**values) if names else label)
    return tuple(out)


def message_text(message: BaseMessage) -> str:
    """The text of a message (text blocks of a list content joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = [
        c if isinstance(c, str) else str(c.get("text", ""))
        for c in content
        if isinstance(c, str) or (isinstance(c, dict) and c.get("type") == "text")
    ]
    return " ".join(p for p in parts if p)


def last_human(messages: Sequence[AnyMessage]) -> HumanMessage | None:
    """The most recent user message."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


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
