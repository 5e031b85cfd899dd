"""The `graph=` option and the graph methods' arguments: checks and clear errors."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.graph import (
    agraph_neighbors,
    agraph_triples,
    arebuild_graph,
    graph_neighbors,
    graph_triples,
    rebuild_graph,
)
from langgraph_tiered_memory.graph.extract import RuleExtractor
from langgraph_tiered_memory.graph.sqlite import SqliteGraph
from langgraph_tiered_memory.store._config import check_graph
from tests.conftest import DIMS
from tests.fakes import HashingEmbeddings

U1 = ("users", "u1", "memories")


def _memory(make_store: Callable[..., TieredMemoryStore], **kwargs: Any) -> TieredMemoryStore:
    kwargs.setdefault("scoring", None)
    kwargs.setdefault("index", {"dims": DIMS, "embed": HashingEmbeddings(DIMS)})
    return make_store(**kwargs)


def test_graph_true_is_the_embedded_sqlite_graph_with_rules(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = _memory(make_store, graph=True)
    assert isinstance(store.graph, SqliteGraph)
    assert isinstance(store.graph_extractor, RuleExtractor)
    assert _memory(make_store, graph="sqlite").graph is not None
    plain = _memory(make_store)
    assert plain.graph is None and plain.graph_extractor is None


def test_graph_needs_memory_scoring_and_the_long_tier(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    with pytest.raises(ConfigurationError, match=r"graph= needs scoring=\{'mode': 'memory'\}"):
        make_store(scoring={"mode": "similarity"}, graph=True)
    with pytest.raises(ConfigurationError, match="graph= needs the long-term tier"):
        make_store(scoring=None, tiers={"default": "short"}, graph=True)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("neo4j", "graph must be None, True, 'sqlite', a GraphStore or a GraphConfig"),
        (1, "graph must be None, True"),
        ({"backend": "neo4j"}, "graph\\['backend'\\] must be 'sqlite', 'falkordb'"),
        ({"backend": "falkordb"}, "graph backend 'falkordb' needs 'url'"),
        ({"url": "redis://h:1"}, "graph\\['url'\\] is a FalkorDB option"),
        ({"backend": "falkordb", "url": "redis://h:1", "graph_name": ""}, "graph_name"),
        ({"backend": "sqlite", "hops": 2}, "Unknown graph keys \\['hops'\\]"),
        ({"extractor": 42}, "extractor"),
    ],
)
def test_bad_graph_options_are_refused(option: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        spec = check_graph(option, memory_mode=True, has_long_tier=True, key_prefix="tm")
        # The extractor is resolved when the store is built.
        from langgraph_tiered_memory.graph.extract import resolve_extractor

        resolve_extractor(spec.extractor if spec else None)


def test_graph_errors_and_repr_mask_the_password() -> None:
    option = {"backend": "falkordb", "url": "redis://:hunter2@db:6379", "colour": "red"}
    with pytest.raises(ConfigurationError) as err:
        check_graph(option, memory_mode=True, has_long_tier=True, key_prefix="tm")
    assert "hunter2" not in str(err.value) and "***" in str(err.value)
    option.pop("colour")
    spec = check_graph(option, memory_mode=True, has_long_tier=True, key_prefix="tm")
    assert spec is not None and spec.graph_name == "tm_graph"
    assert "hunter2" not in repr(spec)


def test_falkordb_without_the_extra_names_the_install_command(
    make_store: Callable[..., TieredMemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "falkordb", None)  # import falkordb -> ImportError
    with pytest.raises(ConfigurationError, match=r"pip install 'langgraph-tiered-memory\[graph\]'"):
        _memory(make_store, graph={"backend": "falkordb", "url": "redis://127.0.0.1:1"})


def test_graph_methods_without_a_graph_name_the_option(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = _memory(make_store)
    for call in (
        lambda: graph_triples(store, U1),
        lambda: graph_neighbors(store, U1, "anna"),
        lambda: rebuild_graph(store),
    ):
        with pytest.raises(ConfigurationError, match="graph="):
            call()


async def test_async_graph_methods_without_a_graph_name_the_option(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = _memory(make_store)
    with pytest.raises(ConfigurationError, match="graph="):
        await agraph_triples(store, U1)
    with pytest.raises(ConfigurationError, match="graph="):
        await agraph_neighbors(store, U1, "anna")
    with pytest.raises(ConfigurationError, match="graph="):
        await arebuild_graph(store)


def test_graph_method_arguments_are_checked(
    make_store: Callable[..., TieredMemoryStore],
) -> None:
    store = _memory(make_store, graph=True)
    with pytest.raises(ValueError, match="hops must be 1 or 2"):
        graph_neighbors(store, U1, "anna", hops=3)
    with pytest.raises(ValueError, match="hops must be 1 or 2"):
        graph_neighbors(store, U1, "anna", hops=True)
    with pytest.raises(ValueError, match="limit must be a positive int"):
        graph_neighbors(store, U1, "anna", limit=0)
    with pytest.raises(ValueError, match="limit must be a positive int"):
        graph_triples(store, U1, limit=-1)
    with pytest.raises(ValueError, match="namespace prefix tuple"):
        graph_triples(store, "users/u1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels must be strings"):
        graph_triples(store, ("users", 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entity"):
        graph_neighbors(store, U1, "  ")
    with pytest.raises(ValueError, match="relation must be a string"):
        graph_triples(store, U1, relation=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace_prefix"):
        rebuild_graph(store, "users")  # type: ignore[arg-type]
    assert graph_triples(store, U1) == []
    assert graph_neighbors(store, U1, "anna", hops=2) == []
