"""`hir export`: three checked ONNX files with their contracts, served by onnxruntime with
the torch models' inputs, and clear errors for inputs that do not fit; the saved online
ranker they read; and the docs/export.md example that builds them. One file, so that the
example (the `export_page` fixture) runs once per test worker."""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import onnx
import pytest
import torch

from hir_sdk import __version__
from hir_sdk.bom import AdditiveQuantizer
from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.export import export_run, load_serving, read_metadata
from hir_sdk.export.export_run import ExportResult
from hir_sdk.export.parity import Parity
from hir_sdk.export.serving import EncoderSession, RankerSession
from hir_sdk.interests import embed_entities, write_embeddings
from hir_sdk.model import Impl
from hir_sdk.model.inputs import inputs_from_packed
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs
from hir_sdk.ranking.sequence.ranker_bundle import META_FILE, OnlineRankerBundle
from hir_sdk.training.embedder import Embedder
from tests.page_example import page_example

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)


def test_export_page_example(export_page: tuple[dict[str, object], str]) -> None:
    """The example in docs/export.md runs and prints what the page says it prints (it is
    also the test of a successful `export_run` with a check from scratch)."""
    assert export_page[1] == page_example("export.md")[1]


def test_saved_ranker_round_trip_scores_identically(saved_ranker, tmp_path):
    bundle = OnlineRankerBundle.load(saved_ranker)
    logits, p = bundle.scores(bundle.sample)
    assert logits.shape == (256, 2) and ((p > 0) & (p < 1)).all()
    again = OnlineRankerBundle.load(bundle.save(tmp_path / "copy"))
    logits2, p2 = again.scores(again.sample)
    np.testing.assert_array_equal(logits, logits2)
    np.testing.assert_array_equal(p, p2)
    assert again.sizes == bundle.sizes and again.calibration == bundle.calibration
    assert bundle.sample.cand.hir_found.any()  # real requests, with HIR snapshots


def test_bad_ranker_bundles(saved_ranker, tmp_path):
    copy = OnlineRankerBundle.load(saved_ranker).save(tmp_path / "b")
    meta = json.loads((copy / META_FILE).read_text())
    (copy / META_FILE).write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(InputError, match="format 99 is not supported"):
        OnlineRankerBundle.load(copy)
    (copy / META_FILE).write_text(json.dumps({**meta, "sizes": {**meta["sizes"], "dense_dim": 3}}))
    with pytest.raises(InputError, match="weights do not fit"):
        OnlineRankerBundle.load(copy)
    with pytest.raises(InputError, match="not a saved online ranker"):
        OnlineRankerBundle.load(tmp_path)


def test_export_writes_three_checked_models(exported, tiny_graph):
    assert exported.files == ["encoder.onnx", "quantizer.onnx", "ranker.onnx"]
    assert [p.model for p in exported.parity] == ["encoder", "quantizer", "bom index", "ranker"]
    assert exported.ok
    by_model = {p.model: p for p in exported.parity}
    assert by_model["quantizer"].mismatched_rows == 0  # token ids: exact on tiny
    assert by_model["encoder"].rows == 256
    assert 0 < by_model["ranker"].max_abs_diff <= 1e-4  # computed, and within tolerance
    meta = json.loads((exported.out / "export.json").read_text())
    assert meta["files"] == exported.files and all(p["ok"] for p in meta["parity"])
    for name, kind in [("encoder", "encoder"), ("quantizer", "quantizer"), ("ranker", "ranker")]:
        model = onnx.load(exported.out / f"{name}.onnx")
        onnx.checker.check_model(model, full_check=True)
        info = read_metadata(model)
        assert info["kind"] == kind and info["version"] == __version__ and info["opset"] == 20
        assert [s["name"] for s in info["inputs"]] == [i.name for i in model.graph.input]
        assert [s["name"] for s in info["outputs"]] == [o.name for o in model.graph.output]
        assert info["fingerprint"]
    encoder_meta = read_metadata(onnx.load(exported.out / "encoder.onnx"))
    assert encoder_meta["fingerprint"] == tiny_graph.fingerprint
    assert encoder_meta["outputs"][0] == {
        "name": "embedding",
        "dtype": "float32",
        "shape": ["B", 16],
    }


