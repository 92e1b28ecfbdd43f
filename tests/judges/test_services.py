"""Judges: a model answers a campaign's questions like a worker, stored apart from the crowd."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Assignment, Judgment, Worker
from evalsite.celery import app
from evalsite.errors import InvalidParameters
from judges import services
from judges.services import judge_start
from modelhub.models import Generation, GenerationJob
from modelhub.services import generation_job_run
from modelhub.tasks import job_run
from tests.judges.conftest import first_policy


@pytest.fixture(autouse=True)
def _eager():
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def _judge(campaign, endpoint, capture, **options) -> GenerationJob:
    with capture(execute=True):
        job = judge_start(campaign=campaign, endpoint=endpoint, **options)
    job.refresh_from_db()
    return job


def _model_judgments():
    return Judgment.objects.filter(worker__provider=Worker.Provider.MODEL)


def test_a_json_judge_answers_every_likert_item_through_the_inference_job(
    likert_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks
):
    job = _judge(likert_campaign, judge_endpoint, django_capture_on_commit_callbacks)
    assert job.status == GenerationJob.Status.DONE, job.error
    assert job.kind == GenerationJob.Kind.JUDGE
    assert job.done == job.total == likert_campaign.items.count() == 36
    assert job.label == f"judge:{likert_campaign.slug}:fake-judge@likert-v1:json"
    rows = _model_judgments()
    assert rows.count() == 3 * job.total
    # validated by the protocol as a worker's answer: "2" and 2 are both stored as the int 2
    assert {r.value for r in rows.filter(item__payload__model="bot-a")} == {5}
    assert {r.value for r in rows.exclude(item__payload__model="bot-a")} == {2}
    worker = Worker.objects.get(provider=Worker.Provider.MODEL)
    assert worker.external_id == "fake-judge@likert-v1:json"
    assignment = Assignment.objects.get(worker=worker)
    assert assignment.status == Assignment.Status.APPROVED and assignment.items_done == 36
    prompt = fake_judge.requests[0]["messages"][0]["content"]
    assert "rate the **last response**" in prompt  # the workers' published instructions
    assert '"empathy"' in prompt and "one JSON object" in prompt


def test_judging_again_adds_nothing_and_asks_the_model_nothing(
    likert_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks
):
    _judge(likert_campaign, judge_endpoint, django_capture_on_commit_callbacks)
    stored, asked = _model_judgments().count(), len(fake_judge.requests)
    again = _judge(likert_campaign, judge_endpoint, django_capture_on_commit_callbacks)
    assert again.status == GenerationJob.Status.DONE and again.done == again.total
    assert _model_judgments().count() == stored
    assert len(fake_judge.requests) == asked
    assert Worker.objects.filter(provider=Worker.Provider.MODEL).count() == 1
    assert Assignment.objects.filter(worker__provider=Worker.Provider.MODEL).count() == 1


def test_a_refused_answer_is_asked_again_with_the_reason(
    likert_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks
):
    def stubborn_once(messages):
        if len(messages) == 1:
            return '{"empathy": 9, "relevance": 2, "fluency": 2}'  # 9 is off the scale
        return '{"empathy": 4, "relevance": 4, "fluency": 4}'

    fake_judge.policy = stubborn_once
    job = _judge(likert_campaign, judge_endpoint, django_capture_on_commit_callbacks)
    assert job.status == GenerationJob.Status.DONE and job.error == ""
    assert set(_model_judgments().values_list("value", flat=True)) == {4}
    second = [r for r in fake_judge.requests if len(r["messages"]) == 3]
    assert len(second) == 36
    assert second[0]["messages"][1]["content"].startswith('{"empathy": 9')
    assert "could not be used" in second[0]["messages"][2]["content"]
    assert "empathy" in second[0]["messages"][2]["content"]
    # every reply is stored once, per model, prompt and decoding
    assert Generation.objects.count() == 72


def test_an_answer_refused_every_time_is_a_recorded_failure_never_a_guess(
    likert_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks
):
    fake_judge.policy = lambda messages: "I would rather not say."
    job = _judge(likert_campaign, judge_endpoint, django_capture_on_commit_callbacks, attempts=2)
    assert job.status == GenerationJob.Status.DONE and job.done == job.total
    assert _model_judgments().count() == 0
    failures = job.error.splitlines()
    assert len(failures) == 36
    assert "refused after 2 attempt(s): the reply holds no JSON object" in failures[0]
    assert len(fake_judge.requests) == 2 * 36
    out = io.StringIO()
    call_command("judge_report", likert_campaign.slug, "--n-boot", "0", stdout=out)
    assert "36 item(s) refused after every attempt" in out.getvalue()


def test_ab_items_are_asked_in_both_orders_and_position_bias_is_measured(
    pairwise_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks
):
    fake_judge.policy = first_policy
    job = _judge(pairwise_campaign, judge_endpoint, django_capture_on_commit_callbacks)
    n = pairwise_campaign.items.count()
    assert job.total == 2 * n and job.status == GenerationJob.Status.DONE
    raters = dict(
        Worker.objects.filter(provider=Worker.Provider.MODEL).values_list("external_id", "pk")
    )
    assert set(raters) == {"fake-judge@pairwise-v1:json/ab", "fake-judge@pairwise-v1:json/ba"}
    ab = _model_judgments().filter(worker_id=raters["fake-judge@pairwise-v1:json/ab"])
    ba = _model_judgments().filter(worker_id=raters["fake-judge@pairwise-v1:json/ba"])
    assert {tuple(j.presentation["order"]) for j in ab} == {("a", "b")}
    assert {tuple(j.presentation["order"]) for j in ba} == {("b", "a")}
    prompts = {r["messages"][0]["content"] for r in fake_judge.requests}
    assert len(prompts) == 2 * n  # the two orders are two prompts
    out = io.StringIO()
    call_command("judge_report", pairwise_campaign.slug, "--n-boot", "50", stdout=out)
    text = out.getvalue()
    bias = text.split("[position_bias]")[1].split("\n")[2].split()
    # always "first": the verdict flips with the order on every item
    assert bias[:5] == ["fake-judge@pairwise-v1:json", str(n), "0.000", str(2 * n), "1.000"]
    # Wilson's lower bound at 2n of 2n "first": 2n / (2n + z²)
    assert float(bias[5]) == pytest.approx(2 * n / (2 * n + 1.959964**2), abs=6e-4)


def test_choice_mode_needs_a_backend_that_scores(likert_campaign, judge_endpoint):
    with pytest.raises(InvalidParameters, match="cannot score"):
        judge_start(campaign=likert_campaign, endpoint=judge_endpoint, mode="choice")


@pytest.mark.parametrize(
    ("options", "message"),
    [({"attempts": 0}, "attempts"), ({"batch_size": 1000}, "batch_size"), ({"mode": "x"}, "mode")],
)
def test_bad_requests_are_refused_with_a_clear_message(
    likert_campaign, judge_endpoint, options, message
):
    with pytest.raises(InvalidParameters, match=message):
        judge_start(campaign=likert_campaign, endpoint=judge_endpoint, **options)
    assert not GenerationJob.objects.exists()


def test_a_judge_is_a_job_of_kind_judge_sent_to_modelhubs_task_on_the_inference_queue(
    likert_campaign, judge_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    # the outbox sends with options (ignore_result): apply_async, not delay
    monkeypatch.setattr(job_run, "apply_async", lambda args, **_: sent.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        job = judge_start(campaign=likert_campaign, endpoint=judge_endpoint)
    assert job.kind == GenerationJob.Kind.JUDGE and sent == [job.pk]
    assert app.amqp.router.route({}, job_run.name)["queue"].name == "inference"
    # a second start while it waits is the same job
    assert judge_start(campaign=likert_campaign, endpoint=judge_endpoint).pk == job.pk


def test_the_judge_command_reads_a_template_file_and_refuses_bad_ones(
    likert_campaign, judge_endpoint, fake_judge, tmp_path, django_capture_on_commit_callbacks
):
    out = io.StringIO()
    call_command("judge", likert_campaign.slug, "fake-judge", "--show-template", stdout=out)
    assert "version: likert-v1" in out.getvalue()
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        json.dumps({"version": "terse-1", "text": "{item}\n\n{questions}"}), encoding="utf-8"
    )
    with django_capture_on_commit_callbacks(execute=True):  # manage.py commits at once
        call_command(
            "judge", likert_campaign.slug, "fake-judge", "--template", str(mine), stdout=out
        )
    assert "(judge:judged-likert:fake-judge@terse-1:json): 0 of 36 items" in out.getvalue()
    job = GenerationJob.objects.get()
    assert (job.status, job.done) == (GenerationJob.Status.DONE, 36)
    assert Worker.objects.filter(external_id="fake-judge@terse-1:json").exists()
    assert fake_judge.requests[-1]["messages"][0]["content"].startswith("Conversation:")
    for text, message in [
        ({"version": "terse-2", "text": "{item} {who}"}, "Unknown placeholder"),
        ({"version": "terse-2", "text": "{questions}"}, "must show {item}"),
        ({"version": "likert-v1", "text": "{item} {questions}"}, "version of its own"),
        ({"version": "a b", "text": "{item} {questions}"}, "version"),
        ({"text": "{item} {questions}", "extra": 1}, "'version' and 'text' only"),
    ]:
        mine.write_text(json.dumps(text), encoding="utf-8")
        with pytest.raises(CommandError, match=message):
            call_command("judge", likert_campaign.slug, "fake-judge", "--template", str(mine))
    mine.write_bytes(b"\xff\xfe{")
    with pytest.raises(CommandError, match="not UTF-8 YAML or JSON"):
        call_command("judge", likert_campaign.slug, "fake-judge", "--template", str(mine))
    with pytest.raises(CommandError, match="No model 'nobody'"):
        call_command("judge", likert_campaign.slug, "nobody")
    with pytest.raises(CommandError, match="No campaign"):
        call_command("judge", "nowhere", "fake-judge")


def test_live_chat_campaigns_are_refused(db, judge_endpoint):
    from annotation.services import campaign_create

    chat = campaign_create(slug="chat", name="chat", protocol="empathetic_chat")
    with pytest.raises(InvalidParameters, match="chatting"):
        judge_start(campaign=chat, endpoint=judge_endpoint)


def test_a_batch_slice_stops_and_the_next_run_goes_on_where_it_stopped(
    likert_campaign, judge_endpoint, fake_judge
):
    job = judge_start(campaign=likert_campaign, endpoint=judge_endpoint, batch_size=10)
    following = services.judge_job_run(job_id=job.pk, budget_s=0.0)
    assert following == 10
    job.refresh_from_db()
    assert job.done == 10 and job.status == GenerationJob.Status.RUNNING
    assert _model_judgments().values("item").distinct().count() == 10
    assert services.judge_job_run(job_id=job.pk, start=following) is None
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and _model_judgments().count() == 3 * 36


def test_a_judge_job_queued_again_from_the_admin_runs_the_judge_not_a_generation(
    likert_campaign, judge_endpoint, fake_judge, admin_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):  # started, its task never ran
        job = judge_start(campaign=likert_campaign, endpoint=judge_endpoint)
    GenerationJob.objects.filter(pk=job.pk).update(status=GenerationJob.Status.FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:modelhub_generationjob_changelist"),
            {"action": "retry", "_selected_action": [job.pk]},
        )
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and job.done == 36
    assert _model_judgments().count() == 3 * 36  # judged: a generation job stores none


def test_the_generator_never_runs_a_judges_job(likert_campaign, judge_endpoint, fake_judge):
    job = judge_start(campaign=likert_campaign, endpoint=judge_endpoint)  # its task never ran
    with pytest.raises(ValueError, match="is a judge job, not a generation job"):
        generation_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.done) == (GenerationJob.Status.QUEUED, 0, 0)
    assert not fake_judge.requests and not Generation.objects.exists()


def test_one_order_per_item_is_one_rater_shown_orders_as_workers_are(
    pairwise_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "judge", pairwise_campaign.slug, "fake-judge", "--no-both-orders", stdout=io.StringIO()
        )
    raters = Worker.objects.filter(provider=Worker.Provider.MODEL)
    assert list(raters.values_list("external_id", flat=True)) == ["fake-judge@pairwise-v1:json"]
    orders = [tuple(j.presentation["order"]) for j in _model_judgments()]
    assert len(orders) == pairwise_campaign.items.count()
    assert set(orders) == {("a", "b"), ("b", "a")}  # drawn per item, as a worker's order is
