"""Training: same seed -> same checkpoint; stop-and-resume equals an uninterrupted run;
the objectives move; the CLI and config file work."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.sampling.loader import make_loader
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.checkpoint import load_checkpoint, state_hash
from hir_sdk.training.config import DistillConfig, EngagementConfig, ModelSizes, config_from_dict

CONFIG = TrainConfig(
    steps=6,
    batch_size=24,
    eval_every=3,
    checkpoint_every=3,
    eval_anchors=48,
    model=ModelSizes(dim=32, out_dim=16, prototypes=(8, 32, 128)),
    engagement=EngagementConfig(pairs=32),
    distill=DistillConfig(seed_rows=256),  # seeds the prototypes at steps 3 and 5 of 6
)


def _hashes(path) -> dict[str, str]:
    state = load_checkpoint(path)
    return {part: state_hash(state[part]) for part in ("student", "teacher", "scorer")}


@pytest.fixture(scope="module")
def full_run(tiny_world, tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "full"
    Trainer(tiny_world, run, CONFIG).fit(progress=False)
    return run


def test_same_seed_gives_the_same_checkpoint(tiny_world, full_run, tmp_path):
    Trainer(tiny_world, tmp_path / "again", CONFIG).fit(progress=False)
    assert _hashes(tmp_path / "again" / "checkpoints" / "last.pt") == _hashes(
        full_run / "checkpoints" / "last.pt"
    )


def test_stop_and_resume_equals_an_uninterrupted_run(tiny_world, full_run, tmp_path):
    run = tmp_path / "resumed"
    Trainer(tiny_world, run, CONFIG).fit(max_steps=3, progress=False)
    with (run / "metrics.jsonl").open("a") as log:  # a crash while step 4 was logged
        log.write('{"step": 4, "epoch": 0, "loss": 10.4')
    trainer = Trainer(tiny_world, run, CONFIG)  # a fresh process would start like this
    trainer.resume()
    assert trainer.step == 3
    trainer.fit(progress=False)
    assert _hashes(run / "checkpoints" / "last.pt") == _hashes(full_run / "checkpoints" / "last.pt")
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    full = [json.loads(x) for x in (full_run / "metrics.jsonl").read_text().splitlines()]
    assert [x["loss"] for x in lines] == [x["loss"] for x in full]
    assert [x.get("val_loss") for x in lines] == [x.get("val_loss") for x in full]
    assert _hashes(run / "checkpoints" / "best.pt") == _hashes(full_run / "checkpoints" / "best.pt")


def test_resume_refuses_another_config(tiny_world, full_run, tmp_path):
    import shutil
    from dataclasses import replace

    run = tmp_path / "copy"
    shutil.copytree(full_run, run)
    trainer = Trainer(tiny_world, run, replace(CONFIG, seed=5))
    with pytest.raises(InputError, match=r"another config \(seed: 0 in the checkpoint, 5 now\)"):
        trainer.resume()
    with pytest.raises(InputError, match="resume with the run's own config.toml$"):
        trainer.resume()


def test_resume_names_the_settings_an_older_checkpoint_lacks(tiny_world, full_run, tmp_path):
    """A checkpoint written before a setting existed (its config lacks the key) is refused
    with the key named, not silently continued under a default it never trained with."""
    import shutil

    from hir_sdk.training.checkpoint import save_checkpoint

    run = tmp_path / "old"
    shutil.copytree(full_run, run)
    last = run / "checkpoints" / "last.pt"
    state = load_checkpoint(last)
    del state["config"]["collaborative"]["pairs"]
    state["config"]["gone"] = 1
    save_checkpoint(state, last)
    trainer = Trainer(tiny_world, run, CONFIG)
    with pytest.raises(InputError) as refused:
        trainer.resume()
    message = str(refused.value)
    assert "collaborative.pairs: absent in the checkpoint" in message
    assert "gone: 1 in the checkpoint, absent now" in message
    assert "train it again" in message


def test_a_different_seed_trains_differently(tiny_world, full_run, tmp_path):
    from dataclasses import replace

    Trainer(tiny_world, tmp_path / "other", replace(CONFIG, seed=1)).fit(progress=False)
    assert (
        _hashes(tmp_path / "other" / "checkpoints" / "last.pt")["student"]
        != _hashes(full_run / "checkpoints" / "last.pt")["student"]
    )


def test_metrics_log_losses_and_collapse_diagnostics(full_run):
    records = [json.loads(x) for x in (full_run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 7))
    for key in (
        "distill",
        "engagement",
        "l0_usage_entropy",
        "l2_empty_share",
        "l0_target_entropy",
        "grad_norm",
        "lr",
        "data_wait_s",
    ):
        assert all(key in r for r in records), key
    for r in records:  # the parts of a step add up to at most the whole
        parts = [r["forward_s"], r["backward_s"], r["update_s"]]
        assert min(parts) > 0 and sum(parts) <= r["step_s"]
    assert records[-1]["loss"] < records[0]["loss"]
    assert all(r["content"] == 0.0 for r in records)  # no content read, no content term
    assert all(r["l0_target_entropy"] > 0.9 for r in records)  # Sinkhorn keeps targets spread
    assert "val_loss" in records[2] and "val_loss" in records[5]
    assert (full_run / "checkpoints" / "best.pt").exists()
    assert "seed = 0" in (full_run / "config.toml").read_text()
    meta = json.loads((full_run / "meta.json").read_text())
    assert meta["attention"] == "dense" and meta["fingerprint"]


def test_checkpoints_load_without_pickle(full_run):
    state = load_checkpoint(full_run / "checkpoints" / "last.pt")  # weights_only=True inside
    assert state["step"] == 6 and state["config"]["seed"] == 0


def test_cli_fit_with_a_config_file(tiny_world, tmp_path, capsys):
    """`hir fit --config` trains with the file's settings; `--resume` without `--config`
    continues under the run's own config.toml, not the built-in defaults."""
    config = tmp_path / "train.toml"
    config.write_text(CONFIG.to_toml().replace("steps = 6", "steps = 3"))
    out = tmp_path / "run"
    fit = ["fit", "--data", str(tiny_world), "--out", str(out), "--quiet"]
    assert main([*fit, "--config", str(config), "--max-steps", "2"]) == 0
    assert "trained 2 steps on 1 rank(s)" in capsys.readouterr().out
    assert (out / "checkpoints" / "last.pt").exists()
    assert main([*fit, "--resume"]) == 0
    assert "trained 3 steps on 1 rank(s)" in capsys.readouterr().out


