"""Studies as files: a campaign's whole design in one YAML or JSON file, and back.

A study file names the protocol, every setting of the one settings schema
(``campaign_settings.SETTINGS``), the protocol's parameters, the study texts
(``study_pages.STUDY_FIELDS``), the owner by username, and where the items come from: files
beside it in the formats ``add_items`` reads (contexts answered by registered models and/or a
file of responses, items JSONL, gold JSONL, training JSONL) or an imported data set.
docs/datasets.md, "Studies as files", shows one.

``study_read`` parses and checks the file (every key, every setting, the parameters, the
texts, that the owner, the files and the models exist) into a ``Study``; ``study_create``
then creates the campaign and its items through the services, in one transaction: any error
names the key or the file and line, and nothing is created. ``study_export`` writes a
campaign back as such a file with its items, gold and training items as JSONL beside it, so
that ``study_create`` of the export re-creates an equal campaign.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.campaign_settings import SETTINGS, settings_clean
from annotation.items import campaign_items_from_dataset, campaign_items_from_responses
from annotation.models import Campaign, Dataset, Item, TrainingItem
from annotation.protocols import DialogueItems, registry
from annotation.services import (
    campaign_create,
    campaign_settings_update,
    items_add,
    training_items_add,
)
from annotation.study_pages import STUDY_FIELDS, study_clean
from corpora.limits import STUDY_FILE_MAX_BYTES, yaml_load
from corpora.readers import (
    read_contexts,
    read_gold_lines,
    read_jsonl_objects,
    read_responses,
    read_training_lines,
)
from corpora.records import CorpusError
from evalsite.errors import AnnotationError, InvalidParameters
from modelhub.models import ModelEndpoint

# The top-level keys of a study file.
KEYS = ("slug", "name", "protocol", "owner", "settings", "parameters", "study", "items")
# The keys of its ``items`` mapping.
ITEM_KEYS = ("contexts", "models", "responses", "max_turns", "file", "gold", "training")
DATASET_KEYS = ("name", "split", "limit")
FORMAT_VERSION = 1
# The settings ``campaign_create`` takes itself; the rest go through ``campaign_settings_update``.
_WORK = ("redundancy", "items_per_assignment", "lease_seconds")


class StudyFileError(InvalidParameters):
    """A study file that cannot be used: the message names the key, or the file and line."""


@dataclass(frozen=True)
class Study:
    """A study file read and checked: what ``study_create`` creates."""

    path: Path
    slug: str
    name: str
    protocol: str
    owner: str | None
    settings: dict[str, Any]
    parameters: dict[str, Any]
    study: dict[str, str]
    contexts: Path | None = None
    models: tuple[str, ...] = ()
    responses: Path | None = None
    max_turns: int = 3
    items_file: Path | None = None
    gold: Path | None = None
    training: Path | None = None
    dataset: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Created:
    """What ``study_create`` made: the campaign and how many items of each kind."""

    campaign: Campaign
    items: int
    gold: int
    training: int


# --- reading -----------------------------------------------------------------------------------


def study_load(path: Path) -> dict[str, Any]:
    """Return the study file's mapping (YAML, or JSON for ``.json``); raise StudyFileError.

    The file is bounded before it is parsed (``corpora.limits``): its size, and for YAML the
    aliases, what they expand to and the nesting depth; JSON nested past the parser's stack
    is refused too."""
    try:
        if path.stat().st_size > STUDY_FILE_MAX_BYTES:
            raise StudyFileError(
                f"{path.name}: a study file is at most {STUDY_FILE_MAX_BYTES // 2**20} MB."
            )
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise StudyFileError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise StudyFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml_load(text)
    except json.JSONDecodeError as exc:
        raise StudyFileError(
            f"{path.name}, line {exc.lineno}: not valid JSON ({exc.msg})"
        ) from None
    except RecursionError:
        raise StudyFileError(f"{path.name}: not valid JSON (nested too deeply)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise StudyFileError(f"{path.name}{where}: {problem}") from None
    if not isinstance(data, dict):
        raise StudyFileError(f"{path.name}: a study file is a mapping of {', '.join(KEYS)}.")
    return data


def study_read(path: Path, *, slug: str | None = None, owner: str | None = None) -> Study:
    """Read and check a study file; ``slug`` and ``owner`` override the file's.

    Checks everything that can be checked before writing: unknown keys, the settings, the
    protocol and its parameters, the study texts, the owner, the item files and the models
    named. Raise StudyFileError naming the key.
    """
    data = study_load(path)
    where = path.name
    unknown = sorted(set(map(str, data)) - set(KEYS) - {"version"})
    if unknown:
        raise StudyFileError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(KEYS)}.")
    if data.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        raise StudyFileError(f"{where}: version: this evalsite reads version {FORMAT_VERSION}.")
    slug = slug or _text(data, "slug", where, required=True)
    protocol = _text(data, "protocol", where, required=True)
    try:
        proto = registry.get(protocol)
    except KeyError as exc:
        raise StudyFileError(f"{where}: protocol: {exc.args[0]}") from None
    settings = _section(data, "settings", where)
    try:
        cleaned = settings_clean({k: _money(k, v) for k, v in settings.items()})
    except InvalidParameters as exc:
        raise StudyFileError(_named(where, "settings", exc)) from None
    parameters = _section(data, "parameters", where)
    try:
        parameters = proto.clean_parameters(parameters)
    except InvalidParameters as exc:
        raise StudyFileError(_named(where, "parameters", exc)) from None
    try:
        texts = study_clean(_section(data, "study", where))
    except InvalidParameters as exc:
        raise StudyFileError(_named(where, "study", exc)) from None
    owner = owner if owner is not None else _text(data, "owner", where)
    if owner and not get_user_model().objects.filter(username=owner).exists():
        raise StudyFileError(f"{where}: owner: no user called {owner!r}.")
    study = Study(
        path=path,
        slug=slug,
        name=_text(data, "name", where) or slug,
        protocol=protocol,
        owner=owner or None,
        settings=cleaned,
        parameters=parameters,
        study=texts,
    )
    return _items_read(study, _section(data, "items", where))


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise StudyFileError(f"{where}: {key}: give it as non-empty text.")
    return value.strip()


def _section(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StudyFileError(f"{where}: {key}: must be a mapping.")
    return {str(k): v for k, v in value.items()}


def _money(name: str, value: Any) -> Any:
    """Take a YAML number (``reward: 0.50`` reads as a float) as the amount it spells."""
    bound = SETTINGS.get(name)
    if bound is not None and bound.kind == "money" and isinstance(value, float):
        return repr(value)
    return value


def _named(where: str, section: str, exc: InvalidParameters) -> str:
    """Name the section's key(s) the error is about."""
    if exc.fields:
        return "; ".join(f"{where}: {section}.{k}: {v}" for k, v in exc.fields.items())
    return f"{where}: {section}: {exc.message}"


