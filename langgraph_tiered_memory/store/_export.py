"""`export_user`: everything a store (and a session saver) holds about one user, as JSON.

The answer to a data-access request. It reads the same places `erase_user` removes,
found by the same planning code (`_erase.find`): the user's namespaces on every tier,
the items of shared namespaces whose provenance names the user, the profile cache,
the knowledge-graph triples (`_erase.user_graph_part`, the selection erase removes),
the memory history and, with `checkpointer=`, the sessions erase removes
(`user_sessions`) with their running summaries and messages. Reading counts no access
and refreshes no TTL.

The result holds only JSON types (times as ISO 8601 strings in UTC), so
`json.dumps(export_user(store, "u1"))` works as is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from langgraph_tiered_memory.config import TierName
from langgraph_tiered_memory.graph.protocol import GraphStore
from langgraph_tiered_memory.graph.types import Triple, TripleRecord
from langgraph_tiered_memory.privacy.erasure import check_user_id
from langgraph_tiered_memory.store._erase import (
    ErasePlan,
    asession_ids,
    erasable_tier,
    find,
    session_ids,
    tier_names,
    user_graph_part,
    user_graphs,
)
from langgraph_tiered_memory.store._history import history_export
from langgraph_tiered_memory.store._protocols import StoreCore
from langgraph_tiered_memory.store.tiers._items import Namespace, StoredItem

EXPORT_FORMAT = "tiered-memory-user-export/2"
"""The `format` field of an export: bumped when its shape changes."""

_ALL = 2**31 - 1
_PROFILE_LABEL = "profiles"


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


def _items(core: StoreCore, name: TierName, ns: Namespace, now: float) -> list[StoredItem]:
    """The live items of one namespace, in key order (no access counted)."""
    hits = erasable_tier(core, name).search(
        ns, query_vector=None, filter=None, limit=_ALL, now=now, namespace_filter=ns.__eq__
    )
    return sorted((item for item, _ in hits), key=lambda it: it.key)


def _item_record(core: StoreCore, name: TierName, items: Sequence[StoredItem]) -> list[dict]:
    """Items as JSON records; long-tier memories carry their statistics."""
    stats: Mapping[str, Any] = {}
    if name == "long" and items and core.memory_mode:
        stats = core._long().memory_stats(items[0].namespace, [it.key for it in items])
    out = []
    for it in items:
        record: dict[str, Any] = {
            "tier": name,
            "namespace": list(it.namespace),
            "key": it.key,
            "value": it.value,
            "created_at": _iso(it.created_at),
            "updated_at": _iso(it.updated_at),
            "expires_at": _iso(it.expires_at),
        }
        st = stats.get(it.key)
        if name == "long":
            record["statistics"] = (
                None
                if st is None
                else {
                    "memory_type": st.memory_type,
                    "importance": st.importance,
                    "access_count": st.access_count,
                    "last_accessed": _iso(st.last_accessed),
                    "occurred_at": _iso(st.occurred_at),
                }
            )
        out.append(record)
    return out


def _top_prefixes(namespaces: Iterable[Namespace]) -> list[Namespace]:
    """The namespaces none of the others is a prefix of (each graph query covers a subtree)."""
    out: list[Namespace] = []
    for ns in sorted(set(namespaces), key=lambda n: (len(n), n)):
        if not any(ns[: len(p)] == p for p in out):
            out.append(ns)
    return sorted(out)


def user_triples(graph: GraphStore, plan: ErasePlan) -> list[TripleRecord]:
    """The triples of `graph` erase takes as the user's (`user_graph_part`), with provenance.

    Every triple erase removes, and every triple that loses the support of a shared
    memory the erase removes; found without removing anything.
    """
    erased, links = user_graph_part(graph, plan, dry_run=True)
    wanted = {(tuple(t[:-3]), Triple(*t[-3:])) for t in erased.triples}
    wanted.update((ns, t) for (ns, _), triples in links.items() for t in triples)
    found: dict[tuple[Namespace, Triple], TripleRecord] = {}
    for prefix in _top_prefixes(ns for ns, _ in wanted):
        for rec in graph.triples(prefix, limit=_ALL):
            if (rec.namespace, rec.triple) in wanted:
                found[(rec.namespace, rec.triple)] = rec
    return [found[k] for k in sorted(found)]


def _triples(core: StoreCore, plan: ErasePlan) -> list[dict[str, Any]]:
    """The user's triples in every graph of the store (`user_triples`)."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for graph in user_graphs(core):
        for rec in user_triples(graph, plan):
            seen.setdefault((rec.namespace, rec.triple), rec.to_dict())
    return [seen[k] for k in sorted(seen)]


