"""Erasing whole namespaces (or some keys) from the short tier, for `erase_user`.

A namespace of the short tier lives in these Redis keys (layout in `redis_tier`):

- its items `<prefix>:{<nsid>}:i:<key>`, their vectors `...:v:<key>` and its key set
  `...:z` (the namespace id is a hash: these names hold no label of the namespace);
- its encoded namespace (which holds every label, the user id included) as a member or
  field of the registry and liveness keys `<prefix>:{registry}:ns`, `:live`, `:busy`,
  `:dirty` and `:ver`.

`RedisErase.erase_namespaces` finds every item of each namespace (the key set's members,
expired ones included, and, by one SCAN of the tier's keys, any document or vector
whose key set entry is gone), deletes them with the key set in one transaction per
namespace, and removes the namespace from the registry and liveness keys last, so a
run that stops midway leaves the namespace registered and a second run finds what is
left. A dry run finds the same and deletes nothing.

Not covered: a write to a namespace that runs while it is erased can recreate it;
erase when the user's writes have stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import redis

from langgraph_tiered_memory.store.tiers._items import ItemWrite, Namespace
from langgraph_tiered_memory.store.tiers._namespaces import (
    decode_namespace,
    encode_namespace,
    namespace_id,
)

if TYPE_CHECKING:
    from langgraph_tiered_memory.store.tiers.redis_liveness import Liveness

__all__ = ["ITEMS", "NAMESPACES", "RedisErase", "glob_escape"]

ITEMS = "short.items"
"""Receipt place of the short tier's items: ids are (*namespace, key)."""
NAMESPACES = "short.namespaces"
"""Receipt place of the short tier's registry and liveness entries: ids are (*namespace,)."""

_log = logging.getLogger("langgraph_tiered_memory.store.tiers.redis_erase")
_SCAN_COUNT = 1000
_GLOB_SPECIAL = frozenset("*?[]\\")

Removed = dict[str, list[tuple[str, ...]]]


