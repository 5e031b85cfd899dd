"""`tiered-memory erase` on a store written with embeddings whose namespace only holds
expired items: the command finds the store's embedding size and erases (it used to stop
with "stored with embeddings of 64 dimensions, but this store is configured with 0").
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from typer.testing import CliRunner

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.cli.app import app
from tests.fakes import Clock, HashingEmbeddings


def test_erase_reaches_a_user_whose_items_all_expired(tmp_path: Path) -> None:
    path = str(tmp_path / "chroma")
    index = {"dims": 64, "embed": HashingEmbeddings(64), "fields": ["content"]}
    written_earlier = Clock(time.time() - 7200)
    with TieredMemoryStore(
        chroma_path=path, tiers={"default": "long"}, index=index, clock=written_earlier
    ) as store:
        store.put(("users", "cli-exp", "notes"), "n1", {"content": "gone soon"}, ttl=1)
        store.put(("users", "cli-keep"), "k1", {"content": "stays"})

    result = CliRunner().invoke(
        app, ["erase", "--user", "cli-exp", "--json", "--chroma-path", path]
    )

    assert result.exit_code == 0, result.output
    receipt = json.loads(result.output.strip().splitlines()[-1])
    assert receipt["counts"]["long.items"] == 1
    with TieredMemoryStore(chroma_path=path, tiers={"default": "long"}, index=index) as store:
        assert store.get(("users", "cli-keep"), "k1") is not None
        assert all("cli-exp" not in ns for ns in store.list_namespaces())
