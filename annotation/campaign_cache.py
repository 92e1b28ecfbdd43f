"""The campaign of a worker page, from this process's memory while it is current.

Every worker page and answer starts from its campaign (``ratelimits.limited`` finds it by its
slug). A process keeps a copy of each campaign it served (its row's values) tagged with the
*campaigns' version*: a random integer in Redis that every write to a campaign row replaces
(``campaign_changed``, on Django's ``post_save`` and ``post_delete`` and on
``CampaignQuerySet.update``: at once, and again after the commit, so that a copy read before
the commit is not kept as current). A request reads the version in the round trip that
counts its rate limits (``evalsite.cache.counts_add_reading``), so a current copy costs no
statement and no extra round trip; a copy with another tag is read again (a change to any
campaign makes every process read each campaign once more: changes are rare, reads are every
request).

Decisions:
- One version for all campaigns, not one per campaign: a write needs to know no slug (a slug
  can change, a row can be deleted), and a rolled-back test's campaign cannot linger.
- The version is random, not a counter: a Redis that restarted empty hands out a new one, so
  no copy from before it can match.
- Without Redis (the embedded defaults, or while Redis is down) there is no version the
  processes share: no copy is kept and every request reads its campaign, as before.
- A copy is read again after ``MAX_AGE`` seconds whatever its tag: if a write's new version
  was lost (Redis down at that moment, a change made in SQL by hand), no process serves the
  old row longer than that.
- Each request gets its own instance built from the copy's values (JSON copied), so a
  request that changes its instance (the top-up counts re-opened items on it) changes no
  other request's.

The answer's transaction reads what must be exact under its locks as before (the assignment's
status, the item's counters); the campaign's ``is_live`` is checked on the copy, as it was on
a row read a few milliseconds earlier.
"""

from __future__ import annotations

import copy
import secrets
import threading
import time
from typing import Any

from django.core.cache import caches
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from annotation.models import Campaign
from annotation.signals import campaigns_updated
from evalsite.cache import OutageTolerantRedisCache, counts_add_reading

VERSION_KEY = "campaigns:version"
MAX_AGE = 30.0  # seconds a copy is trusted without a read, whatever its tag
MAX_COPIES = 1000  # campaigns a process keeps

_FIELDS = [field.attname for field in Campaign._meta.concrete_fields]
_copies: dict[str, tuple[tuple[Any, ...], int, float]] = {}  # slug → (values, tag, read at)
_lock = threading.Lock()


def new_version() -> int:
    """A version no process holds (63 random bits)."""
    return secrets.randbits(63)


def campaign_cached(slug: str) -> tuple[Campaign | None, int | None]:
    """Return this process's copy of the campaign at ``slug`` and its tag, or (None, None)
    when it has none younger than ``MAX_AGE``."""
    kept = _copies.get(slug)
    if kept is None or time.monotonic() - kept[2] > MAX_AGE:
        return None, None
    values, tag, _at = kept
    return _instance(values), tag


def campaign_read(slug: str, version: int | None) -> Campaign | None:
    """Read the campaign at ``slug`` (None if there is none) and keep a copy tagged with
    ``version``, the version read *before* this read; None: keep nothing."""
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None or version is None:
        _copies.pop(slug, None)
        return campaign
    values = tuple(getattr(campaign, name) for name in _FIELDS)
    with _lock:
        if len(_copies) >= MAX_COPIES:
            _copies.clear()
        _copies[slug] = (values, version, time.monotonic())
    return campaign


def version_read() -> int | None:
    """The campaigns' version, read from Redis (one round trip; a new one is set if Redis has
    none); None without Redis."""
    cache = caches["default"]
    if not isinstance(cache, OutageTolerantRedisCache):
        return None
    return counts_add_reading(cache, {}, read=VERSION_KEY, initial=new_version())[1]


def campaigns_forget() -> None:
    """Drop this process's copies (tests: a rolled-back campaign's slug comes back)."""
    _copies.clear()


def _instance(values: tuple[Any, ...]) -> Campaign:
    fresh = [copy.deepcopy(v) if isinstance(v, dict | list) else v for v in values]
    return Campaign.from_db("default", _FIELDS, fresh)


def campaign_changed() -> None:
    """A campaign row was written: drop this process's copies and give the campaigns a new
    version now and again after the commit (see the module's docstring)."""
    _copies.clear()
    _version_new()
    transaction.on_commit(_version_new)


def _version_new() -> None:
    cache = caches["default"]
    if isinstance(cache, OutageTolerantRedisCache):
        _copies.clear()
        cache.set(VERSION_KEY, new_version(), timeout=None)


@receiver(post_save, sender=Campaign, dispatch_uid="campaign_cache_saved")
def _saved(**kwargs: Any) -> None:
    campaign_changed()


@receiver(post_delete, sender=Campaign, dispatch_uid="campaign_cache_deleted")
def _deleted(**kwargs: Any) -> None:
    campaign_changed()


@receiver(campaigns_updated, dispatch_uid="campaign_cache_updated")
def _updated(**kwargs: Any) -> None:
    campaign_changed()
