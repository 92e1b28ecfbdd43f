"""Row locks of live chats: the pair's and the seat's rows (and a bot chat's dialogue with its
seat). They take their place in the one lock order written in ``annotation.locks`` (steps 5
and 6): a conversation, then its seats."""

from __future__ import annotations

from django.db.models import Model, QuerySet

from chat.models import ChatPair, ChatSeat


def _pk(row: Model | int) -> int:
    return row if isinstance(row, int) else int(row.pk)


def pair_lock(pair: ChatPair | int) -> ChatPair:
    """Lock an ED pair's row: everything in its conversations happens under it."""
    return ChatPair.objects.select_for_update().get(pk=_pk(pair))


def seat_dialogue_lock(seat_id: int) -> ChatSeat | None:
    """Return a bot chat's seat with its campaign, worker, assignment and dialogue in one
    query, the dialogue's row locked (not the seat's); None if the seat has no dialogue."""
    return (
        ChatSeat.objects.select_related("campaign", "worker", "assignment", "dialogue")
        .select_for_update(of=("dialogue",))
        .filter(pk=seat_id, dialogue__isnull=False)  # an inner join: its row can be locked
        .first()
    )


def seat_lock(seat: ChatSeat | int, *, with_campaign: bool = False) -> ChatSeat:
    """Lock a chat seat's row and return it fresh; with its campaign read in the same query
    when asked (the campaign is not locked)."""
    if with_campaign:
        query = ChatSeat.objects.select_for_update(of=("self",)).select_related("campaign")
        return query.get(pk=_pk(seat))
    return ChatSeat.objects.select_for_update().get(pk=_pk(seat))


def seat_lock_first(seats: QuerySet[ChatSeat]) -> ChatSeat | None:
    """Lock and return the first seat of ``seats`` (in their order; the lobby's partner),
    or None if there is none. Waits for a seat another transaction holds."""
    return seats.select_for_update().first()
