"""A study as a Hugging Face dataset: the folder's layout and its card (README.md), no Django.

The folder holds one sub-folder of Parquet files per configuration (``judgments/``,
``dialogues/``, ``items/``, each ``train-00000-of-00001.parquet``) and README.md, the dataset
card: YAML front matter that the Hub and ``datasets.load_dataset(folder)`` read (licence,
language, size, ``configs`` with their ``data_files``, ``dataset_info`` features; no split
sizes, which ``datasets`` wants in bytes of its own Arrow tables), then the study in Markdown.
``annotation.hf_export`` writes the Parquet files and gathers the study's facts from the
database; the card counts rows, workers and items from the files themselves, so its numbers
are the data's (docs/datasets.md, "Hugging Face datasets").
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from corpora.records import DatasetError

# The configurations in the card's order; the first one present is the default.
CONFIGS = {
    "judgments": "one row per item, worker and question: the answer, with the item's payload",
    "dialogues": "one row per utterance of the dialogues the study collected or labeled",
    "items": "one row per item shown to workers (gold checks left out): its payload as JSON",
}
DATA_FILE = "train-00000-of-00001.parquet"

# The licence ids the Hub accepts in a card's ``license`` (huggingface.co/docs/hub/
# repositories-licenses), less "other" and "unknown": a published study names its licence.
HUB_LICENSES = frozenset(
    [
        "apache-2.0",
        "mit",
        "openrail",
        "bigscience-openrail-m",
        "creativeml-openrail-m",
        "bigscience-bloom-rail-1.0",
        "bigcode-openrail-m",
        "afl-3.0",
        "artistic-2.0",
        "bsl-1.0",
        "bsd",
        "bsd-2-clause",
        "bsd-3-clause",
        "bsd-3-clause-clear",
        "c-uda",
        "cc",
        "cc0-1.0",
        "cc-by-2.0",
        "cc-by-2.5",
        "cc-by-3.0",
        "cc-by-4.0",
        "cc-by-sa-3.0",
        "cc-by-sa-4.0",
        "cc-by-nc-2.0",
        "cc-by-nc-3.0",
        "cc-by-nc-4.0",
        "cc-by-nd-4.0",
        "cc-by-nc-nd-3.0",
        "cc-by-nc-nd-4.0",
        "cc-by-nc-sa-2.0",
        "cc-by-nc-sa-3.0",
        "cc-by-nc-sa-4.0",
        "cdla-sharing-1.0",
        "cdla-permissive-1.0",
        "cdla-permissive-2.0",
        "wtfpl",
        "ecl-2.0",
        "epl-1.0",
        "epl-2.0",
        "etalab-2.0",
        "eupl-1.1",
        "eupl-1.2",
        "agpl-3.0",
        "gfdl",
        "gpl",
        "gpl-2.0",
        "gpl-3.0",
        "lgpl",
        "lgpl-2.1",
        "lgpl-3.0",
        "isc",
        "lppl-1.3c",
        "ms-pl",
        "mpl-2.0",
        "odc-by",
        "odbl",
        "openrail++",
        "osl-3.0",
        "postgresql",
        "ofl-1.1",
        "ncsa",
        "unlicense",
        "zlib",
        "pddl",
        "lgpl-lr",
    ]
)

# The Hub's size buckets (``size_categories``): upper bounds and names.
_SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")]
_SIZES += [(1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]

# Arrow types written by the exports → the ``datasets`` Value dtype a card declares.
_DTYPES = {
    pa.string(): "string",
    pa.large_string(): "large_string",
    pa.int64(): "int64",
    pa.int32(): "int32",
    pa.float64(): "float64",
    pa.bool_(): "bool",
    pa.null(): "null",
}


def license_clean(value: str) -> str:
    """Return the Hub's id of the licence ``value`` names (ids are lowercase: ``CC-BY-4.0``
    is ``cc-by-4.0``); raise DatasetError for an id the Hub does not know."""
    licence = value.strip().lower()
    if licence not in HUB_LICENSES:
        raise DatasetError(
            f"Unknown licence {value!r}: give an id the Hugging Face Hub accepts, such as "
            "cc-by-4.0, cc-by-sa-4.0, cc-by-nc-4.0, cc0-1.0, odc-by or apache-2.0 (all of them: "
            "https://huggingface.co/docs/hub/repositories-licenses)."
        )
    return licence


def size_category(rows: int) -> str:
    """Return the Hub's ``size_categories`` bucket of a dataset with ``rows`` rows."""
    return next((name for bound, name in _SIZES if rows < bound), "n>100M")


