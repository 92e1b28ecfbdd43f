"""Researcher review on the campaign page (issue #18, item 7): the worker-page preview, bulk
approve, bonuses from a CSV file, confirmations, completion-code lookup, status and budget,
and readable report headers with a glossary."""

from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Assignment, AuditLog, Campaign, Worker
from annotation.services import campaign_budget_set, campaign_settings_update
from dashboard import glossary
from dashboard.files import job_file_open
from dashboard.models import Job
from evalsite.errors import Conflict, InvalidParameters
from recruitment.models import Payment
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


def _page(client, campaign, query: str = "") -> str:
    response = client.get(reverse("dashboard:campaign", args=[campaign.slug]) + query)
    assert response.status_code == 200
    return response.content.decode()


def _submitted(campaign) -> list[Worker]:
    ids = (
        Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SUBMITTED)
        .values_list("worker", flat=True)
        .distinct()
    )
    return list(Worker.objects.filter(pk__in=ids).order_by("pseudonym"))


def _post(client, campaign, name: str, data: dict) -> str:
    url = reverse(f"dashboard:{name}", args=[campaign.slug])
    return client.post(url, data, follow=True).content.decode()


# --- preview and layout ---------------------------------------------------------------------


@pytest.mark.parametrize("status", ["live", "paused", "draft"])
def test_the_worker_page_preview_link_opens_the_preview_for_staff(
    ada, client, researcher, status
) -> None:
    campaign = CampaignFactory(owner=researcher, status=status)
    ItemFactory.create_batch(2, campaign=campaign)
    page = _page(ada, campaign)
    link = page.split('id="preview-link"')[0].rsplit('href="', 1)[1].split('"')[0]
    link = link.replace("&amp;", "&")
    assert "hitId=preview" in link and "ASSIGNMENT_ID_NOT_AVAILABLE" in link
    preview = ada.get(link)
    assert preview.status_code == 200, preview.content[:300]
    assert b"preview" in preview.content.lower()
    if status != "live":  # to anyone else a study that is not live does not exist
        ada.logout()
        assert client.get(link).status_code == 404


def test_the_worker_table_keeps_its_actions_in_view(ada, filled) -> None:
    css = (Path(settings.BASE_DIR) / "static/css/dashboard.css").read_text()
    assert "#quality td.actions" in css and "position: sticky" in css
    Job.objects.create(
        campaign=filled,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        result={
            "judgments": 0,
            "quality": {"columns": ["worker_id", "pseudonym", "items"], "rows": [[1, "W1", 3]]},
        },
    )
    page = _page(ada, filled)
    assert '<td class="actions">' in page and '<th scope="col" class="actions">' in page


# --- bulk approve ---------------------------------------------------------------------------


def test_bulk_approve_approves_the_ticked_workers_only(ada, filled) -> None:
    workers = _submitted(filled)
    assert len(workers) >= 3
    ticked, left = workers[:2], workers[2:]
    page = _post(
        ada,
        filled,
        "workers_approve",
        {"scope": "selected", "workers": [w.pseudonym for w in ticked]},
    )
    assert "Approved the work of 2 of 2 worker(s)" in page
    assert not Assignment.objects.filter(
        campaign=filled, worker__in=ticked, status=Assignment.Status.SUBMITTED
    ).exists()
    assert Assignment.objects.filter(
        campaign=filled, worker__in=left, status=Assignment.Status.SUBMITTED
    ).exists()
    audited = set(
        AuditLog.objects.filter(action=AuditLog.Action.APPROVE).values_list("worker", "actor")
    )
    assert audited == {(w.pk, "ada") for w in ticked}


def test_bulk_approve_of_everyone_leaves_nothing_submitted(ada, filled) -> None:
    workers = _submitted(filled)
    page = _post(ada, filled, "workers_approve", {"scope": "all"})
    assert f"Approved the work of {len(workers)} of {len(workers)}" in page
    assert not Assignment.objects.filter(
        campaign=filled, status=Assignment.Status.SUBMITTED
    ).exists()
    again = _post(ada, filled, "workers_approve", {"scope": "all"})
    assert "Nothing is waiting for review" in again
    assert "No worker selected" in _post(ada, filled, "workers_approve", {"scope": "selected"})


