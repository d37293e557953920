"""A fitted multi-stage ranker in a folder, and back: what the A/B's `multistage` arm
saves (`hir_sdk.evaluation.rankers.save_ranker`).

```
FOLDER/
  multistage.json   format version, SDK version, the MultiStageConfig, the online
                    ranker's sizes, the Platt calibration, the per-epoch log, the dense
                    scaler's columns, the graph's fingerprint
  weights.pt        {"user_model": state dict, "ranker": state dict}
  scaler.npz        the dense scaler's missing-column indices, means, deviations and
                    piecewise-linear bin edges
```
The graph and the HIR snapshots are inputs, not state: the restored ranker reads the ones
it is given, and refuses a graph other than the one it was fitted on (by fingerprint), so
its predictions are those of the ranker that was saved.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hir_sdk import __version__
from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.io.saved_meta import read_saved_meta
from hir_sdk.ranking.calibration import PlattScaling
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.sequence.dense_inputs import DenseScaler
from hir_sdk.ranking.sequence.multistage import MultiStageConfig, MultiStageRanker
from hir_sdk.ranking.sequence.online_ranker import OnlineRankerConfig
from hir_sdk.ranking.sequence.user_model import UserModelConfig
from hir_sdk.training.checkpoint import load_checkpoint

FORMAT_VERSION = 1
META_FILE = "multistage.json"
WEIGHTS_FILE = "weights.pt"
SCALER_FILE = "scaler.npz"


def save_multistage(ranker: MultiStageRanker, folder: Path) -> None:
    """Write the fitted `ranker` into the existing `folder` (see the module)."""
    if ranker.ranker is None or ranker.user_model is None or ranker.scaler is None:
        raise RuntimeError("multistage: save before fit")
    meta = {
        "format_version": FORMAT_VERSION,
        "sdk_version": __version__,
        "config": asdict(ranker.config),
        "sizes": ranker.sizes,
        "calibration": {"a": ranker.calibration.a, "b": ranker.calibration.b},
        "history_log": ranker.history_log,
        "dense_columns": ranker.scaler.columns,
        "fingerprint": ranker.graph.fingerprint,
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    weights = {"user_model": ranker.user_model.state_dict(), "ranker": ranker.ranker.state_dict()}
    torch.save(weights, folder / WEIGHTS_FILE)
    scaler = ranker.scaler
    np.savez(
        folder / SCALER_FILE,
        missing=scaler.missing,
        mean=scaler.mean,
        std=scaler.std,
        edges=scaler.edges,
    )


@dataclass(frozen=True)
class SavedMultiStage:
    """What `save_multistage` wrote, read back and checked; `ranker` joins it to the data."""

    folder: Path
    meta: dict[str, Any]
    config: MultiStageConfig
    weights: dict[str, dict[str, torch.Tensor]]
    scaler: dict[str, np.ndarray]

    @classmethod
    def read(cls, folder: str | Path) -> SavedMultiStage:
        folder = Path(folder)
        meta = read_saved_meta(folder, META_FILE, "multi-stage ranker", FORMAT_VERSION)
        try:
            raw = dict(meta["config"])
            config = MultiStageConfig(
                **{
                    **raw,
                    "user_model": UserModelConfig(**raw["user_model"]),
                    "ranker": OnlineRankerConfig(**raw["ranker"]),
                }
            )
            keys = ("sizes", "calibration", "history_log", "dense_columns", "fingerprint")
            missing = [key for key in keys if key not in meta]
            if missing:
                raise KeyError(missing)
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"bad multi-stage ranker metadata: {err!r}", file=folder / META_FILE
            ) from None
        weights = load_checkpoint(folder / WEIGHTS_FILE)
        if not isinstance(weights, dict) or set(weights) != {"user_model", "ranker"}:
            raise InputError(
                "not the multi-stage ranker's weights (user_model, ranker)",
                file=folder / WEIGHTS_FILE,
            )
        try:
            with np.load(folder / SCALER_FILE, allow_pickle=False) as data:
                scaler = {k: data[k] for k in ("missing", "mean", "std")}
                if "edges" in data:  # written since the piecewise-linear encoding
                    scaler["edges"] = data["edges"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise InputError(
                f"cannot read the dense scaler: {err}", file=folder / SCALER_FILE
            ) from None
        return cls(folder, meta, config, weights, scaler)

    def ranker(self, graph: TemporalGraph, hir: HirLookup | None) -> MultiStageRanker:
        """The saved ranker, reading `graph` (the one it was fitted on) and `hir`."""
        if graph.fingerprint != self.meta["fingerprint"]:
            raise InputError(
                "the multi-stage ranker was fitted on another graph (fingerprint "
                f"{self.meta['fingerprint']}, this graph's {graph.fingerprint})",
                file=self.folder / META_FILE,
            )
        sizes = {k: int(v) for k, v in self.meta["sizes"].items()}
        hir_dim = hir.dim if hir is not None else 0
        if hir_dim != sizes.get("hir_dim"):
            raise InputError(
                f"the multi-stage ranker was fitted with HIR embeddings of width "
                f"{sizes.get('hir_dim')}, and is given width {hir_dim}",
                file=self.folder / META_FILE,
            )
        model = MultiStageRanker(graph, hir, self.config)
        try:
            model.make_stages(sizes)
            model.user_model.load_state_dict(self.weights["user_model"])
            model.ranker.load_state_dict(self.weights["ranker"])
        except (KeyError, TypeError, RuntimeError) as err:
            raise InputError(
                f"the weights do not fit the saved sizes: {err}", file=self.folder / WEIGHTS_FILE
            ) from None
        model.user_model.eval()
        model.ranker.eval()
        model.scaler = DenseScaler.restore(
            list(self.meta["dense_columns"]),
            self.scaler["missing"],
            self.scaler["mean"],
            self.scaler["std"],
            self.scaler.get("edges"),
        )
        calibration = self.meta["calibration"]
        model.calibration = PlattScaling(float(calibration["a"]), float(calibration["b"]))
        model.history_log = list(self.meta["history_log"])
        return model