def test_served_encoder_takes_any_number_of_subgraphs_and_nodes(
    exported, export_run_dir, tiny_world
):
    embedder = Embedder(export_run_dir, tiny_world, "test_start")
    encoder = load_serving(exported.out).encoder
    nodes = embedder.entities()
    shapes = set()
    for count in (2, 7, 40):
        picked = nodes[:: max(len(nodes) // count, 1)][:count]
        x = inputs_from_packed(
            embedder.builder.build_view(
                picked, np.full(count, embedder.as_of), embedder.sampler_config.teacher
            )
        )
        z, clusters = encoder.encode(x)
        with torch.no_grad():
            ref = embedder.model(x, Impl.DENSE)
        np.testing.assert_allclose(z, ref.embedding.numpy(), atol=1e-4)
        assert clusters.shape == (count, 3)
        shapes.add((x.batch_size, int(np.diff(x.offsets.numpy()).max())))
    assert len(shapes) == 3  # three different (B, N)
    assert encoder.provider == "CPUExecutionProvider" or torch.cuda.is_available()


def test_an_encoder_exported_with_other_inputs_is_refused_by_name(
    exported, export_run_dir, tiny_world, tmp_path
):
    """A file from another version's export contract gets one message, not a KeyError."""
    model = onnx.load(exported.out / "encoder.onnx")
    for entry in model.metadata_props:
        if entry.key == "hir_sdk.inputs":
            specs = json.loads(entry.value)
            specs.append({"name": "adjacency", "dtype": "float32", "shape": ["B", "N", "N"]})
            entry.value = json.dumps(specs)
    onnx.save(model, tmp_path / "encoder.onnx")
    embedder = Embedder(export_run_dir, tiny_world, "test_start")
    picked = embedder.entities()[:3]
    x = inputs_from_packed(
        embedder.builder.build_view(
            picked, np.full(3, embedder.as_of), embedder.sampler_config.teacher
        )
    )
    with pytest.raises(InputError, match="adjacency.*exported by another version"):
        EncoderSession(tmp_path / "encoder.onnx").encode(x)


def test_served_quantizer_gives_the_index_tokens(exported, export_run_dir, tiny_world):
    snap = embed_entities(export_run_dir, tiny_world, "test_start")
    quantizer = load_serving(exported.out).quantizer
    for rows in (slice(0, 3), slice(100, 400)):
        z = snap.embeddings()[rows]
        tokens = quantizer.tokens(z)
        assert tokens.shape == (len(z), 8)
        agree = (tokens == snap.tokens()[rows]).all(axis=1).mean()
        assert agree >= 0.99  # the rest: equally good codes (see export.parity)


def test_served_ranker_scores_like_the_bundle(exported, saved_ranker):
    bundle = OnlineRankerBundle.load(saved_ranker)
    ranker = load_serving(exported.out).ranker
    x = bundle.sample
    for rows, recent in ((slice(0, 5), 8), (slice(10, 200), 3)):  # fewer recent events too
        events = tuple(None if e is None else e[rows, :recent] for e in x.recent)
        cand = CandidateInputs(**{k: v[rows] for k, v in vars(x.cand).items()})
        part = type(x)(x.user[rows], events, cand)
        logits, p = ranker.score(part.user, part.recent, part.cand)
        ref_logits, ref_p = bundle.scores(part)
        np.testing.assert_allclose(logits, ref_logits, atol=1e-4)
        np.testing.assert_allclose(p, ref_p, atol=1e-5)


def test_mismatched_inputs_are_one_clear_error(exported, saved_ranker):
    serving = load_serving(exported.out)
    z = np.zeros((4, 16), dtype=np.float32)
    with pytest.raises(InputError, match=r"axis 1 must be 16"):
        serving.quantizer.tokens(np.zeros((4, 15), dtype=np.float32))
    with pytest.raises(InputError, match="is <U1, the model takes float32|takes float32"):
        serving.quantizer.run({"embedding": np.full((4, 16), "a")})
    with pytest.raises(InputError, match=r"missing \['embedding'\], unexpected \['z'\]"):
        serving.quantizer.run({"z": z})
    with pytest.raises(InputError, match="has shape \\(16,\\)"):
        serving.quantizer.run({"embedding": z[0]})
    x = OnlineRankerBundle.load(saved_ranker).sample
    with pytest.raises(InputError, match="dimension B is 256 in input 'user' but 5"):
        serving.ranker.score(
            x.user, x.recent, CandidateInputs(**{k: v[:5] for k, v in vars(x.cand).items()})
        )
    with pytest.raises(InputError, match="quantizer.onnx"):
        serving.quantizer.run({"z": z})


def test_cli_export_failures(tiny_world, export_run_dir, exported, tmp_path, capsys, monkeypatch):
    """Exit 2 before any work for bad arguments or an existing output; exit 1 when the
    parity check fails (the success path is the docs example, `test_export_page_example`)."""
    out = tmp_path / "onnx"
    args = ["export", "--run", str(export_run_dir), "--data", str(tiny_world), "--out", str(out)]
    not_a_ranker = tmp_path / "not_a_ranker"  # beside --out: an output never lies in an input
    not_a_ranker.mkdir()
    assert main([*args, "--ranker", str(not_a_ranker)]) == 2
    assert "not a saved online ranker" in capsys.readouterr().err
    assert not out.exists()
    # the example's output exists: not replaced without --overwrite
    assert main([*args[:-1], str(exported.out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    failed = Parity("encoder", 8, 2e-3, 0, ids="cluster")
    assert not failed.ok

    def export_with_a_failed_check(*_args, **kwargs) -> ExportResult:
        assert kwargs["check"] and kwargs["check_nodes"] == 8
        return ExportResult(out, ["encoder.onnx", "quantizer.onnx"], [failed])

    # the module (the package's `export_run` attribute is the function of that name)
    module = sys.modules["hir_sdk.export.export_run"]
    monkeypatch.setattr(module, "export_run", export_with_a_failed_check)
    assert main([*args, "--check", "--check-nodes", "8"]) == 1
    printed = capsys.readouterr().out
    assert f"exported encoder.onnx, quantizer.onnx to {out}" in printed
    assert failed.render() in printed and "parity check FAILED" in printed


def test_parity_rules():
    assert Parity("encoder", 5, 1e-5, 3, ids="cluster").ok
    # token ids: a small share of rows may differ (search ties) if the mean gap is small
    tied = Parity("quantizer", 2000, 1e-6, 2, ids="token", max_mismatch=1e-3)
    assert tied.ok
    assert not dataclasses.replace(tied, mismatched_rows=3).ok  # too many rows differ
    assert not dataclasses.replace(tied, max_abs_diff=2e-4).ok  # codes worse on average
    failed = Parity("ranker", 5, 2e-4, 0)
    assert not failed.ok and "FAILED" in failed.render() and "ids" not in failed.render()


def test_a_session_refuses_another_kind_of_model(exported):
    with pytest.raises(InputError, match="holds a 'encoder' model, not 'ranker'"):
        RankerSession(exported.out / "encoder.onnx")


def test_load_serving_of_a_folder_without_models(tmp_path):
    with pytest.raises(InputError, match="no exported model here"):
        load_serving(tmp_path)
    (tmp_path / "encoder.onnx").write_bytes(b"not onnx")
    with pytest.raises(InputError, match="onnxruntime cannot load"):
        load_serving(tmp_path)


def test_a_quantizer_of_another_width_is_refused(
    tiny_world,
    export_run_dir,
    snapshot,
    tmp_path,  # noqa: F811
):
    rng = np.random.default_rng(0)
    other = AdditiveQuantizer(2, 4).fit(rng.normal(size=(64, 8)).astype(np.float32), seed=0)
    folder = write_embeddings(dataclasses.replace(snapshot, quantizer=other), tmp_path / "emb")
    with pytest.raises(InputError, match="encodes 8-dim vectors, the encoder makes 16-dim"):
        export_run(export_run_dir, tiny_world, tmp_path / "onnx", embeddings=folder)
    assert not (tmp_path / "onnx").exists()


def test_embeddings_of_another_encoder_are_refused(
    tiny_world,
    export_run_dir,
    tmp_path,  # noqa: F811
):
    """A quantizer fitted on another encoder's embeddings of the same width would export
    without complaint (each graph matches torch) and serve meaningless tokens."""
    from hir_sdk.training import Trainer, load_config

    config = load_config(export_run_dir / "config.toml")
    other = tmp_path / "other_run"
    Trainer(tiny_world, other, dataclasses.replace(config, seed=config.seed + 1)).fit(
        max_steps=1, progress=False
    )
    folder = write_embeddings(embed_entities(other, tiny_world, "test_start"), tmp_path / "emb")
    with pytest.raises(InputError, match="made by another encoder") as caught:
        export_run(export_run_dir, tiny_world, tmp_path / "onnx", embeddings=folder)
    assert str(other.resolve()) in str(caught.value) and not (tmp_path / "onnx").exists()
    own = embed_entities(export_run_dir, tiny_world, "test_start")
    assert own.meta["encoder"] == Embedder(export_run_dir, tiny_world, "test_start").encoder_hash
