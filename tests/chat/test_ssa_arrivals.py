"""Interactive SSA: workers arriving at once never pass a model's conversation target."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import close_old_connections, connection

from chat.models import ChatSeat
from chat.seats import chat_arrive
from providers import Arrival
from tests.chat.helpers import ssa_campaign


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_workers_arriving_at_once_never_pass_the_conversations_per_model(generic_bot):
    campaign = ssa_campaign(slug="ssa-rush", conversations_per_model=3)
    kinds: Counter[str] = Counter()
    errors: list[BaseException] = []
    barrier = threading.Barrier(10)

    def arrive(n: int) -> None:
        try:
            barrier.wait()
            result = chat_arrive(
                campaign=campaign, arrival=Arrival(provider="local", worker_id=f"r{n}")
            )
            kinds[result.kind] += 1
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=arrive, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[:3]
    assert kinds == {"chat": 3, "nothing": 7}
    assert ChatSeat.objects.filter(campaign=campaign, endpoint="generic-bot").count() == 3
