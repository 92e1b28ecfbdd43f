"""A model's reply in a live chat, streamed: the text so far goes to the worker's page as it
grows (interactive SSA's bot turns, the arena's two sides); the caller stores the whole reply."""

from __future__ import annotations

import time
from typing import Any

from chat.notify import seat_partial
from modelhub.backends import Reply
from modelhub.models import ModelEndpoint
from modelhub.services import bot_stream

# A partial frame at most this often after the first (sent at once): a worker reads no faster,
# and each frame costs the layer and the browser a little.
PARTIAL_EVERY_S = 0.05


def reply_streamed(
    endpoint: ModelEndpoint, turns: list[str], *, seat_id: int, index: int, side: str = ""
) -> tuple[Reply, float]:
    """Return the model's whole reply and the milliseconds to its first piece, sending the
    text so far to the seat as it grows (``seat_partial``; an arena's partials say their
    ``side``)."""
    started = time.perf_counter()
    text, seq, sent_at, first_ms = "", 0, 0.0, -1.0
    reply: Reply | None = None
    for piece in bot_stream(endpoint=endpoint, turns=turns):
        if isinstance(piece, Reply):
            reply = piece
            continue
        text += piece
        now = time.perf_counter()
        if first_ms < 0:
            first_ms = (now - started) * 1000
        if seq == 0 or now - sent_at >= PARTIAL_EVERY_S:
            seq += 1
            sent_at = now
            partial = {"index": index, "seq": seq, "text": text, "emitted": time.time()}
            if side:
                partial["side"] = side
            seat_partial(seat_id, partial)
    if reply is None:
        raise RuntimeError("the model's stream ended without its reply")
    return reply, round(max(first_ms, 0.0), 3)


def reply_awaited(metadata: dict[str, Any], index: int, attempt: str | None) -> bool:
    """Tell whether the model's turn ``index`` is awaited (by the dialogue's ``metadata``), by
    this attempt when one is named: a reply to an attempt that was given up (deadline,
    failure) and asked again is dropped."""
    pending = metadata.get("pending")
    if not pending or pending.get("index") != index:
        return False
    return attempt is None or pending.get("since") == attempt
