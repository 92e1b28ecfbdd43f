"""Constrained choice with hf_local: a tiny random GPT-2 (built offline) scores each allowed
answer; the best is stored, a tie is a recorded failure."""

from __future__ import annotations

import pytest

from annotation.models import Judgment, Worker
from judges.services import judge_start
from modelhub.models import GenerationJob
from modelhub.services import endpoint_register
from modelhub.tiny import DEFAULT_TEXTS, tiny_model_build

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def _eager():
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.fixture(scope="session")
def tiny_judge_folder(tmp_path_factory) -> str:
    # the options are words of the tokenizer, so no two of them are the same unknown token
    texts = [*DEFAULT_TEXTS, "1 2 3 4 5 first second both neither yes no answer question"]
    return str(tiny_model_build(tmp_path_factory.mktemp("judge"), texts=texts, positions=256))


def test_a_tiny_local_model_judges_by_constrained_choice(
    likert_campaign, tiny_judge_folder, django_capture_on_commit_callbacks
):
    endpoint = endpoint_register(
        name="tiny-judge", backend="hf_local", config={"path": tiny_judge_folder}
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = judge_start(campaign=likert_campaign, endpoint=endpoint)
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE, job.error
    assert job.label.endswith("tiny-judge@likert-v1:choice")  # the default for a scorer
    rows = Judgment.objects.filter(worker__provider=Worker.Provider.MODEL)
    answered = rows.values("item").distinct().count()
    assert answered + len(job.error.splitlines()) == 36
    assert answered > 0
    assert set(rows.values_list("value", flat=True)) <= {1, 2, 3, 4, 5}
    # deterministic and idempotent: judging again changes and adds nothing
    before = sorted(rows.values_list("item", "question", "value"))
    with django_capture_on_commit_callbacks(execute=True):
        judge_start(campaign=likert_campaign, endpoint=endpoint)
    assert sorted(rows.values_list("item", "question", "value")) == before


def test_a_tie_between_the_best_options_is_a_failure(likert_campaign, tmp_path, monkeypatch):
    from judges import services
    from modelhub.backends import TokenScores

    folder = tiny_model_build(tmp_path / "m", positions=256)
    endpoint = endpoint_register(name="tied", backend="hf_local", config={"path": str(folder)})
    backend = services.endpoint_backend(endpoint)
    # a model that finds every answer equally likely cannot choose: nothing is stored
    monkeypatch.setattr(
        type(backend), "score", lambda self, e, r: [TokenScores((-1.0,)) for _ in r]
    )
    job = judge_start(campaign=likert_campaign, endpoint=endpoint)
    assert services.judge_job_run(job_id=job.pk) is None
    job.refresh_from_db()
    assert not Judgment.objects.filter(worker__provider=Worker.Provider.MODEL).exists()
    assert len(job.error.splitlines()) == 36
    assert "empathy: the options '1' and '2' score the same" in job.error
