"""Quality control: gold checks, soft blocks, caps, minimum time and per-worker statistics."""

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from django.utils import timezone

from annotation.allocation import item_next, lease_create, leases_release
from annotation.campaign_settings import CONTROLS, settings_clean
from annotation.judgment_reads import campaign_judgments_frame
from annotation.models import Item, Judgment, Lease, Participation, WorkerBlock
from annotation.quality import (
    quality_review,
    worker_quality,
    worker_soft_block,
    worker_unblock,
)
from annotation.selectors import campaign_progress, campaign_report
from annotation.services import (
    assignment_start,
    campaign_create,
    campaign_settings_update,
    items_add,
    judgment_submit,
    worker_visit,
)
from annotation.simulation import StudyShape, study_decisions, study_simulate
from evalsite.errors import Conflict, InvalidAnswer, InvalidParameters, NotAllowed
from evalstats.quality_rule import Rule, worker_decisions
from providers import Arrival
from tests.factories import ItemFactory, WorkerFactory, likert_payload

GOOD = {"empathy": 4, "relevance": 4, "fluency": 5}
BAD = {"empathy": 1, "relevance": 1, "fluency": 1}


def _answer(assignment, item, answers, *, after: float = 5.0):
    """Submit ``answers`` as if ``after`` seconds passed since the item was shown."""
    lease = Lease.objects.get(item=item, worker=assignment.worker)
    now = lease.created_at + timedelta(seconds=after)
    return judgment_submit(assignment=assignment, item_id=item.pk, answers=answers, now=now)


def _gold(campaign, n=3, fluency=(4, 5)):
    items_add(
        campaign=campaign,
        items=[
            (f"gold-{i}", likert_payload(100 + i), {"fluency": list(fluency)}) for i in range(n)
        ],
    )


def _visit(campaign, worker_id):
    return worker_visit(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker_id))


def test_gold_item_payload_and_answers_are_validated_by_the_protocol(campaign):
    with pytest.raises(InvalidParameters, match="unknown question 'color'"):
        items_add(campaign=campaign, items=[("g", likert_payload(1), {"color": ["red"]})])
    with pytest.raises(InvalidParameters, match="between 1 and 5"):
        items_add(campaign=campaign, items=[("g", likert_payload(1), {"fluency": [9]})])
    with pytest.raises(InvalidParameters, match="'response'"):
        items_add(campaign=campaign, items=[("g", {"context": ["x"]}, {"fluency": [5]})])
    assert not Item.objects.filter(campaign=campaign, gold__isnull=False).exists()


def test_gold_items_are_stored_cleaned_and_a_repeat_adds_nothing(campaign):
    _gold(campaign, n=2)
    _gold(campaign, n=2)
    gold = Item.objects.filter(campaign=campaign, gold__isnull=False)
    assert gold.count() == 2
    assert gold.first().gold == {"fluency": [4, 5]}
    with pytest.raises(Conflict):
        items_add(campaign=campaign, items=[("gold-0", likert_payload(100), {"fluency": [1]})])


def test_gold_is_served_near_the_gold_rate_and_each_gold_item_once_per_worker(campaign):
    ItemFactory.create_batch(34, campaign=campaign)
    _gold(campaign, n=30)
    campaign_settings_update(campaign=campaign, values={"gold_rate": 0.5})
    campaign.items_per_assignment = 100
    campaign.save()
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    served = []
    for _ in range(40):
        item = item_next(assignment=assignment)
        served.append(item.pk)
        _answer(assignment, item, GOOD)
    gold = set(
        Item.objects.filter(campaign=campaign, gold__isnull=False).values_list("pk", flat=True)
    )
    n_gold = sum(pk in gold for pk in served)
    # Binomial(40, 0.5): mean 20, sd 3.2; the bounds are 3 sd either side.
    assert 10 <= n_gold <= 30
    assert len(set(served)) == len(served)


def test_no_gold_is_served_when_the_rate_is_zero(campaign):
    _gold(campaign, n=3)
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    for _ in range(5):
        item = item_next(assignment=assignment)
        assert not item.is_gold
        _answer(assignment, item, GOOD)


