"""The channel layer of live chats, and what this process knows of its outages.

channels-redis raises from ``receive`` while Redis is unreachable, and channels then ends the
consumer: before this module, a Redis outage closed every chat socket of the process. Here the
layer's ``receive`` waits and tries again instead, so the sockets stay open through an outage:
frames are still stored (the database is not Redis), heartbeats still reach the database, and
each consumer reads its own state until the layer is back (``chat.consumers``).

Every layer error is noted (``layer_error``); ``layer_troubled`` tells the partner check that
a silence may be the platform's fault, not the worker's (docs/chat.md, "When the platform
fails"). The pool is redis-py's blocking pool, sized from the settings: a burst of closing
sockets waits for a connection instead of failing ("Too many connections").
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from channels_redis.core import RedisChannelLayer
from redis import asyncio as aioredis
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# What a layer call raises when Redis is down, refuses, or is too slow.
LAYER_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, asyncio.TimeoutError)
# An outage counts as over once no error was seen for this long.
CLEAR_AFTER_S = 15.0
RETRY_MAX_S = 5.0

_lock = threading.Lock()
_outage_started = 0.0  # time.time() of the first error of the current (or last) outage
_last_error = 0.0  # time.time() of the last layer error seen in this process
_errors_logged = 0.0


def layer_error(exc: BaseException, *, where: str) -> None:
    """Note a failed channel-layer call (and log it, at most once every 10 s)."""
    global _outage_started, _last_error, _errors_logged
    now = time.time()
    with _lock:
        if now - _last_error > CLEAR_AFTER_S:
            _outage_started = now
        _last_error = now
        loud = now - _errors_logged > 10
        if loud:
            _errors_logged = now
    if loud:
        logger.warning("channel layer failed (%s): %s: %s", where, type(exc).__name__, exc)


def layer_troubled(*, now: float | None = None, within_s: float = CLEAR_AFTER_S) -> bool:
    """Tell whether this process saw a channel-layer error in the last ``within_s`` seconds."""
    return (now or time.time()) - _last_error <= within_s


def outage_seconds(*, now: float | None = None) -> float:
    """Return how long the current outage has lasted (0 when there is none)."""
    now = now or time.time()
    if not layer_troubled(now=now):
        return 0.0
    return now - _outage_started


def layer_forget() -> None:
    """Forget the outages seen (for tests)."""
    global _outage_started, _last_error
    with _lock:
        _outage_started = _last_error = 0.0


class ChatRedisChannelLayer(RedisChannelLayer):
    """channels-redis's layer whose ``receive`` outlasts an outage, with a bounded pool.

    Extra config (``settings.CHANNEL_LAYERS``): ``pool_max`` connections per event loop (one
    per process in the web server) and ``pool_timeout_s``, how long a call waits for one.
    """

    def __init__(self, *args: Any, pool_max: int = 50, pool_timeout_s: float = 5.0, **kw: Any):
        super().__init__(*args, **kw)
        self.pool_max = pool_max
        self.pool_timeout_s = pool_timeout_s

    def create_pool(self, index: int) -> aioredis.ConnectionPool:
        host = dict(self.hosts[index])
        address = host.pop("address")
        return aioredis.BlockingConnectionPool.from_url(
            address, max_connections=self.pool_max, timeout=self.pool_timeout_s, **host
        )

    async def receive(self, channel: str) -> dict[str, Any]:
        delay = 0.5
        while True:
            try:
                return await super().receive(channel)
            except LAYER_ERRORS as exc:
                layer_error(exc, where="receive")
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)
