"""Celery tasks of live chats: the bot's turns (the ``inference`` queue) and the housekeeping
part that ends chats nobody will finish."""

from typing import Any

from celery import shared_task

from chat.arena import arena_reply_run
from chat.bot import bot_turn_run, ratings_sweep
from chat.empathetic import chats_sweep


@shared_task(acks_late=True, soft_time_limit=300, time_limit=330)
def chat_bot_turn(dialogue_id: int, index: int, attempt: str | None = None) -> dict:
    """Generate, store and push the bot's turn ``index`` of a live chat (interactive SSA).

    On the ``inference`` queue, beside modelhub's tasks: it calls modelhub's ``bot_reply``
    service (the model's decoding preset and repetition filter apply), stores the turn, and
    tells the chat's websocket through the channel layer. Safe to run twice: a turn that is no
    longer awaited (stored, failed or past its deadline) is left alone. No retries: the
    worker is told at once and may ask again.
    """
    return bot_turn_run(dialogue_id=dialogue_id, index=index, attempt=attempt)


@shared_task(acks_late=True, soft_time_limit=300, time_limit=330)
def chat_arena_turn(dialogue_id: int, index: int, attempt: str | None = None) -> dict:
    """Generate, store and push one side's reply ``index`` of an arena conversation (one task
    per side, so both models answer at once; the ``inference`` queue). Safe to run twice like
    ``chat_bot_turn``; a failure ends the conversation fairly (``chat.arena.arena_fail``)."""
    return arena_reply_run(dialogue_id=dialogue_id, index=index, attempt=attempt)


def housekeeping(**_: Any) -> dict[str, int]:
    """Receiver of the core's ``housekeeping`` signal: finish chats left at their closing
    ratings and end pairs whose workers both went away (idempotent)."""
    return {"unrated_chats_done": ratings_sweep(), "chats_ended": chats_sweep()}