def _items_read(study: Study, items: dict[str, Any]) -> Study:
    where = f"{study.path.name}: items"
    unknown = sorted(set(items) - set(ITEM_KEYS) - {"dataset"})
    if unknown:
        raise StudyFileError(
            f"{where}: unknown key {unknown[0]!r}; known: {', '.join((*ITEM_KEYS, 'dataset'))}."
        )
    paths = {
        key: _file(study.path, items[key], f"{where}.{key}")
        for key in ("contexts", "responses", "file", "gold", "training")
        if items.get(key) is not None
    }
    models = items.get("models") or []
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, list) or not all(isinstance(m, str) and m.strip() for m in models):
        raise StudyFileError(f"{where}.models: a list of registered models' names.")
    models = [m.strip() for m in models]
    known = set(ModelEndpoint.objects.filter(name__in=models).values_list("name", flat=True))
    missing = [m for m in models if m not in known]
    if missing:
        raise StudyFileError(
            f"{where}.models: no registered model called {missing[0]!r} (see register_model)."
        )
    if bool(models or "responses" in paths) != ("contexts" in paths):
        raise StudyFileError(f"{where}: contexts go with models and/or responses.")
    max_turns = items.get("max_turns", 3)
    if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
        raise StudyFileError(f"{where}.max_turns: a whole number, at least 1.")
    dataset = _dataset(items.get("dataset"), f"{where}.dataset")
    protocol = registry.get(study.protocol)
    if dataset and not isinstance(protocol, DialogueItems):
        raise StudyFileError(
            f"{where}.dataset: {protocol.title} items are not built from an imported data set's "
            "dialogues (emotion labeling is); give items as files instead."
        )
    return replace(
        study,
        contexts=paths.get("contexts"),
        models=tuple(models),
        responses=paths.get("responses"),
        max_turns=max_turns,
        items_file=paths.get("file"),
        gold=paths.get("gold"),
        training=paths.get("training"),
        dataset=dataset,
    )


