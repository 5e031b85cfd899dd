"""`tiered-memory inspect`: what a store holds, as tables.

Sessions come from the session registry in Redis (when a Redis URL is given),
namespaces and memories from the long-term tier with the statistics its memory index
keeps (access counts, importance, age). Inspecting reads only: no access is counted,
and a Chroma directory is read through a copy (`readable_copy`), so nothing is written.
"""

import json
import time
from collections.abc import Iterable
from contextlib import closing
from typing import Annotated, Any, cast

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from langgraph_tiered_memory.cli.common import (
    ChromaHostOption,
    ChromaPathOption,
    ChromaPortOption,
    KeyPrefixOption,
    MemoryIndexPathOption,
    SessionPrefixOption,
    existing_chroma_path,
    namespace_labels,
    open_store,
    reported_errors,
)
from langgraph_tiered_memory.privacy._redact import mask_url

__all__ = ["inspect"]

_PAGE = 1000


def _age(seconds: float | None) -> str:
    """A duration as its largest unit or two: `45s`, `12m`, `3h 5m`, `4d 2h`."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def _since(now: float, when: float | None) -> float | None:
    return None if when is None else now - when


def _namespaces(store: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    while True:
        page = store.list_namespaces(prefix=prefix or None, limit=_PAGE, offset=len(found))
        found.extend(tuple(ns) for ns in page)
        if len(page) < _PAGE:
            return found


def _memory_rows(store: Any, namespaces: Iterable[tuple[str, ...]], now: float) -> list[dict]:
    """One row of statistics per memory, from the long tier's memory index."""
    long_tier = cast(Any, store.tiers["long"])
    rows: list[dict[str, Any]] = []
    for ns in namespaces:
        for page in long_tier.iter_memory_stats(ns, _PAGE):
            for key, st in page:
                rows.append(
                    {
                        "namespace": list(ns),
                        "key": key,
                        "memory_type": st.memory_type,
                        "importance": st.importance,
                        "access_count": st.access_count,
                        "age_s": _since(now, st.created_at),
                        "idle_s": _since(now, st.last_accessed),
                    }
                )
    return rows


def _namespace_rows(namespaces: list[tuple[str, ...]], memories: list[dict]) -> list[dict]:
    by_ns: dict[tuple[str, ...], list[dict[str, Any]]] = {ns: [] for ns in namespaces}
    for m in memories:
        by_ns.setdefault(tuple(m["namespace"]), []).append(m)
    rows = []
    for ns, ms in by_ns.items():
        ages = [m["age_s"] for m in ms]
        idle = [m["idle_s"] for m in ms if m["idle_s"] is not None]
        rows.append(
            {
                "namespace": list(ns),
                "memories": len(ms),
                "accesses": sum(m["access_count"] for m in ms),
                "mean_importance": sum(m["importance"] for m in ms) / len(ms) if ms else None,
                "oldest_s": max(ages) if ages else None,
                "newest_s": min(ages) if ages else None,
                "last_access_s": min(idle) if idle else None,
            }
        )
    return rows


def _sessions(redis_url: str, session_prefix: str, limit: int) -> list[dict]:
    """The registry's sessions, most recently active first, with their remaining TTL."""
    from langgraph_tiered_memory._redis_client import redis_from_url
    from langgraph_tiered_memory.checkpoint.registry import SessionRegistry

    client = redis_from_url(redis_url)
    try:
        registry = SessionRegistry(client, key_prefix=session_prefix)
        rows: list[dict[str, Any]] = []
        for raw in client.scan_iter(match=f"{session_prefix}:session:*", count=500):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            sid = key[len(session_prefix) + len(":session:") :].removeprefix("{").removesuffix("}")
            meta = registry.get_session(sid)
            if meta is None:
                continue  # expired between the scan and the read
            ttl = int(client.ttl(key))
            rows.append(
                {
                    "session_id": meta.session_id,
                    "user_id": meta.user_id,
                    "participants": list(meta.participants),
                    "messages": meta.message_count,
                    "status": meta.status,
                    "created_at": meta.created_at.isoformat() if meta.created_at else None,
                    "last_active": meta.last_active.isoformat(),
                    "ttl_s": ttl if ttl >= 0 else None,
                }
            )
    finally:
        client.close()
    rows.sort(key=lambda r: str(r["last_active"]), reverse=True)
    return rows[:limit]


