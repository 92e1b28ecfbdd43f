"""The signature of a delivery: HMAC-SHA256 over ``<timestamp>.<body>`` with the secret."""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """Return the ``X-Evalsite-Signature`` value: ``sha256=`` and the hex HMAC."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
