"""The Redis channel layer keeps an idle consumer alive (REDIS_URL only)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.layers import get_channel_layer


@pytest.mark.slow
@pytest.mark.redis
def test_a_receive_idle_longer_than_the_blocking_pop_still_gets_the_next_message():
    layer = get_channel_layer()

    async def scenario():
        channel = await layer.new_channel()
        waiting = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(6.5)  # past channels-redis's 5 s blocking pop and redis-py's read
        assert not waiting.done(), waiting.exception() if waiting.done() else None
        await layer.send(channel, {"type": "chat.changed"})
        message = await asyncio.wait_for(waiting, timeout=5)
        return message

    # A thread of its own: a browser test's Playwright may hold this thread's event loop.
    with ThreadPoolExecutor(max_workers=1) as thread:
        assert thread.submit(asyncio.run, scenario()).result() == {"type": "chat.changed"}