def test_bad_config_is_an_input_error(tmp_path, capsys, tiny_world):
    with pytest.raises(InputError, match="unknown config keys"):
        config_from_dict({"stepz": 3})
    with pytest.raises(InputError, match="invalid config"):
        config_from_dict({"optim": {"lr": -1.0}})
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\ndims = 3\n")
    assert (
        main(["fit", "--data", str(tiny_world), "--out", str(tmp_path / "r"), "--config", str(bad)])
        == 2
    )
    assert "model.dims" in capsys.readouterr().err


def test_prototypes_are_seeded_from_the_teacher_embeddings(tiny_world, tmp_path):
    """Seeding at the last step leaves both models' prototypes on the hierarchical k-means
    centres of the teacher's embeddings of the step's draw of ad, product and pixel
    anchors (the engaged-with types: no users)."""
    import numpy as np

    from hir_sdk.training.prototype_seeding import hierarchical_centres

    config = replace(CONFIG, steps=2, distill=replace(CONFIG.distill, seed_prototypes_at=(1.0,)))
    trainer = Trainer(tiny_world, tmp_path / "seeded", config)
    trainer.fit(progress=False)
    anchors, cutoffs = trainer.schedule.anchors, trainer.schedule.cutoffs
    graph = trainer.graph
    types = [graph.node_types[t] for t in graph.node_type_of(anchors)]
    eligible = np.flatnonzero([t in ("ad", "product", "pixel") for t in types])
    assert 256 < len(eligible) < len(anchors)
    order = np.random.default_rng([0, 2, 0x5EED]).permutation(len(eligible))
    pick = np.sort(eligible[order][:256])
    z, _ = trainer.embed(anchors[pick], cutoffs[pick])
    want = hierarchical_centres(z, config.model.prototypes, seed=2)
    for model in (trainer.teacher, trainer.student):
        for got, expected in zip(model.prototypes.prototypes(), want, strict=True):
            np.testing.assert_allclose(got.detach().numpy(), expected, atol=1e-5)


