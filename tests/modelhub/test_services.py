"""Registering models, storing each generation once, generation jobs and bot turns."""

import pytest

from modelhub.backends import BackendError, Example, Reply
from modelhub.backends.generic_bot import GenericBot
from modelhub.jobs import job_retry
from modelhub.models import Generation, GenerationJob, ModelEndpoint
from modelhub.selectors import generation_job_responses, generations_lookup
from modelhub.services import (
    bot_reply,
    decoding_key,
    endpoint_register,
    generation_job_run,
    generation_job_start,
    generations_ensure,
)

EXAMPLES = [
    Example(turns=("Are you ok?",), reference="Yes!"),
    Example(turns=("I won.",), reference="Wow"),
]


def _examples(n: int) -> list[Example]:
    return [Example(turns=(f"Turn {i}{'?' if i % 2 else '.'}",)) for i in range(n)]


def test_generations_are_stored_once_per_model_and_context(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    assert generations_ensure(endpoint=bot, examples=EXAMPLES) == ["I don't know.", "ok"]
    assert generations_ensure(endpoint=bot, examples=EXAMPLES[::-1]) == ["ok", "I don't know."]
    assert Generation.objects.count() == 2


def test_other_decoding_parameters_are_a_new_generation(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    generations_ensure(endpoint=bot, examples=EXAMPLES)
    bot = endpoint_register(name="bot", backend="generic_bot", decoding={"temperature": 0.7})
    generations_ensure(endpoint=bot, examples=EXAMPLES)
    assert Generation.objects.count() == 4
    assert Generation.objects.filter(decoding__strategy="sample").count() == 2


def test_two_spellings_of_the_same_decoding_share_their_generations(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    generations_ensure(endpoint=bot, examples=EXAMPLES)
    bot = endpoint_register(name="bot", backend="generic_bot", decoding={"strategy": "greedy"})
    generations_ensure(endpoint=bot, examples=EXAMPLES)
    assert Generation.objects.count() == 2


def test_registering_again_updates_the_same_model(db):
    first = endpoint_register(name="gold", backend="gold", notes="a")
    again = endpoint_register(name="gold", backend="gold", notes="b")
    assert first.pk == again.pk and again.notes == "b"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "x", "backend": "nope"}, "unknown backend"),
        ({"name": "has space", "backend": "gold"}, "must be a slug"),
        ({"name": "x", "backend": "gold", "config": {"path": "/m"}}, "unknown option 'path'"),
        ({"name": "x", "backend": "gold", "decoding": {"top_p": 3}}, "top_p"),
    ],
)
def test_bad_registrations_change_nothing(db, kwargs, message):
    with pytest.raises(ValueError, match=message):
        endpoint_register(**kwargs)
    assert not Generation.objects.exists()


def test_a_job_generates_every_distinct_example_once(
    db, celery_eager, django_capture_on_commit_callbacks
):
    bot = endpoint_register(name="bot", backend="generic_bot")
    examples = _examples(10)
    with django_capture_on_commit_callbacks(execute=True):
        job = generation_job_start(endpoint=bot, examples=examples + examples[:3], batch_size=4)
    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.attempts) == ("done", 10, 10, 1)
    assert job.started_at and job.finished_at and job.progress == 1.0
    assert Generation.objects.count() == 10
    responses = [r for _, r in generation_job_responses(job=job)]
    assert responses == ["ok", "I don't know."] * 5
    assert generations_lookup(endpoint=bot, examples=[Example(turns=("new",))]) == [None]


def test_a_job_skips_what_is_already_generated(
    db, celery_eager, django_capture_on_commit_callbacks, monkeypatch
):
    bot = endpoint_register(name="bot", backend="generic_bot")
    examples = _examples(6)
    generations_ensure(endpoint=bot, examples=examples[:4])
    real, calls = GenericBot.generate, []

    def spy(self, batch, params):
        calls.append(len(batch))
        return real(self, batch, params)

    monkeypatch.setattr(GenericBot, "generate", spy)
    with django_capture_on_commit_callbacks(execute=True):
        job = generation_job_start(endpoint=bot, examples=examples)
    job.refresh_from_db()
    assert calls == [2] and job.status == "done" and job.done == 6
    assert Generation.objects.count() == 6


