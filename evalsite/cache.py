"""One Redis connection pool per process for Django's cache (settings ``CACHES``).

Django keeps a cache object per request context. Under ASGI each request is a new context, so
each request built a new ``RedisCache``, which built a new connection pool, which opened a new
TCP connection to Redis for the request's first counter (the rate limits,
``annotation.ratelimits``), with its handshake (and redis-py's look-up of its own version
among the installed packages), and left it for the garbage collector. On one machine's
``bench/load.py`` the throughput change was within its noise; across a network each
connection also costs round trips. ``SharedConnectionPool`` is the ``pool_class`` of the
cache's options: every cache object of the process gets the same pool for the same server,
and redis-py's pool is thread-safe and reopens itself in a forked child.
"""

from __future__ import annotations

import threading
from typing import Any

import redis

_pools: dict[tuple[str, str], redis.ConnectionPool] = {}
_lock = threading.Lock()


class SharedConnectionPool(redis.ConnectionPool):
    """A ``redis.ConnectionPool`` whose ``from_url`` returns the process's pool for that URL
    and those options, made on first use."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SharedConnectionPool:  # type: ignore[override]
        key = (url, repr(sorted(options.items())))
        with _lock:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = super().from_url(url, **options)
        return pool  # type: ignore[return-value]
