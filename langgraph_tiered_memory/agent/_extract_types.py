"""The records of extraction: what a model returns, what a run reports, and the prompts.

Re-exported by `langgraph_tiered_memory.agent.extraction`; kept apart so the planner can use
them without importing the public module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from langgraph_tiered_memory.memory import MemoryType

EXTRACTION_PROMPT = (
    "You pick out what is worth remembering about the user from a conversation, for"
    " later conversations. Write each memory as one short, self-contained statement in"
    " the third person (\"The user lives in Berlin\"). memory_type: 'fact' for stable"
    " facts (where they live or work, family, health), 'preference' for likes, dislikes"
    " and wishes, 'experience' for things that happened, 'skill' for what they can do."
    " importance: 0 (trivial) to 1 (essential); 0.8 or more when the user asks you to"
    " remember it or calls it important. Leave out greetings, questions, small talk and"
    " anything only the assistant said. Return an empty list when nothing is worth"
    " keeping."
)
"""System prompt of the extraction call (structured output: `ExtractedMemories`)."""

DECISION_PROMPT = (
    "You keep a user's long-term memories up to date. Compare the new memory with the"
    " existing memories listed and choose one action:\n"
    "- ADD: it is new information.\n"
    "- UPDATE: it adds to or refines an existing memory about the same thing: set"
    " memory_id to that memory and content to one statement merging both.\n"
    "- DELETE: it contradicts an existing memory that is now outdated (the user moved,"
    " changed their mind, ...): set memory_id to the outdated memory; the new memory"
    " takes its place.\n"
    "- NOOP: an existing memory already says the same: set memory_id to it.\n"
    "Use only the ids of the existing memories listed."
)
"""System prompt of a decision call (structured output: `MemoryDecision`)."""


class ExtractedMemory(BaseModel):
    """One memory found in a conversation."""

    content: str = Field(
        min_length=1,
        description="One self-contained statement about the user, e.g. 'The user lives in Berlin'.",
    )
    memory_type: MemoryType = Field(
        description="'fact', 'preference', 'experience' or 'skill'.",
    )
    importance: float = Field(
        ge=0.0, le=1.0, description="0 (trivial) to 1 (essential); 0.5 when unsure."
    )


class ExtractedMemories(BaseModel):
    """The memories found in a conversation (the extraction call's answer)."""

    memories: list[ExtractedMemory] = Field(
        default_factory=list, description="Memories worth keeping; empty when none."
    )


class MemoryDecision(BaseModel):
    """What to do with one extracted memory, given similar stored memories."""

    action: Literal["ADD", "UPDATE", "DELETE", "NOOP"] = Field(
        description="ADD a new memory, UPDATE (merge into) memory_id, DELETE the"
        " contradicted memory_id (the new memory replaces it), or NOOP (already known)."
    )
    memory_id: str | None = Field(
        default=None,
        description="The id of the existing memory the action is about (UPDATE, DELETE,"
        " NOOP); one of the ids listed.",
    )
    content: str | None = Field(default=None, description="For UPDATE: the merged statement.")


@dataclass
class ExtractionResult:
    """What one extraction run did, by memory key.

    Attributes:
        added: Keys of the memories written new (a contradicted memory's replacement
            too).
        updated: Keys of stored memories rewritten with merged content.
        deleted: Keys of stored memories removed because a new statement contradicts
            them.
        unchanged: Keys of stored memories a candidate only repeated (NOOP).
        candidates: The memories found in the messages, in order.
        decisions: The decision applied to each candidate (same order).
        rejected: Model decisions refused (naming a key that was not offered, or an
            action without its memory_id); the heuristic decided instead.
        method: `"model"` when the model's candidates were used, `"heuristic"` when the
            heuristic path found them (no model, or a malformed model answer).
        redactions: Findings the redactor removed from the input, by kind.
    """

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    candidates: list[ExtractedMemory] = field(default_factory=list)
    decisions: list[MemoryDecision] = field(default_factory=list)
    rejected: list[MemoryDecision] = field(default_factory=list)
    method: Literal["model", "heuristic"] = "heuristic"
    redactions: dict[str, int] = field(default_factory=dict)
