"""Load benchmark: concurrent sessions of the memory agent over real Redis and Chroma.

`sessions` sessions of `turns` turns each run at once against one memory agent
(`create_memory_agent` with a scripted fake chat model), compiled with the session
checkpointer on Redis and the tiered store (memory mode, long tier on a local Chroma
directory). Turns of one session run one after another; sessions run concurrently,
either as asyncio tasks with `AsyncTieredMemoryStore` and `AsyncRedisSessionSaver`
(``mode="async"``) or on a thread pool with `TieredMemoryStore` and `RedisSessionSaver`
(``mode="threads"``). Sessions are spread over `users` users round robin (see
`_load_script`), so several sessions of one user write to the same memories at once.

Reported: throughput (completed turns per second of the concurrent phase), p50/p95
latency of one turn (the whole graph run, streamed with `stream`/`astream`; it ends
once the turn's deferred memory writes are done), p50/p95 latency of the reply (until
the `agent` node's update arrives), peak resident memory of this process (sampled with
psutil), turns that raised, and lost updates: after the concurrent run the same
scripts are replayed one turn at a time into a fresh store and compared user by user
(`_load_compare` says precisely what is compared). Embeddings are the deterministic
offline `TopicEmbeddings` of the forgetting benchmark; nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from langgraph.store.base import PutOp

from langgraph_tiered_memory.privacy._redact import mask_url
from tiered_memory_benchmarks._load_compare import LostUpdates, compare_states
from tiered_memory_benchmarks._load_run import (
    PhaseResult,
    RssSampler,
    drop_keys,
    flush_writes,
    memory_namespace,
    rss_reader,
    run_async_sessions,
    run_thread_sessions,
    snapshot,
)
from tiered_memory_benchmarks._load_script import (
    ScriptedChatModel,
    SessionScript,
    build_sessions,
    seed_memories,
)
from tiered_memory_benchmarks.forgetting import TopicEmbeddings

__all__ = [
    "LOAD_MODES",
    "LoadBenchConfig",
    "LoadBenchReport",
    "LoadBenchmarkError",
    "PhaseResult",
    "run_load_benchmark",
]

LOAD_MODES: tuple[str, ...] = ("async", "threads")
"""`async`: asyncio tasks with the async store and saver; `threads`: a thread pool with
the sync ones."""


GraphFactory = Callable[[Any, "LoadBenchConfig"], Any]
"""Builds the uncompiled graph from the chat model and the config."""

StoreFactory = Callable[[str, bool, dict[str, Any]], Any]
"""Builds a store from the phase (``"run"`` or ``"replay"``), whether it must be the async
store, and the constructor options."""


class LoadBenchmarkError(ValueError):
    """An option of the load benchmark is out of range."""


@dataclass
class LoadBenchConfig:
    """What the load benchmark runs.

    Attributes:
        sessions: Concurrent sessions (threads of the checkpointer).
        turns: Turns per session.
        users: Users the sessions belong to (session i to user i mod users); None:
            one user per 5 sessions, rounded up.
        mode: `async` or `threads` (see `LOAD_MODES`).
        workers: Threads of the thread pool in `threads` mode; None: one per session.
        model_delay_ms: Latency of the fake chat model per call.
        memory_limit: Memories the agent retrieves per turn.
        seed_memories: Memories each user has before the run; None: four times
            `memory_limit`, at least 20. Must exceed the hits of any search of a turn.
        dims: Size of the fake embeddings.
        replay: Replay the scripts serially afterwards and count lost updates.
        redis_url: Redis with RediSearch and RedisJSON; None: `REDIS_URL` or an
            embedded server.
        chroma_path: Parent of the run's Chroma directories (None: the system's
            temporary directory); they are removed at the end.
    """

    sessions: int = 50
    turns: int = 20
    users: int | None = None
    mode: str = "async"
    workers: int | None = None
    model_delay_ms: float = 0.0
    memory_limit: int = 5
    seed_memories: int | None = None
    dims: int = 256
    replay: bool = True
    redis_url: str | None = None
    chroma_path: str | None = None

    @property
    def user_count(self) -> int:
        """The number of users, with the default filled in."""
        return self.users if self.users is not None else max(1, math.ceil(self.sessions / 5))

    @property
    def seed_count(self) -> int:
        """Seed memories per user, with the default filled in."""
        if self.seed_memories is not None:
            return self.seed_memories
        return max(20, 4 * self.memory_limit)

    def validate(self) -> LoadBenchConfig:
        """Check the options.

        Returns:
            This config.

        Raises:
            LoadBenchmarkError: An option is out of range.
        """
        for name in ("sessions", "turns", "memory_limit", "dims"):
            if getattr(self, name) < 1:
                raise LoadBenchmarkError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.users is not None and not 1 <= self.users <= self.sessions:
            raise LoadBenchmarkError(
                f"users must be from 1 to sessions ({self.sessions}), got {self.users}."
            )
        if self.mode not in LOAD_MODES:
            raise LoadBenchmarkError(
                f"mode must be one of {', '.join(LOAD_MODES)}, got {self.mode!r}."
            )
        if self.workers is not None and self.workers < 1:
            raise LoadBenchmarkError(f"workers must be >= 1, got {self.workers}.")
        if self.model_delay_ms < 0:
            raise LoadBenchmarkError(f"model_delay_ms must be >= 0, got {self.model_delay_ms}.")
        if self.seed_count <= self.memory_limit:
            raise LoadBenchmarkError(
                f"seed_memories ({self.seed_count}) must exceed memory_limit"
                f" ({self.memory_limit}), or lost accesses cannot be counted."
            )
        return self


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


@dataclass
class LoadBenchReport:
    """Figures of one load benchmark run."""

    config: LoadBenchConfig
    run: PhaseResult
    replay: PhaseResult | None
    lost: LostUpdates | None
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Whether a turn raised or an update was lost."""
        return self.run.errors > 0 or (self.lost is not None and self.lost.total > 0)

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-serialisable data."""
        cfg = self.config
        run = self.run
        done = len(run.turn_ms)
        memories = sum(s.memories for s in run.state.values())
        out: dict[str, Any] = {
            "benchmark": "load",
            "sessions": cfg.sessions,
            "turns": cfg.turns,
            "users": cfg.user_count,
            "mode": cfg.mode,
            "turns_completed": done,
            "turns_per_s": round(done / run.wall_s, 2) if run.wall_s > 0 else None,
            "p50_turn_ms": _rounded(_percentile(run.turn_ms, 50)),
            "p95_turn_ms": _rounded(_percentile(run.turn_ms, 95)),
            "max_turn_ms": _rounded(max(run.turn_ms) if run.turn_ms else None),
            "p50_reply_ms": _rounded(_percentile(run.reply_ms, 50)),
            "p95_reply_ms": _rounded(_percentile(run.reply_ms, 95)),
            "wall_s": round(run.wall_s, 3),
            "flush_s": round(run.flush_s, 3),
            "peak_rss_mb": _mb(run.peak_rss_bytes),
            "errors": run.errors,
            "error_examples": run.error_examples,
            "memories": memories,
            "lost_updates": self.lost.total if self.lost is not None else None,
            "replay": None,
            "config": {**asdict(cfg), "redis_url": cfg.redis_url and mask_url(cfg.redis_url)},
            "environment": self.environment,
        }
        if self.lost is not None:
            out["lost"] = self.lost.to_dict()
        if self.replay is not None:
            rp = self.replay
            out["replay"] = {
                "errors": rp.errors,
                "error_examples": rp.error_examples,
                "wall_s": round(rp.wall_s, 3),
                "p50_turn_ms": _rounded(_percentile(rp.turn_ms, 50)),
                "memories": sum(s.memories for s in rp.state.values()),
                "accesses": sum(s.accesses for s in rp.state.values()),
            }
            out["accesses"] = sum(s.accesses for s in run.state.values())
        return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


# --------------------------------------------------------------------------- the graph


def _default_graph(model: Any, config: LoadBenchConfig) -> Any:
    from langgraph_tiered_memory.agent.builder import create_memory_agent

    return create_memory_agent(model, memory_limit=config.memory_limit)


def _default_store(phase: str, asynchronous: bool, options: dict[str, Any]) -> Any:
    from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore

    cls = AsyncTieredMemoryStore if asynchronous else TieredMemoryStore
    return cls(**options)


@dataclass
class _Phase:
    """Where one phase keeps its data."""

    name: str
    prefix: str
    chroma_dir: str
    scripts: list[SessionScript]


def _store_options(config: LoadBenchConfig, phase: _Phase, url: str) -> dict[str, Any]:
    return {
        "redis_url": url,
        "chroma_path": phase.chroma_dir,
        "index": {
            "dims": config.dims,
            "embed": TopicEmbeddings(config.dims),
            "fields": ["content"],
        },
        "key_prefix": phase.prefix,
    }


def _seed_ops(config: LoadBenchConfig, users: list[str]) -> list[PutOp]:
    return [
        PutOp(memory_namespace(user), key, value)
        for user in users
        for key, value in seed_memories(user, config.seed_count)
    ]


@contextlib.asynccontextmanager
async def _opened(
    config: LoadBenchConfig, phase: _Phase, url: str, store_factory: StoreFactory
) -> AsyncIterator[tuple[Any, Any]]:
    """The phase's store and saver, set up; closed (and their Redis keys removed) at exit."""
    store = store_factory(phase.name, config.mode == "async", _store_options(config, phase, url))
    session_prefix = f"{phase.prefix}_sessions"
    try:
        if config.mode == "async":
            from langgraph_tiered_memory import AsyncRedisSessionSaver

            await store.asetup()
            async with AsyncRedisSessionSaver.from_conn_string(
                url, session_prefix=session_prefix
            ) as saver:
                try:
                    yield store, saver
                finally:
                    for script in phase.scripts:
                        await saver.adelete_thread(script.thread_id)
        else:
            from langgraph_tiered_memory import RedisSessionSaver

            await asyncio.to_thread(store.setup)
            with RedisSessionSaver.from_conn_string(url, session_prefix=session_prefix) as saver:
                try:
                    yield store, saver
                finally:
                    for script in phase.scripts:
                        await asyncio.to_thread(saver.delete_thread, script.thread_id)
    finally:
        await asyncio.to_thread(store.close)
        await asyncio.to_thread(drop_keys, url, [f"{phase.prefix}:*", f"{session_prefix}:*"])


