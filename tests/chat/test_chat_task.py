"""The bot turn's Celery task as configured: the inference queue, late acks, no result kept."""

from chat.tasks import chat_bot_turn
from evalsite.celery import app


def test_bot_turns_keep_no_result_and_stay_on_the_inference_queue():
    # Nothing reads a bot turn's result (the turn is in the database and pushed over the
    # channel layer); kept, it cost a result SUBSCRIBE per .delay() and a write per turn.
    assert chat_bot_turn.ignore_result is True
    assert chat_bot_turn.acks_late is True
    assert chat_bot_turn.time_limit and chat_bot_turn.soft_time_limit
    assert app.amqp.router.route({}, chat_bot_turn.name)["queue"].name == "inference"
