"""Rate limits of the worker pages and of the chat socket.

Worker pages: each arrival (the task page, which also serves the chat page, and the end
screen) and each answer sent is counted per campaign, from one address and from one worker
at that address, in fixed one-minute windows: counters in the cache, which is Redis when
``REDIS_URL`` is set, so that every web process counts together. Both counters of a request
take one round trip (``evalsite.cache.counts_add_reading``: one ``EVALSHA``, which also reads
the campaigns' version for ``campaign_cache``); while Redis is down each
process counts on its own, in a bounded memory (``evalsite.cache``). A request over a limit is
answered 429 with ``Retry-After``, the seconds left in its window (``limited``). Each
counter's window ends at its own second of the minute (from a hash of its key, as
django-ratelimit did), so that the windows of a crowd do not all open at once. The worker's
count is keyed on the address too: a worker id is only claimed, and a limit on the bare id
would let anyone who knows it keep its owner waiting.

Chat frames are counted by the socket's consumer (``FrameLimiter``, a token bucket): a socket
lives in one process, so the bucket needs no round trip to the cache per frame.

The limits are the campaign's own settings where it has them (``rate_per_ip``,
``rate_per_worker``, ``chat_frames_per_second``; ``campaign_settings``), else the site's
(``EVALSITE_RATE_PER_IP``, ``EVALSITE_RATE_PER_WORKER``, ``EVALSITE_CHAT_FRAMES_PER_SECOND``,
``EVALSITE_CHAT_FRAME_BURST``; 0 turns one off); docs/deployment.md, "Rate limits".
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.translation import gettext as _

from annotation.campaign_cache import (
    VERSION_KEY,
    campaign_cached,
    campaign_read,
    new_version,
    version_read,
)
from annotation.models import Campaign
from evalsite.addresses import address_for_limits, client_address
from evalsite.cache import counts_add_reading
from evalsite.errors import AnnotationError
from providers import arrival_parse

ARRIVE = "arrive"
SUBMIT = "submit"
WINDOW_SECONDS = 60

View = Callable[..., HttpResponse]


@dataclass(frozen=True)
class Limits:
    """One campaign's limits; 0 means none."""

    per_ip: int  # arrivals (and, counted apart, answers) a minute from one address
    per_worker: int  # the same from one worker at one address
    frames_per_second: int  # a chat socket's frames a second, on average
    frame_burst: int  # frames a chat socket may send at once


class RateLimited(AnnotationError):
    """A chat frame sent faster than the campaign allows (error frame ``rate_limited``)."""

    status_code = 429
    code = "rate_limited"


def limits_of(campaign: Campaign) -> Limits:
    """Return the limits that apply to ``campaign``: its own settings, else the site's."""
    return Limits(
        per_ip=campaign.rate_per_ip or settings.RATE_PER_IP,
        per_worker=campaign.rate_per_worker or settings.RATE_PER_WORKER,
        frames_per_second=campaign.chat_frames_per_second or settings.CHAT_FRAMES_PER_SECOND,
        frame_burst=settings.CHAT_FRAME_BURST,
    )


def request_wait(
    request: HttpRequest, *, campaign: Campaign, action: str
) -> tuple[int, int | None]:
    """Count one ``action`` request to ``campaign``; return the seconds its sender must wait
    when it is over a limit (else 0) and the campaigns' version, read in the same round trip
    (``campaign_cache``; None without Redis)."""
    limits = limits_of(campaign)
    # created_at as well as the id: a test database that reuses ids never reuses both.
    scope = f"{action}:{campaign.pk}:{campaign.created_at.timestamp()}"
    address = address_for_limits(client_address(request))
    counters: list[tuple[str, int]] = []  # (the counter's name, its limit)
    if limits.per_ip:
        counters.append((f"{scope}:ip:{address}", limits.per_ip))
    worker = _worker(request)
    if limits.per_worker and worker:
        counters.append((f"{scope}:worker:{worker}:{address}", limits.per_worker))
    now = int(time.time())
    windows = [_window(name, now) for name, _limit in counters]
    keys = {
        _key(name, end): end - now + 1
        for (name, _limit), end in zip(counters, windows, strict=True)
    }
    counts, version = counts_add_reading(
        caches["default"], keys, read=VERSION_KEY, initial=new_version()
    )
    waits = [
        end - now
        for (_name, limit), end, count in zip(counters, windows, counts, strict=True)
        if count > limit
    ]
    return max(waits, default=0), version


