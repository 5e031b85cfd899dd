"""Two-hop facts written in everyday phrasings, found through a real store's graph.

Memories are written as plain facts ("Dave is a software engineer at Google.",
"Google is headquartered in Mountain View."); the default rule extractor must join
them so that `graph_neighbors(..., hops=2)` reaches the second fact, for that user only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.graph import graph_neighbors
from langgraph_tiered_memory.graph.types import Triple

U1 = ("users", "u1", "memories")
U2 = ("users", "u2", "memories")

FACTS_U1 = [
    "Dave is a software engineer at Google.",
    "Google is headquartered in Mountain View.",
    "Emma moved from London to Tokyo in 2020.",
    "Tokyo is a city in Japan.",
    "Marcus, the CEO of Helix Labs, lives in Austin.",
    "The headquarters of Helix Labs is in Denver.",
    "Northwind employs Carlos.",
    "Northwind is based in Oslo.",
    "Liam is married to Chloe.",
    "Chloe teaches at Riverside Academy.",
    "Priya is friends with Ahmed.",
    "Ahmed grew up in Cairo and now lives in Dubai.",
]
FACTS_U2 = [
    "Dave is a nurse at Mercy Hospital.",
    "Google is headquartered in Zurich.",
    "Emma moved from Paris to Lima.",
]


@pytest.fixture
def store(
    make_store: Callable[..., TieredMemoryStore], store_options: dict[str, Any]
) -> TieredMemoryStore:
    opened = make_store(
        **{**store_options, "scoring": None, "graph": True}, tiers={"default": "long"}
    )
    for i, text in enumerate(FACTS_U1):
        opened.put(U1, f"f{i}", {"content": text})
    for i, text in enumerate(FACTS_U2):
        opened.put(U2, f"g{i}", {"content": text})
    return opened


def _two_hops(store: TieredMemoryStore, user: str, entity: str) -> dict[str, Any]:
    return {n.entity: n for n in graph_neighbors(store, ("users", user), entity, hops=2)}


@pytest.mark.parametrize(
    ("start", "path"),
    [
        (
            "Dave",
            [("dave", "works_at", "google"), ("google", "located_in", "mountain view")],
        ),
        ("Emma", [("emma", "moved_to", "tokyo"), ("tokyo", "located_in", "japan")]),
        (
            "Marcus",
            [("marcus", "ceo_of", "helix labs"), ("helix labs", "located_in", "denver")],
        ),
        ("Carlos", [("carlos", "works_at", "northwind"), ("northwind", "located_in", "oslo")]),
        (
            "Liam",
            [("liam", "married", "chloe"), ("chloe", "works_at", "riverside academy")],
        ),
        ("Priya", [("priya", "has_friend", "ahmed"), ("ahmed", "lives_in", "dubai")]),
    ],
)
def test_two_hop_facts_are_joined_for_their_user_only(
    store: TieredMemoryStore, start: str, path: list[tuple[str, str, str]]
) -> None:
    near = _two_hops(store, "u1", start)
    end = path[-1][2]
    assert end in near, sorted(near)
    assert near[end].hops == 2
    assert [r.triple for r in near[end].path] == [Triple(*t) for t in path]
    # both memories support the path, and both are u1's
    assert {ns for ns, _ in near[end].memory_keys} == {U1}
    assert len(near[end].memory_keys) == 2


def test_another_users_facts_are_not_reached(store: TieredMemoryStore) -> None:
    dave = _two_hops(store, "u1", "dave")
    assert "mercy hospital" not in dave and "zurich" not in dave
    assert {"google", "mountain view"} <= set(dave)
    emma = _two_hops(store, "u1", "emma")
    assert {"london", "tokyo", "japan"} <= set(emma)
    assert "paris" not in emma and "lima" not in emma
    theirs = _two_hops(store, "u2", "dave")
    assert set(theirs) == {"nurse", "mercy hospital"}
    assert {n.entity for n in graph_neighbors(store, ("users", "u2"), "google", hops=2)} == {
        "zurich"
    }
