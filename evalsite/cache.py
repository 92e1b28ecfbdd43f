"""Django's cache on Redis: one connection pool per process, and requests that outlive Redis.

**One pool.** Django keeps a cache object per request context. Under ASGI each request is a
new context, so each request built a new ``RedisCache``, which built a new connection pool,
which opened a new TCP connection to Redis for the request's first counter (the rate limits,
``annotation.ratelimits``), with its handshake (and redis-py's look-up of its own version
among the installed packages), and left it for the garbage collector. On one machine's
``bench/load.py`` the throughput change was within its noise; across a network each
connection also costs round trips. ``SharedConnectionPool`` is the ``pool_class`` of the
cache's options: every cache object of the process gets the same pool for the same server,
and redis-py's pool is thread-safe and reopens itself in a forked child.

**Outages.** The cache holds nothing a request cannot do without: rate-limit counters, the
dashboard's item counts, the adaptive plan's copy, "queued once" marks. When Redis is down
(issue #35: a 160 s outage answered 6,324 task pages 500), ``OutageTolerantRedisCache`` serves
every call from this process's memory instead: a ``LocMemCache`` of at most
``FALLBACK_KEYS`` keys, least recently used dropped first. So the rate limits still count,
per process rather than site-wide (fail open, but bounded), and reads of what Redis held miss.
After a Redis error the cache skips Redis for ``BREAKER_SECONDS`` (a circuit breaker), so
thousands of requests do not each wait for a connection to fail; the short socket timeouts in
settings ``CACHES`` bound the one that does. The outage is logged once when it starts and once
when Redis answers again, not per request.

**Counters in one round trip.** ``counts_add`` adds one to several counters that expire
(the rate limits' address and worker counters of a request): on Redis one ``EVALSHA`` of a Lua
script (``COUNT_SCRIPT``: ``INCR`` each key, ``EXPIRE`` it on its first count), where
Django's ``add`` and ``incr`` cost three commands a counter (``SET NX``, ``EXISTS``,
``INCRBY``); while Redis is down, from the process's memory as every other call; on any other
cache (tests' ``LocMemCache``) through the cache's own ``add`` and ``incr``.
A call may also read one integer in the same round trip (``counts_add_reading``: the
campaigns' version, ``annotation.campaign_cache``), set to a given value where Redis has none.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

FALLBACK_KEYS = 10_000  # keys this process keeps while Redis is down
BREAKER_SECONDS = 5.0  # how long a process leaves Redis alone after an error

# ARGV[1]: n, the counters; KEYS[1..n]: the counters, ARGV[1 + i]: the seconds KEYS[i] lives
# from its first count. Atomic, as every script: a counter never exists without its expiry.
# KEYS[n + 1], when given: a value read in the same round trip (set to ARGV[n + 2] if it has
# none), returned after the counts.
COUNT_SCRIPT = """
local n = tonumber(ARGV[1])
local result = {}
for i = 1, n do
  result[i] = redis.call('INCR', KEYS[i])
  if result[i] == 1 then redis.call('EXPIRE', KEYS[i], ARGV[i + 1]) end
end
if #KEYS > n then
  local value = redis.call('GET', KEYS[n + 1])
  if not value then
    value = ARGV[n + 2]
    redis.call('SET', KEYS[n + 1], value)
  end
  result[n + 1] = value
end
return result
"""

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


class Breaker:
    """Whether a server is to be skipped: open for ``BREAKER_SECONDS`` after each failure.

    One per server and process (``breaker_of``), shared by its cache objects and threads.
    """

    def __init__(self, server: str) -> None:
        self.server = server
        self.open_until = 0.0
        self.down = False  # in an outage: logged when it began, not yet when it ended
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        return time.monotonic() < self.open_until

    def trip(self, exc: BaseException) -> None:
        """Note a failure: skip the server for a while; log the outage's start once."""
        with self._lock:
            self.open_until = time.monotonic() + BREAKER_SECONDS
            began, self.down = not self.down, True
        if began:
            logger.warning(
                "Redis cache %s unavailable (%s); serving the cache from this process's "
                "memory, rate limits counted per process, until it answers again",
                self.server,
                exc,
            )

    def close(self) -> None:
        """Note a success: log the outage's end once."""
        if not self.down:
            return
        with self._lock:
            ended, self.down = self.down, False
        if ended:
            logger.warning("Redis cache %s answers again", self.server)


_breakers: dict[str, Breaker] = {}


def breaker_of(server: str) -> Breaker:
    """Return the process's breaker for ``server``."""
    with _lock:
        return _breakers.setdefault(server, Breaker(server))


