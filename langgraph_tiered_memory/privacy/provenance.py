"""Provenance of memories: which users and sessions their content came from (no I/O).

A memory in one of a user's own namespaces (`erasure.UserNamespaces.owns`) is that
user's by where it lives. A memory the library writes anywhere else (a shared
namespace such as ``("memories", "team")``) records where its content came from, so
erasing a user can find it:

    value["provenance"] = {"user_ids": ["u1"], "session_ids": ["thread-7"]}

Both lists are sorted and hold each id once; a key is left out when nothing is known
for it. Extraction, the memory tools, promotion and consolidation write it: an update
or a merge keeps the ids already recorded and adds its own, so a memory merged from two
users' memories names both. Memories written with `store.put` carry what the caller
gives them; `provenance_of` also reads the top-level string fields ``user_id``,
``source_user``, ``session_id`` and ``thread_id`` (the memory agent's turn memories carry
``thread_id``).

```python
from langgraph_tiered_memory.privacy.provenance import names_user, stamp

value = stamp({"content": "The team prefers tea"}, ("shared",), "u1", "t1")
assert value["provenance"] == {"user_ids": ["u1"], "session_ids": ["t1"]}
assert names_user(value, "u1") and names_user(value, "u2", session_ids=["t1"])
assert not names_user(value, "u2")
assert stamp({"content": "mine"}, ("users", "u1"), "u1", "t1") == {"content": "mine"}
```
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph_tiered_memory.privacy.erasure import UserNamespaces

__all__ = [
    "LEGACY_SESSION_FIELDS",
    "LEGACY_USER_FIELDS",
    "PROVENANCE_FIELD",
    "Provenance",
    "from_config",
    "merged_provenance",
    "names_user",
    "needs_provenance",
    "provenance_of",
    "stamp",
]

PROVENANCE_FIELD = "provenance"
"""The value field holding `{"user_ids": [...], "session_ids": [...]}`."""

LEGACY_USER_FIELDS = ("user_id", "source_user")
"""Top-level string fields `provenance_of` reads as user ids too."""

LEGACY_SESSION_FIELDS = ("session_id", "thread_id")
"""Top-level string fields `provenance_of` reads as session (thread) ids too."""


class Provenance(NamedTuple):
    """The users and sessions a memory's content came from."""

    user_ids: frozenset[str]
    session_ids: frozenset[str]

    def to_value(self) -> dict[str, list[str]]:
        """The field's value: sorted lists, empty ones left out."""
        out: dict[str, list[str]] = {}
        if self.user_ids:
            out["user_ids"] = sorted(self.user_ids)
        if self.session_ids:
            out["session_ids"] = sorted(self.session_ids)
        return out


def _strings(found: Any) -> set[str]:
    if isinstance(found, str):
        return {found} if found else set()
    if isinstance(found, (list, tuple)):
        return {x for x in found if isinstance(x, str) and x}
    return set()


def provenance_of(value: Mapping[str, Any] | None) -> Provenance:
    """The users and sessions `value` names (its field and the top-level legacy fields)."""
    if not isinstance(value, Mapping):
        return Provenance(frozenset(), frozenset())
    users: set[str] = set()
    sessions: set[str] = set()
    for name in LEGACY_USER_FIELDS:
        users |= _strings(value.get(name))
    for name in LEGACY_SESSION_FIELDS:
        sessions |= _strings(value.get(name))
    field = value.get(PROVENANCE_FIELD)
    if isinstance(field, Mapping):
        users |= _strings(field.get("user_ids"))
        sessions |= _strings(field.get("session_ids"))
    return Provenance(frozenset(users), frozenset(sessions))


def names_user(
    value: Mapping[str, Any] | None, user_id: str, session_ids: Collection[str] = ()
) -> bool:
    """Whether `value` came (in part) from `user_id` or from one of `session_ids`."""
    found = provenance_of(value)
    return user_id in found.user_ids or not found.session_ids.isdisjoint(session_ids)


def needs_provenance(namespace: Sequence[str], user_id: str | None, session_id: str | None) -> bool:
    """Whether a memory written to `namespace` records provenance.

    Yes when a user or session is known and the namespace is not the user's own by the
    default rule (`UserNamespaces(user_id).owns`: a ``"users"`` scope, ``("memories",
    user_id)`` or ``("profiles", user_id)``).
    """
    if not user_id and not session_id:
        return False
    if not user_id:
        return True
    try:
        return not UserNamespaces(user_id).owns(tuple(namespace))
    except ValueError:  # an id the erasure rule refuses (surrounding spaces): record it
        return True


def merged_provenance(values: Iterable[Mapping[str, Any] | None]) -> dict[str, list[str]]:
    """The field's value naming every user and session any of `values` names."""
    found = [provenance_of(value) for value in values]
    users = frozenset[str]().union(*(f.user_ids for f in found))
    sessions = frozenset[str]().union(*(f.session_ids for f in found))
    return Provenance(users, sessions).to_value()


def stamp(
    value: Mapping[str, Any],
    namespace: Sequence[str],
    user_id: str | None,
    session_id: str | None,
) -> dict[str, Any]:
    """`value` (a copy) recording `user_id` and `session_id` when `needs_provenance`.

    The ids join those `value` already records; nothing changes in the user's own
    namespaces or when neither id is known.
    """
    out = dict(value)
    if not needs_provenance(namespace, user_id, session_id):
        return out
    earlier = provenance_of({PROVENANCE_FIELD: out.get(PROVENANCE_FIELD)})
    out[PROVENANCE_FIELD] = Provenance(
        earlier.user_ids | _strings(user_id), earlier.session_ids | _strings(session_id)
    ).to_value()
    return out


def from_config(config: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """(user id, session id) of a run: `config["configurable"]` ``user_id``, ``thread_id``."""
    configurable = (config or {}).get("configurable") or {}
    if not isinstance(configurable, Mapping):
        return None, None
    user, thread = configurable.get("user_id"), configurable.get("thread_id")
    return (
        user if isinstance(user, str) and user else None,
        thread if isinstance(thread, str) and thread else None,
    )
