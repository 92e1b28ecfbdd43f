"""Models moved out of annotation into apps of their own (chat: ChatPair, ChatSeat; recruitment:
Publication, Hit, Payment) keep their tables and rows, and their content types follow (so
permissions and admin history stay attached), both ways (docs/architecture.md, "Layers")."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# The schema before the moves, and after each.
BEFORE = [("annotation", "0020_chatseat_closed_by_page"), ("chat", None), ("recruitment", None)]
AFTER = [("annotation", "0022_recruitment_models_moved")]
MOVED = {"chat": ("chatpair", "chatseat"), "recruitment": ("publication", "hit", "payment")}


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def _rows_written_before_the_moves(apps) -> dict[str, int]:
    """A chat and a paid publication written with annotation's models of migration 0020, and
    a permission on each moved model's content type as it was then; return their ids."""
    get = apps.get_model
    campaign = get("annotation", "Campaign").objects.create(
        slug="old-chat", name="old chat", protocol="empathetic_chat"
    )
    worker = get("annotation", "Worker").objects.create(provider="local", external_id="w1")
    assignment = get("annotation", "Assignment").objects.create(
        campaign=campaign, worker=worker, items_target=1
    )
    pair = get("annotation", "ChatPair").objects.create(campaign=campaign)
    seat = get("annotation", "ChatSeat").objects.create(
        assignment=assignment, campaign=campaign, worker=worker, stage="done", pair=pair, slot=0
    )
    publication = get("annotation", "Publication").objects.create(
        campaign=campaign, provider="local", reserved=Decimal("12.50")
    )
    hit = get("annotation", "Hit").objects.create(
        publication=publication, external_id="h1", max_assignments=2, reward=Decimal("1.00")
    )
    payment = get("annotation", "Payment").objects.create(
        campaign=campaign,
        worker=worker,
        assignment=assignment,
        provider="local",
        kind="reward",
        amount=Decimal("1.00"),
        idempotency_key="reward-1",
    )
    ContentType.objects.filter(app_label__in=MOVED).delete()  # as on a database before them
    permissions = {}
    for models in MOVED.values():
        for model in models:
            content_type, _ = ContentType.objects.get_or_create(app_label="annotation", model=model)
            permissions[model] = Permission.objects.get_or_create(
                content_type=content_type, codename=f"view_{model}", defaults={"name": "view"}
            )[0].pk
    rows = {"chatpair": pair.pk, "chatseat": seat.pk, "publication": publication.pk}
    return rows | {"hit": hit.pk, "payment": payment.pk, "permissions": permissions}


def _labels(permissions: dict[str, int]) -> dict[str, str]:
    chosen = Permission.objects.select_related("content_type").filter(pk__in=permissions.values())
    return {p.content_type.model: p.content_type.app_label for p in chosen}


@pytest.mark.django_db(transaction=True)
def test_the_moved_models_keep_their_rows_and_content_types_both_ways():
    apps = _migrate(BEFORE)
    try:
        rows = _rows_written_before_the_moves(apps)
        apps = _migrate(AFTER)
        seat = apps.get_model("chat", "ChatSeat").objects.get(pk=rows["chatseat"])
        assert (seat.pair_id, seat.stage, seat.slot) == (rows["chatpair"], "done", 0)
        hit = apps.get_model("recruitment", "Hit").objects.get(pk=rows["hit"])
        assert (hit.publication_id, hit.publication.reserved) == (rows["publication"], 12.5)
        payment = apps.get_model("recruitment", "Payment").objects.get(pk=rows["payment"])
        assert (payment.idempotency_key, payment.amount) == ("reward-1", Decimal("1.00"))
        moved = {model: app for app, models in MOVED.items() for model in models}
        assert _labels(rows["permissions"]) == moved
        assert not ContentType.objects.filter(app_label="annotation", model__in=moved).exists()

        apps = _migrate(BEFORE)  # and back: annotation's models read the same rows
        assert apps.get_model("annotation", "ChatSeat").objects.get(pk=rows["chatseat"]).slot == 0
        assert apps.get_model("annotation", "Payment").objects.filter(pk=rows["payment"]).exists()
        assert set(_labels(rows["permissions"]).values()) == {"annotation"}
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_the_moved_tables_keep_their_names():
    from chat.models import ChatPair, ChatSeat
    from recruitment.models import Hit, Payment, Publication

    tables = {m._meta.db_table for m in (ChatPair, ChatSeat, Hit, Payment, Publication)}
    assert tables == {f"annotation_{model}" for models in MOVED.values() for model in models}
    with connection.cursor() as cursor:
        assert tables <= set(connection.introspection.table_names(cursor))