class OutageTolerantRedisCache(RedisCache):
    """Django's ``RedisCache`` that serves each call from a bounded per-process ``LocMemCache``
    while Redis fails (see the module's docstring); never raises a ``RedisError``."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self.breaker = breaker_of(server)
        # LocMemCache keeps its data per name, so every cache object of the process shares it.
        self.fallback = LocMemCache(
            f"evalsite-redis-fallback:{server}",
            {
                "KEY_PREFIX": params.get("KEY_PREFIX", ""),
                "OPTIONS": {"MAX_ENTRIES": FALLBACK_KEYS, "CULL_FREQUENCY": 10},
            },
        )

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if not self.breaker.is_open():
            try:
                result = getattr(super(), method)(*args, **kwargs)
            except RedisError as exc:
                self.breaker.trip(exc)
            else:
                self.breaker.close()
                return result
        return getattr(self.fallback, method)(*args, **kwargs)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call("add", key, value, timeout, version)

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._call("get", key, default, version)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call("set", key, value, timeout, version)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call("touch", key, timeout, version)

    def delete(self, key: Any, version: Any = None) -> Any:
        return self._call("delete", key, version)

    def get_many(self, keys: Any, version: Any = None) -> Any:
        return self._call("get_many", keys, version)

    def has_key(self, key: Any, version: Any = None) -> Any:
        return self._call("has_key", key, version)

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> Any:
        return self._call("incr", key, delta, version)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call("set_many", data, timeout, version)

    def delete_many(self, keys: Any, version: Any = None) -> Any:
        return self._call("delete_many", keys, version)

    def clear(self) -> Any:
        return self._call("clear")

    def counts_add(
        self, timeouts: dict[str, int], read: str | None = None, initial: int = 0
    ) -> tuple[list[int], int | None]:
        """Add one to each counter of ``timeouts`` (key → the seconds it lives from its first
        count); return the counts, in that order, and the integer at ``read`` (set to
        ``initial`` where it has none). One round trip to Redis (``COUNT_SCRIPT``); while
        Redis is down, the counts from this process's memory and None for ``read``."""
        if not self.breaker.is_open():
            try:
                counts = self._counts_in_redis(timeouts, read, initial)
            except RedisError as exc:
                self.breaker.trip(exc)
            else:
                self.breaker.close()
                if read is None:
                    return counts, None
                return counts[:-1], counts[-1]
        counts = [count_add(self.fallback, key, timeout) for key, timeout in timeouts.items()]
        return counts, None

    def _counts_in_redis(
        self, timeouts: dict[str, int], read: str | None, initial: int
    ) -> list[int]:
        keys = [self.make_and_validate_key(key) for key in timeouts]
        args: list[int] = [len(keys), *timeouts.values()]
        if read is not None:
            keys.append(self.make_and_validate_key(read))
            args.append(initial)
        client = self._cache.get_client(keys[0], write=True)  # type: ignore[attr-defined]
        counts = _count_script(client)(keys=keys, args=args, client=client)
        return [int(n) for n in counts]


_scripts: dict[str, Any] = {}


def _count_script(client: redis.Redis) -> Any:
    """Return the process's ``COUNT_SCRIPT``: redis-py sends it by its SHA1 (``EVALSHA``), and
    loads it once more when a server does not know it (a restart, another server)."""
    script = _scripts.get("count")
    if script is None:
        script = _scripts["count"] = client.register_script(COUNT_SCRIPT)
    return script


def count_add(cache: BaseCache, key: str, timeout: int) -> int:
    """Add one to a counter of ``cache`` that lives ``timeout`` seconds from its first count;
    return the count. Through the cache's own ``add`` and ``incr`` (two calls)."""
    cache.add(key, 0, timeout=timeout)
    try:
        return int(cache.incr(key))
    except ValueError:  # evicted between add and incr: this one alone counts
        cache.set(key, 1, timeout=timeout)
        return 1


def counts_add(cache: BaseCache, timeouts: dict[str, int]) -> list[int]:
    """Add one to each counter of ``timeouts`` (key → the seconds it lives from its first
    count) in ``cache``; return the counts. One round trip on ``OutageTolerantRedisCache``."""
    return counts_add_reading(cache, timeouts)[0]


def counts_add_reading(
    cache: BaseCache, timeouts: dict[str, int], read: str | None = None, initial: int = 0
) -> tuple[list[int], int | None]:
    """``counts_add``, and read the integer at ``read`` in the same round trip (set to
    ``initial`` where it has none): None when ``cache`` is not Redis or Redis is down, for
    what such a cache holds is this process's alone."""
    if isinstance(cache, OutageTolerantRedisCache):
        if not timeouts and read is None:
            return [], None
        return cache.counts_add(timeouts, read, initial)
    return [count_add(cache, key, timeout) for key, timeout in timeouts.items()], None
