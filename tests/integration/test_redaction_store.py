"""Redaction end to end: nothing raw reaches Redis, Chroma, the SQLite copies or an embedder.

Each test scans what the backends hold (every Redis key of the store's prefix, read by
type; every file under the Chroma directory, SQLite WAL included) for the raw values,
and checks the same scan finds them when the store does not redact.

Each test makes its own card number, email and phone number: Chroma's HNSW files can
hold stale process memory, so text another test stored in this process may show up in
them.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from langchain_core.messages import HumanMessage
from langgraph.graph import START, StateGraph

from langgraph_tiered_memory import AsyncTieredMemoryStore, TieredMemoryStore
from langgraph_tiered_memory.agent.summarizer import SummarizationNode, SummaryState
from langgraph_tiered_memory.checkpoint import AsyncRedisSessionSaver, RedisSessionSaver
from langgraph_tiered_memory.errors import ConfigurationError
from tests.conftest import DIMS, drop_redis_keys
from tests.fakes import HashingEmbeddings


def _card() -> str:
    """A fresh Luhn-valid 16-digit card number, in groups of four."""
    body = "4" + "".join(random.choice("0123456789") for _ in range(14))
    for check in "0123456789":
        digits = body + check
        total = sum(
            (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d
            for i, d in enumerate(int(c) for c in reversed(digits))
        )
        if total % 10 == 0:
            return " ".join(digits[i : i + 4] for i in range(0, 16, 4))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Pii:
    """One test's personal data, the value holding it and that value redacted."""

    card: str
    email: str
    phone: str

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.card, self.email, self.phone, self.card.replace(" ", ""))

    @property
    def value(self) -> dict[str, Any]:
        return {
            "content": f"Ann pays with {self.card} and reads {self.email}",
            "details": {"phones": [f"mobile {self.phone}"], "count": 2},
            "memory_type": "fact",
        }


REDACTED = {
    "content": "Ann pays with [card] and reads [email]",
    "details": {"phones": ["mobile [phone]"], "count": 2},
    "memory_type": "fact",
    "redactions": {"card": 1, "email": 1, "phone": 1},
}


@pytest.fixture
def pii() -> Pii:
    return Pii(
        _card(),
        f"ann.{uuid.uuid4().hex[:10]}@example.com",
        f"+44 20 7946 {random.randint(1000, 9999)}",
    )


