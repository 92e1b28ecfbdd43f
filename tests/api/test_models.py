"""Models and generation jobs through the API: the command's and the wizard's services."""

import pytest

from modelhub.models import Generation, GenerationJob, ModelEndpoint
from modelhub.services import endpoint_register, generation_job_run
from tests.api.conftest import ApiClient, error_of


@pytest.fixture
def bot(db) -> ModelEndpoint:
    return endpoint_register(name="generic-bot", backend="generic_bot")


def _finished(job: dict) -> dict:
    """Run a job the test's transaction kept from being queued (no commit happens)."""
    if job["status"] == "queued":
        generation_job_run(job_id=job["id"])
    return job


def test_registering_then_listing_and_getting_a_model(api) -> None:
    response = api.client.put(
        "/api/v1/models/echo-1",
        data={"backend": "generic_bot", "config": {"delay_s": 0}, "preset": "greedy"},
        content_type="application/json",
        headers=api.headers,
    )
    assert response.status_code == 201, response.content
    # registration writes the backend's length limit in (docs/modelhub.md, "Truncation")
    assert response.json()["decoding"] == {"preset": "greedy", "max_new_tokens": 40}
    again = api.client.put(
        "/api/v1/models/echo-1",
        data={"backend": "generic_bot", "notes": "the same, noted"},
        content_type="application/json",
        headers=api.headers,
    )
    assert again.status_code == 200 and again.json()["notes"] == "the same, noted"
    listed = api.get("/models").json()
    assert listed["count"] == 1 and listed["results"][0]["name"] == "echo-1"
    assert api.get("/models/echo-1").json()["backend"] == "generic_bot"


@pytest.mark.parametrize(
    "name, body, words",
    [
        ("ok-name", {"backend": "generic_bot", "config": {"colour": "blue"}}, "unknown option"),
        ("ok-name", {"backend": "generic_bot", "config": {"delay_s": -1}}, "delay_s"),
        ("ok-name", {"backend": "hf_local", "config": {"path": "/nowhere"}}, "config.json"),
        ("ok-name", {"backend": "generic_bot", "decoding": {"strategy": "dream"}}, "strategy"),
    ],
)
def test_a_bad_registration_is_a_400_naming_the_fault_and_stores_nothing(
    api, name, body, words
) -> None:
    response = api.client.put(
        f"/api/v1/models/{name}", data=body, content_type="application/json", headers=api.headers
    )
    error = error_of(response)
    assert response.status_code == 400 and words in error["message"], error
    assert not ModelEndpoint.objects.exists()


@pytest.mark.parametrize(
    "name, body, field",
    [("ok-name", {"backend": "telepathy"}, "backend"), ("not a slug", {}, "name")],
)
def test_an_unknown_backend_or_a_bad_name_is_refused_by_the_schema(api, name, body, field) -> None:
    response = api.client.put(
        f"/api/v1/models/{name}",
        data={"backend": "generic_bot", **body},
        content_type="application/json",
        headers=api.headers,
    )
    assert response.status_code == 422 and error_of(response)["field"] == field
    assert not ModelEndpoint.objects.exists()


def test_a_generation_job_answers_each_distinct_context_once(api, bot) -> None:
    contexts = [
        {"id": "a", "context": ["Hi!", "How are you?"]},
        {"id": "b", "context": "I got a new job."},
        {"id": "c", "context": ["Hi!", "How are you?"]},
    ]
    response = api.post("/models/generic-bot/jobs", {"contexts": contexts, "label": "pilot"})
    assert response.status_code == 202, response.content
    job = _finished(response.json())
    assert job["total"] == 2 and job["model"] == "generic-bot" and job["label"] == "pilot"
    status = api.get(f"/models/generic-bot/jobs/{job['id']}").json()
    assert status["status"] == "done" and status["done"] == 2 and status["progress"] == 1.0
    answers = api.get(f"/models/generic-bot/jobs/{job['id']}/responses").json()
    assert answers["count"] == 2
    assert {r["response"] for r in answers["results"]} == {"I don't know.", "ok"}
    listed = api.get("/models/generic-bot/jobs").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == job["id"]


def test_a_job_is_queued_after_the_commit_and_runs_inline_without_a_broker(
    api, bot, django_capture_on_commit_callbacks, celery_eager
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/models/generic-bot/jobs", {"contexts": [{"context": "Hello"}]})
    job = GenerationJob.objects.get(pk=response.json()["id"])
    assert job.status == GenerationJob.Status.DONE and Generation.objects.count() == 1


@pytest.mark.parametrize(
    "body, words, field",
    [
        (
            {"contexts": [{"context": ["a", "b", "c", "d"]}], "max_turns": 3},
            "at most 3",
            "contexts.0",
        ),
        ({"contexts": [{"id": "x", "context": "a"}, {"id": "x", "context": "b"}]}, "twice", None),
    ],
)
def test_bad_contexts_are_refused_as_the_wizard_refuses_them_and_queue_nothing(
    api, bot, body, words, field
) -> None:
    response = api.post("/models/generic-bot/jobs", body)
    error = error_of(response)
    assert response.status_code == 400 and words in error["message"], error
    if field:
        assert error["field"] == field
    assert not GenerationJob.objects.exists()


def test_a_blank_turn_is_refused_by_the_schema_naming_it(api, bot) -> None:
    body = {"contexts": [{"context": "ok"}, {"context": ["fine", " "]}]}
    response = api.post("/models/generic-bot/jobs", body)
    assert response.status_code == 422 and error_of(response)["field"] == "contexts.1.context.1"
    assert not GenerationJob.objects.exists()


def test_too_many_turns_for_the_wizard_is_a_422(api, bot) -> None:
    body = {"contexts": [{"context": "a"}], "max_turns": 11}
    response = api.post("/models/generic-bot/jobs", body)
    assert response.status_code == 422 and error_of(response)["field"] == "max_turns"


def test_unknown_models_and_jobs_are_404s(api, bot) -> None:
    assert error_of(api.get("/models/nobody"))["code"] == "not_found"
    assert error_of(api.post("/models/nobody/jobs", {"contexts": [{"context": "a"}]}))
    assert api.get("/models/generic-bot/jobs/99").status_code == 404


def test_every_model_operation_needs_a_key(db, bot) -> None:
    anonymous = ApiClient(None)
    for response in (
        anonymous.get("/models"),
        anonymous.get("/models/generic-bot"),
        anonymous.post("/models/generic-bot/jobs", {"contexts": [{"context": "a"}]}),
        anonymous.client.put(
            "/api/v1/models/x", data={"backend": "generic_bot"}, content_type="application/json"
        ),
    ):
        assert response.status_code == 401 and error_of(response)["code"] == "unauthenticated"
    assert not GenerationJob.objects.exists() and ModelEndpoint.objects.count() == 1
