"""`RedisSessionSaver`: the sync session checkpointer (see `checkpoint.saver` for what it fixes)."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from contextlib import closing
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.redis import RedisSaver

from langgraph_tiered_memory._drive import drive
from langgraph_tiered_memory.checkpoint._base import PAGE_SIZE, ListScope, SaverPlans
from langgraph_tiered_memory.checkpoint._outage import translate_outages
from langgraph_tiered_memory.checkpoint._session import _SyncSessionLayer
from langgraph_tiered_memory.checkpoint.erase import SessionErase

__all__ = ["RedisSessionSaver"]


@translate_outages
class RedisSessionSaver(SessionErase, _SyncSessionLayer, SaverPlans, RedisSaver):
    """Sync Redis checkpointer with the same semantics as `AsyncRedisSessionSaver`.

    Drop-in replacement for `langgraph.checkpoint.redis.RedisSaver`; call `setup()`
    once before use.

    Example:
        ```python
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph_tiered_memory import RedisSessionSaver
        from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda state: {"messages": [("ai", "noted")]})
        builder.add_edge(START, "reply")

        with (
            redis_url_or_embedded() as url,  # $REDIS_URL, or a private server
            RedisSessionSaver.from_conn_string(url) as saver,  # calls setup()
        ):
            graph = builder.compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "chat-2", "user_id": "u1"}}
            graph.invoke({"messages": [("user", "hello")]}, config)
            assert saver.get_session("chat-2").user_id == "u1"
        ```
    """

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first.

        Args:
            config: Restricts the listing to ``thread_id``; to one namespace if
                ``checkpoint_ns`` is present (``""`` is the root namespace; absent means
                every namespace); to one checkpoint if ``checkpoint_id`` is present.
                ``None`` lists every thread.
            filter: Metadata that must match exactly; any metadata key may be used.
            before: Only checkpoints whose id is older than this config's ``checkpoint_id``.
            limit: Maximum number of checkpoints returned, counted after filtering.

        Yields:
            The matching checkpoint tuples, newest checkpoint id first.
        """
        if limit is not None and limit <= 0:
            return
        scope = ListScope(config, filter, before, limit)
        upstream = super().list(scope.upstream_config)
        with closing(cast("Generator[CheckpointTuple, None, None]", upstream)) as tuples:
            for tup in tuples:
                if scope.admit(tup):
                    yield tup
                    if scope.exhausted:
                        return

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
        max_results: int = PAGE_SIZE,
    ) -> None:
        """Delete old checkpoints of the given threads, namespace by namespace.

        Each namespace (the root ``""`` and every subgraph namespace) keeps its newest
        checkpoints; the others are deleted with their pending writes. Beware that this
        cuts the parent chain that ``DeltaChannel`` state is rebuilt from.

        Args:
            thread_ids: Threads to prune; an empty sequence does nothing.
            strategy: ``"keep_latest"`` keeps the newest checkpoint of each namespace;
                ``"delete"`` deletes every checkpoint.
            keep_last: If given, the number of newest checkpoints kept per namespace;
                overrides ``strategy``.
            max_results: Page size of the searches that enumerate a thread.

        Raises:
            ValueError: On an unknown strategy, a negative ``keep_last`` or a
                ``max_results`` below 1.
        """
        drive(self._prune_plan(thread_ids, strategy, keep_last, max_results), self._call)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint created by the given runs, with its pending writes.

        Checkpoints are matched on the run id recorded when they were stored (the
        ``run_id`` of the config or else of the metadata), in every thread and namespace.
        A thread whose latest checkpoint is deleted falls back to its newest remaining one.

        Args:
            run_ids: The runs to delete; unknown ids and an empty sequence do nothing.
        """
        drive(self._delete_for_runs_plan(run_ids), self._call)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, namespace and pending write of a thread to another thread.

        Checkpoint ids, metadata, parents and writes are kept as they are, so the target
        thread has the same history as the source. Existing checkpoints of the target
        thread are kept; its latest checkpoint becomes the newest of both.

        Args:
            source_thread_id: The thread to copy; if it has no checkpoints nothing happens.
            target_thread_id: The thread to copy to.

        The session registry entry (owner, participants, message count, status and
        summary) is copied too (`SessionRegistry.copy_session`): the copy is a session
        of the same owner, created now.
        """
        self._recorder.flush()
        drive(self._copy_thread_plan(source_thread_id, target_thread_id), self._call)
        self.sessions.copy_session(str(source_thread_id), str(target_thread_id))
