"""``python manage.py plan likert|ssa|ab|bt|ssa_interactive|kappa …``: a design's power."""

from collections.abc import Callable
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.judgment_reads import campaign_report_judgments_frame
from annotation.models import Campaign
from annotation.protocols import Planned, registry
from annotation.protocols.pairwise import pairwise_outcomes
from annotation.selectors import campaign_items_frame
from evalstats import agreement
from evalstats.emotion_labels import utterance_votes
from evalstats.planner import (
    ABDesign,
    BTDesign,
    ChatDesign,
    Found,
    KappaDesign,
    LikertDesign,
    Plan,
    SSADesign,
    ab_plan,
    bt_plan,
    chat_plan,
    design_found,
    kappa_plan,
    likert_components,
    likert_plan,
    ssa_plan,
)

Design = LikertDesign | SSADesign | ABDesign | BTDesign | ChatDesign
# Bradley–Terry over several models' A/B comparisons: a design of its own, of no protocol.
BT = "bt"
# The designs a pilot campaign can inform (likert: the three sds, ab: the tie shares, kappa:
# its kappa and label shares).
PILOTED: tuple[type, ...] = (LikertDesign, ABDesign, KappaDesign)


def planned_words() -> dict[str, Planned | None]:
    """Return the words ``plan`` takes, each with the protocol whose design it names: every
    planned protocol's name and its ``planner_words`` (pairwise = ab, emotionlines = kappa),
    and ``bt`` (no protocol)."""
    words: dict[str, Planned | None] = {}
    for protocol in registry.all():
        if isinstance(protocol, Planned):
            words |= dict.fromkeys((protocol.name, *protocol.planner_words), protocol)
    return words | {BT: None}


