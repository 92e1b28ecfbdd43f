"""Channels websocket consumer of live chats (ED collection, interactive SSA).

Thin: authenticate the socket (the page's provider parameters and signed assignment token),
parse each frame, call one service, acknowledge, and tell the seats whose view changed. The
services store before anything is relayed; a seat's consumer answers ``chat.changed`` by
reading the seat's state from the database and sending it. A watchdog closes a socket that
has been silent for two heartbeats and does what time decides (lobby, partner, bot deadline).

A channel-layer failure never ends a socket: a failed group call is noted and tried again on
the next tick, and while the layer is troubled the watchdog sends the seat's state whenever
it changed, read from the database (docs/chat.md, "When the platform fails").
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qsl

from asgiref.sync import SyncToAsync
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import connections
from django.utils import translation
from django.utils.translation import gettext

from annotation.ratelimits import frame_limiter
from chat.frames import Frame, FrameError, error_code, frame_parse
from chat.layer import LAYER_ERRORS, layer_error, layer_troubled
from chat.modes import chat_state, frame_handle, seat_tick
from chat.notify import seat_group, seats_notify_async
from chat.seats import (
    campaign_language,
    seat_connect,
    seat_disconnect,
    seat_for_socket,
    seat_seen,
)
from evalsite.errors import AnnotationError

logger = logging.getLogger(__name__)


def _connections_check() -> None:
    """Close a database connection that is broken or was left inside a transaction."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        stuck = conn.get_autocommit() != conn.settings_dict["AUTOCOMMIT"]
        if stuck or (conn.errors_occurred and not conn.is_usable()):
            conn.close()
        else:
            conn.errors_occurred = False


