"""What `tiered-memory demo` runs and measures; `demo.views` renders it.

The demo drives the memory agent (`create_memory_agent`, compiled with a
`TieredMemoryStore` and a `RedisSessionSaver`) over two sessions (threads) of one
user, and collects, per turn, the working memory before and after the summarizer,
the memories the agent recalled with their score breakdown, the session's keys in
Redis with their TTL, and a dry run of forgetting. Nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from langgraph_tiered_memory.checkpoint.registry import SessionMeta
from langgraph_tiered_memory.ranking.forgetting import DAY, calculate_decay, should_forget
from langgraph_tiered_memory.ranking.scoring import ScoreBreakdown
from langgraph_tiered_memory.store._reports import ConsolidationRecord, ForgottenRow
from langgraph_tiered_memory.store.consolidation import THEME_SIMILARITY
from langgraph_tiered_memory.store.maintenance import consolidate

__all__ = [
    "SESSION_1",
    "SESSION_2",
    "DecayRow",
    "ForgettingView",
    "KeyGroup",
    "RecallRow",
    "SessionView",
    "Turn",
    "forgetting_dry_run",
    "inspect_session",
    "run_turn",
]

SESSION_1: tuple[str, ...] = (
    "Hi! I'm Alice. Please remember: I'm vegetarian, no meat and no fish.",
    "I live in Lisbon, in the Alfama district.",
    "Important: I'm allergic to peanuts.",
    "I work night shifts as a nurse, so I usually cook late.",
)
"""What the user says in the first session (it teaches the agent about her)."""

SESSION_2: tuple[str, ...] = (
    "What should I cook for dinner tonight?",
    "Is there a place nearby where I could eat out instead?",
)
"""What the user asks in the second session (answered from recalled memories)."""


@dataclass
class RecallRow:
    """One memory the agent's retrieval ranked for a turn, with its score breakdown."""

    content: str
    memory_type: str
    breakdown: ScoreBreakdown
    in_context: bool
    """Whether the agent put it in the model's context this turn."""
    thread_id: str | None = None
    """The session (thread) whose turn stored it, for a stored interaction."""
    source: str | None = None
    """Who wrote it: `memory_agent` (a turn) or `extraction` (a fact or preference)."""


@dataclass
class Turn:
    """One user turn: the reply and the working memory around the summarizer."""

    said: str
    reply: str
    messages_before: int
    tokens_before: int
    messages_after: int
    tokens_after: int
    summarized: bool
    summary: str | None
    recalled: list[RecallRow] = field(default_factory=list)
    memory_context: str = ""
    seconds: float = 0.0


def _tokens(messages: Sequence[BaseMessage]) -> int:
    return int(count_tokens_approximately(list(messages)))