def limited(action: str) -> Callable[[View], View]:
    """Decorate a worker view that takes the campaign's ``slug``: answer 429 to a request
    over the campaign's limits for ``action`` (``ARRIVE`` or ``SUBMIT``). The view gets the
    campaign found here (``campaign``: None for an unknown slug, which the view answers):
    this process's copy when the campaigns' version, read with the counters, says it is
    current (``campaign_cache``), else read again, so a steady page reads no campaign row.
    The view and the 429 run in the campaign's language (``Campaign.language``; the site's
    default for an unknown slug)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            campaign, wait = _campaign_counted(request, slug, action)
            language = campaign.language if campaign else settings.LANGUAGE_CODE
            with translation.override(language):
                if wait:
                    return refused_response(request, seconds=wait, action=action)
                return view(request, slug, *args, campaign=campaign, **kwargs)

        return wrapper

    return decorate


def _campaign_counted(request: HttpRequest, slug: str, action: str) -> tuple[Campaign | None, int]:
    """The campaign at ``slug`` (None if none) and the seconds the request must wait (its
    rate limits counted). A copy whose tag is not the version read with the counters is read
    again; the wait stays the one counted under the copy's limits (a change of limits applies
    from the next request)."""
    campaign, tag = campaign_cached(slug)
    if campaign is None:
        tag = version_read()
        campaign = campaign_read(slug, tag)
    if campaign is None:
        return None, 0
    wait, version = request_wait(request, campaign=campaign, action=action)
    if version != tag:
        campaign = campaign_read(slug, version)
    return campaign, wait


def refused_response(request: HttpRequest, *, seconds: int, action: str) -> HttpResponse:
    """429 with ``Retry-After``: ``{"ok": false, "error": …}`` for a JSON client, the worker
    pages' message page (framed as they are) otherwise."""
    if action == SUBMIT:
        text = _(
            "You are sending answers faster than this study allows, so this answer was not "
            "saved. Please wait %(seconds)s seconds, then send it again."
        ) % {"seconds": seconds}
    else:
        text = _(
            "Too many requests to this study from your connection in a short time. Please "
            "wait %(seconds)s seconds, then reload this page."
        ) % {"seconds": seconds}
    response: HttpResponse
    accept = request.headers.get("Accept", "")
    if request.content_type == "application/json" or "application/json" in accept:
        response = JsonResponse(
            {"ok": False, "error": text, "retry_after": seconds, "rate_limited": True},
            status=429,
        )
    else:
        context = {"title": _("Please slow down"), "text": text}
        response = render(request, "annotation/message.html", context, status=429)
        response["Content-Security-Policy"] = "frame-ancestors " + " ".join(
            settings.WORKER_FRAME_ANCESTORS
        )
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


class FrameLimiter:
    """A chat socket's token bucket: ``rate`` frames a second on average, ``burst`` at once
    (a reconnecting page sends its outbox in one go). A rate of 0 limits nothing."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self.clock = clock
        self.tokens = float(self.burst)
        self.stamp = clock()

    def take(self) -> None:
        """Count one frame; raise RateLimited if the socket is over its rate."""
        if not self.rate:
            return
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return
        wait = max(1, round((1 - self.tokens) / self.rate))
        raise RateLimited(
            f"You are sending faster than this chat allows; this was not sent. "
            f"Please wait {wait} second{'s' if wait > 1 else ''} and send it again."
        )


def frame_limiter(*, campaign_id: int) -> FrameLimiter:
    """Return a new socket's frame limiter under its campaign's limits."""
    limits = limits_of(Campaign.objects.get(pk=campaign_id))
    return FrameLimiter(limits.frames_per_second, limits.frame_burst)


def _window(name: str, now: int) -> int:
    """Return when the current window of counter ``name`` ends (a Unix second after ``now``,
    at most ``WINDOW_SECONDS`` later)."""
    end = now - now % WINDOW_SECONDS + zlib.crc32(name.encode()) % WINDOW_SECONDS
    return end if end > now else end + WINDOW_SECONDS


def _key(name: str, window_end: int) -> str:
    """Return the cache key of counter ``name`` in the window ending at ``window_end``: short
    and plain whatever the worker id holds, and new in each window."""
    return f"rl:{hashlib.sha256(name.encode()).hexdigest()[:32]}:{window_end}"


def _worker(request: HttpRequest) -> str:
    """Return the worker the request's provider parameters name ("" for none or a preview)."""
    try:
        arrival = arrival_parse(request.GET)
    except AnnotationError:
        return ""
    if arrival.preview or not arrival.worker_id:
        return ""
    return f"{arrival.provider}:{arrival.worker_id}"
