"""ACUTE-Eval items from whole conversations (docs/protocols.md, "acute").

Conversations come from a campaign's collected chats (interactive SSA: a worker and a named
model; the judged speaker is the bot) or from an imported data set (e.g. Meena's logs: the
model is each dialogue's source, "Meena" or "Mitsuku", and the judged speaker is the one
named like it unless mapped otherwise). Every two models are paired on the same number of
conversation pairs (a matchup), each conversation used as evenly as possible within its
matchup. Item keys name both dialogues, so a second run with the same conversations adds
nothing, and a run after more chats were collected only tops each matchup up to its number.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from annotation.locks import campaign_lock_by_slug
from annotation.models import Campaign, Dataset, Dialogue, Item
from annotation.protocols import registry
from annotation.protocols.acute import AcuteProtocol
from annotation.services import campaign_create, items_add
from evalsite.errors import Conflict, InvalidParameters

# The speaker an interactive SSA chat's model speaks as (chat/bot.py).
BOT_SPEAKER = "bot"


@dataclass(frozen=True)
class Conversation:
    """One whole conversation, its model and the speaker of it to judge."""

    key: str  # "<campaign or data set>/<dialogue key>": unique across sources
    model: str
    speaker: str
    turns: tuple[tuple[str, str], ...]  # (speaker, text)


@dataclass
class AcuteItemsAdded:
    """What ``acute_items_add`` did: items added, and each matchup's pairs in the campaign."""

    campaign: Campaign
    added: int
    matchups: dict[tuple[str, str], int] = field(default_factory=dict)
    short: list[str] = field(default_factory=list)  # matchups without enough conversations


def _dialogues(queryset: Iterable[Dialogue]) -> list[tuple[Dialogue, list[tuple[str, str]]]]:
    return [
        (d, [(u.speaker, u.text) for u in sorted(d.utterances.all(), key=lambda u: u.index)])
        for d in queryset
    ]


def conversations_from_campaign(
    *, campaign: Campaign, include_flagged: bool = False, min_turns: int = 4
) -> tuple[list[Conversation], int]:
    """Return the complete chats of ``campaign`` held with a model, and how many of its
    complete chats were left out (no model, too short, or flagged unless included)."""
    dialogues = Dialogue.objects.filter(campaign=campaign, status=Dialogue.Status.COMPLETE)
    conversations, skipped = [], 0
    for dialogue, turns in _dialogues(dialogues.order_by("pk").prefetch_related("utterances")):
        model = dialogue.metadata.get("model") if isinstance(dialogue.metadata, dict) else None
        usable = (
            isinstance(model, str)
            and model
            and len(turns) >= min_turns
            and any(s == BOT_SPEAKER for s, _ in turns)
            and (include_flagged or not dialogue.flagged)
        )
        if not usable:
            skipped += 1
            continue
        conversations.append(
            Conversation(
                key=f"{campaign.slug}/{dialogue.key}",
                model=str(model),
                speaker=BOT_SPEAKER,
                turns=tuple(turns),
            )
        )
    return conversations, skipped


def conversations_from_dataset(
    *, dataset: Dataset, speakers: Mapping[str, str] | None = None, min_turns: int = 4
) -> tuple[list[Conversation], int]:
    """Return the dialogues of ``dataset`` as conversations of their source's model, and how
    many were left out (too short, or the judged speaker never speaks).

    The judged speaker of a source is ``speakers[source]``, else the speaker named like the
    source (Meena's logs: "Meena", "Mitsuku"; human–human logs need e.g. Human → "Human 2").
    """
    speakers = speakers or {}
    conversations, skipped = [], 0
    dialogues = dataset.dialogues.order_by("pk").prefetch_related("utterances")
    for dialogue, turns in _dialogues(dialogues):
        model = dialogue.source or dataset.name
        speaker = speakers.get(model, model)
        if len(turns) < min_turns or not any(s == speaker for s, _ in turns):
            skipped += 1
            continue
        conversations.append(
            Conversation(
                key=f"{dataset.name}/{dialogue.key}",
                model=model,
                speaker=speaker,
                turns=tuple(turns),
            )
        )
    return conversations, skipped


def _payload(a: Conversation, b: Conversation) -> dict[str, object]:
    payload: dict[str, object] = {}
    for side, conversation in (("a", a), ("b", b)):
        payload |= {
            f"model_{side}": conversation.model,
            f"speaker_{side}": conversation.speaker,
            # "<campaign or data set>/<key>": how a forget finds the pairs quoting a
            # worker's chat (services.worker_forget).
            f"dialogue_{side}": conversation.key,
            f"turns_{side}": [{"speaker": s, "text": t} for s, t in conversation.turns],
        }
    return payload


def _item_key(a: Conversation, b: Conversation) -> str:
    key = f"{a.key}~{b.key}"
    if len(key) <= 200:
        return key
    return f"{key[:150]}…{hashlib.sha256(key.encode()).hexdigest()[:40]}"


