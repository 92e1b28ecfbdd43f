"""The worker's hot path and a chat message, in process: milliseconds and SQL queries each.

One worker's task-page GET + answer POST through Django's test client on a campaign of
``--items`` Likert items, then ED messages between paired workers through the services the
chat consumer calls. Queries are counted exactly; times are medians-worthy only on an idle
machine. Run it in two checkouts to compare revisions (e.g. before and after a refactor)::

    .venv/bin/python bench/hot_path.py                  # this checkout
    (cd ../old && ../main/.venv/bin/python ../main/bench/hot_path.py)   # another revision

It uses a throwaway SQLite database under the system's temp folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the checkout whose code is measured
TMP = Path(tempfile.mkdtemp(prefix="evalsite-hot-path-"))
os.environ["DATABASE_URL"] = f"sqlite:///{TMP / 'bench.sqlite3'}"
os.environ["EVALSITE_DATA_DIR"] = str(TMP / "var")
os.environ.setdefault("EVALSITE_TASKS_INLINE", "1")
os.environ.setdefault("EVALSITE_RATE_PER_IP", "0")  # one client, many requests
os.environ.setdefault("EVALSITE_RATE_PER_WORKER", "0")
os.environ["DJANGO_SETTINGS_MODULE"] = "evalsite.settings"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, reset_queries  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}
SITUATION = "I finally finished the marathon I had trained for all year long."


def worker_cycles(items: int, cycles: int) -> tuple[float, float]:
    """Return ms and queries per GET+POST cycle of one worker."""
    from tests.factories import CampaignFactory, ItemFactory

    campaign = CampaignFactory(redundancy=3, items_per_assignment=10**6)
    ItemFactory.create_batch(items, campaign=campaign)
    client = Client()
    url = f"/task/{campaign.slug}/?workerId=bench"
    queries, start = 0, time.perf_counter()
    for _ in range(cycles):
        reset_queries()
        with CaptureQueriesContext(connection) as captured:
            html = client.get(url).content.decode()
            token = re.search(r'name="token" value="([^"]+)"', html)
            item = re.search(r'name="item" value="(\d+)"', html)
            action = re.search(r'action="([^"]+)"', html)
            assert token and item and action, "the task page shows no item"
            form = {"token": token[1], "item": item[1], **ANSWERS}
            assert client.post(action[1].replace("&amp;", "&"), form).status_code == 302
        queries += len(captured.captured_queries)
    return (time.perf_counter() - start) / cycles * 1000, queries / cycles


def chat_messages(pairs: int, messages: int) -> tuple[float, float]:
    """Return ms and queries per ED message between paired workers."""
    from annotation.models import Campaign
    from annotation.services import campaign_create, campaign_set_status
    from chat import empathetic
    from chat.models import ChatSeat
    from chat.seats import chat_arrive, seat_connect
    from chat.snapshot import pair_dialogues
    from providers import Arrival

    # Open links where the revision has them (a bare workerId); older ones had nothing else.
    extra = {"controls": {"open_links": True}} if hasattr(Campaign, "open_links") else {}
    ed = campaign_create(slug="bench-ed", name="ED", protocol="empathetic_chat", **extra)
    ed = campaign_set_status(campaign=ed, status="live")
    spent, queries, count = 0.0, 0, 0
    for pair in range(pairs):
        seats = []
        for k in (0, 1):
            arrival = Arrival(provider="local", worker_id=f"w{pair}-{k}")
            seat = chat_arrive(campaign=ed, arrival=arrival).seat
            assert seat is not None
            seat_connect(seat_id=seat.pk, channel_name=f"chan-{pair}-{k}")
            empathetic.situation_submit(
                seat_id=seat.pk, emotion=seat.offered[0], text=SITUATION, signals={}
            )
            seats.append(seat)
        empathetic.lobby_pair(seat_id=seats[1].pk)
        dialogue = pair_dialogues(ChatSeat.objects.get(pk=seats[0].pk))[0]
        speaker_first = dialogue.metadata.get("speaker_seat") == seats[0].pk
        order = seats if speaker_first else seats[::-1]
        for i in range(messages):
            reset_queries()
            start = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                empathetic.utterance_send(
                    seat_id=order[i % 2].pk,
                    client_id=f"c{pair}-{i}",
                    text=f"message {i} of pair {pair}",
                    signals={},
                    dialogue_id=dialogue.pk,
                    role="",
                )
            spent += time.perf_counter() - start
            queries += len(captured.captured_queries)
            count += 1
    return spent / count * 1000, queries / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000, help="items in the campaign")
    parser.add_argument("--cycles", type=int, default=300, help="GET+POST cycles")
    parser.add_argument("--pairs", type=int, default=20, help="ED pairs, 8 messages each")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    setup_test_environment()  # the test client's host
    ms, queries = worker_cycles(args.items, args.cycles)
    print(f"worker cycle (GET+POST): {ms:.2f} ms, {queries:.1f} queries")
    ms, queries = chat_messages(args.pairs, 8)
    print(f"ED chat message: {ms:.2f} ms, {queries:.1f} queries")


if __name__ == "__main__":
    main()
