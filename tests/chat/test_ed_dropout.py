"""A worker whose connection drops out of an ED chat can still finish: the chat page ends
with the pay the policy gives, and the task link leads to MTurk's submit form."""

from __future__ import annotations

import asyncio
import re
from html import unescape
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from annotation.models import Dialogue
from chat.models import ChatSeat
from tests.chat.helpers import Client, ed_campaign, paired

pytestmark = pytest.mark.django_db(transaction=True)


def _mturk_link(campaign, worker: str) -> str:
    return (
        f"/task/{campaign.slug}/?assignmentId=A-{worker}&hitId=HIT1&workerId={worker}"
        "&turkSubmitTo=https://workersandbox.mturk.com"
    )


def _ws_path(client, campaign, worker: str) -> str:
    page = client.get(_mturk_link(campaign, worker))
    assert page.status_code == 200, page.content
    return unescape(re.search(r'data-ws-path="([^"]+)"', page.content.decode()).group(1))


def test_a_worker_who_dropped_out_mid_chat_gets_paid_and_mturks_submit_form(client):
    heartbeat = 1
    campaign = ed_campaign(heartbeat_s=heartbeat, reconnect_grace_s=2)
    paths = [_ws_path(client, campaign, "W1"), _ws_path(client, campaign, "W2")]
    told: dict[str, Any] = {}

    async def scenario() -> None:
        speaker, listener, _, _ = await paired(*paths)
        assert (await speaker.say("I lost my keys on the train."))["type"] == "ack"
        await listener.state(lambda s: len(s.get("utterances", [])) == 1)
        path = listener.communicator.scope["path"] + "?"
        path += listener.communicator.scope["query_string"].decode()
        await listener.close(code=1006)  # the connection drops, for longer than the grace
        told["stayed"] = await speaker.state(lambda s: s["stage"] == "partner_left", timeout=8)
        back = Client(path)
        told["dropped"] = await back.connect()  # the page reconnects: the chat has ended
        told["name"] = listener.name
        await speaker.close()
        await back.close()

    async_to_sync(scenario)()
    dropped = told["name"]
    assert told["dropped"]["stage"] == "left"
    assert "completion code" in told["dropped"]["message"]
    assert "paid" in told["dropped"]["message"]
    seat = ChatSeat.objects.get(worker__external_id=dropped)
    assert seat.stage == "left" and seat.ended_reason == "disconnected"
    assert seat.assignment.status == "submitted"  # paid by policy, like the one who stayed
    assert set(campaign.assignments.values_list("status", flat=True)) == {"submitted"}
    dialogue = Dialogue.objects.get(key__endswith="-1")
    assert dialogue.status == "partial" and dialogue.metadata["left_seat"] == seat.pk

    # The task link (a reload, or the page's finish link) leads to MTurk's submit form.
    page = client.get(_mturk_link(campaign, dropped), follow=True)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="mturk-submit"' in html
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in html
    assert f'name="assignmentId" value="A-{dropped}"' in html


@pytest.mark.parametrize(("code", "ends"), [(1006, False), (4000, True)])
def test_a_dropped_connection_has_the_reconnect_grace_a_closed_page_half_a_heartbeat(
    client, code, ends
):
    """A connection lost for 2.5 s (longer than half a heartbeat, shorter than the grace)
    keeps the pair; the same wait after the page closed its socket (a closed tab) ends it.
    (The speaker's socket stays silent meanwhile: under the two heartbeats that close it.)"""
    campaign = ed_campaign(heartbeat_s=2, reconnect_grace_s=6)
    paths = [_ws_path(client, campaign, "W1"), _ws_path(client, campaign, "W2")]
    seen: dict[str, Any] = {}

    def stage_of(worker: str) -> str:
        return ChatSeat.objects.get(worker__external_id=worker).stage

    async def scenario() -> None:
        speaker, listener, _, _ = await paired(*paths)
        path = listener.communicator.scope["path"] + "?"
        path += listener.communicator.scope["query_string"].decode()
        await listener.close(code=code)
        await asyncio.sleep(2.5)
        seen["speaker"] = await sync_to_async(stage_of)(speaker.name)
        back = Client(path)
        seen["back"] = await back.connect()
        if seen["back"]["stage"] == "chatting":  # the chat goes on where it was
            assert (await speaker.say("I lost my keys on the train."))["type"] == "ack"
            await back.state(lambda s: len(s.get("utterances", [])) == 1)
        await speaker.close()
        await back.close()

    async_to_sync(scenario)()
    assert seen["speaker"] == ("partner_left" if ends else "chatting")
    assert seen["back"]["stage"] == ("left" if ends else "chatting")
    dialogue = Dialogue.objects.get(key__endswith="-1")
    assert dialogue.status == ("partial" if ends else "active")
