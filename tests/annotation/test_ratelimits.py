"""Rate limits of the worker pages (429 + Retry-After) and of the chat socket's frames."""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from annotation.ratelimits import FrameLimiter, RateLimited, frame_limiter, limits_of
from annotation.services import campaign_settings_update
from tests.factories import CampaignFactory, ItemFactory

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}


def address() -> str:
    """A fresh client address: the counters live in the cache, which may be a Redis that
    outlives the test database."""
    return f"10.{secrets.randbelow(256)}.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def mturk(worker: str) -> dict[str, str]:
    return {
        "assignmentId": f"A-{worker}",
        "hitId": "HIT1",
        "workerId": worker,
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }


def task_url(campaign, name: str = "task") -> str:
    return reverse(f"annotation:{name}", args=[campaign.slug])


def test_an_arrival_flood_from_one_address_gets_429_while_another_address_is_served(
    client, campaign, settings
):
    settings.RATE_PER_IP = 10
    flood = address()
    statuses = [
        client.get(task_url(campaign), mturk(f"FAKE{n}"), REMOTE_ADDR=flood).status_code
        for n in range(10)
    ]
    assert 429 not in statuses
    refused = client.get(task_url(campaign), mturk("FAKE10"), REMOTE_ADDR=flood)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "Please slow down" in refused.content.decode()
    assert "frame-ancestors" in refused["Content-Security-Policy"]
    assert "X-Frame-Options" not in refused  # readable inside the provider's iframe
    served = client.get(task_url(campaign), mturk("REAL"), REMOTE_ADDR=address())
    assert served.status_code == 200
    assert 'name="token"' in served.content.decode()


def test_one_worker_reloading_too_fast_is_limited_but_not_others_at_the_same_address(
    client, campaign, settings
):
    settings.RATE_PER_WORKER = 5
    lab = address()
    for _ in range(5):
        assert client.get(task_url(campaign), mturk("W1"), REMOTE_ADDR=lab).status_code == 200
    assert client.get(task_url(campaign), mturk("W1"), REMOTE_ADDR=lab).status_code == 429
    assert client.get(task_url(campaign), mturk("W2"), REMOTE_ADDR=lab).status_code == 200
    # The worker's count is keyed on the address too: someone who knows W1's id cannot keep
    # W1 waiting from elsewhere.
    assert client.get(task_url(campaign), mturk("W1"), REMOTE_ADDR=address()).status_code == 200


def test_behind_the_proxy_an_address_claimed_in_x_forwarded_for_does_not_escape_the_limit(
    client, campaign, settings
):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")  # behind the proxy
    settings.RATE_PER_IP = 3
    real = address()
    for n in range(3):
        forged = f"{address()}, {real}"  # the client's claim, then what the proxy appended
        client.get(task_url(campaign), mturk(f"F{n}"), HTTP_X_FORWARDED_FOR=forged)
    refused = client.get(
        task_url(campaign), mturk("F3"), HTTP_X_FORWARDED_FOR=f"{address()}, {real}"
    )
    assert refused.status_code == 429
    other = client.get(task_url(campaign), mturk("F4"), HTTP_X_FORWARDED_FOR=address())
    assert other.status_code == 200


def test_limits_count_per_campaign(client, settings, db):
    settings.RATE_PER_IP = 3
    first, second = CampaignFactory(), CampaignFactory()
    ItemFactory.create_batch(2, campaign=first)
    ItemFactory.create_batch(2, campaign=second)
    ip = address()
    for n in range(3):
        client.get(task_url(first), mturk(f"X{n}"), REMOTE_ADDR=ip)
    assert client.get(task_url(first), mturk("X9"), REMOTE_ADDR=ip).status_code == 429
    assert client.get(task_url(second), mturk("X9"), REMOTE_ADDR=ip).status_code == 200


def test_submits_beyond_the_limit_get_429_json_and_store_nothing(client, campaign, settings):
    settings.RATE_PER_WORKER = 3
    ip = address()
    url = (
        task_url(campaign, "task_submit")
        + "?"
        + "&".join(f"{k}={v}" for k, v in mturk("W1").items())
    )
    body = json.dumps({"token": "forged", "item": 1, "answers": ANSWERS})
    statuses = [
        client.post(url, body, content_type="application/json", REMOTE_ADDR=ip).status_code
        for _ in range(3)
    ]
    assert 429 not in statuses  # refused for the forged token, not by the limit
    refused = client.post(url, body, content_type="application/json", REMOTE_ADDR=ip)
    assert refused.status_code == 429
    data = refused.json()
    assert data["ok"] is False and "not saved" in data["error"]
    assert data["retry_after"] == int(refused["Retry-After"])