class Command(BaseCommand):
    help = (
        "Simulate a study analysed as the report analyses it: the power to find a given "
        "difference and the difference found with 80% power. likert: a model's mean rating vs "
        "the reference's, variance components assumed (--sd-*) or estimated from a pilot "
        "campaign (--pilot); ssa: static sensibleness (majority of workers per response), "
        "spreads on the logit scale of a vote; ab (pairwise): a pair's win rate vs 50%; bt: "
        "two models' Bradley–Terry strengths among --models; ssa_interactive: sensibleness of "
        "chats, a bootstrap over conversations; kappa (emotionlines): the expected width of "
        "Fleiss' kappa's interval (bootstrap over dialogues). docs/statistics.md, 'Planning a "
        "study', states each model and its defaults."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "protocol",
            choices=list(planned_words()),
            help="The protocol to plan (pairwise = ab, emotionlines = kappa).",
        )
        parser.add_argument(
            "--items",
            type=int,
            help="Items per model (likert 100, ssa 200 responses) or per pair of models "
            "(ab 100 contexts, bt 50).",
        )
        parser.add_argument(
            "--ratings",
            type=int,
            help="Ratings (workers) per item (likert 1, ssa 5, ab 3, bt 1; kappa: raters per "
            "utterance, 5).",
        )
        parser.add_argument(
            "--pool",
            type=int,
            help="Raters shared by the models (likert default: fresh raters; ssa, ab: 20).",
        )
        parser.add_argument("--fresh", action="store_true", help="Fresh raters (no pool).")
        parser.add_argument(
            "--sd-item", type=float, help="Item sd (likert 0.6; ssa 1.5, ab 1.0, bt 0 logit)."
        )
        parser.add_argument(
            "--sd-rater",
            type=float,
            help="Leniency sd (likert 0.5, ssa 1.0 logit; ab: preference for a model, 0.3).",
        )
        parser.add_argument("--sd-noise", type=float, help="Likert noise sd (0.8).")
        parser.add_argument(
            "--sd-position", type=float, help="ab: workers' preference for the first shown (0.5)."
        )
        parser.add_argument(
            "--sensible",
            type=float,
            help="ssa, ssa_interactive: the reference's sensibleness (0.7).",
        )
        parser.add_argument("--both", type=float, help="ab, bt: share of 'both' (0.1).")
        parser.add_argument("--neither", type=float, help="ab, bt: share of 'neither' (0.1).")
        parser.add_argument("--models", type=int, default=4, help="bt: models compared (4).")
        parser.add_argument(
            "--prior", type=float, default=0.0, help="bt: virtual wins per pair (0)."
        )
        parser.add_argument(
            "--n-boot",
            type=int,
            default=1000,
            help="Bootstrap resamples per study (ssa_interactive, kappa).",
        )
        parser.add_argument(
            "--conversations", type=int, help="ssa_interactive: conversations per model (100)."
        )
        parser.add_argument(
            "--turns",
            type=int,
            nargs=2,
            metavar=("MIN", "MAX"),
            help="ssa_interactive: labelled bot turns per conversation (7 14).",
        )
        parser.add_argument("--sd-chat", type=float, help="ssa_interactive: chat sd (0.5 logit).")
        parser.add_argument(
            "--sd-worker", type=float, help="ssa_interactive: worker sd (0.5 logit)."
        )
        parser.add_argument("--sd-turn", type=float, help="ssa_interactive: turn sd (1.0 logit).")
        parser.add_argument("--dialogues", type=int, help="kappa: dialogues (150).")
        parser.add_argument(
            "--utterances",
            type=int,
            nargs=2,
            metavar=("MIN", "MAX"),
            help="kappa: utterances per dialogue (5 24).",
        )
        parser.add_argument("--kappa", type=float, help="kappa: the assumed kappa (0.34).")
        parser.add_argument(
            "--width", type=float, help="kappa: the dialogues needed for this expected width."
        )
        parser.add_argument(
            "--pilot",
            help="A pilot campaign's slug: likert estimates the three sds from its ratings, ab "
            "the shares of 'both' and 'neither', kappa its kappa and label shares.",
        )
        parser.add_argument("--aspect", help="The pilot's aspect (question key; default first).")
        parser.add_argument(
            "--comparisons",
            type=int,
            default=1,
            help="Models compared with the reference, or pairs tested (ab, ssa, "
            "ssa_interactive) (1).",
        )
        parser.add_argument(
            "--difference",
            type=float,
            help="Difference to detect (likert 0.3 points; ssa, ssa_interactive 0.05 a share; "
            "ab 0.1 over a 50%% win rate; bt 0.5 log-strength).",
        )
        parser.add_argument("--power", type=float, default=0.8, help="Target power (0.8).")
        parser.add_argument("--studies", type=int, default=200, help="Simulated studies (200).")
        parser.add_argument("--seed", type=int, default=0, help="Random seed (0).")

    def handle(self, *args: Any, **options: Any) -> None:
        protocol = planned_words()[options["protocol"]]
        kind = BTDesign if protocol is None else protocol.planner_design_type
        if options["pilot"] and kind not in PILOTED:
            raise CommandError("--pilot estimates a likert, ab or kappa design only.")
        self.planned: Planned | None = protocol  # the pilot campaign must be of it
        if kind is KappaDesign:
            try:
                self._kappa(options)
            except ValueError as error:
                raise CommandError(str(error)) from None
            return
        given = {
            "ratings_per_item": options["ratings"],
            "sd_item": options["sd_item"],
            "sd_rater": options["sd_rater"],
            "comparisons": options["comparisons"],
        }
        given = {k: v for k, v in given.items() if v is not None}
        planners: dict[type, Callable[..., tuple[Design, Plan]]] = {
            LikertDesign: self._likert,
            SSADesign: self._ssa,
            ABDesign: self._ab,
            BTDesign: self._bt,
            ChatDesign: self._chat,
        }
        try:
            design, plan = planners[kind](given, options)
            # The one answer the wizard's review step shows too (``design_found``).
            found = design_found(design, start=plan.difference, **self._run(options))
        except ValueError as error:
            raise CommandError(str(error)) from None
        self._print(design, plan, found)

    def _run(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"studies": options["studies"], "target": options["power"], "seed": options["seed"]}

    def _likert(self, given: dict[str, Any], options: dict[str, Any]) -> tuple[LikertDesign, Plan]:
        if options["pilot"]:
            given.update(self._pilot(options["pilot"], options["aspect"]))
            self.stdout.write(
                "From the pilot: "
                + ", ".join(
                    f"{k} {given[k]:.2f}" for k in ("sd_item", "sd_rater", "sd_noise", "sd_taste")
                )
            )
        if options["sd_noise"] is not None:
            given["sd_noise"] = options["sd_noise"]
        design = LikertDesign(
            items_per_model=options["items"] or 100,
            pool=None if options["fresh"] else options["pool"],
            **given,
        )
        difference = 0.3 if options["difference"] is None else options["difference"]
        return design, likert_plan(design, difference, **self._run(options))

    def _ssa(self, given: dict[str, Any], options: dict[str, Any]) -> tuple[SSADesign, Plan]:
        if options["sensible"] is not None:
            given["sensible"] = options["sensible"]
        given["raters_per_response"] = given.pop("ratings_per_item", 5)
        design = SSADesign(
            responses_per_model=options["items"] or 200,
            pool=None if options["fresh"] else (options["pool"] or 20),
            **given,
        )
        difference = 0.05 if options["difference"] is None else options["difference"]
        return design, ssa_plan(design, difference, **self._run(options))

    def _ab(self, given: dict[str, Any], options: dict[str, Any]) -> tuple[ABDesign, Plan]:
        if options["pilot"]:
            ties = self._pilot_ties(options["pilot"])
            self.stdout.write(
                f"From the pilot: both {ties['both']:.2f}, neither {ties['neither']:.2f}"
            )
            given.update(ties)
        given["judgments_per_item"] = given.pop("ratings_per_item", 3)
        for key in ("both", "neither", "sd_position"):
            if options[key] is not None:
                given[key] = options[key]
        design = ABDesign(
            items=options["items"] or 100,
            pool=None if options["fresh"] else (options["pool"] or 20),
            **given,
        )
        difference = 0.1 if options["difference"] is None else options["difference"]
        return design, ab_plan(design, difference, **self._run(options))

    def _bt(self, given: dict[str, Any], options: dict[str, Any]) -> tuple[BTDesign, Plan]:
        if options["comparisons"] != 1 or options["sd_rater"] is not None:
            raise CommandError("bt takes neither --comparisons nor --sd-rater.")
        design = BTDesign(
            models=options["models"],
            items_per_pair=options["items"] or 50,
            judgments_per_item=given.get("ratings_per_item", 1),
            sd_item=given.get("sd_item", 0.0),
            prior=options["prior"],
            **{k: options[k] for k in ("both", "neither") if options[k] is not None},
        )
        difference = 0.5 if options["difference"] is None else options["difference"]
        return design, bt_plan(design, difference, **self._run(options))

    def _chat(self, given: dict[str, Any], options: dict[str, Any]) -> tuple[ChatDesign, Plan]:
        if set(given) - {"comparisons"}:
            raise CommandError(
                "ssa_interactive takes --conversations, --turns, --comparisons and "
                "--sd-chat/worker/turn."
            )
        chosen = {
            "comparisons": options["comparisons"],
            "conversations_per_model": options["conversations"],
            "sensible": options["sensible"],
            "sd_chat": options["sd_chat"],
            "sd_worker": options["sd_worker"],
            "sd_turn": options["sd_turn"],
            "n_boot": options["n_boot"],
        }
        if options["turns"]:
            chosen["min_turns"], chosen["max_turns"] = options["turns"]
        design = ChatDesign(**{k: v for k, v in chosen.items() if v is not None})
        difference = 0.05 if options["difference"] is None else options["difference"]
        return design, chat_plan(design, difference, **self._run(options))

    def _kappa(self, options: dict[str, Any]) -> None:
        chosen: dict[str, Any] = {
            "dialogues": options["dialogues"],
            "raters": options["ratings"],
            "kappa": options["kappa"],
            "n_boot": options["n_boot"],
        }
        if options["pilot"]:
            found = self._pilot_kappa(options["pilot"])
            self.stdout.write(
                f"From the pilot: kappa {found['kappa']:.2f}, {found['raters']} raters, "
                "label shares " + ", ".join(f"{s:.2f}" for s in found["shares"])
            )
            chosen = {**found, **{k: v for k, v in chosen.items() if v is not None}}
        if options["utterances"]:
            chosen["min_utterances"], chosen["max_utterances"] = options["utterances"]
        design = KappaDesign(**{k: v for k, v in chosen.items() if v is not None})
        plan = kappa_plan(
            design, studies=options["studies"], target=options["power"], seed=options["seed"]
        )
        self.stdout.write(
            f"{design.dialogues} dialogues of {design.min_utterances}-{design.max_utterances} "
            f"utterances, {design.raters} raters per utterance, kappa {design.kappa:g}:\n"
            f"  expected width of kappa's 95% interval: {plan.mean_width:.3f} "
            f"(± {plan.width_se:.4f}; wider than {plan.wide:.3f} in 10% of "
            f"{plan.studies} simulated studies)\n"
            f"  kappa's standard error: {plan.se:.3f} (mean estimate {plan.mean_kappa:.3f})\n"
            f"  difference of kappa between two such sources found with {options['power']:.0%} "
            f"power: {plan.detectable:.3f}"
        )
        if options["width"]:
            needed = plan.dialogues_for(options["width"], design.dialogues)
            width = options["width"]
            self.stdout.write(f"  dialogues for an expected width of {width:g}: {needed}")

    def _print(self, design: Design, plan: Plan, found: Found) -> None:
        if isinstance(design, BTDesign):
            size = (
                f"{design.models} models, every pair on {design.items_per_pair} items, "
                f"{design.judgments_per_item} judgment(s) each, both {design.both:g}, "
                f"neither {design.neither:g}:"
            )
            what = "log-strength difference"
        elif isinstance(design, ChatDesign):
            size = (
                f"{design.conversations_per_model} conversations per model of "
                f"{design.min_turns}-{design.max_turns} labelled turns, one worker each:"
            )
            what = "difference"
        else:
            raters = f"a pool of {design.pool} raters" if design.pool else "fresh raters"
            if isinstance(design, LikertDesign):
                size = f"{design.items_per_model} items per model, {design.ratings_per_item}"
                size += " rating(s)"
            elif isinstance(design, SSADesign):
                size = (
                    f"{design.responses_per_model} responses per model, "
                    f"{design.raters_per_response} worker(s)"
                )
            else:
                size = f"{design.items} items of the pair, {design.judgments_per_item} judgment(s)"
            size += f" each from {raters}, {design.comparisons} comparison(s) (Holm):"
            what = "win rate advantage over 50%" if isinstance(design, ABDesign) else "difference"
        self.stdout.write(
            f"{size}\n"
            f"  power to find a {what} of {plan.difference:g}: {plan.power:.0%} "
            f"(± {plan.power_se:.0%}, {plan.studies} simulated studies)\n"
            f"  {what} found with {found.target:.0%} power: {self._found(found, what)}\n"
            f"  expected width of the 95% interval: {plan.mean_width:.3g} at "
            f"{plan.difference:g}, {found.width:.3g} at the {what} found"
        )

    def _found(self, found: Found, what: str) -> str:
        if not found.reached:
            return (
                f"none: this design is too small to detect any {what} below "
                f"{found.detectable:g} (found there in {found.power:.0%} of the studies)"
            )
        if found.power is None:
            return f"{found.detectable:.3g}"
        return f"{found.detectable:.3g} (simulated power there: {found.power:.0%})"

    def _campaign(self, slug: str) -> Campaign:
        """Return the pilot campaign; refuse one of another protocol than the planned one."""
        campaign = Campaign.objects.filter(slug=slug).first()
        if campaign is None:
            raise CommandError(f"No campaign {slug!r}.")
        if self.planned is None or campaign.protocol != self.planned.name:
            raise CommandError(f"The pilot {slug!r} is a {campaign.protocol} campaign.")
        return campaign

    def _pilot(self, slug: str, aspect: str | None) -> dict[str, float]:
        campaign = self._campaign(slug)
        items = campaign_items_frame(campaign)
        judgments = campaign_report_judgments_frame(campaign)
        if judgments.empty:
            raise CommandError(f"The pilot {slug!r} has no ratings yet.")
        question = aspect or str(judgments["question"].iloc[0])
        ratings = judgments[judgments["question"] == question]
        if ratings.empty:
            raise CommandError(f"The pilot has no ratings of {question!r}.")
        models = items.set_index("item")["payload"].map(lambda p: p.get("model"))
        try:
            values = ratings["value"].astype(float)
        except (TypeError, ValueError):
            raise CommandError(f"The pilot's {question!r} answers are not ratings.") from None
        return likert_components(ratings.assign(value=values, model=ratings["item"].map(models)))

    def _pilot_ties(self, slug: str) -> dict[str, float]:
        campaign = self._campaign(slug)
        outcomes = pairwise_outcomes(
            campaign_items_frame(campaign), campaign_report_judgments_frame(campaign)
        )
        if outcomes.empty:
            raise CommandError(f"The pilot {slug!r} has no judgments yet.")
        share = outcomes["outcome"].value_counts(normalize=True)
        return {"both": float(share.get("both", 0.0)), "neither": float(share.get("neither", 0.0))}

    def _pilot_kappa(self, slug: str) -> dict[str, Any]:
        campaign = self._campaign(slug)
        labels = list(campaign.parameters.get("labels") or [])
        counts = utterance_votes(
            campaign_items_frame(campaign), campaign_report_judgments_frame(campaign), labels
        )
        if counts.empty:
            raise CommandError(f"The pilot {slug!r} has no votes yet.")
        per = counts[labels].sum(axis=1)
        raters = int(per.mode().max())
        table = counts.loc[per == raters, labels].to_numpy()
        kappa = float(agreement.fleiss_kappa(table)) if raters >= 2 else float("nan")
        if not 0 < kappa < 1:
            raise CommandError(f"The pilot's kappa ({kappa:.2f}) cannot be planned from.")
        votes = table.sum(axis=0)
        shares = tuple(float(v) for v in np.maximum(votes, 0.5) / np.maximum(votes, 0.5).sum())
        return {"kappa": kappa, "raters": raters, "shares": shares}
