"""A worker whose connection drops out of an ED chat can still finish: the chat page ends
with the pay the policy gives, and the task link leads to MTurk's submit form."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from annotation.models import ChatSeat, Dialogue
from tests.annotation.chat.helpers import SITUATION, Client, ed_campaign

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
    campaign = ed_campaign(heartbeat_s=heartbeat)
    paths = [_ws_path(client, campaign, "W1"), _ws_path(client, campaign, "W2")]
    told: dict[str, Any] = {}

    async def scenario() -> None:
        a, b = Client(paths[0]), Client(paths[1])
        for c in (a, b):
            state = await c.connect()
            await c.send(type="situation", emotion=state["offered"][0], text=SITUATION)
            await c.until(lambda f: f["type"] == "ack")
        sa = await a.state(lambda s: s["stage"] == "chatting")
        await b.state(lambda s: s["stage"] == "chatting")
        speaker, listener = (a, b) if sa["role"] == "speaker" else (b, a)
        assert (await speaker.say("I lost my keys on the train."))["type"] == "ack"
        await listener.state(lambda s: len(s.get("utterances", [])) == 1)
        path = listener.communicator.scope["path"] + "?"
        path += listener.communicator.scope["query_string"].decode()
        await listener.close()  # the connection drops, for longer than the grace time
        told["stayed"] = await speaker.state(lambda s: s["stage"] == "partner_left", timeout=5)
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
