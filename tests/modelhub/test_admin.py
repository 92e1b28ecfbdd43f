"""The registry and generation jobs in the admin."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from modelhub.admin import ModelEndpointForm
from modelhub.backends import Example
from modelhub.models import GenerationJob, ModelEndpoint
from modelhub.services import endpoint_register
from modelhub.tasks import job_run


@pytest.fixture
def admin_client(client, db):
    user = get_user_model().objects.create_superuser("admin", "a@example.org", "pw")
    client.force_login(user)
    return client


def _form(**data) -> ModelEndpointForm:
    fields = {"name": "m", "backend": "generic_bot", "config": "{}", "decoding": "{}"}
    return ModelEndpointForm(data={**fields, **data})


def test_the_form_checks_the_configuration_with_the_backend(db):
    assert _form().is_valid()
    form = _form(backend="hf_local", config='{"path": "/nope"}')
    assert not form.is_valid() and "not a saved model folder" in str(form.errors["config"])
    form = _form(decoding='{"preset": "beam"}')
    assert not form.is_valid() and "unknown decoding preset" in str(form.errors["decoding"])


def test_jobs_show_their_progress_and_can_be_queued_again(
    admin_client, monkeypatch, django_capture_on_commit_callbacks
):
    bot = endpoint_register(name="bot", backend="generic_bot")
    job = GenerationJob.objects.create(
        endpoint=bot,
        examples=[Example(turns=("hi",)).as_dict()],
        total=4,
        done=1,
        status=GenerationJob.Status.FAILED,
        error="boom",
    )
    page = admin_client.get(reverse("admin:modelhub_generationjob_changelist"))
    assert page.status_code == 200 and "1/4 (25%)" in page.content.decode()
    change = admin_client.get(reverse("admin:modelhub_generationjob_change", args=[job.pk]))
    assert change.status_code == 200
    queued = []
    monkeypatch.setattr(job_run, "apply_async", lambda args, **_: queued.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:modelhub_generationjob_changelist"),
            {"action": "retry", "_selected_action": [job.pk]},
        )
    job.refresh_from_db()
    assert job.status == "queued" and job.error == "" and queued == [job.pk]


def test_endpoint_pages_render(admin_client):
    endpoint_register(name="bot", backend="generic_bot", decoding={"preset": "meena"})
    page = admin_client.get(reverse("admin:modelhub_modelendpoint_changelist"))
    assert page.status_code == 200 and "meena" in page.content.decode()
    assert admin_client.get(reverse("admin:modelhub_modelendpoint_add")).status_code == 200


def test_an_endpoint_added_in_the_admin_is_registered_by_the_service(admin_client):
    fields = {"name": "bot", "backend": "generic_bot", "config": "{}", "decoding": "{}"}
    page = admin_client.post(reverse("admin:modelhub_modelendpoint_add"), fields)
    assert page.status_code == 302
    endpoint = ModelEndpoint.objects.get(name="bot")
    assert endpoint.decoding == {"max_new_tokens": 40}  # the service writes the default in
    change = reverse("admin:modelhub_modelendpoint_change", args=[endpoint.pk])
    admin_client.post(change, {**fields, "name": "renamed", "notes": "n"})
    assert list(ModelEndpoint.objects.values_list("name", "notes")) == [("bot", "n")]


def test_jobs_are_never_deleted_in_the_admin(admin_client):
    job = GenerationJob.objects.create(
        endpoint=endpoint_register(name="bot", backend="generic_bot"), examples=[], total=0
    )
    page = admin_client.post(reverse("admin:modelhub_generationjob_delete", args=[job.pk]))
    assert page.status_code == 403 and GenerationJob.objects.filter(pk=job.pk).exists()