def _f(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _print(console: Console, data: dict[str, Any], limit: int) -> None:
    console.print(f"[bold]Store[/bold] {escape(data['store'])}", highlight=False)
    sessions = data["sessions"]
    if sessions is None:
        console.print("[dim]Sessions: no Redis URL (--redis-url or REDIS_URL).[/dim]")
    else:
        table = Table(title=f"Sessions in {escape(data['redis'])} ({len(sessions)} shown)")
        for column in ("session", "owner", "participants", "messages", "status"):
            table.add_column(column, justify="right" if column == "messages" else "left")
        table.add_column("last active")
        table.add_column("TTL left", justify="right")
        for s in sessions:
            table.add_row(
                escape(s["session_id"]),
                escape(s["user_id"] or "-"),
                escape(", ".join(s["participants"]) or "-"),
                "-" if s["messages"] is None else str(s["messages"]),
                s["status"],
                s["last_active"][:19].replace("T", " "),
                _age(s["ttl_s"]) if s["ttl_s"] is not None else "none",
            )
        console.print(table)
    spaces = Table(title=f"Namespaces ({len(data['namespaces'])})")
    spaces.add_column("namespace")
    for column in ("memories", "accesses", "mean importance", "oldest", "newest", "last access"):
        spaces.add_column(column, justify="right")
    for n in data["namespaces"]:
        spaces.add_row(
            escape("/".join(n["namespace"])),
            str(n["memories"]),
            str(n["accesses"]),
            _f(n["mean_importance"]),
            _age(n["oldest_s"]),
            _age(n["newest_s"]),
            _age(n["last_access_s"]) + (" ago" if n["last_access_s"] is not None else ""),
        )
    console.print(spaces)
    shown = data["memories"]
    memories = Table(
        title=f"Memories: {len(shown)} of {data['memory_count']}, most accessed first",
        caption="imp: importance (0..1); age: since written; idle: since a search or get"
        " last returned it",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in ("namespace", "key", "type"):
        memories.add_column(column)
    for column in ("imp", "accesses", "age", "idle"):
        memories.add_column(column, justify="right", no_wrap=True, min_width=len(column))
    memories.add_column("content", overflow="fold", min_width=12)
    for m in shown:
        memories.add_row(
            escape("/".join(m["namespace"])),
            escape(m["key"]),
            m["memory_type"],
            _f(m["importance"]),
            str(m["access_count"]),
            _age(m["age_s"]),
            _age(m["idle_s"]),
            escape((m.get("content") or "")[:80]),
        )
    console.print(memories)
    if data["memory_count"] > len(shown):
        console.print(f"[dim](raise --limit above {limit} to list more memories)[/dim]")


def inspect(
    namespace: Annotated[
        str | None,
        typer.Option(
            help="Only namespaces under this prefix, labels joined by '/' (e.g. users/u1)."
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option(min=0, help="Most memories (and sessions) listed one by one.")
    ] = 20,
    redis_url: Annotated[
        str | None,
        typer.Option(
            envvar="REDIS_URL",
            help="Redis of the session registry (default: REDIS_URL); without it no sessions.",
        ),
    ] = None,
    session_prefix: SessionPrefixOption = "tm_session",
    chroma_path: ChromaPathOption = None,
    chroma_host: ChromaHostOption = None,
    chroma_port: ChromaPortOption = 8000,
    memory_index_path: MemoryIndexPathOption = None,
    key_prefix: KeyPrefixOption = "tm",
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
) -> None:
    """Show sessions, namespaces and memories with their statistics. Reads only."""
    prefix = namespace_labels(namespace) if namespace is not None else ()
    if chroma_host is None:
        chroma_path = existing_chroma_path(chroma_path)
    store = open_store(
        chroma_path=chroma_path,
        chroma_host=chroma_host,
        chroma_port=chroma_port,
        memory_index_path=memory_index_path,
        key_prefix=key_prefix,
        read_only=True,
    )
    now = time.time()
    where = f"chroma {chroma_host}:{chroma_port}" if chroma_host else f"chroma {chroma_path}"
    with reported_errors(redis_url), closing(store):
        spaces = _namespaces(store, prefix)
        memories = _memory_rows(store, spaces, now)
        shown = sorted(
            memories, key=lambda m: (-m["access_count"], -m["importance"], m["namespace"])
        )[:limit]
        for m in shown:
            entry = store.get_memory(tuple(m["namespace"]), m["key"])  # counts no access
            m["content"] = entry.content if entry is not None else None
        sessions = None if redis_url is None else _sessions(redis_url, session_prefix, limit)
    data: dict[str, Any] = {
        "store": f"{where}, key prefix {key_prefix}",
        "redis": mask_url(redis_url) if redis_url else None,
        "namespace": list(prefix),
        "sessions": sessions,
        "namespaces": _namespace_rows(spaces, memories),
        "memory_count": len(memories),
        "memories": shown,
    }
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, allow_nan=False))
        return
    _print(Console(), data, limit)
