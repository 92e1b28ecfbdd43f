"""``export --format hf``: a study as a Hugging Face dataset folder that ``datasets`` loads as
it is, with a dataset card whose numbers are the database's and the report's."""

from datetime import UTC, datetime

import datasets
import huggingface_hub.constants
import pyarrow.parquet as pq
import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.exports import EXPORT_COLUMNS
from annotation.models import Consent, Dialogue, Judgment, Participation, Situation, Utterance
from annotation.selectors import campaign_report
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    ItemFactory,
    JudgmentFactory,
    WorkerFactory,
)

RAW_IDS = [f"A3MTURKRAWID{n:03d}" for n in range(4)]
QUESTIONS = ("empathy", "relevance", "fluency")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """Keep ``datasets`` off the network and its caches inside the test's folder."""
    home = tmp_path / "hf-home"
    for name, value in {
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(home),
        "HF_DATASETS_CACHE": str(home / "datasets"),
    }.items():
        monkeypatch.setenv(name, value)
    # ``datasets`` and the hub read these once, when first imported.
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", home / "datasets")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return home


def _load(folder, offline, config=None):
    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(offline))


def _likert_study():
    """Four rated items by four MTurk workers (one soft-blocked), a gold check, consent v2."""
    campaign = CampaignFactory(
        name="Empathy | relevance <b>study</b>",
        consent_text="I agree.",
        consent_version="2",
        redundancy=3,
    )
    items = ItemFactory.create_batch(4, campaign=campaign)
    gold = ItemFactory(campaign=campaign, gold={"empathy": [5]})
    workers = [WorkerFactory(provider="mturk", external_id=raw) for raw in RAW_IDS]
    given = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
    for n, worker in enumerate(workers):
        assignment = AssignmentFactory(campaign=campaign, worker=worker)
        Consent.objects.create(campaign=campaign, worker=worker, version="2", given_at=given)
        JudgmentFactory(assignment=assignment, item=gold, question="empathy", value=5)
        for i, item in enumerate(items[: 3 if n == 3 else 4]):
            for q, question in enumerate(QUESTIONS):
                value = 1 + (i + q + (n == 2)) % 5
                JudgmentFactory(assignment=assignment, item=item, question=question, value=value)
    Participation.objects.create(campaign=campaign, worker=workers[3], soft_blocked=True)
    return campaign


def _ed_study():
    """An EmpatheticDialogues collection: two chats between workers, each on a situation."""
    campaign = CampaignFactory(protocol="empathetic_chat", parameters={}, language="en")
    workers = [WorkerFactory(provider="prolific", external_id=raw) for raw in RAW_IDS]
    for d in range(2):
        speaker, listener = workers[2 * d], workers[2 * d + 1]
        situation = Situation.objects.create(
            campaign=campaign, worker=speaker, emotion="proud", text=f"I won a race {d}."
        )
        dialogue = Dialogue.objects.create(
            campaign=campaign, key=f"ed-{d}", situation=situation, emotion="proud"
        )
        for index in range(4):
            Utterance.objects.create(
                dialogue=dialogue,
                index=index,
                speaker="speaker" if index % 2 == 0 else "listener",
                worker=speaker if index % 2 == 0 else listener,
                text=f"turn {index} of chat {d}",
            )
    return campaign


def _export(campaign, out, **options):
    call_command("export", campaign.slug, format="hf", out=out, **options)


def _card(folder) -> tuple[dict, str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_a_likert_study_loads_with_datasets_row_for_row(db, tmp_path, offline):
    campaign = _likert_study()
    out = tmp_path / "hf"
    _export(campaign, out, license="cc-by-4.0")

    judgments = _load(out, offline)  # the default configuration
    stored = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
    crowd = stored.exclude(worker__participations__soft_blocked=True)
    assert judgments.num_rows == crowd.count() == 36  # gold checks, the blocked worker: out
    assert judgments.column_names == EXPORT_COLUMNS
    pseudonyms = set(crowd.values_list("worker__pseudonym", flat=True))
    assert set(judgments["rater"]) == pseudonyms
    items = _load(out, offline, "items")
    assert sorted(items["item"]) == sorted(
        campaign.items.filter(gold__isnull=True).values_list("key", flat=True)
    )
    assert not (out / "dialogues").exists()  # no chats in a Likert study


def test_no_raw_worker_id_is_anywhere_in_the_folder(db, tmp_path):
    campaign = _likert_study()
    out = tmp_path / "hf"
    _export(campaign, out, license="cc-by-4.0", include_flagged=True)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.relative_to(out).as_posix() for p in files} == {
        "README.md",
        "judgments/train-00000-of-00001.parquet",
        "items/train-00000-of-00001.parquet",
    }
    for path in files:
        data = path.read_bytes()
        assert not any(raw.encode() in data for raw in RAW_IDS), path
    # Parquet pages are compressed: read every value back too.
    table = pq.read_table(out / "judgments")
    values = " ".join(str(v) for column in table.columns for v in column.to_pylist())
    assert not any(raw in values for raw in RAW_IDS)
    assert len(set(table.column("rater").to_pylist())) == 4  # the blocked worker, asked for


