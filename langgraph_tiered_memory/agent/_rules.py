"""Pure rules of the memory agent: importance, "used" memories, the memory prompt.

No I/O here (`agent.nodes` runs the nodes). The rules:

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

import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from typing_extensions import TypedDict

from langgraph_tiered_memory.errors import ConfigurationError

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
