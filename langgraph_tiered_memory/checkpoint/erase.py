"""`erase_user` on the session savers: remove everything the savers hold about one user.

What a user has in the savers' Redis, for a registry prefix P (`session_prefix`):

- the sessions they OWN (registry hash `P:session:{sid}` whose `user_id` is theirs, or
  listed in their index `P:user:<uid>`), and for each session (a LangGraph thread):
  - upstream's keys (langgraph-checkpoint-redis 0.5): checkpoint documents
    `checkpoint:<thread>:<ns>[:<id>]`, write documents `checkpoint_write:<thread>:...`
    (both RedisJSON documents of its search indexes), latest pointers
    `checkpoint_latest:<thread>:<ns>`, write-key registries
    `write_keys_zset:<thread>:<ns>:<id>`, the shallow savers' `write_registry:<thread>:
    <ns>:shallow` and `current_checkpoint:<thread>:<ns>:shallow`, and the
    `checkpoint_blob:<thread>:...` keys older upstream versions wrote;
  - the registry hash and the running summary `P:summary:{sid}`;
- their index `P:user:<uid>` (and any entry of their sessions in another user's index);
- a `participant:<uid>` field in the hash of each session of another user they wrote to.

Documents are found by the search indexes (`thread_id` tag) and, as a backstop, by
SCAN over each key family of the thread; a key found only by SCAN is the thread's when
the thread is the longest known thread id that prefixes it and, for a document, when
its `thread_id` field says so (thread ids may contain ``:``).

Order: everything is found first; then the checkpoint data goes (writes, registries and
pointers, then checkpoints), RediSearch's garbage collector runs on the checkpoint
indexes (see `_collect`: a deleted document's thread id otherwise stays among the
index's tag values), then summaries, participant fields, other indexes, the session
hashes, and the user's index last. A run that stops midway therefore leaves the
registry entries through which a second run finds the rest; a second run after a
complete one finds nothing. A dry run finds the same and deletes nothing.

Kept, and reported in the receipt: the checkpoints of sessions owned by OTHER users in
which the user took part (they are the other user's sessions; only the user's
participant field goes). Not covered: a graph run for the user while the erase runs can
write new checkpoints; erase once the user's runs have stopped.

The plan is a generator (as in `checkpoint._base`): it yields `Scan`, `Query` and
`Batch` requests and is sent their replies; `run_erase` and `arun_erase` serve them
blocking or awaited (`_drive`), so the algorithm exists once for the sync and async savers.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.checkpoint.redis.util import safely_decode, to_storage_safe_id
from redis.exceptions import ResponseError
from redisvl.query.filter import Tag

from langgraph_tiered_memory._drive import adrive, drive
from langgraph_tiered_memory.checkpoint._base import Batch, Query, _cmd, search_plan
from langgraph_tiered_memory.checkpoint.registry import PARTICIPANT, Keys
from langgraph_tiered_memory.privacy.erasure import ErasureReceipt, check_user_id

__all__ = [
    "CHECKPOINTS",
    "CHECKPOINT_KEYS",
    "KEPT_INDEX_TAGS",
    "KEPT_SHARED_SESSIONS",
    "PARTICIPATIONS",
    "SESSIONS",
    "SUMMARIES",
    "USER_INDEX",
    "WRITES",
    "AsyncSessionErase",
    "collect_search_garbage",
    "Layout",
    "Scan",
    "SessionErase",
    "arun_erase",
    "erase_plan",
    "owned_sessions_plan",
    "run_erase",
]

SESSIONS = "sessions"
"""Receipt place: the user's session registry hashes (ids: session id)."""
SUMMARIES = "sessions.summaries"
"""Receipt place: running summaries (ids: session id)."""
PARTICIPATIONS = "sessions.participations"
"""Receipt place: participant fields in other users' sessions (ids: session id, user id)."""
USER_INDEX = "sessions.user_index"
"""Receipt place: the user's index key (id: key) and entries of the user's sessions in
other indexes (ids: key, session id)."""
CHECKPOINTS = "checkpoints"
"""Receipt place: checkpoint documents (ids: Redis key)."""
WRITES = "checkpoints.writes"
"""Receipt place: pending-write documents (ids: Redis key)."""
CHECKPOINT_KEYS = "checkpoints.keys"
"""Receipt place: latest pointers, write-key registries, shallow trackers, old blob keys
(ids: Redis key)."""