def test_the_scorer_starts_at_the_configured_scale(tiny_world, tmp_path):
    config = replace(CONFIG, engagement=replace(CONFIG.engagement, scale=12.0))
    assert float(Trainer(tiny_world, tmp_path / "run", config).scorer.scale) == 12.0


@pytest.mark.parametrize("order", ["spread", "time"])
def test_the_first_batch_follows_the_anchor_order(tiny_world, tmp_path, order):
    """`anchor_order`: the first batch holds only the training window's first days
    ("time", the default) or spans the window ("spread")."""
    trainer = Trainer(tiny_world, tmp_path / "run", replace(CONFIG, anchor_order=order))
    schedule = trainer.schedule
    assert schedule.config.order == order
    _, cutoffs = schedule.batch(0, 0)
    span = (int(cutoffs.max()) - int(cutoffs.min())) / (
        int(schedule.cutoffs[-1]) - int(schedule.cutoffs[0])
    )
    assert span > 0.5 if order == "spread" else span < 0.5


def test_seeding_types_must_be_node_types(tiny_world, tmp_path):
    config = replace(CONFIG, distill=replace(CONFIG.distill, seed_types=("shop",)))
    with pytest.raises(InputError, match=r"distill.seed_types \['shop'\]"):
        Trainer(tiny_world, tmp_path / "run", config)


def test_view_relations_must_be_the_datasets(tiny_world, tmp_path):
    """A mistyped relation in a view failed inside a loader worker after the run folder
    was written; it is refused when the trainer is built, before anything is written."""
    view = replace(CONFIG.teacher_view, edge_types=("impresion",))
    with pytest.raises(InputError, match=r"teacher_view.edge_types \['impresion'\]"):
        Trainer(tiny_world, tmp_path / "run", replace(CONFIG, teacher_view=view))
    assert not (tmp_path / "run").exists()


def test_a_run_stopped_early_has_the_checkpoint_embed_reads(tiny_world, tmp_path):
    """`max_steps` between two validations: the run validates where it stops, so best.pt
    exists (it did not, and `hir embed --run` failed with 'checkpoint not found')."""
    run = tmp_path / "early"
    result = Trainer(tiny_world, run, CONFIG).fit(max_steps=2, progress=False)
    assert result.steps == 2 and result.best_validation < float("inf")
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert "val_loss" not in records[0] and records[1]["val_loss"] == result.best_validation
    assert load_checkpoint(run / "checkpoints" / "best.pt")["step"] == 2


def test_a_new_run_never_mixes_into_an_earlier_one(tiny_world, full_run, tmp_path):
    """Fitting into a finished run without resume would rewrite its config, append to its
    metrics and replace its checkpoints: refused, the run untouched."""
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(full_run, run)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with pytest.raises(InputError, match="pass --resume to continue it"):
        Trainer(tiny_world, run, replace(CONFIG, seed=3)).fit(progress=False)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_a_run_is_never_written_into_its_data(tiny_world):
    with pytest.raises(InputError, match="lies inside the input"):
        Trainer(tiny_world, tiny_world / "run", CONFIG)
    assert not (tiny_world / "run").exists()