class RecordingEmbeddings(HashingEmbeddings):
    """Remembers every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(DIMS)
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed_documents(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


def redis_text(client: redis.Redis, pattern: str) -> str:
    """Everything the keys matching `pattern` hold, read by type, as one text."""
    out: list[Any] = []
    for key in client.scan_iter(match=pattern, count=1000):
        kind = client.type(key).decode()
        out.append(key)
        if kind == "string":
            out.append(client.get(key))
        elif kind == "hash":
            out.append(client.hgetall(key))
        elif kind == "list":
            out.append(client.lrange(key, 0, -1))
        elif kind == "set":
            out.append(client.smembers(key))
        elif kind == "zset":
            out.append(client.zrange(key, 0, -1))
        elif kind == "ReJSON-RL":
            out.append(client.json().get(key))
        else:
            raise AssertionError(f"unexpected Redis type {kind} of {key!r}")
    return repr(out).encode().decode("unicode_escape")


def disk_bytes(root: Path) -> bytes:
    """Every file under `root` (Chroma's SQLite and segments, the memory index, WALs)."""
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def _stored_anywhere(client: redis.Redis, prefix: str, root: Path, secret: str) -> bool:
    return secret in redis_text(client, f"{prefix}:*") or secret.encode() in disk_bytes(root)


def _store(tier: str, redis_url: str, prefix: str, path: Path, **kwargs: Any) -> TieredMemoryStore:
    store = TieredMemoryStore(
        redis_url=redis_url,
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": tier},  # type: ignore[typeddict-item]
        scoring=None,  # memories: MemoryEntry reports the redactions
        **kwargs,
    )
    store.setup()
    return store


def test_store_redacts_before_anything_is_stored_or_embedded(
    tier: str, redis_url: str, key_prefix: str, tmp_path: Path, client: redis.Redis, pii: Pii
) -> None:
    embeddings = RecordingEmbeddings()
    index = {"dims": DIMS, "embed": embeddings, "fields": ["content", "details.phones[*]"]}
    ns = ("users", "u1", "memories")
    store = _store(tier, redis_url, key_prefix, tmp_path / "red", index=index, redactor=True)
    try:
        store.put(ns, "m1", pii.value)
        item = store.get(ns, "m1")
        assert item is not None and item.value == REDACTED
        assert (item.namespace, item.key) == (ns, "m1")
        if tier == "long":
            entry = store.get_memory(ns, "m1")
            assert entry is not None and entry.content == REDACTED["content"]
            assert entry.metadata["redactions"] == {"card": 1, "email": 1, "phone": 1}
        (hit,) = store.search(ns, query="how does Ann pay")
        assert hit.value == REDACTED
        assert embeddings.texts
        assert not any(s in t for t in embeddings.texts for s in pii.secrets)
        for secret in pii.secrets:
            assert not _stored_anywhere(client, key_prefix, tmp_path / "red", secret), secret
    finally:
        store.close()

    # The same scan finds the raw value when the store does not redact (the default).
    plain_prefix = key_prefix + "p"
    plain = _store(tier, redis_url, plain_prefix, tmp_path / "plain", index=index)
    try:
        plain.put(ns, "m1", pii.value)
        assert plain.get(ns, "m1").value == pii.value  # type: ignore[union-attr]
        assert _stored_anywhere(client, plain_prefix, tmp_path / "plain", pii.card)
    finally:
        plain.close()
        drop_redis_keys(redis_url, plain_prefix)


def _written(digits: str, zero: str, sep: str) -> str:
    """`digits` in the script whose zero is `zero`, groups of four joined by `sep`."""
    script = "".join(chr(ord(zero) + int(d)) for d in digits)
    return sep.join(script[i : i + 4] for i in range(0, len(script), 4))


def _stored_raw(client: redis.Redis, prefix: str, root: Path, secret: str) -> bool:
    """`_stored_anywhere` for text that is not ASCII (Redis replies come as UTF-8)."""
    in_redis = secret.encode().decode("latin-1") in redis_text(client, f"{prefix}:*")
    return in_redis or secret.encode() in disk_bytes(root)


def test_store_masks_numbers_in_any_script_spacing_or_json_type(
    tier: str, redis_url: str, key_prefix: str, tmp_path: Path, client: redis.Redis, pii: Pii
) -> None:
    digits = pii.card.replace(" ", "")
    fullwidth = _written(digits, "\uff10", " ")
    arabic = _written(digits, "\u0660", "\u00a0")
    value = {
        "content": f"Ann pays with {fullwidth}, or {arabic}",
        "card": int(digits),
        "memory_type": "fact",
    }
    ns = ("users", "u3", "memories")
    store = _store(tier, redis_url, key_prefix, tmp_path / "red", redactor=True)
    try:
        store.put(ns, "m", value)
        item = store.get(ns, "m")
        assert item is not None and item.value == {
            "content": "Ann pays with [card], or [card]",
            "card": "[card]",
            "memory_type": "fact",
            "redactions": {"card": 3},
        }
        for secret in (fullwidth, arabic, digits):
            assert not _stored_raw(client, key_prefix, tmp_path / "red", secret), secret
    finally:
        store.close()

    # The same scan finds them when the store does not redact.
    plain_prefix = key_prefix + "p"
    plain = _store(tier, redis_url, plain_prefix, tmp_path / "plain")
    try:
        plain.put(ns, "m", value)
        for secret in (fullwidth, arabic, digits):
            assert _stored_raw(client, plain_prefix, tmp_path / "plain", secret), secret
    finally:
        plain.close()
        drop_redis_keys(redis_url, plain_prefix)


def test_store_refuses_a_bad_redactor_option(redis_url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="redactor must be"):
        TieredMemoryStore(redis_url=redis_url, chroma_path=str(tmp_path), redactor="yes")


async def test_async_store_redacts_on_both_tiers(
    tier: str, redis_url: str, key_prefix: str, tmp_path: Path, client: redis.Redis, pii: Pii
) -> None:
    async with AsyncTieredMemoryStore.from_conn_string(
        redis_url,
        chroma_path=str(tmp_path / "chroma"),
        key_prefix=key_prefix,
        tiers={"default": tier},  # type: ignore[typeddict-item]
        index={"dims": DIMS, "embed": RecordingEmbeddings(), "fields": ["content"]},
        redactor=True,
    ) as store:
        await store.aput(("users", "u2"), "m", pii.value)
        await store.abatch([])  # nothing to do, nothing stored
        item = await store.aget(("users", "u2"), "m")
        assert item is not None and item.value == REDACTED
    for secret in pii.secrets:
        assert not _stored_anywhere(client, key_prefix, tmp_path / "chroma", secret), secret


def _summarizing_graph(saver: Any) -> Any:
    builder = StateGraph(SummaryState)
    builder.add_node("summarize", SummarizationNode(max_messages=4, keep_last=2, sessions=saver))
    builder.add_edge(START, "summarize")
    return builder.compile(checkpointer=saver)


def test_session_saver_stores_only_a_redacted_summary(
    redis_url: str, key_prefix: str, client: redis.Redis, pii: Pii
) -> None:
    thread, user = f"t-{uuid.uuid4().hex}", "ann@example"
    chat = [
        HumanMessage(f"Turn {i}: card {pii.card}, mail {pii.email}.", id=str(i)) for i in range(6)
    ]
    with RedisSessionSaver.from_conn_string(
        redis_url, session_prefix=key_prefix, redactor=True
    ) as saver:
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        _summarizing_graph(saver).invoke({"messages": chat}, config)
        summary = saver.get_summary(thread)
        assert summary is not None and "[card]" in summary and "[email]" in summary
        saver.set_summary(thread, f"Direct write: {pii.phone}")
        assert saver.get_summary(thread) == "Direct write: [phone]"
        meta = saver.get_session(thread)
        assert meta is not None and meta.user_id == user  # identifiers are kept
        registry = redis_text(client, f"{key_prefix}:*")
        assert thread in registry and "[phone]" in registry
        for secret in pii.secrets:
            assert secret not in registry, secret
        # Checkpoints are stored as the graph wrote them (documented).
        state = saver.get_tuple(config)
        assert state is not None
        assert pii.card in str(state.checkpoint["channel_values"]["messages"])
        saver.delete_session(thread)


def test_session_saver_without_redactor_keeps_the_summary(
    redis_url: str, key_prefix: str, client: redis.Redis, pii: Pii
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    with RedisSessionSaver.from_conn_string(redis_url, session_prefix=key_prefix) as saver:
        saver.set_summary(thread, f"Card {pii.card}")
        assert pii.card in redis_text(client, f"{key_prefix}:*")
        saver.delete_session(thread)


async def test_async_session_saver_redacts_the_summary(
    redis_url: str, key_prefix: str, client: redis.Redis, pii: Pii
) -> None:
    thread = f"t-{uuid.uuid4().hex}"
    async with AsyncRedisSessionSaver.from_conn_string(
        redis_url, session_prefix=key_prefix, redactor=True
    ) as saver:
        await saver.aset_summary(thread, f"Reach {pii.email} or {pii.phone}")
        assert await saver.aget_summary(thread) == "Reach [email] or [phone]"
        registry = redis_text(client, f"{key_prefix}:*")
        assert pii.email not in registry and pii.phone not in registry
        await saver.adelete_session(thread)
