"""When the platform fails: a Redis (channel layer) outage mid-chat, disconnects on a dead
layer. Each Redis test starts a private redis-server on a free port of its own and stops it;
the shared Redis is never touched."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync

from annotation.models import Dialogue, Utterance
from chat.layer import layer_forget
from chat.models import ChatSeat
from tests.chat.helpers import SITUATION, Client, ed_campaign, ws_path

pytestmark = pytest.mark.django_db(transaction=True)


class PrivateRedis:
    """A redis-server of this test's own, on a free port, without persistence."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.executable, "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def private_redis(settings) -> Iterator[PrivateRedis]:
    """A private redis-server as the channel layer (skipped where redis-server is absent)."""
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip("needs redis-server")
    server = PrivateRedis(executable)
    server.start()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "chat.layer.ChatRedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {"address": server.url, "socket_timeout": 30, "socket_connect_timeout": 2}
                ],
                "pool_max": 10,
                "pool_timeout_s": 2,
            },
        }
    }
    layer_forget()
    yield server
    server.stop()
    layer_forget()


async def _paired(a: Client, b: Client) -> tuple[Client, Client]:
    """Write both situations and return the pair, speaker first."""
    for client in (a, b):
        state = await client.connect()
        await client.send(type="situation", emotion=state["offered"][0], text=SITUATION)
        assert (await client.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
    sa = await a.state(lambda s: s["stage"] == "chatting")
    await b.state(lambda s: s["stage"] == "chatting")
    return (a, b) if sa["role"] == "speaker" else (b, a)


async def _beat(clients: list[Client], heartbeat: float) -> None:
    """Send pings as the pages do, every heartbeat, until cancelled."""
    while True:
        for client in clients:
            await client.send(type="ping")
        await asyncio.sleep(heartbeat)


def _turns(n: int):
    return lambda s: s["stage"] != "chatting" or len(s.get("utterances", [])) == n


def test_a_redis_outage_longer_than_the_departure_timeout_ends_no_chat(private_redis):
    heartbeat = 1  # a closed socket counts as gone after 0.5 s, a silent one after 3 s
    campaign = ed_campaign(heartbeat_s=heartbeat)
    paths = [ws_path(campaign, "ana"), ws_path(campaign, "leo")]

    async def scenario() -> None:
        speaker, listener = await _paired(Client(paths[0]), Client(paths[1]))
        beat = asyncio.ensure_future(_beat([speaker, listener], heartbeat))
        assert (await speaker.say("My sister had a baby today!"))["type"] == "ack"
        assert (await listener.state(_turns(1)))["stage"] == "chatting"

        private_redis.stop()  # the channel layer is down: 8 s, past every departure timeout
        down = time.monotonic()
        assert (await listener.say("Congratulations! Boy or girl?"))["type"] == "ack"
        # Without the layer the speaker's consumer reads the new state itself.
        seen = await speaker.state(_turns(2), timeout=10)
        assert seen["stage"] == "chatting" and seen["your_turn"]
        # A reload during the outage: the new socket opens, though it cannot join its group.
        path = listener.communicator.scope["path"] + "?"
        path += listener.communicator.scope["query_string"].decode()
        await listener.close()
        listener = Client(path)
        listener.client_ids = 1
        restored = await listener.connect()
        assert restored["stage"] == "chatting" and len(restored["utterances"]) == 2
        beat.cancel()
        beat = asyncio.ensure_future(_beat([speaker, listener], heartbeat))
        await asyncio.sleep(max(0.0, 8 - (time.monotonic() - down)))

        private_redis.start()  # back, empty: groups and messages in flight are gone
        assert (await speaker.say("A girl! Her name is Mia."))["type"] == "ack"
        seen = await listener.state(_turns(3), timeout=10)
        assert seen["stage"] == "chatting"
        assert (await listener.say("What a lovely name."))["type"] == "ack"
        await speaker.state(_turns(4), timeout=10)
        await speaker.send(type="end")  # the first conversation ends as usual
        second = await listener.state(lambda s: s.get("round") == 2, timeout=10)
        assert second["role"] == "speaker"
        beat.cancel()
        await speaker.close()
        await listener.close()

    async_to_sync(scenario)()
    stages = set(ChatSeat.objects.values_list("stage", flat=True))
    assert stages == {"chatting"}  # neither worker was declared gone
    first = Dialogue.objects.get(key__endswith="-1")
    assert first.status == "complete" and not first.flagged
    assert Utterance.objects.filter(dialogue=first).count() == 4


def test_a_partner_away_through_the_outage_and_back_after_it_is_not_declared_gone(private_redis):
    heartbeat = 1
    campaign = ed_campaign(heartbeat_s=heartbeat)
    paths = [ws_path(campaign, "ida"), ws_path(campaign, "jon")]

    async def scenario() -> None:
        speaker, listener = await _paired(Client(paths[0]), Client(paths[1]))
        assert (await speaker.say("I passed my driving test."))["type"] == "ack"
        path = listener.communicator.scope["path"] + "?"
        path += listener.communicator.scope["query_string"].decode()
        # The outage closes the listener's socket; their page backs off (as measured, the
        # partner who reconnected first declared them gone and they ended unpaid).
        private_redis.stop()
        await listener.close()
        beat = asyncio.ensure_future(_beat([speaker], heartbeat))
        await asyncio.sleep(6)
        private_redis.start()
        await asyncio.sleep(3)  # the page is still backing off
        back = Client(path)
        restored = await back.connect()
        assert restored["stage"] == "chatting" and len(restored["utterances"]) == 1
        assert (await back.say("Well done! Was it hard?"))["type"] == "ack"
        seen = await speaker.state(_turns(2), timeout=10)
        assert seen["stage"] == "chatting"
        beat.cancel()
        await speaker.close()
        await back.close()

    async_to_sync(scenario)()
    assert set(ChatSeat.objects.values_list("stage", flat=True)) == {"chatting"}
    assert not Dialogue.objects.filter(flagged=True).exists()


def test_disconnect_handlers_survive_a_dead_layer_and_a_burst_beyond_the_pool(
    private_redis, settings
):
    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    settings.CHANNEL_LAYERS = {
        "default": {**settings.CHANNEL_LAYERS["default"], "CONFIG": {**config, "pool_max": 2}}
    }
    campaign = ed_campaign()
    paths = [ws_path(campaign, f"w{n}") for n in range(24)]

    async def scenario() -> None:
        clients = [Client(path) for path in paths]
        for client in clients:
            await client.connect()
        # All at once, more than the pool's connections (2): calls wait for one.
        await asyncio.gather(*(client.close() for client in clients[:12]))
        private_redis.stop()  # and with the layer dead
        await asyncio.gather(*(client.close() for client in clients[12:]))

    async_to_sync(scenario)()
    assert list(ChatSeat.objects.exclude(channel_name="").values_list("pk", flat=True)) == []
