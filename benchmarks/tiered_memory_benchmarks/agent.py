"""Agent benchmark: turn latency of the memory agent with storage and without it.

Two users hold the same seeded long-term memories. Each turn sends one user message to
`create_memory_agent` over the real tiers (a `TieredMemoryStore` in memory mode on an
embedded Chroma directory, a `RedisSessionSaver` on Redis), with a fake chat model that
answers after a fixed delay:

- **without**: `create_memory_agent(model, storage=False)`: retrieval (profile,
  memories, summary) and the model, nothing stored;
- **with**: `create_memory_agent(model)`: the same, plus storage of every turn (the
  interaction, reinforcement of the memories the reply used, extraction, profile
  refresh) in the background writer.

Turns alternate between the two, in alternating order, so both see the same machine
load; each user starts a new session (thread) every `turns_per_session` turns. The
figure is the **turn latency**: the time from sending the message until the reply
is yielded by `graph.stream(..., stream_mode="updates")`, i.e. when a streaming client
has it. The **run time** (until the run ends, storage flushed) is reported too. Target:
p50 and p95 turn latency with storage at most 1.1x without it.

Embeddings are hashed character n-grams (no model download); `embed="local"` uses the
offline multilingual-e5-small instead.
"""

from __future__ import annotations

import hashlib
import math
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_tiered_memory.demo.model import FakeReplyModel

__all__ = [
    "AGENT_MODES",
    "AgentBenchConfig",
    "AgentBenchReport",
    "DelayedChatModel",
    "HashedNgramEmbeddings",
    "run_agent_benchmark",
]

AGENT_MODES: tuple[str, ...] = ("without", "with")
"""`without`: no storage (`storage=False`); `with`: storage in the background writer."""

TARGET_RATIO = 1.1
"""Turn latency with storage / without, at p50 and p95."""


class DelayedChatModel(FakeReplyModel):
    """A fake chat model: waits `delay` seconds, then answers from the user's message.

    The reply repeats the last user message's words, so some retrieved memories count
    as used and are reinforced, as with a real model that draws on its context.
    """

    delay: float = 0.1
    llm_type = "delayed-fake"

    def _reply(self, messages: list[BaseMessage]) -> str:
        last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        said = str(last.content) if last is not None else ""
        return f"Understood. About that: {said}"


class HashedNgramEmbeddings(Embeddings):
    """Character 1-2-grams hashed into `dims` signed buckets, normalised (no model)."""

    def __init__(self, dims: int = 384) -> None:
        self.dims = dims

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        text = text.lower()
        for gram in [*text, *(text[i : i + 2] for i in range(len(text) - 1))]:
            n = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "little")
            vec[n % self.dims] += 1.0 if (n >> 40) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        return [x / norm for x in vec] if norm else vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return self._embed(text)