class _ChatDatabase(SyncToAsync):
    """Run a service call in the shared thread of synchronous code, like channels'
    ``database_sync_to_async``, but keep that thread's database connection between frames
    (checked after every call) instead of opening one per frame: a bot turn passes through
    several frames, and a new PostgreSQL connection each time cost it ~30 ms
    (bench/chat.py). Django's HTTP views keep a connection per request."""

    def thread_handler(self, loop, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return super().thread_handler(loop, *args, **kwargs)
        finally:
            _connections_check()


database_sync_to_async = _ChatDatabase
CLOSE_REFUSED = 4403
CLOSE_SILENT = 4408
CLOSE_REPLACED = 4409


class ChatConsumer(AsyncWebsocketConsumer):
    """One worker's websocket in a live chat."""

    seat_id: int | None = None
    chat_mode: str = ""
    heartbeat_s: float = 10.0
    last_frame: float = 0.0
    watchdog: asyncio.Task | None = None
    grouped: bool = False  # in the seat's group (False while the layer is down)
    sent: str = ""  # the last state frame sent, to resend only a changed one when polling
    inbox: asyncio.Queue[Frame | tuple[AnnotationError, Any]]
    frame_worker: asyncio.Task | None = None  # handles the frames in order (receive)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Call the message's handler; unlike channels' own dispatch, without closing the
        database connection first (``_ChatDatabase`` checks it after each call instead)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        await self.accept()
        slug = self.scope["url_route"]["kwargs"]["slug"]
        query = dict(parse_qsl(self.scope.get("query_string", b"").decode("latin-1")))
        # Every frame this socket sends is in the campaign's language: activated in this
        # connection's own context (its task, its watchdog and the database calls).
        translation.activate(await database_sync_to_async(campaign_language)(slug=slug))
        try:
            seat = await database_sync_to_async(seat_for_socket)(slug=slug, query=query)
        except AnnotationError as exc:
            await self._error(exc)
            await self.close(code=CLOSE_REFUSED)
            return
        self.frames = await database_sync_to_async(frame_limiter)(campaign_id=seat.campaign_id)
        self.seat_id = seat.pk
        self.last_frame = time.monotonic()
        await self._join()
        old = await database_sync_to_async(seat_connect)(
            seat_id=seat.pk, channel_name=self.channel_name
        )
        if old:
            try:
                await self.channel_layer.send(old, {"type": "chat.replaced"})
            except LAYER_ERRORS as exc:
                layer_error(exc, where="send")
        await self._state()
        self.watchdog = asyncio.create_task(self._watch())

    async def disconnect(self, code: int) -> None:
        """Record the closed socket in the database first, whatever the layer does: the
        partner's watchdog reads it there. Nothing here may raise."""
        for task in (self.watchdog, self.frame_worker):
            if task is not None:
                task.cancel()
        if self.seat_id is None:
            return
        try:
            await database_sync_to_async(seat_disconnect)(
                seat_id=self.seat_id, channel_name=self.channel_name, code=code
            )
        except Exception:
            logger.exception("chat disconnect not recorded on seat %s", self.seat_id)
        try:
            await self.channel_layer.group_discard(seat_group(self.seat_id), self.channel_name)
        except LAYER_ERRORS as exc:  # the group's entry expires by itself
            layer_error(exc, where="group_discard")

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Parse and rate-limit the frame here, then hand it to the socket's frame worker,
        which handles frames one at a time in order. Handling a frame may take a while (a
        bot turn run inline, without a broker, runs inside it); meanwhile this consumer keeps
        taking events from the layer, so a streamed reply's partials reach the page."""
        if self.seat_id is None:
            return
        self.last_frame = time.monotonic()
        client_id = None
        received: Frame | tuple[AnnotationError, Any]
        try:
            frame = frame_parse(text_data, bytes_data)
            client_id = frame.data.get("client_id")
            self.frames.take()  # RateLimited: an error frame "rate_limited"
            received = frame
        except AnnotationError as exc:
            received = (exc, client_id)  # answered in its turn, after the frames before it
        if self.frame_worker is None:
            self.inbox = asyncio.Queue()
            self.frame_worker = asyncio.create_task(self._frames_handle())
        self.inbox.put_nowait(received)

    async def _frames_handle(self) -> None:
        """Handle the socket's frames in the order they came (the frame worker)."""
        while True:
            received = await self.inbox.get()
            if self.seat_id is None:
                return
            try:
                if isinstance(received, Frame):
                    await self._frame_handle(received)
                else:
                    await self._error(*received)
            except Exception:  # e.g. the socket closed mid-send: keep handling the next frames
                logger.exception("chat frame worker failed on seat %s", self.seat_id)

    async def _frame_handle(self, frame: Frame) -> None:
        client_id = frame.data.get("client_id")
        try:
            if frame.type == "ping":
                await database_sync_to_async(seat_seen)(
                    seat_id=self.seat_id, channel_name=self.channel_name
                )
                await self._send({"type": "pong"})
                return
            outcome = await database_sync_to_async(frame_handle)(
                seat_id=self.seat_id, frame=frame, mode=self.chat_mode
            )
        except AnnotationError as exc:
            await self._error(exc, client_id=client_id)
            return
        except Exception:  # a bug must not kill the socket; the worker may retry
            logger.exception("chat frame failed on seat %s", self.seat_id)
            await self._send(
                {
                    "type": "error",
                    "code": "server_error",
                    "message": gettext("Something went wrong; please try again."),
                    "client_id": client_id,
                }
            )
            return
        if outcome.ack:
            await self._send(outcome.ack)
        await seats_notify_async(outcome.notify)

    # --- events from the channel layer -----------------------------------------------------

    async def chat_changed(self, event: dict[str, Any]) -> None:
        await self._state(bot=event.get("bot"))

    async def chat_partial(self, event: dict[str, Any]) -> None:
        """Relay a bot reply's text so far (streamed; shown, not stored, labels stay shut);
        an arena's partial says its ``side``."""
        frame = {k: event.get(k) for k in ("index", "seq", "text", "emitted")}
        if "side" in event:
            frame["side"] = event["side"]
        await self._send({"type": "partial", **frame})

    async def chat_replaced(self, event: dict[str, Any]) -> None:
        await self._send(
            {
                "type": "error",
                "code": "replaced",
                "message": gettext("This chat is open in another window; continue there."),
            }
        )
        self.seat_id = None  # the newer socket owns the seat now
        await self.close(code=CLOSE_REPLACED)

    # --- helpers ---------------------------------------------------------------------------

    async def _join(self) -> None:
        """Join the seat's group; on a layer error, note it and leave it to the watchdog."""
        if self.seat_id is None or self.grouped:
            return
        try:
            await self.channel_layer.group_add(seat_group(self.seat_id), self.channel_name)
        except LAYER_ERRORS as exc:
            layer_error(exc, where="group_add")
            return
        self.grouped = True

    async def _state(self, bot: dict[str, Any] | None = None, changed_only: bool = False) -> None:
        if self.seat_id is None:
            return
        state = await database_sync_to_async(chat_state)(seat_id=self.seat_id)
        self.heartbeat_s = float(state["heartbeat_s"])
        self.chat_mode = str(state["chat"])
        text = json.dumps(state)
        if changed_only and text == self.sent:
            return
        self.sent = text
        if bot:
            state["bot"] = bot  # the model's own time, for the latency benchmark
        await self._send(state)

    async def _watch(self) -> None:
        """Close a silent socket; tick the seat a few times per heartbeat."""
        while True:
            await asyncio.sleep(max(0.1, self.heartbeat_s / 4))
            if self.seat_id is None:
                return
            if time.monotonic() - self.last_frame > 2 * self.heartbeat_s + 1:
                await self.close(code=CLOSE_SILENT)
                return
            try:
                changed = await database_sync_to_async(seat_tick)(seat_id=self.seat_id)
                await seats_notify_async(changed)
                if layer_troubled() or not self.grouped:
                    # Notifications may be lost, and a restarted Redis forgot the groups:
                    # join again and send the state if it changed.
                    self.grouped = False
                    await self._join()
                    await self._state(changed_only=True)
            except Exception:  # keep watching; the next tick tries again
                logger.exception("chat watchdog failed on seat %s", self.seat_id)

    async def _error(self, exc: AnnotationError, client_id: Any = None) -> None:
        frame: dict[str, Any] = {"type": "error", "code": error_code(exc), "message": exc.message}
        if exc.fields:
            frame["fields"] = exc.fields
        if isinstance(client_id, str):
            frame["client_id"] = client_id[:64]
        if isinstance(exc, FrameError) and exc.code == "too_large":
            frame["code"] = "too_large"
        await self._send(frame)

    async def _send(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame))