def test_gold_items_are_not_limited_by_redundancy(campaign):
    _gold(campaign, n=1)
    campaign_settings_update(campaign=campaign, values={"gold_rate": 0.5})
    gold = Item.objects.get(campaign=campaign, gold__isnull=False)
    for _ in range(campaign.redundancy + 2):
        worker = WorkerFactory()
        assignment = assignment_start(campaign=campaign, worker=worker)
        lease_create(
            item=gold,
            assignment=assignment,
            expires_at=timezone.now() + timedelta(minutes=5),
        )
        _answer(assignment, gold, GOOD)
    assert gold.judgments.values("worker").distinct().count() == campaign.redundancy + 2


def _answer_gold(campaign, assignment, answers, *, after: float = 5.0):
    """Lease the worker an unseen gold item and answer it ``after`` seconds later."""
    gold = (
        Item.objects.filter(campaign=campaign, gold__isnull=False)
        .exclude(judgments__worker=assignment.worker)
        .first()
    )
    leases_release(Lease.objects.filter(worker=assignment.worker))
    lease_create(item=gold, assignment=assignment, expires_at=timezone.now() + timedelta(minutes=5))
    result = _answer(assignment, gold, answers, after=after)
    quality_review(campaign)  # what the background review a gold answer asks for does
    return result


def test_a_fast_worker_failing_every_gold_check_is_soft_blocked_after_enough_evidence(campaign):
    _gold(campaign, n=12)
    campaign_settings_update(
        campaign=campaign, values={"gold_min_answered": 3, "gold_min_accuracy": 0.7}
    )
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    for _ in range(2):  # 1 s per item: fast, so 5 to 1 from the answers blocks
        _answer_gold(campaign, assignment, BAD, after=1)
    assert not Participation.objects.filter(worker=worker, soft_blocked=True).exists()
    _answer_gold(campaign, assignment, BAD, after=1)  # 0 of 3: (0.8 / 0.4)^3 = 8 to 1
    participation = Participation.objects.get(campaign=campaign, worker=worker)
    assert participation.soft_blocked
    assert participation.reason.startswith("fails: odds 8.0 to 1 for an unreliable worker")
    assert "gold 0/3 (0%, under 70%)" in participation.reason


def test_a_slow_worker_needs_a_thousand_to_one_before_a_block(campaign):
    _gold(campaign, n=12)
    campaign_settings_update(campaign=campaign, values={"gold_min_answered": 3})
    campaign.items_per_assignment = 100
    campaign.save()
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    for _ in range(9):  # 0 of 9 at 8 s per item: 2^9 = 512 to 1
        _answer_gold(campaign, assignment, BAD, after=8)
    assert not Participation.objects.filter(worker=worker, soft_blocked=True).exists()
    row = worker_quality(campaign).set_index("worker_id").loc[worker.pk]
    assert row["reason"].startswith("passes: odds 512 to 1 for an unreliable worker")
    assert "median 8.0 s per item (not fast)" in row["reason"] and row["passes"]
    _answer_gold(campaign, assignment, BAD, after=8)  # 0 of 10: 1,024 to 1
    assert Participation.objects.get(campaign=campaign, worker=worker).soft_blocked


def test_one_slip_in_three_gold_checks_never_blocks(campaign):
    _gold(campaign, n=6)
    campaign_settings_update(
        campaign=campaign, values={"gold_min_answered": 3, "gold_min_accuracy": 0.7}
    )
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    _answer_gold(campaign, assignment, BAD, after=1)  # a fast slip first
    _answer_gold(campaign, assignment, GOOD, after=1)
    _answer_gold(campaign, assignment, GOOD, after=1)
    assert not Participation.objects.filter(worker=worker, soft_blocked=True).exists()
    row = worker_quality(campaign).set_index("worker_id").loc[worker.pk]
    assert row["gold_accuracy"] < 0.7 and row["passes"]
    assert "gold 2/3 (67%, under 70%)" in row["reason"] and "gold" in row["flags"]