KEPT_INDEX_TAGS = (
    "The thread ids of the erased sessions stay in the checkpoint search indexes' tag"
    " index (not in any key) until RediSearch's garbage collector runs: the server"
    " refused FT.CONFIG SET / FT.DEBUG GC_FORCEINVOKE."
)

KEPT_SHARED_SESSIONS = (
    "Checkpoints of sessions owned by other users in which the user took part are kept"
    " (they are those users' sessions); the user's participant field in them is removed."
)

_log = logging.getLogger("langgraph_tiered_memory.checkpoint.erase")
_SCAN_COUNT = 1000
_PER_THREAD_SCANS = 16
"""Up to this many sessions, each thread's key families are scanned by their own MATCH
pattern; above it, each family is scanned once whole (fewer passes over the keyspace)."""
_DELETE_CHUNK = 500


@dataclass(frozen=True)
class Scan:
    """A SCAN of the keys matching `match`; the reply is their names."""

    match: str


T = TypeVar("T")
Plan = Generator["Query | Batch | Scan", Any, T]
"""An erase plan: yields requests, is sent their replies, returns its result."""


@dataclass(frozen=True)
class Layout:
    """The key names of one saver (its prefixes) and its search indexes."""

    keys: Keys
    checkpoint_prefix: str
    write_prefix: str
    indexes: tuple[str, ...] = ()

    @classmethod
    def of(cls, saver: Any) -> Layout:
        """The layout of a session saver (any kind)."""
        indexes = tuple(
            str(index.name)
            for index in (
                getattr(saver, "checkpoints_index", None),
                getattr(saver, "checkpoint_writes_index", None),
            )
            if index is not None
        )
        return cls(
            saver.sessions.keys,
            getattr(saver, "_checkpoint_prefix", "checkpoint"),
            getattr(saver, "_checkpoint_write_prefix", "checkpoint_write"),
            indexes,
        )

    @property
    def documents(self) -> tuple[str, str]:
        """Families of RedisJSON documents (checkpoints, writes)."""
        return (self.checkpoint_prefix, self.write_prefix)

    @property
    def others(self) -> tuple[str, ...]:
        """Families of the other upstream keys of a thread."""
        return (
            f"{self.checkpoint_prefix}_latest",
            "write_keys_zset",
            "write_registry",
            "current_checkpoint",
            "checkpoint_blob",
        )


@dataclass
class _Found:
    """Everything the erase removes, in the order it goes."""

    owned: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    """Session hashes of owned sessions that exist."""
    summaries: list[str] = field(default_factory=list)
    participations: list[tuple[str, str]] = field(default_factory=list)
    """(session hash key, session id) of other users' sessions naming the user."""
    other_index: list[tuple[str, str]] = field(default_factory=list)
    """(index key, session id) of the user's sessions in other users' indexes."""
    own_index: str | None = None
    writes: set[str] = field(default_factory=set)
    checkpoints: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)


