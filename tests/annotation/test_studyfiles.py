"""Studies as files: ``campaign_create study.yaml`` and ``campaign_export_config`` round trip."""

import io
import json
from decimal import Decimal

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from annotation.campaign_settings import SETTINGS
from annotation.models import Campaign, Item, TrainingItem
from annotation.study_pages import STUDY_FIELDS
from modelhub.services import endpoint_register


def ssa_payload(reply: str, n: int) -> dict:
    return {"context": [f"Any plans for the weekend {n}?"], "response": reply, "model": "m"}


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


SETTINGS_GIVEN = {
    "redundancy": 4,
    "items_per_assignment": 7,
    "lease_seconds": 900,
    "reward": 0.75,  # a YAML float: read as the amount it spells
    "budget": "120.50",
    "gold_rate": 0.2,
    "gold_min_accuracy": 0.6,
    "gold_min_answered": 2,
    "min_seconds_per_item": 1.5,
    "max_items_per_worker": 40,
    "topup_max": 0,
    "training_pass_mark": 0.66,
    "training_attempts": 3,
    "open_links": True,
    "open_arrivals_per_address": 5,
    "rate_per_ip": 100,
    "rate_per_worker": None,
    "chat_frames_per_second": 2,
}
STUDY = {
    "description": "A study of **replies**.\n\nIt takes 10 minutes.",
    "instructions": "Say whether the reply makes sense:\n\n- yes\n- no\n",
    "consent_text": "I agree to take part.  \nContact: someone@example.org",
    "consent_version": "2026-a",
    "training_qualification": "ssa-trained",
    "language": "de",
}


@pytest.fixture
def study(db, tmp_path):
    """A complete SSA study file with every kind of item file beside it."""
    User.objects.create_user("alice")
    endpoint_register(name="generic", backend="generic_bot")
    folder = tmp_path / "study"
    (folder / "data").mkdir(parents=True)
    _jsonl(
        folder / "data" / "contexts.jsonl",
        [
            {"id": "c1", "context": ["Hi!", "How are you?"]},
            {"id": "c2", "context": "I love tennis."},
        ],
    )
    _jsonl(
        folder / "data" / "responses.jsonl",
        [
            {"id": "c1", "model": "human", "response": "Fine, and you?"},
            {"id": "c2", "model": "human", "response": "Who is your favourite player?"},
        ],
    )
    _jsonl(
        folder / "items.jsonl",
        [{"key": f"extra-{n}", "payload": ssa_payload(f"Reading, {n}.", n)} for n in range(3)],
    )
    _jsonl(
        folder / "gold.jsonl",
        [
            {
                "key": "g1",
                "payload": ssa_payload("Purple Tuesday.", 9),
                "gold": {"sensible": ["no"]},
            },
            {
                "key": "att",
                "payload": ssa_payload("Select 'no' for this item.", 10),
                "gold": {"sensible": ["no"]},
                "check": "attention",
            },
        ],
    )
    _jsonl(
        folder / "training.jsonl",
        [
            {
                "key": "t1",
                "payload": ssa_payload("I don't know.", 11),
                "answers": {"sensible": ["yes"], "specific": ["no"]},
                "explanation": "It could answer anything: **not specific**.",
            }
        ],
    )
    data = {
        "slug": "weekend-ssa",
        "name": "Weekend SSA",
        "protocol": "ssa",
        "owner": "alice",
        "settings": SETTINGS_GIVEN,
        "parameters": {"n_boot": 200},
        "study": STUDY,
        "items": {
            "contexts": "data/contexts.jsonl",
            "models": ["generic"],
            "responses": "data/responses.jsonl",
            "file": "items.jsonl",
            "gold": "gold.jsonl",
            "training": "training.jsonl",
        },
    }
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _create(path, *args):
    out = io.StringIO()
    call_command("campaign_create", str(path), *args, stdout=out)
    return out.getvalue()


def _state(campaign: Campaign) -> dict:
    """Everything a study file sets, as stored."""
    return {
        "name": campaign.name,
        "protocol": campaign.protocol,
        "owner": campaign.owner.username if campaign.owner else None,
        "settings": {name: getattr(campaign, name) for name in SETTINGS},
        "parameters": campaign.parameters,
        "study": {name: getattr(campaign, name) for name in STUDY_FIELDS},
        "items": sorted(
            Item.objects.filter(campaign=campaign).values_list(
                "key", "payload", "gold", "attention"
            ),
            key=lambda row: row[0],
        ),
        "training": list(
            TrainingItem.objects.filter(campaign=campaign).values_list(
                "key", "position", "payload", "expected", "explanation"
            )
        ),
    }


