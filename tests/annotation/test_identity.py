"""Worker identity (issue #17): nobody takes another's work, and nobody drains an open study.

The three impersonations measured against the old main each have a test here: a third party
answering under a local worker's id, a chat seat taken over, and a made-up MTurk
assignmentId returning the victim's assignment.
"""

import asyncio
import csv
import io
import re
from unittest import mock

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from annotation.models import Assignment, Judgment, Worker
from annotation.services import assignment_token, campaign_create, campaign_set_status
from chat.models import ChatSeat
from chat.seats import chat_arrive
from providers import Arrival
from recruitment.services import worker_links
from tests.chat.helpers import Client, ed_campaign
from tests.factories import CampaignFactory, ItemFactory, likert_payload

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}


def _closed_study(slug: str = "lab", items: int = 4):
    campaign = campaign_create(slug=slug, name="Lab", protocol="likert", redundancy=3)
    for n in range(items):
        ItemFactory(campaign=campaign, payload=likert_payload(n))
    return campaign_set_status(campaign=campaign, status="live")


def _form(response):
    html = response.content.decode()
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    item = re.search(r'name="item" value="(\d+)"', html).group(1)
    action = re.search(r'action="([^"]+)"', html).group(1).replace("&amp;", "&")
    return token, item, action


@pytest.mark.django_db
def test_a_new_local_study_opens_only_by_each_workers_signed_link(client):
    campaign = _closed_study()
    assert campaign.open_links is False
    (_, link), (_, other) = worker_links(campaign=campaign, worker_ids=["alice", "bob"])
    assert client.get(link).status_code == 200
    bare = client.get(reverse("annotation:task", args=["lab"]) + "?workerId=alice")
    assert bare.status_code == 403 and "personal link" in bare.content.decode()
    swapped = other.replace("workerId=bob", "workerId=alice")  # bob's key, alice's id
    assert client.get(swapped).status_code == 403
    elsewhere = _closed_study("lab-2")
    assert client.get(link.replace("/lab/", "/lab-2/")).status_code == 403
    assert not Assignment.objects.filter(campaign=elsewhere).exists()
    assert list(Worker.objects.values_list("external_id", flat=True)) == ["alice"]


@pytest.mark.django_db
def test_a_third_party_cannot_answer_under_a_local_workers_id(client):
    """Impersonation 1: on the old main, opening the task link with someone's id handed out
    a valid token and stored the third party's answers as theirs."""
    campaign = _closed_study()
    [(_, link)] = worker_links(campaign=campaign, worker_ids=["alice"])
    token, item, action = _form(client.get(link))  # alice at work
    intruder = reverse("annotation:task", args=["lab"]) + "?workerId=alice"
    assert client.get(intruder).status_code == 403
    submit = reverse("annotation:task_submit", args=["lab"]) + "?workerId=alice"
    stolen = client.post(submit, {"token": "forged", "item": item, **ANSWERS})
    assert stolen.status_code == 403 and not Judgment.objects.exists()
    assert client.post(action, {"token": token, "item": item, **ANSWERS}).status_code == 302
    assert Judgment.objects.filter(worker__external_id="alice").count() == 3


MTURK = {"hitId": "HIT1", "workerId": "AVICTIM", "turkSubmitTo": "https://www.mturk.com"}


def _mturk_url(campaign, name="task", **params):
    query = "&".join(f"{k}={v}" for k, v in ({**MTURK, **params}).items())
    return reverse(f"annotation:{name}", args=[campaign.slug]) + "?" + query


@pytest.mark.django_db
def test_a_made_up_assignment_id_neither_takes_nor_returns_the_victims_assignment(client):
    """Impersonation 3: on the old main, MTurk parameters with a made-up assignmentId marked
    the victim's open assignment returned, and the victim's next submit got 403."""
    campaign = CampaignFactory()
    for n in range(3):
        ItemFactory(campaign=campaign, payload=likert_payload(n))
    token, item, action = _form(client.get(_mturk_url(campaign, assignmentId="REAL1")))
    attack = client.get(_mturk_url(campaign, assignmentId="MADEUP"))
    assert attack.status_code == 403
    assert "another session" in attack.content.decode()
    victim = Assignment.objects.get(provider_assignment_id="REAL1")
    assert victim.status == Assignment.Status.ACCEPTED
    assert not Assignment.objects.filter(provider_assignment_id="MADEUP").exists()
    # The victim's token under the attacker's session does nothing either.
    forged = _mturk_url(campaign, "task_submit", assignmentId="MADEUP")
    assert client.post(forged, {"token": token, "item": item, **ANSWERS}).status_code == 403
    assert client.post(action, {"token": token, "item": item, **ANSWERS}).status_code == 302
    assert Judgment.objects.filter(worker__external_id="AVICTIM").count() == 3


