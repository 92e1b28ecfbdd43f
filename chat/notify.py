"""Channel-layer groups of live chats: one group per seat, whatever socket the worker has.

Services never send to sockets themselves: they return the seats whose view changed, and the
consumer (or the Celery task of a bot turn) tells those seats' groups. A consumer that hears
``chat.changed`` reads the state from the database and sends it, so every frame a browser
gets reflects what is stored.

A failed send is noted and dropped, never raised: what changed is stored, and while the layer
is troubled each consumer reads its own state every tick (``chat.layer``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from chat.layer import LAYER_ERRORS, layer_error

NOTIFY_TIMEOUT_S = 10.0
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def seat_group(seat_id: int) -> str:
    """Return the group name of a seat's websocket(s)."""
    return f"chat.seat.{seat_id}"


def changed_event(**extra: Any) -> dict[str, Any]:
    """Return the event that makes a seat's consumer send its state again."""
    return {"type": "chat.changed", **extra}


async def _group_send(seat_id: int, event: dict[str, Any]) -> bool:
    """Send ``event`` to the seat's group; return False if the layer failed (noted)."""
    layer = get_channel_layer()
    if layer is None:
        return True
    try:
        await layer.group_send(seat_group(seat_id), event)
    except LAYER_ERRORS as exc:
        layer_error(exc, where="group_send")
        return False
    return True


async def seats_notify_async(seat_ids: Iterable[int], **extra: Any) -> bool:
    """Tell the seats' consumers that their state changed (from async code); return False if
    the layer failed (noted, not raised)."""
    for seat_id in dict.fromkeys(seat_ids):
        if not await _group_send(seat_id, changed_event(**extra)):
            return False
    return True


async def seat_partial_async(seat_id: int, partial: dict[str, Any]) -> bool:
    """Send a bot reply's text so far to the seat's sockets (no database read: a partial is
    shown, never stored); return False if the layer failed (noted, not raised)."""
    return await _group_send(seat_id, {"type": "chat.partial", **partial})


def _in_memory_send(send_async: Callable[..., Awaitable[bool]], *args: Any, **kwargs: Any) -> bool:
    """Run a send on the in-memory layer, which lives on the web process's own loop."""
    send = async_to_sync(send_async)
    if _loop_running():  # e.g. a command called from async code: send from a helper thread
        with ThreadPoolExecutor(max_workers=1) as helper:
            return helper.submit(send, *args, **kwargs).result(timeout=NOTIFY_TIMEOUT_S)
    return send(*args, **kwargs)


def seat_partial(seat_id: int, partial: dict[str, Any]) -> None:
    """Send a bot reply's text so far to the seat (from sync code: the bot turn's task),
    without waiting for a network layer: generation never waits on a partial.

    Partials carry the whole text so far and a sequence number, so one lost or overtaken
    on the way changes nothing but how soon the worker sees the text; the stored turn,
    sent as state when the reply is complete, is what counts.
    """
    if isinstance(get_channel_layer(), InMemoryChannelLayer):
        _in_memory_send(seat_partial_async, seat_id, partial)
        return
    asyncio.run_coroutine_threadsafe(seat_partial_async(seat_id, partial), _sender())


def seats_notify(seat_ids: Iterable[int], **extra: Any) -> bool:
    """Tell the seats' consumers that their state changed (from sync code: tasks, services);
    return False if the layer failed or did not answer in time (noted, not raised).

    A network layer (Redis) is driven from one long-lived event loop of this process, so its
    connections are reused between calls (a bot turn's task would otherwise open one per
    turn). The in-memory layer lives on the web process's own loop, so it is called there.
    """
    seat_ids = list(seat_ids)
    if not seat_ids:
        return True
    if isinstance(get_channel_layer(), InMemoryChannelLayer):
        return _in_memory_send(seats_notify_async, seat_ids, **extra)
    future = asyncio.run_coroutine_threadsafe(seats_notify_async(seat_ids, **extra), _sender())
    try:
        return future.result(timeout=NOTIFY_TIMEOUT_S)
    except TimeoutError as exc:  # redis-py still retrying: give up; the consumers poll
        future.cancel()
        layer_error(exc, where="group_send")
        return False


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _sender() -> asyncio.AbstractEventLoop:
    """Return this process's event loop for channel-layer sends, started on first use."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="chat-notify", daemon=True).start()
        return _loop
