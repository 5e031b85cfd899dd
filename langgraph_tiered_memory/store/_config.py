"""Checks and defaults of the store's constructor options (pure, no I/O).

Every option a store takes is validated here before anything connects, so a bad
option fails with a `ConfigurationError` naming it. The scoring options are checked
by `ranking.Scoring.from_config` and the routing policy by `routing.TierRouter`.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypedDict, cast

from langgraph.store.base import IndexConfig, TTLConfig, tokenize_path

from langgraph_tiered_memory.config import DEFAULT_CHROMA_HNSW, ChromaHnswConfig
from langgraph_tiered_memory.embeddings import resolve_embeddings
from langgraph_tiered_memory.errors import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.privacy._redact import mask_url
from langgraph_tiered_memory.store._validate import validate_ttl

DEFAULT_CHROMA_PATH = os.path.join(".tiered-memory", "chroma")
"""Where the embedded Chroma database lives when neither `chroma_client` nor
`chroma_path` is given (relative to the working directory); the environment variable
`TIERED_MEMORY_CHROMA_PATH` overrides it."""

DEFAULT_KEY_PREFIX = "tm"
"""Default prefix of every Redis key and Chroma collection the store creates."""

_KEY_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{1,47}$")
_TTL_KEYS = frozenset({"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"})

IndexFields = list[tuple[str, Any]]
"""Field paths to embed, each with its tokenized form (`"$"` for the whole value)."""


def check_key_prefix(key_prefix: str) -> str:
    """Validate `key_prefix` (used in Redis keys and Chroma collection names)."""
    if not isinstance(key_prefix, str) or not _KEY_PREFIX.match(key_prefix):
        raise ConfigurationError(
            f"key_prefix {key_prefix!r} is invalid: use 2-48 letters, digits or underscores,"
            " starting with a letter or digit (it becomes part of Redis keys and Chroma"
            " collection names)."
        )
    return key_prefix


def check_ttl_config(ttl: TTLConfig | None) -> TTLConfig | None:
    """Validate a `TTLConfig` dict and return a copy of it."""
    if ttl is None:
        return None
    if not isinstance(ttl, dict):
        raise ConfigurationError(f"ttl must be a TTLConfig dict, got {ttl!r}.")
    unknown = set(ttl) - _TTL_KEYS
    if unknown:
        raise ConfigurationError(
            f"Unknown TTLConfig keys {sorted(unknown)}; use refresh_on_read, default_ttl,"
            " sweep_interval_minutes."
        )
    try:
        validate_ttl(ttl.get("default_ttl"))
    except InvalidItemError as e:
        raise ConfigurationError(f"ttl['default_ttl'] is invalid: {e}") from e
    interval = ttl.get("sweep_interval_minutes")
    if interval is not None and (
        isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0
    ):
        raise ConfigurationError(
            f"ttl['sweep_interval_minutes'] must be a positive number or None, got {interval!r}."
        )
    return cast(TTLConfig, dict(ttl))


def check_index(index: IndexConfig | None) -> tuple[IndexConfig | None, Any, IndexFields]:
    """Validate an `IndexConfig`: the checked copy, its embeddings and its field paths."""
    if index is None:
        return None, None, []
    if not isinstance(index, dict):
        raise ConfigurationError(f"index must be an IndexConfig dict, got {index!r}.")
    dims = index.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
        raise ConfigurationError(
            f"index['dims'] must be a positive int (the embedding size), got {dims!r}."
        )
    cfg = cast(IndexConfig, dict(index))
    embeddings = resolve_embeddings(cfg.get("embed"))
    fields = cfg.get("fields") or ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise ConfigurationError(
            f"index['fields'] must be a list of field paths such as ['content'], got {fields!r}."
        )
    tokenized = [(p, p if p == "$" else tokenize_path(p)) for p in fields]
    return cfg, embeddings, tokenized


def check_clock(clock: Callable[[], float] | None) -> Callable[[], float]:
    """The store's clock: `time.time`, or `clock` returning a plain finite float.

    numpy or Decimal times would be stored as JSON, so they are converted on each call.
    """
    if clock is None:
        return time.time
    if not callable(clock):
        raise ConfigurationError(
            f"clock must be a function returning epoch seconds, got {clock!r}."
        )

    def now() -> float:
        value = clock()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)
            except (TypeError, ValueError) as e:
                raise ConfigurationError(
                    f"clock() must return epoch seconds as a number, got {value!r}."
                ) from e
        value = float(value)
        if not math.isfinite(value):
            raise ConfigurationError(f"clock() must return a finite number, got {value!r}.")
        return value

    return now


def check_hnsw(hnsw: ChromaHnswConfig | None) -> dict[str, int]:
    """Validate `chroma_hnsw` and fill in the defaults."""
    if hnsw is None:
        return dict(DEFAULT_CHROMA_HNSW)  # type: ignore[arg-type]
    if not isinstance(hnsw, dict):
        raise ConfigurationError(f"chroma_hnsw must be a dict, got {hnsw!r}.")
    unknown = set(hnsw) - set(DEFAULT_CHROMA_HNSW)
    if unknown:
        raise ConfigurationError(
            f"Unknown chroma_hnsw keys {sorted(unknown)}; use {sorted(DEFAULT_CHROMA_HNSW)}."
        )
    out = {**DEFAULT_CHROMA_HNSW, **hnsw}
    for key, value in out.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise ConfigurationError(f"chroma_hnsw[{key!r}] must be an int >= 2, got {value!r}.")
    return out  # type: ignore[return-value]


GRAPH_EXTRA_HINT = "pip install 'langgraph-tiered-memory[graph]'"
"""How to install the FalkorDB client (the `graph` extra)."""

_GRAPH_KEYS = frozenset({"backend", "url", "graph_name", "extractor"})


class GraphConfig(TypedDict, total=False):
    """The `graph=` option of the stores as a dict: which backend keeps the triples.

    Every key is optional; `{}` is the default graph (as `graph=True`) with the rule
    extractor.
    """

    backend: Literal["sqlite", "falkordb"] | GraphStore
    """Without it, the default graph: the embedded SQLite graph beside an embedded
    Chroma; with a Chroma server, FalkorDB on the store's own Redis (graph
    `<key_prefix>_graph`), which every process of the deployment shares. `"sqlite"`:
    tables in the long tier's SQLite file, written in each memory's own transaction.
    `"falkordb"`: a FalkorDB server (extra `graph`). Or a `GraphStore` instance (the
    caller owns and closes it)."""
    url: str
    """FalkorDB only: its URL, `redis://[[user]:password@]host:port` (required)."""
    graph_name: str
    """FalkorDB only: the graph's name (default `<key_prefix>_graph`)."""
    extractor: Any
    """`"rules"` (default, no model), a chat model or `init_chat_model` string (model
    extraction), or any object with `extract(texts, *, speakers=None)`."""


