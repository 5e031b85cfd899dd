"""Managed-Redis URLs: TLS (`rediss://`), ACL user and password, and Redis Cluster.

No server is contacted: a client is built from each URL and its connection settings
read back.
"""

from __future__ import annotations

import pytest
import redis

from langgraph_tiered_memory._redis_client import (
    aclient_options,
    bounded_async_class,
    client_budget,
    describe_client,
    is_cluster_url,
    redis_from_url,
)
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store._backends import redis_from_url as store_redis_from_url
from langgraph_tiered_memory.store.tiers.redis_tier import RedisTier

TLS_URL = (
    "rediss://app-user:s%40cr%2Ft@cache.example.com:6380/2"
    "?ssl_cert_reqs=required&ssl_ca_certs=/etc/ssl/ca.pem&ssl_check_hostname=true"
)


def test_tls_url_keeps_user_password_and_ssl_settings() -> None:
    client = redis_from_url(TLS_URL, timeout=7)
    pool = client.connection_pool
    assert issubclass(pool.connection_class, redis.SSLConnection)
    assert client_budget(client) == 7  # the bounded class is the TLS one
    kwargs = pool.connection_kwargs
    assert (kwargs["username"], kwargs["password"]) == ("app-user", "s@cr/t")
    assert (kwargs["host"], kwargs["port"], kwargs["db"]) == ("cache.example.com", 6380, 2)
    assert kwargs["ssl_cert_reqs"] == "required"
    assert kwargs["ssl_ca_certs"] == "/etc/ssl/ca.pem"
    assert kwargs["ssl_check_hostname"] is True
    conn = pool.make_connection()  # not connected: the settings reach the socket layer
    assert (conn.username, conn.password, conn.cert_reqs) == ("app-user", "s@cr/t", 2)
    assert conn.ca_certs == "/etc/ssl/ca.pem" and conn.check_hostname is True
    client.close()


def test_tier_names_the_tls_server_and_user_never_the_password() -> None:
    client = store_redis_from_url(TLS_URL)
    tier = RedisTier(client, key_prefix="tm", owns_client=True)
    assert tier._where == "rediss://app-user@cache.example.com:6380/2"
    assert describe_client(redis_from_url("redis://:pw@h:1/0")) == "redis://h:1/0"
    assert "s@cr/t" not in repr(client) and "s%40cr" not in repr(client)
    tier.close()


def test_cluster_flag_is_read_from_the_query() -> None:
    assert is_cluster_url("redis://h:7000?cluster=true")
    assert is_cluster_url("rediss://u:p@h:7000/0?ssl_cert_reqs=none&cluster=yes")
    assert not is_cluster_url("redis://h:7000/0?cluster=false")
    assert not is_cluster_url("redis://h:7000/0")
    # Without the flag the client is a plain one, and the flag never reaches redis-py.
    assert isinstance(redis_from_url("redis://h:7000/0?cluster=false"), redis.Redis)


def test_a_cluster_url_must_be_tcp_and_its_password_stays_masked() -> None:
    with pytest.raises(ConfigurationError) as info:
        store_redis_from_url("unix://:hunter2@/tmp/r.sock?cluster=true")
    assert "hunter2" not in str(info.value) and "cluster=true" in str(info.value)


def test_async_tls_clients_can_be_bounded() -> None:
    import redis.asyncio as aredis

    url = "rediss://app:pw@cache.example.com:6380/0"
    client = aredis.Redis.from_url(url, **aclient_options(url, 9))
    # redis.asyncio lets the URL's SSL class win over the bounded one passed in ...
    base = client.connection_pool.connection_class
    assert issubclass(base, aredis.SSLConnection)
    # ... so a pool rebuilt from the client bounds that class again.
    bounded = bounded_async_class(base, 9)
    assert issubclass(bounded, aredis.SSLConnection) and bounded.budget == 9  # type: ignore[attr-defined]
    assert bounded_async_class(bounded, 9) is bounded


def test_the_async_saver_pool_keeps_tls_connections_bounded() -> None:
    """`from_url` keeps SSLConnection for rediss://; the saver's queued pool bounds it again."""
    import redis.asyncio as aredis

    from langgraph_tiered_memory._redis_client import _AsyncBoundedConnection, aclient_options
    from langgraph_tiered_memory.checkpoint._session import _queue_async_connections

    url = "rediss://user:secret@localhost:6390/0"
    client = aredis.Redis.from_url(url, **aclient_options(url, 3.0))
    _queue_async_connections(client, 3.0)
    cls = client.connection_pool.connection_class
    assert issubclass(cls, _AsyncBoundedConnection)
    assert issubclass(cls, aredis.SSLConnection)
