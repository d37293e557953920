"""Export the trained models to ONNX: `encoder.onnx`, `quantizer.onnx`, `ranker.onnx`.

Each function traces its graph module (`encoder_graph`, `quantizer_graph`,
`ranker_graph`) on random example inputs of the right shapes (only shapes matter to the
trace; parity is checked on real batches by `hir_sdk.export.parity`) and writes the file
with its metadata (`onnx_file.write_onnx`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from hir_sdk.bom import Quantizer
from hir_sdk.export.encoder_graph import (
    PackedEncoder,
    encoder_feeds,
    encoder_input_names,
    encoder_output_names,
)
from hir_sdk.export.onnx_file import TensorSpec, write_onnx
from hir_sdk.export.quantizer_graph import QuantizerGraph
from hir_sdk.export.ranker_graph import OUTPUTS, RankerGraph, ranker_feeds, ranker_input_names
from hir_sdk.model import HierarchicalEncoder
from hir_sdk.model.inputs import random_inputs
from hir_sdk.ranking.sequence.random_inputs import random_candidates, random_events
from hir_sdk.ranking.sequence.ranker_bundle import OnlineRankerBundle

ENCODER_FILE = "encoder.onnx"
QUANTIZER_FILE = "quantizer.onnx"
RANKER_FILE = "ranker.onnx"

# dynamic axes by input name: L tokens, B subgraphs or rows, N tokens per subgraph,
# E edges, R recent events; the rest are per token
_PAIRS = {0: "B", 1: "N", 2: "N"}
_ENCODER_DIMS = {"spd": _PAIRS, "edge_index": _PAIRS, "token": {0: "B", 1: "N"}}
_ENCODER_DIMS["valid"] = _ENCODER_DIMS["token"]
_EDGE_INPUTS = ("edge_type", "edge_weight", "edge_age")
_EVENT_INPUTS = ("item", "action", "age", "mask", "event_hir", "event_hir_found")


def export_encoder(
    encoder: HierarchicalEncoder,
    path: str | Path,
    *,
    fingerprint: str,
    extra: dict[str, object] | None = None,
) -> Path:
    """`encoder.onnx`: packed subgraphs (inputs from `encoder_feeds`) -> embeddings."""
    x = random_inputs([4, 3, 2], encoder.config, seed=0)
    example = encoder_feeds(x, encoder_input_names(encoder))
    specs = [
        TensorSpec.of(
            name,
            array,
            {0: "E"} if name in _EDGE_INPUTS else _ENCODER_DIMS.get(name, {0: "L"}),
        )
        for name, array in example.items()
    ]
    sizes = {"out_dim": encoder.config.out_dim, "prototypes": list(encoder.config.prototypes.sizes)}
    write_onnx(
        PackedEncoder(encoder),
        example,
        specs,
        encoder_output_names(encoder),
        path,
        kind="encoder",
        fingerprint=fingerprint,
        extra={**sizes, **(extra or {})},
    )
    return Path(path)


def export_quantizer(quantizer: Quantizer, path: str | Path) -> Path:
    """`quantizer.onnx`: embeddings (n, D) -> BoM token ids (n, M)."""
    example = {"embedding": np.random.default_rng(0).normal(size=(4, quantizer.dim))}
    example["embedding"] = example["embedding"].astype(np.float32)
    write_onnx(
        QuantizerGraph(quantizer),
        example,
        [TensorSpec.of("embedding", example["embedding"], {0: "n"})],
        ["tokens"],
        path,
        kind="quantizer",
        fingerprint=str(quantizer.fingerprint),
        extra={
            "quantizer": quantizer.kind,
            "codebooks": quantizer.num_codebooks,
            "codewords": quantizer.codebook_size,
        },
    )
    return Path(path)


def export_ranker(bundle: OnlineRankerBundle, path: str | Path) -> Path:
    """`ranker.onnx`: the online ranker and its calibration, on padded inputs."""
    ranker = bundle.ranker
    s = bundle.sizes
    g = torch.Generator().manual_seed(0)
    events = random_events(
        4, ranker.config.recent, hir_dim=s["hir_dim"], num_actions=s["num_actions"], generator=g
    )
    width = bundle.sample.cand.bom.shape[1]
    cand = random_candidates(
        4,
        hir_dim=s["hir_dim"],
        dense_dim=s["dense_dim"],
        codebooks=width,
        codewords=max(s["bom_vocab"] // width, 1),
        routes=s["routes"],
        generator=g,
    )
    user = torch.randn(4, s["user_dim"], generator=g)
    example = ranker_feeds(ranker_input_names(ranker), user, events, cand)
    specs = [
        TensorSpec.of(name, array, {0: "B", 1: "R"} if name in _EVENT_INPUTS else {0: "B"})
        for name, array in example.items()
    ]
    write_onnx(
        RankerGraph(ranker, bundle.calibration),
        example,
        specs,
        list(OUTPUTS),
        path,
        kind="ranker",
        fingerprint=bundle.fingerprint,
        extra={"calibration": [bundle.calibration.a, bundle.calibration.b]},
    )
    return Path(path)