@pytest.mark.parametrize("shapes", [True, False])
def test_cluster_terms_shape_the_encoder_only_when_asked(tiny_world, tmp_path, shapes):
    """With `distill.shapes_encoder = False` the self- and cross-distillation terms move
    the prototypes and leave the encoder's gradient at zero (engagement weight 0 here);
    with the default they move both."""
    config = replace(
        CONFIG,
        objectives="as_configured",  # no collaborative term moving the encoder
        engagement=replace(CONFIG.engagement, weight=0.0),
        distill=replace(CONFIG.distill, shapes_encoder=shapes),
    )
    trainer = Trainer(tiny_world, tmp_path / "run", config)
    batch = next(iter(make_loader(trainer.builder, trainer.schedule, epoch=0, start_batch=0)))
    loss, metrics = trainer._losses(batch, config.seed, 0, trainer.engage_train)
    assert metrics["distill"] > 0 and metrics["cross"] > 0
    loss.backward()
    prototypes = [p for n, p in trainer.student.named_parameters() if n.startswith("prototypes")]
    encoder = [
        p
        for n, p in trainer.student.named_parameters()
        if not n.startswith("prototypes") and p.grad is not None
    ]
    assert all(float(p.grad.abs().sum()) > 0 for p in prototypes)
    moved = sum(float(p.grad.abs().sum()) for p in encoder)
    assert (moved > 0) == shapes


def test_hard_negatives_read_no_owner_link_after_the_training_window(tiny_world, tmp_path):
    """The nodes created after the training window (ads, campaigns, products: their
    advertiser links are dated then) have no owner in the trainer's table (hard
    negatives are drawn by owner), though the end of the log gives them one; every other
    node keeps its owner."""
    import numpy as np

    from hir_sdk.graph.owners import NO_OWNER, owner_of_nodes

    trainer = Trainer(tiny_world, tmp_path / "run", CONFIG)
    graph, table = trainer.graph, trainer.engage_train.owners
    at_end, nodes = owner_of_nodes(graph), np.arange(graph.num_nodes)
    late = graph.created_ts >= graph.manifest.time.validation_start
    owned = late & (at_end != NO_OWNER) & (at_end != nodes)  # not advertisers themselves
    assert owned.sum() > 0
    assert (table[owned] == NO_OWNER).all()
    np.testing.assert_array_equal(table[~late], at_end[~late])


def test_auto_objectives_follow_the_content_agreement(tmp_path, capsys, monkeypatch):
    """On a world whose text reveals no interest, `hir fit` with content measures a low
    content agreement (meta.json), trains with the engagement settings (config.toml) and
    says so; `choose_objectives` takes them without text too, and keeps the configured
    settings where the text agrees, on too few edges to judge, or when asked to."""
    from types import SimpleNamespace

    from hir_sdk.cli.fit import objectives_note
    from hir_sdk.synth import SCALES, generate_world, write_world
    from hir_sdk.training import content_agreement, load_config
    from hir_sdk.training.content_agreement import (
        ContentAgreement,
        choose_objectives,
        engagement_settings,
    )

    monkeypatch.setattr(content_agreement, "MIN_PAIRS", 50)  # the tiny world has ~100

    data = tmp_path / "data"
    write_world(generate_world(replace(SCALES["tiny"], content_reveal=0.0), seed=0), data)
    config = tmp_path / "train.toml"
    config.write_text(replace(CONFIG, steps=1, use_content=True).to_toml())
    out = tmp_path / "run"
    argv = ["fit", "--data", str(data), "--out", str(out), "--config", str(config), "--quiet"]
    assert main(argv) == 0
    agreement = json.loads((out / "meta.json").read_text())["content_agreement"]
    assert agreement["pairs"] > 0 and agreement["auc"] < 0.75
    printed = capsys.readouterr().out
    assert f"content agreement {agreement['auc']:.2f} on {agreement['pairs']:,} edges" in printed
    assert "trained with the engagement settings" in printed
    used = load_config(out / "config.toml")
    assert used.objectives == "engagement" and used.content.weight == 0
    assert used.engagement.logq_correction and not used.distill.shapes_encoder
    assert used.optim.lr == 0.001 != CONFIG.optim.lr
    assert (out / "audience.npz").is_file() and used.audience == CONFIG.audience
    low, high = ContentAgreement(0.6, 100), ContentAgreement(0.9, 100)
    assert choose_objectives(CONFIG, high).content.weight == CONFIG.content.weight
    # where the text agrees it carries the neighbourhoods: no audience input there
    assert choose_objectives(CONFIG, high).audience.dim == 0 < CONFIG.audience.dim
    assert choose_objectives(CONFIG, low).audience == CONFIG.audience
    assert choose_objectives(CONFIG, None).audience == CONFIG.audience
    assert choose_objectives(CONFIG, ContentAgreement(0.9, 49)).audience == CONFIG.audience
    # without text, nothing but engagement says what belongs together
    assert choose_objectives(CONFIG, None) == engagement_settings(CONFIG)
    unchanged = replace(CONFIG, objectives="as_configured")
    assert choose_objectives(unchanged, None) == unchanged
    for config, chosen in ((CONFIG, "the engagement settings"), (unchanged, "the configured")):
        run = SimpleNamespace(content_agreement=None, config=choose_objectives(config, None))
        assert objectives_note(run).startswith("no text read") and chosen in objectives_note(run)
    assert choose_objectives(CONFIG, ContentAgreement(0.5, 0)).objectives == "as_configured"
    assert choose_objectives(CONFIG, ContentAgreement(0.6, 49)).objectives == "as_configured"
    kept = choose_objectives(replace(CONFIG, objectives="as_configured"), low)
    assert kept.objectives == "as_configured" and kept.content == CONFIG.content
    forced = choose_objectives(replace(CONFIG, objectives="engagement"), high)
    assert forced.content.weight == 0 and forced.engagement.logq_correction
    assert choose_objectives(forced, high) == forced  # a resolved config resolves to itself