def test_review_by_quality_control_lists_its_decisions_then_carries_them_out(
    ada, researcher
) -> None:
    from recruitment.models import Publication
    from tests.factories import AssignmentFactory, JudgmentFactory

    campaign = CampaignFactory(owner=researcher, status="live", budget=Decimal("20"))
    Publication.objects.create(campaign=campaign, provider="local", status="live")
    worked = AssignmentFactory(campaign=campaign, status=Assignment.Status.SUBMITTED)
    JudgmentFactory(assignment=worked)
    empty = AssignmentFactory(campaign=campaign, status=Assignment.Status.SUBMITTED)
    assert "Review by quality control" in _page(ada, campaign)
    asked = _post(ada, campaign, "campaign_review", {})
    assert "Approve and reject as listed" in asked
    assert worked.worker.pseudonym in asked and empty.worker.pseudonym in asked
    assert asked.count('data-decision="approve"') == 1
    assert asked.count('data-decision="reject"') == 1 and "No work was recorded" in asked
    assert set(Assignment.objects.values_list("status", flat=True)) == {"submitted"}
    done = _post(ada, campaign, "campaign_review", {"confirmed": "1"})
    assert "Review: approved 1, rejected 1 submission(s)" in done
    worked.refresh_from_db()
    empty.refresh_from_db()
    assert (worked.status, empty.status) == ("approved", "rejected")


def test_review_by_quality_control_needs_a_publication(ada, filled) -> None:
    assert "Review by quality control" not in _page(ada, filled)
    assert "published on no provider" in _post(ada, filled, "campaign_review", {})


# --- bonuses from a file --------------------------------------------------------------------


def _upload(client, campaign, text: str) -> str:
    file = SimpleUploadedFile("bonuses.csv", text.encode(), content_type="text/csv")
    return _post(client, campaign, "bonuses_upload", {"file": file})


def test_a_bonus_file_pays_each_line_once_even_when_uploaded_again(ada, filled) -> None:
    first, second = _submitted(filled)[:2]
    text = (
        "worker,amount,reason\n"
        f"{first.pseudonym},0.50,careful work\n"
        f'{second.external_id},1.25,"thorough, thanks"\n'
    )
    page = _upload(ada, filled, text)
    assert "Paid 2 bonus(es) from the file" in page
    paid = {(p.worker_id, str(p.amount), p.reason, p.actor) for p in Payment.objects.all()}
    assert paid == {
        (first.pk, "0.50", "careful work", "ada"),
        (second.pk, "1.25", "thorough, thanks", "ada"),
    }
    # A new submission moves the worker's latest assignment: the file's key does not follow it.
    Assignment.objects.filter(campaign=filled, worker=first).update(
        status=Assignment.Status.APPROVED
    )
    again = _upload(ada, filled, text)
    assert "Paid 0 bonus(es) from the file; 2 were paid before" in again
    assert Payment.objects.count() == 2
    assert AuditLog.objects.filter(action=AuditLog.Action.BONUS).count() == 2


@pytest.mark.parametrize(
    "line, message",
    [
        ("{w},lots,thanks", "line 3: A bonus must be an amount like 0.50"),
        ("{w},150,thanks", "line 3: A bonus must be an amount like 0.50"),
        ("{w},0.50,", "line 3: a bonus needs a reason"),
        ("W-nobody,0.50,thanks", "line 3: no worker &#x27;W-nobody&#x27; in this campaign"),
        ("{w},0.50", "line 3: expected 3 fields"),
        ("{w},0.20,good", "line 3: the same bonus as line 1"),
    ],
)
def test_a_bad_bonus_file_pays_nothing_and_names_the_line(ada, filled, line, message) -> None:
    worker = _submitted(filled)[0]
    text = f"{worker.pseudonym},0.20,good\n{worker.pseudonym},0.30,also good\n" + line.format(
        w=worker.pseudonym
    )
    page = _upload(ada, filled, text)
    assert "Nothing was paid" in page and message in page
    assert not Payment.objects.exists()


