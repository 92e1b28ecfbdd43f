"""The database work on a live chat's bot-turn path, counted (docs/chat.md, Latency)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat import bot
from chat.models import ChatSeat
from chat.snapshot import chat_state
from tests.chat.helpers import ssa_campaign, ws_path

pytestmark = pytest.mark.django_db(transaction=True)

TRANSACTION = ("BEGIN", "COMMIT")  # and SQLite's "BEGIN IMMEDIATE"


def test_a_bot_turn_takes_seven_statements_in_nine_in_the_task_and_three_to_show(
    generic_bot, monkeypatch
):
    monkeypatch.setattr(bot, "bot_turn_enqueue", lambda *args: None)  # the task runs below
    campaign = ssa_campaign(slug="ssa-queries")
    ws_path(campaign, "ida")
    seat = ChatSeat.objects.get()
    counts = []
    for n in range(3):
        with CaptureQueriesContext(connection) as sent:
            bot.ssa_message_send(seat_id=seat.pk, client_id=f"m{n}", text="Hi there.", signals={})
        pending = ChatSeat.objects.get().dialogue.metadata["pending"]
        with CaptureQueriesContext(connection) as ran:
            outcome = bot.bot_turn_run(
                dialogue_id=seat.dialogue_id, index=pending["index"], attempt=pending["since"]
            )
        assert outcome["stored"]
        with CaptureQueriesContext(connection) as shown:
            state = chat_state(seat_id=seat.pk)
        bot.label_submit(seat_id=seat.pk, index=state["needs_label"], answers={"sensible": "no"})
        counts.append(
            tuple(
                len([q for q in c.captured_queries if q["sql"].split()[0] not in TRANSACTION])
                for c in (sent, ran, shown)
            )
        )
    # The message: the seat with its dialogue locked, the turns, the labels, the turn, the
    # dialogue. The task: the turns with the dialogue's state, the endpoint; the dialogue
    # locked, the turn, the Item's key, the Item, the dialogue. The state: seat, turns, labels.
    assert counts == [(5, 7, 3)] * 3, counts