def glob_escape(text: str) -> str:
    """`text` as a literal inside a Redis SCAN MATCH pattern."""
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in text)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class RedisErase:
    """The erase methods of `RedisTier` (mixed in; uses its client, prefix and liveness)."""

    client: redis.Redis
    prefix: str
    _liveness: Liveness

    if TYPE_CHECKING:

        def write(self, writes: Sequence[ItemWrite], *, now: float) -> None:
            """The tier's write (`RedisTier.write`)."""

    def _erase_errors(self) -> AbstractContextManager[None]:
        """Connection failures as `BackendUnavailableError` (`RedisTier` supplies it)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- finding
    def _known(self) -> set[str]:
        """Encoded namespaces named by the registry or any liveness key."""
        registry, live, busy, dirty, ver = self._liveness.keys
        pipe = self.client.pipeline(transaction=False)
        pipe.zrange(registry, 0, -1)
        pipe.zrange(live, 0, -1)
        pipe.hkeys(busy)
        pipe.smembers(dirty)
        pipe.hkeys(ver)
        return {_text(m) for reply in pipe.execute() for m in reply}

    def user_namespaces(self, rule: Callable[[Namespace], bool] | Any) -> list[Namespace]:
        """Every namespace the tier knows (live or not) that `rule` owns, sorted.

        Args:
            rule: A `UserNamespaces` (its `owns`) or any callable Namespace -> bool.
        """
        owns = rule.owns if hasattr(rule, "owns") else rule
        with self._erase_errors():
            known = self._known()
        return sorted(ns for ns in map(decode_namespace, known) if owns(ns))

    def _scan_items(self, nsids: Mapping[str, Namespace]) -> dict[Namespace, set[str]]:
        """Item keys with a document or vector key in Redis, per namespace of `nsids`."""
        found: dict[Namespace, set[str]] = {}
        if not nsids:
            return found
        head = f"{self.prefix}:{{"
        for raw in self.client.scan_iter(match=glob_escape(head) + "*", count=_SCAN_COUNT):
            name = _text(raw)
            nsid, sep, rest = name[len(head) :].partition("}:")
            ns = nsids.get(nsid)
            if ns is None or not sep or rest[:2] not in ("i:", "v:"):
                continue
            found.setdefault(ns, set()).add(rest[2:])
        return found

    def _find(
        self, namespaces: Iterable[Namespace]
    ) -> tuple[list[Namespace], dict[Namespace, list[str]], set[Namespace]]:
        """(namespaces, their item keys, those named by the registry or liveness keys)."""
        nss = list(dict.fromkeys(tuple(ns) for ns in namespaces))
        if not nss:
            return [], {}, set()
        pipe = self.client.pipeline(transaction=False)
        for ns in nss:
            pipe.zrange(f"{self.prefix}:{{{namespace_id(ns)}}}:z", 0, -1)
        members = pipe.execute()
        scanned = self._scan_items({namespace_id(ns): ns for ns in nss})
        keys = {
            ns: sorted({_text(m) for m in found} | scanned.get(ns, set()))
            for ns, found in zip(nss, members, strict=True)
        }
        known = self._known()
        registered = {ns for ns in nss if encode_namespace(ns) in known}
        return nss, keys, registered

    # ----------------------------------------------------------------- erasing
    def erase_namespaces(
        self, namespaces: Iterable[Namespace], *, dry_run: bool = False
    ) -> Removed:
        """Remove everything the short tier holds for `namespaces` (see the module docstring).

        Args:
            namespaces: The namespaces to erase (unknown ones are skipped).
            dry_run: Find and report only; delete nothing.

        Returns:
            Receipt place -> removed ids: `"short.items"` -> (*namespace, key) of each
            item, `"short.namespaces"` -> (*namespace,) of each namespace that had
            registry or liveness entries. Both places are present, empty when nothing
            was (or would be) removed.
        """
        with self._erase_errors():
            nss, keys, registered = self._find(namespaces)
            out: Removed = {
                ITEMS: [(*ns, k) for ns in nss for k in keys[ns]],
                NAMESPACES: [tuple(ns) for ns in nss if ns in registered],
            }
            if dry_run or not nss:
                return out
            for ns in nss:  # leaf data first: one transaction per namespace (one slot)
                base = f"{self.prefix}:{{{namespace_id(ns)}}}"
                names = [f"{base}:{kind}:{k}" for k in keys[ns] for kind in ("i", "v")]
                pipe = self.client.pipeline(transaction=True)
                for start in range(0, len(names), 1000):
                    pipe.delete(*names[start : start + 1000])
                pipe.delete(f"{base}:z")
                pipe.execute()
            self._unregister([encode_namespace(ns) for ns in nss])
        _log.info(
            "Erased %d short-tier items in %d namespaces.", len(out[ITEMS]), len(out[NAMESPACES])
        )
        return out

    def _unregister(self, encs: Sequence[str]) -> None:
        """Remove namespaces from the registry and every liveness key (last step)."""
        registry, live, busy, dirty, ver = self._liveness.keys
        pipe = self.client.pipeline(transaction=True)  # one slot: the {registry} tag
        for start in range(0, len(encs), 1000):
            chunk = list(encs[start : start + 1000])
            pipe.zrem(registry, *chunk)
            pipe.zrem(live, *chunk)
            pipe.hdel(busy, *chunk)
            pipe.srem(dirty, *chunk)
            pipe.hdel(ver, *chunk)
        pipe.execute()

    def erase_keys(
        self, items: Mapping[Namespace, Sequence[str]], *, dry_run: bool = False
    ) -> Removed:
        """Remove just these items (of shared namespaces); their namespaces stay registered.

        Returns:
            `{"short.items": [(*namespace, key), ...]}`: the items that had a document,
            a vector or a key-set entry.
        """
        pairs = [(tuple(ns), str(k)) for ns, ks in items.items() for k in dict.fromkeys(ks)]
        with self._erase_errors():
            pipe = self.client.pipeline(transaction=False)
            for ns, key in pairs:
                base = f"{self.prefix}:{{{namespace_id(ns)}}}"
                pipe.exists(f"{base}:i:{key}", f"{base}:v:{key}")
                pipe.zscore(f"{base}:z", key)
            replies = pipe.execute() if pairs else []
        present = [
            pair for n, pair in enumerate(pairs) if replies[2 * n] or replies[2 * n + 1] is not None
        ]
        if present and not dry_run:
            # The tier's own delete: keeps the namespace's liveness bound honest.
            self.write([ItemWrite(ns, key, None, None) for ns, key in present], now=0.0)
        return {ITEMS: [(*ns, key) for ns, key in present]}
