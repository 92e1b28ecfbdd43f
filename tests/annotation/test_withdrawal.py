"""Withdrawal and erasure (worker_forget, the forget command, the withdraw page) and top-up."""

import re
from decimal import Decimal

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import models
from django.urls import reverse

from annotation.allocation import item_next, topup_cap
from annotation.dataset_reads import campaign_dialogue_records
from annotation.exports import judgments_export
from annotation.judgment_reads import campaign_judgments_frame
from annotation.models import (
    AuditLog,
    Campaign,
    Dialogue,
    Item,
    Judgment,
    Situation,
    Utterance,
    Worker,
)
from annotation.quality import worker_soft_block
from annotation.selectors import campaign_replacements, campaign_report
from annotation.services import (
    WITHDRAWN,
    assignment_start,
    audit_add,
    judgment_submit,
    worker_forget,
)
from annotation.services.datasets import records_export
from chat.models import ChatSeat
from recruitment.models import Payment
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    ItemFactory,
    JudgmentFactory,
    WorkerFactory,
)

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}
SECRET_ID = "EXT-SECRET-4711"
SECRET_TEXTS = (
    "My dog ran away last summer zqxj",
    "I still look for him every morning zqxj",
    "He came back thin but happy zqxj",
)


def _judge(campaign, worker, n=1):
    """Let ``worker`` judge up to ``n`` items through allocation and submission."""
    assignment = assignment_start(campaign=campaign, worker=worker)
    judged = []
    for _ in range(n):
        item = item_next(assignment=assignment)
        if item is None:
            break
        judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
        judged.append(item)
    return assignment, judged


def _writer(campaign):
    """A worker who judged, wrote a situation and chat turns quoted by a bot-turn item,
    was paid and logged: every place their id and texts reach."""
    worker = WorkerFactory(external_id=SECRET_ID)
    assignment, _ = _judge(campaign, worker, n=2)
    situation = Situation.objects.create(
        campaign=campaign, worker=worker, emotion="sad", text=SECRET_TEXTS[0]
    )
    dialogue = Dialogue.objects.create(
        campaign=campaign, key="ssa-1", situation=situation, emotion="sad"
    )
    for index, text in enumerate(SECRET_TEXTS[1:]):
        Utterance.objects.create(
            dialogue=dialogue,
            index=2 * index,
            speaker="user",
            worker=worker,
            text=text,
            signals={"typing_ms": 900},
        )
        Utterance.objects.create(dialogue=dialogue, index=2 * index + 1, speaker="bot", text="ok")
    Item.objects.create(
        campaign=campaign,
        key="ssa-1/1",
        payload={
            "context": [SECRET_TEXTS[1]],
            "response": "ok",
            "model": "bot",
            "example": dialogue.key,
        },
    )
    Payment.objects.create(
        campaign=campaign,
        provider="local",
        worker=worker,
        assignment=assignment,
        kind=Payment.Kind.BONUS,
        amount=Decimal("0.50"),
        reason=f"bonus for {SECRET_ID}",
        idempotency_key="bonus-1",
        actor="tester",
    )
    audit_add(
        action=AuditLog.Action.BONUS,
        actor="tester",
        campaign=campaign,
        worker=worker,
        amount=Decimal("0.50"),
        detail=f"paid {SECRET_ID}",
    )
    return worker


def _traces(needles):
    """Return (model, field, pk) of every text column of every model holding a needle."""
    found = []
    for model in apps.get_models():
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if isinstance(f, models.CharField | models.TextField | models.JSONField)
        ]
        if not fields:
            continue
        for row in model._default_manager.values("pk", *fields):
            for name in fields:
                if any(needle in str(row[name]) for needle in needles):
                    found.append((model.__name__, name, row["pk"]))
    return found


@pytest.mark.parametrize("policy", ["keep", "drop"])
def test_erasure_leaves_no_trace_of_the_worker_id_or_texts(db, tmp_path, policy):
    campaign = CampaignFactory(redundancy=2, withdrawal=policy)
    ItemFactory.create_batch(4, campaign=campaign)
    worker = _writer(campaign)
    needles = (SECRET_ID, *SECRET_TEXTS)
    assert _traces(needles)  # the scenario did put them in the database

    done = worker_forget(worker=worker, actor="tester", campaign=campaign)

    assert _traces(needles) == []
    assert done.texts == 3
    worker.refresh_from_db()
    assert worker.external_id == f"forgotten/{worker.pseudonym}"
    assert set(Utterance.objects.filter(worker=worker).values_list("text", flat=True)) == {
        WITHDRAWN
    }
    assert Situation.objects.get(worker=worker).text == WITHDRAWN
    assert Item.objects.get(key="ssa-1/1").payload["context"] == [WITHDRAWN]
    # Payments keep their amounts; the audit trail keeps its rows and logs the erasure.
    assert Payment.objects.get(worker=worker).amount == Decimal("0.50")
    assert AuditLog.objects.filter(worker=worker, action="bonus").count() == 1
    assert AuditLog.objects.filter(worker=worker, action="forget").count() == 1
    exported = []
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"judgments.{fmt}"
        judgments_export(campaign, path, fmt, include_flagged=True)
        exported.append(path.read_text())
    for path, _ in records_export(
        campaign_dialogue_records(campaign), fmt="jsonl", out=tmp_path / "dialogues.jsonl"
    ):
        exported.append(path.read_text())
    assert not [n for n in needles for text in exported if n in text]
    assert worker.pseudonym in exported[0]  # the judgments are there, under the pseudonym


