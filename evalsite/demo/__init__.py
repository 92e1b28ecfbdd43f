"""The demo's studies: the same demo dialogues rated (Likert), compared (A/B) and judged for
sensibleness and specificity (SSA) over the demo models, each filled by a simulated crowd.

The simulated crowd needs a "truth" per item: what a careful worker would answer. These are
the demo's assumptions, stated here: the gold reply is good; GenericBot is fluent, sensible
about seven times in ten (Meena's 70%) and never specific; the retrieval bot is in between;
the tiny GPT-2 (trained for seconds) is poor.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from annotation.items import campaign_items_from_responses
from annotation.models import Campaign, Item
from annotation.protocols.emotionlines import EmotionLinesProtocol
from annotation.protocols.likert import LikertProtocol
from annotation.protocols.pairwise import PairwiseProtocol
from annotation.protocols.ssa import SSAProtocol
from annotation.selectors import campaign_progress
from annotation.services import campaign_create, campaign_set_status, items_add
from annotation.simulation import CrowdRun, SimulatedWorker, crowd_make, crowd_run
from corpora.records import Context, DialogueRecord
from corpora.sources import read_ed, read_emotionlines

CORPUS = Path(__file__).resolve().parent / "empathetic_demo.csv"
# Short dialogues written for this project, each line with the emotion a careful worker sees.
EMOTIONLINES_CORPUS = Path(__file__).resolve().parent / "emotionlines_demo.json"
# Slots of every item the simulated crowd leaves free: a campaign's redundancy is what the
# crowd fills plus these, so a person who opens a worker URL the demo prints is given items,
# not "No more items for you" (a live campaign's redundancy cannot be raised).
NEWCOMER_SLOTS = 1
# How good each demo model's replies are, 0–1, before the per-item spread.
QUALITY = {"gold": 0.85, "retrieval-minilm": 0.55, "generic-bot": 0.3, "tiny-gpt2": 0.1}


def _spread(key: str) -> float:
    """Return a stable number in [0, 1) per item key: items differ, runs agree."""
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % 1000 / 1000


def likert_truth(item: Item) -> dict[str, float]:
    """Return the true 1–5 ratings of a demo Likert item."""
    quality = QUALITY.get(item.payload["model"], 0.3) + 0.2 * (_spread(item.key) - 0.5)
    fluency = 4.6 if item.payload["model"] in ("gold", "generic-bot") else 2.5 + 2 * quality
    return {"empathy": 1 + 4 * quality, "relevance": 1.2 + 3.8 * quality, "fluency": fluency}


def pairwise_truth(item: Item) -> dict[str, Any]:
    """Return the models' qualities for a demo A/B item."""
    shift = 0.3 * (_spread(item.key) - 0.5)
    models = (item.payload["model_a"], item.payload["model_b"])
    return {
        "quality": {
            m: 3 * QUALITY.get(m, 0.3) + (shift if i else -shift) for i, m in enumerate(models)
        }
    }


def ssa_truth(item: Item) -> dict[str, bool]:
    """Return whether a demo SSA item's response is sensible and specific."""
    if item.is_gold:  # what a careful worker sees in a gold check: its accepted answers
        gold = item.gold or {}
        return {
            "sensible": "yes" in gold["sensible"],
            "specific": "yes" in gold.get("specific", []),
        }
    model, spread = item.payload["model"], _spread(item.key)
    if model == "generic-bot":
        return {"sensible": spread < 0.7, "specific": False}
    quality = QUALITY.get(model, 0.3)
    return {"sensible": spread < quality + 0.1, "specific": spread < quality}


def emotionlines_items() -> list[tuple[str, dict[str, Any]]]:
    """Return the demo EmotionLines items: one whole dialogue each."""
    protocol = EmotionLinesProtocol()
    return protocol.items_from_dialogues(
        protocol.default_parameters(), read_emotionlines(EMOTIONLINES_CORPUS, source="demo")
    )


def emotionlines_truth(item: Item) -> dict[str, list[str]]:
    """Return the emotion of each line of a demo EmotionLines dialogue."""
    truth = {r.key: [u.label for u in r.utterances] for r in read_emotionlines(EMOTIONLINES_CORPUS)}
    return {"labels": truth.get(item.key, [])}


