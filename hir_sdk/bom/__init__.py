"""Bag-of-Meaning (BoM) tokens: vectors quantized into M codes, read as an unordered bag of
tokens `m * K + k` (see docs/bom.md).

`AdditiveQuantizer` (composite quantization, the one to use) and the baselines it is
measured against, `ProductQuantizer` and `ResidualQuantizer`, share one interface:
`fit(x, seed=...)`, `encode(x) -> codes`, `decode(codes)`, `tokens(codes)`,
`relative_error(x)`, `save(path)` and `load(path)`.
"""

from hir_sdk.bom.additive import AdditiveQuantizer
from hir_sdk.bom.beam_search import beam_encode, extend_beams, greedy_encode, sum_codewords
from hir_sdk.bom.icm import icm_encode, icm_refine
from hir_sdk.bom.kmeans import KMeans, kmeans, nearest
from hir_sdk.bom.least_squares import least_squares_codebooks
from hir_sdk.bom.product import ProductQuantizer
from hir_sdk.bom.quantizer import (
    ROWS_PER_CODEWORD,
    Quantizer,
    check_codes,
    check_vectors,
    codebook_size,
)
from hir_sdk.bom.residual import ResidualQuantizer, fit_residual

__all__ = [
    "ROWS_PER_CODEWORD",
    "AdditiveQuantizer",
    "KMeans",
    "ProductQuantizer",
    "Quantizer",
    "ResidualQuantizer",
    "beam_encode",
    "check_codes",
    "check_vectors",
    "codebook_size",
    "extend_beams",
    "fit_residual",
    "greedy_encode",
    "icm_encode",
    "icm_refine",
    "kmeans",
    "least_squares_codebooks",
    "nearest",
    "sum_codewords",
]