def test_a_job_out_of_time_stops_between_batches_and_the_next_run_finishes_it(db):
    bot = endpoint_register(name="slow", backend="generic_bot", config={"delay_s": 0.01})
    job = GenerationJob.objects.create(
        endpoint=bot, examples=[e.as_dict() for e in _examples(6)], total=6, batch_size=2
    )
    assert generation_job_run(job_id=job.pk, budget_s=0.0) == 2  # stored so far: not finished
    job.refresh_from_db()
    assert (job.status, job.done) == ("running", 2)  # whole batches only
    assert generation_job_run(job_id=job.pk) is None  # finished
    job.refresh_from_db()
    assert (job.status, job.done, job.attempts) == ("done", 6, 2)
    assert generation_job_run(job_id=job.pk) is None  # a redelivered task does nothing
    assert Generation.objects.count() == 6


def test_a_failing_backend_marks_the_job_failed_and_keeps_whole_batches(
    db, celery_eager, django_capture_on_commit_callbacks, monkeypatch
):
    bot = endpoint_register(name="bot", backend="generic_bot")
    real = GenericBot.generate
    calls = []

    def broken_second_batch(self, batch, params):
        calls.append(1)
        if len(calls) == 2:
            raise BackendError("the model fell over")
        return real(self, batch, params)

    monkeypatch.setattr(GenericBot, "generate", broken_second_batch)
    with pytest.raises(BackendError), django_capture_on_commit_callbacks(execute=True):
        job = generation_job_start(endpoint=bot, examples=_examples(6), batch_size=2)
    job = GenerationJob.objects.get()
    assert job.status == "failed" and "the model fell over" in job.error
    assert job.done == 2 and Generation.objects.count() == 2

    monkeypatch.setattr(GenericBot, "generate", real)
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(job=job)
    job.refresh_from_db()
    assert (job.status, job.done, job.error) == ("done", 6, "")
    assert Generation.objects.count() == 6


def test_bot_reply_answers_the_last_turn_and_stores_nothing(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    reply = bot_reply(endpoint=bot, turns=["Hi!", "Hi! How are you?", "Fine. You?"])
    assert (reply.text, reply.finish_reason, reply.truncated) == ("I don't know.", "stop", False)
    assert not Generation.objects.exists()
    with pytest.raises(ValueError, match="non-empty list"):
        bot_reply(endpoint=bot, turns=[])


def test_registration_writes_the_backends_length_limit_unless_one_is_given(db):
    short = endpoint_register(name="bot", backend="generic_bot")
    assert short.decoding == {"max_new_tokens": 40}  # the short-turn default of the papers
    given = endpoint_register(name="bot2", backend="generic_bot", decoding={"max_new_tokens": 9})
    assert given.decoding == {"max_new_tokens": 9}
    # {} and the written default hash alike: replies stored before the default was written
    # stay the endpoint's own.
    assert decoding_key(short) == decoding_key(ModelEndpoint(backend="generic_bot", decoding={}))


def test_each_stored_reply_keeps_why_it_ended_and_its_prompt_format(db, monkeypatch):
    bot = endpoint_register(name="bot", backend="generic_bot")
    examples = [Example(turns=("Hi!", "What now?")), Example(turns=("ok",))]

    def replies(self, batch, params):
        return [
            Reply(text=f"cut {i}", finish_reason="length", prompt_format="joined:'\\n'")
            for i, _ in enumerate(batch)
        ]

    monkeypatch.setattr(GenericBot, "replies", replies)
    assert generations_ensure(endpoint=bot, examples=examples) == ["cut 0", "cut 1"]
    stored = list(Generation.objects.order_by("response"))
    assert [(g.finish_reason, g.truncated, g.prompt_format) for g in stored] == [
        ("length", True, "joined:'\\n'")
    ] * 2
