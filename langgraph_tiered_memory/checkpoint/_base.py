"""What the sync and async full session savers share: their logic, without the I/O.

Listing scope, key arithmetic and the plans behind ``prune``, ``delete_for_runs`` and
``copy_thread``. A plan is a generator: it yields the Redis work it needs next (a `Query`
for one page of a search, or a `Batch` of commands for one pipeline), is sent the reply,
and returns its result. Plans never touch a client: the savers' `_call` is the one place
a request becomes a client call, made blocking (`_drive.drive`) or awaited
(`_drive.adrive`). Each algorithm therefore exists once for both savers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, get_checkpoint_id
from langgraph.checkpoint.redis.base import REDIS_KEY_SEPARATOR
from langgraph.checkpoint.redis.key_registry import CheckpointKeyRegistry
from langgraph.checkpoint.redis.util import safely_decode, to_storage_safe_id
from redisvl.query import FilterQuery
from redisvl.query.filter import FilterExpression, Tag

if TYPE_CHECKING:
    from langgraph.checkpoint.redis.base import BaseRedisSaver

PAGE_SIZE = 1000
"""Page size of the RediSearch queries that enumerate a thread's documents."""
# How many ids go into one ``@field:{a|b|...}`` tag query.
_TAG_CHUNK = 100
_PRUNE_STRATEGIES = {"keep_latest": 1, "delete": 0}
_FIELDS = ["thread_id", "checkpoint_ns", "checkpoint_id"]

T = TypeVar("T")


@dataclass(frozen=True)
class Query:
    """One search page; the reply is the search result (its ``docs``)."""

    index: Literal["checkpoints", "writes"]
    query: FilterQuery


@dataclass(frozen=True)
class Batch:
    """Commands for one pipeline (not a transaction); the reply is their results.

    Each command is ``(method, args, kwargs)`` of a redis-py pipeline; a ``json_``
    prefix names a RedisJSON command (``json_get`` is ``pipe.json().get``).
    """

    commands: tuple[tuple[str, tuple[Any, ...], dict[str, Any]], ...]

    def queue(self, pipe: Any) -> Any:
        """Queue the commands on ``pipe`` and return it."""
        for name, args, kwargs in self.commands:
            target = pipe.json() if name.startswith("json_") else pipe
            getattr(target, name.removeprefix("json_"))(*args, **kwargs)
        return pipe


def _cmd(name: str, *args: Any, **kwargs: Any) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    return (name, args, kwargs)


Request = Query | Batch
Plan = Generator[Request, Any, T]