def test_a_bonus_file_over_the_budget_is_refused_whole(ada, filled) -> None:
    Campaign.objects.filter(pk=filled.pk).update(budget=Decimal("1.00"))
    first, second = _submitted(filled)[:2]
    page = _upload(ada, filled, f"{first.pseudonym},0.60,a\n{second.pseudonym},0.60,b\n")
    assert "Nothing was paid" in page and "cost 1.20" in page
    assert not Payment.objects.exists()


def test_a_bonus_file_that_is_not_text_is_refused(ada, filled) -> None:
    page = _upload(ada, filled, "")
    assert "no bonus lines" in page
    file = SimpleUploadedFile("b.csv", b"\xff\xfe\x00x", content_type="text/csv")
    assert "UTF-8" in _post(ada, filled, "bonuses_upload", {"file": file})
    assert "Choose a CSV file" in _post(ada, filled, "bonuses_upload", {})


# --- confirmations --------------------------------------------------------------------------


def test_reject_asks_for_confirmation_before_it_rejects(ada, filled) -> None:
    worker = _submitted(filled)[0]
    data = {"worker": worker.pseudonym, "action": "reject", "reason": "random answers"}
    asked = _post(ada, filled, "worker_action", data)
    assert f"Reject the work of {worker.pseudonym}?" in asked
    assert 'name="confirmed" value="1"' in asked and "random answers" in asked
    assert Assignment.objects.filter(
        worker=worker, campaign=filled, status=Assignment.Status.SUBMITTED
    ).exists()
    assert not AuditLog.objects.exists()
    done = _post(ada, filled, "worker_action", {**data, "confirmed": "1"})
    assert "Rejected" in done
    assert not Assignment.objects.filter(
        worker=worker, campaign=filled, status=Assignment.Status.SUBMITTED
    ).exists()


def test_a_reject_without_feedback_is_refused_before_any_confirmation(ada, filled) -> None:
    worker = _submitted(filled)[0]
    page = _post(ada, filled, "worker_action", {"worker": worker.pseudonym, "action": "reject"})
    assert "needs feedback" in page and "Reject the work of" not in page


# --- completion codes -----------------------------------------------------------------------


def test_a_completion_code_finds_its_worker_and_assignment(ada, filled) -> None:
    assignment = Assignment.objects.filter(
        campaign=filled, status=Assignment.Status.SUBMITTED
    ).first()
    Assignment.objects.filter(pk=assignment.pk).update(completion_code="C0DE-42")
    page = _page(ada, filled, "?code=%20c0de-42%20#codes")
    table = page.split('id="code-matches"')[1].split("</table>")[0]
    assert assignment.worker.pseudonym in table and f"#{assignment.pk}" in table
    assert "Submitted" in table
    assert 'id="code-none"' in _page(ada, filled, "?code=NOPE")


# --- status and budget ----------------------------------------------------------------------


def test_a_live_campaign_pauses_resumes_and_finishes_only_when_confirmed(ada, filled) -> None:
    assert "Pause" in _page(ada, filled).split('id="controls"')[1]
    assert "now paused" in _post(ada, filled, "campaign_status", {"action": "pause"})
    assert Campaign.objects.get(pk=filled.pk).status == "paused"
    assert "now live" in _post(ada, filled, "campaign_status", {"action": "resume"})
    refused = _post(ada, filled, "campaign_status", {"action": "finish"})
    assert "Tick the box" in refused and Campaign.objects.get(pk=filled.pk).status == "live"
    _post(ada, filled, "campaign_status", {"action": "finish", "confirmed": "on"})
    assert Campaign.objects.get(pk=filled.pk).status == "finished"
    assert "cannot become live" in _post(ada, filled, "campaign_status", {"action": "resume"})
    actions = list(AuditLog.objects.filter(campaign=filled).values_list("action", flat=True))
    assert sorted(actions) == ["pause", "resume", "stop"]


def test_a_draft_has_no_status_controls(ada, researcher) -> None:
    draft = CampaignFactory(owner=researcher, status="draft")
    assert 'id="controls"' not in _page(ada, draft)
    assert "launch wizard" in _post(ada, draft, "campaign_status", {"action": "pause"})