@pytest.mark.django_db(transaction=True)
def test_another_session_cannot_take_over_a_chat_seat(client):
    """Impersonation 2: on the old main, opening the chat with the victim's id took their
    seat (their socket closed as 'replaced') and stored the intruder's message as theirs."""
    campaign = ed_campaign()
    victim = Arrival(provider="mturk", worker_id="AVICTIM", assignment_id="REAL1", hit_id="H")
    seat = chat_arrive(campaign=campaign, arrival=victim).seat
    token = assignment_token(seat.assignment)
    path = f"/ws/chat/{campaign.slug}/?workerId=AVICTIM&assignmentId=REAL1&hitId=H"
    path += f"&turkSubmitTo=https://www.mturk.com&token={token}"
    page = client.get(_mturk_url(campaign, assignmentId="MADEUP", hitId="H"))
    assert page.status_code == 403 and "another session" in page.content.decode()
    stolen = path.replace("REAL1", "MADEUP")

    async def sockets() -> tuple[dict, bool]:
        owner = Client(path)
        await owner.connect()
        intruder = Client(stolen)
        connected, _ = await intruder.communicator.connect()
        refused = await intruder.receive() if connected else {"type": "closed"}
        frames = []
        while not await owner.communicator.receive_nothing(timeout=0.5):
            frames.append(await owner.receive())
        await owner.communicator.disconnect()
        return refused, all(f.get("code") != "replaced" for f in frames)

    refused, untouched = asyncio.run(sockets())
    assert refused.get("code") in ("not_allowed", None) or refused["type"] == "closed"
    assert untouched  # no "replaced" error reached the owner
    assert ChatSeat.objects.get(pk=seat.pk).assignment.status == Assignment.Status.ACCEPTED
    assert Assignment.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db
def test_tokens_expire_and_every_page_gives_a_fresh_one(client):
    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    url = reverse("annotation:task", args=[campaign.slug]) + "?workerId=w1"
    token, item, action = _form(client.get(url))
    later = __import__("time").time() + 3600
    with override_settings(TOKEN_MAX_AGE=600), mock.patch("time.time", return_value=later):
        stale = client.post(action, {"token": token, "item": item, **ANSWERS})
        assert stale.status_code == 403 and "open too long" in stale.content.decode()
        token, item, action = _form(client.get(url))
        assert client.post(action, {"token": token, "item": item, **ANSWERS}).status_code == 302


@pytest.mark.django_db
def test_an_open_link_study_cannot_be_drained_from_one_address(client):
    campaign = CampaignFactory(redundancy=1, open_arrivals_per_address=20)
    ItemFactory.create_batch(40, campaign=campaign)
    url = reverse("annotation:task", args=[campaign.slug]) + "?workerId="
    codes = [client.get(url + f"bot{n}", REMOTE_ADDR="203.0.113.9").status_code for n in range(30)]
    assert codes[:20] == [200] * 20 and set(codes[20:]) == {429}
    refused = client.get(url + "bot99", REMOTE_ADDR="203.0.113.9")
    assert (
        int(refused["Retry-After"]) > 0 and "Too many new participants" in refused.content.decode()
    )
    assert Assignment.objects.filter(campaign=campaign).count() == 20
    real = client.get(url + "real-worker", REMOTE_ADDR="198.51.100.7")
    assert real.status_code == 200 and 'name="item"' in real.content.decode()
    # Known workers come back whatever the count: the limit is on new participants.
    assert client.get(url + "bot3", REMOTE_ADDR="203.0.113.9").status_code == 200


@pytest.mark.django_db
def test_rotating_ipv6_addresses_inside_one_64_is_one_address_to_the_open_link_limit(client):
    campaign = CampaignFactory(redundancy=1, open_arrivals_per_address=5)
    ItemFactory.create_batch(20, campaign=campaign)
    url = reverse("annotation:task", args=[campaign.slug]) + "?workerId="
    codes = [
        client.get(url + f"bot{n}", REMOTE_ADDR=f"2001:db8:7:7::{n + 1:x}").status_code
        for n in range(8)
    ]
    assert codes == [200] * 5 + [429] * 3
    other = client.get(url + "elsewhere", REMOTE_ADDR="2001:db8:7:8::1")  # another /64
    assert other.status_code == 200
    assert Assignment.objects.filter(campaign=campaign).count() == 6


@pytest.mark.django_db
def test_a_worker_holds_one_lease_however_often_they_reload(client, campaign):
    url = reverse("annotation:task", args=[campaign.slug]) + "?workerId=w1"
    items = {_form(client.get(url))[1] for _ in range(5)}
    assert len(items) == 1
    assert campaign.items.filter(leases__isnull=False).count() == 1


@pytest.mark.django_db
def test_the_links_command_writes_links_that_open_the_study(client, tmp_path):
    _closed_study()
    ids = tmp_path / "ids.txt"
    ids.write_text("\ufeffalice\nbob\n", encoding="utf-8")
    out = io.StringIO()
    call_command("worker_links", "lab", "--file", str(ids), "--count", "2", stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["worker_id"] for r in rows[:2]] == ["alice", "bob"] and len(rows) == 4
    assert all(client.get(r["link"]).status_code == 200 for r in rows)
    with pytest.raises(Exception, match="worker id"):
        call_command("worker_links", "lab", "--workers", "bad id!", stdout=io.StringIO())


