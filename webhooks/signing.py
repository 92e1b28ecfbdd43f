"""The signatures of a delivery.

Standard Webhooks (https://www.standardwebhooks.com/; its reference libraries verify them):
``webhook-signature`` is ``v1,`` and the base64 HMAC-SHA256 of ``<id>.<timestamp>.<body>``,
keyed with the secret's bytes, the base64 after ``whsec_``. The older ``X-Evalsite-Signature``
(``sha256=`` and the hex HMAC of ``<timestamp>.<body>``, keyed with the secret's text) is sent
beside it for one more release.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def secret_new() -> str:
    """Return a new endpoint secret: ``whsec_`` and 24 random bytes in standard base64."""
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of ``secret`` as Standard Webhooks' libraries read it: the base64 after
    the prefix, decoded leniently (padding added, other characters skipped), so an endpoint
    made before the secrets were standard base64 verifies with them too when its text allows;
    one whose text cannot decode is keyed with its text (the receiver should rotate it)."""
    try:
        key = base64.b64decode(secret.removeprefix(PREFIX) + "==")
    except binascii.Error:
        key = b""
    return key or secret.encode()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Return the ``webhook-signature`` value: ``v1,`` and the base64 HMAC."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """Return the older ``X-Evalsite-Signature`` value: ``sha256=`` and the hex HMAC."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