def glob_escape(text: str) -> str:
    """`text` as a literal inside a Redis SCAN MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _text(value: Any) -> str:
    return safely_decode(value) if isinstance(value, bytes) else str(value)


def _session_id(name: str, keys: Keys) -> str | None:
    head = keys.session("")[:-1]  # "P:session:{"
    if name.startswith(head) and name.endswith("}"):
        return name[len(head) : -1] or None
    return None


def _owner(name: str, families: Iterable[str], threads: Sequence[str]) -> str | None:
    """The longest thread id `t` with `name` starting with `<family>:<t>:`, if any."""
    best: str | None = None
    for family in families:
        head = f"{family}:"
        if not name.startswith(head):
            continue
        rest = name[len(head) :]
        for t in threads:
            if rest.startswith(f"{t}:") and (best is None or len(t) > len(best)):
                best = t
    return best


def _batched(commands: Sequence[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> Plan[list[Any]]:
    """Run `commands` in pipelines of bounded size; their replies, in order."""
    replies: list[Any] = []
    for start in range(0, len(commands), _DELETE_CHUNK):
        replies.extend((yield Batch(tuple(commands[start : start + _DELETE_CHUNK]))))
    return replies


def _find_sessions(layout: Layout, uid: str, found: _Found) -> Plan[dict[str, str]]:
    """Fill the registry part of `found`; returns every registered session id -> hash key."""
    keys = layout.keys
    own_index = keys.user(uid)
    registered: dict[str, str] = {}
    for name in (yield Scan(glob_escape(keys.session("")[:-1]) + "*")):
        sid = _session_id(_text(name), keys)
        if sid is not None:
            registered[sid] = _text(name)
    sids = sorted(registered)
    replies = yield from _batched(
        [
            _cmd("zrange", own_index, 0, -1),
            *(_cmd("hmget", registered[s], ["user_id", PARTICIPANT + uid]) for s in sids),
        ]
    )
    indexed = {_text(m) for m in replies[0]}
    owners = {s: reply for s, reply in zip(sids, replies[1:], strict=True)}
    for sid in sorted(set(registered) | indexed):
        owner, joined = owners.get(sid, (None, None))
        owner = None if owner is None else _text(owner)
        if owner == uid or (owner is None and sid in indexed):
            found.owned.append(sid)
            if sid in registered:
                found.hashes.append(registered[sid])
        elif joined is not None:
            found.participations.append((registered[sid], sid))
    if replies[0]:
        found.own_index = own_index
    return registered


def _find_other_indexes(layout: Layout, uid: str, found: _Found) -> Plan[None]:
    own = layout.keys.user(uid)
    names = [
        _text(n) for n in (yield Scan(glob_escape(layout.keys.user("")) + "*")) if _text(n) != own
    ]
    if not names or not found.owned:
        return
    replies = yield from _batched([_cmd("zmscore", n, found.owned) for n in names])
    for name, scores in zip(names, replies, strict=True):
        for sid, score in zip(found.owned, scores or [], strict=True):
            if score is not None:
                found.other_index.append((name, sid))


def _find_threads(layout: Layout, found: _Found, registered: Iterable[str]) -> Plan[None]:
    """Fill the checkpoint part of `found` for the owned threads."""
    threads = found.owned
    for thread in threads:
        where = Tag("thread_id") == to_storage_safe_id(thread)
        checkpoints = yield from search_plan("checkpoints", where)
        writes = yield from search_plan("writes", where)
        found.checkpoints.update(ref.key for ref in checkpoints)
        found.writes.update(ref.key for ref in writes)
        for ref in (*checkpoints, *writes):
            found.keys.add(ref.registry_key)  # write_keys_zset (full savers)
            tail = f"{ref.thread_id}:{ref.checkpoint_ns}"
            found.keys.add(f"{layout.checkpoint_prefix}_latest:{tail}")
            found.keys.update(
                (f"write_registry:{tail}:shallow", f"current_checkpoint:{tail}:shallow")
            )
    families = (*layout.documents, *layout.others)
    if len(threads) <= _PER_THREAD_SCANS:
        patterns = [f"{glob_escape(f)}:{glob_escape(t)}:*" for t in threads for f in families]
    else:
        patterns = [f"{glob_escape(f)}:*" for f in families]
    scanned: set[str] = set()
    for pattern in patterns:
        scanned.update(_text(n) for n in (yield Scan(pattern)))
    # Only names under an owned thread's families can be the user's.
    scanned = {n for n in scanned if _owner(n, families, threads) is not None}
    scanned -= found.checkpoints | found.writes
    known = {*registered, *threads}
    docs = sorted(n for n in scanned if _owner(n, layout.documents, threads) is not None)
    types = yield from _batched([_cmd("type", n) for n in docs])
    docs = [n for n, t in zip(docs, types, strict=True) if _text(t) == "ReJSON-RL"]
    doc_thread: dict[str, str] = {}
    # A document's own thread id decides whose it is.
    replies = yield from _batched([_cmd("json_get", n, "$.thread_id") for n in docs])
    for name, reply in zip(docs, replies, strict=True):
        values = reply if isinstance(reply, list) else [reply]
        if values and values[0] is not None:
            doc_thread[name] = str(values[0])
    known.update(doc_thread.values())
    ordered = sorted(known)
    owned = {*threads, *(to_storage_safe_id(t) for t in threads)}
    for name in scanned:
        whose = doc_thread[name] if name in doc_thread else _owner(name, families, ordered)
        if whose not in owned:
            continue
        if name in doc_thread and name.startswith(layout.checkpoint_prefix + ":"):
            found.checkpoints.add(name)
        elif name in doc_thread:
            found.writes.add(name)
        else:
            found.keys.add(name)


def erase_plan(layout: Layout, user_id: str, *, dry_run: bool) -> Plan[ErasureReceipt]:
    """Find and (unless `dry_run`) remove everything the savers hold about `user_id`."""
    uid = check_user_id(user_id)
    receipt = ErasureReceipt.for_user(uid, dry_run=dry_run)
    found = _Found()
    registered = yield from _find_sessions(layout, uid, found)
    yield from _find_other_indexes(layout, uid, found)
    yield from _find_threads(layout, found, registered)
    summaries = [layout.keys.summary(s) for s in found.owned]
    derived = sorted(found.keys)
    exist = yield from _batched([_cmd("exists", k) for k in (*summaries, *derived)])
    found.summaries = [k for k, n in zip(summaries, exist[: len(summaries)], strict=True) if n]
    found.keys = {k for k, n in zip(derived, exist[len(summaries) :], strict=True) if n}

    receipt.add(WRITES, [(k,) for k in sorted(found.writes)])
    receipt.add(CHECKPOINT_KEYS, [(k,) for k in sorted(found.keys)])
    receipt.add(CHECKPOINTS, [(k,) for k in sorted(found.checkpoints)])
    owned_ids = {layout.keys.summary(s): s for s in found.owned}
    receipt.add(SUMMARIES, [(owned_ids[k],) for k in found.summaries])
    receipt.add(PARTICIPATIONS, [(sid, uid) for _, sid in found.participations])
    receipt.add(
        USER_INDEX,
        [(k, s) for k, s in found.other_index] + ([(found.own_index,)] if found.own_index else []),
    )
    hashed = {layout.keys.session(s): s for s in found.owned}
    receipt.add(SESSIONS, [(hashed[k],) for k in found.hashes])
    if found.participations:
        receipt.keep(KEPT_SHARED_SESSIONS)
    if dry_run:
        return receipt

    # Leaf data first, registries last (see the module docstring).
    for group in (sorted(found.writes | found.keys), sorted(found.checkpoints)):
        yield from _batched([_cmd("delete", k) for k in group])
    # Before the registries go, so a run stopped before this step does it next time.
    if found.owned and layout.indexes and not (yield from _collect(layout.indexes)):
        receipt.keep(KEPT_INDEX_TAGS)
    yield from _batched([_cmd("delete", k) for k in found.summaries])
    yield from _batched(
        [_cmd("hdel", key, PARTICIPANT + uid) for key, _ in found.participations]
        + [_cmd("zrem", key, sid) for key, sid in found.other_index]
    )
    yield from _batched([_cmd("delete", k) for k in found.hashes])
    if found.own_index:
        yield Batch((_cmd("delete", found.own_index),))
    _log.info(
        "Erased a user's %d sessions (%d records) from the session savers.",
        len(found.owned),
        receipt.total,
    )
    return receipt


def owned_sessions_plan(layout: Layout, user_id: str) -> Plan[list[str]]:
    """The ids of the sessions `user_id` owns (those `erase_user` removes), sorted."""
    found = _Found()
    yield from _find_sessions(layout, check_user_id(user_id), found)
    return sorted(found.owned)


# ---------------------------------------------------------------------------
# Drivers and the saver methods.
# ---------------------------------------------------------------------------


_THRESHOLD = "FORK_GC_CLEAN_THRESHOLD"


def _threshold(reply: Any) -> str | None:
    """The value in an `FT.CONFIG GET` reply (a map, or a list of pairs)."""
    if isinstance(reply, dict):
        pairs = list(reply.items())
    else:
        pairs = [tuple(p) for p in reply or [] if isinstance(p, (list, tuple)) and len(p) == 2]
    for name, value in pairs:
        if _text(name) == _THRESHOLD and value is not None:
            return _text(value)
    return None


def _collect(indexes: Sequence[str]) -> Plan[bool]:
    """Run RediSearch's garbage collector on `indexes` now: False (logged) if refused.

    A deleted document leaves its id, and a tag value (the thread id) that only it
    had, in the index's tag index until the collector runs, which it does only once
    `FORK_GC_CLEAN_THRESHOLD` (default 100) deleted documents have piled up. This
    lowers that server setting to 0 (`FT.CONFIG SET`), forces the collection
    (`FT.DEBUG GC_FORCEINVOKE`) and restores the setting.
    """
    try:
        (reply,) = yield Batch((_cmd("execute_command", "FT.CONFIG", "GET", _THRESHOLD),))
        old = _threshold(reply)
        yield Batch((_cmd("execute_command", "FT.CONFIG", "SET", _THRESHOLD, "0"),))
        try:
            yield Batch(
                tuple(_cmd("execute_command", "FT.DEBUG", "GC_FORCEINVOKE", n) for n in indexes)
            )
        finally:
            if old is not None:
                yield Batch((_cmd("execute_command", "FT.CONFIG", "SET", _THRESHOLD, old),))
    except ResponseError as e:
        _log.warning(
            "Could not run RediSearch's garbage collector after an erase (%s); the erased"
            " entries stay in the index's term and tag dictionaries until it runs.",
            e,
        )
        return False
    return True


def collect_search_garbage(client: Any, indexes: Sequence[str]) -> bool:
    """`_collect` with a sync client (the long tier's index after a namespace is erased)."""
    return drive(_collect(indexes), lambda b: b.queue(client.pipeline(transaction=False)).execute())


def run_erase(saver: Any, plan: Plan[T]) -> T:
    """Serve `plan`'s requests with a sync saver's client and indexes; its result."""

    def serve(request: Query | Batch | Scan) -> Any:
        if isinstance(request, Scan):
            return list(saver._tm_client.scan_iter(match=request.match, count=_SCAN_COUNT))
        return saver._call(request)

    return drive(plan, serve)


async def arun_erase(saver: Any, plan: Plan[T]) -> T:
    """`run_erase` for an async saver."""

    async def serve(request: Query | Batch | Scan) -> Any:
        if isinstance(request, Scan):
            scan = saver._tm_client.scan_iter(match=request.match, count=_SCAN_COUNT)
            return [k async for k in scan]
        return await saver._call(request)

    return await adrive(plan, serve)


class SessionErase:
    """`erase_user` and `user_sessions` of the sync savers (mixed in)."""

    def erase_user(self, user_id: str, *, dry_run: bool = False) -> ErasureReceipt:
        """Remove everything the saver's Redis holds about `user_id` (see `checkpoint.erase`).

        The user's own sessions go whole (checkpoints, writes, every upstream key,
        registry hash, summary), with their index and their participant fields in other
        users' sessions. Idempotent: a second run removes nothing and a run stopped
        midway is finished by the next one.

        Args:
            user_id: The user.
            dry_run: Report what would be removed; remove nothing.

        Returns:
            The `ErasureReceipt`: counts per place and hashes of the removed ids.
        """
        saver: Any = self
        saver._recorder.flush()  # pending records would recreate what is erased
        return run_erase(saver, erase_plan(Layout.of(saver), user_id, dry_run=dry_run)).finish()

    def user_sessions(self, user_id: str) -> list[str]:
        """Ids of the sessions `user_id` owns, registered or indexed (what erase removes)."""
        saver: Any = self
        saver._recorder.flush()
        return run_erase(saver, owned_sessions_plan(Layout.of(saver), user_id))


class AsyncSessionErase:
    """`aerase_user` and `auser_sessions` of the async savers (mixed in)."""

    async def aerase_user(self, user_id: str, *, dry_run: bool = False) -> ErasureReceipt:
        """Remove everything the saver holds about `user_id` (as `RedisSessionSaver.erase_user`)."""
        saver: Any = self
        await saver._recorder.flush()
        plan = erase_plan(Layout.of(saver), user_id, dry_run=dry_run)
        return (await arun_erase(saver, plan)).finish()

    async def auser_sessions(self, user_id: str) -> list[str]:
        """Ids of the sessions `user_id` owns (as `RedisSessionSaver.user_sessions`)."""
        saver: Any = self
        await saver._recorder.flush()
        return await arun_erase(saver, owned_sessions_plan(Layout.of(saver), user_id))
