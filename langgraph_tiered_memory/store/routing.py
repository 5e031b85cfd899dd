"""Routing of namespaces to tiers (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph_tiered_memory.config import DEFAULT_TIER_POLICY, TierName, TierPolicy
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store.tiers._items import Namespace
from langgraph_tiered_memory.store.tiers._namespaces import has_prefix

__all__ = ["TierRouter"]


class TierRouter:
    """Maps namespaces and search prefixes to tiers according to a `TierPolicy`."""

    def __init__(self, policy: TierPolicy | None) -> None:
        policy = DEFAULT_TIER_POLICY if policy is None else policy
        if not isinstance(policy, dict):
            raise ConfigurationError(
                f"tiers must be a dict such as {{'default': 'long'}}, got {policy!r}."
            )
        unknown = set(policy) - {"default", "short", "long"}
        if unknown:
            raise ConfigurationError(
                f"Unknown keys {sorted(unknown)} in tiers; use 'default', 'short' and 'long'."
            )
        default = policy.get("default", "long")
        if default not in ("short", "long"):
            raise ConfigurationError(
                f"tiers['default'] must be 'short' or 'long', got {default!r}."
            )
        self.default: TierName = default
        rules: dict[Namespace, TierName] = {}
        tier: TierName
        for tier in ("short", "long"):
            entries: list[Any] = list(policy.get(tier) or [])
            for entry in entries:
                prefix: Namespace = (entry,) if isinstance(entry, str) else tuple(entry)
                if not prefix or not all(isinstance(p, str) and p for p in prefix):
                    raise ConfigurationError(
                        f"tiers[{tier!r}] holds {prefix!r}; each entry must be a non-empty"
                        " tuple of non-empty strings, e.g. ('short_term',)."
                    )
                if rules.get(prefix, tier) != tier:
                    raise ConfigurationError(
                        f"Namespace prefix {prefix} is listed under both 'short' and 'long'"
                        " in tiers; keep it under one."
                    )
                rules[prefix] = tier
        # Longest prefix first so the first match is the most specific.
        self._rules = sorted(rules.items(), key=lambda kv: -len(kv[0]))

    @property
    def used_tiers(self) -> set[TierName]:
        """Tiers that some namespace can be routed to."""
        return {self.default, *(t for _, t in self._rules)}

    def tier_for(self, namespace: Namespace) -> TierName:
        """The tier that stores `namespace`."""
        for prefix, tier in self._rules:
            if has_prefix(namespace, prefix):
                return tier
        return self.default

    def tiers_for_prefix(self, prefix: Sequence[str]) -> list[TierName]:
        """Tiers that may hold namespaces starting with `prefix`, long tier first."""
        prefix = tuple(prefix)
        found = {self.tier_for(prefix)} if prefix else {self.default}
        for rule, tier in self._rules:
            if has_prefix(rule, prefix):
                found.add(tier)
        return [t for t in ("long", "short") if t in found]
