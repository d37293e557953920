"""Parity of the exported models with the torch ones, on real batches.

Float outputs may differ by rounding (the exported graph adds in another order); the
check fails above `TOLERANCE` in max absolute difference. BoM token ids of
`quantizer.onnx` must match the torch graph it was exported from exactly: a row whose
tokens differ fails the check. Ids that are argmaxes over values equal to rounding are
counted and shown, and fail only through the values:

- encoder cluster ids (argmaxes of logits);
- BoM tokens against the numpy quantizer that wrote the index (`bom index`): a
  different BLAS rounds the search's dot products differently, and where two codes
  reconstruct a vector equally well to float precision (overfitted codebooks do that)
  either may be found; the line reports how many rows differ and the largest gap in
  squared reconstruction error between the two codes, which must be within tolerance.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from hir_sdk.bom import Quantizer
from hir_sdk.export.quantizer_graph import QuantizerGraph
from hir_sdk.export.serving import EncoderSession, QuantizerSession, RankerSession
from hir_sdk.model import HierarchicalEncoder, Impl
from hir_sdk.model.inputs import EncoderInputs
from hir_sdk.ranking.sequence.ranker_bundle import OnlineInputs, OnlineRankerBundle

TOLERANCE = 1e-4


@dataclass(frozen=True)
class Parity:
    model: str
    rows: int
    max_abs_diff: float  # over the float outputs; 0.0 when there are none
    mismatched_rows: int  # rows whose ids differ
    ids_must_match: bool
    ids: str = "token"  # what the ids are, for the report line

    @property
    def ok(self) -> bool:
        ids_ok = self.mismatched_rows == 0 or not self.ids_must_match
        return self.max_abs_diff <= TOLERANCE and ids_ok

    def render(self) -> str:
        ids = f"{self.ids} ids differing in {self.mismatched_rows} rows  " if self.ids else ""
        return (
            f"{self.model:<10} {self.rows:>6} rows  max |onnx - torch| {self.max_abs_diff:.2e}  "
            f"{ids}{'ok' if self.ok else 'FAILED'}"
        )


def encoder_parity(
    encoder: HierarchicalEncoder, session: EncoderSession, batches: Iterable[EncoderInputs]
) -> Parity:
    """Embeddings and prototype logits of `encoder` (DENSE, eval) against `encoder.onnx`."""
    encoder.eval()
    rows, worst, flipped = 0, 0.0, 0
    for x in batches:
        with torch.no_grad():
            ref = encoder(x, Impl.DENSE)
        out = session.run_encoder(x)
        worst = max(worst, _diff(out["embedding"], ref.embedding.numpy()))
        for level, logits in enumerate(ref.logits):
            worst = max(worst, _diff(out[f"logits_{level}"], logits.numpy()))
        clusters = np.stack([lg.argmax(dim=1).numpy() for lg in ref.logits], axis=1)
        flipped += int((out["clusters"] != clusters).any(axis=1).sum())
        rows += x.batch_size
    return Parity("encoder", rows, worst, flipped, ids_must_match=False, ids="cluster")


def quantizer_parity(
    quantizer: Quantizer, session: QuantizerSession, z: np.ndarray
) -> list[Parity]:
    """`quantizer.onnx` against its torch graph (tokens exactly) and against the numpy
    quantizer's tokens (equal, or equally good codes; see the module)."""
    out = session.tokens(z)
    with torch.no_grad():
        graph = QuantizerGraph(quantizer)(torch.from_numpy(np.array(z))).numpy()
    exact = Parity("quantizer", len(z), 0.0, _rows_differing(out, graph), True)
    ref = quantizer.tokens(quantizer.encode(z))
    differ = np.flatnonzero((out != ref).any(axis=1))
    gap = 0.0
    if len(differ):
        x = z[differ].astype(np.float64)
        errors = [
            np.square(x - quantizer.decode(quantizer.codes(t[differ]))).sum(axis=1)
            for t in (out, ref)
        ]
        gap = float(np.abs(errors[0] - errors[1]).max())
    index = Parity("bom index", len(z), gap, len(differ), ids_must_match=False, ids="token")
    return [exact, index]


def _rows_differing(a: np.ndarray, b: np.ndarray) -> int:
    return int((a != b).any(axis=1).sum())


def ranker_parity(
    bundle: OnlineRankerBundle, session: RankerSession, inputs: OnlineInputs
) -> Parity:
    """Logits and calibrated probabilities of the online ranker against `ranker.onnx`."""
    logits, p = bundle.scores(inputs)
    out_logits, out_p = session.score(inputs.user, inputs.recent, inputs.cand)
    worst = max(_diff(out_logits, logits), _diff(out_p, p))
    return Parity("ranker", len(p), worst, 0, ids_must_match=True, ids="")


def _diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        raise ValueError(f"onnx output {a.shape} vs torch {b.shape}")
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if a.size else 0.0