def test_two_failed_attention_checks_block_and_stay_apart_from_gold_accuracy(campaign):
    items_add(
        campaign=campaign,
        items=[(f"attn-{i}", likert_payload(200 + i), {"fluency": [5]}, True) for i in range(2)],
    )
    assert Item.objects.filter(campaign=campaign, attention=True).count() == 2
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    _answer_gold(campaign, assignment, BAD)
    assert not Participation.objects.filter(worker=worker, soft_blocked=True).exists()
    _answer_gold(campaign, assignment, BAD)
    participation = Participation.objects.get(campaign=campaign, worker=worker)
    assert participation.soft_blocked
    assert participation.reason.startswith("fails: 2 of 2 attention checks failed")
    row = worker_quality(campaign).set_index("worker_id").loc[worker.pk]
    assert row["gold_answered"] == 0 and row["attention_failed"] == 2


def test_a_soft_blocked_worker_gets_a_clear_end_and_no_further_items(client, campaign):
    worker = WorkerFactory(external_id="spammer")
    assignment = assignment_start(campaign=campaign, worker=worker)
    item = item_next(assignment=assignment)
    _answer(assignment, item, GOOD)
    worker_soft_block(campaign=campaign, worker=worker, reason="test")

    visit = _visit(campaign, "spammer")
    assert visit.kind == "done" and visit.stop == "blocked"
    assignment.refresh_from_db()
    assert assignment.status == "submitted"  # the work so far can still be paid
    assert not Lease.objects.filter(worker=worker).exists()
    assert _visit(campaign, "spammer").kind == "stopped"

    page = client.get(f"/task/{campaign.slug}/?workerId=spammer")
    assert page.status_code == 200
    assert "There are no more items for you in this study" in page.content.decode()
    assert 'name="item"' not in page.content.decode()


def test_a_soft_blocked_worker_cannot_submit_an_item_they_still_hold(campaign):
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    item = item_next(assignment=assignment)
    worker_soft_block(campaign=campaign, worker=worker, reason="test")
    with pytest.raises(NotAllowed, match="no more items"):
        _answer(assignment, item, GOOD)
    assert not Judgment.objects.filter(worker=worker).exists()


def test_blocked_workers_are_flagged_and_left_out_of_reports_until_unblocked(campaign):
    workers = [WorkerFactory() for _ in range(2)]
    for worker in workers:
        assignment = assignment_start(campaign=campaign, worker=worker)
        _answer(assignment, item_next(assignment=assignment), GOOD)
    worker_soft_block(campaign=campaign, worker=workers[0], reason="gold")
    kept = campaign_judgments_frame(campaign)
    everything = campaign_judgments_frame(campaign, include_flagged=True)
    assert set(kept["rater"]) == {workers[1].pseudonym}
    assert everything["flagged"].sum() == 3 and len(everything) == 6
    assert campaign_report(campaign).tables  # the report builds without the blocked worker
    worker_unblock(campaign=campaign, worker=workers[0])
    assert len(campaign_judgments_frame(campaign)) == 6


def test_gold_items_never_count_in_reports_or_progress(campaign):
    _gold(campaign, n=1)
    gold = Item.objects.get(campaign=campaign, gold__isnull=False)
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    lease_create(item=gold, assignment=assignment, expires_at=timezone.now() + timedelta(1))
    _answer(assignment, gold, GOOD)
    assert "gold-0" not in set(campaign_judgments_frame(campaign)["item"])
    progress = campaign_progress(campaign)
    assert (progress.items, progress.done) == (6, 0)


def test_an_answer_ten_seconds_too_fast_is_refused_and_stores_nothing(campaign):
    campaign_settings_update(campaign=campaign, values={"min_seconds_per_item": 15})
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    item = item_next(assignment=assignment)
    with pytest.raises(InvalidAnswer, match="take at least 15 s") as refused:
        _answer(assignment, item, GOOD, after=5)
    assert "after 5 s" in refused.value.message
    assert not Judgment.objects.filter(item=item).exists()
    assert Lease.objects.filter(item=item, worker=assignment.worker).exists()  # still theirs
    assert _answer(assignment, item, GOOD, after=15).created


