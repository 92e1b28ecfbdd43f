"""The websocket frames of a live chat: parsing and validation of what the browser sends.

Every frame is a JSON object with a ``type``; anything else (not JSON, too large, an unknown
type, a field of the wrong kind) is refused with an error frame before any service runs.
docs/chat.md lists the frames.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evalsite.errors import AnnotationError, Conflict, InvalidAnswer, NotAllowed

MAX_FRAME_BYTES = 8 * 1024
# type → the fields it may carry (besides "type").
FRAME_FIELDS: dict[str, frozenset[str]] = {
    "ping": frozenset(),
    "situation": frozenset({"emotion", "text", "signals"}),
    "message": frozenset({"client_id", "text", "signals", "dialogue", "role"}),
    "end": frozenset({"dialogue"}),
    "label": frozenset({"index", "sensible", "specific"}),
    "retry": frozenset(),
    "rating": frozenset({"ratings", "comment"}),
    "vote": frozenset({"turn", "winner", "reason"}),
}
# Writing signals the page measures: name → largest accepted value.
SIGNALS: dict[str, int] = {
    "typing_ms": 24 * 3600 * 1000,
    "keystrokes": 100_000,
    "pastes": 1000,
    "pasted_chars": 100_000,
}


class FrameError(InvalidAnswer):
    """A frame that is not valid JSON, too large, of an unknown type or malformed."""

    def __init__(self, message: str, *, code: str = "malformed") -> None:
        super().__init__(message)
        self.code = code


class OutOfTurn(Conflict):
    """A message sent when it is not the sender's turn (or the conversation has ended)."""

    code = "out_of_turn"


class NotYours(NotAllowed):
    """A frame naming another dialogue or another role than the sender's own."""

    code = "not_yours"


def error_code(exc: AnnotationError) -> str:
    """Return the error frame's ``code`` for a refused frame."""
    code = getattr(exc, "code", "")
    if code:
        return str(code)
    if isinstance(exc, NotAllowed):
        return "not_allowed"
    if isinstance(exc, Conflict):
        return "conflict"
    return "invalid"


@dataclass(frozen=True)
class Frame:
    """A parsed frame: its type and its other fields."""

    type: str
    data: dict[str, Any]

    def str_field(self, key: str, *, required: bool = True, max_length: int = 10_000) -> str:
        """Return a string field; raise FrameError if it is missing, not text or too long."""
        value = self.data.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str):
            raise FrameError(f"'{key}' must be text.")
        if len(value) > max_length:
            raise FrameError(f"'{key}' is longer than {max_length} characters.", code="too_large")
        if "\x00" in value:  # PostgreSQL cannot store it, and no keyboard types it
            raise FrameError(f"'{key}' contains a NUL character.")
        return value

    def int_field(self, key: str, *, required: bool = True) -> int | None:
        """Return a whole-number field; raise FrameError if it is anything else."""
        value = self.data.get(key)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
            raise FrameError(f"'{key}' must be a whole number.")
        return value


def _constant_refuse(name: str) -> Any:
    """Refuse NaN and Infinity, which Python's json accepts but JSON does not."""
    raise ValueError(name)


def frame_parse(text: str | None, binary: bytes | None = None) -> Frame:
    """Return the frame in a websocket text message; raise FrameError if it is not one."""
    if binary is not None or text is None:
        raise FrameError("Frames are JSON text, not binary data.")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES:
        raise FrameError(f"The frame is larger than {MAX_FRAME_BYTES} bytes.", code="too_large")
    try:
        data = json.loads(text, parse_constant=_constant_refuse)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than Python's stack
        raise FrameError("The frame is not valid JSON.") from None
    if not isinstance(data, dict):
        raise FrameError("A frame must be a JSON object with a 'type'.")
    try:  # "\ud800" decodes to a lone surrogate, which no database text can hold
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise FrameError("The frame contains text that is not valid Unicode.") from None
    kind = data.pop("type", None)
    if not isinstance(kind, str) or kind not in FRAME_FIELDS:
        raise FrameError(
            f"Unknown frame type {str(kind)[:20]!r}; known: {', '.join(sorted(FRAME_FIELDS))}.",
            code="unknown_type",
        )
    extra = sorted(set(data) - FRAME_FIELDS[kind])
    if extra:
        raise FrameError(f"A {kind!r} frame has no field {str(extra[0])[:30]!r}.")
    return Frame(type=kind, data=data)


def signals_clean(value: Any) -> dict[str, int]:
    """Return the writing signals (typing time, keystrokes, pastes); raise FrameError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrameError("'signals' must be an object.")
    cleaned: dict[str, int] = {}
    for key, number in value.items():
        if key not in SIGNALS:
            raise FrameError(f"Unknown writing signal {str(key)[:30]!r}.")
        if (
            isinstance(number, bool)
            or not isinstance(number, int)
            or not 0 <= number <= SIGNALS[key]
        ):
            raise FrameError(f"The signal {key!r} must be a whole number from 0 to {SIGNALS[key]}.")
        cleaned[key] = number
    return cleaned


def client_id_clean(value: str) -> str:
    """Return a message's client id (1–64 printable ASCII characters); raise FrameError."""
    if not 0 < len(value) <= 64 or not value.isascii() or not value.isprintable():
        raise FrameError("'client_id' must be 1–64 printable ASCII characters.")
    return value


@dataclass(frozen=True)
class Sent:
    """A stored message: its index, whether this call stored it, and the seats to tell."""

    index: int
    created: bool
    notify: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """What a handled frame gives back: an ack for the sender and the seats to tell."""

    ack: dict[str, Any] | None = None
    notify: list[int] = field(default_factory=list)


def message_fields(frame: Frame) -> dict[str, Any]:
    """Return a ``message`` frame's fields, checked, as the chat modes' send services take
    them: client_id, text, signals, dialogue_id, role."""
    return {
        "client_id": client_id_clean(frame.str_field("client_id", max_length=64)),
        "text": frame.str_field("text"),
        "signals": signals_clean(frame.data.get("signals")),
        "dialogue_id": frame.int_field("dialogue", required=False),
        "role": frame.str_field("role", required=False, max_length=20),
    }


def message_outcome(client_id: str, sent: Sent) -> Outcome:
    """Return the ack of a stored (or already stored) message and the seats to tell."""
    ack = {"type": "ack", "client_id": client_id, "index": sent.index, "stored": sent.created}
    return Outcome(ack=ack, notify=sent.notify)


def frame_unknown(frame: Frame) -> FrameError:
    """Return the error for a frame type the seat's chat mode does not take."""
    return FrameError(f"A {frame.type!r} frame has no meaning in this study.", code="unknown_type")
