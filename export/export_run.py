"""`export_run`: a training run (and optionally its BoM quantizer and an online ranker)
to a folder of ONNX files, parity-checked on real batches when asked.

```
OUT/
  encoder.onnx     the run's encoder (teacher weights of the checkpoint)
  quantizer.onnx   the BoM quantizer of `hir embed` output, or fitted here as `hir embed` does
  ranker.onnx      the online ranker of a saved `OnlineRankerBundle` (when given)
  export.json      what was exported, from what, and the parity results when checked
```
The encoder's parity batch is the views of up to `check_nodes` real entities as of
`as_of`; the quantizer's, the embeddings it was fitted on; the ranker's, the real
requests saved with it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hir_sdk import __version__
from hir_sdk.errors import InputError
from hir_sdk.export.exporter import (
    ENCODER_FILE,
    QUANTIZER_FILE,
    RANKER_FILE,
    export_encoder,
    export_quantizer,
    export_ranker,
)
from hir_sdk.export.parity import Parity, encoder_parity, quantizer_parity, ranker_parity
from hir_sdk.export.serving import EncoderSession, QuantizerSession, RankerSession
from hir_sdk.interests import EntityEmbeddings, embed_entities, read_embeddings
from hir_sdk.io.atomic import atomic_output_dir, check_free
from hir_sdk.model.inputs import inputs_from_packed
from hir_sdk.ranking.sequence.ranker_bundle import OnlineRankerBundle
from hir_sdk.training.embedder import Embedder

CHECK_BATCH = 64


@dataclass
class ExportResult:
    out: Path
    files: list[str]
    parity: list[Parity] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.parity)


def export_run(
    run: str | Path,
    data: str | Path,
    out: str | Path,
    *,
    as_of: str | int = "test_start",
    embeddings: str | Path | None = None,
    ranker: str | Path | None = None,
    check: bool = False,
    check_nodes: int = 512,
    checkpoint: str = "best",
    overwrite: bool = False,
    recorded_run: str | Path | None = None,
) -> ExportResult:
    """Export the run's encoder, a BoM quantizer and optionally an online ranker to `out`.

    Args:
        run: training run folder (`hir fit --out`).
        data: dataset the run embeds (the check's views come from it).
        out: output folder, written atomically.
        as_of: time of the check's views and of the quantizer fit (when fitted here).
        embeddings: an `hir embed` output whose quantizer to export (else one is fitted
            on the run's embeddings as of `as_of`, as `hir embed` does).
        ranker: a saved `OnlineRankerBundle` folder (`hir ab`: `multistage_ranker/`).
        check: run the parity check on real batches (`ExportResult.parity`, `.ok`).
        check_nodes: entities whose views the encoder check runs.
        checkpoint: "best" or "last".
        overwrite: replace an earlier export at `out` (never a folder hir-sdk did not
            write, nor one that is, holds or lies inside an input: see
            `hir_sdk.io.output_folder`).
        recorded_run: the run's path that `export.json` records, where `run` is to move
            (a job's temporary output folder); default: `run`.
    """
    inputs = (run, data, embeddings, ranker)
    # the cheap mistakes first: before any embedding
    check_free(out, kind="onnx", overwrite=overwrite, inputs=inputs)
    bundle = OnlineRankerBundle.load(ranker) if ranker is not None else None
    embedder = Embedder(run, data, as_of, checkpoint=checkpoint)
    if embeddings is not None:
        table = read_embeddings(embeddings)
    else:
        table = embed_entities(run, data, as_of, checkpoint=checkpoint)
    quantizer = table.quantizer
    if quantizer.dim != embedder.model.config.out_dim:
        raise InputError(
            f"the quantizer encodes {quantizer.dim}-dim vectors, the encoder makes "
            f"{embedder.model.config.out_dim}-dim ones: embeddings of another run?",
            file=embeddings,
        )
    made_by = table.meta.get("encoder")  # absent in embeddings of an earlier release
    if embeddings is not None and made_by is not None and made_by != embedder.encoder_hash:
        raise InputError(
            f"these embeddings were made by another encoder (run {table.meta.get('run')}, "
            f"step {table.meta.get('step')}) than --run's {checkpoint} checkpoint (step "
            f"{embedder.step}): their quantizer does not belong to it; embed with this run "
            "(hir embed --run RUN) or leave --embeddings out",
            file=embeddings,
        )
    meta: dict[str, object] = {
        "sdk_version": __version__,
        "run": str(Path(recorded_run or run).resolve()),
        "checkpoint": checkpoint,
        "step": embedder.step,
        "trained_on": embedder.trained_on,
        "trained_until": embedder.trained_until,
        "as_of": embedder.as_of,
    }
    files = [ENCODER_FILE, QUANTIZER_FILE] + ([RANKER_FILE] if bundle else [])
    result = ExportResult(Path(out), files)
    with atomic_output_dir(out, kind="onnx", overwrite=overwrite, inputs=inputs) as tmp:
        extra = {"step": embedder.step, "trained_until": embedder.trained_until}
        export_encoder(
            embedder.model, tmp / ENCODER_FILE, fingerprint=embedder.trained_on, extra=extra
        )
        export_quantizer(quantizer, tmp / QUANTIZER_FILE)
        if bundle is not None:
            export_ranker(bundle, tmp / RANKER_FILE)
            meta["ranker"] = str(Path(ranker).resolve())
        if check:
            result.parity = _check(tmp, embedder, table, bundle, check_nodes)
            meta["parity"] = [asdict(p) | {"ok": p.ok} for p in result.parity]
        meta["files"] = files
        (tmp / "export.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return result


def _check(
    folder: Path,
    embedder: Embedder,
    table: EntityEmbeddings,
    bundle: OnlineRankerBundle | None,
    check_nodes: int,
) -> list[Parity]:
    """Parity of the files in `folder` on real batches (see the module)."""
    nodes = embedder.entities()
    nodes = nodes[np.linspace(0, len(nodes) - 1, min(check_nodes, len(nodes))).astype(np.int64)]
    cutoffs = np.full(len(nodes), embedder.as_of, dtype=np.int64)
    view = embedder.sampler_config.teacher
    batches = (
        inputs_from_packed(
            embedder.builder.build_view(
                nodes[lo : lo + CHECK_BATCH], cutoffs[lo : lo + CHECK_BATCH], view
            )
        )
        for lo in range(0, len(nodes), CHECK_BATCH)
    )
    parity = [
        encoder_parity(embedder.model, EncoderSession(folder / ENCODER_FILE), batches),
        *quantizer_parity(  # the snapshot's tokens are its quantizer's, on these rows
            table.quantizer,
            QuantizerSession(folder / QUANTIZER_FILE),
            table.embeddings(),
            table.tokens(),
        ),
    ]
    if bundle is not None:
        parity.append(ranker_parity(bundle, RankerSession(folder / RANKER_FILE), bundle.sample))
    return parity