def _history(core: StoreCore, plan: ErasePlan) -> list[dict[str, Any]]:
    """The events of the user's memories, and of those whose provenance named the user."""
    if not core.history_enabled:
        return []
    found = history_export(
        core,
        plan.rule.owns,
        keys=plan.shared.get("long", {}),
        user_id=plan.user_id,
        session_ids=plan.sessions,
    )
    return sorted(found, key=lambda h: (h["namespace"], h["key"]))


def export_store(
    core: StoreCore,
    user_id: str,
    *,
    namespaces: Iterable[Sequence[str]] | None = None,
    sessions: Sequence[str] = (),
    names: Sequence[str] = (),
) -> dict[str, Any]:
    """The store's part of `export_user` (everything but `sessions`)."""
    plan = find(core, user_id, namespaces=namespaces, sessions=sessions, names=names)
    now = core.clock()
    memories: list[dict[str, Any]] = []
    short_items: list[dict[str, Any]] = []
    profile: list[dict[str, Any]] = []
    shared: list[dict[str, Any]] = []
    for name in tier_names(core):
        for ns in plan.owned.get(name, []):
            records = _item_record(core, name, _items(core, name, ns, now))
            if ns[:1] == (_PROFILE_LABEL,):
                profile.extend(records)
            elif name == "long":
                memories.extend(records)
            else:
                short_items.extend(records)
        for ns, keys in sorted(plan.shared.get(name, {}).items()):
            wanted = set(keys)
            items = [it for it in _items(core, name, ns, now) if it.key in wanted]
            shared.extend(_item_record(core, name, items))
    return {
        "format": EXPORT_FORMAT,
        "user_id": user_id,
        "exported_at": _iso(now),
        "namespaces": {name: [list(ns) for ns in plan.owned[name]] for name in plan.owned},
        "memories": memories,
        "shared_memories": shared,
        "short_items": short_items,
        "profile": profile,
        "triples": _triples(core, plan),
        "history": _history(core, plan),
    }


def _message_record(message: BaseMessage) -> dict[str, Any]:
    record: dict[str, Any] = {"id": message.id, "type": message.type, "content": message.content}
    if message.name:
        record["name"] = message.name
    if isinstance(message, AIMessage) and message.tool_calls:
        record["tool_calls"] = [dict(call) for call in message.tool_calls]
    return record


def _conversation(tuples: Sequence[CheckpointTuple]) -> tuple[list[dict[str, Any]], str | None]:
    """A thread's messages over all its checkpoints, and its summary.

    `tuples` are the thread's checkpoints, newest first (`saver.list`), every
    namespace. Each message is listed once (by id), oldest first: older checkpoints
    hold messages a summary folded away since, and erase removes them all. The newest
    checkpoint of each namespace adds its pending writes (a run that stopped midway;
    older checkpoints' writes are in the checkpoints after them). The summary is the
    newest `summary` channel value, if any.
    """
    newest: dict[str, CheckpointTuple] = {}
    for tup in tuples:
        newest.setdefault(tup.config["configurable"].get("checkpoint_ns", ""), tup)
    found: dict[Any, dict[str, Any]] = {}
    summary: str | None = None
    for tup in reversed(tuples):
        values = tup.checkpoint.get("channel_values", {})
        batches = [values.get("messages")]
        if tup in newest.values():
            batches += [v for _, channel, v in tup.pending_writes or [] if channel == "messages"]
        for batch in batches:
            if batch is None:
                continue
            for message in convert_to_messages(batch if isinstance(batch, list) else [batch]):
                if message.type != "remove":
                    record = _message_record(message)
                    found.setdefault(message.id or repr(record), record)
        if isinstance(values.get("summary"), str):
            summary = values["summary"]
    return list(found.values()), summary


