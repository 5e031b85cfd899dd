"""Search latency with and without the knowledge-graph channel, on one store.

`tiered-memory bench graph-search` builds one `TieredMemoryStore` whose every namespace
is on the long (embedded Chroma) tier, with a knowledge graph (`graph=True`: the
embedded SQLite backend and the rule extractor), and times hybrid `search_memories`
three ways, side by side, over the same queries:

- ``off``: the channel switched off (`graph_weight` 0), the baseline;
- ``hops 0``: the channel on (`graph_weight` 0.5), memories whose own triples name a
  query entity;
- ``hops 1``: the channel on, also memories one triple further (`graph_hops` 1).

Each query runs once per setting, in turn, so noise on a shared machine hits all three
alike. A search is the memory agent's: `search_memories(("users", user), question,
user_id=user)`, so the graph channel asks with a namespace filter (the user's scope).
Searches do not count accesses (`$count_access` False), so every setting sees the same
store. Besides the whole search, the graph's own share is timed: one
`GraphStore.memories_for` call with the query's entities (`query_entities`) at that
setting's hops, with a filter accepting the user's namespaces.

The data is synthetic and deterministic (a seeded generator): `users` users, each with
a namespace `("users", "u<n>", "memories")` holding an equal share of the memories.
Each memory is one first-person or third-person sentence naming people (from a
per-user circle of about 40, a few of them in many memories), places and employers
(one place and one employer of each user are hubs, named in a third of its memories),
and most first-person sentences name the speaker (each memory's `speaker`), a hub too.
Queries ask about the same people, places and employers. Embeddings are
`SeededEmbeddings` (a vector per text from a hash, no model), so the dense channel's
cost is real and its ranking arbitrary.

Example:
    ```python
    from tiered_memory_benchmarks.graph import (
        GraphSearchBenchConfig,
        run_graph_search_benchmark,
    )

    report = run_graph_search_benchmark(GraphSearchBenchConfig(memories=60, queries=5))
    assert [r.setting for r in report.rows] == ["off", "hops 0", "hops 1"]
    ```
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tiered_memory_benchmarks._store_data import (
    SeededEmbeddings,
    StoreBenchmarkError,
    check_positive,
    percentiles_ms,
    run_environment,
)

__all__ = [
    "GraphSearchBenchConfig",
    "GraphSearchReport",
    "GraphSearchRow",
    "LATENCY_TARGET_MS",
    "make_memories",
    "make_queries",
    "run_graph_search_benchmark",
]

LATENCY_TARGET_MS = 20.0
"""The long tier's hybrid search target, p50 (the long-tier issue)."""

_SPEAKERS = (
    "Caroline Hale Melanie Ortiz Jon Baker Priya Nair Omar Haddad Lena Vogel Sam Price"
    " Yuki Tanaka Maria Costa Ivan Petrov Grace Kim Tariq Aziz"
).split()
_FIRST = (
    "Anna Tomas Clara Peter Sofia Lucas Mia Noah Elena Marco Nina Oscar Rosa Victor"
    " Hannah Felix Ines David Julia Leo Alice Bruno Chloe Diego Emma Hugo Iris Karl"
    " Laura Mateo Nora Pablo Rita Simon Tessa Ugo Vera Walter Zoe Adam"
).split()
_LAST = (
    "Berg Weiss Novak Silva Moreau Jensen Rossi Dubois Fischer Lopez Varga Kowalski"
    " Lindqvist Murphy Santos Keller"
).split()
_PLACES = (
    "Lisbon Porto Berlin Madrid London Paris Oslo Vienna Prague Dublin Rome Zurich"
    " Warsaw Athens Munich Seville Bruges Krakow Lyon Turin Geneva Bergen Malaga Ghent"
).split()
_EMPLOYERS = (
    "Acme Globex Initech Umbrella Hooli Stark Wayne Tyrell Cyberdyne Soylent Vandelay"
    " Wonka Oscorp Gringotts Dunder Pied Piper"
).split()
_HOBBIES = (
    "climbing sailing chess pottery running painting jazz cycling baking gardening"
    " photography surfing"
).split()
_MONTHS = "January March May July September November".split()

_MEMORY_TEMPLATES = (
    "I met {p} at the {e} office in {c}.",
    "{p} lives in {c}.",
    "{p} works at {e}.",
    "My sister {p} moved to {c} last year.",
    "I had lunch with {p} and {q} in {c}.",
    "{p} likes {h}.",
    "I visited {c} with {p} in {m}.",
    "{p} is friends with {q}.",
    "{p} started a new job at {e} in {c}.",
    "I went {h} near {c} with {p}.",
    "{p} and {q} both work at {e}.",
    "My colleague {p} recommended a cafe in {c}.",
)
_QUERY_TEMPLATES = (
    "Where does {p} work?",
    "Which city does {p} live in?",
    "Who did {s} meet in {c}?",
    "What does the friend of {p} like?",
    "When did I visit {c} with {p}?",
    "Who works at {e} with {p}?",
    "What did {s} do in {c} last year?",
    "Which colleague of {s} recommended a place in {c}?",
)


