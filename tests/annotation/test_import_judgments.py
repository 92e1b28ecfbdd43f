"""import_judgments: MTurk batch results, Prolific exports and long files, stored as if
collected here (one worker per real worker, counters and tallies kept, idempotent)."""

import csv
import io
import json
import random
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.judgment_reads import campaign_judgments_frame
from annotation.models import Assignment, CampaignTally, Item, Judgment, Worker
from annotation.selectors import campaign_progress
from annotation.services import campaign_create, campaign_set_status, items_add, worker_visit
from annotation.services.imports import judgments_import
from corpora.judgments import map_from, read_judgments
from evalsite.errors import InvalidParameters
from evalstats.aggregation import dawid_skene, majority_vote
from providers import Arrival
from tests.annotation.test_tallies import scanned, tallied

DATA = Path(__file__).parent / "data"
MTURK = DATA / "mturk_batch_likert.csv"
MTURK_MAP = DATA / "mturk_batch_likert.map.json"


def _import(*args):
    out = io.StringIO()
    call_command("import_judgments", *map(str, args), stdout=out)
    return out.getvalue()


def _mturk_rows():
    with MTURK.open(newline="") as f:
        return list(csv.DictReader(f))


def _counters_exact(campaign):
    """Every item's counters equal its rows, and the tallies equal a scan of the judgments."""
    for item in Item.objects.filter(campaign=campaign):
        workers = Judgment.objects.filter(item=item).values("worker").distinct().count()
        assert (item.judged, item.claims) == (workers, workers), item.key
    now = timezone.now()
    assert tallied([campaign.pk], now) == scanned([campaign.pk], now)


@pytest.fixture
def likert(db):
    return campaign_create(slug="ed-likert", name="ED Likert", protocol="likert", redundancy=3)


def test_an_mturk_batch_csv_imports_each_real_worker_once_and_reports(likert, tmp_path):
    text = _import(
        likert.slug, MTURK, "--format", "mturk-batch", "--mapping", MTURK_MAP, "--create-items"
    )
    rows = [r for r in _mturk_rows() if r["AssignmentStatus"] != "Rejected"]
    assert "Imported 36 judgment(s) of 12 (item, worker) pair(s)" in text
    assert "4 new item(s)" in text and "Rows skipped by status: 1 Rejected." in text
    real = {r["WorkerId"] for r in rows}
    assert set(Worker.objects.values_list("provider", "external_id")) == {
        ("mturk", w) for w in real
    }
    for row in rows:
        assignment = Assignment.objects.get(provider_assignment_id=row["AssignmentId"])
        assert assignment.worker.external_id == row["WorkerId"]
        assert assignment.provider_hit_id == row["HITId"]
        assert assignment.status == row["AssignmentStatus"].lower()
        assert (assignment.items_target, assignment.items_done) == (1, 1)
        stored = {
            j.question: j.value
            for j in Judgment.objects.filter(assignment=assignment, item__key=row["Input.key"])
        }
        assert stored == {
            "empathy": int(row["Answer.empathy_rating"]),
            "relevance": int(row["Answer.relevance_rating"]),
            "fluency": int(row["Answer.fluency_rating"]),
        }
        spent = set(assignment.judgments.values_list("time_spent_ms", flat=True))
        assert spent == {int(row["WorkTimeInSeconds"]) * 1000}
    item = Item.objects.get(campaign=likert, key="ex2-blender")
    assert item.payload["context"] == [
        "My dog has been sick all week.",
        "Oh no, is he feeling any better?",
    ]
    _counters_exact(likert)
    progress = campaign_progress(likert)
    assert (progress.done, progress.needed, progress.workers) == (12, 12, len(real))
    out = io.StringIO()
    call_command("report", likert.slug, "--out", str(tmp_path), "--n-boot", "50", stdout=out)
    assert f"12 of 12 judgments (100%), {len(real)} workers" in out.getvalue()
    assert "blender" in out.getvalue()


def test_a_second_import_of_the_same_file_adds_nothing(likert):
    args = (likert.slug, MTURK, "--format", "mturk-batch", "--mapping", MTURK_MAP)
    _import(*args, "--create-items")
    before = (
        Judgment.objects.count(),
        Assignment.objects.count(),
        Worker.objects.count(),
        list(CampaignTally.objects.values_list("pairs", "judgments")),
        list(Item.objects.values_list("judged", "claims")),
    )
    text = _import(*args, "--create-items")
    assert "Imported 0 judgment(s) of 0 (item, worker) pair(s)" in text
    assert "0 new assignment(s), 0 new item(s); 12 pair(s) already stored" in text
    after = (
        Judgment.objects.count(),
        Assignment.objects.count(),
        Worker.objects.count(),
        list(CampaignTally.objects.values_list("pairs", "judgments")),
        list(Item.objects.values_list("judged", "claims")),
    )
    assert after == before
    _counters_exact(likert)