def test_a_real_worker_answering_and_reloading_passes_the_default_limits(client, campaign):
    ip, arrival = address(), mturk("REALWORKER")
    query = "&".join(f"{k}={v}" for k, v in arrival.items())
    for _ in range(10):  # a burst of reloads
        page = client.get(task_url(campaign), arrival, REMOTE_ADDR=ip)
        assert page.status_code == 200
    for _ in range(campaign.items_per_assignment):
        html = client.get(task_url(campaign), arrival, REMOTE_ADDR=ip).content.decode()
        token = re.search(r'name="token" value="([^"]+)"', html).group(1)
        item = re.search(r'name="item" value="(\d+)"', html).group(1)
        sent = client.post(
            task_url(campaign, "task_submit") + "?" + query,
            {"token": token, "item": item, **ANSWERS},
            REMOTE_ADDR=ip,
        )
        assert sent.status_code == 302, sent.content.decode()[:300]
    done = client.get(sent["Location"], REMOTE_ADDR=ip)
    assert done.status_code == 200 and "Submit the HIT" in done.content.decode()


def test_a_limit_of_zero_turns_it_off(client, campaign, settings):
    settings.RATE_PER_IP, settings.RATE_PER_WORKER = 0, 0
    ip = address()
    for _ in range(40):
        assert client.get(task_url(campaign), mturk("W1"), REMOTE_ADDR=ip).status_code == 200


def test_limits_come_from_the_settings(campaign, settings):
    settings.RATE_PER_IP, settings.RATE_PER_WORKER = 7, 3
    settings.CHAT_FRAMES_PER_SECOND, settings.CHAT_FRAME_BURST = 2, 4
    limits = limits_of(campaign)
    assert (limits.per_ip, limits.per_worker) == (7, 3)
    assert (limits.frames_per_second, limits.frame_burst) == (2, 4)


def test_a_campaigns_own_limits_take_precedence_and_may_change_while_live(
    client, campaign, settings
):
    settings.RATE_PER_IP = 1000
    campaign_settings_update(campaign=campaign, values={"rate_per_ip": 2})
    ip = address()
    for n in range(2):
        assert client.get(task_url(campaign), mturk(f"L{n}"), REMOTE_ADDR=ip).status_code == 200
    assert client.get(task_url(campaign), mturk("L2"), REMOTE_ADDR=ip).status_code == 429
    campaign_settings_update(campaign=campaign, values={"rate_per_ip": None})  # the site's
    assert client.get(task_url(campaign), mturk("L3"), REMOTE_ADDR=ip).status_code == 200
    campaign_settings_update(
        campaign=campaign, values={"rate_per_worker": 7, "chat_frames_per_second": 2}
    )
    campaign.refresh_from_db()
    assert limits_of(campaign).per_worker == 7
    assert frame_limiter(campaign_id=campaign.pk).rate == 2


def test_the_frame_limiter_refuses_a_burst_then_refills_at_its_rate():
    now = [100.0]
    limiter = FrameLimiter(5, 20, clock=lambda: now[0])
    for _ in range(20):
        limiter.take()
    with pytest.raises(RateLimited) as refused:
        limiter.take()
    assert refused.value.code == "rate_limited" and refused.value.status_code == 429
    assert "wait 1 second" in refused.value.message
    now[0] += 1.0  # one second: five more frames
    for _ in range(5):
        limiter.take()
    with pytest.raises(RateLimited):
        limiter.take()
    unlimited = FrameLimiter(0, 1, clock=lambda: now[0])
    for _ in itertools.repeat(None, 100):
        unlimited.take()


@pytest.mark.django_db(transaction=True)
def test_a_chat_socket_sending_too_fast_gets_rate_limited_error_frames(settings):
    from tests.chat.helpers import Client, ed_campaign, ws_path

    settings.CHAT_FRAMES_PER_SECOND, settings.CHAT_FRAME_BURST = 1, 3
    path = ws_path(ed_campaign(), "fast")

    async def scenario() -> list[dict]:
        client = Client(path)
        await client.connect()
        for _ in range(4):
            await client.send(type="ping")
        frames = [await client.until(lambda f: f["type"] in ("pong", "error")) for _ in range(4)]
        await client.communicator.disconnect()
        return frames

    frames = async_to_sync(scenario)()
    assert [f["type"] for f in frames] == ["pong", "pong", "pong", "error"]
    assert frames[-1]["code"] == "rate_limited" and "wait" in frames[-1]["message"]


def test_with_redis_url_the_cache_is_redis_so_every_web_process_counts_together():
    probe = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps(settings.CACHES['default']))"
    )
    env = {"DJANGO_SETTINGS_MODULE": "evalsite.settings", "EVALSITE_TASKS_INLINE": "1"}
    base = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}

    def caches(**extra: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=ROOT,
            env=base | env | extra,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    redis = caches(REDIS_URL="redis://127.0.0.1:6379/3")
    assert redis["BACKEND"] == "evalsite.cache.OutageTolerantRedisCache"  # Django's, degrading
    assert redis["LOCATION"] == "redis://127.0.0.1:6379/3"
    assert redis["OPTIONS"]["pool_class"] == "evalsite.cache.SharedConnectionPool"
    assert caches()["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
