"""The async session saver queues for a free Redis connection instead of failing.

redis-py's asyncio pool raises `MaxConnectionsError` at once when every connection is
busy; many concurrent graph runs on one saver must wait their turn instead.
"""

from __future__ import annotations

import asyncio

from langgraph.checkpoint.base import empty_checkpoint

from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver


async def test_concurrent_writes_wait_for_a_connection(redis_url: str, key_prefix: str) -> None:
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url,
        session_prefix=key_prefix,
        checkpoint_prefix=f"{key_prefix}:cp",
        checkpoint_write_prefix=f"{key_prefix}:cw",
        connection_args={"max_connections": 2},
    ) as saver:

        async def turn(i: int) -> None:
            config = {"configurable": {"thread_id": f"t{i}", "checkpoint_ns": "", "user_id": "u"}}
            await saver.aput(config, empty_checkpoint(), {"source": "input", "step": 0}, {})
            assert await saver.aget_tuple(config) is not None

        await asyncio.gather(*(turn(i) for i in range(40)))
        await saver.aflush_sessions()
        assert saver._tm_client.connection_pool.max_connections == 2


async def test_a_new_connection_inside_the_event_loop_does_not_block(
    redis_url: str, key_prefix: str
) -> None:
    from blockbuster import blockbuster_ctx

    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, session_prefix=key_prefix
    ) as saver:
        pool = saver._tm_client.connection_pool
        with blockbuster_ctx():  # as under `langgraph dev`
            held = [await pool.get_connection() for _ in range(3)]  # at least 2 are new
            for connection in held:
                await pool.release(connection)
            assert await saver._tm_client.ping()
