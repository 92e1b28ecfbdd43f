"""Decoding parameters, Meena's sample-and-rank and the cross-turn repetition filter.

Pure Python, no Django: backends use it to read the decoding parameters an endpoint was
registered with, and services hash the validated parameters so that two spellings of the same
decoding share their stored generations.

Strategies:

- ``greedy``: the most likely token at every step (deterministic).
- ``sample``: one sample with ``temperature``, ``top_k`` (0 = off) and ``top_p`` (1 = off).
- ``sample_and_rank`` (Meena): ``num_samples`` samples, candidates that repeat an earlier turn
  dropped when ``repetition_filter`` is on, the rest ranked by length-normalised
  log-likelihood; the best one is the response.

Presets (``{"preset": "meena"}``; explicit keys override the preset's values):
``meena`` = sample-and-rank, N = 20, top-k 40, T = 1.0, repetition filter on (PROTOCOLS.md §6).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

STRATEGIES = ("greedy", "sample", "sample_and_rank")
PRESETS: dict[str, dict[str, Any]] = {
    "greedy": {"strategy": "greedy"},
    "meena": {
        "strategy": "sample_and_rank",
        "num_samples": 20,
        "top_k": 40,
        "temperature": 1.0,
        "repetition_filter": True,
    },
}
SAMPLING_KEYS = ("temperature", "top_k", "top_p")
MAX_SAMPLES = 100


@dataclass(frozen=True)
class Candidate:
    """One sampled response and its log-likelihood, for sample-and-rank."""

    text: str
    logprob: float
    n_tokens: int

    @property
    def score(self) -> float:
        """Return the length-normalised log-likelihood used for ranking."""
        return self.logprob / max(self.n_tokens, 1)


@dataclass(frozen=True)
class DecodingParams:
    """Validated decoding parameters (build them with ``decoding_validate``)."""

    strategy: str = "greedy"
    max_new_tokens: int = 40
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    num_samples: int = 1
    repetition_filter: bool = False
    repetition_min_words: int = 5
    seed: int | None = None

    @property
    def do_sample(self) -> bool:
        return self.strategy != "greedy"

    def as_dict(self) -> dict[str, Any]:
        """Return every parameter, defaults included: the canonical form that is hashed."""
        return asdict(self)


def decoding_validate(params: Mapping[str, Any] | None) -> DecodingParams:
    """Return the validated parameters; raise ValueError naming the first bad one.

    Without ``strategy``, any of temperature/top_k/top_p means ``sample`` and ``num_samples``
    above 1 means ``sample_and_rank``; otherwise decoding is greedy.
    """
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ValueError(f"decoding parameters must be a JSON object, not {params!r:.80}")
    values = dict(params)
    preset = values.pop("preset", None)
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown decoding preset {preset!r}; known: {', '.join(PRESETS)}")
        values = {**PRESETS[preset], **values}
    known = set(DecodingParams.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"unknown decoding parameter {unknown[0]!r}; known: preset, {', '.join(sorted(known))}"
        )
    if "strategy" not in values:
        if int(values.get("num_samples", 1) or 1) > 1:
            values["strategy"] = "sample_and_rank"
        elif any(k in values for k in SAMPLING_KEYS):
            values["strategy"] = "sample"
    _check_types(values)
    decoding = DecodingParams(**values)
    _check_ranges(decoding, values)
    return decoding


def _check_types(values: Mapping[str, Any]) -> None:
    kinds: dict[str, tuple[type, ...]] = {
        "strategy": (str,),
        "max_new_tokens": (int,),
        "temperature": (int, float),
        "top_k": (int,),
        "top_p": (int, float),
        "num_samples": (int,),
        "repetition_filter": (bool,),
        "repetition_min_words": (int,),
        "seed": (int, type(None)),
    }
    for key, value in values.items():
        wrong_bool = isinstance(value, bool) and bool not in kinds[key]
        if wrong_bool or not isinstance(value, kinds[key]):
            expected = " or ".join("null" if k is type(None) else k.__name__ for k in kinds[key])
            raise ValueError(f"decoding parameter {key!r} must be {expected}, not {value!r:.80}")


def _check_ranges(d: DecodingParams, given: Mapping[str, Any]) -> None:
    if d.strategy not in STRATEGIES:
        raise ValueError(f"unknown decoding strategy {d.strategy!r}; known: {STRATEGIES}")
    checks = [
        (1 <= d.max_new_tokens <= 4096, "max_new_tokens must be between 1 and 4096"),
        (d.temperature > 0, "temperature must be above 0 (use strategy 'greedy' for T → 0)"),
        (d.top_k >= 0, "top_k must be 0 (off) or more"),
        (0 < d.top_p <= 1, "top_p must be in (0, 1]"),
        (1 <= d.num_samples <= MAX_SAMPLES, f"num_samples must be between 1 and {MAX_SAMPLES}"),
        (d.repetition_min_words >= 2, "repetition_min_words must be at least 2"),
    ]
    for ok, message in checks:
        if not ok:
            raise ValueError(f"bad decoding parameters: {message}")
    if d.strategy == "greedy":
        ignored = [k for k in SAMPLING_KEYS if k in given]
        if ignored or d.num_samples != 1:
            raise ValueError(
                f"greedy decoding takes no {', '.join(ignored) or 'num_samples'}; "
                "use strategy 'sample' or 'sample_and_rank'"
            )
    if d.strategy == "sample" and d.num_samples != 1:
        raise ValueError("num_samples > 1 needs strategy 'sample_and_rank' to pick one of them")
    if d.repetition_filter and d.strategy != "sample_and_rank":
        raise ValueError("the repetition filter needs strategy 'sample_and_rank' (candidates)")


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Split text into lower-cased words, ignoring punctuation (curly apostrophes too)."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    """Return the length of the longest run of consecutive words shared by ``a`` and ``b``."""
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def repeats_earlier_turn(candidate: str, history: Sequence[str], *, min_words: int = 5) -> bool:
    """Say whether ``candidate`` repeats a turn of ``history``.

    A repetition is a run of at least ``min_words`` consecutive words shared with an earlier
    turn, or the whole of an earlier turn said again. Runs are contiguous: a non-contiguous
    common subsequence grows with length alone (function words) and would drop long replies.
    """
    mine = words(candidate)
    if not mine:
        return False
    for turn in history:
        theirs = words(turn)
        if mine == theirs or longest_common_run(mine, theirs) >= min_words:
            return True
    return False


def sample_and_rank(
    candidates: Sequence[Candidate], history: Sequence[str], params: DecodingParams
) -> Candidate:
    """Return the best candidate: repetitions of ``history`` dropped, then the highest
    length-normalised log-likelihood.

    When every candidate repeats an earlier turn the best of them is kept anyway: the bot must
    say something, and an empty turn is worse than a repeated one.
    """
    if not candidates:
        raise ValueError("sample-and-rank needs at least one candidate")
    pool = list(candidates)
    if params.repetition_filter:
        kept = [
            c
            for c in pool
            if c.text.strip()
            and not repeats_earlier_turn(c.text, history, min_words=params.repetition_min_words)
        ]
        pool = kept or pool
    return max(pool, key=lambda c: c.score)