def _file(study_path: Path, value: Any, where: str) -> Path:
    """Return the file ``value`` names, relative to the study file's folder."""
    if not isinstance(value, str) or not value.strip():
        raise StudyFileError(f"{where}: a file name, relative to the study file.")
    path = (study_path.parent / value.strip()).resolve()
    if not path.is_file():
        raise StudyFileError(f"{where}: no file {value.strip()!r} beside the study file.")
    return path


def _dataset(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise StudyFileError(f"{where}: a data set's name, or {{name, split, limit}}.")
    unknown = sorted(set(value) - set(DATASET_KEYS))
    if unknown:
        raise StudyFileError(f"{where}: unknown key {unknown[0]!r}.")
    split, limit = value.get("split", ""), value.get("limit")
    if not isinstance(split, str):
        raise StudyFileError(f"{where}.split: a split's name (train, valid, test).")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise StudyFileError(f"{where}.limit: a whole number of dialogues, at least 1.")
    if not Dataset.objects.filter(name=value["name"]).exists():
        raise StudyFileError(f"{where}: no data set {value['name']!r}; import it first.")
    # The keywords of ``campaign_items_from_dataset`` (the file says ``name``).
    return {"dataset": value["name"], "split": split, "limit": limit}


# --- creating ----------------------------------------------------------------------------------


@transaction.atomic
def study_create(*, study: Study) -> Created:
    """Create the study's campaign (a draft) and its items, all or nothing.

    Everything goes through the services (``campaign_create``, ``campaign_settings_update``,
    ``items_add``, ``training_items_add``, ``campaign_items_from_responses``); an error names
    the key or the file and line, and the transaction leaves nothing behind.
    """
    owner = get_user_model().objects.get(username=study.owner) if study.owner else None
    work = {k: study.settings.get(k) for k in _WORK}
    try:
        campaign = campaign_create(
            slug=study.slug,
            name=study.name,
            protocol=study.protocol,
            parameters=study.parameters,
            owner=owner,
            study=study.study,
            **{k: v for k, v in work.items() if v is not None},
        )
        rest = {k: v for k, v in study.settings.items() if k not in work}
        if rest:
            campaign_settings_update(campaign=campaign, values=rest)
    except AnnotationError as exc:
        raise StudyFileError(f"{study.path.name}: {exc.message}") from None
    items = gold = training = 0
    if study.contexts is not None:
        items += _from(study.contexts, lambda: _contexts(campaign, study))
    if study.dataset:
        items += _from(
            study.path,
            lambda: campaign_items_from_dataset(campaign=campaign, **study.dataset),
            "items.dataset",
        )
    if study.items_file is not None:
        path = study.items_file
        items += _from(
            path,
            lambda: items_add(
                campaign=campaign,
                items=[
                    (r["key"], r["payload"]) for r in read_jsonl_objects(path, ("key", "payload"))
                ],
            ),
        )
    if study.gold is not None:
        path_gold = study.gold
        gold = _from(
            path_gold, lambda: items_add(campaign=campaign, items=read_gold_lines(path_gold))
        )
    if study.training is not None:
        path_training = study.training
        training = _from(
            path_training,
            lambda: training_items_add(campaign=campaign, items=read_training_lines(path_training)),
        )
    return Created(campaign=campaign, items=items, gold=gold, training=training)


def _contexts(campaign: Campaign, study: Study) -> int:
    assert study.contexts is not None
    contexts = read_contexts(study.contexts, max_turns=study.max_turns)
    responses = read_responses(study.responses) if study.responses else None
    built = campaign_items_from_responses(
        campaign=campaign, contexts=contexts, models=study.models, responses=responses
    )
    return built.added


def _from(path: Path, add: Any, key: str = "") -> int:
    """Run ``add``, naming the file (or key) in any error it raises."""
    try:
        added: int = add()
    except CorpusError as exc:
        raise StudyFileError(str(exc)) from None  # it names the file and line
    except AnnotationError as exc:
        raise StudyFileError(f"{key or path.name}: {exc.message}") from None
    return added


# --- exporting ---------------------------------------------------------------------------------


def study_export(*, campaign: Campaign, folder: Path, fmt: str = "yaml") -> list[Path]:
    """Write the campaign as a study file ``<slug>.yaml`` (or ``.json``) in ``folder``, with
    its items, gold and training items as JSONL beside it; return the files written.

    Items are written as they are stored (key and payload), so ``study_create`` of the file
    re-creates an equal campaign (a draft; the lifecycle, workers and judgments stay behind).
    """
    folder.mkdir(parents=True, exist_ok=True)
    slug = campaign.slug
    settings = {name: _plain(getattr(campaign, name)) for name in SETTINGS}
    data: dict[str, Any] = {
        "version": FORMAT_VERSION,
        "slug": slug,
        "name": campaign.name,
        "protocol": campaign.protocol,
    }
    if campaign.owner is not None:
        data["owner"] = campaign.owner.get_username()
    data |= {
        "settings": settings,
        "parameters": campaign.parameters,
        "study": {name: getattr(campaign, name) for name in STUDY_FIELDS},
    }
    written: list[Path] = []
    files: dict[str, Any] = {}
    plain = Item.objects.filter(campaign=campaign, gold__isnull=True).order_by("key")
    gold = Item.objects.filter(campaign=campaign, gold__isnull=False).order_by("key")
    training = TrainingItem.objects.filter(campaign=campaign).order_by("position")
    rows = {
        "file": ({"key": k, "payload": p} for k, p in plain.values_list("key", "payload")),
        "gold": (
            {"key": k, "payload": p, "gold": g} | ({"check": "attention"} if a else {})
            for k, p, g, a in gold.values_list("key", "payload", "gold", "attention")
        ),
        "training": (
            {"key": k, "payload": p, "answers": e, "explanation": x}
            for k, p, e, x in training.values_list("key", "payload", "expected", "explanation")
        ),
    }
    for key, records in rows.items():
        name = f"{slug}.{'items' if key == 'file' else key}.jsonl"
        count = _jsonl_write(folder / name, records)
        if count:
            files[key] = name
            written.append(folder / name)
        else:
            (folder / name).unlink()
    if files:
        data["items"] = files
    path = folder / f"{slug}.{'json' if fmt == 'json' else 'yaml'}"
    if fmt == "json":
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        path.write_text(text, encoding="utf-8")
    return [path, *written]


def _plain(value: Any) -> Any:
    """Return a setting as the file writes it: money as text ("0.50"), the rest as is."""
    return str(value) if isinstance(value, Decimal) else value


def _jsonl_write(path: Path, records: Any) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
