"""A trained online ranker as a folder: what serving and the ONNX export need, nothing more.

```
RANKER/
  online_ranker.json   format version, SDK version, config, constructor sizes, the Platt
                       calibration, the data fingerprint
  weights.pt           the OnlineRanker state dict (read back with weights_only=True)
  sample.npz           real online inputs (user embedding, recent events, candidates):
                       the batch `hir export --check` compares torch and onnxruntime on
```
Written atomically by `OnlineRankerBundle.save`; `hir ab` writes one for the multi-stage
arm (`multistage_ranker/` in its report folder).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch

from hir_sdk import __version__
from hir_sdk.errors import InputError
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.io.saved_meta import read_saved_meta
from hir_sdk.ranking.calibration import PROBABILITY_FLOOR, PlattScaling
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs, OnlineRanker, OnlineRankerConfig
from hir_sdk.training.checkpoint import load_checkpoint

FORMAT_VERSION = 1
META_FILE = "online_ranker.json"
WEIGHTS_FILE = "weights.pt"
SAMPLE_FILE = "sample.npz"
RECENT = ("item", "action", "age", "mask", "event_hir", "event_hir_found")


@dataclass(frozen=True)
class OnlineInputs:
    """`OnlineRanker.forward`'s inputs for a batch of (request, candidate) rows."""

    user: torch.Tensor  # (B, Du) cached stage-1 embedding
    recent: tuple[torch.Tensor | None, ...]  # item, action, age, mask, hir, hir_found
    cand: CandidateInputs

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"user": self.user.numpy()}
        out.update(
            {k: v.numpy() for k, v in zip(RECENT, self.recent, strict=True) if v is not None}
        )
        out.update(
            {f"cand_{f.name}": getattr(self.cand, f.name).numpy() for f in fields(CandidateInputs)}
        )
        return out

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> OnlineInputs:
        t = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in a.items()}
        cand = CandidateInputs(**{f.name: t[f"cand_{f.name}"] for f in fields(CandidateInputs)})
        return cls(t["user"], tuple(t.get(k) for k in RECENT), cand)


@dataclass
class OnlineRankerBundle:
    ranker: OnlineRanker
    calibration: PlattScaling
    sizes: dict[str, int]  # OnlineRanker's keyword arguments
    sample: OnlineInputs
    fingerprint: str

    def scores(self, inputs: OnlineInputs) -> tuple[np.ndarray, np.ndarray]:
        """(B, 2) click and conversion logits, and (B,) calibrated conversion probabilities,
        as the multi-stage ranker serves them."""
        self.ranker.eval()
        with torch.inference_mode():
            logits = self.ranker(inputs.user, inputs.recent, inputs.cand).numpy()
        p = self.calibration(logits[:, 1].astype(np.float64))
        return logits, np.clip(p, PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        meta = {
            "format_version": FORMAT_VERSION,
            "sdk_version": __version__,
            "config": asdict(self.ranker.config),
            "sizes": self.sizes,
            "calibration": {"a": self.calibration.a, "b": self.calibration.b},
            "fingerprint": self.fingerprint,
        }
        with atomic_output_dir(path, kind="ranker", overwrite=overwrite) as tmp:
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            torch.save(self.ranker.state_dict(), tmp / WEIGHTS_FILE)
            np.savez(tmp / SAMPLE_FILE, **self.sample.arrays())
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> OnlineRankerBundle:
        path = Path(path)
        meta = read_saved_meta(path, META_FILE, "online ranker", FORMAT_VERSION)
        try:
            config = OnlineRankerConfig(**meta["config"])
            ranker = OnlineRanker(config, **meta["sizes"])
            calibration = PlattScaling(
                float(meta["calibration"]["a"]), float(meta["calibration"]["b"])
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"bad online ranker metadata: {err}", file=path / META_FILE) from None
        try:
            ranker.load_state_dict(load_checkpoint(path / WEIGHTS_FILE))
        except RuntimeError as err:
            raise InputError(
                f"weights do not fit the ranker: {err}", file=path / WEIGHTS_FILE
            ) from None
        try:
            with np.load(path / SAMPLE_FILE, allow_pickle=False) as data:
                sample = OnlineInputs.from_arrays({k: data[k] for k in data.files})
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise InputError(
                f"cannot read the sample inputs: {err}", file=path / SAMPLE_FILE
            ) from None
        return cls(
            ranker.eval(), calibration, dict(meta["sizes"]), sample, str(meta["fingerprint"])
        )
