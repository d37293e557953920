"""A fitted quantizer's encoder as a torch module: embedding (n, D) -> BoM token ids (n, M).

The same search as `Quantizer.encode`, written with the ops ONNX has, in the same order
of float operations, so that token ids match wherever rounding does not decide between
equally good codes (`hir export --check` counts the rows that differ and checks that
their codes are equally good, see `hir_sdk.export.parity`):

- additive: beam search (`bom.beam_search.extend_beams`: `beam` best partial codes kept
  by a sorted TopK, ties to the lower index like the argmin loop), then `icm_passes` ICM
  passes (`bom.icm.icm_refine`), where a row none of whose codes moved in a pass keeps
  its codes and residual from then on, then the better of the beam and ICM codes by
  recomputed error (ties keep the beam codes);
- residual: the beam search alone (greedy nearest codewords when `beam_size` is 1);
- product: the nearest codeword of each sub-vector.
"""

from __future__ import annotations

import torch
from torch import nn

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, Quantizer, ResidualQuantizer


class QuantizerGraph(nn.Module):
    """`tokens = quantizer.tokens(quantizer.encode(x))` for a fitted quantizer."""

    def __init__(self, quantizer: Quantizer) -> None:
        super().__init__()
        if not quantizer.is_fitted:
            raise ValueError("export a fitted quantizer")
        self.kind = quantizer.kind
        self.register_buffer("codebooks", torch.from_numpy(quantizer.codebooks.copy()))
        self.size = quantizer.codebook_size
        self.beam = getattr(quantizer, "beam_size", 1)
        self.passes = quantizer.icm_passes if isinstance(quantizer, AdditiveQuantizer) else 0
        if isinstance(quantizer, ProductQuantizer):
            self.slices = [(part.start, part.stop) for part in quantizer._slices()]
        elif not isinstance(quantizer, AdditiveQuantizer | ResidualQuantizer):
            raise ValueError(f"no ONNX encoder for {type(quantizer).__name__}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n, D) -> (n, M) int64
        if self.kind == "product":
            codes = torch.stack(
                [
                    _nearest(x[:, lo:hi], book)
                    for (lo, hi), book in zip(self.slices, self.codebooks, strict=True)
                ],
                dim=1,
            )
        else:
            codes, residual = self._beam(x)
            if self.passes:
                codes = self._icm(x, codes, residual)
        offsets = torch.arange(len(self.codebooks), dtype=torch.int64) * self.size
        return codes + offsets

    def _beam(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`beam_encode`: (n, M) codes of the best beam and its (n, D) residual."""
        if self.beam == 1:  # greedy_encode
            residual, codes = x, []
            for book in self.codebooks:
                code = _nearest(residual, book)
                residual = residual - book[code]
                codes.append(code)
            return torch.stack(codes, dim=1), residual
        n = x.shape[0]
        residual = x[:, None, :]  # (n, b, D)
        errors = (x * x).sum(dim=1)[:, None]  # (n, b)
        codes = torch.zeros(n, 1, 0, dtype=torch.int64)
        rows = torch.arange(n)[:, None]
        for book in self.codebooks:
            width = residual.shape[1]
            half = 0.5 * (book * book).sum(dim=1)  # (K,)
            cost = residual.reshape(n * width, -1) @ book.T  # (n*b, K)
            cost = (half - cost) * 2
            cost = cost.reshape(n, width, self.size) + errors[:, :, None]
            keep = min(self.beam, width * self.size)
            errors, top = cost.reshape(n, width * self.size).topk(keep, dim=1, largest=False)
            parent, word = top // self.size, top % self.size
            residual = residual[rows, parent] - book[word]
            codes = torch.cat([codes[rows, parent], word[:, :, None]], dim=2)
        return codes[:, 0], residual[:, 0]

    def _icm(self, x: torch.Tensor, start: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """`icm_encode` after the beam search: ICM passes, then the better codes per row."""
        half = 0.5 * (self.codebooks * self.codebooks).sum(dim=2)  # (M, K)
        codes = start
        active = torch.ones(x.shape[0], dtype=torch.bool)
        for _ in range(self.passes):
            r, b = residual, [codes[:, m] for m in range(len(self.codebooks))]
            moved = torch.zeros_like(active)
            for m, book in enumerate(self.codebooks):
                r = r + book[b[m]]  # the residual without codebook m
                new = (half[m] - r @ book.T).argmin(dim=1)
                moved = moved | (new != b[m])
                b[m] = new
                r = r - book[new]
            residual = torch.where(active[:, None], r, residual)
            codes = torch.where(active[:, None], torch.stack(b, dim=1), codes)
            active = active & moved
        errors = [self._error(x, c) for c in (start, codes)]
        return torch.where((errors[1] < errors[0])[:, None], codes, start)

    def _error(self, x: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """(n,) ||x - sum_m C_m[codes_m]||^2, codewords added in order m = 0..M-1."""
        total = self.codebooks[0][codes[:, 0]]
        for m in range(1, len(self.codebooks)):
            total = total + self.codebooks[m][codes[:, m]]
        diff = x - total
        return (diff * diff).sum(dim=1)


def _nearest(x: torch.Tensor, book: torch.Tensor) -> torch.Tensor:
    """`bom.kmeans.nearest`'s labels: argmin of ||c||^2 / 2 - x.c (the lowest on ties)."""
    half = 0.5 * (book * book).sum(dim=1)
    return (half - x @ book.T).argmin(dim=1)
