"""Send one webhook request: URL checks, address checks, one deadline. No Django here.

A receiver's host is resolved once per request and every address it resolves to is checked
(unless private addresses are allowed); the connection then goes to a checked address, with
the host name kept for the ``Host`` header and TLS verification, so a name that resolves to
a public address when checked cannot point at a private one when connected (DNS rebinding).

An attempt has one deadline for all of it (connect, TLS, send, the whole answer): a socket
timeout bounds each wait alone, so a receiver that sends a byte every few seconds would hold
the worker for as long as it likes; at the deadline the connection is cut instead.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import ipaddress
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

ANSWER_BYTES = 1024  # the answer's body is read this far (for the log), then dropped

# Reserved or local ranges that Python's ``is_global`` lets through (deprecated or
# transition ranges), refused outright.
REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
        "fec0::/10",  # IPv6 site-local (deprecated)
        "64:ff9b:1::/48",  # NAT64 for local use
        "2001::/32",  # Teredo
    )
)
# IPv6 ranges whose last 32 bits are the IPv4 address actually reached: that one is checked.
IPV4_IN_LAST_32_BITS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "::/96",  # IPv4-compatible (deprecated)
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # IPv4-translated
        "64:ff9b::/96",  # NAT64 (a public IPv4 receiver seen through DNS64 stays allowed)
    )
)


class UnsafeUrl(ValueError):
    """The URL is not one deliveries may go to; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """What one attempt got: the status code (None: no answer), an error, Retry-After in s."""

    status: int | None
    error: str = ""
    retry_after: float | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str


def url_check(url: str) -> Target:
    """Return where ``url`` points, or raise ``UnsafeUrl``: http(s), a host, no credentials."""
    if len(url) > 500:
        raise UnsafeUrl("A webhook URL has at most 500 characters.")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise UnsafeUrl("A webhook URL has no spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsafeUrl("Not a URL (check the port).") from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeUrl("A webhook URL starts with https:// (or http://).")
    if parts.username is not None or parts.password is not None:
        raise UnsafeUrl("A webhook URL holds no user name or password; the signature is the check.")
    if not parts.hostname:
        raise UnsafeUrl("A webhook URL names a host.")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    default = 443 if parts.scheme == "https" else 80
    return Target(parts.scheme, parts.hostname, port or default, path)


def address_allowed(address: str) -> bool:
    """Whether a public receiver may have this address: not loopback, private, link-local,
    multicast or reserved, nor an IPv6 address that carries such an IPv4 address (mapped,
    compatible, NAT64, 6to4)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in IPV4_IN_LAST_32_BITS):
            return address_allowed(str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
        if ip.sixtofour is not None and not address_allowed(str(ip.sixtofour)):
            return False
    if any(ip in network for network in REFUSED_NETWORKS):
        return False
    return ip.is_global and not ip.is_multicast


def addresses(target: Target, *, allow_private: bool) -> list[str]:
    """Resolve the target's host; refuse it if any address is not public (unless allowed)."""
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeUrl(f"The host {target.host!r} does not resolve ({exc}).") from None
    found = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not allow_private:
        refused = [a for a in found if not address_allowed(a)]
        if refused:
            raise UnsafeUrl(
                f"The host {target.host!r} resolves to a private or local address "
                f"({refused[0]}); webhooks go to public addresses only."
            )
    return found


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Read a Retry-After header: seconds, or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _Deadline:
    """Cut a connection when its attempt's time is up, wherever the attempt is waiting.

    A timer shuts the connection down at the deadline (a blocked read then returns at once,
    TLS handshake included). It holds a duplicate of the socket's descriptor: a TLS wrapper
    takes over the socket object, and the duplicate can never name another socket later.
    """

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self._duplicate: socket.socket | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()  # the duplicate is never closed while it is cut

    def left(self) -> float:
        return max(0.001, self.at - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def watch(self, sock: socket.socket) -> None:
        """Cut ``sock`` at the deadline (the connection's one socket, once connected)."""
        self._duplicate = sock.dup()
        self._timer = threading.Timer(self.left(), self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        with self._lock:
            if self._duplicate is None:
                return  # the attempt ended
            with contextlib.suppress(OSError):  # the receiver hung up already
                self._duplicate.shutdown(socket.SHUT_RDWR)

    def end(self) -> None:
        """Stop the timer and let go of the duplicate."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._duplicate is not None:
                self._duplicate.close()
                self._duplicate = None


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    allow_private: bool,
    deadline_s: float,
) -> Outcome:
    """POST ``body`` to ``url`` once, within ``deadline_s`` seconds from connect to the last
    byte read (the name's lookup aside: the resolver's own timeout bounds it); never raise for
    the receiver's sake, return the outcome."""
    try:
        target = url_check(url)
        address = addresses(target, allow_private=allow_private)[0]
    except UnsafeUrl as exc:
        return Outcome(None, str(exc))
    deadline = _Deadline(deadline_s)
    connection_class = (
        http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_class(target.host, target.port, timeout=deadline_s)

    def connect_checked(
        _address: tuple[str, int], timeout: float, source: object = None
    ) -> socket.socket:
        sock = socket.create_connection((address, target.port), deadline.left())
        deadline.watch(sock)
        return sock

    # The checked address, not a second lookup; TLS still verifies the host name.
    connection._create_connection = connect_checked  # type: ignore[attr-defined]
    try:
        connection.request("POST", target.path, body=body, headers=dict(headers))
        response = connection.getresponse()
        detail = response.read(ANSWER_BYTES).decode("utf-8", "replace")
        status = response.status
        retry_after = retry_after_seconds(response.getheader("Retry-After"))
    except (OSError, http.client.HTTPException) as exc:
        if deadline.passed():
            return Outcome(None, f"The request timed out: no full answer within {deadline_s:g} s.")
        kind = "timed out" if isinstance(exc, TimeoutError | socket.timeout) else "failed"
        return Outcome(None, f"The request {kind}: {type(exc).__name__}: {exc}"[:500])
    finally:
        deadline.end()
        connection.close()
    error = "" if 200 <= status < 300 else f"HTTP {status}: {detail.strip()}"[:500]
    return Outcome(status, error, retry_after)
