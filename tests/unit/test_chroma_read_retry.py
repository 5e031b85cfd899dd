"""Long-tier Chroma reads retry the server's transient "Error finding id", nothing else."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from chromadb.errors import InternalError

from langgraph_tiered_memory.store.tiers.chroma_layout import READ_ATTEMPTS, NamespaceView

NSID = "0" * 32


class FlakyBucket:
    """A bucket collection whose `get` fails with the given errors, then answers."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        self.calls = 0

    def get(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"ids": [f"{NSID}:p:a"], "metadatas": [{"_ns": NSID}], "embeddings": [[0.0]]}


def test_a_bucket_read_failed_once_with_error_finding_id_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bucket = FlakyBucket([InternalError("Error finding id")])
    view = NamespaceView(bucket, NSID, 0)
    with caplog.at_level(logging.WARNING, "langgraph_tiered_memory.store.tiers.chroma_layout"):
        got = view.get(include=["embeddings", "metadatas"])
    assert got["ids"] == ["p:a"]
    assert bucket.calls == 2
    assert any("Retrying" in r.getMessage() for r in caplog.records)


def test_another_internal_error_is_not_retried() -> None:
    bucket = FlakyBucket([InternalError("Error executing plan: disk full")])
    view = NamespaceView(bucket, NSID, 0)
    with pytest.raises(InternalError, match="disk full"):
        view.get(include=["metadatas"])
    assert bucket.calls == 1


def test_the_retry_is_bounded() -> None:
    bucket = FlakyBucket([InternalError("Error finding id")] * (READ_ATTEMPTS + 1))
    view = NamespaceView(bucket, NSID, 0)
    with pytest.raises(InternalError, match="Error finding id"):
        view.count()
    assert bucket.calls == READ_ATTEMPTS
