"""The chat page: the task link of a chat study renders it, with its websocket address."""

import re

import pytest

from chat.models import ChatSeat
from tests.chat.helpers import ed_campaign, ssa_campaign

pytestmark = pytest.mark.django_db


def test_the_task_link_of_a_chat_study_renders_the_chat_page_once_per_assignment(client):
    campaign = ed_campaign()
    url = f"/task/{campaign.slug}/?workerId=w1"
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    ws = re.search(r'data-ws-path="([^"]+)"', html).group(1)
    # the socket's URL carries the open link's key (the id's personal link) and the token
    assert ws.startswith(f"/ws/chat/{campaign.slug}/?workerId=w1&amp;key=")
    assert "&amp;token=" in ws
    assert "frame-ancestors" in page["Content-Security-Policy"]
    client.get(url)  # a reload: the same seat
    assert ChatSeat.objects.count() == 1 and len(ChatSeat.objects.get().offered) == 3


def test_an_mturk_preview_describes_the_chat_and_creates_nothing(client):
    campaign = ed_campaign()
    page = client.get(
        f"/task/{campaign.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1"
        "&workerId=&turkSubmitTo=https://workersandbox.mturk.com"
    )
    assert page.status_code == 200 and b"Preview" in page.content
    assert not ChatSeat.objects.exists()


def test_a_chat_study_with_no_registered_model_has_nothing_to_do(client):
    campaign = ssa_campaign(models=["not-registered"])
    page = client.get(f"/task/{campaign.slug}/?workerId=w2")
    assert page.status_code == 200 and b"No more items for you" in page.content
    assert not ChatSeat.objects.exists()


def test_a_paused_chat_study_looks_like_an_unknown_address(client):
    campaign = ed_campaign()
    campaign.status = "paused"
    campaign.save()
    page = client.get(f"/task/{campaign.slug}/?workerId=w3")
    unknown = client.get("/task/no-such-study/?workerId=w3")
    assert page.status_code == unknown.status_code == 404
    assert page.content == unknown.content and b"no open study" in page.content