class GraphSpec(NamedTuple):
    """A checked `graph=` option (no backend connected yet)."""

    backend: str | GraphStore
    """`"default"` (`graph=True`: chosen by the Chroma client, see `build_graph`),
    `"sqlite"`, `"falkordb"` or a caller's `GraphStore`."""
    url: str | None
    graph_name: str | None
    """The FalkorDB graph (`"default"` and `"falkordb"`)."""
    extractor: Any
    """What `graph.extract.resolve_extractor` takes (None: the rule extractor)."""

    def __repr__(self) -> str:
        url = None if self.url is None else mask_url(self.url)
        return (
            f"GraphSpec(backend={self.backend!r}, url={url!r}, graph_name={self.graph_name!r},"
            f" extractor={self.extractor!r})"
        )


def default_graph_name(key_prefix: str) -> str:
    """The FalkorDB graph of a store with `key_prefix` unless `graph_name` says otherwise."""
    return f"{key_prefix}_graph"


def _describe_graph_option(graph: Any) -> str:
    """`graph` for an error message, its URL masked."""
    if isinstance(graph, dict) and isinstance(graph.get("url"), str):
        graph = {**graph, "url": mask_url(graph["url"])}
    return repr(graph)


def check_graph(
    graph: Any, *, memory_mode: bool, has_long_tier: bool, key_prefix: str
) -> GraphSpec | None:
    """Validate the `graph=` option: None when the store keeps no graph.

    Accepted: None or False (off), True (the default graph), `"sqlite"` (embedded),
    a `GraphStore` instance, or a `GraphConfig` dict.

    Raises:
        ConfigurationError: anything else, or a graph on a store without memory
            scoring or without a long-term tier.
    """
    if graph is None or graph is False:
        return None
    if graph is True:
        spec = GraphSpec("default", None, default_graph_name(key_prefix), None)
    elif graph == "sqlite":
        spec = GraphSpec("sqlite", None, None, None)
    elif isinstance(graph, dict):
        spec = _check_graph_config(graph, key_prefix)
    elif not isinstance(graph, (str, type)) and isinstance(graph, GraphStore):
        spec = GraphSpec(graph, None, None, None)
    else:
        raise ConfigurationError(
            "graph must be None, True, 'sqlite', a GraphStore or a GraphConfig dict such as"
            " {'backend': 'falkordb', 'url': 'redis://localhost:6379'}, got"
            f" {_describe_graph_option(graph)}."
        )
    if not memory_mode:
        raise ConfigurationError(
            "graph= needs scoring={'mode': 'memory'} (the default): triples are extracted"
            " from long-term memories. This store was created with scoring mode 'similarity'."
        )
    if not has_long_tier:
        raise ConfigurationError(
            "graph= needs the long-term tier: triples are extracted from long-term memories,"
            " and the tiers= policy routes no namespace to 'long'."
        )
    return spec


def _check_graph_config(graph: dict[str, Any], key_prefix: str) -> GraphSpec:
    shown = _describe_graph_option(graph)
    unknown = set(graph) - _GRAPH_KEYS
    if unknown:
        raise ConfigurationError(
            f"Unknown graph keys {sorted(unknown)} in {shown}; use {sorted(_GRAPH_KEYS)}."
        )
    backend = graph.get("backend")
    url = graph.get("url")
    name = graph.get("graph_name")
    if backend == "falkordb":
        if not isinstance(url, str) or not url.strip():
            raise ConfigurationError(
                f"graph backend 'falkordb' needs 'url' (such as 'redis://localhost:6379'),"
                f" got {shown}."
            )
        if name is None:
            name = default_graph_name(key_prefix)
        elif not isinstance(name, str) or not name.strip():
            raise ConfigurationError(
                f"graph['graph_name'] must be a non-empty string, got {name!r}."
            )
        return GraphSpec("falkordb", url, name, graph.get("extractor"))
    for option in ("url", "graph_name"):
        if graph.get(option) is not None:
            raise ConfigurationError(
                f"graph[{option!r}] is a FalkorDB option; set 'backend': 'falkordb' to use it."
            )
    if "backend" not in graph:  # the default graph, as graph=True
        return GraphSpec("default", None, default_graph_name(key_prefix), graph.get("extractor"))
    if backend != "sqlite" and (
        isinstance(backend, (str, type)) or not isinstance(backend, GraphStore)
    ):
        raise ConfigurationError(
            f"graph['backend'] must be 'sqlite', 'falkordb' or a GraphStore, got {backend!r}."
        )
    return GraphSpec(backend, None, None, graph.get("extractor"))
