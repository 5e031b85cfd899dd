"""Planning of a batch of store operations (pure: no I/O, no embedding).

A batch is planned first: every op is validated, puts are de-duplicated (last write
wins), the texts to embed and the queries are collected. Only then does the store
embed (sync or async) and execute the plan against the tiers. A bad op therefore
fails the whole batch before anything is written.

Everything planning needs of the store is in a `PlanConfig`, so a plan depends only
on the ops and that config. With a redactor, every put value is redacted here, before
anything reads it (memory fields, keyword text, texts to embed, the stored JSON), so
the sync and async stores share it and no raw value reaches a tier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)

from langgraph_tiered_memory.config import TierName
from langgraph_tiered_memory.errors import InvalidFilterError, InvalidItemError
from langgraph_tiered_memory.memory import memory_fields
from langgraph_tiered_memory.privacy.redaction import REDACTIONS_FIELD, Redactor, redact_value
from langgraph_tiered_memory.ranking.scoring import split_search_options
from langgraph_tiered_memory.store._validate import (
    SURROGATE_FIX,
    check_labels,
    check_search_text,
    check_value,
    encode_value,
    find_bad_text,
    validate_key,
    validate_namespace,
    validate_ttl,
)
from langgraph_tiered_memory.store.tiers._filters import validate_filter
from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace

__all__ = [
    "Plan",
    "PlanConfig",
    "PlannedSearch",
    "check_search_input",
    "index_texts",
    "keep_expiries",
    "keyword_text",
    "plan",
]


@dataclass(frozen=True, slots=True)
class PlanConfig:
    """What planning needs to know of the store."""

    tier_for: Callable[[Namespace], TierName]
    """The routing policy: which tier stores a namespace."""
    memory_mode: bool = False
    """Long-term items are memories (memory fields, keyword text, search options)."""
    indexed: bool = False
    """The store has an index: item texts and queries are embedded."""
    fields: Sequence[tuple[str, Any]] = ()
    """The index's default field paths, each with its tokenized form."""
    allow_non_finite_filters: bool = False
    redactor: Redactor | None = None
    """Applied to every put value before it is stored (None: values are kept as given)."""


PlannedSearch = tuple[int, SearchOp, dict[str, Any], dict[str, Any] | None]
"""(position in the batch, op, search options, value filter without the options)."""


class Plan(NamedTuple):
    """A validated batch, ready to embed and execute."""

    size: int
    gets: list[tuple[int, GetOp]]
    searches: list[PlannedSearch]
    lists: list[tuple[int, ListNamespacesOp]]
    writes: list[ItemWrite]
    texts: list[str]
    """Unique texts to embed for the writes."""
    slots: list[list[int]]
    """For each write, the indexes of its texts in `texts`."""
    queries: list[str]
    """Unique search queries to embed."""


def index_texts(
    value: Mapping[str, Any], index: list[str] | None, fields: Sequence[tuple[str, Any]]
) -> list[str]:
    """The texts of `value` to embed: at the item's `index` paths, else at `fields`."""
    paths = fields if index is None else [(p, p if p == "$" else tokenize_path(p)) for p in index]
    out: list[str] = []
    for _, field in paths:
        out.extend(get_text_at_path(value, field))
    return out


def keyword_text(cfg: PlanConfig, value: Mapping[str, Any], index: list[str] | None) -> str:
    """The text a memory is keyword-indexed by: its indexed texts, else its `content`."""
    if cfg.indexed:
        return "\n".join(index_texts(value, index, cfg.fields))
    content = value.get("content")
    return content if isinstance(content, str) else ""


def check_search_input(prefix: Sequence[str], query: Any, filter: Any, user_id: Any = None) -> None:
    """Refuse text no backend or model can take, before a search embeds its query.

    Raises:
        InvalidNamespaceError: a prefix label is not UTF-8 encodable.
        InvalidFilterError: the query, filter or user id is not UTF-8 encodable.
    """
    check_labels(prefix, "Namespace prefix")
    check_search_text(query, filter)
    if user_id is not None:
        check_search_text(None, {"$user": user_id})


def _check_search(cfg: PlanConfig, i: int, op: SearchOp) -> PlannedSearch:
    check_search_input(op.namespace_prefix, op.query, op.filter)
    options, value_filter = split_search_options(op.filter)
    validate_filter(value_filter, allow_non_finite=cfg.allow_non_finite_filters)
    if options and not cfg.memory_mode:
        raise InvalidFilterError(
            f"Search options {sorted(options)} need scoring={{'mode': 'memory'}};"
            " this store scores by similarity. Remove them from the filter."
        )
    if op.limit < 0 or op.offset < 0:
        raise ValueError(
            f"search limit and offset must be >= 0, got limit={op.limit}, offset={op.offset}."
        )
    return i, op, options, value_filter


_Put = tuple[PutOp, str | None, Any]
"""A checked put: the op, its value as JSON (None for a delete), its memory fields."""


