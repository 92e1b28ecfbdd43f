"""score_emotions: a classifier's predictions scored against an imported gold data set."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db

HEADER = "id\tturn1\tturn2\tturn3\tlabel\n"
GOLD = ["happy", "sad", "angry", "others"]


def _tsv(labels):
    return HEADER + "".join(f"{i}\ta{i}\tb{i}\tc{i}\t{label}\n" for i, label in enumerate(labels))


def _score(tmp_path, *arguments):
    out = io.StringIO()
    call_command("score_emotions", *arguments, stdout=out)
    return out.getvalue()


def test_emocontext_micro_f1_counts_others_as_no_class(tmp_path):
    (tmp_path / "gold.txt").write_text(_tsv(GOLD), encoding="utf-8")
    call_command(
        "import_dataset",
        "emocontext",
        str(tmp_path / "gold.txt"),
        "--name",
        "ec",
        stdout=io.StringIO(),
    )
    (tmp_path / "pred.txt").write_text(_tsv(["happy", "sad", "others", "happy"]))
    out = _score(tmp_path, "ec", str(tmp_path / "pred.txt"))
    micro = next(line for line in out.splitlines() if line.strip().startswith("micro"))
    # By hand: TP 2 (happy, sad), FP 1 (happy for others), FN 1 (angry missed): P = R = F1 = 2/3.
    assert micro.split() == ["micro", "0.667", "0.667", "0.667", "3"]
    angry = next(line for line in out.splitlines() if line.strip().startswith("angry"))
    assert angry.split() == ["angry", "0.000", "0.000", "0.000", "1"]


def test_emotionlines_weighted_and_unweighted_accuracy(tmp_path):
    def dialogue(labels):
        return [
            {"speaker": "A", "utterance": f"line {i}", "emotion": label}
            for i, label in enumerate(labels)
        ]

    gold = [dialogue(["neutral", "neutral", "joy", "anger"]), dialogue(["sadness", "surprise"])]
    pred = [dialogue(["neutral", "joy", "joy", "neutral"]), dialogue(["sadness", "neutral"])]
    (tmp_path / "friends_test.json").write_text(json.dumps(gold))
    call_command(
        "import_dataset",
        "emotionlines",
        str(tmp_path / "friends_test.json"),
        "--name",
        "el",
        stdout=io.StringIO(),
    )
    (tmp_path / "pred_test.json").write_text(json.dumps(pred))
    out = _score(tmp_path, "el", str(tmp_path / "pred_test.json"), "--task", "emotionlines")
    # Scored: 5 lines of neutral, joy, sadness, anger (surprise is not an EmotionX label).
    # WA = 3/5 correct; UWA = mean(1/2, 1, 1, 0) = 0.625.
    assert "over 5 utterances" in out and "WA 0.600  UWA 0.625" in out


@pytest.mark.parametrize(
    ("predicted", "message"),
    [
        (["happy", "sad", "angry"], "no prediction for dialogue '3'"),
        (["happy", "sad", "angry", "others", "sad"], "name dialogue '4', not in the gold"),
    ],
)
def test_predictions_that_do_not_match_the_gold_set_are_refused(tmp_path, predicted, message):
    (tmp_path / "gold.txt").write_text(_tsv(GOLD), encoding="utf-8")
    call_command(
        "import_dataset",
        "emocontext",
        str(tmp_path / "gold.txt"),
        "--name",
        "ec",
        stdout=io.StringIO(),
    )
    (tmp_path / "pred.txt").write_text(_tsv(predicted))
    with pytest.raises(CommandError, match=message):
        _score(tmp_path, "ec", str(tmp_path / "pred.txt"))


def test_an_unknown_dataset_is_refused(tmp_path):
    with pytest.raises(CommandError, match="No data set 'nope'"):
        _score(tmp_path, "nope", str(tmp_path / "x.txt"))