def test_a_too_fast_form_submission_shows_the_message_on_the_page(client, campaign):
    campaign_settings_update(campaign=campaign, values={"min_seconds_per_item": 60})
    page = client.get(f"/task/{campaign.slug}/?workerId=quick")
    assert 'data-min-seconds="60' in page.content.decode()
    html = page.content.decode()
    token = html.split('name="token" value="')[1].split('"')[0]
    item = html.split('name="item" value="')[1].split('"')[0]
    response = client.post(
        f"/task/{campaign.slug}/submit/?workerId=quick",
        {"token": token, "item": item, "empathy": "4", "relevance": "4", "fluency": "4"},
    )
    assert response.status_code == 400
    assert "please take at least 60 s" in response.content.decode()
    assert not Judgment.objects.exists()


def test_the_per_worker_cap_stops_a_worker_and_can_change_while_live(campaign):
    campaign_settings_update(campaign=campaign, values={"max_items_per_worker": 2})
    worker = WorkerFactory(external_id="eager")
    for _ in range(2):
        visit = _visit(campaign, "eager")
        assert visit.kind == "item"
        _answer(visit.assignment, visit.item, GOOD)
    visit = _visit(campaign, "eager")
    assert visit.stop == "capped" and visit.kind in ("done", "stopped")
    assert Judgment.objects.filter(worker=worker).values("item").distinct().count() == 2
    campaign_settings_update(campaign=campaign, values={"max_items_per_worker": 3})
    assert _visit(campaign, "eager").kind == "item"


def test_controls_are_validated_with_a_message_per_setting(campaign):
    with pytest.raises(InvalidParameters) as refused:
        settings_clean(
            {"gold_rate": 0.9, "max_items_per_worker": 1.5, "min_seconds_per_item": "3", "x": 1},
            allowed=CONTROLS,
        )
    assert set(refused.value.fields) == {
        "gold_rate",
        "max_items_per_worker",
        "min_seconds_per_item",
        "x",
    }
    assert settings_clean({"max_items_per_worker": None}, allowed=CONTROLS) == {
        "max_items_per_worker": None
    }
    with pytest.raises(InvalidParameters):
        campaign_create(slug="qc", name="qc", protocol="likert", controls={"gold_rate": -1})


def test_worker_statistics_report_count_time_gold_agreement_and_flags(campaign):
    _gold(campaign, n=3)
    campaign_settings_update(campaign=campaign, values={"gold_min_answered": 2})
    careful, sloppy = WorkerFactory(), WorkerFactory()
    for worker, answers, seconds, golds in ((careful, GOOD, 8, 2), (sloppy, BAD, 1, 1)):
        assignment = assignment_start(campaign=campaign, worker=worker)
        for _ in range(3):
            item = (
                Item.objects.filter(campaign=campaign, gold__isnull=True)
                .exclude(judgments__worker=worker)
                .first()
            )
            leases_release(Lease.objects.filter(worker=worker))
            lease_create(
                item=item,
                assignment=assignment,
                expires_at=timezone.now() + timedelta(minutes=5),
            )
            _answer(assignment, item, answers, after=seconds)
        for _ in range(golds):  # the sloppy worker's first gold answer blocks them
            _answer_gold(campaign, assignment, answers, after=seconds)
    others = [WorkerFactory(), WorkerFactory()]
    for other in others:
        assignment = assignment_start(campaign=campaign, worker=other)
        for item in Item.objects.filter(campaign=campaign, gold__isnull=True)[:3]:
            leases_release(Lease.objects.filter(worker=other))
            lease_create(
                item=item,
                assignment=assignment,
                expires_at=timezone.now() + timedelta(minutes=5),
            )
            _answer(assignment, item, GOOD, after=6)
    third = others[0]

    stats = worker_quality(campaign).set_index("worker_id")
    assert stats.loc[careful.pk, "items"] == 3
    assert stats.loc[careful.pk, "median_seconds"] == pytest.approx(8, abs=0.01)
    assert stats.loc[careful.pk, "gold_accuracy"] == 1.0
    assert stats.loc[careful.pk, "loo_agreement"] == 1.0  # agrees with the majority of the others
    assert stats.loc[careful.pk, "passes"]
    assert stats.loc[sloppy.pk, "gold_accuracy"] == 0.0
    assert stats.loc[sloppy.pk, "loo_agreement"] == 0.0
    assert not stats.loc[sloppy.pk, "passes"]
    assert set(stats.loc[sloppy.pk, "flags"].split(", ")) == {
        "soft-blocked",
        "gold",
        "agreement",
        "fast",
    }
    reason = stats.loc[sloppy.pk, "reason"]
    assert reason.startswith("soft-blocked by quality control; now fails: odds ")
    assert "gold 0/1 (0%, under 70%)" in reason and "(fast: under 2 s)" in reason
    assert "agreement with others 0.00" in reason and "{" not in reason
    assert stats.loc[third.pk, "gold_answered"] == 0 and stats.loc[third.pk, "passes"]
    assert stats.loc[careful.pk, "pseudonym"] == careful.pseudonym


