"""LoCoMo data for the retrieval benchmark: reading the file into turns and questions.

A LoCoMo sample is a long two-person conversation in sessions of dated turns, and
questions whose evidence names the turns (``"D<session>:<turn>"``) that answer them.
This module turns one sample into a `Conversation`: its turns in dialog order, session by
session, each with the memory text and value the benchmark writes, and its questions
with evidence cleaned to ids that name turns. It also holds `RetrievalBenchmarkError`,
the error of every part of the benchmark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORY_NAMES",
    "NAMESPACE_LABEL",
    "Conversation",
    "Question",
    "RetrievalBenchmarkError",
    "Turn",
    "category_name",
    "load_locomo",
    "parse_conversation",
    "parse_session_date",
    "split_evidence",
    "turn_text",
]

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""Names of the LoCoMo question categories."""

NAMESPACE_LABEL = "locomo"
"""First label of every conversation's namespace."""

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
_LOCOMO_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


class RetrievalBenchmarkError(ValueError):
    """The data or an option of the retrieval benchmark is invalid."""


def category_name(category: int) -> str:
    """The name of a LoCoMo category number, or ``category-<n>`` for an unknown one."""
    return CATEGORY_NAMES.get(category, f"category-{category}")


def parse_session_date(text: str) -> datetime:
    """Parse a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"``.

    The LoCoMo format is tried first with `datetime.strptime`; anything else goes to
    `dateutil.parser.parse` in fuzzy mode. The dates have no time zone; they are
    taken as UTC.

    Args:
        text: The free-text ``session_<n>_date_time`` value.

    Returns:
        An aware UTC datetime.

    Raises:
        RetrievalBenchmarkError: The text holds no recognisable date.
    """
    cleaned = " ".join(text.split())
    try:
        parsed = datetime.strptime(cleaned, _LOCOMO_DATE_FORMAT)
    except ValueError:
        from dateutil import parser as date_parser

        try:
            parsed = date_parser.parse(cleaned, fuzzy=True)
        except (ValueError, OverflowError) as e:
            raise RetrievalBenchmarkError(
                f"Cannot read the session date {text!r}; expected e.g. '1:56 pm on 8 May, 2023'."
            ) from e
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def turn_text(speaker: str, text: str, blip_caption: str | None = None) -> str:
    """The memory content of one dialog turn.

    Args:
        speaker: Who spoke.
        text: What they said.
        blip_caption: Caption of the image shared in the turn, if any.

    Returns:
        ``<speaker> said, "<text>"``, plus `` and shared <blip_caption>`` for image turns.
    """
    content = f'{speaker} said, "{text}"'
    if blip_caption:
        content += f" and shared {blip_caption}"
    return content


def split_evidence(evidence: Iterable[str], known: Collection[str]) -> list[str]:
    """Clean the evidence of one question into dialog ids that name turns.

    Some LoCoMo evidence strings hold several ids (``"D8:6; D9:17"``): every string is
    split on ``;``, ``,`` and whitespace, ids that name no turn are dropped, and
    duplicates are dropped.

    Args:
        evidence: The question's ``evidence`` list.
        known: The ``dia_id`` of every turn of the conversation.

    Returns:
        The dialog ids, in the order given.
    """
    found: dict[str, None] = {}
    for raw in evidence:
        if not isinstance(raw, str):
            continue
        for part in _EVIDENCE_SEPARATORS.split(raw):
            if part and part in known:
                found[part] = None
    return list(found)