def _edited(tmp_path, line, column, value):
    """The fixture with one cell changed on a file line (2 is the first row)."""
    rows = _mturk_rows()
    rows[line - 2][column] = value
    path = tmp_path / "batch.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("Answer.empathy_rating", "7", r"batch.csv, line 5: item 'ex1-retrieval'.*empathy"),
        ("Answer.fluency_rating", "", r"batch.csv, line 5: .*fluency: Please choose a rating"),
        ("WorkerId", "", r"batch.csv, line 5: no worker id"),
        ("WorkerId", "bad id!", r"batch.csv, line 5: The worker id is not valid"),
        ("WorkTimeInSeconds", "soon", r"batch.csv, line 5: 'WorkTimeInSeconds' must be a number"),
        ("Input.key", "", r"batch.csv, line 5: no item key"),
    ],
)
def test_one_bad_line_stores_nothing_and_is_named(likert, tmp_path, column, value, message):
    path = _edited(tmp_path, 5, column, value)
    with pytest.raises(CommandError, match=message):
        _import(
            likert.slug, path, "--format", "mturk-batch", "--mapping", MTURK_MAP, "--create-items"
        )
    assert not Judgment.objects.exists()
    assert not Item.objects.exists()
    assert not Worker.objects.exists()
    assert not Assignment.objects.exists()


def test_items_must_exist_unless_created_and_gold_checks_take_no_imports(likert, tmp_path):
    args = (likert.slug, MTURK, "--format", "mturk-batch", "--mapping", MTURK_MAP)
    with pytest.raises(CommandError, match=r"mturk_batch_likert.csv, line 2: no item 'ex1-"):
        _import(*args)
    payload = {"context": ["Hi"], "response": "Hello", "model": "m"}
    items_add(campaign=likert, items=[("ex1-blender", payload, {"empathy": [4, 5]})])
    with pytest.raises(CommandError, match=r"line 2: 'ex1-blender' is a gold check"):
        _import(*args)
    assert not Judgment.objects.exists()
    assert Item.objects.count() == 1


def test_a_changed_answer_on_reimport_is_refused_naming_the_line(likert, tmp_path):
    args = ("--format", "mturk-batch", "--mapping", MTURK_MAP, "--create-items")
    _import(likert.slug, MTURK, *args)
    path = _edited(tmp_path, 3, "Answer.empathy_rating", "1")
    with pytest.raises(CommandError, match=r"batch.csv, line 3: .* stored already, and differ"):
        _import(likert.slug, path, *args)
    assert Judgment.objects.count() == 36


def test_rejected_work_comes_in_only_when_asked_and_dry_run_stores_nothing(likert):
    args = (likert.slug, MTURK, "--format", "mturk-batch", "--mapping", MTURK_MAP, "--create-items")
    assert "nothing was stored" in _import(*args, "--dry-run")
    assert not Judgment.objects.exists() and not Item.objects.exists()
    text = _import(*args, "--include-rejected")
    assert "Imported 39 judgment(s) of 13 (item, worker) pair(s)" in text
    assert Assignment.objects.filter(status="rejected").count() == 1
    _counters_exact(likert)  # one item has 4 workers now, over the redundancy of 3
    assert Item.objects.get(key="ex1-retrieval").claims == 4


PID, START = "5f3e2d1c0b9a8877665544", "2025-03-04T10:00:01Z"