def test_a_provider_blocked_worker_cannot_submit_the_item_on_screen(campaign):
    worker = WorkerFactory()
    assignment = assignment_start(campaign=campaign, worker=worker)
    item = item_next(assignment=assignment)
    WorkerBlock.objects.create(worker=worker, reason="spam", actor="test")
    with pytest.raises(NotAllowed, match="no more items"):
        _answer(assignment, item, GOOD)
    assert not Judgment.objects.filter(worker=worker).exists()


# --- the rule itself, on constructed evidence (evalstats/quality_rule.py) ------------------


def _crowd_answers(kinds: dict[str, float | None], items: int = 60, seed: int = 0):
    """Answers of workers right with the given chance on yes/no items (None: always "yes")."""
    rng = np.random.default_rng(seed)
    truth = rng.random(items) < 0.6
    rows = []
    for worker, accuracy in kinds.items():
        for item in range(items):
            if accuracy is None:
                said = True
            else:
                said = truth[item] if rng.random() < accuracy else not truth[item]
            rows.append((worker, item, "sensible", "yes" if said else "no"))
    return pd.DataFrame(rows, columns=["worker", "item", "question", "value"])


def _decide(answers, gold: dict[str, tuple[int, int]], seconds: dict[str, float]):
    checks = pd.DataFrame(
        [(w, n, right) for w, (n, right) in gold.items()],
        columns=["worker", "gold_answered", "gold_correct"],
    ).set_index("worker")
    rule = Rule(min_accuracy=0.7, fast_seconds=2.0, min_evidence=6)
    return worker_decisions(answers, checks, pd.Series(seconds), rule).set_index("worker")


CROWD = {f"good-{i}": 0.9 for i in range(5)} | {"noisy": 0.7}


def test_the_rule_catches_a_fast_60_percent_worker_and_spares_the_fast_good_and_the_noisy():
    answers = _crowd_answers(CROWD | {"fast-good": 0.9, "spammer": 0.5})
    gold = {w: (10, 9) for w in CROWD} | {"noisy": (10, 7), "fast-good": (10, 9)}
    seconds = dict.fromkeys(CROWD, 9.0) | {"noisy": 6.0, "fast-good": 1.4, "spammer": 1.3}
    decided = _decide(answers, gold | {"spammer": (10, 6)}, seconds)
    assert decided.loc["spammer", "block"] and decided.loc["spammer", "fast"]
    assert not decided.loc["fast-good", "block"] and decided.loc["fast-good", "fast"]
    assert not decided.loc["noisy", "block"]
    assert not decided.loc[[f"good-{i}" for i in range(5)], "block"].any()
    reason = decided.loc["spammer", "reason"]
    assert reason.startswith("fails: odds ") and "the 5 to 1 that blocks a fast worker" in reason
    assert "gold 6/10 (60%, under 70%)" in reason
    assert "median 1.3 s per item (fast: under 2 s)" in reason
    assert set(decided.loc["spammer", "flags"].split(", ")) == {"gold", "agreement", "fast"}
    assert decided.loc["fast-good", "reason"].startswith("passes: odds 1 to ")


