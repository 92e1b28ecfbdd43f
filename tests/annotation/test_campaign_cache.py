"""The campaign of a worker page from the process's copy (annotation.campaign_cache): current
while the campaigns' version in Redis is the one it was read under, read again after any write
to a campaign (a save, a queryset's update, a delete), after MAX_AGE, and always without
Redis."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import campaign_cache
from annotation.models import Campaign

QUERY = "?workerId=W1&assignmentId=A1&hitId=H&turkSubmitTo=https://workersandbox.mturk.com"


def campaign_reads(client, campaign, query: str = QUERY) -> tuple[int, int]:
    """GET the task page; return its status and how many statements read the campaign."""
    url = reverse("annotation:task", args=[campaign.slug])
    with CaptureQueriesContext(connection) as captured:
        status = client.get(url + query).status_code
    reads = [q for q in captured.captured_queries if 'FROM "annotation_campaign"' in q["sql"]]
    return status, len(reads)


@pytest.mark.redis
def test_a_steady_page_reads_no_campaign_and_any_write_makes_the_next_read_it(client, campaign):
    assert campaign_reads(client, campaign) == (200, 1)  # first page: read and kept
    assert campaign_reads(client, campaign) == (200, 0)  # then from the copy
    campaign.name = "renamed"
    campaign.save()  # post_save: a new version
    assert campaign_reads(client, campaign) == (200, 1)
    assert campaign_reads(client, campaign) == (200, 0)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    status, reads = campaign_reads(client, campaign)  # a queryset's update: read again
    assert reads == 1 and status == 404  # a paused study is not shown to workers


@pytest.mark.redis
def test_a_version_set_elsewhere_or_lost_makes_the_copy_read_again(client, campaign):
    assert campaign_reads(client, campaign) == (200, 1)
    cache = caches["default"]
    cache.set(campaign_cache.VERSION_KEY, campaign_cache.new_version(), timeout=None)
    assert campaign_reads(client, campaign) == (200, 1)  # another process wrote a campaign
    assert campaign_reads(client, campaign) == (200, 0)
    cache.delete(campaign_cache.VERSION_KEY)  # Redis restarted empty: a new version is set
    assert campaign_reads(client, campaign) == (200, 1)
    assert campaign_reads(client, campaign) == (200, 0)


@pytest.mark.redis
def test_a_copy_older_than_its_age_is_read_again(client, campaign, monkeypatch):
    assert campaign_reads(client, campaign) == (200, 1)
    monkeypatch.setattr(campaign_cache, "MAX_AGE", -1.0)
    assert campaign_reads(client, campaign) == (200, 1)


@pytest.mark.redis
def test_each_request_gets_its_own_instance_of_the_copy(client, campaign):
    campaign_reads(client, campaign)
    first, tag = campaign_cache.campaign_cached(campaign.slug)
    second, _tag = campaign_cache.campaign_cached(campaign.slug)
    assert first is not None and second is not None and tag is not None
    assert first is not second and first.parameters is not second.parameters
    first.topup_reopened += 5
    first.parameters["changed"] = True
    again, _tag = campaign_cache.campaign_cached(campaign.slug)
    assert again.topup_reopened == campaign.topup_reopened and "changed" not in again.parameters
    assert (again.pk, again.slug, again.created_at) == (
        campaign.pk,
        campaign.slug,
        campaign.created_at,
    )


def test_without_redis_every_page_reads_its_campaign(client, campaign, settings):
    # Django's setting_changed handler gives the process new cache objects.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    for _ in range(3):
        assert campaign_reads(client, campaign) == (200, 1)
    assert campaign_cache.campaign_cached(campaign.slug) == (None, None)