@dataclass(frozen=True)
class Config:
    """One configuration of the folder: its name, rows, and features (None when a column
    has a type with no plain ``datasets`` dtype: the Hub then reads them from the files)."""

    name: str
    rows: int
    features: list[dict[str, str]] | None


def config_read(folder: Path, name: str) -> Config:
    """Read a configuration's row count and features from its Parquet files' footers."""
    files = sorted((folder / name).glob("train-*.parquet"))
    if not files:
        raise DatasetError(f"{folder / name}: no train-*.parquet file")
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    schema = pq.read_schema(files[0])
    features: list[dict[str, str]] | None = [
        {"name": field.name, "dtype": _DTYPES.get(field.type, "")} for field in schema
    ]
    if features and any(not f["dtype"] for f in features):
        features = None
    return Config(name, rows, features)


def configs_read(folder: Path) -> list[Config]:
    """Return the folder's configurations present, in the card's order."""
    return [config_read(folder, name) for name in CONFIGS if (folder / name).is_dir()]


@dataclass(frozen=True)
class Question:
    """A question workers answered, with its answers (value and label)."""

    key: str
    text: str
    choices: Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Study:
    """What the card says of a study beyond its files (``annotation.hf_export`` reads it)."""

    slug: str
    name: str
    protocol: str
    protocol_title: str
    questions: Sequence[Question]
    language: str
    licence: str  # a Hub id (license_clean)
    consent_version: str  # "" when the study had no consent step
    consents: Mapping[str, int]  # workers who agreed, per consent version
    agreement: pd.DataFrame | None  # the report's agreement table, None if it has none
    collected: tuple[str, str] | None  # first and last day (UTC), None if nothing was
    include_flagged: bool
    withdrawal: str  # "keep" or "drop": what happens to a withdrawn worker's judgments
    task_categories: Sequence[str]
    citation: str  # BibTeX of the platform (cff_bibtex)


def cff_bibtex(text: str) -> str:
    """Return a BibTeX ``@software`` entry for a CITATION.cff file's text."""
    cff = yaml.safe_load(text)
    authors = " and ".join(
        a.get("name") or f"{a.get('family-names', '')}, {a.get('given-names', '')}"
        for a in cff.get("authors", [])
    )
    fields = {
        "title": cff["title"],
        "author": f"{{{authors}}}" if len(cff.get("authors", [])) == 1 else authors,
        "version": cff.get("version", ""),
        "year": str(cff.get("date-released", ""))[:4],
        "license": cff.get("license", ""),
    }
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields.items() if v)
    return f"@software{{evalsite,\n{body}\n}}"


def card_write(folder: Path, study: Study) -> Path:
    """Write README.md, the dataset card of the configurations in ``folder``; return it."""
    configs = configs_read(folder)
    path = folder / "README.md"
    path.write_text(card_text(folder, study, configs), encoding="utf-8")
    return path


def card_text(folder: Path, study: Study, configs: Sequence[Config]) -> str:
    """Return the card: the YAML front matter, then the study in Markdown."""
    header = yaml.safe_dump(_front_matter(study, configs), sort_keys=False, allow_unicode=True)
    names = {c.name for c in configs}
    parts = [
        f"# {_inline(study.name)}\n\n"
        f"Collected with evalsite, a platform for crowdsourced evaluation of dialogue "
        f"models, in the study "
        f"`{study.slug}`, protocol `{study.protocol}`: {_inline(study.protocol_title)}.",
        _data_section(study, configs),
        _protocol_section(study),
        _workers_section(folder, study, names),
        _agreement_section(study.agreement),
        _privacy_section(study),
        f"## Licence\n\n`{study.licence}`, as the researchers chose it for this export.",
        "## Citation\n\nThe data were collected with evalsite; cite it as\n\n"
        f"```bibtex\n{study.citation}\n```",
    ]
    return f"---\n{header}---\n\n" + "\n\n".join(parts) + "\n"


def _front_matter(study: Study, configs: Sequence[Config]) -> dict[str, Any]:
    largest = max((c.rows for c in configs), default=0)
    front: dict[str, Any] = {
        "license": study.licence,
        "language": [study.language],
        "pretty_name": study.name,
        "size_categories": [size_category(largest)],
        "task_categories": list(study.task_categories),
        "tags": ["human-evaluation", "crowdsourcing", "evalsite", study.protocol],
        "configs": [
            {
                "config_name": c.name,
                "data_files": [{"split": "train", "path": f"{c.name}/train-*.parquet"}],
                **({"default": True} if n == 0 else {}),
            }
            for n, c in enumerate(configs)
        ],
    }
    infos = [
        {"config_name": c.name, "features": c.features} for c in configs if c.features is not None
    ]
    if infos:
        front["dataset_info"] = infos
    return front