def test_forget_is_idempotent(db):
    campaign = CampaignFactory(redundancy=2, withdrawal="drop")
    ItemFactory.create_batch(4, campaign=campaign)
    worker = _writer(campaign)
    first = worker_forget(worker=worker, actor="tester")
    state = (
        list(Worker.objects.values_list("external_id", flat=True)),
        list(Item.objects.order_by("pk").values_list("judged", "claims", "payload")),
        Campaign.objects.get(pk=campaign.pk).topup_reopened,
    )
    again = worker_forget(worker=Worker.objects.get(pk=worker.pk), actor="tester")
    assert not first.already and again.already
    assert state == (
        list(Worker.objects.values_list("external_id", flat=True)),
        list(Item.objects.order_by("pk").values_list("judged", "claims", "payload")),
        Campaign.objects.get(pk=campaign.pk).topup_reopened,
    )
    assert AuditLog.objects.filter(action="forget").count() == 1


def test_keep_policy_keeps_the_judgments_in_reports_anonymously(db):
    campaign = CampaignFactory(redundancy=2, withdrawal="keep")
    ItemFactory.create_batch(2, campaign=campaign)
    worker = WorkerFactory(external_id=SECRET_ID)
    _judge(campaign, worker, n=2)
    worker_forget(worker=worker, actor="tester")
    frame = campaign_judgments_frame(campaign)
    assert set(frame["rater"]) == {worker.pseudonym}
    assert len(frame) == 6
    assert Campaign.objects.get(pk=campaign.pk).topup_reopened == 0


def test_drop_policy_leaves_the_judgments_out_and_reopens_their_items(db):
    campaign = CampaignFactory(redundancy=1, withdrawal="drop")
    item = ItemFactory(campaign=campaign)
    leaver, _ = _judge(campaign, WorkerFactory(external_id=SECRET_ID))
    late = assignment_start(campaign=campaign, worker=WorkerFactory())
    assert item_next(assignment=late) is None  # full

    done = worker_forget(worker=leaver.worker, actor="tester", campaign=campaign)

    assert done.dropped == [campaign.slug] and done.reopened == 1
    assert campaign_judgments_frame(campaign).empty
    assert len(campaign_judgments_frame(campaign, include_flagged=True)) == 3
    assert Judgment.objects.filter(worker=leaver.worker).count() == 3  # scrubbed, not deleted
    assert item_next(assignment=late) == item
    judgment_submit(assignment=late, item_id=item.pk, answers=ANSWERS)
    assert campaign_replacements(campaign).replaced == 1
    assert any("1 of them were replaced" in note for note in campaign_report(campaign).notes)


def test_a_reopened_item_goes_to_the_next_worker_and_never_back(db):
    campaign = CampaignFactory(redundancy=2)
    item = ItemFactory(campaign=campaign)
    (a, _), (b, _) = (_judge(campaign, WorkerFactory()) for _ in range(2))
    c = assignment_start(campaign=campaign, worker=WorkerFactory())
    assert item_next(assignment=c) is None

    worker_soft_block(campaign=campaign, worker=a.worker, reason="gold")
    worker_soft_block(campaign=campaign, worker=a.worker, reason="gold again")  # idempotent

    item.refresh_from_db()
    assert (item.judged, item.claims) == (1, 1)
    assert Campaign.objects.get(pk=campaign.pk).topup_reopened == 1
    assert item_next(assignment=b) is None  # b judged it
    assert item_next(assignment=c) == item
    judgment_submit(assignment=c, item_id=item.pk, answers=ANSWERS)
    d = assignment_start(campaign=campaign, worker=WorkerFactory())
    assert item_next(assignment=d) is None  # two valid judgments again: closed
    topup = campaign_replacements(campaign)
    assert (topup.excluded, topup.replaced, topup.reopened) == (1, 1, 1)