@dataclass
class GraphSearchBenchConfig:
    """What the benchmark runs.

    Attributes:
        memories: Memories in the store, spread evenly over `users`.
        queries: Searches per setting (round-robin over the users).
        users: User namespaces.
        graph_weight: `graph_weight` of the two settings with the channel on.
        limit: Hits per search.
        dims: Embedding size.
        batch_size: Memories per `store.batch` while loading.
        seed: Seed of the data.
    """

    memories: int = 10_000
    queries: int = 200
    users: int = 10
    graph_weight: float = 0.5
    limit: int = 10
    dims: int = 384
    batch_size: int = 500
    seed: int = 7

    def validate(self) -> GraphSearchBenchConfig:
        """Check the options; returns the config.

        Raises:
            StoreBenchmarkError: An option is out of range.
        """
        check_positive(self, ("memories", "queries", "users", "graph_weight", "limit", "dims"))
        check_positive(self, ("batch_size",))
        if self.users > len(_SPEAKERS):
            raise StoreBenchmarkError(f"users must be at most {len(_SPEAKERS)}, got {self.users}.")
        return self


@dataclass
class GraphSearchRow:
    """The figures of one setting.

    Attributes:
        setting: "off", "hops 0" or "hops 1".
        graph_weight: The setting's `graph_weight`.
        graph_hops: The setting's `graph_hops`.
        p50_ms: Median `search_memories` latency.
        p95_ms: Its 95th percentile.
        graph_p50_ms: Median `memories_for` latency with the queries' entities (None off).
        graph_p95_ms: Its 95th percentile (None off).
        graph_hits_mean: Mean number of returned hits the graph ranked (`graph_rank`).
    """

    setting: str
    graph_weight: float
    graph_hops: int
    p50_ms: float
    p95_ms: float
    graph_p50_ms: float | None
    graph_p95_ms: float | None
    graph_hits_mean: float


