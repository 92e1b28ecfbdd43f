"""The demo's LLM judge (docs/modelhub.md, "Judges"): a tiny GPT-2 built locally judges the
demo's Likert and A/B campaigns by constrained choice, and the judge–human agreement report
is printed and written beside the crowd's reports.

The model is randomly initialised, never trained and never downloaded: seconds to build and
to judge, with no network. Whatever it agrees with the crowd on is an accident of its random
weights (it may well prefer short replies), and its A/B answers follow the position shown:
the demo shows how a judge is run, stored apart from the crowd and measured, not a good
judge. A real one is any registered model (``openai_http`` for a served LLM).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from django.conf import settings

from annotation.models import Campaign
from evalstats.reports import report_text, report_write
from judges.prompts import JudgeTemplate
from judges.selectors import campaign_judge_report
from judges.services import judge_start
from modelhub.models import GenerationJob, ModelEndpoint
from modelhub.services import endpoint_register

JUDGE = "tiny-judge"
JUDGED = ("demo-likert", "demo-ab")  # the demo's response campaigns: ratings and A/B
# The judged campaigns' answers and the words of the prompts' questions: without them in its
# vocabulary every option would be the same unknown token, and a tie is never guessed.
_VOCABULARY = [
    "1 2 3 4 5 first second both neither yes no",
    "question answer rate the last response compare the two responses conversation",
]
DEMO_BOOT = 200  # resamples of the demo report's intervals: seconds, not minutes
# A short template of the demo's own (a versioned template, as ``judge --template`` reads):
# the tiny model reads the last 128 tokens, so the item comes last, after the questions.
TEMPLATE = JudgeTemplate(version="demo-terse-1", text="{questions}\n\n{item}")


def _judge_endpoint(texts: Sequence[str]) -> ModelEndpoint | None:
    """Build the tiny judge once (var/models/tiny-judge) and register it; None without torch."""
    folder = settings.DATA_DIR / "models" / JUDGE
    if not (folder / "config.json").is_file():
        try:
            from modelhub.tiny import tiny_model_build

            building = folder.with_name(folder.name + ".building")
            tiny_model_build(building, texts=[*texts, *_VOCABULARY], positions=512, seed=1)
            building.rename(folder)
        except (ImportError, OSError, RuntimeError, ValueError):
            return None
    return endpoint_register(
        name=JUDGE,
        backend="hf_local",
        config={"path": str(folder), "batch_size": 64, "max_context_tokens": 128},
        notes="The demo's judge: a tiny randomly initialised, untrained GPT-2 (2 layers, "
        "width 32) choosing answers by log-likelihood. A demonstration, not a judge.",
    )


def judges_demo(
    *, campaigns: Sequence[Campaign], out: Path, write: Callable[[str], object]
) -> list[Path]:
    """Judge the demo's response campaigns (Likert, A/B) with the tiny judge; print and write
    each judge–human agreement report; return the files written."""
    judged = [c for c in campaigns if c.slug in JUDGED]
    texts = [
        text
        for campaign in judged
        for payload in campaign.items.values_list("payload", flat=True)
        for text in [*payload.get("context", []), payload.get("response", "")]
    ]
    endpoint = _judge_endpoint(texts)
    if endpoint is None:
        write("The demo runs without its LLM judge (transformers could not build the model).")
        return []
    written: list[Path] = []
    for campaign in judged:
        write(
            f"LLM judge on {campaign.slug}: {JUDGE}, a tiny untrained GPT-2 built locally, "
            "choosing each answer by log-likelihood: it shows how a judge runs and is measured; "
            "whatever it agrees on is by accident …"
        )
        job = judge_start(campaign=campaign, endpoint=endpoint, template=TEMPLATE, batch_size=64)
        job.refresh_from_db()
        if job.status != GenerationJob.Status.DONE:
            write(f"  the judge job is {job.status}: {job.error or 'queued for a worker'}")
            continue
        report = campaign_judge_report(campaign, n_boot=DEMO_BOOT, seed=0, level=0.95)
        write(report_text(report, max_rows=10))
        for path in report_write(report, out, stem=f"{campaign.slug}_judges"):
            written.append(path)
            write(f"wrote {path}")
    return written