def _data_section(study: Study, configs: Sequence[Config]) -> str:
    rows = [(f"`{c.name}`", f"{c.rows:,}", CONFIGS[c.name]) for c in configs]
    first = configs[0].name if configs else "judgments"
    return (
        "## Data\n\n"
        + _table(("configuration", "rows", "what"), rows)
        + "\n\n```python\nfrom datasets import load_dataset\n\n"
        f'data = load_dataset("ORG/NAME", "{first}", split="train")\n```\n\n'
        "`payload`, `value`, `presentation`, `annotations` and `metadata` hold JSON text where "
        "their values are not plain text or numbers; `created_at` is ISO 8601 in UTC; `rater` "
        "(judgments) and `worker` (dialogues) are workers' pseudonyms."
    )


def _protocol_section(study: Study) -> str:
    text = f"## Protocol\n\n{_inline(study.protocol_title)} (`{study.protocol}`)."
    if not study.questions:
        return text + " Workers answered no per-item questions; see the dialogues."
    rows = [
        (f"`{q.key}`", q.text, "; ".join(f"`{v}` = {label}" for v, label in q.choices))
        for q in study.questions
    ]
    return text + "\n\n" + _table(("question", "asked", "answers"), rows)


def _workers_section(folder: Path, study: Study, names: set[str]) -> str:
    lines = ["## Workers and consent", ""]
    if "judgments" in names:
        judged = pd.read_parquet(folder / "judgments", columns=["item", "rater"])
        per_item = judged.groupby("item")["rater"].nunique()
        low, high = per_item.min(), per_item.max()
        lines.append(
            f"- {len(judged):,} answers (judgments) by {judged['rater'].nunique():,} workers on "
            f"{len(per_item):,} items; workers per item: {low if low == high else f'{low}–{high}'}"
            f" (mean {per_item.mean():.2f})."
        )
    if "dialogues" in names:
        said = pd.read_parquet(folder / "dialogues", columns=["dialogue", "worker"])
        writers = said.loc[said["worker"] != "", "worker"].nunique()
        lines.append(
            f"- {said['dialogue'].nunique():,} dialogues, {len(said):,} utterances, "
            f"{writers:,} workers among their speakers."
        )
    if study.collected:
        lines.append(f"- Collected from {study.collected[0]} to {study.collected[1]} (UTC).")
    if study.consent_version:
        agreed = ", ".join(f"version {v}: {n:,} workers" for v, n in study.consents.items())
        lines.append(
            f"- Consent: workers agreed to the study's consent form, version "
            f"`{study.consent_version}` now ({agreed or 'no consent recorded'})."
        )
    else:
        lines.append("- Consent: the study had no consent step on evalsite.")
    return "\n".join(lines)


def _agreement_section(agreement: pd.DataFrame | None) -> str:
    title = "## Inter-rater agreement\n\n"
    if agreement is None or agreement.empty:
        return title + "The protocol's report has no inter-rater agreement for this study."
    rows = [tuple(_number(v) for v in row) for row in agreement.itertuples(index=False)]
    return (
        title
        + "From the protocol's report (`manage.py report`: the crowd's judgments, soft-blocked "
        "workers' left out), with its 95% intervals (`ci_low`–`ci_high`):\n\n"
        + _table(tuple(agreement.columns), rows)
    )


def _privacy_section(study: Study) -> str:
    left_out = "LLM judges' judgments and gold (attention) checks are left out"
    left_out += (
        "; soft-blocked workers' judgments are in, marked `flagged`"
        if study.include_flagged
        else ", and so are soft-blocked workers' judgments"
    )
    withdrawn = (
        "kept, anonymous" if study.withdrawal == "keep" else "left out of reports and exports"
    )
    return (
        "## Workers' privacy\n\n"
        "Workers appear only under a pseudonym: `W` and 12 random hexadecimal digits, drawn "
        "when evalsite first saw the worker and stored, never derived from their crowd "
        "provider's id (an MTurk or Prolific id), which is in no file here. One worker keeps "
        "one pseudonym in every study of the same evalsite site. Texts workers wrote are as "
        "they wrote them (Parquet keeps raw text; no spreadsheet quoting); where a source "
        "was de-identified, only each replacement and its type remain, never the original. "
        f"A worker who withdrew had their texts erased; their judgments are {withdrawn}. "
        f"{left_out}."
    )


def _number(value: Any) -> Any:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.3f}"
    return value


def _inline(text: Any) -> str:
    """One Markdown table cell or line: no HTML, no line breaks, no column separator."""
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(_inline(h) for h in header) + " |"]
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(_inline(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