def test_a_study_file_creates_the_campaign_with_every_setting_and_its_items(study):
    text = _create(study)
    assert "Created weekend-ssa (ssa, draft): 7 item(s), 2 gold, 1 training." in text
    campaign = Campaign.objects.get(slug="weekend-ssa")
    assert campaign.status == Campaign.Status.DRAFT
    assert campaign.owner.username == "alice"
    expected = SETTINGS_GIVEN | {"reward": Decimal("0.75"), "budget": Decimal("120.50")}
    assert {name: getattr(campaign, name) for name in SETTINGS} == expected
    assert campaign.parameters["n_boot"] == 200
    assert {name: getattr(campaign, name) for name in STUDY_FIELDS} == STUDY
    payloads = campaign.items.filter(gold__isnull=True).values_list("payload", flat=True)
    models = {p["model"] for p in payloads}
    assert models == {"generic", "human", "m"}  # the registered model, the file's, items.jsonl's
    assert campaign.items.get(key="att").attention
    assert campaign.training_size == 1


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_an_exported_study_file_re_creates_an_equal_campaign(study, tmp_path, fmt):
    _create(study)
    original = Campaign.objects.get(slug="weekend-ssa")
    out = io.StringIO()
    folder = tmp_path / "export"
    call_command(
        "campaign_export_config", "weekend-ssa", "--out", str(folder), "--format", fmt, stdout=out
    )
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            f"weekend-ssa.{fmt}",
            "weekend-ssa.items.jsonl",
            "weekend-ssa.gold.jsonl",
            "weekend-ssa.training.jsonl",
        ]
    )
    _create(folder / f"weekend-ssa.{fmt}", "--slug", "weekend-ssa-again")
    again = Campaign.objects.get(slug="weekend-ssa-again")
    assert _state(again) == _state(original)
    # The export of the copy is the export of the original, but for its slug.
    second = tmp_path / "second"
    call_command(
        "campaign_export_config", again.slug, "--out", str(second), "--format", fmt, stdout=out
    )
    for name in ("items", "gold", "training"):
        first_rows = (folder / f"weekend-ssa.{name}.jsonl").read_text()
        assert (second / f"weekend-ssa-again.{name}.jsonl").read_text() == first_rows


def test_exporting_a_campaign_made_by_the_services_round_trips(campaign, tmp_path):
    """A Likert campaign with defaults (no owner, no texts) round-trips too."""
    call_command(
        "campaign_export_config", campaign.slug, "--out", str(tmp_path), stdout=io.StringIO()
    )
    _create(tmp_path / f"{campaign.slug}.yaml", "--slug", "copy")
    copy = Campaign.objects.get(slug="copy")
    assert _state(copy) == _state(campaign)


def _broken(study, change):
    data = yaml.safe_load(study.read_text())
    change(data)
    study.write_text(yaml.safe_dump(data))
    return study


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(colour="blue"), "unknown key 'colour'"),
        (lambda d: d.pop("protocol"), "protocol: give it as non-empty text"),
        (lambda d: d.update(protocol="nope"), "protocol: unknown protocol 'nope'"),
        (lambda d: d["settings"].update(redundancy=0), r"settings\.redundancy: Workers per item"),
        (lambda d: d["settings"].update(speed=3), r"settings\.speed: Unknown setting"),
        (lambda d: d["parameters"].update(wrong=1), "parameters"),
        (lambda d: d["study"].update(language="xx"), r"study\.language: Unknown language"),
        (lambda d: d.update(owner="bob"), "owner: no user called 'bob'"),
        (
            lambda d: d["items"].update(gold="missing.jsonl"),
            r"items\.gold: no file 'missing.jsonl'",
        ),
        (lambda d: d["items"].update(models=["gpt-9"]), "no registered model called 'gpt-9'"),
        (lambda d: d["items"].update(colour=1), r"items: unknown key 'colour'"),
        (lambda d: d["items"].pop("contexts"), "contexts go with models"),
    ],
)
def test_a_bad_study_file_names_the_key_and_creates_nothing(study, change, message):
    with pytest.raises(CommandError, match=message):
        _create(_broken(study, change))
    assert not Campaign.objects.exists()


def test_a_bad_line_in_an_item_file_names_the_file_and_line_and_creates_nothing(study):
    gold = study.parent / "gold.jsonl"
    gold.write_text(gold.read_text() + '{"key": "g3", "payload": {}}\n')
    with pytest.raises(CommandError, match=r"gold.jsonl, line 3: needs 'key', 'payload', 'gold'"):
        _create(study)
    items = study.parent / "items.jsonl"
    items.write_text(items.read_text() + '{"key": "bad", "payload": {"context": []}}\n')
    gold.write_text("\n".join(gold.read_text().splitlines()[:2]) + "\n")
    with pytest.raises(CommandError, match=r"items.jsonl: Item 4 \(bad\)"):
        _create(study)
    assert not Campaign.objects.exists()
    assert not Item.objects.exists()


def test_a_taken_slug_is_refused_and_check_creates_nothing(study):
    out = _create(study, "--check")
    assert "a valid study file (ssa)" in out
    assert not Campaign.objects.exists()
    _create(study)
    with pytest.raises(CommandError, match="already exists"):
        _create(study)
    assert Campaign.objects.count() == 1


def test_json_study_files_and_syntax_errors_name_the_line(db, tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"slug": "j", "protocol": "likert",\n "settings": {"redundancy": 2}}')
    _create(path)
    assert Campaign.objects.get(slug="j").redundancy == 2
    path.write_text('{"slug": "k",\n "protocol": }')
    with pytest.raises(CommandError, match=r"s.json, line 2: not valid JSON"):
        _create(path)
    bad = tmp_path / "s.yaml"
    bad.write_text("slug: k\nprotocol: [likert\n")
    with pytest.raises(CommandError, match=r"s.yaml, line 3"):
        _create(bad)


def test_the_commands_have_help(capsys):
    for name in ("campaign_create", "campaign_export_config"):
        with pytest.raises(SystemExit):
            call_command(name, "--help")
        assert "study file" in capsys.readouterr().out