async def _run_phase(
    config: LoadBenchConfig,
    phase: _Phase,
    url: str,
    *,
    serial: bool,
    graph_factory: GraphFactory,
    store_factory: StoreFactory,
) -> PhaseResult:
    result = PhaseResult()
    users = sorted({s.user_id for s in phase.scripts})
    model = ScriptedChatModel(delay=config.model_delay_ms / 1000.0)
    async with _opened(config, phase, url, store_factory) as (store, saver):
        await store.abatch(_seed_ops(config, users))
        graph = graph_factory(model, config).compile(checkpointer=saver, store=store)
        with RssSampler() as rss:
            start = time.perf_counter()
            if config.mode == "async":
                await run_async_sessions(graph, phase.scripts, serial, result)
            else:
                workers = config.workers or len(phase.scripts)
                await asyncio.to_thread(
                    run_thread_sessions, graph, phase.scripts, serial, result, workers
                )
            result.wall_s = time.perf_counter() - start
            await flush_writes(result)
        result.peak_rss_bytes = rss.peak
        # a turn stores its interaction and the few statements of one message
        most = config.seed_count + 4 * config.turns * len(phase.scripts) + 1
        result.state = await snapshot(store, users, most)
        result.uncounted_profile_reads = hasattr(store, "get_user_profile")
    return result


