"""The provider commands: launch, review, pay, block, sync_provider."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Assignment, AuditLog, WorkerBlock
from annotation.quality import worker_soft_block
from recruitment.models import Payment, Publication
from tests.factories import WorkerFactory
from tests.recruitment.conftest import post_form, work_through


def cmd(*args, **kwargs) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


def test_dry_run_prints_hits_cost_and_eligibility_and_publishes_nothing(paid_campaign):
    out = cmd(
        "launch",
        paid_campaign.slug,
        "--provider",
        "mturk",
        "--dry-run",
        "--locale",
        "us",
        "--min-approval-rate",
        "95",
        "--by",
        "alice",
    )
    assert "DRY RUN" in out and "mturk-requester-sandbox" in out
    assert "HITs: 2, 4 assignment(s)" in out
    assert "2 × 0.50 + fee 0.10 = 1.20" in out
    assert "Total at most 2.40; budget 10.00" in out
    assert "locale in US; approval rate ≥ 95%" in out
    assert not Publication.objects.exists() and not AuditLog.objects.exists()


def test_review_rejects_for_agreement_only_when_asked(client, paid_campaign):
    cmd("launch", paid_campaign.slug, "--provider", "local", "--by", "lab")
    work_through(client, paid_campaign, {"workerId": "sloppy"})
    sloppy = Assignment.objects.get(worker__external_id="sloppy").worker
    worker_soft_block(campaign=paid_campaign, worker=sloppy, reason="gold accuracy 20%")
    assert "1 approve, 0 reject" in cmd("review", paid_campaign.slug, "--dry-run")
    out = cmd("review", paid_campaign.slug, "--reject-for-agreement", "--by", "lab")
    assert "0 approve, 1 reject" in out and "gold accuracy 20%" in out
    assert Assignment.objects.get(worker=sloppy).status == "rejected"


def test_dry_run_with_emotionlines_pay_buckets_reserves_top_ups(paid_campaign):
    for n, item in enumerate(paid_campaign.items.all()):
        item.payload = {**item.payload, "context": ["u"] * (5 + 5 * n)}  # 6, 11, 16, 21 utterances
        item.save()
    out = cmd(
        "launch",
        paid_campaign.slug,
        "--provider",
        "mturk",
        "--dry-run",
        "--pay-buckets",
        "emotionlines",
    )
    # Base: the lowest bucket, 0.10 × 2 items; exact: (0.10+0.15+0.20+0.25) × 2 workers = 1.40.
    assert "2 × 0.20 + fee 0.04 = 0.48" in out
    assert "top-ups reserved (fees included): 0.72" in out  # (1.40 − 0.80) + 20 %


def test_pay_buckets_must_cover_every_item(paid_campaign):
    with pytest.raises(CommandError, match="no pay bucket covers"):
        cmd(
            "launch",
            paid_campaign.slug,
            "--provider",
            "mturk",
            "--dry-run",
            "--pay-buckets",
            "10-14:0.15",
        )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--provider", "local"], "No campaign 'nope'"),
        (["{slug}", "--provider", "mturk", "--min-approval-rate", "150"], "from 0 to 100"),
        (["{slug}", "--provider", "mturk", "--locale", "USA"], "two-letter"),
        (["{slug}", "--provider", "mturk", "--pay-buckets", "5-9=0.1"], "LOW-HIGH:PAY"),
        (["{slug}", "--provider", "mturk", "--pay-buckets", "9-5:0.1"], "LOW ≤ HIGH"),
        (["{slug}", "--provider", "prolific", "--production"], "MTurk only"),
        (["{slug}", "--provider", "prolific", "--filter", "x"], "FILTER_ID=VALUE"),
        (["{slug}", "--provider", "local", "--add", "2"], "not published"),
        (["{slug}", "--provider", "mturk", "--days", "0"], "--days"),
    ],
)
def test_bad_launch_arguments_are_clear_errors_and_change_nothing(paid_campaign, args, message):
    args = [a.format(slug=paid_campaign.slug) for a in args]
    with pytest.raises(CommandError, match=message):
        cmd("launch", *args)
    assert not Publication.objects.exists()


def test_launch_over_budget_is_refused_with_the_numbers(paid_campaign):
    paid_campaign.budget = Decimal("1.00")
    paid_campaign.save()
    with pytest.raises(CommandError, match=r"costs up to 2\.00.*1\.00 of its budget"):
        cmd("launch", paid_campaign.slug, "--provider", "local")
    assert not Publication.objects.exists()


def test_local_launch_review_and_pay(client, paid_campaign):
    out = cmd("launch", paid_campaign.slug, "--provider", "local", "--by", "lab")
    assert "Published" in out
    work_through(client, paid_campaign, {"workerId": "good"})
    work_through(client, paid_campaign, {"workerId": "sloppy"})
    sloppy = Assignment.objects.get(worker__external_id="sloppy").worker
    worker_soft_block(campaign=paid_campaign, worker=sloppy, reason="gold accuracy 20%")
    dry = cmd("review", paid_campaign.slug, "--dry-run")
    assert "planned" in dry and not Payment.objects.exists()
    out = cmd("review", paid_campaign.slug, "--bonus", "0.10", "--by", "lab")
    # Gold agreement is subjective: a soft block is a review hint, never a rejection by
    # default (issue #18; attention checks are what may reject).
    assert "2 approve, 0 reject" in out and "hint: soft-blocked (gold accuracy 20%)" in out
    good = Assignment.objects.get(worker__external_id="good")
    assert good.status == "approved"
    assert Assignment.objects.get(worker=sloppy).status == "approved"
    assert Payment.objects.filter(kind="reward", worker=good.worker).get().amount == Decimal("0.50")
    assert Payment.objects.filter(kind="bonus").count() == 1
    again = cmd("review", paid_campaign.slug)
    assert "Nothing awaits review" in again
    pay = [
        "pay",
        paid_campaign.slug,
        "--worker",
        good.worker.pseudonym,
        "--amount",
        "0.40",
        "--reason",
        "Extra effort",
    ]
    first, second = cmd(*pay), cmd(*pay)
    assert "Paid" in first and first.split("[key")[1] == second.split("[key")[1]
    assert Payment.objects.filter(kind="bonus").count() == 2
    ledger = cmd("pay", paid_campaign.slug)
    assert "4 payment(s); committed 2.50" in ledger  # both rewards, two bonuses


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--worker", "x", "--amount", "1", "--reason", "r"], "No worker 'x'"),
        (["--worker", "W1", "--amount", "abc", "--reason", "r"], "not a number"),
        (["--worker", "W1", "--amount", "-1", "--reason", "r"], "more than 0"),
        (["--worker", "W1", "--amount", "0.001", "--reason", "r"], "2 decimals"),
        (["--worker", "W1", "--amount", "5000", "--reason", "r"], "typo"),
        (["--worker", "W1", "--amount", "1"], "--reason"),
        (["--worker", "W1", "--amount", "1", "--reason", "r", "--key", "k" * 80], "1–64"),
    ],
)
def test_bad_pay_arguments_are_clear_errors(paid_campaign, args, message):
    worker = WorkerFactory(external_id="w1")
    args = [worker.pseudonym if a == "W1" else a for a in args]
    Assignment.objects.create(
        campaign=paid_campaign, worker=worker, items_target=2, status="submitted"
    )
    with pytest.raises(CommandError, match=message):
        cmd("pay", paid_campaign.slug, *args)
    assert not Payment.objects.exists()


def test_block_command_blocks_lists_and_unblocks(db):
    worker = WorkerFactory(external_id="w-bad")
    with pytest.raises(CommandError, match="reason"):
        cmd("block", worker.pseudonym)
    cmd("block", "w-bad", "--provider", "local", "--reason", "spam", "--by", "ops")
    assert "spam" in cmd("block", "--list")
    assert "Blocked" in cmd("block", worker.pseudonym, "--reason", "again")  # idempotent
    assert WorkerBlock.objects.count() == 1
    assert "Unblocked" in cmd("block", worker.pseudonym, "--unblock", "--reason", "appeal")
    assert cmd("block", "--list") == ""
    with pytest.raises(CommandError, match="No worker"):
        cmd("block", "w-bad", "--reason", "x")


def test_mturk_commands_against_the_fake_server(client, fake_mturk, paid_campaign):
    fake = fake_mturk
    cmd(
        "launch",
        paid_campaign.slug,
        "--provider",
        "mturk",
        "--endpoint-url",
        fake.url,
        "--sandbox",
        "--by",
        "alice",
    )
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    params = {"assignmentId": aid, "hitId": hit_id, "workerId": "AW1", "turkSubmitTo": fake.url}
    post_form(work_through(client, paid_campaign, params).content.decode(), "mturk-submit")
    assert "no changes" in cmd("sync_provider", paid_campaign.slug)
    assert "1 approve, 0 reject" in cmd("review", paid_campaign.slug, "--bonus", "0.05")
    assert len(fake.state.bonuses) == 1
    cmd(
        "pay",
        paid_campaign.slug,
        "--worker",
        "AW1",
        "--provider",
        "mturk",
        "--amount",
        "0.20",
        "--reason",
        "Great",
        "--assignment",
        aid,
    )
    cmd(
        "pay",
        paid_campaign.slug,
        "--worker",
        "AW1",
        "--provider",
        "mturk",
        "--amount",
        "0.20",
        "--reason",
        "Great",
        "--assignment",
        aid,
    )
    assert len(fake.state.bonuses) == 2  # the review bonus and this one, each once
    with pytest.raises(CommandError, match="grow to 10"):
        cmd("launch", paid_campaign.slug, "--provider", "mturk", "--add", "8")
    assert "Added 1" in cmd("launch", paid_campaign.slug, "--provider", "mturk", "--add", "1")
    assert all(h["MaxAssignments"] == 3 for h in fake.state.hits.values())
    cmd("block", "AW1", "--provider", "mturk", "--reason", "Testing")
    assert fake.state.blocks == {"AW1": "Testing"}
    assert paid_campaign.slug in cmd("sync_provider", "--all")
    cmd("launch", paid_campaign.slug, "--provider", "mturk", "--stop")
    assert all(h["Expiration"] < 1.5e9 for h in fake.state.hits.values())  # expired at once
    assert fake.state.invalid == []