def _session_record(
    sid: str, meta: Any, summary: str | None, tuples: Sequence[CheckpointTuple]
) -> dict[str, Any]:
    messages, state_summary = _conversation(tuples)
    return {
        "session_id": sid,
        "status": None if meta is None else meta.status,
        "created_at": meta.created_at.isoformat() if meta and meta.created_at else None,
        "last_active": None if meta is None else meta.last_active.isoformat(),
        "message_count": None if meta is None else meta.message_count,
        "participants": [] if meta is None else list(meta.participants),
        "summary": summary if summary is not None else state_summary,
        "messages": messages,
    }


def _thread(sid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": sid}}


def export_sessions(checkpointer: Any, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The sessions `ids` of a sync saver: registry entry, summary and messages.

    `ids` are the sessions erase removes (`user_sessions`), each exported whole: every
    checkpoint of every namespace, so also a session whose registry entry is gone.
    """
    return [
        _session_record(
            sid,
            checkpointer.get_session(sid),
            checkpointer.get_summary(sid),
            list(checkpointer.list(_thread(sid))),
        )
        for sid in ids
    ]


async def _asessions(checkpointer: Any, ids: Sequence[str]) -> list[dict[str, Any]]:
    if not hasattr(checkpointer, "aget_session"):  # a sync saver
        return await asyncio.to_thread(export_sessions, checkpointer, ids)
    out = []
    for sid in ids:
        tuples = [t async for t in checkpointer.alist(_thread(sid))]
        meta = await checkpointer.aget_session(sid)
        out.append(_session_record(sid, meta, await checkpointer.aget_summary(sid), tuples))
    return out


def export_user(
    store: StoreCore,
    user_id: str,
    *,
    namespaces: Iterable[Sequence[str]] | None = None,
    checkpointer: Any = None,
    names: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything held about `user_id`, as JSON-ready data (a data-access request).

    Keys of the result: `format`, `user_id`, `exported_at`, `namespaces` (the
    user's, per tier), `memories` (long-term items of the user's namespaces, each
    with its value, times and `statistics`), `shared_memories` (items of shared
    namespaces whose provenance names the user), `short_items`, `profile` (the
    cached profile records), `triples` (the knowledge-graph triples `erase_user`
    removes as the user's, selected by the same function), `history` (the events
    of each memory, deleted ones included) and `sessions` (with `checkpointer`:
    each session `erase_user` removes, with its registry entry, running summary
    and `messages`, each message of every checkpoint once with its `id`, `type`
    and `content`; else None). Reading counts no access.

    Args:
        store: A tiered store (`TieredMemoryStore` or `AsyncTieredMemoryStore`).
        user_id: The user.
        namespaces: More namespace templates of the user's data (as for
            `erase_user`).
        checkpointer: A session saver of `langgraph_tiered_memory.checkpoint`.
        names: Names the user goes by (as for `erase_user`): the triples of shared
            namespaces mentioning one are exported too.

    Example:
        ```python
        import tempfile

        import json
        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.privacy import export_user

        with tempfile.TemporaryDirectory() as folder, TieredMemoryStore.from_conn_string(
            chroma_path=folder, tiers={"default": "long"}
        ) as store:
            store.put(("users", "u8"), "m1", {"content": "likes tea"})
            data = export_user(store, "u8")
            assert [m["value"]["content"] for m in data["memories"]] == ["likes tea"]
            assert json.loads(json.dumps(data))["user_id"] == "u8"
        ```
    """
    uid = check_user_id(user_id)
    sessions = session_ids(checkpointer, uid)
    data = export_store(store, uid, namespaces=namespaces, sessions=sessions, names=names)
    data["sessions"] = None if checkpointer is None else export_sessions(checkpointer, sessions)
    return data


async def aexport_user(
    store: StoreCore,
    user_id: str,
    *,
    namespaces: Iterable[Sequence[str]] | None = None,
    checkpointer: Any = None,
    names: Sequence[str] = (),
) -> dict[str, Any]:
    """Async `export_user`: the store's I/O runs in a worker thread.

    `checkpointer` may be an async session saver or a sync one.
    """
    uid = check_user_id(user_id)
    sessions = await asession_ids(checkpointer, uid)
    data = await asyncio.to_thread(
        export_store, store, uid, namespaces=namespaces, sessions=sessions, names=names
    )
    data["sessions"] = None if checkpointer is None else await _asessions(checkpointer, sessions)
    return data
