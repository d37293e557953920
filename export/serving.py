"""Serving the exported models with onnxruntime: the same inputs as the torch models.

```python
from hir_sdk.export import load_serving
serving = load_serving("export_dir")          # encoder.onnx, quantizer.onnx, ranker.onnx
z, clusters = serving.encoder.encode(inputs)  # EncoderInputs, as the torch encoder takes
tokens = serving.quantizer.tokens(z)          # (n, M) BoM token ids
logits, p = serving.ranker.score(user, recent, cand)   # OnlineRanker.forward's inputs
```
Sessions use the CUDA provider when onnxruntime has it and a GPU is present, else the
CPU one. Feeds are checked against the contract the file carries (names, dtypes, ranks,
fixed sizes, and one size per named dimension) and a mismatch is one `InputError`
naming the model file and what is wrong, never an onnxruntime stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from hir_sdk.errors import InputError
from hir_sdk.export.encoder_graph import KNOWN_INPUTS, encoder_feeds
from hir_sdk.export.exporter import ENCODER_FILE, QUANTIZER_FILE, RANKER_FILE
from hir_sdk.export.onnx_file import PREFIX, TensorSpec
from hir_sdk.export.ranker_graph import ranker_feeds
from hir_sdk.model.inputs import EncoderInputs
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs

_NUMPY = {"float32": np.float32, "int64": np.int64, "bool": np.bool_}


def providers() -> list[str]:
    """CUDA first when this onnxruntime build has it and a GPU is visible, then CPU."""
    available = ort.get_available_providers()
    wanted = ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in available and torch.cuda.is_available():
        wanted.insert(0, "CUDAExecutionProvider")
    return wanted


class OnnxModel:
    """One exported file in an onnxruntime session, its feeds checked before each run."""

    KIND = ""  # the `hir_sdk.kind` a subclass serves ("" for any)

    def __init__(self, path: str | Path, *, threads: int | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError("exported model not found", file=self.path)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        try:
            self.session = ort.InferenceSession(str(self.path), options, providers=providers())
        except Exception as err:  # onnxruntime raises its own types for bad files
            raise InputError(f"onnxruntime cannot load the model: {err}", file=self.path) from None
        meta = self.session.get_modelmeta().custom_metadata_map
        if PREFIX + "inputs" not in meta:
            raise InputError("not an hir-sdk export (no hir_sdk.inputs metadata)", file=self.path)
        self.meta = {k[len(PREFIX) :]: v for k, v in meta.items() if k.startswith(PREFIX)}
        self.inputs = [TensorSpec.from_json(s) for s in json.loads(self.meta["inputs"])]
        self.outputs = [TensorSpec.from_json(s) for s in json.loads(self.meta["outputs"])]
        self.kind = self.meta.get("kind", "")
        if self.KIND and self.kind != self.KIND:
            raise InputError(f"holds a {self.kind!r} model, not {self.KIND!r}", file=self.path)

    @property
    def provider(self) -> str:
        return self.session.get_providers()[0]

    def check(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """`feeds` as the contract wants them (dtypes cast where safe), or an `InputError`."""
        names = [s.name for s in self.inputs]
        missing = [n for n in names if n not in feeds]
        extra = [n for n in feeds if n not in names]
        if missing or extra:
            raise InputError(
                f"inputs do not match the model: missing {missing}, unexpected {extra}; "
                f"it takes {names}",
                file=self.path,
            )
        sizes: dict[str, tuple[int, str]] = {}
        out = {}
        for spec in self.inputs:
            array = np.asarray(feeds[spec.name])
            if array.ndim != len(spec.shape):
                raise InputError(
                    f"input '{spec.name}' has shape {array.shape}, the model takes {_shape(spec)}",
                    file=self.path,
                )
            for axis, (want, got) in enumerate(zip(spec.shape, array.shape, strict=True)):
                if isinstance(want, int) and want != got:
                    raise InputError(
                        f"input '{spec.name}' has shape {array.shape}, the model takes "
                        f"{_shape(spec)} (axis {axis} must be {want})",
                        file=self.path,
                    )
                if isinstance(want, str):
                    seen = sizes.setdefault(want, (got, spec.name))
                    if seen[0] != got:
                        raise InputError(
                            f"dimension {want} is {seen[0]} in input '{seen[1]}' but {got} "
                            f"in input '{spec.name}'",
                            file=self.path,
                        )
            kind = {"float32": "fiub", "int64": "iub", "bool": "b"}[spec.dtype]
            if array.dtype.kind not in kind:
                raise InputError(
                    f"input '{spec.name}' is {array.dtype}, the model takes {spec.dtype}",
                    file=self.path,
                )
            out[spec.name] = np.ascontiguousarray(array, dtype=_NUMPY[spec.dtype])
        return out

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Checked feeds in, outputs by name out."""
        values = self.session.run(None, self.check(feeds))
        return {spec.name: value for spec, value in zip(self.outputs, values, strict=True)}


def _shape(spec: TensorSpec) -> str:
    return "(" + ", ".join(str(d) for d in spec.shape) + ")"


class EncoderSession(OnnxModel):
    KIND = "encoder"

    def encode(self, x: EncoderInputs) -> tuple[np.ndarray, np.ndarray]:
        """(B, out_dim) embeddings and (B, levels) clusters of a packed batch."""
        out = self.run_encoder(x)
        return out["embedding"], out["clusters"]

    def run_encoder(self, x: EncoderInputs) -> dict[str, np.ndarray]:
        """Every output (embedding, clusters, logits per level) of a packed batch."""
        names = [s.name for s in self.inputs]
        unknown = sorted(set(names) - set(KNOWN_INPUTS))
        if unknown:
            raise InputError(
                f"takes inputs this hir-sdk does not build ({', '.join(unknown)}): it was "
                f"exported by another version (hir_sdk.version {self.meta.get('version')}); "
                "export the run again with `hir export`",
                file=self.path,
            )
        return self.run(encoder_feeds(x, names))


class QuantizerSession(OnnxModel):
    KIND = "quantizer"

    def tokens(self, z: np.ndarray) -> np.ndarray:
        """(n, M) BoM token ids of embeddings `z` (n, D)."""
        return self.run({"embedding": z})["tokens"]


class RankerSession(OnnxModel):
    KIND = "ranker"

    def score(
        self, user: torch.Tensor | np.ndarray, recent: tuple, cand: CandidateInputs
    ) -> tuple[np.ndarray, np.ndarray]:
        """(B, 2) click and conversion logits and (B,) calibrated conversion probabilities."""
        out = self.run(ranker_feeds([s.name for s in self.inputs], user, recent, cand))
        return out["logits"], out["conversion"]


@dataclass(frozen=True)
class Serving:
    encoder: EncoderSession | None
    quantizer: QuantizerSession | None
    ranker: RankerSession | None


def load_serving(folder: str | Path, *, threads: int | None = None) -> Serving:
    """The exported models found in `folder` (an `hir export --out` folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("export folder not found", file=folder)
    found = {
        name: cls(folder / file, threads=threads) if (folder / file).is_file() else None
        for name, cls, file in (
            ("encoder", EncoderSession, ENCODER_FILE),
            ("quantizer", QuantizerSession, QUANTIZER_FILE),
            ("ranker", RankerSession, RANKER_FILE),
        )
    }
    if not any(found.values()):
        raise InputError(
            f"no exported model here ({ENCODER_FILE}, {QUANTIZER_FILE}, {RANKER_FILE})",
            file=folder,
        )
    return Serving(**found)
