"""Helpers of the live chat tests: campaigns, arrivals and websocket clients."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from annotation.models import Campaign
from annotation.services import assignment_token, campaign_create, campaign_set_status
from chat.seats import chat_arrive
from evalsite.asgi import application
from providers import Arrival

ORIGIN = [(b"origin", b"http://localhost")]
SITUATION = "I finally finished the marathon I had trained for all year long."


def ed_campaign(slug: str = "ed-chat", **parameters: Any) -> Campaign:
    """A live ED collection campaign with fast timings for tests."""
    campaign = campaign_create(
        slug=slug,
        name="ED chat",
        protocol="empathetic_chat",
        parameters={"heartbeat_s": 1, "lobby_timeout_s": 30, **parameters},
        controls={"open_links": True},  # the tests arrive with bare worker ids
    )
    return campaign_set_status(campaign=campaign, status="live")


def ssa_campaign(slug: str = "ssa-chat", models: list[str] | None = None, **parameters: Any):
    """A live interactive SSA campaign with fast timings for tests."""
    campaign = campaign_create(
        slug=slug,
        name="Interactive SSA",
        protocol="ssa_interactive",
        parameters={"models": models or ["generic-bot"], "heartbeat_s": 1, **parameters},
        controls={"open_links": True},  # the tests arrive with bare worker ids
    )
    return campaign_set_status(campaign=campaign, status="live")


def ws_path(campaign: Campaign, worker_id: str) -> str:
    """Arrive as ``worker_id`` (creating the seat) and return the seat's websocket path."""
    visit = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker_id))
    assert visit.kind == "chat", visit
    token = assignment_token(visit.assignment)
    return f"/ws/chat/{campaign.slug}/?workerId={worker_id}&token={token}"


class Client:
    """A websocket client of the chat (channels' communicator) with frame helpers."""

    def __init__(self, path: str) -> None:
        self.communicator = WebsocketCommunicator(application, path, headers=ORIGIN)
        self.client_ids = 0
        self.name = path.split("workerId=")[1].split("&")[0]

    async def connect(self) -> dict[str, Any]:
        connected, _ = await self.communicator.connect()
        assert connected
        return await self.receive()

    async def receive(self, timeout: float = 5) -> dict[str, Any]:
        return json.loads(await self.communicator.receive_from(timeout=timeout))

    async def until(self, predicate, timeout: float = 5) -> dict[str, Any]:
        """Return the first frame that satisfies ``predicate``."""
        while True:
            frame = await self.receive(timeout)
            if predicate(frame):
                return frame

    async def send(self, **frame: Any) -> None:
        await self.communicator.send_to(text_data=json.dumps(frame))

    async def say(self, text: str, **extra: Any) -> dict[str, Any]:
        """Send a message and return its ack (or error) frame."""
        self.client_ids += 1
        await self.send(
            type="message", client_id=f"{self.name}-{self.client_ids}", text=text, **extra
        )
        return await self.until(lambda f: f["type"] in ("ack", "error"))

    async def state(self, predicate=lambda s: True, timeout: float = 5) -> dict[str, Any]:
        return await self.until(lambda f: f["type"] == "state" and predicate(f), timeout)

    async def close(self, code: int = 4000) -> None:
        """Close the socket as the page does when it goes away (4000); a lost connection
        (no close frame from the page) is ``code=1006``."""
        await self.communicator.disconnect(code=code)


arrive = sync_to_async(ws_path)


async def paired(path_a: str, path_b: str) -> tuple[Client, Client, dict, dict]:
    """Connect two workers, write both situations and return them paired (speaker first)."""
    a, b = Client(path_a), Client(path_b)
    for client in (a, b):
        state = await client.connect()
        await client.send(type="situation", emotion=state["offered"][0], text=SITUATION)
        assert (await client.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
    sa = await a.state(lambda s: s["stage"] == "chatting")
    sb = await b.state(lambda s: s["stage"] == "chatting")
    if sa["role"] == "speaker":
        return a, b, sa, sb
    return b, a, sb, sa