def test_time_alone_never_blocks_and_only_lowers_the_bar():
    answers = _crowd_answers(CROWD | {"spammer": 0.5}, items=12, seed=3)
    gold = dict.fromkeys(CROWD, (0, 0)) | {"spammer": (0, 0)}
    slow = _decide(answers, gold, dict.fromkeys([*CROWD, "spammer"], 9.0))
    fast = _decide(answers, gold, dict.fromkeys(CROWD, 9.0) | {"spammer": 0.5})
    odds = slow.loc["spammer", "spam_odds"]
    assert odds == pytest.approx(fast.loc["spammer", "spam_odds"])  # time is not evidence
    assert fast.loc["spammer", "block"] == (odds >= 5) and not slow.loc["spammer", "block"]
    nothing = _decide(answers.iloc[:0], {"idle": (0, 0)}, {"idle": 0.5})
    assert not nothing.loc["idle", "block"] and nothing.loc["idle", "fast"]


def test_a_biased_spammer_who_passes_every_gold_check_is_caught_by_agreement():
    answers = _crowd_answers(CROWD | {"yes-sayer": None})
    gold = {w: (10, 9) for w in CROWD} | {"yes-sayer": (10, 10)}
    decided = _decide(answers, gold, dict.fromkeys(CROWD, 9.0) | {"yes-sayer": 1.2})
    assert decided.loc["yes-sayer", "block"]
    assert decided.loc["yes-sayer", "reliability"] < 0.1
    assert "gold 10/10 (100%, at or over 70%)" in decided.loc["yes-sayer", "reason"]


def test_the_simulated_demo_study_blocks_the_spammer_and_no_good_worker():
    """Five seeded demo-size studies (bench/quality.py runs hundreds): the rule at the end."""
    shape = StudyShape(items=120, redundancy=5, gold_items=10, gold_rate=0.25)
    crowd = (
        {f"good-{i}": "good" for i in range(7)}
        | {"fast-good": "fast-good"}
        | {f"noisy-{i}": "noisy" for i in range(3)}
        | {"spammer": "fast-random"}
    )
    rule = Rule(min_accuracy=0.7, fast_seconds=2.0, min_evidence=6)
    for seed in range(5):
        decided = study_decisions(study_simulate(shape, crowd, np.random.default_rng(seed)), rule)
        blocked = set(decided.loc[decided["block"], "worker"])
        assert "spammer" in blocked
        assert not blocked & {w for w, kind in crowd.items() if "good" in kind}


def test_a_gold_answer_asks_for_one_background_review_per_window(
    campaign, django_capture_on_commit_callbacks, monkeypatch
):
    """The rule reads the whole campaign, so a gold answer never runs it in the request: it
    asks for a review after commit, once per ``REVIEW_EVERY_S`` and campaign."""
    from django.core.cache import cache

    from annotation import tasks

    cache.delete(f"quality-review:{campaign.pk}")
    asked: list[tuple] = []
    monkeypatch.setattr(
        tasks.campaign_quality_review,
        "apply_async",
        lambda args, countdown: asked.append((args, countdown)),
    )
    _gold(campaign, n=4)
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):
            leases_release(Lease.objects.filter(worker=assignment.worker))
            gold = (
                Item.objects.filter(campaign=campaign, gold__isnull=False)
                .exclude(judgments__worker=assignment.worker)
                .first()
            )
            lease_create(
                item=gold, assignment=assignment, expires_at=timezone.now() + timedelta(minutes=5)
            )
            _answer(assignment, gold, BAD, after=5)
    assert asked == [((campaign.pk,), 15)]
    assert tasks.campaign_quality_review.run(campaign.pk) == len(
        Participation.objects.filter(campaign=campaign, soft_blocked=True)
    )