def test_the_budget_changes_live_but_never_below_what_is_committed(ada, filled) -> None:
    worker = _submitted(filled)[0]
    _upload(ada, filled, f"{worker.pseudonym},2.00,thanks\n")
    assert "budget is now 80.00" in _post(ada, filled, "campaign_budget", {"budget": "80"})
    assert Campaign.objects.get(pk=filled.pk).budget == Decimal("80.00")
    low = _post(ada, filled, "campaign_budget", {"budget": "1.50"})
    assert "cannot go below what is already committed (2.00" in low
    assert "amount like 0.50" in _post(ada, filled, "campaign_budget", {"budget": "lots"})
    assert Campaign.objects.get(pk=filled.pk).budget == Decimal("80.00")


def test_a_launched_budget_changes_through_the_ledger_never_the_settings_path(db) -> None:
    campaign = CampaignFactory(status="live", budget=Decimal("10"))
    with pytest.raises(Conflict, match="campaign_budget_set"):
        campaign_settings_update(campaign=campaign, values={"budget": "25.50"})
    campaign_budget_set(campaign=campaign, budget="25.50")
    assert Campaign.objects.get(pk=campaign.pk).budget == Decimal("25.50")
    with pytest.raises(InvalidParameters, match="Unknown setting"):
        campaign_settings_update(campaign=campaign, values={"reward": "1.00"})


# --- readable report headers ----------------------------------------------------------------


def test_p_values_and_missing_values_are_formatted_by_column() -> None:
    assert glossary.format_cell(0.00004, "sign_test_p") == "< 0.001"
    assert glossary.format_cell(0.0, "p_holm") == "< 0.001"
    assert glossary.format_cell(0.0312, "p") == "0.031"
    assert glossary.format_cell(0.00004, "mean") == "0.000"
    assert glossary.format_cell(None, "p") == glossary.format_cell(float("nan"), "p") == "–"
    assert glossary.format_cell(True, "passes") == "yes"
    assert glossary.header("loo_agreement") == "Agreement with others"
    assert glossary.header("ssa_low") == "SSA CI low"
    assert glossary.header("made_up_column") == "made up column"
    assert not glossary.is_p_value("passes") and not glossary.is_p_value("pct_low")


def test_the_report_shows_readable_headers_a_glossary_and_keeps_raw_files(ada, filled) -> None:
    columns = ["model_a", "model_b", "ratio", "sign_test_p", "ci_low", "ci_method"]
    Job.objects.create(
        campaign=filled,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        result={
            "judgments": 0,
            "tables": {"pairs": {"columns": columns, "rows": [["a", "b", 2.0, 1e-5, 0.4, "x"]]}},
            "quality": {
                "columns": ["worker_id", "pseudonym", "loo_agreement"],
                "rows": [[1, "W1", 0.5]],
            },
        },
    )
    page = _page(ada, filled)
    report = page.split('data-table="pairs"')[1].split("</table>")[0]
    assert "Sign test p</abbr>" in report and "CI low</abbr>" in report
    assert "<td>&lt; 0.001</td>" in report and "sign_test_p</" not in report
    assert "Agreement with others" in page.split('id="quality"')[1]
    section = page.split('id="glossary"')[1].split("</section>")[0]
    for name in ["sign_test_p", "ci_low", "ci_method", "loo_agreement"]:
        assert f"<code>{name}</code>" in section


def test_a_built_report_keeps_machine_readable_column_names(ada, filled) -> None:
    from dashboard import services

    job = Job.objects.create(campaign=filled, kind=Job.Kind.REPORT)
    assert services.job_run(job.pk)
    job.refresh_from_db()
    with job_file_open(job, f"{filled.slug}_worker_quality.csv") as content:
        quality = content.read().decode().splitlines()[0]
    assert "loo_agreement" in quality.split(",")
    assert "loo_agreement" in job.result["quality"]["columns"]
    page = _page(ada, filled)
    assert "Agreement with others" in page and "<code>loo_agreement</code>" in page