@dataclass
class AgentBenchConfig:
    """What the agent benchmark measures.

    Attributes:
        turns: Timed turns per mode.
        warmup: Untimed turns per mode first.
        delay_ms: The fake model's fixed delay per call.
        seed_memories: Long-term memories each user holds before the first turn.
        turns_per_session: Turns per thread before the user starts a new session.
        extraction: Extraction in the storage of the "with" mode.
        profile: The user profile in the context (both modes).
        embed: `"hashing"` (hashed n-grams, 384 dims) or `"local"` (offline multilingual-e5-small).
        redis_url: Redis with RediSearch and RedisJSON; None: `REDIS_URL` or an
            embedded server.
        chroma_dir: Parent of the temporary Chroma directory (None: the system's).
        seed: Seed of the generated messages.
    """

    turns: int = 30
    warmup: int = 3
    delay_ms: float = 100.0
    seed_memories: int = 100
    turns_per_session: int = 10
    extraction: bool = True
    profile: bool = True
    embed: str = "hashing"
    redis_url: str | None = None
    chroma_dir: str | None = None
    seed: int = 7

    def validate(self) -> AgentBenchConfig:
        """Check the options.

        Returns:
            This config.

        Raises:
            ValueError: An option is out of range.
        """
        for name in ("turns", "turns_per_session"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        for name in ("warmup", "seed_memories", "delay_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}.")
        if self.embed not in ("hashing", "local"):
            raise ValueError(f"embed must be 'hashing' or 'local', got {self.embed!r}.")
        return self


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


@dataclass
class AgentBenchReport:
    """Turn latency (reply available) and run time per mode, in ms."""

    config: AgentBenchConfig
    reply_ms: dict[str, list[float]]
    run_ms: dict[str, list[float]]
    memories_before: int = 0
    memories_after: int = 0
    write_failures: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def ratio(self, stat: Callable[[list[float]], float]) -> float:
        """Turn latency with storage / without, by `stat` (e.g. the median)."""
        return stat(self.reply_ms["with"]) / stat(self.reply_ms["without"])

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-serialisable data."""
        out: dict[str, Any] = {"benchmark": "agent", "config": asdict(self.config)}
        for mode in AGENT_MODES:
            reply, run = self.reply_ms[mode], self.run_ms[mode]
            out[mode] = {
                "turns": len(reply),
                "turn_p50_ms": round(statistics.median(reply), 3),
                "turn_p95_ms": round(_p95(reply), 3),
                "run_p50_ms": round(statistics.median(run), 3),
                "run_p95_ms": round(_p95(run), 3),
            }
        p50, p95 = self.ratio(statistics.median), self.ratio(_p95)
        out["ratio_p50"] = round(p50, 4)
        out["ratio_p95"] = round(p95, 4)
        out["target_ratio"] = TARGET_RATIO
        out["within_target"] = p50 <= TARGET_RATIO and p95 <= TARGET_RATIO
        out["memories_before"] = self.memories_before
        out["memories_after"] = self.memories_after
        out["write_failures"] = self.write_failures
        return out


_TOPICS = ("tea", "trains", "hiking", "jazz", "cooking", "Lisbon", "chess", "running")
_TEMPLATES = (
    "I prefer {t} over most things, especially on weekends.",
    "Please remember that my favourite topic is {t}.",
    "What do you think about {t} this week?",
    "Can you suggest something related to {t} for tonight?",
    "My friend and I talked about {t} for hours yesterday.",
)


def _messages(rng: random.Random) -> Iterator[str]:
    while True:
        yield rng.choice(_TEMPLATES).format(t=rng.choice(_TOPICS))


def _seed(store: Any, user: str, count: int, rng: random.Random) -> None:
    types = ("fact", "preference", "experience", "skill")
    for i in range(count):
        text = f"{rng.choice(_TEMPLATES).format(t=rng.choice(_TOPICS))} (note {i})"
        value = {"content": text, "memory_type": types[i % 4], "importance": rng.random()}
        store.put(("memories", user), f"seed-{i}", value)


@contextmanager
def _backends(config: AgentBenchConfig) -> Iterator[tuple[Any, Any]]:
    from langgraph_tiered_memory.checkpoint import RedisSessionSaver
    from langgraph_tiered_memory.store import TieredMemoryStore

    embeddings: Any = HashedNgramEmbeddings(384) if config.embed == "hashing" else "local"
    with ExitStack() as stack:
        url = config.redis_url
        if url is None:
            from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

            url = stack.enter_context(redis_url_or_embedded())
        root = tempfile.mkdtemp(prefix="agent-bench-", dir=config.chroma_dir)
        stack.callback(shutil.rmtree, root, True)
        prefix = "ab" + uuid.uuid4().hex[:8]
        store = stack.enter_context(
            TieredMemoryStore.from_conn_string(
                url,
                chroma_path=root,
                key_prefix=prefix,
                index={"dims": 384, "embed": embeddings, "fields": ["content"]},
            )
        )
        saver = stack.enter_context(
            RedisSessionSaver.from_conn_string(url, session_prefix=prefix, ttl=3600)
        )
        yield store, saver


def _turn(graph: Any, message: str, config: dict[str, Any]) -> tuple[float, float]:
    """(ms until the reply is yielded, ms until the run ended)."""
    start = time.perf_counter()
    reply_at = None
    for update in graph.stream({"messages": [("user", message)]}, config, stream_mode="updates"):
        if reply_at is None and "agent" in update:
            reply_at = time.perf_counter()
    end = time.perf_counter()
    if reply_at is None:
        raise RuntimeError("The agent produced no reply.")
    return (reply_at - start) * 1000.0, (end - start) * 1000.0


def run_agent_benchmark(
    config: AgentBenchConfig, *, on_turn: Callable[[str, int], None] | None = None
) -> AgentBenchReport:
    """Run the benchmark.

    Args:
        config: What to measure.
        on_turn: Called after each timed turn with the mode and the turn number.

    Returns:
        The report.
    """
    from langgraph_tiered_memory.agent.builder import (
        MemoryWriteError,
        MemoryWriter,
        create_memory_agent,
    )

    config.validate()
    rng = random.Random(config.seed)
    model = DelayedChatModel(delay=config.delay_ms / 1000.0)
    writer = MemoryWriter()
    reply_ms: dict[str, list[float]] = {m: [] for m in AGENT_MODES}
    run_ms: dict[str, list[float]] = {m: [] for m in AGENT_MODES}
    with _backends(config) as (store, saver):
        users = {mode: f"bench-{mode}-{uuid.uuid4().hex[:6]}" for mode in AGENT_MODES}
        for user in users.values():
            _seed(store, user, config.seed_memories, random.Random(config.seed))
        before = len(store.search(("memories", users["with"]), limit=1_000_000))
        options: dict[str, Any] = {"profile": config.profile, "writer": writer}
        graphs = {
            "without": create_memory_agent(model, storage=False, **options),
            "with": create_memory_agent(model, extraction=config.extraction, **options),
        }
        compiled = {m: g.compile(store=store, checkpointer=saver) for m, g in graphs.items()}
        texts = _messages(rng)
        threads = {m: uuid.uuid4().hex for m in AGENT_MODES}
        failures = 0
        for turn in range(config.warmup + config.turns):
            message = next(texts)
            if turn % config.turns_per_session == 0:
                threads = {m: uuid.uuid4().hex for m in AGENT_MODES}
            order = AGENT_MODES if turn % 2 == 0 else AGENT_MODES[::-1]
            for mode in order:
                cfg = {"configurable": {"user_id": users[mode], "thread_id": threads[mode]}}
                try:
                    reply, run = _turn(compiled[mode], message, cfg)
                except MemoryWriteError:
                    failures += 1
                    continue
                if turn >= config.warmup:
                    reply_ms[mode].append(reply)
                    run_ms[mode].append(run)
                    if on_turn is not None:
                        on_turn(mode, turn - config.warmup + 1)
        try:
            writer.flush()
        except MemoryWriteError as e:  # counted in the report; kept by the writer
            failures = len(e.failures)
        after = len(store.search(("memories", users["with"]), limit=1_000_000))
    return AgentBenchReport(config, reply_ms, run_ms, before, after, failures)