def test_the_card_names_the_licence_configs_counts_consent_and_dates(db, tmp_path, offline):
    campaign = _likert_study()
    out = tmp_path / "hf"
    _export(campaign, out, license="CC-BY-4.0")  # the Hub's ids are lowercase
    front, body = _card(out)
    assert front["license"] == "cc-by-4.0"
    assert front["language"] == ["en"] and front["pretty_name"] == campaign.name
    assert front["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in front["configs"]] == ["judgments", "items"]
    assert front["configs"][0]["default"] is True
    assert front["configs"][1]["data_files"] == [
        {"split": "train", "path": "items/train-*.parquet"}
    ]
    features = {i["config_name"]: i["features"] for i in front["dataset_info"]}
    assert [f["name"] for f in features["judgments"]] == EXPORT_COLUMNS
    assert {"name": "time_spent_ms", "dtype": "int64"} in features["judgments"]
    assert "| `judgments` | 36 |" in body and "| `items` | 4 |" in body
    assert "- 36 answers (judgments) by 3 workers on 4 items; workers per item: 3 " in body
    assert "version `2` now (version 2: 4 workers)" in body
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert f"Collected from {today} to {today} (UTC)." in body
    assert "# Empathy \\| relevance &lt;b&gt;study&lt;/b&gt;" in body  # no HTML, no table break
    assert "| `empathy` | Did the responses show understanding" in body
    assert "`cc-by-4.0`" in body and "@software{evalsite," in body


def test_the_cards_agreement_is_the_reports(db, tmp_path):
    campaign = _likert_study()
    out = tmp_path / "hf"
    _export(campaign, out, license="cc-by-4.0")
    _, body = _card(out)
    section = body.split("## Inter-rater agreement", 1)[1].split("\n## ", 1)[0]
    shown = {
        cells[0]: float(cells[3])
        for line in section.splitlines()
        if line.startswith("| ") and (cells := [c.strip() for c in line.strip("|").split("|")])
        if cells[0] not in ("aspect", "---")
    }
    report = campaign_report(campaign).tables["agreement"]
    assert shown == {row.aspect: round(row.alpha, 3) for row in report.itertuples()}
    assert len(shown) == 3


def test_an_ed_collection_exports_its_dialogues_by_pseudonym(db, tmp_path, offline):
    campaign = _ed_study()
    out = tmp_path / "hf"
    _export(campaign, out, license="cc-by-nc-4.0")
    front, body = _card(out)
    assert [c["config_name"] for c in front["configs"]] == ["dialogues"]
    assert front["task_categories"] == ["text-generation"]
    utterances = _load(out, offline)
    assert utterances.num_rows == Utterance.objects.filter(dialogue__campaign=campaign).count()
    assert set(utterances["worker"]) == set(
        Utterance.objects.filter(dialogue__campaign=campaign).values_list(
            "worker__pseudonym", flat=True
        )
    )
    assert set(utterances["situation"]) == {"I won a race 0.", "I won a race 1."}
    assert "- 2 dialogues, 8 utterances, 4 workers among their speakers." in body
    assert "The protocol's report has no inter-rater agreement" in body
    assert "no consent step" in body
    assert not any(raw.encode() in p.read_bytes() for p in out.rglob("*.*") for raw in RAW_IDS)


def test_a_licence_is_required_and_never_guessed(db, tmp_path):
    campaign = _likert_study()
    out = tmp_path / "hf"
    with pytest.raises(CommandError, match="--format hf needs --license"):
        _export(campaign, out)
    with pytest.raises(CommandError, match=r"Unknown licence 'cc-by-5\.0'.*cc-by-4\.0"):
        _export(campaign, out, license="cc-by-5.0")
    with pytest.raises(CommandError, match="--license is for --format hf"):
        call_command("export", campaign.slug, format="csv", license="cc-by-4.0")
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing written


def test_a_folder_with_files_is_refused_and_left_as_it_was(db, tmp_path):
    campaign = _likert_study()
    out = tmp_path / "hf"
    out.mkdir()
    (out / "old.parquet").write_bytes(b"old")
    with pytest.raises(CommandError, match="not an empty folder"):
        _export(campaign, out, license="cc-by-4.0")
    assert [p.name for p in out.iterdir()] == ["old.parquet"]
    assert [p.name for p in tmp_path.iterdir()] == ["hf"]  # no half-built folder beside it


def test_a_campaign_with_nothing_to_export_is_refused(db, tmp_path):
    campaign = CampaignFactory()
    with pytest.raises(CommandError, match="has no judgments, dialogues or items yet"):
        _export(campaign, tmp_path / "hf", license="cc-by-4.0")
    assert list(tmp_path.iterdir()) == []
