"""Parity of the exported models with the torch ones, on real batches.

Float outputs may differ by rounding (the exported graph adds in another order); the
check fails above `TOLERANCE` in max absolute difference. Ids picked by an argmax or a
search over values that agree to rounding are counted, and checked through those values:

- encoder cluster ids: argmaxes of logits, which must agree within the tolerance;
- BoM tokens, against the torch graph `quantizer.onnx` was exported from (`quantizer`)
  and against the numpy quantizer that wrote the index (`bom index`). On real data the
  ids match in all rows but those where two codes reconstruct the vector equally well
  to float precision: there another BLAS rounds a dot product the other way and the
  search continues from the other code (overparametrized codebooks on low-rank
  embeddings have many such ties). After a tie the search follows another path, so a
  differing row's two codes can end further apart than rounding; what is bounded is the
  effect on the whole batch: at most `MAX_TOKEN_MISMATCH` of the rows may differ, and the
  mean over all rows of the gap between the two codes' squared reconstruction errors of
  the (unit-norm) vector must be within the tolerance. A broken export differs in most
  rows and fails both.
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
MAX_TOKEN_MISMATCH = 1e-3  # share of rows whose BoM token ids may differ (ties)


@dataclass(frozen=True)
class Parity:
    model: str
    rows: int
    max_abs_diff: float  # over the float outputs; 0.0 when there are none
    mismatched_rows: int  # rows whose ids differ (checked through max_abs_diff)
    ids: str = ""  # what the ids are, for the report line ("": no ids)
    max_mismatch: float = 1.0  # share of rows whose ids may differ
    measure: str = "max |onnx - torch|"  # what max_abs_diff is, for the report line

    @property
    def ok(self) -> bool:
        return (
            self.max_abs_diff <= TOLERANCE and self.mismatched_rows <= self.max_mismatch * self.rows
        )

    def render(self) -> str:
        ids = f"{self.ids} ids differing in {self.mismatched_rows} rows  " if self.ids else ""
        return (
            f"{self.model:<10} {self.rows:>6} rows  {self.measure} {self.max_abs_diff:.2e}  "
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
    return Parity("encoder", rows, worst, flipped, ids="cluster")


def quantizer_parity(
    quantizer: Quantizer,
    session: QuantizerSession,
    z: np.ndarray,
    tokens: np.ndarray | None = None,
) -> list[Parity]:
    """`quantizer.onnx` against its torch graph and against the numpy quantizer's tokens
    (the same ids, or codes equally good to the tolerance; see the module). Pass the
    `tokens` the numpy quantizer already gave `z` (a snapshot's) to skip encoding again."""
    out = session.tokens(z)
    with torch.no_grad():
        graph = QuantizerGraph(quantizer)(torch.from_numpy(np.array(z))).numpy()
    ref = quantizer.tokens(quantizer.encode(z)) if tokens is None else tokens
    return [
        _token_parity("quantizer", quantizer, z, out, graph),
        _token_parity("bom index", quantizer, z, out, ref),
    ]


def _token_parity(
    name: str, quantizer: Quantizer, z: np.ndarray, a: np.ndarray, b: np.ndarray
) -> Parity:
    """Rows whose tokens differ, and the mean over all rows of the gap between the
    squared reconstruction errors of the two codes (float64; 0 where they agree)."""
    differ = np.flatnonzero((a != b).any(axis=1))
    gap = 0.0
    if len(differ):
        x = z[differ].astype(np.float64)
        errors = [
            np.square(x - quantizer.decode(quantizer.codes(t[differ]))).sum(axis=1) for t in (a, b)
        ]
        gap = float(np.abs(errors[0] - errors[1]).sum() / len(z))
    return Parity(
        name,
        len(z),
        gap,
        len(differ),
        ids="token",
        max_mismatch=MAX_TOKEN_MISMATCH,
        measure="mean |error gap|  ",
    )


def ranker_parity(
    bundle: OnlineRankerBundle, session: RankerSession, inputs: OnlineInputs
) -> Parity:
    """Logits and calibrated probabilities of the online ranker against `ranker.onnx`."""
    logits, p = bundle.scores(inputs)
    out_logits, out_p = session.score(inputs.user, inputs.recent, inputs.cand)
    worst = max(_diff(out_logits, logits), _diff(out_p, p))
    return Parity("ranker", len(p), worst, 0)


def _diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        raise ValueError(f"onnx output {a.shape} vs torch {b.shape}")
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if a.size else 0.0
