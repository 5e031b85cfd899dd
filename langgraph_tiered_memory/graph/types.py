"""The records of the knowledge graph: triples, their provenance and query answers.

A triple is (subject, relation, object) with every part normalised
(`normalize_entity`, `normalize_relation`). Each stored triple is supported by one or
more memories of one namespace; it lives while at least one of them does. Nothing
here does I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "GraphHit",
    "MemoryTriples",
    "Namespace",
    "Neighbor",
    "Triple",
    "TripleRecord",
    "graph_scope",
    "normalize_entity",
    "normalize_relation",
]

Namespace = tuple[str, ...]

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = "\"'`.,;:!?()[]{}<>"


def normalize_entity(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """An entity name as the graph stores it: NFKC, case-folded, single spaces.

    Surrounding quotes and punctuation are dropped. `aliases` maps normalised
    alternative names to a normalised canonical one (for example those a model
    reports: {"nyc": "new york city"}).
    """
    text = _SPACE.sub(" ", unicodedata.normalize("NFKC", name)).strip().strip(_EDGE_PUNCT)
    text = text.strip().casefold()
    if aliases:
        text = aliases.get(text, text)
    return text


def normalize_relation(relation: str) -> str:
    """A relation as the graph stores it: lower case words joined by `_` (`lives_in`)."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", relation).casefold())
    return "_".join(words)


class Triple(NamedTuple):
    """One (subject, relation, object) fact, normalised."""

    subject: str
    relation: str
    object: str

    @classmethod
    def of(cls, subject: str, relation: str, object: str) -> Triple:  # noqa: A002
        """A triple with its parts normalised."""
        return cls(
            normalize_entity(subject), normalize_relation(relation), normalize_entity(object)
        )


def graph_scope(namespace: Namespace, user_id: str | None) -> str:
    """The scope graph paths stay in: the user's, or the namespace's own when it has none.

    Hops (1-2 hop queries, the graph retrieval channel) only join triples of one scope,
    so a path never crosses users.
    """
    if user_id is not None:
        return "u:" + user_id
    return "n:" + "\x1f".join(namespace)


class MemoryTriples(NamedTuple):
    """What one memory supports: after `GraphStore.replace`, exactly these triples."""

    namespace: Namespace
    key: str
    """The memory's key in `namespace`."""
    triples: tuple[Triple, ...]
    """Empty when the memory supports nothing (deleted, forgotten, or no facts)."""
    user_id: str | None
    """The user the namespace belongs to (the label after "users"), or None if shared."""


class TripleRecord(NamedTuple):
    """A stored triple with its provenance, as queries return it."""

    subject: str
    relation: str
    object: str
    namespace: Namespace
    user_id: str | None
    memory_keys: tuple[str, ...]
    """The memories of `namespace` supporting it, sorted."""

    @property
    def triple(self) -> Triple:
        """The bare triple."""
        return Triple(self.subject, self.relation, self.object)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (export, the CLI's JSON)."""
        return {
            **self._asdict(),
            "namespace": list(self.namespace),
            "memory_keys": list(self.memory_keys),
        }


class Neighbor(NamedTuple):
    """An entity reached from the start entity of `GraphStore.neighbors`."""

    entity: str
    hops: int
    """1 or 2."""
    path: tuple[TripleRecord, ...]
    """The triples walked from the start entity (one per hop), in order."""

    @property
    def memory_keys(self) -> tuple[tuple[Namespace, str], ...]:
        """(namespace, key) of every memory supporting a triple of the path."""
        return tuple(dict.fromkeys((r.namespace, k) for r in self.path for k in r.memory_keys))


class GraphHit(NamedTuple):
    """A memory the graph channel reached: through which triple, from which entity."""

    namespace: Namespace
    key: str
    hops: int
    """0 when the triple names a query entity itself, 1 when reached over one more hop."""
    entity: str
    """The query entity the path started from."""
    triple: TripleRecord
    """The triple this memory supports that the path reached."""
