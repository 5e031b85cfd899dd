"""A harder haystack from the conversations at hand: all of them in one namespace.

Held-out conversations are often longer than the ones a setting was chosen on, and
recall falls as the haystack grows. `merge_conversations` builds a longer one from the
data given: every conversation's speakers are renamed to the first conversation's
(by order of appearance, in the turns, captions and questions alike), the sessions of
all of them are interleaved by date, and each question keeps its own evidence. A
question about "Caroline" then competes with every turn any "Caroline" said, so a
ranking that only worked because the haystack was small shows it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from tiered_memory_benchmarks._retrieval_data import (
    Conversation,
    RetrievalBenchmarkError,
    Turn,
)

__all__ = ["MERGED_ID", "merge_conversations"]

MERGED_ID = "merged"
"""Sample id of the merged conversation."""

_SESSION_STRIDE = 10_000


def _speakers(conversation: Conversation) -> list[str]:
    return list(dict.fromkeys(t.speaker for t in conversation.turns))


def _renamer(names: dict[str, str]) -> re.Pattern[str] | None:
    if not names:
        return None
    return re.compile(
        r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len)[::-1]) + r")\b"
    )


def merge_conversations(conversations: Sequence[Conversation]) -> Conversation:
    """One conversation holding every turn and question of `conversations`.

    Turn ids become ``"<sample id>/<dia id>"`` (unique across conversations); session
    numbers are offset per conversation; sessions are ordered by date (ties keep the
    input order); the questions are asked the day after the last session of any.

    Raises:
        RetrievalBenchmarkError: fewer than two conversations.
    """
    if len(conversations) < 2:
        raise RetrievalBenchmarkError(
            "--merge needs at least two conversations to put in one namespace."
        )
    target = _speakers(conversations[0])
    sessions: list[tuple[object, int, list[Turn]]] = []
    questions = []
    for index, conv in enumerate(conversations):
        mapping = {
            s: target[i % len(target)]
            for i, s in enumerate(_speakers(conv))
            if index and target and s != target[i % len(target)]
        }
        pattern = _renamer(mapping)

        def rename(text: str, pattern: re.Pattern[str] | None = pattern, m: dict = mapping) -> str:
            return pattern.sub(lambda hit: m[hit.group(1)], text) if pattern else text

        prefix = f"{conv.sample_id}/"
        for when, turns in conv.sessions():
            renamed = [
                dataclasses.replace(
                    t,
                    dia_id=prefix + t.dia_id,
                    speaker=mapping.get(t.speaker, t.speaker),
                    text=rename(t.text),
                    blip_caption=rename(t.blip_caption) if t.blip_caption else None,
                    session=index * _SESSION_STRIDE + t.session,
                )
                for t in turns
            ]
            sessions.append((when, len(sessions), renamed))
        questions += [
            dataclasses.replace(
                q,
                question=rename(q.question),
                evidence=tuple(prefix + e for e in q.evidence),
            )
            for q in conv.questions
        ]
    sessions.sort(key=lambda s: (s[0], s[1]))
    return Conversation(
        sample_id=MERGED_ID,
        turns=tuple(t for _, _, turns in sessions for t in turns),
        questions=tuple(questions),
        skipped_questions=sum(c.skipped_questions for c in conversations),
        now=max(c.now for c in conversations),
    )