def test_a_prolific_export_takes_its_participant_ids_and_answer_columns(likert, tmp_path):
    items_add(
        campaign=likert,
        items=[
            (f"i{n}", {"context": ["Hi"], "response": f"Hello {n}", "model": "m"}) for n in (1, 2)
        ],
    )
    header = "Submission id,Participant id,Status,Started at,Completed at,Time taken"
    rows = [
        [
            "6571a1b2c3d4e5f60718293a",
            PID + "33",
            "APPROVED",
            START,
            "10:01:01Z",
            "60",
            "i1",
            4,
            5,
            5,
        ],
        ["6571a1b2c3d4e5f60718293b", PID + "34", "AWAITING REVIEW", START, "", "30", "i1", 2, 3, 4],
        ["6571a1b2c3d4e5f60718293c", PID + "35", "RETURNED", START, "", "", "i2", "", "", ""],
        [
            "6571a1b2c3d4e5f60718293d",
            PID + "33",
            "APPROVED",
            START,
            "10:02:41Z",
            "40",
            "i2",
            3,
            3,
            3,
        ],
    ]
    path = tmp_path / "prolific_export.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*header.split(","), "item", "empathy", "relevance", "fluency"])
        writer.writerows(rows)
    text = _import(likert.slug, path, "--format", "prolific")
    assert "Imported 9 judgment(s) of 3 (item, worker) pair(s)" in text
    assert "Rows skipped by status: 1 RETURNED." in text
    assert set(Worker.objects.values_list("provider", "external_id")) == {
        ("prolific", PID + "33"),
        ("prolific", PID + "34"),
    }
    assert set(Assignment.objects.values_list("status", flat=True)) == {"approved", "submitted"}
    _counters_exact(likert)


YES_NO = ("yes", "no")


def test_numbered_columns_and_one_hot_answers_read_several_items_a_row(db, tmp_path):
    """A HIT of two items whose radio groups MTurk's crowd-html exports as Answer.q.label."""
    ssa = campaign_create(slug="ssa", name="SSA", protocol="ssa", redundancy=2)
    header = [
        "HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "WorkTimeInSeconds",
        "Input.key1", "Input.key2",
        *(f"Answer.{q}{n}.{a}" for n in (1, 2) for q in ("sensible", "specific") for a in YES_NO),
    ]  # fmt: skip
    rows = [
        ["H1", "A1", "WORKER1", "Approved", "20", "a", "b", "true", "false", "false", "true",
         "false", "true", "false", "false"],
        ["H1", "A2", "WORKER2", "Submitted", "40", "a", "b", "true", "false", "true", "false",
         "true", "false", "false", "true"],
    ]  # fmt: skip
    path = tmp_path / "hits.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    args = [
        "ssa", path, "--format", "mturk-batch", "--item", "Input.key{n}",
        "--map", "Answer.sensible{n}=sensible", "--map", "Answer.specific{n}=specific",
        "--payload", "context[]=Input.key{n}", "--payload", "response=Input.key{n}",
        "--payload", "model=Input.key{n}", "--create-items",
    ]  # fmt: skip
    assert "Imported 8 judgment(s) of 4 (item, worker) pair(s)" in _import(*args)
    values = {
        (j.worker.external_id, j.item.key, j.question): (j.value, j.time_spent_ms)
        for j in Judgment.objects.select_related("worker", "item")
    }
    assert values[("WORKER1", "b", "specific")] == ("no", 10_000)  # not sensible: not specific
    assert values[("WORKER2", "a", "specific")] == ("yes", 20_000)
    assert Assignment.objects.get(provider_assignment_id="A2").items_done == 2
    _counters_exact(ssa)