# Hidden gold checks for the SSA study: replies that make no sense in their context. Ten,
# so that each simulated worker meets enough of them for quality control to tell a spammer
# (right half the time) from a careful worker (docs/protocols.md, quality control).
NONSENSE = {"sensible": ["no"]}
SSA_GOLD = [
    (
        "gold-nonsense-1",
        ["I just got a puppy!"],
        "The train leaves from platform purple.",
        NONSENSE,
    ),
    (
        "gold-nonsense-2",
        ["My exam went badly today."],
        "Bananas are my favourite screwdriver.",
        NONSENSE,
    ),
    (
        "gold-nonsense-3",
        ["How was your weekend?"],
        "Yes, the triangle agreed with Tuesday.",
        NONSENSE,
    ),
    ("gold-nonsense-4", ["I miss my grandmother."], "Sure, eleven spoons of loud.", NONSENSE),
    (
        "gold-nonsense-5",
        ["I finally fixed my bike."],
        "Clouds taste like Wednesday spoons.",
        NONSENSE,
    ),
    (
        "gold-nonsense-6",
        ["We are moving to a new city."],
        "The carpet sang my passport blue.",
        NONSENSE,
    ),
    ("gold-nonsense-7", ["My sister had a baby girl!"], "Seven ladders ate the radio.", NONSENSE),
    ("gold-nonsense-8", ["I lost my keys again."], "Purple is a loud kind of soup.", NONSENSE),
    ("gold-nonsense-9", ["The concert was amazing."], "My elbow votes on Thursdays.", NONSENSE),
    (
        "gold-nonsense-10",
        ["I start my new job on Monday."],
        "Windows are quieter than onions.",
        NONSENSE,
    ),
]


@dataclass(frozen=True)
class DemoStudy:
    """One demo campaign: what it runs and how many simulated judgments each item gets."""

    slug: str
    name: str
    protocol: str
    truth: Callable[[Item], Mapping[str, Any]]
    simulated: int
    parameters: dict[str, Any] = field(default_factory=dict)
    controls: dict[str, Any] = field(default_factory=dict)
    models: tuple[str, ...] = ()  # empty: every demo model
    # Items of their own instead of model responses (EmotionLines: whole dialogues).
    items: Callable[[], list[tuple[str, dict[str, Any]]]] | None = None
    # Gold items mixed in: (key, payload, accepted answers), as ``items_add`` takes them.
    gold: tuple[tuple[str, dict[str, Any], dict[str, list[Any]]], ...] = ()
    items_per_assignment: int = 10


STUDIES = [
    DemoStudy(
        slug="demo-likert",
        name="Demo: rate responses to empathetic dialogues",
        protocol=LikertProtocol.name,
        truth=likert_truth,
        simulated=3,
        parameters={"reference_model": "generic-bot", "min_ratings_per_model": 100},
    ),
    DemoStudy(
        slug="demo-ab",
        name="Demo: which response is better?",
        protocol=PairwiseProtocol.name,
        truth=pairwise_truth,
        simulated=3,
        parameters={
            "min_judgments_per_pair": 50,
            "groups": {"gold vs models": [["gold", "generic-bot"], ["gold", "retrieval-minilm"]]},
        },
        models=("gold", "retrieval-minilm", "generic-bot"),
    ),
    DemoStudy(
        slug="demo-ssa",
        name="Demo: does the response make sense, and is it specific?",
        protocol=SSAProtocol.name,
        truth=ssa_truth,
        simulated=5,
        controls={"gold_rate": 0.25, "gold_min_answered": 6, "gold_min_accuracy": 0.7},
        gold=tuple(
            (key, {"context": context, "response": reply, "model": "gold-check"}, answers)
            for key, context, reply, answers in SSA_GOLD
        ),
    ),
    DemoStudy(
        slug="demo-emotionlines",
        name="Demo: label the emotion of every line of a conversation",
        protocol=EmotionLinesProtocol.name,
        truth=emotionlines_truth,
        simulated=5,
        items=emotionlines_items,
        items_per_assignment=1,  # one HIT = one dialogue
    ),
]


def demo_dialogues() -> list[DialogueRecord]:
    """Return the demo corpus (a file in the repository, so a failure here is a bug)."""
    return read_ed(CORPUS)