def test_a_run_without_text_takes_the_engagement_settings(tiny_world, tmp_path):
    """A dataset with no content table gives no text to agree with: no agreement is
    measured and "auto" takes the engagement settings (content on there is refused
    before any reading: `test_preflight`)."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(tiny_world, data)
    (data / "content.parquet").unlink()
    trainer = Trainer(data, tmp_path / "run", replace(CONFIG, objectives="auto"))
    assert trainer.content_agreement is None
    assert trainer.config.objectives == "engagement" and not trainer.config.use_content


def test_warm_starts_keep_the_objectives_their_init_run_resolved(tmp_path):
    """A warm start under "auto" trains with what its init run resolved, so a refresh
    chain does not switch objectives midway; a named choice is kept as named."""
    from hir_sdk.training.encoder_setup import keep_init_choices

    run = tmp_path / "init"
    run.mkdir()
    (run / "config.toml").write_text(replace(CONFIG, objectives="engagement").to_toml())
    assert keep_init_choices(CONFIG, run).objectives == "engagement"
    named = replace(CONFIG, objectives="as_configured")
    assert keep_init_choices(named, run) == named
    assert keep_init_choices(CONFIG, tmp_path / "absent") == CONFIG


def test_bfloat16_precision_autocasts_on_cpu(tiny_world, full_run, tmp_path):
    """precision = "bfloat16" runs the CPU forward passes in bf16: the first step (same
    weights, same batch) gives a loss near the float32 run's, but not the very same."""
    import dataclasses

    run = tmp_path / "bf16"
    Trainer(tiny_world, run, dataclasses.replace(CONFIG, precision="bfloat16")).fit(
        max_steps=1, progress=False
    )

    def first_loss(folder):
        return json.loads((folder / "metrics.jsonl").read_text().splitlines()[0])["loss"]

    bf16, fp32 = first_loss(run), first_loss(full_run)
    assert bf16 != fp32 and abs(bf16 - fp32) < 0.05 * abs(fp32)


