"""The Redis cache (the rate limits' counters) shares one connection pool per process.

Django makes a cache object per request context, and under ASGI each request is a context of
its own: with redis-py's stock pool each request opened a new TCP connection to Redis.
"""

from __future__ import annotations

import os
import threading

import pytest
import redis
from django.core.cache.backends.redis import RedisCache

from evalsite.cache import SharedConnectionPool

URL = os.environ.get("REDIS_URL", "")
OPTIONS = {"socket_connect_timeout": 1, "socket_timeout": 1}

pytestmark = pytest.mark.redis


@pytest.fixture
def server() -> redis.Redis:
    return redis.Redis.from_url(URL, socket_connect_timeout=1)


def connections_opened(server: redis.Redis, pool_class: str | None, requests: int) -> int:
    """Connections Redis accepted while ``requests`` request contexts (a thread each, as the
    ASGI handler gives them) each made their own cache object and counted one hit."""
    before = server.info("stats")["total_connections_received"]
    options = OPTIONS | ({"pool_class": pool_class} if pool_class else {})

    def request(n: int) -> None:
        cache = RedisCache(URL, {"OPTIONS": options, "KEY_PREFIX": "test-cache"})
        cache.add(f"hits-{n % 3}", 0, timeout=5)
        cache.incr(f"hits-{n % 3}")

    for n in range(requests):
        thread = threading.Thread(target=request, args=(n,))
        thread.start()
        thread.join()
    return server.info("stats")["total_connections_received"] - before


def test_requests_share_one_redis_connection_pool(server: redis.Redis) -> None:
    assert connections_opened(server, "evalsite.cache.SharedConnectionPool", 30) <= 1
    # The hazard it removes: the stock pool opens a connection for every request.
    assert connections_opened(server, None, 30) >= 30


def test_one_pool_per_url_and_options() -> None:
    a = SharedConnectionPool.from_url("redis://127.0.0.1:6379/3", socket_timeout=1)
    assert SharedConnectionPool.from_url("redis://127.0.0.1:6379/3", socket_timeout=1) is a
    assert SharedConnectionPool.from_url("redis://127.0.0.1:6379/4", socket_timeout=1) is not a
    assert SharedConnectionPool.from_url("redis://127.0.0.1:6379/3", socket_timeout=2) is not a