@contextlib.contextmanager
def _redis(config: LoadBenchConfig) -> Iterator[tuple[str, str]]:
    if config.redis_url is not None:
        yield config.redis_url, "given"
        return
    from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

    origin = "REDIS_URL" if os.environ.get("REDIS_URL") else "embedded"
    with redis_url_or_embedded() as url:
        yield url, origin


def run_load_benchmark(
    config: LoadBenchConfig,
    *,
    graph_factory: GraphFactory | None = None,
    store_factory: StoreFactory | None = None,
) -> LoadBenchReport:
    """Run the concurrent sessions, then (by default) the serial replay, and compare.

    Args:
        config: What to run.
        graph_factory: Builds the uncompiled graph from the model and the config
            (default: `create_memory_agent(model, memory_limit=...)`).
        store_factory: Builds each phase's store from the phase name and constructor
            options (default: `AsyncTieredMemoryStore` or `TieredMemoryStore`), see
            `StoreFactory`; tests
            wrap it to inject faults.

    Returns:
        The report.

    Raises:
        LoadBenchmarkError: An option is out of range.
    """
    config.validate()
    run_id = uuid.uuid4().hex[:10]
    make_graph = graph_factory or _default_graph
    make_store = store_factory or _default_store
    root = tempfile.mkdtemp(prefix=f"tm-load-{run_id}-", dir=config.chroma_path)
    try:
        with _redis(config) as (url, origin):
            phases = [
                _Phase(
                    name=name,
                    prefix=f"load_{run_id}_{name}",
                    chroma_dir=os.path.join(root, name),
                    scripts=build_sessions(
                        config.sessions,
                        config.turns,
                        config.user_count,
                        thread_prefix=f"load-{run_id}-{name}",
                    ),
                )
                for name in (("run", "replay") if config.replay else ("run",))
            ]

            async def main() -> tuple[PhaseResult, PhaseResult | None]:
                run = await _run_phase(
                    config,
                    phases[0],
                    url,
                    serial=False,
                    graph_factory=make_graph,
                    store_factory=make_store,
                )
                replay = None
                if config.replay:
                    replay = await _run_phase(
                        config,
                        phases[1],
                        url,
                        serial=True,
                        graph_factory=make_graph,
                        store_factory=make_store,
                    )
                return run, replay

            run, replay = asyncio.run(main())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lost = compare_states(run.state, replay.state) if replay is not None else None
    environment = {
        "redis": origin,
        "run_id": run_id,
        "cpus": os.cpu_count(),
        "embeddings": f"TopicEmbeddings({config.dims})",
        "rss": "psutil" if rss_reader() is not None else "getrusage lifetime peak",
        "uncounted_profile_reads": run.uncounted_profile_reads,
    }
    return LoadBenchReport(
        config=config, run=run, replay=replay, lost=lost, environment=environment
    )
