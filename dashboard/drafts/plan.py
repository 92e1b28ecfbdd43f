"""The review step's study plan: what a draft's design can detect (``evalstats.planner``).

A draft's design is read from its items and settings by its protocol
(``Planned.planner_design``, in the protocol's folder), and the planner's documented defaults
fill in everything the draft does not say (raters, their spreads, the reference's level):

- Likert and static SSA: the models (the items' ``model``), the items of the smallest model
  (the weakest comparison), one rating per worker per item (``redundancy``), Holm over the
  models but one;
- A/B (``pairwise``): the items of the pair with the fewest, ``redundancy`` judgments each,
  the win rate's advantage over 50% at 80% power; with three models or more, the gap of
  Bradley–Terry log-strength separated with 80% power (searched on the simulated power);
- interactive SSA: ``conversations_per_model`` chats of ``min_turns``-``max_turns``
  utterances, half of them labelled bot turns; it needs no items;
- EmotionLines: the dialogues (items), their numbers of utterances, ``redundancy`` raters and
  the published kappa (0.34): the expected width of kappa's interval.

A few simulated studies with a fixed seed keep the page fast; the result is kept in the
draft's state under its design, so the page simulates again only when the design changes.
``manage.py plan`` runs the same design with more studies.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.db.models import Count

from annotation.models import Campaign
from annotation.protocols import Planned, registry
from dashboard.drafts.store import draft_state, draft_state_update
from evalstats.planner import (
    ABDesign,
    BTDesign,
    ChatDesign,
    KappaDesign,
    LikertDesign,
    SSADesign,
    design_found,
)

# Few studies: the page must answer well under a second (about 10-15 ms a study at 100
# items per model); the detectable difference rests on the studies' mean standard error,
# which 20 studies already pin down to a few percent.
LIKERT_STUDIES = 20
SSA_STUDIES = 10  # twice: planned at 0.05, then again at the difference found (as `plan`)
AB_STUDIES = 10  # per plan of the search for the advantage (8 plans; about 10 ms a study)
BT_STUDIES = 20  # per plan of the search on the simulated power (9 plans; about 2 ms a study)
CHAT_STUDIES = 10  # twice, as SSA (about 20 ms a study with 300 resamples)
KAPPA_STUDIES = 10  # about 10 ms a study of 150 dialogues with 300 resamples
BOOT = 300  # resamples per simulated study (the report: 1000; the width changes little)
SEED = 0
STATE_KEY = "plan"
POWER_SLACK = 0.2  # 10 studies' power is ± 0.13 (one standard error at 80%)
METHOD = 3  # kept plans of an older method are simulated again (3: A/B by simulated power)

Design = LikertDesign | SSADesign | ABDesign | ChatDesign | KappaDesign


@dataclass(frozen=True)
class DraftPlan:
    """What the review step shows of the planner: the design, its result or why there is none.

    ``what`` names the detectable quantity ("a difference of"), ``size`` the design in words,
    ``tested`` how the report decides, ``also`` further results (Bradley–Terry for A/B).
    """

    covered: bool
    problem: str = ""  # why no plan is shown (protocol not covered, too few items)
    models: list[str] = field(default_factory=list)
    reference: str = ""
    design: dict[str, Any] = field(default_factory=dict)
    detectable: float = 0.0  # the difference found with 80% power
    half_width: float = 0.0  # half the expected width of the difference's 95% interval
    target: float = 0.8
    studies: int = 0
    unit: str = ""
    assumptions: list[str] = field(default_factory=list)
    command: str = ""
    what: str = "a difference of"
    size: str = ""
    tested: str = ""
    also: list[str] = field(default_factory=list)
    # A/B: the simulated power at the advantage found, and whether any advantage below a 99%
    # win rate reached the target (``planner.ab_detectable``)
    power: float | None = None
    reached: bool = True

    @property
    def power_short(self) -> bool:
        """Whether the simulated power at the advantage found falls well short of the target
        (by more than a few studies' Monte-Carlo error): a design too small for the
        normal approximation the advantage rests on."""
        return self.power is not None and self.power < self.target - POWER_SLACK


def _per_pair(items: Any, campaign: Campaign) -> dict[str, int]:
    rows = items.values("payload__model_a", "payload__model_b").annotate(n=Count("id"))
    pairs: dict[str, int] = {}
    for r in rows:
        a, b = sorted((str(r["payload__model_a"]), str(r["payload__model_b"])))
        pairs[f"{a} vs {b}"] = pairs.get(f"{a} vs {b}", 0) + int(r["n"])
    return pairs


def _per_chat_model(items: Any, campaign: Campaign) -> dict[str, int]:
    models = campaign.parameters.get("models") or []
    return {str(m): 0 for m in models} or {"": 0}  # no items: the chats make them


def _per_dialogue(items: Any, campaign: Campaign) -> dict[str, int]:
    return {
        str(pk): len(payload.get("utterances") or [])
        for pk, payload in items.values_list("pk", "payload")
    }


def _per_model(items: Any, campaign: Campaign) -> dict[str, int]:
    rows = items.values("payload__model").annotate(n=Count("id")).order_by("payload__model")
    return {str(r["payload__model"]): int(r["n"]) for r in rows}


# How a draft's items are counted, by what a planned protocol's design is sized by
# (``Planned.planner_sizing``).
_SIZES = {
    "model": _per_model,
    "pair": _per_pair,
    "dialogue": _per_dialogue,
    "chat": _per_chat_model,
}


def _planned(campaign: Campaign) -> Planned | None:
    protocol = registry.get(campaign.protocol)
    return protocol if isinstance(protocol, Planned) else None


def _models(campaign: Campaign, protocol: Planned) -> dict[str, int]:
    """Return items per model (Likert, SSA), per pair "a vs b" (A/B), utterances per dialogue
    (EmotionLines) or the models of the chats to come (interactive SSA)."""
    items = campaign.items.filter(gold__isnull=True)
    return _SIZES[protocol.planner_sizing](items, campaign)


def draft_design(campaign: Campaign, models: dict[str, int]) -> tuple[Design | None, str]:
    """Return the draft's design for the planner (``models``: items per model, pair or
    dialogue, as ``_models`` reads them), or None and why it cannot be planned."""
    protocol = _planned(campaign)
    if protocol is None:
        planned = [p.title for p in registry.all() if isinstance(p, Planned)]
        return None, (
            f"The study planner does not cover the {campaign.protocol} protocol yet "
            f"(it plans {', '.join(planned)})."
        )
    if not models:
        return None, "Add items first: the plan is made from the items of each model."
    try:
        design = protocol.planner_design(
            campaign.parameters, redundancy=campaign.redundancy, sizes=models, n_boot=BOOT
        )
    except ValueError as error:
        return None, f"The planner cannot simulate this design: {error}."
    return design, ""


# Simulated studies per design on the page (``design_found``; the command shown reproduces
# them with the same --studies).
STUDIES: dict[type, int] = {
    LikertDesign: LIKERT_STUDIES,
    SSADesign: SSA_STUDIES,
    ABDesign: AB_STUDIES,
    ChatDesign: CHAT_STUDIES,
    KappaDesign: KAPPA_STUDIES,
}


def _simulate(design: Design) -> dict[str, Any]:
    found = design_found(design, studies=STUDIES[type(design)], seed=SEED)
    return {
        "detectable": found.detectable,
        "width": found.width,
        "studies": found.studies,
        "power": found.power,
        "reached": found.reached,
    }


def _bradley_terry(design: ABDesign, models: int) -> dict[str, Any]:
    bt = BTDesign(
        models=models,
        items_per_pair=design.items,
        judgments_per_item=design.judgments_per_item,
        both=design.both,
        neither=design.neither,
    )
    found = design_found(bt, studies=BT_STUDIES, seed=SEED)
    return {
        "models": models,
        "detectable": found.detectable,
        "width": found.width,
        "reached": found.reached,
    }


def _command(design: Design) -> str:
    """Return the ``plan`` command that prints the page's numbers (same studies and seed;
    more --studies make them more precise)."""
    run = f" --studies {STUDIES[type(design)]} --seed {SEED}"
    if isinstance(design, LikertDesign):
        size = f"likert --items {design.items_per_model} --ratings {design.ratings_per_item}"
        raters = "--fresh" if design.pool is None else f"--pool {design.pool}"
        return f"python manage.py plan {size} {raters} --comparisons {design.comparisons}{run}"
    if isinstance(design, SSADesign):
        size = f"ssa --items {design.responses_per_model} --ratings {design.raters_per_response}"
        size += f" --pool {design.pool}"
        return f"python manage.py plan {size} --comparisons {design.comparisons}{run}"
    if isinstance(design, ABDesign):
        size = f"ab --items {design.items} --ratings {design.judgments_per_item}"
        return f"python manage.py plan {size} --pool {design.pool}{run}"
    if isinstance(design, ChatDesign):
        return (
            f"python manage.py plan ssa_interactive --conversations "
            f"{design.conversations_per_model} --turns {design.min_turns} {design.max_turns} "
            f"--n-boot {design.n_boot}{run}"
        )
    return (
        f"python manage.py plan kappa --dialogues {design.dialogues} --utterances "
        f"{design.min_utterances} {design.max_utterances} --ratings {design.raters} "
        f"--n-boot {design.n_boot}{run}"
    )


def _assumptions(design: Design) -> list[str]:
    if isinstance(design, LikertDesign):
        return [
            "a fresh rater for every rating (no shared pool)",
            f"item sd {design.sd_item}, rater leniency sd {design.sd_rater}, "
            f"noise sd {design.sd_noise} (points on the 1–5 scale; the planner's defaults)",
        ]
    if isinstance(design, SSADesign):
        return [
            f"a pool of {design.pool} workers shared by the models",
            f"the reference's sensibleness {design.sensible:.0%}",
            f"responses' spread {design.sd_item} and workers' leniency {design.sd_rater} on "
            "the logit scale of one vote (the planner's defaults)",
        ]
    if isinstance(design, ABDesign):
        return [
            f"a pool of {design.pool} workers",
            f"{design.both:.0%} 'both' and {design.neither:.0%} 'neither' judgments",
            f"contexts' spread {design.sd_item}, workers' preference for a model "
            f"{design.sd_rater} and for the first response shown {design.sd_position} on the "
            "logit scale (the planner's defaults)",
        ]
    if isinstance(design, ChatDesign):
        return [
            "a fresh worker per conversation, who labels all its bot turns",
            f"the reference's sensibleness {design.sensible:.0%}",
            f"chats' spread {design.sd_chat}, workers' {design.sd_worker} and turns' "
            f"{design.sd_turn} on the logit scale (the planner's defaults)",
        ]
    return [
        f"Fleiss' kappa {design.kappa} (EmotionLines' published agreement)",
        "label shares of EmotionLines' Friends votes (neutral 45%); dialogues differ in mood "
        "and in how well their workers agree (the planner's defaults)",
    ]


def _words(design: Design, campaign: Campaign) -> dict[str, str]:
    """Return the unit, the quantity detected, the design's size and how the report tests."""
    k = campaign.redundancy
    holm = f"Holm over {getattr(design, 'comparisons', 1)} comparison(s)"
    if isinstance(design, LikertDesign):
        return {
            "unit": "points on the 1–5 scale",
            "what": "a difference of",
            "size": f"{design.items_per_model} items per model (the model with the fewest), "
            f"{k} worker(s) each",
            "tested": f"a model against its reference, 95% crossed interval, {holm}",
        }
    if isinstance(design, SSADesign):
        return {
            "unit": "in proportion: the share of sensible responses",
            "what": "a difference of",
            "size": f"{design.responses_per_model} responses per model (the model with the "
            f"fewest), {k} worker(s) each",
            "tested": f"a model against its reference, 95% crossed interval, {holm}",
        }
    if isinstance(design, ABDesign):
        return {
            "unit": "over a 50% win rate among decisive judgments",
            "what": "a win rate advantage of",
            "size": f"{design.items} items per pair of models (the pair with the fewest), "
            f"{k} worker(s) each",
            "tested": "the pair's win rate, 95% crossed interval above 50%",
        }
    if isinstance(design, ChatDesign):
        return {
            "unit": "in proportion: the share of sensible bot turns",
            "what": "a difference of",
            "size": f"{design.conversations_per_model} conversations per model of "
            f"{design.min_turns}–{design.max_turns} labelled bot turns",
            "tested": "a model against another, bootstraps over conversations",
        }
    return {
        "unit": "in Fleiss' kappa, between two sources of this size",
        "what": "a difference of",
        "size": f"{design.dialogues} dialogues of {design.min_utterances}–"
        f"{design.max_utterances} utterances, {k} worker(s) each",
        "tested": "kappa's 95% interval: the bootstrap over dialogues",
    }