def demo_contexts(dialogues: list[DialogueRecord]) -> list[Context]:
    """Return each dialogue's turns before its last as a context, the last as reference."""
    return [
        Context(
            key=d.key,
            turns=tuple(u.text for u in d.utterances[:-1]),
            reference=d.utterances[-1].text,
        )
        for d in dialogues
    ]


def study_create(study: DemoStudy, contexts: list[Context], models: list[str]) -> Campaign:
    """Create a demo study with its items and go live; an existing one is returned as it is."""
    existing = Campaign.objects.filter(slug=study.slug).first()
    if existing is not None:
        return existing
    campaign = campaign_create(
        slug=study.slug,
        name=study.name,
        protocol=study.protocol,
        parameters=study.parameters,
        redundancy=demo_redundancy(study.simulated),
        items_per_assignment=study.items_per_assignment,
        controls={"open_links": True} | study.controls,  # anyone may try the demo
    )
    if study.items is not None:
        items_add(campaign=campaign, items=study.items())
        return campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    chosen = [m for m in (study.models or models) if m in models]
    campaign_items_from_responses(campaign=campaign, contexts=contexts, models=chosen)
    if study.gold:
        items_add(campaign=campaign, items=list(study.gold))
    return campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)


def demo_redundancy(simulated: int) -> int:
    """Return the redundancy of a demo campaign whose items the crowd judges ``simulated``
    times: ``NEWCOMER_SLOTS`` more, left for a person trying the worker page."""
    return simulated + NEWCOMER_SLOTS


# Runs of the simulated crowd per campaign: a run the quality review ends by excluding a
# spammer leaves its items to judge again.
FILL_PASSES = 3


def crowd_fill(
    *,
    campaign: Campaign,
    simulated: int,
    truth: Callable[[Item], Mapping[str, Any]],
    seed: int,
    write: Callable[[str], object],
    progress: Callable[[int, int], object] | None = None,
) -> list[CrowdRun]:
    """Let the simulated crowd judge the campaign's items until they hold ``simulated``
    counted judgments each; return its runs (none when nothing was missing: a re-run adds
    nothing).

    A run stops after as many judgments as are missing; the quality review that ends it may
    exclude a spammer's, whose items reopen, so the crowd comes back (at most
    ``FILL_PASSES`` times) to judge them again. It never goes past ``simulated``, below the
    redundancy (``demo_redundancy``), and items are drawn fewest claims first, so every item
    keeps its newcomer's slot. ``write`` hears what starts, ``progress`` (done, target) as
    judgments arrive.
    """
    runs: list[CrowdRun] = []
    for attempt in range(FILL_PASSES):
        before = campaign_progress(campaign)
        target = before.items * simulated
        # Open slots under ``simulated`` by claims, not by counted judgments: an item whose
        # excluded judgment the top-up cap left closed still holds its claim, and filling it
        # by the count would take the newcomer's slot.
        claims = Item.objects.filter(campaign=campaign, gold__isnull=True).values_list(
            "claims", flat=True
        )
        missing = sum(max(0, simulated - c) for c in claims)
        if not missing or (runs and not runs[-1].total):
            break
        if not runs:
            write(
                f"Simulated crowd judging {campaign.slug}: {before.items} items, {simulated} "
                f"judgments each ({campaign.redundancy - simulated} left free for you) …"
            )
        runs.append(
            crowd_run(
                campaign=campaign,
                workers=crowd_make() if not runs else _newcomers(attempt),
                truth=truth,
                seed=seed + attempt,
                max_items=missing,
                item_cap=simulated,
                progress=partial(_heard, progress, before.done, target) if progress else None,
            )
        )
    return runs


def _newcomers(attempt: int) -> list[SimulatedWorker]:
    """Good workers new to the campaign, who replace the judgments the review excluded: each
    takes the item with the fewest claims, which none of them has judged (the first crowd,
    back, could not take an item it judged and would fill another's newcomer slot)."""
    return [SimulatedWorker(f"sim-good-r{attempt}-{i + 1}", "good") for i in range(8)]


def _heard(progress: Callable[[int, int], object], done: int, target: int, n: int) -> None:
    """Tell ``progress`` where the campaign stands after a run's ``n``-th judgment."""
    progress(done + n, target)
