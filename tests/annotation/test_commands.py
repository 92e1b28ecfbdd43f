"""Management commands: output and clear errors."""

import io
import json

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judgment, Worker
from annotation.services import campaign_create
from annotation.simulation import crowd_make, crowd_run
from modelhub.services import endpoint_register
from tests.factories import CampaignFactory, ItemFactory


def test_report_prints_progress_and_writes_files(campaign, tmp_path):
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0))
    out = io.StringIO()
    call_command("report", campaign.slug, "--out", str(tmp_path), stdout=out)
    text = out.getvalue()
    assert "18 of 18 judgments (100%), 3 workers" in text
    assert "± 1 SEM, as in the paper; does not account for raters" in text
    assert (tmp_path / f"{campaign.slug}_scores.csv").exists()


def test_report_of_an_unknown_campaign_is_a_command_error(campaign):
    with pytest.raises(CommandError, match="No campaign 'nope'; campaigns: "):
        call_command("report", "nope")


def test_report_writes_tables_as_csv_and_json_and_figures_as_png_and_svg(campaign, tmp_path):
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0))
    call_command("report", campaign.slug, "--out", str(tmp_path), stdout=io.StringIO())
    records = json.loads((tmp_path / f"{campaign.slug}_scores.json").read_text())
    assert {r["model"] for r in records} and all("sem" in r for r in records)
    assert (tmp_path / f"{campaign.slug}_likert.png").stat().st_size > 1000
    assert (tmp_path / f"{campaign.slug}_likert.svg").read_text().startswith("<?xml")


def test_report_options_set_the_level_and_the_method(campaign, tmp_path):
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0))
    frames = {}
    for name, args in {
        "95": [],
        "80": ["--ci-level", "0.8"],
        "independent": ["--method", "independent", "--n-boot", "50", "--seed", "3"],
    }.items():
        out = tmp_path / name
        call_command("report", campaign.slug, "--out", str(out), *args, stdout=io.StringIO())
        frames[name] = pd.read_csv(out / f"{campaign.slug}_scores.csv")
    width = {k: (f["ci_high"] - f["ci_low"]).mean() for k, f in frames.items()}
    assert width["80"] < width["95"]
    assert frames["95"]["ci_method"].str.startswith("crossed items×raters").all()
    assert frames["independent"]["ci_method"].str.startswith("independent").all()


def test_report_bad_options_are_command_errors(campaign):
    with pytest.raises(CommandError, match="level"):
        call_command("report", campaign.slug, "--ci-level", "1.5", stdout=io.StringIO())
    with pytest.raises(CommandError, match="max-rows"):
        call_command("report", campaign.slug, "--max-rows", "0", stdout=io.StringIO())


def test_report_writes_long_tables_to_files_and_prints_their_head(campaign, tmp_path):
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0))
    out = io.StringIO()
    call_command("report", campaign.slug, "--max-rows", "2", "--out", str(tmp_path), stdout=out)
    text = out.getvalue()
    assert "more of" in text and f"all in {tmp_path / (campaign.slug + '_scores.csv')}" in text
    scores = pd.read_csv(tmp_path / f"{campaign.slug}_scores.csv")
    assert len(scores) > 2


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_writes_judgments_with_pseudonyms_only(campaign, tmp_path, fmt):
    crowd_run(campaign=campaign, workers=crowd_make(good=2, noisy=0, spammer=0))
    out = tmp_path / f"j.{fmt}"
    call_command("export", campaign.slug, "--format", fmt, "--out", str(out), stdout=io.StringIO())
    frame = {
        "csv": pd.read_csv,
        "jsonl": lambda p: pd.read_json(p, lines=True),
        "parquet": pd.read_parquet,
    }[fmt](out)
    assert len(frame) == Judgment.objects.count() == 2 * 6 * 3
    assert set(frame["rater"]) == set(Worker.objects.values_list("pseudonym", flat=True))
    text = out.read_bytes()
    assert b"sim-good" not in text  # external ids never leave the platform
    assert {"item", "question", "value", "presentation", "payload", "flagged"} <= set(frame)


def test_export_refuses_a_folder_and_an_unknown_campaign(campaign, tmp_path):
    with pytest.raises(CommandError, match="is a folder"):
        call_command("export", campaign.slug, "--out", str(tmp_path))
    with pytest.raises(CommandError, match="No campaign"):
        call_command("export", "nope")


def test_add_items_builds_ssa_items_from_contexts_and_models(db, tmp_path):
    endpoint_register(name="generic", backend="generic_bot")
    endpoint_register(name="human", backend="gold")
    campaign = campaign_create(slug="mtb", name="MTB", protocol="ssa")
    contexts = tmp_path / "mtb.jsonl"
    contexts.write_text(
        '{"id": "c1", "context": ["Hi!", "How are you?"], "reference": "Great, thanks."}\n'
        '{"id": "c2", "context": "I love tennis.", "reference": "Who is your favourite player?"}\n'
    )
    out = io.StringIO()
    call_command(
        "add_items", "mtb", "--contexts", str(contexts), "--models", "generic,human", stdout=out
    )
    assert "Added 4 item(s)" in out.getvalue()
    responses = dict(campaign.items.values_list("key", "payload__response"))
    assert responses == {
        "c1/generic": "I don't know.",
        "c2/generic": "ok",
        "c1/human": "Great, thanks.",
        "c2/human": "Who is your favourite player?",
    }
    call_command(
        "add_items", "mtb", "--contexts", str(contexts), "--models", "generic", stdout=io.StringIO()
    )
    assert campaign.items.count() == 4  # a repeat adds nothing


