"""Replies cut at max_new_tokens are flagged in the report, the dashboard's tables and the
export, whatever the protocol made of them."""

import pandas as pd
import pytest

from annotation.exports import judgments_export, judgments_export_frame
from annotation.items import campaign_items_from_responses
from annotation.model_replies import campaign_shown_replies, truncated_table
from annotation.selectors import campaign_report
from annotation.services import campaign_create
from corpora.records import Context
from modelhub import services
from modelhub.backends import Reply
from modelhub.backends.generic_bot import GenericBot
from modelhub.models import Generation
from modelhub.services import endpoint_register
from tests.factories import AssignmentFactory, JudgmentFactory, WorkerFactory

CONTEXTS = [Context(key=f"c{n}", turns=(f"Tell me about day {n}.",)) for n in range(4)]


@pytest.fixture
def models(db, monkeypatch):
    """Two models: "long" cut its replies to contexts c0 and c2, "short" finished all."""

    def replies(self, examples, params):
        cut = self.rules == "cut"
        return [
            Reply(
                text=f"{'A long story about' if cut else 'ok'} {e.turns[0]}",
                finish_reason="length" if cut and e.turns[0][-2] in "02" else "stop",
                prompt_format="chat_template:0123456789ab|leading_bot=user" if cut else "",
            )
            for e in examples
        ]

    monkeypatch.setattr(GenericBot, "replies", replies)
    long, short = (endpoint_register(name=n, backend="generic_bot") for n in ("long", "short"))
    backends = {}
    original = services.endpoint_backend

    def backend(endpoint):
        built = backends.setdefault(endpoint.name, original(endpoint))
        built.rules = "cut" if endpoint.name == "long" else "fine"
        return built

    monkeypatch.setattr(services, "endpoint_backend", backend)
    return long, short


def _judged(campaign, question, value):
    assignment = AssignmentFactory(campaign=campaign, worker=WorkerFactory())
    for item in campaign.items.all():
        JudgmentFactory(assignment=assignment, item=item, question=question, value=value)


@pytest.mark.django_db
def test_a_likert_study_counts_and_flags_the_truncated_replies(models, tmp_path):
    campaign = campaign_create(slug="trunc", name="T", protocol="likert")
    campaign_items_from_responses(campaign=campaign, contexts=CONTEXTS, models=["long", "short"])
    table = truncated_table(campaign_shown_replies(campaign))
    assert table.to_dict("records") == [
        {"model": "long", "replies": 4, "truncated": 2, "truncated_share": 0.5},
        {"model": "short", "replies": 4, "truncated": 0, "truncated_share": 0.0},
    ]
    _judged(campaign, "empathy", 4)
    report = campaign_report(campaign)
    assert report.tables["truncated"].equals(table)
    assert any("long: 2 of 4" in note for note in report.notes)
    # The report names the format that produced each model's replies (none recorded: left out).
    formats = [n for n in report.notes if n.startswith("Prompt formats")]
    assert formats == [
        "Prompt formats of the models' replies: long: chat_template:0123456789ab|leading_bot=user."
    ]

    frame = judgments_export_frame(campaign)
    flagged = frame[frame["truncated"]]
    assert len(flagged) == 2
    assert {p["model"] for p in flagged["payload"]} == {"long"}
    assert all(p["context"][0][-2] in "02" for p in flagged["payload"])
    judgments_export(campaign, tmp_path / "t.csv", "csv")
    assert pd.read_csv(tmp_path / "t.csv")["truncated"].tolist() == frame["truncated"].tolist()


@pytest.mark.django_db
def test_an_ab_item_is_flagged_when_either_reply_was_cut(models):
    campaign = campaign_create(slug="trunc-ab", name="T", protocol="pairwise")
    campaign_items_from_responses(campaign=campaign, contexts=CONTEXTS, models=["long", "short"])
    _judged(campaign, "choice", "first")
    assert judgments_export_frame(campaign)["truncated"].sum() == 2


@pytest.mark.django_db
def test_a_study_without_a_cut_reply_has_no_truncation_table_or_note(models):
    campaign = campaign_create(slug="fine", name="F", protocol="likert")
    campaign_items_from_responses(campaign=campaign, contexts=CONTEXTS, models=["short"])
    _judged(campaign, "empathy", 4)
    report = campaign_report(campaign)
    assert "truncated" not in report.tables
    assert not any("Truncated" in note for note in report.notes)
    assert not judgments_export_frame(campaign)["truncated"].any()


@pytest.mark.django_db
def test_a_model_whose_replies_came_from_two_formats_is_named_in_the_note(models):
    campaign = campaign_create(slug="mixed", name="M", protocol="likert")
    campaign_items_from_responses(campaign=campaign, contexts=CONTEXTS, models=["long"])
    Generation.objects.filter(endpoint__name="long", response__endswith="day 3.").update(
        prompt_format="joined:'</s>'"
    )
    [note] = [n for n in campaign_report(campaign).notes if n.startswith("Prompt formats")]
    assert "long: chat_template:0123456789ab|leading_bot=user, joined:'</s>'" in note
    assert note.endswith("Mixed formats for long: compare with care.")