@dataclass(frozen=True)
class Turn:
    """One dialog turn of a LoCoMo conversation.

    Attributes:
        dia_id: ``"D<session>:<turn>"``, the memory's key.
        speaker: Who spoke.
        text: What they said.
        session: The session number.
        occurred_at: The session's date (aware UTC).
        blip_caption: Caption of the image shared in the turn, if any.
    """

    dia_id: str
    speaker: str
    text: str
    session: int
    occurred_at: datetime
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The memory text (see `turn_text`)."""
        return turn_text(self.speaker, self.text, self.blip_caption)

    def value(self) -> dict[str, Any]:
        """The stored value of this turn's memory.

        Returns:
            ``{"content", "occurred_at" (ISO 8601), "speaker", "session"}``.
        """
        return {
            "content": self.content,
            "occurred_at": self.occurred_at.isoformat(),
            "speaker": self.speaker,
            "session": self.session,
        }


@dataclass(frozen=True)
class Question:
    """One LoCoMo question with usable evidence.

    Attributes:
        question: The question text (the search query).
        evidence: The dialog ids that answer it, cleaned by `split_evidence`.
        category: The LoCoMo category number (see `CATEGORY_NAMES`).
    """

    question: str
    evidence: tuple[str, ...]
    category: int

    @property
    def category_name(self) -> str:
        """The category's name, or ``category-<n>`` for an unknown number."""
        return category_name(self.category)


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample, ready to ingest and query.

    Attributes:
        sample_id: E.g. ``"conv-26"``.
        turns: Every turn, in dialog order, session by session.
        questions: The questions left with evidence after cleaning.
        skipped_questions: Questions dropped for lack of evidence naming a turn.
        now: When the questions are asked: the day after the last session with turns.
    """

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int
    now: datetime

    @property
    def namespace(self) -> tuple[str, ...]:
        """The conversation's namespace in the store."""
        return (NAMESPACE_LABEL, self.sample_id)

    def sessions(self) -> Iterator[tuple[datetime, list[Turn]]]:
        """The turns grouped by session, in order.

        Yields:
            The session's date and its turns.
        """
        current: list[Turn] = []
        for turn in self.turns:
            if current and turn.session != current[0].session:
                yield current[0].occurred_at, current
                current = []
            current.append(turn)
        if current:
            yield current[0].occurred_at, current


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    """Turn one LoCoMo sample into turns and questions.

    Sessions without turns (conv-26 has dates of sessions that hold none) are ignored,
    also for the date of the questions.

    Args:
        sample: One element of the LoCoMo JSON list.

    Returns:
        The conversation.

    Raises:
        RetrievalBenchmarkError: The sample lacks a field the benchmark needs, a session
            with turns has no readable date, or no session has turns.
    """
    try:
        sample_id = str(sample["sample_id"])
        conversation = sample["conversation"]
    except (KeyError, TypeError) as e:
        raise RetrievalBenchmarkError(
            "A LoCoMo sample needs 'sample_id' and 'conversation'."
        ) from e
    numbers = sorted(
        int(m.group(1))
        for key in conversation
        if (m := _SESSION_KEY.fullmatch(key)) and conversation[key]
    )
    turns: list[Turn] = []
    last_date: datetime | None = None
    for n in numbers:
        date_text = conversation.get(f"session_{n}_date_time")
        if not isinstance(date_text, str):
            raise RetrievalBenchmarkError(f"{sample_id}: session {n} has no session_{n}_date_time.")
        date = parse_session_date(date_text)
        last_date = date
        for raw in conversation[f"session_{n}"]:
            try:
                turns.append(
                    Turn(
                        dia_id=str(raw["dia_id"]),
                        speaker=str(raw["speaker"]),
                        text=str(raw["text"]),
                        session=n,
                        occurred_at=date,
                        blip_caption=raw.get("blip_caption") or None,
                    )
                )
            except (KeyError, TypeError) as e:
                raise RetrievalBenchmarkError(
                    f"{sample_id}: a turn of session {n} lacks 'dia_id', 'speaker' or 'text'."
                ) from e
    if last_date is None:
        raise RetrievalBenchmarkError(f"{sample_id}: no session has turns.")
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = 0
    for qa in sample.get("qa", []):
        evidence = split_evidence(qa.get("evidence") or [], known)
        if not evidence or not qa.get("question"):
            skipped += 1
            continue
        questions.append(
            Question(
                question=str(qa["question"]),
                evidence=tuple(evidence),
                category=int(qa.get("category", 0)),
            )
        )
    return Conversation(
        sample_id=sample_id,
        turns=tuple(turns),
        questions=tuple(questions),
        skipped_questions=skipped,
        now=last_date + timedelta(days=1),
    )


def load_locomo(path: str | Path, conversations: Sequence[str] | None = None) -> list[Conversation]:
    """Read a LoCoMo JSON file.

    Args:
        path: The file (a JSON list of samples).
        conversations: Sample ids to keep, in this order; `None` keeps all, in file order.

    Returns:
        The conversations.

    Raises:
        RetrievalBenchmarkError: The file cannot be read or parsed, or a requested
            sample id is not in it.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError) as e:  # ValueError: not UTF-8, not JSON
        raise RetrievalBenchmarkError(f"Cannot read LoCoMo data from {str(path)!r}: {e}") from e
    if not isinstance(data, list):
        raise RetrievalBenchmarkError(
            f"{str(path)!r} is not LoCoMo data: expected a JSON list of samples."
        )
    by_id = {str(s.get("sample_id")): s for s in data if isinstance(s, dict)}
    if conversations is None:
        wanted = list(by_id)
    else:
        wanted = list(dict.fromkeys(conversations))
        missing = [c for c in wanted if c not in by_id]
        if missing:
            raise RetrievalBenchmarkError(
                f"Conversation(s) {', '.join(missing)} not in {str(path)!r}; it has"
                f" {', '.join(by_id) or 'none'}."
            )
    return [parse_conversation(by_id[c]) for c in wanted]