def _rte_like(path, *, items=40, seed=3):
    """A long file of binary labels: 4 careful raters, 2 who answer the opposite, 2 at random,
    each rating every item (the real-worker structure Dawid–Skene needs)."""
    rng = random.Random(seed)
    truth = {f"pair-{n}": rng.choice("01") for n in range(items)}
    raters = {f"A{n}CAREFUL": 0.9 for n in range(4)} | {f"A{n}CONTRARY": 0.1 for n in range(2)}
    raters |= {f"A{n}RANDOM": 0.5 for n in range(2)}
    lines = []
    for worker, accuracy in raters.items():
        for item, label in truth.items():
            value = label if rng.random() < accuracy else "10"[int(label)]
            lines.append(
                {"item": item, "worker": worker, "question": "entails", "value": int(value)}
            )
    rng.shuffle(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return truth, lines


def test_dawid_skene_on_an_imported_long_file_keeps_each_real_raters_labels(db, tmp_path):
    ssa = campaign_create(slug="rte", name="RTE", protocol="ssa", redundancy=8)
    truth, lines = _rte_like(tmp_path / "rte.jsonl")
    items_add(
        campaign=ssa,
        items=[
            (k, {"context": [f"Premise {k}"], "response": "Hypothesis", "model": "rte"})
            for k in truth
        ],
    )
    args = [
        "rte", tmp_path / "rte.jsonl", "--format", "long", "--provider", "mturk",
        "--map", "entails=sensible", "--value", "sensible:1=yes", "--value", "sensible:0=no",
        "--set", "specific=no",
    ]  # fmt: skip
    text = _import(*args)
    assert f"Imported {2 * len(lines)} judgment(s) of {len(lines)} (item, worker) pair(s)" in text
    frame = campaign_judgments_frame(ssa)
    labels = frame[frame["question"] == "sensible"]
    pseudonyms = dict(Worker.objects.values_list("external_id", "pseudonym"))
    for worker in {line["worker"] for line in lines}:
        mine = labels[labels["rater"] == pseudonyms[worker]]
        expected = {
            (x["item"], "yes" if x["value"] else "no") for x in lines if x["worker"] == worker
        }
        assert set(zip(mine["item"], mine["value"], strict=True)) == expected
    assert labels["rater"].nunique() == 8  # one rater per real worker, never split or merged
    ds_labels, accuracy = dawid_skene(labels)
    gold = {k: "yes" if v == "1" else "no" for k, v in truth.items()}
    ds_right = sum(ds_labels[k] == v for k, v in gold.items()) / len(gold)
    mv = majority_vote(labels)["label"]
    mv_right = sum(mv.get(k) == v for k, v in gold.items()) / len(gold)
    assert ds_right >= 0.95 and ds_right > mv_right
    contrary = [pseudonyms[w] for w in pseudonyms if "CONTRARY" in w]
    assert accuracy[contrary].max() < 0.3 < accuracy.drop(contrary).min()
    assert "Imported 0 judgment(s)" in _import(*args)  # the same file again: nothing
    _counters_exact(ssa)
    # Allocation sees the imported workers: every item has its 8 workers, none is open.
    campaign_set_status(campaign=ssa, status="live")
    visit = worker_visit(campaign=ssa, arrival=Arrival(provider="local", worker_id="newcomer"))
    assert visit.kind != "item"


def test_a_long_csv_file_with_a_repeated_answer_names_both_lines(db, tmp_path):
    ssa = campaign_create(slug="ssa2", name="SSA", protocol="ssa")
    items_add(campaign=ssa, items=[("a", {"context": ["Hi"], "response": "Yo", "model": "m"})])
    path = tmp_path / "long.csv"
    path.write_text(
        "item,worker,question,value,seconds\n"
        "a,w1,sensible,yes,3.5\na,w1,specific,no,3.5\na,w1,sensible,no,2\n"
    )
    with pytest.raises(CommandError, match=r"long.csv, line 4: a second answer of 'w1'"):
        _import("ssa2", path, "--format", "long")
    path.write_text(
        "item,worker,question,value,seconds\na,w1,sensible,yes,3.5\na,w1,specific,no,3.5\n"
    )
    _import("ssa2", path, "--format", "long")
    assert set(Judgment.objects.values_list("time_spent_ms", flat=True)) == {3500}
    assert Worker.objects.get().provider == "local"


def test_the_command_has_help(capsys):
    with pytest.raises(SystemExit):
        call_command("import_judgments", "--help")
    assert "--format" in capsys.readouterr().out


def test_the_fixture_is_in_mturks_column_layout():
    header = next(csv.reader(MTURK.open()))
    assert header[:3] == ["HITId", "HITTypeId", "Title"]
    for column in ("AssignmentId", "WorkerId", "AssignmentStatus", "WorkTimeInSeconds"):
        assert column in header
    assert header[-2:] == ["Approve", "Reject"]


def test_an_import_as_the_judges_provider_is_refused(db, tmp_path):
    ssa = campaign_create(slug="ssa3", name="SSA", protocol="ssa")
    items_add(campaign=ssa, items=[("a", {"context": ["Hi"], "response": "Yo", "model": "m"})])
    path = tmp_path / "long.csv"
    path.write_text("item,worker,question,value\na,w1,sensible,yes\na,w1,specific,no\n")
    with pytest.raises(CommandError, match="invalid choice: 'model'"):
        _import("ssa3", path, "--format", "long", "--provider", "model")
    parsed = read_judgments(
        path, fmt="long", mapping=map_from({}), questions=["sensible"], provider="model"
    )
    with pytest.raises(InvalidParameters, match="provider 'model' is the LLM judges'"):
        judgments_import(campaign=ssa, works=parsed.works)
    assert not Worker.objects.exists() and not Judgment.objects.exists()
