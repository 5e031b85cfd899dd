"""The load benchmark's workload: users, sessions, scripted turns and a fake chat model.

Everything here is deterministic: the same config gives the same users, messages,
replies, seed memories and embeddings, in any process and under any interleaving.
That is what lets the benchmark compare a concurrent run with a serial replay.

**Users and sessions.** Session ``i`` (0-based) belongs to user ``user-{i mod U}``
(``U = users``), so sessions ``i, i+U, i+2U, ...`` share a user and write to the same
memory namespace concurrently. Each session is one thread (``thread_id``).

**Messages.** Turn ``t`` of session ``i`` cycles through four kinds: a fact the user
asks to remember, a long message, a stated preference, and a question about an earlier
turn. Every message names its own session and turn, so no two messages of a run are
equal or near-duplicates of each other: whatever one session writes never makes the
agent update, merge or skip what another session writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_tiered_memory.demo.model import FakeReplyModel

__all__ = [
    "ScriptedChatModel",
    "SessionScript",
    "build_sessions",
    "seed_memories",
    "user_message",
    "user_of",
]

_THINGS = ("green tea", "oat milk", "rye bread", "jazz", "hiking boots", "a standing desk")
_COLOURS = ("teal", "amber", "crimson", "indigo", "olive", "silver", "ochre")
_FILLER = (
    "I spent the morning reviewing the quarterly plan with the team, then we walked"
    " through the open questions on the roadmap, agreed on owners for each item and"
    " wrote down the risks we still need to look at before the next review meeting."
)


def user_of(session: int, users: int) -> str:
    """The user a session belongs to: ``user-{session mod users}``.

    Args:
        session: 0-based session number.
        users: Number of users.

    Returns:
        The user id.
    """
    return f"user-{session % users:03d}"


def user_message(session: int, turn: int) -> str:
    """The user's message at `turn` of `session` (unique across the whole run).

    Args:
        session: 0-based session number.
        turn: 0-based turn number.

    Returns:
        The message text.
    """
    tag = f"{session}-{turn}"
    kind = turn % 4
    if kind == 0:
        colour = _COLOURS[(session + turn) % len(_COLOURS)]
        return f"Please remember that the code word for my task {tag} is {colour}."
    if kind == 1:
        return f"Some context about task {tag}: {_FILLER}"
    if kind == 2:
        thing = _THINGS[(session * 7 + turn) % len(_THINGS)]
        return f"I prefer {thing} while I work on task {tag}."
    return f"What do you remember about my task {session}-{turn - 3}?"


@dataclass(frozen=True)
class SessionScript:
    """One session: its thread, its user and its messages, in order."""

    index: int
    user_id: str
    thread_id: str
    messages: tuple[str, ...]


def build_sessions(
    sessions: int, turns: int, users: int, *, thread_prefix: str
) -> list[SessionScript]:
    """The scripts of every session of a run.

    Args:
        sessions: Number of sessions.
        turns: Turns per session.
        users: Number of users the sessions are spread over (round robin).
        thread_prefix: Prefix of the thread ids (unique per run and phase).

    Returns:
        One script per session, in session order.
    """
    return [
        SessionScript(
            index=i,
            user_id=user_of(i, users),
            thread_id=f"{thread_prefix}-s{i:04d}",
            messages=tuple(user_message(i, t) for t in range(turns)),
        )
        for i in range(sessions)
    ]


def seed_memories(user_id: str, count: int) -> list[tuple[str, dict[str, Any]]]:
    """The memories a user has before the run: ``(key, value)`` pairs.

    Seeding at least as many memories as any search of a turn returns makes the number
    of hits of every search independent of what other sessions have written so far,
    so the total number of accesses is the same in any interleaving.

    Args:
        user_id: The user.
        count: Number of memories.

    Returns:
        The pairs, with deterministic keys and contents.
    """
    return [
        (
            f"seed-{n:03d}",
            {
                "content": f"Background note {n} about {user_id}: works on"
                f" {_THINGS[n % len(_THINGS)]} projects.",
                "memory_type": "fact",
                "importance": 0.4,
            },
        )
        for n in range(count)
    ]


def _reply_to(messages: Sequence[BaseMessage]) -> str:
    last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    text = last.text if last is not None else ""
    digest = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
    # Shares 3+ content words with every kind of memory the run stores (seeds, facts,
    # preferences, interactions), so the agent judges every retrieved memory used and
    # reinforces all of them: how many reinforcements a turn makes never depends on
    # which memories the search returned.
    return (
        f"Noted ({digest}). I keep a background note of each code word and task you prefer"
        " while you work on your projects; that works."
    )


class ScriptedChatModel(FakeReplyModel):
    """A fake chat model whose reply depends only on the last user message.

    The reply never depends on the retrieved memories or the profile in the prompt
    (which differ between interleavings), so what the agent stores for a turn is the
    same in the concurrent run and in the serial replay. `delay` (seconds) simulates
    the model's latency (`time.sleep` on the sync path, `asyncio.sleep` on the async one).
    """

    llm_type = "scripted-load"

    def _reply(self, messages: list[BaseMessage]) -> str:
        return _reply_to(messages)