def _redacted(
    redactor: Redactor, ns: Namespace, key: str, value: Mapping[str, Any]
) -> dict[str, Any]:
    """The value with its strings redacted and `redactions` counting what was found.

    The counts add to those of a stored value put again; key and namespace are kept.
    """
    report = value.get(REDACTIONS_FIELD)
    if report is not None and not (
        isinstance(report, Mapping)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in report.values())
    ):
        raise InvalidItemError(
            f"Value of item {key!r} in {ns} has a field {REDACTIONS_FIELD!r} that is not a"
            f" redaction report: the field is reserved for the counts the store's redactor"
            f" reports ({{'email': 1, ...}}). Rename the field."
        )
    redacted, counts = redact_value(value, redactor)
    if counts:
        merged = dict(report or {})
        for kind, n in counts.items():
            merged[kind] = merged.get(kind, 0) + n
        redacted[REDACTIONS_FIELD] = merged
    return redacted


def _check_put(cfg: PlanConfig, op: PutOp) -> tuple[Namespace, str, _Put]:
    ns = validate_namespace(op.namespace)
    key = validate_key(op.key)
    # Depth and text first: later steps recurse into the value.
    if op.value is not None:
        check_value(ns, key, op.value)
        if cfg.redactor is not None:
            op = op._replace(value=_redacted(cfg.redactor, ns, key, op.value))
    fields = None
    if isinstance(op.value, Mapping) and cfg.memory_mode and cfg.tier_for(ns) == "long":
        fields = memory_fields(dict(op.value), key=key)  # before encoding
    encoded = None if op.value is None else encode_value(ns, key, op.value, checked=True)
    validate_ttl(op.ttl)
    if op.index not in (None, False) and not (
        isinstance(op.index, list) and all(isinstance(p, str) for p in op.index)
    ):
        raise InvalidItemError(
            f"index for item {key!r} must be False, None or a list of field paths,"
            f" got {op.index!r}."
        )
    bad_path = find_bad_text(op.index, max_depth=1, str_keys=False) if op.index else None
    if bad_path is not None:
        raise InvalidItemError(
            f"index of item {key!r} in {ns} cannot be used: {bad_path[1]} cannot"
            f" be encoded as UTF-8. {SURROGATE_FIX}"
        )
    return ns, key, (op, encoded, fields)


def _writes(
    cfg: PlanConfig, puts: Mapping[tuple[Namespace, str], _Put]
) -> tuple[list[ItemWrite], list[str], list[list[int]]]:
    """The writes of checked puts, the unique texts to embed and each write's slots."""
    writes: list[ItemWrite] = []
    texts: dict[str, int] = {}
    slots: list[list[int]] = []
    for (ns, key), (op, encoded, fields) in puts.items():
        write = ItemWrite(
            namespace=ns,
            key=key,
            value=None if op.value is None else dict(op.value),
            encoded=encoded,
            ttl=op.ttl,
        )
        # The texts to embed, read from the value once (the keyword text joins them).
        embedded = (
            index_texts(op.value, op.index, cfg.fields)
            if op.value is not None and cfg.indexed and op.index is not False
            else None
        )
        if fields is not None and op.value is not None:
            write.memory = fields
            if op.index is False:
                write.keyword_text = ""
            elif embedded is not None:
                write.keyword_text = "\n".join(embedded)
            else:
                write.keyword_text = keyword_text(cfg, op.value, op.index)
        writes.append(write)
        slots.append([texts.setdefault(text, len(texts)) for text in embedded or ()])
    return writes, list(texts), slots


def plan(ops: Iterable[Op], cfg: PlanConfig) -> Plan:
    """Validate a batch and collect what it reads, writes and embeds.

    Raises:
        ValueError: an unknown op, or a negative search limit or offset.
        InvalidItemError, InvalidNamespaceError, InvalidFilterError: a bad op; nothing
            of the batch may run.
    """
    gets: list[tuple[int, GetOp]] = []
    searches: list[PlannedSearch] = []
    lists: list[tuple[int, ListNamespacesOp]] = []
    puts: dict[tuple[Namespace, str], _Put] = {}
    size = 0
    for i, op in enumerate(ops):
        size += 1
        if isinstance(op, GetOp):
            check_labels(op.namespace)
            validate_key(op.key)
            gets.append((i, op))
        elif isinstance(op, SearchOp):
            searches.append(_check_search(cfg, i, op))
        elif isinstance(op, ListNamespacesOp):
            for cond in op.match_conditions or ():
                check_labels(cond.path, f"Namespace {cond.match_type}")
            lists.append((i, op))
        elif isinstance(op, PutOp):
            ns, key, put = _check_put(cfg, op)
            puts.pop((ns, key), None)  # keep the position of the last write
            puts[(ns, key)] = put
        else:
            raise ValueError(
                f"Unknown operation type {type(op).__name__}; expected GetOp, PutOp,"
                " SearchOp or ListNamespacesOp."
            )
    writes, texts, slots = _writes(cfg, puts)
    queries = (
        list(dict.fromkeys(op.query for _, op, _, _ in searches if op.query)) if cfg.indexed else []
    )
    return Plan(size, gets, searches, lists, writes, texts, slots, queries)


def keep_expiries(plan: Plan, keep: Mapping[tuple[Namespace, str], Any] | None) -> None:
    """Give rewrites of stored items the TTL and expiry those items have now.

    Maintenance and reinforcement rewrite memories; a rewrite is not a new write, so a
    TTL memory keeps its expiry (and a memory without a TTL keeps none). `keep` maps
    (namespace, key) to the stored item (anything with `ttl` and `expires_at`).
    """
    if not keep:
        return
    for w in plan.writes:
        item = keep.get((w.namespace, w.key))
        if item is not None and w.value is not None:
            w.ttl, w.expires_at = item.ttl, item.expires_at