def test_add_items_pairs_models_and_skips_identical_responses(db, tmp_path):
    campaign = campaign_create(slug="ab", name="AB", protocol="pairwise")
    contexts = tmp_path / "c.csv"
    contexts.write_text("id,turn_1,turn_2\nc1,Hi!,How are you?\nc2,I love tennis.,\n")
    responses = tmp_path / "r.jsonl"
    responses.write_text(
        "\n".join(
            json.dumps({"id": i, "model": m, "response": r})
            for i, m, r in [
                ("c1", "x", "Fine, you?"),
                ("c1", "y", "fine,  YOU?"),
                ("c2", "x", "Me too!"),
                ("c2", "y", "Who do you play with?"),
            ]
        )
    )
    out = io.StringIO()
    call_command(
        "add_items", "ab", "--contexts", str(contexts), "--responses", str(responses), stdout=out
    )
    assert "Added 1 item(s)" in out.getvalue() and "skipped 1 identical" in out.getvalue()
    assert list(campaign.items.values_list("key", flat=True)) == ["c2/x~y"]


@pytest.mark.parametrize(
    "name, body, message",
    [
        ("c.jsonl", '{"context": ["a"]}\n{"context": [1]}\n', "line 2: a context needs"),
        ("c.jsonl", '{"context": ["a"]}\nnot json\n', "line 2: not valid JSON"),
        ("c.jsonl", '{"context": ["a", "b", "c", "d"]}\n', "line 1: 4 turns; at most 3"),
        ("c.csv", "id,turn_1\nx,hello\nx,again\n", "line 3: the id 'x' appears twice"),
        ("c.csv", "id,text\nx,hello\n", "the header needs turn_1"),
        ("c.txt", "", "no contexts"),
        ("c.xml", "<a/>", "use a .jsonl, .csv or .txt"),
    ],
)
def test_add_items_refuses_a_malformed_context_file_naming_the_line(
    db, tmp_path, name, body, message
):
    campaign = campaign_create(slug="bad", name="Bad", protocol="ssa")
    endpoint_register(name="generic", backend="generic_bot")
    path = tmp_path / name
    path.write_text(body)
    with pytest.raises(CommandError, match=message):
        call_command("add_items", "bad", "--contexts", str(path), "--models", "generic")
    assert not campaign.items.exists()


def test_add_items_refuses_unknown_models_and_incomplete_responses(db, tmp_path):
    campaign_create(slug="c", name="C", protocol="likert")
    contexts = tmp_path / "c.txt"
    contexts.write_text("Hi!\tHello, how are you?\nI got a puppy!\n")
    with pytest.raises(CommandError, match="No registered model called 'ghost'"):
        call_command("add_items", "c", "--contexts", str(contexts), "--models", "ghost")
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"id": "ctx-1", "model": "m", "response": "Fine."}\n')
    with pytest.raises(CommandError, match="miss 1 context"):
        call_command("add_items", "c", "--contexts", str(contexts), "--responses", str(responses))
    with pytest.raises(CommandError, match="Give --contexts"):
        call_command("add_items", "c")


def test_add_items_adds_gold_checks_from_jsonl(db, tmp_path):
    campaign = campaign_create(slug="g", name="G", protocol="ssa")
    gold = tmp_path / "gold.jsonl"
    payload = {"context": ["What's 2+2?"], "response": "Purple elephants.", "model": "check"}
    gold.write_text(json.dumps({"key": "g1", "payload": payload, "gold": {"sensible": ["no"]}}))
    call_command("add_items", "g", "--gold", str(gold), stdout=io.StringIO())
    assert campaign.items.get().gold == {"sensible": ["no"]}
    gold.write_text('{"key": "g2"}')
    with pytest.raises(CommandError, match="line 1: needs 'key', 'payload', 'gold'"):
        call_command("add_items", "g", "--gold", str(gold))


@pytest.mark.django_db
def test_the_report_command_prints_which_agreement_interval_it_took(tmp_path):
    """--interval picks what alpha's interval resamples; the table names the one taken."""
    campaign = CampaignFactory(items_per_assignment=4, redundancy=3)
    ItemFactory.create_batch(8, campaign=campaign)
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=1, spammer=0), seed=2)
    for interval, expected in (("two-way", "two-way bootstrap"), ("units", "bootstrap over items")):
        out = io.StringIO()
        call_command("report", campaign.slug, "--interval", interval, "--n-boot", "50", stdout=out)
        assert expected in out.getvalue(), interval
    with pytest.raises(CommandError):
        call_command("report", campaign.slug, "--interval", "raters", stdout=io.StringIO())