class ListScope:
    """What `list` must return, split into the part upstream handles and the rest.

    Upstream filters correctly on the thread only; the namespace, checkpoint id,
    ``before`` cursor, metadata filter and limit are applied here, in that order.
    """

    def __init__(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> None:
        self.upstream_config: RunnableConfig | None = None
        self.checkpoint_ns: str | None = None
        self.checkpoint_id: str | None = None
        if config is not None:
            configurable = config.get("configurable", {})
            self.upstream_config = {"configurable": {"thread_id": configurable["thread_id"]}}
            self.checkpoint_ns = configurable.get("checkpoint_ns")
            self.checkpoint_id = get_checkpoint_id(config) or None
        self.before_id = (get_checkpoint_id(before) or None) if before is not None else None
        self.metadata_filter = dict(filter or {})
        self.limit = limit
        self.returned = 0

    @property
    def exhausted(self) -> bool:
        """Whether the limit has been reached."""
        return self.limit is not None and self.returned >= self.limit

    def admit(self, tup: CheckpointTuple) -> bool:
        """Whether ``tup`` is returned; counts it towards the limit if so."""
        configurable = tup.config["configurable"]
        if self.checkpoint_ns is not None and configurable.get("checkpoint_ns", "") != (
            self.checkpoint_ns
        ):
            return False
        tup_id = configurable.get("checkpoint_id") or tup.checkpoint["id"]
        if self.checkpoint_id is not None and tup_id != self.checkpoint_id:
            return False
        # Checkpoint ids are uuid6 strings: their string order is their time order.
        if self.before_id is not None and tup_id >= self.before_id:
            return False
        metadata = tup.metadata or {}
        if not all(metadata.get(key) == value for key, value in self.metadata_filter.items()):
            return False
        self.returned += 1
        return True


def _chunks(items: Sequence[str], size: int = _TAG_CHUNK) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _keep_last(strategy: str, keep_last: int | None) -> int:
    if keep_last is None:
        if strategy not in _PRUNE_STRATEGIES:
            raise ValueError(
                f"Unknown prune strategy {strategy!r}; expected one of {sorted(_PRUNE_STRATEGIES)}"
            )
        keep_last = _PRUNE_STRATEGIES[strategy]
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    return keep_last


@dataclass(frozen=True)
class _DocRef:
    """A checkpoint or write document found by a search, with storage-safe fields."""

    key: str
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str

    @classmethod
    def from_search(cls, doc: Any) -> _DocRef:
        return cls(
            key=safely_decode(doc.id),
            thread_id=safely_decode(getattr(doc, "thread_id", "")),
            checkpoint_ns=safely_decode(getattr(doc, "checkpoint_ns", "")),
            checkpoint_id=safely_decode(getattr(doc, "checkpoint_id", "")),
        )

    @property
    def checkpoint(self) -> tuple[str, str, str]:
        return (self.thread_id, self.checkpoint_ns, self.checkpoint_id)

    @property
    def registry_key(self) -> str:
        """The sorted set listing the checkpoint's write keys."""
        return CheckpointKeyRegistry.make_write_keys_zset_key(*self.checkpoint)


def search_plan(
    index: Literal["checkpoints", "writes"],
    expression: FilterExpression,
    page_size: int = PAGE_SIZE,
) -> Plan[list[_DocRef]]:
    """All documents matching ``expression``, read page by page."""
    found: list[_DocRef] = []
    offset = 0
    while True:
        query = FilterQuery(
            filter_expression=expression, return_fields=_FIELDS, num_results=page_size
        )
        query.paging(offset, page_size)
        docs = (yield Query(index, query)).docs
        found.extend(_DocRef.from_search(doc) for doc in docs)
        if len(docs) < page_size:
            return found
        offset += page_size


def _retarget(key: str, prefix: str, source: str, target: str) -> str:
    """Move ``key`` from the source thread's key space to the target's.

    ``prefix`` is a search index's key prefix, separator included (``"checkpoint:"``).
    """
    head = f"{prefix}{source}{REDIS_KEY_SEPARATOR}"
    if not key.startswith(head):
        raise ValueError(f"Key {key!r} does not belong to thread {source!r}")
    return f"{prefix}{target}{REDIS_KEY_SEPARATOR}{key[len(head) :]}"


if TYPE_CHECKING:
    _Base = BaseRedisSaver[Any, Any]
else:
    _Base = object


class SaverPlans(_Base):
    """The plans of the full session savers; the savers supply the I/O."""

    _tm_ttl: float | None

    def _prune_plan(
        self, thread_ids: Sequence[str], strategy: str, keep_last: int | None, page_size: int
    ) -> Plan[None]:
        keep = _keep_last(strategy, keep_last)
        if page_size < 1:
            raise ValueError(f"max_results must be >= 1, got {page_size}")
        for thread_id in dict.fromkeys(thread_ids):
            where = Tag("thread_id") == to_storage_safe_id(thread_id)
            checkpoints = yield from search_plan("checkpoints", where, page_size)
            by_ns: dict[tuple[str, str], list[_DocRef]] = defaultdict(list)
            for ref in checkpoints:
                by_ns[(ref.thread_id, ref.checkpoint_ns)].append(ref)
            evicted: list[_DocRef] = []  # all but the newest `keep` of each namespace
            for refs in by_ns.values():
                refs.sort(key=lambda r: r.checkpoint_id, reverse=True)
                evicted.extend(refs[keep:])
            yield from self._delete_plan(evicted)

    def _delete_for_runs_plan(self, run_ids: Sequence[str]) -> Plan[None]:
        safe_ids = [to_storage_safe_id(r) for r in dict.fromkeys(run_ids) if r]
        checkpoints: list[_DocRef] = []
        for chunk in _chunks(safe_ids):
            found = yield from search_plan("checkpoints", Tag("run_id") == chunk)
            checkpoints.extend(found)
        yield from self._delete_plan(checkpoints)

    def _copy_thread_plan(self, source_thread_id: str, target_thread_id: str) -> Plan[None]:
        """Rewrite the source thread's documents (storage-safe ids) for the target thread."""
        source = to_storage_safe_id(source_thread_id)
        target = to_storage_safe_id(target_thread_id)
        if source == target:
            return
        checkpoints = yield from search_plan("checkpoints", Tag("thread_id") == source)
        if not checkpoints:
            return
        writes = yield from search_plan("writes", Tag("thread_id") == source)
        results = yield Batch(
            tuple(_cmd("json_get", ref.key) for ref in (*checkpoints, *writes))
            + tuple(_cmd("zrange", ref.registry_key, 0, -1, withscores=True) for ref in checkpoints)
        )
        n_cp, n_w = len(checkpoints), len(writes)
        documents: list[tuple[str, dict[str, Any]]] = []
        namespaces: set[str] = set()
        write_keys: dict[str, str] = {}
        for n, (ref, doc) in enumerate(zip((*checkpoints, *writes), results, strict=False)):
            if not isinstance(doc, dict):
                continue  # deleted between the search and the read
            schema = self.checkpoints_schema if n < n_cp else self.writes_schema
            new_key = _retarget(ref.key, schema["index"]["prefix"], source, target)
            documents.append((new_key, {**doc, "thread_id": target}))
            if n < n_cp:
                namespaces.add(ref.checkpoint_ns)
            else:
                write_keys[ref.key] = new_key
        registries: list[tuple[str, dict[str, float]]] = []
        for ref, members in zip(checkpoints, results[n_cp + n_w :], strict=True):
            mapping = {
                write_keys[member]: float(score)
                for member, score in ((safely_decode(m), s) for m, s in (members or []))
                if member in write_keys
            }
            if mapping:
                zset_key = CheckpointKeyRegistry.make_write_keys_zset_key(
                    target, ref.checkpoint_ns, ref.checkpoint_id
                )
                registries.append((zset_key, mapping))
        commands = [_cmd("json_set", key, "$", doc) for key, doc in documents]
        commands += [_cmd("zadd", key, mapping) for key, mapping in registries]
        if self._tm_ttl is not None:
            written = [k for k, _ in documents] + [k for k, _ in registries]
            commands += [_cmd("expire", key, int(self._tm_ttl)) for key in written]
        yield Batch(tuple(commands))
        for ns in namespaces:
            yield from self._refresh_latest_plan(target, ns)

    def _delete_plan(self, checkpoints: Sequence[_DocRef]) -> Plan[None]:
        """Delete checkpoints with their writes and write-key registries, then fix pointers."""
        if not checkpoints:
            return
        by_thread: dict[str, set[str]] = defaultdict(set)
        for ref in checkpoints:
            by_thread[ref.thread_id].add(ref.checkpoint_id)
        doomed = {ref.checkpoint for ref in checkpoints}
        keys = [key for ref in checkpoints for key in (ref.key, ref.registry_key)]
        for thread_id, checkpoint_ids in by_thread.items():
            for chunk in _chunks(sorted(checkpoint_ids)):
                where = (Tag("thread_id") == thread_id) & (Tag("checkpoint_id") == chunk)
                writes = yield from search_plan("writes", where)
                keys.extend(w.key for w in writes if w.checkpoint in doomed)
        yield Batch(tuple(_cmd("delete", key) for key in keys))
        for thread_id, ns in {(ref.thread_id, ref.checkpoint_ns) for ref in checkpoints}:
            yield from self._refresh_latest_plan(thread_id, ns)

    def _refresh_latest_plan(self, thread_id: str, checkpoint_ns: str) -> Plan[None]:
        """Point the namespace's latest pointer at its newest checkpoint, or drop it."""
        newest = FilterQuery(
            filter_expression=(Tag("thread_id") == thread_id)
            & (Tag("checkpoint_ns") == checkpoint_ns),
            return_fields=["checkpoint_id"],
            num_results=1,
            sort_by=("checkpoint_id", "DESC"),
        )
        docs = (yield Query("checkpoints", newest)).docs
        # Upstream has no public way to name the pointer key.
        pointer = self._make_redis_checkpoint_latest_key(thread_id, checkpoint_ns)
        if not docs:
            yield Batch((_cmd("delete", pointer),))
            return
        commands = [_cmd("set", pointer, safely_decode(docs[0].id))]
        if self._tm_ttl is not None:
            commands.append(_cmd("expire", pointer, int(self._tm_ttl)))
        yield Batch(tuple(commands))
