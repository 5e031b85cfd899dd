"""`tiered-memory bench store --namespaces` on the Redis-backed stores."""

from __future__ import annotations

import pytest
import redis

from tests.unit.test_bench_store import check_cold, check_common, run_namespaces


def test_namespace_mode_measures_redis_stores_and_cleans_up(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)  # a shared server: the run deletes its keys
    data = run_namespaces("--stores", "short,redisstore", "--searches", "4")
    assert data["environment"]["redis"] == "REDIS_URL"
    rows = {row["store"]: row for row in data["results"]}
    assert list(rows) == ["short", "redisstore"]
    for name, row in rows.items():
        # upstream RedisStore.list_namespaces reads only the first 10 items it finds, so
        # it may miss namespaces; the bench reports how many it returned
        check_common(row, lists_all=name != "redisstore")
        check_cold(row)
        memory = row["footprint"]
        assert memory["kind"] == "memory"  # Redis used_memory growth, not disk
        assert memory["bytes_per_item"] > 0
        assert memory["files"] is None
    client = redis.Redis.from_url(redis_url)
    try:
        prefix = f"bench_{data['environment']['run_id']}"
        assert list(client.scan_iter(match=f"{prefix}*", count=1000)) == []
    finally:
        client.close()
