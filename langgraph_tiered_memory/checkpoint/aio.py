"""`AsyncRedisSessionSaver`: the asyncio session checkpointer (see `checkpoint.saver`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.redis.aio import AsyncRedisSaver

from langgraph_tiered_memory._drive import adrive
from langgraph_tiered_memory.checkpoint._base import PAGE_SIZE, ListScope, SaverPlans
from langgraph_tiered_memory.checkpoint._outage import translate_outages
from langgraph_tiered_memory.checkpoint._session import _AsyncSessionLayer
from langgraph_tiered_memory.checkpoint.erase import AsyncSessionErase

__all__ = ["AsyncRedisSessionSaver"]


@translate_outages
class AsyncRedisSessionSaver(AsyncSessionErase, _AsyncSessionLayer, SaverPlans, AsyncRedisSaver):
    """Async Redis checkpointer that passes the full LangGraph checkpointer conformance suite.

    Drop-in replacement for `langgraph.checkpoint.redis.aio.AsyncRedisSaver`; see the
    `langgraph_tiered_memory.checkpoint.saver` docstring for what differs. Each method
    behaves as its twin on `RedisSessionSaver`.

    Example:
        ```python
        import asyncio

        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph_tiered_memory import AsyncRedisSessionSaver
        from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
        builder.add_edge(START, "reply")


        async def main(redis_url: str) -> None:
            async with AsyncRedisSessionSaver.from_conn_string(redis_url) as saver:
                graph = builder.compile(checkpointer=saver)
                config = {"configurable": {"thread_id": "chat-1", "user_id": "u1"}}
                await graph.ainvoke({"messages": [("user", "hello")]}, config)
                session = await saver.aget_session("chat-1")
                assert session is not None and session.user_id == "u1"


        with redis_url_or_embedded() as url:  # $REDIS_URL, or a private server
            asyncio.run(main(url))
        ```
    """

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """List checkpoints, newest first (as `RedisSessionSaver.list`)."""
        if limit is not None and limit <= 0:
            return
        scope = ListScope(config, filter, before, limit)
        upstream = super().alist(scope.upstream_config)
        async with aclosing(cast("AsyncGenerator[CheckpointTuple, None]", upstream)) as tuples:
            async for tup in tuples:
                if scope.admit(tup):
                    yield tup
                    if scope.exhausted:
                        return

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
        max_results: int = PAGE_SIZE,
    ) -> None:
        """Delete old checkpoints of the given threads (as `RedisSessionSaver.prune`)."""
        await adrive(self._prune_plan(thread_ids, strategy, keep_last, max_results), self._call)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints of the given runs (as `RedisSessionSaver.delete_for_runs`)."""
        await adrive(self._delete_for_runs_plan(run_ids), self._call)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread to another thread (as `RedisSessionSaver.copy_thread`)."""
        await self._recorder.flush()
        await adrive(self._copy_thread_plan(source_thread_id, target_thread_id), self._call)
        await self.sessions.copy_session(str(source_thread_id), str(target_thread_id))