def _bt_words(bt: dict[str, Any]) -> str:
    if not bt.get("reached", True):
        return (
            f"Bradley–Terry over the {bt['models']} models: this design is too small to tell "
            f"two models' strengths apart with 80% power (not even a gap of "
            f"{bt['detectable']:.1f} log-strength)"
        )
    return (
        f"Bradley–Terry over the {bt['models']} models: two models' strengths are told "
        f"apart with 80% power from a gap of {bt['detectable']:.2f} log-strength (95% "
        f"interval width ±{bt['width'] / 2:.2f}; every pair judged as often as the "
        "smallest)"
    )


def draft_plan(campaign: Campaign) -> DraftPlan:
    """Return the review step's plan of a draft, simulated once per design and then kept.

    The kept result lives in the draft's state under ``plan`` with the design it was made
    for; a changed design (settings, items) is simulated again.
    """
    protocol = _planned(campaign)
    models = _models(campaign, protocol) if protocol is not None else {}
    design, problem = draft_design(campaign, models)
    if design is None:
        return DraftPlan(covered=protocol is not None, problem=problem)
    pair_models = sorted({m for pair in models for m in pair.split(" vs ")})
    many = isinstance(design, ABDesign) and len(pair_models) >= 3
    key = {"protocol": campaign.protocol, **asdict(design), "seed": SEED, "method": METHOD}
    if many:
        key["bt_models"] = len(pair_models)
    kept = draft_state(campaign).get(STATE_KEY)
    if isinstance(kept, dict) and kept.get("design") == key:
        result = kept["result"]
    else:
        result = _simulate(design)
        if many and isinstance(design, ABDesign):
            result["bt"] = _bradley_terry(design, len(pair_models))
        draft_state_update(
            campaign=campaign, changes={STATE_KEY: {"design": key, "result": result}}
        )
    also = [_bt_words(result["bt"])] if "bt" in result else []
    reference = campaign.parameters.get("reference_model") or ""
    shown = pair_models if isinstance(design, ABDesign) else [m for m in sorted(models) if m]
    if isinstance(design, KappaDesign):
        shown = []
    words = _words(design, campaign)
    return DraftPlan(
        covered=True,
        models=shown,
        reference=reference if reference in shown else "",
        design=key,
        detectable=float(result["detectable"]),
        half_width=float(result["width"]) / 2,
        studies=int(result["studies"]),
        assumptions=_assumptions(design),
        command=_command(design),
        also=also,
        power=result.get("power"),
        reached=bool(result.get("reached", True)),
        unit=words["unit"],
        what=words["what"],
        size=words["size"],
        tested=words["tested"],
    )
