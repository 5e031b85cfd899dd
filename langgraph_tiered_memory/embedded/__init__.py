"""Private, throw-away servers started from PyPI wheels: Redis with modules, FalkorDB.

`EmbeddedRedis` (RediSearch + RedisJSON) serves the session savers and the store in tests,
notebooks and the demo; `redis_url_or_embedded` returns `REDIS_URL` or starts one.
`EmbeddedFalkorDB` serves the FalkorDB graph backend.
"""

from langgraph_tiered_memory.embedded.falkordb import EmbeddedFalkorDB, EmbeddedFalkorDBError
from langgraph_tiered_memory.embedded.redis import (
    EmbeddedRedis,
    EmbeddedRedisError,
    redis_url_or_embedded,
)

__all__ = [
    "EmbeddedFalkorDB",
    "EmbeddedFalkorDBError",
    "EmbeddedRedis",
    "EmbeddedRedisError",
    "redis_url_or_embedded",
]