def _text(message: BaseMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else str(content)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _explain(store: Any, namespace: tuple[str, ...], query: str, limit: int) -> list[Any]:
    """The hits the agent's retrieval will rank, with breakdowns; counts no access."""
    hits: list[Any] = store.search_memories(
        namespace, query, limit=limit, filter={"$count_access": False}
    )
    return hits


def run_turn(
    graph: Any,
    said: str,
    config: dict[str, Any],
    *,
    store: Any = None,
    namespace: tuple[str, ...] = (),
    explain: int = 0,
) -> Turn:
    """Run one turn of the agent, watching the summarize node's effect.

    Args:
        graph: The compiled memory agent.
        said: The user's message.
        config: The run config (`user_id`, `thread_id`).
        store: The store, to explain the ranking of recalled memories.
        namespace: The user's memory namespace.
        explain: Hits to explain (0: none); ranked before the turn, with the
            statistics the agent's retrieval sees, without counting an access.
    """
    started = time.perf_counter()
    hits = _explain(store, namespace, said, explain) if explain else []
    last: dict[str, Any] = {}
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    waiting = False
    for mode, chunk in graph.stream({"messages": said}, config, stream_mode=["updates", "values"]):
        if mode == "values":
            if waiting:
                after, waiting = chunk, False
            last = chunk
        elif isinstance(chunk, dict) and chunk.get("summarize"):
            before, waiting = last, True
    final = last
    before = before or final
    after = after or final
    retrieved = {m["key"] for m in final.get("retrieved_memories") or []}
    recalled = [
        RecallRow(
            content=hit.entry.content,
            memory_type=hit.entry.memory_type,
            breakdown=hit.breakdown,
            in_context=hit.entry.id in retrieved,
            thread_id=_str_or_none(hit.entry.metadata.get("thread_id")),
            source=_str_or_none(hit.entry.metadata.get("source")),
        )
        for hit in hits
    ]
    return Turn(
        said=said,
        reply=_text(final["messages"][-1]),
        messages_before=len(before["messages"]),
        tokens_before=_tokens(before["messages"]),
        messages_after=len(after["messages"]),
        tokens_after=_tokens(after["messages"]),
        summarized=before is not after,
        summary=final.get("summary"),
        recalled=recalled,
        memory_context=str(final.get("memory_context") or ""),
        seconds=time.perf_counter() - started,
    )


# ------------------------------------------------------------------ Redis


@dataclass
class KeyGroup:
    """Redis keys of one kind that belong to a session."""

    kind: str
    count: int
    ttl_ms: int
    """Smallest remaining TTL of the group, in ms (-1: no expiry)."""


@dataclass
class SessionView:
    """A session as Redis holds it: registry entry, summary and keys with TTLs."""

    thread_id: str
    meta: SessionMeta | None
    summary: str | None
    groups: list[KeyGroup]
    ttl_seconds: float | None
    """The saver's session TTL (None: sessions never expire)."""


def inspect_session(saver: Any, redis_url: str, thread_id: str) -> SessionView:
    """Read a session back from Redis: `get_session`, `get_summary`, and key TTLs.

    The keys are found by scanning for the thread id (unique per demo run) and
    grouped by what precedes it, e.g. `checkpoint` or `<prefix>:session`.
    """
    import redis

    meta = saver.get_session(thread_id)  # flushes the pending registry records
    summary = saver.get_summary(thread_id)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        groups: dict[str, KeyGroup] = {}
        for key in client.scan_iter(match=f"*{thread_id}*", count=1000):
            kind = key.split(thread_id, 1)[0].rstrip(":{") or key
            ttl = int(client.pttl(key))
            group = groups.setdefault(kind, KeyGroup(kind, 0, ttl))
            group.count += 1
            if ttl >= 0 and (group.ttl_ms < 0 or ttl < group.ttl_ms):
                group.ttl_ms = ttl
    finally:
        client.close()
    ordered = sorted(groups.values(), key=lambda g: (":" not in g.kind, g.kind))
    session_ttl: float | None = getattr(saver.sessions, "ttl", None)
    return SessionView(thread_id, meta, summary, ordered, session_ttl)


# ------------------------------------------------------------------ forgetting


@dataclass
class DecayRow:
    """One memory's decay now and at the horizon, and the verdict there."""

    content: str
    memory_type: str
    importance: float
    accesses: int
    decay_now: float
    decay_later: float
    forget_reason: str
    """The rule that would forget it at the horizon ("" when it stays)."""


@dataclass
class ForgettingView:
    """A dry run of forgetting, judged `horizon_days` from now; nothing is written."""

    horizon_days: float
    decays: list[DecayRow]
    deleted: list[ForgottenRow]
    merged: list[tuple[str, ConsolidationRecord]]
    """(why, planned merge): near-duplicates or a theme."""
    contents: dict[str, str]
    """Memory key to content, to show a merge's sources."""


def forgetting_dry_run(
    store: Any,
    namespace: tuple[str, ...],
    *,
    horizon_days: float,
    themes: Sequence[str] = (),
    min_similarity: float = THEME_SIMILARITY,
    now: float | None = None,
) -> ForgettingView:
    """What forgetting would do to the user's memories `horizon_days` from now.

    Decay and verdict per memory (`calculate_decay`, `should_forget`), the forgetting
    graph in dry-run mode (what it would delete), and consolidation dry runs (what
    it would merge: near-duplicates, and the memories with a cosine similarity of at
    least `min_similarity` to each of `themes`). Reads count no access.
    """
    from langgraph_tiered_memory.agent.forgetting_graph import create_forgetting_graph

    now = time.time() if now is None else now
    later = now + horizon_days * DAY
    listed = store.search(namespace, limit=1000, filter={"$count_access": False})
    decays: list[DecayRow] = []
    contents: dict[str, str] = {}
    for item in listed:
        entry = store.get_memory(namespace, item.key)
        if entry is None:
            continue
        contents[entry.id] = entry.content
        _, reason = should_forget(entry, now=later)
        decays.append(
            DecayRow(
                content=entry.content,
                memory_type=entry.memory_type,
                importance=entry.importance,
                accesses=entry.access_count,
                decay_now=calculate_decay(entry, now=now),
                decay_later=calculate_decay(entry, now=later),
                forget_reason=reason,
            )
        )
    decays.sort(key=lambda row: (-row.decay_later, row.content))
    graph = create_forgetting_graph(
        store=store, namespace=namespace, dry_run=True, clock=lambda: later
    ).compile()
    report = graph.invoke({})["report"]
    merged: list[tuple[str, ConsolidationRecord]] = [
        ("near-duplicates", record) for record in consolidate(store, namespace, dry_run=True)
    ]
    for theme in themes:
        for record in consolidate(
            store, namespace, query=theme, min_similarity=min_similarity, dry_run=True
        ):
            merged.append((f"theme {theme!r}", record))
    return ForgettingView(horizon_days, decays, list(report["details"]), merged, contents)
