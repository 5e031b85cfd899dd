"""Merging conversations into one harder haystack (`bench retrieval --merge`)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tiered_memory_benchmarks._retrieval_data import (
    Conversation,
    Question,
    RetrievalBenchmarkError,
    Turn,
)
from tiered_memory_benchmarks._retrieval_merge import MERGED_ID, merge_conversations


def _day(d: int) -> datetime:
    return datetime(2023, 5, d, tzinfo=timezone.utc)


def _conv(sid: str, a: str, b: str, days: list[int]) -> Conversation:
    turns = []
    for s, d in enumerate(days, start=1):
        turns += [
            Turn(f"D{s}:1", a, f"Hi {b}, I went hiking.", s, _day(d), f"{a}'s boots"),
            Turn(f"D{s}:2", b, f"Nice, {a}!", s, _day(d)),
        ]
    q = Question(f"Where did {a} go?", ("D1:1",), 4)
    return Conversation(sid, tuple(turns), (q,), 1, _day(max(days) + 1))


def test_speakers_are_renamed_sessions_interleaved_and_evidence_kept() -> None:
    first = _conv("c1", "Caroline", "Melanie", [2, 9])
    second = _conv("c2", "Jon", "Gina", [5, 12])
    merged = merge_conversations([first, second])
    assert merged.sample_id == MERGED_ID
    assert len(merged.turns) == 8 and len({t.dia_id for t in merged.turns}) == 8
    assert {t.speaker for t in merged.turns} == {"Caroline", "Melanie"}
    jon_turn = next(t for t in merged.turns if t.dia_id == "c2/D1:1")
    assert jon_turn.text == "Hi Melanie, I went hiking." and jon_turn.speaker == "Caroline"
    assert jon_turn.blip_caption == "Caroline's boots"
    dates = [t.occurred_at for t in merged.turns]
    assert dates == sorted(dates)  # sessions by date
    assert [t.dia_id.split("/")[0] for t in merged.turns[::2]] == ["c1", "c2", "c1", "c2"]
    assert [q.question for q in merged.questions] == ["Where did Caroline go?"] * 2
    assert [q.evidence for q in merged.questions] == [("c1/D1:1",), ("c2/D1:1",)]
    assert merged.now == _day(13) and merged.skipped_questions == 2
    # a session's turns stay together and in order
    by_session: dict[int, list[str]] = {}
    for t in merged.turns:
        by_session.setdefault(t.session, []).append(t.dia_id)
    assert all(ids == sorted(ids) for ids in by_session.values()) and len(by_session) == 4


def test_names_are_replaced_as_whole_words_only() -> None:
    first = _conv("c1", "Ann", "Bo", [1])
    second = Conversation(
        "c2",
        (
            Turn("D1:1", "Jon", "Jonathan met Gina and Jon.", 1, _day(2)),
            Turn("D1:2", "Gina", "Ginas?", 1, _day(2)),
        ),
        (),
        0,
        _day(3),
    )
    merged = merge_conversations([first, second])
    assert [t.text for t in merged.turns[-2:]] == ["Jonathan met Bo and Ann.", "Ginas?"]


def test_one_conversation_cannot_be_merged() -> None:
    with pytest.raises(RetrievalBenchmarkError, match="at least two"):
        merge_conversations([_conv("c1", "A", "B", [1])])
