"""The network address a request came from, and the network a limit counts it by."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """Return the client's address: behind the one trusted proxy (``EVALSITE_BEHIND_PROXY``,
    which also sets ``SECURE_PROXY_SSL_HEADER``) the address that proxy appended last to
    X-Forwarded-For (earlier entries are whatever the client claimed), else REMOTE_ADDR."""
    if settings.SECURE_PROXY_SSL_HEADER is not None:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return str(request.META.get("REMOTE_ADDR", ""))[:64]


def address_for_limits(address: str) -> str:
    """Return what a limit counts ``address`` as (login lockout, open-link arrivals, rate
    limits): an IPv4 address as it is, an IPv6 one by its network of ``EVALSITE_IPV6_PREFIX``
    bits (the /64 a host or customer holds: rotating inside it must not reset a limit), and a
    text that is no address as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        network = ipaddress.ip_network(f"{ip}/{settings.EVALSITE_IPV6_PREFIX}", strict=False)
        return str(network.network_address)
    return str(ip)
