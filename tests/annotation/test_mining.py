"""Candidate mining: finds more emotional dialogues per judgment than random sampling."""

import re

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.mining import candidates_mine, savings
from annotation.models import Item
from tests.corpora import samples
from tests.factories import CampaignFactory

WORDS = ["joy", "tears", "rage", "bus", "milk"]


def bag_of_words(texts):
    """A tiny exact embedder for unit tests: counts of five words."""
    return np.array([[t.split().count(w) + 0.01 for w in WORDS] for t in texts], dtype=float)


def test_candidates_are_ranked_by_similarity_to_each_classes_seeds_and_pruned():
    seeds = {"happy": ["joy joy", "joy x"], "sad": ["tears tears", "tears y"]}
    pool = [
        "joy joy joy tears",
        "bus and milk",
        "tears tears tears joy",
        "joy",  # one word: too short
        "joy joy",  # a copy of a seed: already labeled
        "joy joy joy tears",  # a copy of a better candidate
    ]
    found = candidates_mine(seeds, pool, threshold=0.9, embed=bag_of_words, k=1)
    assert sorted(found["index"]) == [0, 2]
    assert dict(zip(found["index"], found["class"], strict=True)) == {0: "happy", 2: "sad"}
    assert (found["similarity"] >= 0.9).all()


def test_mining_refuses_missing_seeds_or_a_bad_threshold():
    with pytest.raises(ValueError, match="seed"):
        candidates_mine({"happy": []}, ["x"], threshold=0.5, embed=bag_of_words)
    with pytest.raises(ValueError, match="threshold"):
        candidates_mine({"happy": ["joy"]}, ["x"], threshold=2, embed=bag_of_words)


def test_savings_count_random_items_until_as_many_emotional_ones_are_found():
    pool = ["others"] * 9 + ["happy"]
    result = savings(["happy", "others"], pool * 3, emotions=["happy"], judges=7, seed=0)
    assert (result.found, result.judgments_mined) == (1, 14)
    assert result.judgments_random == result.items_random * 7
    assert result.items_random >= 1
    assert result.per_judgment_mined == pytest.approx(1 / 14)


@pytest.mark.django_db
def test_mining_a_synthetic_pool_with_minilm_beats_random_sampling_and_prints_both(capsys):
    call_command("mine_candidates", "--synthetic", "--pool-size", "240", "--seeds-per-class", "24")
    out = capsys.readouterr().out
    mined = float(re.search(r"mined: .* ([0-9.]+) emotional items per judgment", out)[1])
    random_rate = float(re.search(r"random: .* ([0-9.]+) emotional items per judgment", out)[1])
    assert mined > random_rate > 0
    assert "saved:" in out


@pytest.mark.django_db
def test_candidates_from_files_go_to_an_emocontext_campaign(tmp_path, capsys):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(samples.EMOCONTEXT_TSV, encoding="utf-8")
    pool = tmp_path / "pool.txt"
    pool.write_text(
        "id\tturn1\tturn2\tturn3\n"
        "p1\tguess what\ttell me\tI got the job and I am so happy right now\n"
        "p2\thi\thello\twhat time is it\n",
        encoding="utf-8",
    )
    campaign = CampaignFactory(protocol="emocontext", parameters={})
    call_command(
        "mine_candidates",
        "--seeds", str(seeds),
        "--pool", str(pool),
        "--threshold", "0.5",
        "--campaign", campaign.slug,
        "--out", str(tmp_path / "c.tsv"),
    )  # fmt: skip
    keys = set(Item.objects.filter(campaign=campaign).values_list("key", flat=True))
    assert "p1" in keys and "p2" not in keys
    assert "p1\tguess what" in (tmp_path / "c.tsv").read_text()


def test_mine_candidates_needs_inputs():
    with pytest.raises(CommandError, match="--synthetic"):
        call_command("mine_candidates")


@pytest.mark.django_db
def test_candidates_go_only_to_a_campaign_whose_items_come_from_dialogues(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(samples.EMOCONTEXT_TSV, encoding="utf-8")
    pool = tmp_path / "pool.txt"
    pool.write_text(
        "id\tturn1\tturn2\tturn3\np1\tguess what\ttell me\tI got the job and I am so happy\n",
        encoding="utf-8",
    )
    campaign = CampaignFactory(protocol="likert", parameters={})
    with pytest.raises(CommandError, match="not built from dialogues"):
        call_command(
            "mine_candidates",
            "--seeds", str(seeds),
            "--pool", str(pool),
            "--threshold", "0.5",
            "--campaign", campaign.slug,
            "--out", str(tmp_path / "c.tsv"),
        )  # fmt: skip
    assert not Item.objects.filter(campaign=campaign).exists()
