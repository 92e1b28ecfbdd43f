"""Idempotency keys are remembered for a day, then forgotten by the API's housekeeping."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from api.idempotency import KEEP_SECONDS
from api.models import IdempotencyKey
from api.tasks import api_housekeeping
from evalsite.celery import app

pytestmark = pytest.mark.django_db


def test_keys_older_than_a_day_are_forgotten_and_younger_ones_kept():
    user = get_user_model().objects.create_user("r")
    now = timezone.now()
    ages = {"fresh": 60, "almost": KEEP_SECONDS - 60, "old": KEEP_SECONDS + 60, "stuck": 10**6}
    for key, age in ages.items():
        row = IdempotencyKey.objects.create(user=user, key=key, fingerprint="f" * 64)
        IdempotencyKey.objects.filter(pk=row.pk).update(created_at=now - timedelta(seconds=age))
    assert api_housekeeping.apply().get() == {"idempotency_keys_expired": 2}
    assert set(IdempotencyKey.objects.values_list("key", flat=True)) == {"fresh", "almost"}
    assert api_housekeeping.apply().get() == {"idempotency_keys_expired": 0}


def test_beat_runs_the_api_housekeeping_hourly():
    entry = app.conf.beat_schedule["api-housekeeping"]
    assert entry == {"task": "api.tasks.api_housekeeping", "schedule": 3600.0}
    assert "api.tasks.api_housekeeping" in app.tasks