def _matchup_pairs(
    first: list[Conversation],
    second: list[Conversation],
    *,
    wanted: int,
    taken: set[tuple[str, str]],
    rng: random.Random,
) -> list[tuple[Conversation, Conversation]]:
    """Return up to ``wanted`` new (first, second) pairs, none in ``taken``: each time a
    least-used conversation of ``first`` with the least-used one of ``second`` it has not met
    (ties broken by a random rank), so every conversation serves about equally often."""
    rank = {c.key: rng.random() for c in [*first, *second]}
    uses: Counter[str] = Counter()
    met = set(taken)
    for a_key, b_key in taken:
        uses[a_key] += 1
        uses[b_key] += 1
    chosen: list[tuple[Conversation, Conversation]] = []
    while len(chosen) < wanted:
        order_b = sorted(second, key=lambda c: (uses[c.key], rank[c.key]))
        pick = next(
            (
                (a, b)
                for a in sorted(first, key=lambda c: (uses[c.key], rank[c.key]))
                for b in order_b
                if (a.key, b.key) not in met
            ),
            None,
        )
        if pick is None:
            break  # every pair of this matchup is taken
        a, b = pick
        met.add((a.key, b.key))
        uses[a.key] += 1
        uses[b.key] += 1
        chosen.append(pick)
    return chosen


@transaction.atomic
def acute_items_add(
    *,
    slug: str,
    conversations: Sequence[Conversation],
    pairs_per_matchup: int,
    name: str = "",
    models: Sequence[str] = (),
    seed: int = 0,
) -> AcuteItemsAdded:
    """Add ACUTE items pairing ``conversations`` of different models to the campaign ``slug``
    (a new draft ACUTE campaign if there is none); return what was added.

    Every two models get ``pairs_per_matchup`` conversation pairs in the campaign, counting
    those it already has; ``models`` keeps only those models (all by default). Each pair is
    checked by the protocol (``items_add``, all or nothing).
    """
    if not 1 <= pairs_per_matchup <= 100_000:
        raise InvalidParameters("pairs_per_matchup must be from 1 to 100000.")
    by_model: dict[str, list[Conversation]] = defaultdict(list)
    for conversation in conversations:
        if not models or conversation.model in models:
            by_model[conversation.model].append(conversation)
    missing = sorted(set(models) - set(by_model))
    if missing:
        raise InvalidParameters(f"No usable conversation of: {', '.join(missing)}.")
    if len(by_model) < 2:
        found = ", ".join(sorted(by_model)) or "none"
        raise Conflict(f"ACUTE-Eval needs conversations of two models or more (found: {found}).")
    campaign = campaign_lock_by_slug(slug)
    if campaign is None:
        campaign = campaign_create(
            slug=slug, name=name or "ACUTE-Eval of whole conversations", protocol=AcuteProtocol.name
        )
    elif not isinstance(registry.get(campaign.protocol), AcuteProtocol):
        raise Conflict(f"'{slug}' is a {campaign.protocol} campaign, not an ACUTE-Eval one.")
    taken = _pairs_taken(campaign)
    items, result = [], AcuteItemsAdded(campaign=campaign, added=0)
    for model_a, model_b in itertools.combinations(sorted(by_model), 2):
        have = taken[(model_a, model_b)]
        rng = random.Random(f"{seed}/{model_a}/{model_b}")
        chosen = _matchup_pairs(
            by_model[model_a],
            by_model[model_b],
            wanted=max(0, pairs_per_matchup - len(have)),
            taken=have,
            rng=rng,
        )
        items += [(_item_key(a, b), _payload(a, b)) for a, b in chosen]
        result.matchups[(model_a, model_b)] = len(have) + len(chosen)
        if len(have) + len(chosen) < pairs_per_matchup:
            result.short.append(
                f"{model_a} vs {model_b}: {len(have) + len(chosen)} of {pairs_per_matchup} "
                f"({len(by_model[model_a])} × {len(by_model[model_b])} conversations)"
            )
    result.added = items_add(campaign=campaign, items=items)
    return result


def _pairs_taken(campaign: Campaign) -> defaultdict[tuple[str, str], set[tuple[str, str]]]:
    """Return the conversation pairs the campaign's items already hold, per matchup: each
    matchup's models in name order, its dialogues in the same order."""
    taken: defaultdict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for payload in Item.objects.filter(campaign=campaign, gold__isnull=True).values_list(
        "payload", flat=True
    ):
        pair = (payload["model_a"], payload["model_b"])
        dialogues = (payload.get("dialogue_a", ""), payload.get("dialogue_b", ""))
        if pair[0] > pair[1]:
            pair, dialogues = (pair[1], pair[0]), (dialogues[1], dialogues[0])
        taken[pair].add(dialogues)
    return taken
