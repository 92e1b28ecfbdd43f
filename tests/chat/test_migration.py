"""Moving ChatPair and ChatSeat from annotation to chat keeps the tables, their rows, and the
content types (so permissions and admin history stay attached), both ways."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotation", "0020_chatseat_closed_by_page"), ("chat", None)]
AFTER = [("annotation", "0021_chat_models_moved"), ("chat", "0001_initial")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def _rows_written_before_the_move(apps) -> tuple[int, int, int]:
    """A campaign with a pair and a seat written with annotation's models of migration 0020,
    and a permission on the seat's content type as it was then; return their ids."""
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
    content_type, _ = ContentType.objects.get_or_create(app_label="annotation", model="chatseat")
    ContentType.objects.filter(app_label="chat").delete()  # as on a database before chat
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type, codename="view_chatseat", defaults={"name": "Can view"}
    )
    return pair.pk, seat.pk, permission.pk


@pytest.mark.django_db(transaction=True)
def test_the_chat_models_move_with_their_rows_and_content_types_and_back():
    apps = _migrate(BEFORE)
    try:
        pair_id, seat_id, permission_id = _rows_written_before_the_move(apps)
        apps = _migrate(AFTER)
        seat = apps.get_model("chat", "ChatSeat").objects.get(pk=seat_id)
        assert (seat.pair_id, seat.stage, seat.slot) == (pair_id, "done", 0)
        assert apps.get_model("chat", "ChatPair").objects.filter(pk=pair_id).exists()
        permission = Permission.objects.select_related("content_type").get(pk=permission_id)
        assert permission.content_type.app_label == "chat"
        assert not ContentType.objects.filter(
            app_label="annotation", model__in=("chatseat", "chatpair")
        ).exists()

        apps = _migrate(BEFORE)  # and back: annotation's models read the same rows
        assert apps.get_model("annotation", "ChatSeat").objects.get(pk=seat_id).pair_id == pair_id
        permission = Permission.objects.select_related("content_type").get(pk=permission_id)
        assert permission.content_type.app_label == "annotation"
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_the_tables_keep_their_names():
    from chat.models import ChatPair, ChatSeat

    assert (ChatPair._meta.db_table, ChatSeat._meta.db_table) == (
        "annotation_chatpair",
        "annotation_chatseat",
    )
    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor))
    assert {"annotation_chatpair", "annotation_chatseat"} <= tables