@dataclass
class GraphSearchReport:
    """Everything one run measured.

    Attributes:
        config: The options of the run.
        rows: One row per setting: off, hops 0, hops 1.
        triples: Triples the graph holds after loading.
        entities_mean: Mean number of query entities per query.
        load_seconds: Wall time of loading the memories (extraction included).
        environment: Python, platform and CPU count.
        seconds: Wall time of the whole run.
    """

    config: GraphSearchBenchConfig
    rows: list[GraphSearchRow]
    triples: int
    entities_mean: float
    load_seconds: float
    environment: dict[str, Any]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary."""
        return {
            "benchmark": "graph-search",
            "config": dataclasses.asdict(self.config),
            "environment": self.environment,
            "triples": self.triples,
            "entities_mean": round(self.entities_mean, 2),
            "load_seconds": round(self.load_seconds, 3),
            "seconds": round(self.seconds, 3),
            "target_p50_ms": LATENCY_TARGET_MS,
            "results": [
                {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}
                for row in (dataclasses.asdict(r) for r in self.rows)
            ],
        }


# --------------------------------------------------------------------------- data


def _circle(rng: np.random.Generator, size: int) -> list[str]:
    """`size` distinct full names, in a seeded order (earlier ones are named more)."""
    names = [f"{f} {last}" for f in _FIRST for last in _LAST]
    picked = rng.choice(len(names), size=size, replace=False)
    return [names[i] for i in picked]


def _zipf(rng: np.random.Generator, items: list[str]) -> str:
    """One of `items`, the first ones much more often (a few hubs, a long tail)."""
    return items[min(int(rng.zipf(1.6)) - 1, len(items) - 1)]


def _fill(template: str, rng: np.random.Generator, world: dict[str, Any]) -> str:
    people: list[str] = world["people"]
    p = _zipf(rng, people)
    q = people[int(rng.integers(len(people)))]
    if q == p:
        q = people[(people.index(p) + 1) % len(people)]
    place = world["home"] if rng.random() < 0.33 else str(rng.choice(_PLACES))
    employer = world["employer"] if rng.random() < 0.33 else str(rng.choice(_EMPLOYERS))
    return template.format(
        p=p,
        q=q,
        c=place,
        e=employer,
        h=str(rng.choice(_HOBBIES)),
        m=str(rng.choice(_MONTHS)),
        s=world["speaker"],
    )


def _worlds(config: GraphSearchBenchConfig) -> list[dict[str, Any]]:
    out = []
    for u in range(config.users):
        rng = np.random.default_rng([config.seed, u])
        out.append(
            {
                "user": f"u{u}",
                "speaker": f"{_SPEAKERS[2 * u % len(_SPEAKERS)]}",
                "people": _circle(rng, 40),
                "home": str(rng.choice(_PLACES)),
                "employer": str(rng.choice(_EMPLOYERS)),
            }
        )
    return out


Memory = tuple[tuple[str, ...], str, dict[str, Any]]
"""(namespace, key, value) of one memory."""


def make_memories(config: GraphSearchBenchConfig) -> list[Memory]:
    """The memories of the run: (namespace, key, value), users interleaved.

    Args:
        config: The run's options.

    Returns:
        `config.memories` items; each value has `content` and `speaker`.
    """
    worlds = _worlds(config)
    rng = np.random.default_rng([config.seed, 1_000_003])
    out: list[Memory] = []
    for i in range(config.memories):
        world = worlds[i % len(worlds)]
        text = _fill(_MEMORY_TEMPLATES[int(rng.integers(len(_MEMORY_TEMPLATES)))], rng, world)
        value = {"content": text, "speaker": world["speaker"]}
        out.append((("users", world["user"], "memories"), f"m{i:07d}", value))
    return out


def make_queries(config: GraphSearchBenchConfig) -> list[tuple[str, str]]:
    """The queries of the run: (user id, question), round-robin over the users."""
    worlds = _worlds(config)
    rng = np.random.default_rng([config.seed, 2_000_003])
    out = []
    for i in range(config.queries):
        world = worlds[i % len(worlds)]
        template = _QUERY_TEMPLATES[int(rng.integers(len(_QUERY_TEMPLATES)))]
        out.append((world["user"], _fill(template, rng, world)))
    return out


# --------------------------------------------------------------------------- run


def _own(prefix: tuple[str, ...]) -> Callable[[tuple[str, ...]], bool]:
    """The namespaces a user-scoped search of `prefix` (a user's) may read: the user's."""
    return lambda ns: ns[: len(prefix)] == prefix


def _settings(config: GraphSearchBenchConfig) -> list[tuple[str, float, int]]:
    return [("off", 0.0, 1), ("hops 0", config.graph_weight, 0), ("hops 1", config.graph_weight, 1)]


def run_graph_search_benchmark(
    config: GraphSearchBenchConfig,
    *,
    progress: Callable[[str], None] | None = None,
) -> GraphSearchReport:
    """Load the memories once and time hybrid searches in each setting.

    Args:
        config: The run's options.
        progress: Called with a short message at each phase.

    Returns:
        The figures of the run.

    Raises:
        StoreBenchmarkError: The config is invalid.
    """
    from langgraph.store.base import PutOp

    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.graph.extract import query_entities

    config.validate()
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    memories = make_memories(config)
    queries = make_queries(config)
    embeddings = SeededEmbeddings(config.dims)
    path = tempfile.mkdtemp(prefix="tiered-memory-bench-graph-")
    try:
        store = TieredMemoryStore(
            chroma_path=path,
            tiers={"default": "long"},
            index={"dims": config.dims, "embed": embeddings, "fields": ["content"]},
            key_prefix="bgs",
            scoring={"retrieval": "hybrid", "graph_weight": 0.0},
            graph=True,
        )
        try:
            store.setup()
            say(f"loading {config.memories:,} memories")
            t0 = time.perf_counter()
            for lo in range(0, len(memories), config.batch_size):
                chunk = memories[lo : lo + config.batch_size]
                embeddings.prefetch(v["content"] for _, _, v in chunk)
                store.batch([PutOp(ns, key, value) for ns, key, value in chunk])
            load_seconds = time.perf_counter() - t0
            embeddings.prefetch(q for _, q in queries)
            graph = store.graph
            assert graph is not None  # graph=True
            triples = len(graph.triples(("users",), limit=10_000_000))
            settings = _settings(config)
            search_s: list[list[float]] = [[] for _ in settings]
            graph_s: list[list[float]] = [[] for _ in settings]
            linked = [0] * len(settings)
            n_entities = 0
            base = store.scoring
            uncounted = {"$count_access": False}
            say(f"searching: {config.queries} queries x {len(settings)} settings")
            # An untimed round first: the first search of a namespace opens its files.
            for user, _ in queries[: config.users]:
                store.search_memories(("users", user), "warm up", filter=uncounted)
            for user, question in queries:
                prefix = ("users", user)
                entities = query_entities(question)
                n_entities += len(entities)
                for j, (_, weight, hops) in enumerate(settings):
                    store.scoring = dataclasses.replace(base, graph_weight=weight, graph_hops=hops)
                    t0 = time.perf_counter()
                    hits = store.search_memories(
                        prefix, question, limit=config.limit, filter=uncounted, user_id=user
                    )
                    search_s[j].append(time.perf_counter() - t0)
                    linked[j] += sum(h.breakdown.graph_rank is not None for h in hits)
                    if weight > 0 and entities:
                        t0 = time.perf_counter()
                        graph.memories_for(
                            prefix, entities, hops=hops, namespace_filter=_own(prefix)
                        )
                        graph_s[j].append(time.perf_counter() - t0)
            store.scoring = base
        finally:
            store.close()
    finally:
        shutil.rmtree(path, ignore_errors=True)
    rows = []
    for j, (name, weight, hops) in enumerate(settings):
        p50, p95 = percentiles_ms(search_s[j])
        g50, g95 = percentiles_ms(graph_s[j]) if graph_s[j] else (None, None)
        rows.append(
            GraphSearchRow(name, weight, hops, p50, p95, g50, g95, linked[j] / len(queries))
        )
    return GraphSearchReport(
        config=config,
        rows=rows,
        triples=triples,
        entities_mean=n_entities / len(queries),
        load_seconds=load_seconds,
        environment=run_environment("bgs"),
        seconds=time.perf_counter() - started,
    )
