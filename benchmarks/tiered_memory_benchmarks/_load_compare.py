"""Lost-update detection of the load benchmark: a run's memories against a serial replay.

After the concurrent run (and the agent's deferred writes) has finished, the same
scripts are replayed one turn at a time into a fresh store. For each user the two
final states are reduced to quantities that do not depend on how the sessions
interleaved, and compared:

- **Memories by content**: the multiset of the `content` of the memories in the
  user's namespace (seed memories included). The scripted replies depend only on the
  user's message and no two messages of a run are near-duplicates, so every turn
  stores, extracts and updates the same contents whatever ran before it.
  `lost_memories` counts the contents (with multiplicity) the replay has and the run
  lacks; `unexpected_memories` the other way round (not a lost update, but a sign of a
  nondeterministic agent, reported beside it).
- **Accesses**: the sum of `access_count` over the user's memories. Every search of a
  turn returns as many hits as its limit, because each user is seeded with more
  memories than any search asks for; so the number of accesses a user's turns make is
  the same in every interleaving, even though which memories they touch is not.
  `lost_accesses` is how far the run's sum falls short of the replay's.

Per-memory access counts and importance are not compared: which memories a search
returns, and so which ones the agent reinforces, depends on what other sessions of
the same user had stored by then.

`lost_updates` = lost memories + lost accesses, summed over users.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LostUpdates",
    "UserState",
    "compare_states",
]


@dataclass(frozen=True)
class UserState:
    """The interleaving-independent part of one user's memories.

    Attributes:
        contents: How many memories hold each content.
        accesses: Sum of the memories' access counts.
    """

    contents: Counter[str]
    accesses: int

    @property
    def memories(self) -> int:
        """Number of memories."""
        return sum(self.contents.values())


@dataclass
class LostUpdates:
    """What the concurrent run lacks compared with the serial replay.

    Attributes:
        lost_memories: Per user, memory contents the replay has and the run lacks.
        unexpected_memories: Per user, memory contents the run has and the replay lacks.
        lost_accesses: Per user, accesses the replay counted and the run did not.
        examples: A few lost contents, for the report.
    """

    lost_memories: dict[str, int] = field(default_factory=dict)
    unexpected_memories: dict[str, int] = field(default_factory=dict)
    lost_accesses: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Lost memories plus lost accesses, over every user."""
        return sum(self.lost_memories.values()) + sum(self.lost_accesses.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (users with nothing lost are left out)."""
        return {
            "lost_updates": self.total,
            "lost_memories": sum(self.lost_memories.values()),
            "lost_accesses": sum(self.lost_accesses.values()),
            "unexpected_memories": sum(self.unexpected_memories.values()),
            "users_with_lost_updates": sorted(
                u
                for u in set(self.lost_memories) | set(self.lost_accesses)
                if self.lost_memories.get(u, 0) or self.lost_accesses.get(u, 0)
            ),
            "examples": self.examples,
        }


def compare_states(
    run: dict[str, UserState], replay: dict[str, UserState], *, max_examples: int = 5
) -> LostUpdates:
    """Compare the run's final state with the serial replay's, user by user.

    Args:
        run: Per user, the state after the concurrent run.
        replay: Per user, the state after the serial replay.
        max_examples: Most lost contents to quote.

    Returns:
        What the run lost (and what it has that the replay does not).
    """
    out = LostUpdates()
    empty = UserState(Counter(), 0)
    for user in sorted(set(run) | set(replay)):
        got, want = run.get(user, empty), replay.get(user, empty)
        missing = want.contents - got.contents
        extra = got.contents - want.contents
        if missing:
            out.lost_memories[user] = sum(missing.values())
            for content in sorted(missing):
                if len(out.examples) < max_examples:
                    out.examples.append(f"{user}: {content[:80]}")
        if extra:
            out.unexpected_memories[user] = sum(extra.values())
        if want.accesses > got.accesses:
            out.lost_accesses[user] = want.accesses - got.accesses
    return out
