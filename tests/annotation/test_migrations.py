"""Data migrations fill new columns from the rows already stored."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("annotation", "0006_auditlog_soft_block")]
AFTER = [("annotation", "0010_gold_min_answered_gte_1")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_counters_are_filled_from_stored_judgments_and_leases():
    apps = _migrate(BEFORE)
    try:
        Campaign, Item = (
            apps.get_model("annotation", "Campaign"),
            apps.get_model("annotation", "Item"),
        )
        Worker = apps.get_model("annotation", "Worker")
        Assignment = apps.get_model("annotation", "Assignment")
        Judgment, Lease = (
            apps.get_model("annotation", "Judgment"),
            apps.get_model("annotation", "Lease"),
        )
        campaign = Campaign.objects.create(
            slug="old", name="old", protocol="likert", gold_min_answered=0
        )
        items = [Item.objects.create(campaign=campaign, key=f"i{n}", payload={}) for n in range(3)]
        workers = [Worker.objects.create(provider="local", external_id=f"w{n}") for n in range(3)]
        soon = timezone.now() + timedelta(minutes=5)
        for worker in workers:
            assignment = Assignment.objects.create(campaign=campaign, worker=worker, items_target=5)
            for question in ("empathy", "fluency"):  # two rows, one judging worker
                Judgment.objects.create(
                    item=items[0],
                    worker=worker,
                    assignment=assignment,
                    question=question,
                    value=3,
                    time_spent_ms=1000,
                )
            if worker != workers[0]:
                Lease.objects.create(
                    item=items[1], worker=worker, assignment=assignment, expires_at=soon
                )
        apps = _migrate(AFTER)
        Item = apps.get_model("annotation", "Item")
        counted = {i.key: (i.judged, i.claims) for i in Item.objects.all()}
        assert counted == {"i0": (3, 3), "i1": (0, 2), "i2": (0, 0)}
        assert len({i.shuffle for i in Item.objects.all()}) == 3  # each its own random rank
        Assignment = apps.get_model("annotation", "Assignment")
        assert sorted(Assignment.objects.values_list("items_done", flat=True)) == [1, 1, 1]
        Campaign = apps.get_model("annotation", "Campaign")
        assert Campaign.objects.get(slug="old").gold_min_answered == 1
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_endpoints_registered_before_the_length_default_keep_the_old_limit_and_hash():
    apps = _migrate([("modelhub", "0002_generation_jobs")])
    try:
        ModelEndpoint = apps.get_model("modelhub", "ModelEndpoint")
        ModelEndpoint.objects.create(name="old", backend="generic_bot", decoding={})
        ModelEndpoint.objects.create(
            name="meena", backend="hf_local", decoding={"preset": "meena", "max_new_tokens": 30}
        )
        apps = _migrate([("modelhub", "0003_generation_finish_reason")])
        ModelEndpoint = apps.get_model("modelhub", "ModelEndpoint")
        decodings = dict(ModelEndpoint.objects.values_list("name", "decoding"))
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert decodings == {
        "old": {"max_new_tokens": 40},
        "meena": {"preset": "meena", "max_new_tokens": 30},
    }