@pytest.mark.django_db
def test_ids_invented_to_hold_items_give_them_back_after_the_short_first_lease(client):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Lease

    campaign = CampaignFactory(redundancy=1, lease_seconds=3600, open_arrivals_per_address=100)
    ItemFactory.create_batch(3, campaign=campaign)
    url = reverse("annotation:task", args=[campaign.slug]) + "?workerId="
    for n in range(3):
        assert client.get(url + f"bot{n}", REMOTE_ADDR="203.0.113.9").status_code == 200
    held = Lease.objects.values_list("expires_at", "created_at")
    assert all(e - c <= timedelta(seconds=300) for e, c in held)  # not the campaign's hour
    real = url + "real-worker"
    assert b"No more items" in client.get(real, REMOTE_ADDR="198.51.100.7").content
    later = timezone.now() + timedelta(seconds=301)
    with mock.patch("django.utils.timezone.now", return_value=later):
        page = client.get(real, REMOTE_ADDR="198.51.100.7")
        token, item, action = _form(page)
        assert client.post(action, {"token": token, "item": item, **ANSWERS}).status_code == 302
        client.get(real, REMOTE_ADDR="198.51.100.7")  # the next item: a full lease now
    mine = Lease.objects.filter(worker__external_id="real-worker").get()
    assert mine.expires_at - mine.created_at == timedelta(seconds=3600)


@pytest.mark.django_db
def test_an_open_link_id_once_used_with_its_key_opens_nothing_to_a_third_party(client):
    """Open-link impersonation (issue #35): before, anyone who knew or guessed an open-link
    worker's id got that worker's assignment, token and completion code. Now the first page
    hands the worker their personal link (the id's key, in the page's links and address bar);
    once they come back with it, the bare id is refused."""
    from recruitment.models import LinkClaim

    campaign = CampaignFactory(redundancy=1, items_per_assignment=3)
    ItemFactory.create_batch(6, campaign=campaign, payload=likert_payload(0))
    bare = reverse("annotation:task", args=[campaign.slug]) + "?workerId=alice"
    first = client.get(bare)
    assert first.status_code == 200
    link = re.search(r'name="evalsite-personal-link" content="([^"]+)"', first.content.decode())
    assert link is not None and "key=" in link.group(1)
    token, item, action = _form(first)
    assert "key=" in action  # the answer goes back with the key, and on to the next page
    sent = client.post(action, {"token": token, "item": item, **ANSWERS})
    assert sent.status_code == 302 and "key=" in sent.url
    assert not LinkClaim.objects.exists()
    assert client.get(sent.url).status_code == 200  # the page after: the id is claimed
    assert LinkClaim.objects.filter(campaign=campaign, worker__external_id="alice").exists()

    intruder = client.get(bare, REMOTE_ADDR="198.51.100.66")
    assert intruder.status_code == 403 and "personal link" in intruder.content.decode()
    wrong_key = client.get(bare + "&key=" + "A" * 27, REMOTE_ADDR="198.51.100.66")
    assert wrong_key.status_code == 403
    back = client.get(link.group(1).replace("&amp;", "&"))  # alice's bookmark still works
    assert back.status_code == 200 and 'name="item"' in back.content.decode()
    assert "evalsite-personal-link" not in back.content.decode()  # it already has the key
    assert Judgment.objects.filter(worker__external_id="alice").count() == 3
    assert Assignment.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db
def test_a_claimed_open_link_id_is_refused_on_every_worker_page(client):
    """The consent, training and chat pages refuse the bare claimed id as the task page does."""
    from recruitment.models import LinkClaim

    campaign = CampaignFactory(consent_text="I agree to take part.")
    ItemFactory.create_batch(3, campaign=campaign, payload=likert_payload(0))
    worker = Worker.objects.create(provider="local", external_id="bob")
    LinkClaim.objects.create(campaign=campaign, worker=worker)
    for name in ("task_consent", "task_training", "task"):
        url = reverse(f"annotation:{name}", args=[campaign.slug]) + "?workerId=bob"
        response = client.get(url, follow=True)
        assert response.status_code == 403, name
    chat = ed_campaign(slug="ed-claimed")
    LinkClaim.objects.create(campaign=chat, worker=worker)
    response = client.get(reverse("annotation:task", args=[chat.slug]) + "?workerId=bob")
    assert response.status_code == 403
    other = CampaignFactory(slug="not-claimed-here")
    ItemFactory(campaign=other, payload=likert_payload(0))
    url = reverse("annotation:task", args=[other.slug]) + "?workerId=bob"
    assert client.get(url).status_code == 200  # a claim binds one campaign only