def test_audience_rows_are_an_input_saved_with_the_run(tiny_world, full_run, tmp_path):
    """The run saves the basis its encoder reads; the embedder reads the same basis, with
    rows as of its own time; `audience.dim = 0` trains without."""
    from hir_sdk.sampling.audience import AUDIENCE_FILE, AudienceBasis
    from hir_sdk.training.embedder import Embedder

    basis = AudienceBasis.load(full_run / AUDIENCE_FILE)
    t = Trainer(tiny_world, tmp_path / "unused", CONFIG)
    assert basis.dim == t.featurizer.content_dim == t.model_config.content_dim > 0
    assert basis.as_of == t.featurizer.audience.visible_from  # the window's middle
    embedder = Embedder(full_run, tiny_world, as_of="test_start")
    rows = embedder.builder.featurizer.audience
    assert rows.dim == basis.dim and rows.visible_from == embedder.as_of
    assert rows.has.sum() > t.featurizer.audience.has.sum()  # later edges folded in
    off = replace(CONFIG, audience=replace(CONFIG.audience, dim=0))
    Trainer(tiny_world, tmp_path / "off", off).fit(max_steps=1, progress=False)
    assert not (tmp_path / "off" / AUDIENCE_FILE).exists()
    assert Embedder(tmp_path / "off", tiny_world, as_of="test_start").model.config.content_dim == 0
    # a warm start reads what its init run read, whatever its own settings say
    warm = replace(CONFIG, init_from=str(tmp_path / "off"), train_until="test_start", select="last")
    trainer = Trainer(tiny_world, tmp_path / "warm", warm)
    assert trainer.inputs.audience is None and trainer.config.audience.dim == 0
    warm = replace(off, init_from=str(full_run), train_until="test_start", select="last")
    trainer = Trainer(tiny_world, tmp_path / "warm_on", warm)
    assert trainer.inputs.audience.as_of == basis.as_of and trainer.config.audience.dim == basis.dim


def test_numeric_node_attributes_are_statistics_saved_with_the_run(tiny_world, full_run, tmp_path):
    """The world's `price` and `bid` join the statistics on the scale the run saves; the
    embedder reads that scale; `use_attributes = false` trains without, and a warm start
    from such a run does too."""
    from hir_sdk.sampling.node_attributes import ATTRIBUTES_FILE, AttributeScale
    from hir_sdk.training.embedder import Embedder

    scale = AttributeScale.load(full_run / ATTRIBUTES_FILE)
    assert scale.columns == ("price", "bid") and scale.dim == 4
    embedder = Embedder(full_run, tiny_world, as_of="test_start")
    featurizer = embedder.builder.featurizer
    edge_types = len(embedder.graph.edge_types)
    assert featurizer.stats_dim == embedder.model.config.stats_dim == edge_types + 1 + 4
    graph = embedder.graph
    first = int(graph.type_offsets[graph.type_code("ad")])
    ads = np.arange(first, first + 50)
    stats = featurizer.features(ads, np.full(len(ads), graph.manifest.time.test_start)).stats
    np.testing.assert_array_equal(stats[:, -4:-2], 0.0)  # ads have no price
    assert (stats[:, -1] == 1.0).all() and len(np.unique(stats[:, -2])) > 10  # ... a bid
    assert np.abs(stats[:, -2]).max() < 0.5
    off = replace(CONFIG, use_attributes=False)
    Trainer(tiny_world, tmp_path / "off", off).fit(max_steps=1, progress=False)
    assert not (tmp_path / "off" / ATTRIBUTES_FILE).exists()
    off_embedder = Embedder(tmp_path / "off", tiny_world, as_of="test_start")
    assert off_embedder.model.config.stats_dim == edge_types + 1
    warm = replace(CONFIG, init_from=str(tmp_path / "off"), train_until="test_start", select="last")
    trainer = Trainer(tiny_world, tmp_path / "warm", warm)
    assert trainer.inputs.attributes is None and not trainer.config.use_attributes
    # a dataset without a column the run read does not fit it
    import shutil

    import polars as pl

    shutil.copytree(tiny_world, tmp_path / "no_bid")
    nodes = pl.read_parquet(tiny_world / "nodes.parquet").drop("bid")
    nodes.write_parquet(tmp_path / "no_bid" / "nodes.parquet")
    with pytest.raises(InputError, match=r"lacks the numeric columns \['bid'\]"):
        Embedder(full_run, tmp_path / "no_bid", as_of="test_start")