def test_the_cap_bounds_the_reopened_slots(db):
    campaign = CampaignFactory(redundancy=1, topup_max=1, items_per_assignment=3)
    ItemFactory.create_batch(3, campaign=campaign)
    a, judged = _judge(campaign, WorkerFactory(), n=3)
    assert len(judged) == 3
    worker_soft_block(campaign=campaign, worker=a.worker, reason="spam")
    assert sorted(Item.objects.values_list("judged", flat=True)) == [0, 1, 1]
    assert Campaign.objects.get(pk=campaign.pk).topup_reopened == 1
    off = CampaignFactory(redundancy=1, topup_max=0, items_per_assignment=3)
    ItemFactory.create_batch(3, campaign=off)
    b, _ = _judge(off, WorkerFactory(), n=3)
    worker_soft_block(campaign=off, worker=b.worker, reason="spam")
    assert list(Item.objects.filter(campaign=off).values_list("judged", flat=True)) == [1] * 3
    unset = CampaignFactory(redundancy=2)  # empty: a tenth of the 22 slots, rounded up
    ItemFactory.create_batch(11, campaign=unset)
    assert topup_cap(unset) == 3


def test_forget_command(db):
    campaign = CampaignFactory(redundancy=2)
    ItemFactory.create_batch(2, campaign=campaign)
    worker = WorkerFactory(external_id=SECRET_ID)
    _judge(campaign, worker)
    with pytest.raises(CommandError, match="--provider"):
        call_command("forget", SECRET_ID)
    out = []
    call_command("forget", SECRET_ID, provider="local", by="ethics", stdout=_Out(out))
    call_command("forget", worker.pseudonym, stdout=_Out(out))
    assert out[0].startswith(f"Forgot {worker.pseudonym}")
    assert "already forgotten" in out[1]
    assert AuditLog.objects.get(action="forget").actor == "ethics"


class _Out:
    def __init__(self, lines):
        self.lines = lines

    def write(self, text):
        self.lines.append(text)

    def flush(self):
        pass


def test_withdraw_page_confirms_then_erases(client, db):
    campaign = CampaignFactory(redundancy=2, withdrawal="drop")
    ItemFactory.create_batch(3, campaign=campaign)
    page = client.get(reverse("annotation:task", args=[campaign.slug]) + f"?workerId={SECRET_ID}")
    token = re.search(r'name="token" value="([^"]+)"', page.content.decode()).group(1)
    assert "Withdraw from this study" in page.content.decode()
    url = reverse("annotation:task_withdraw", args=[campaign.slug]) + f"?workerId={SECRET_ID}"

    confirm = client.get(url + f"&token={token}")
    assert confirm.status_code == 200
    assert "removed from the study" in confirm.content.decode()
    assert not AuditLog.objects.filter(action="forget").exists()  # a GET changes nothing
    assert client.post(url, {"token": "forged"}).status_code == 403

    done = client.post(url, {"token": token})
    assert done.status_code == 200
    assert "You have withdrawn" in done.content.decode()
    assert not Worker.objects.filter(external_id=SECRET_ID).exists()
    assert AuditLog.objects.get(action="forget").actor == "worker (withdrawal)"
    assert client.post(url, {"token": token}).status_code == 403  # nothing left to withdraw


def test_the_dashboard_action_forgets_a_worker(db):
    from dashboard.services import worker_act

    campaign = CampaignFactory(redundancy=2)
    ItemFactory.create_batch(2, campaign=campaign)
    worker = WorkerFactory(external_id=SECRET_ID)
    _judge(campaign, worker)
    act = {"campaign": campaign, "pseudonym": worker.pseudonym, "action": "forget", "actor": "ada"}
    assert worker_act(**act) == f"{worker.pseudonym} is forgotten."
    assert worker_act(**act) == f"{worker.pseudonym} was already forgotten."
    assert not Worker.objects.filter(external_id=SECRET_ID).exists()
    assert AuditLog.objects.get(action="forget").actor == "ada"


def test_answers_in_the_workers_own_words_are_erased_too(db):
    """ACUTE-Eval's written reasons and interactive SSA's closing comment (their own words)."""
    acute = CampaignFactory(protocol="acute", withdrawal="keep")
    choice = JudgmentFactory(assignment__campaign=acute, question="engaging", value="first")
    worker = choice.worker
    reason = JudgmentFactory(
        assignment=choice.assignment, item=choice.item, question="reason", value="I am Ann Lee."
    )
    other = JudgmentFactory(assignment__campaign=acute, question="reason", value="Someone else's.")
    chat = CampaignFactory(protocol="ssa_interactive")
    dialogue = Dialogue.objects.create(
        campaign=chat,
        key="ssa-9",
        metadata={"ratings": {"values": {"engaging": 4}, "comment": "Mail me: ann@x.org"}},
    )
    ChatSeat.objects.create(
        assignment=AssignmentFactory(campaign=chat, worker=worker),
        campaign=chat,
        worker=worker,
        stage="done",
        dialogue=dialogue,
    )

    done = worker_forget(worker=worker, actor="tester")

    assert done.texts == 2
    for row in (reason, choice, other):
        row.refresh_from_db()
    assert reason.value == WITHDRAWN and choice.value == "first"  # the choice is kept
    assert other.value == "Someone else's."
    dialogue.refresh_from_db()
    assert dialogue.metadata["ratings"] == {"values": {"engaging": 4}, "comment": WITHDRAWN}
    assert worker_forget(worker=worker, actor="tester").already
