"""modelhub's data migrations fill new columns from the rows already stored."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_each_stored_job_gets_its_kind_from_its_label_and_keeps_its_data():
    apps = _migrate([("modelhub", "0003_generation_finish_reason")])
    try:
        ModelEndpoint = apps.get_model("modelhub", "ModelEndpoint")
        GenerationJob = apps.get_model("modelhub", "GenerationJob")
        endpoint = ModelEndpoint.objects.create(name="old", backend="generic_bot")
        rows = {
            "judge:demo-likert:tiny@likert-v1:choice": "done",
            "judge:demo-ab:tiny@pairwise-v1:json": "failed",
            "campaign ssa-1": "running",
            "": "queued",
            "a judge: of sorts": "done",  # "judge" elsewhere than at the start
        }
        examples = [{"turns": ["Hi"], "reference": None, "judge": {"item": 1}}]
        for label, status in rows.items():
            GenerationJob.objects.create(
                endpoint=endpoint,
                label=label,
                examples=examples,
                total=4,
                done=2,
                status=status,
                error="item x: refused",
            )
        before = list(
            GenerationJob.objects.order_by("pk").values(
                "pk", "label", "examples", "total", "done", "status", "error", "created_at"
            )
        )
        apps = _migrate([("modelhub", "0004_generationjob_kind")])
        GenerationJob = apps.get_model("modelhub", "GenerationJob")
        kinds = dict(GenerationJob.objects.values_list("label", "kind"))
        assert kinds == {
            "judge:demo-likert:tiny@likert-v1:choice": "judge",
            "judge:demo-ab:tiny@pairwise-v1:json": "judge",
            "campaign ssa-1": "generation",
            "": "generation",
            "a judge: of sorts": "generation",
        }
        after = list(
            GenerationJob.objects.order_by("pk").values(
                "pk", "label", "examples", "total", "done", "status", "error", "created_at"
            )
        )
        assert after == before
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
