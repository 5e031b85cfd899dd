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
from typing import Any, cast

from langgraph.store.base import IndexConfig, TTLConfig, tokenize_path

from langgraph_tiered_memory.config import DEFAULT_CHROMA_HNSW, ChromaHnswConfig
from langgraph_tiered_memory.embeddings import resolve_embeddings
from langgraph_tiered_memory.errors import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.redaction import Redactor, resolve_redactor
from langgraph_tiered_memory.store._common import validate_ttl

__all__ = [
    "DEFAULT_CHROMA_PATH",
    "DEFAULT_KEY_PREFIX",
    "IndexFields",
    "check_clock",
    "check_hnsw",
    "check_index",
    "check_key_prefix",
    "check_redactor",
    "check_ttl_config",
]

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


def check_redactor(redactor: Any) -> Redactor | None:
    """The store's redactor: None (default, nothing redacted), True/"default", or a `Redactor`.

    Raises:
        ConfigurationError: anything else (names the accepted values).
    """
    return resolve_redactor(redactor)
