"""The graphs Studio serves, in process on a real store: a first click is safe."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from langgraph_tiered_memory import studio_graphs
from langgraph_tiered_memory.store.aio import AsyncTieredMemoryStore

YEAR = 365 * 86_400.0
CHAT = {"messages": [{"role": "user", "content": "Hello there."}]}


def test_forgetting_on_the_chat_input_reports_and_deletes_nothing(
    redis_url: str, tmp_path: Path
) -> None:
    namespace = ("memories", f"click-{uuid.uuid4().hex[:8]}")

    async def run() -> None:
        async with AsyncTieredMemoryStore.from_conn_string(
            redis_url,
            chroma_path=str(tmp_path / "chroma"),
            key_prefix=f"sg{uuid.uuid4().hex[:8]}",
            clock=lambda: time.time() - YEAR,  # written a year ago, never read since
        ) as store:
            await store.aput(namespace, "typo", {"content": "said 'teh'", "importance": 0.05})
            graph = studio_graphs.forgetting.copy(update={"store": store})
            report = (await graph.ainvoke(CHAT))["report"]
            assert report["dry_run"] is True
            assert [row["id"] for row in report["details"]] == ["typo"]  # a real run's victim
            assert await store.aget(namespace, "typo") is not None

    asyncio.run(run())


def test_the_forgetting_input_form_shows_each_graphs_dry_run_default() -> None:
    from langgraph_tiered_memory import create_forgetting_graph

    studio = studio_graphs.forgetting.get_input_jsonschema()["properties"]
    assert studio["dry_run"] == {"default": True, "title": "Dry Run", "type": "boolean"}
    assert set(studio) == {"namespace", "dry_run", "themes"}
    plain = create_forgetting_graph().compile().get_input_jsonschema()["properties"]
    assert plain["dry_run"]["default"] is False
