"""The main job on a dataset folder, with one graph and one set of encoders passed from
stage to stage:

1. check the first encoder's settings that need no graph against the manifest
   (`training.preflight`: init_from, device, seed types), validate the data and build
   the temporal graph (once), and check that no edge comes before its node's creation
   (`graph.creation_order`) and that the A/B's windows each hold conversions
   (`evaluation.pipeline.check_windows`);
2. train the encoder on the first half of the training window (from its first edge) and
   refresh it (`training.refresh_chain`);
3. embed users and ads at three refresh times, each with the newest encoder trained
   before it (`ranking.hir_snapshots`);
4. retrieval recall of the ads users convert on in the test window, the engagement
   prior's weight chosen on the validation window (`evaluation.prior_choice`);
5. the offline A/B: XGBoost + HIR features (or `JobSettings.treatment`) against XGBoost;
6. ONNX export of the newest encoder and BoM quantizer, checked against torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.pipeline.settings import JobSettings
from hir_sdk.schema.manifest import DAY

if TYPE_CHECKING:
    from hir_sdk.evaluation.conversion_retrieval import ConversionRecall
    from hir_sdk.evaluation.pipeline import ABRun
    from hir_sdk.evaluation.prior_choice import PriorChoice
    from hir_sdk.export.export_run import ExportResult
    from hir_sdk.graph import TemporalGraph
    from hir_sdk.ranking.hir_lookup import HirLookup

JOB_FILE = "job.toml"
RETRIEVAL_FILE = "retrieval.json"


@dataclass(frozen=True)
class JobResult:
    """What each stage made: the graph, the encoders' run folders (first, then the
    refreshes), the snapshots, the retrieval recall, the A/B and the ONNX export."""

    graph: TemporalGraph
    runs: list[Path]
    hir: HirLookup
    recall: ConversionRecall
    # None: no snapshot before the validation window, or no conversion in it, to choose on
    prior: PriorChoice | None
    ab: ABRun
    exported: ExportResult


def _quiet(_: str) -> None:
    pass


def retrieval_record(recall: ConversionRecall, prior: PriorChoice | None) -> str:
    """`OUT/retrieval.json`: the retrieval table's figures and the engagement prior's
    weight and half-life scale with the validation scores they were chosen by (null
    without a choice), for whoever serves the lists or compares runs. A scale of null
    is infinity: the prior counts engagement undecayed."""
    import dataclasses
    import json
    import math

    def scale(value: float) -> float | None:
        return None if math.isinf(value) else value

    record = dataclasses.asdict(recall)
    record["prior_half_life_scale"] = scale(recall.prior_half_life_scale)
    record["prior_choice"] = None
    if prior is not None:
        record["prior_choice"] = {
            "weight": prior.weight,
            "window": prior.window,
            "over_users_with_a_history": prior.with_history,
            "scores": [{"weight": w, "mean_recall": s} for w, s in prior.scores.items()],
            "weight_without_history": prior.weight_without_history,
            "scores_without_history": [
                {"weight": w, "mean_recall": s} for w, s in prior.cold_scores.items()
            ],
            "half_life_scale": scale(prior.half_life_scale),
            "scores_by_half_life_scale": [
                {"half_life_scale": scale(h), "mean_recall_all_users": s}
                for h, s in prior.scale_scores.items()
            ],
        }
    return json.dumps(record, indent=2) + "\n"


def moved(path: str | Path, out: Path, final: Path | None) -> Path:
    """Where `path`, inside `out`, will be once `out` is renamed to `final` (None: `out`
    stays); a ValueError for a path outside `out`."""
    inside = Path(path).resolve().relative_to(out.resolve())
    return (final or out).resolve() / inside


def record_init_from(runs: list[Path], out: Path, final: Path | None) -> None:
    """Rewrite the `config.toml` of each run in `runs` warm-started from a run inside
    `out` so that its `init_from` names that run where it will be once `out` is renamed
    to `final`: the file is the one to reuse (`--config RUN/config.toml`), and `out`, a
    temporary folder, is gone by then. An `init_from` outside `out` (the first encoder's,
    from a config file) stays as it is; so does every one without a `final`."""
    from hir_sdk.io.atomic import atomic_write_text
    from hir_sdk.training.config import load_config

    if final is None:  # the runs stay where they are
        return
    for run in runs:
        path = run / "config.toml"
        config = load_config(path)
        if not config.init_from:
            continue
        try:
            init_from = moved(config.init_from, out, final)
        except ValueError:  # not one of this job's runs
            continue
        atomic_write_text(path, replace(config, init_from=str(init_from)).to_toml())


def run_job(
    data: Path,
    out: Path,
    settings: JobSettings,
    *,
    progress: Callable[[str], None] = _quiet,
    truth: Path | None = None,
    final: Path | None = None,
) -> JobResult:
    """Stages 1-6 of the module docstring on the dataset folder `data`, written into
    `out` (an existing folder the caller owns: `hir run` passes the temporary folder of
    its atomic output, and as `final` the folder it becomes, which the run paths written
    into the embeddings' and the export's metadata and the refresh runs' `init_from`
    then name). `progress` is called with
    a line as each stage ends; `truth` is a synthetic world's planted truth, for the
    A/B's truth slices."""
    import tomli_w

    from hir_sdk.evaluation.conversion_retrieval import conversion_recall, repeats_conversions
    from hir_sdk.evaluation.pipeline import check_windows, run_ab_on_graph, write_report
    from hir_sdk.evaluation.prior_choice import prior_from_snapshots
    from hir_sdk.export import export_run
    from hir_sdk.graph import build_graph_from_dir, save_graph
    from hir_sdk.graph.creation_order import check_creation_order
    from hir_sdk.interests import write_embeddings
    from hir_sdk.ranking.hir_snapshots import build_hir_lookup
    from hir_sdk.training.as_of import first_window_end, first_window_start
    from hir_sdk.training.preflight import check_before_loading
    from hir_sdk.training.refresh_chain import refresh_ends, train_refreshed

    # the first encoder's settings that need no graph (init_from, device, seed types),
    # checked before minutes of building it
    check_before_loading(settings.first_run(), data)
    try:  # data written into the output (hir demo): its path inside it, which stays valid
        shown = data.resolve().relative_to(out.resolve()).as_posix()
    except ValueError:
        shown = str(data.resolve())
    (out / JOB_FILE).write_text(tomli_w.dumps(settings.to_dict(shown)))
    graph = build_graph_from_dir(data)
    t = graph.manifest.time
    refresh = settings.refresh
    ends = refresh_ends(t, first_window_end(graph), refresh=refresh > 0)
    # no edge before its node exists, and every window the A/B reads holds conversions:
    # checked before minutes of training
    check_creation_order(graph, data)
    check_windows(graph, settings.ab, fit_from=ends["run"])
    save_graph(graph, out / "graph")
    progress(f"validated and built the graph: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges")

    first = settings.first_run()
    runs = train_refreshed(data, out, first, ends, refresh_steps=refresh or None, progress=True)
    days = (ends["run"] - first_window_start(graph)) / DAY
    progress(
        f"trained the encoder for {settings.steps} steps on the first {days:.0f} days"
        + (
            f", refreshed it until the validation and the test start "
            f"({refresh} warm-started steps each)"
            if len(runs) > 1
            else ""
        )
    )
    hir = build_hir_lookup(runs, data, graph, seed=settings.seed)
    latest = hir.full_snapshots[-1]

    run_shown = str(moved(latest.meta["run"], out, final))
    write_embeddings(replace(latest, meta={**latest.meta, "run": run_shown}), out / "embeddings")
    sizes = latest.meta["bom"]
    progress(
        f"embedded users and ads at {len(hir.full_snapshots)} refresh times, new ads "
        f"a minute after their creation ({hir.created_rows:,}) and daily in between "
        f"({len(hir.snapshots) - len(hir.full_snapshots)} arrival snapshots; BoM "
        f"{sizes['codebooks']}x{sizes['codewords']}, relative error "
        f"{sizes['relative_error']:.3f})"
    )
    # where no user converts twice on one ad (ratings: one per movie), what a user already
    # had is left out of their lists; in ads logs users do convert again
    exclude_seen = not repeats_conversions(graph)
    prior = prior_from_snapshots(graph, hir.full_snapshots, exclude_seen=exclude_seen)
    weight = prior.weight if prior else 0.0
    recall = conversion_recall(
        graph,
        latest,
        exclude_seen=exclude_seen,
        prior_weight=weight,
        cold_prior_weight=prior.weight_without_history if prior else None,
        prior_half_life_scale=prior.half_life_scale if prior else 1.0,
    )
    (out / RETRIEVAL_FILE).write_text(retrieval_record(recall, prior))
    progress(
        "retrieval of the ads users convert on: BoM index, exact k-NN, popularity"
        + (" (what a user had before is left out)" if exclude_seen else "")
        + (
            f"; engagement prior weight {weight:g} ({prior.weight_without_history:g} for users "
            f"without a history), half-lives x {prior.half_life_scale:g}, chosen on validation"
            if prior
            else ""
        )
    )
    ab = run_ab_on_graph(graph, settings.ab, truth=truth, hir=hir)
    write_report(ab, out / "ab")
    progress(f"offline A/B: {settings.treatment} vs xgboost on the test window")
    exported = export_run(
        runs[-1],  # the encoder that embedded the test-start snapshot
        data,
        out / "onnx",
        embeddings=out / "embeddings",
        check=True,
        check_nodes=256,
        recorded_run=moved(runs[-1], out, final),
    )
    progress(
        f"exported {', '.join(exported.files)} ({runs[-1].name}) and checked them against torch"
    )
    record_init_from(runs, out, final)  # the runs' last readers are done with them
    return JobResult(graph, runs, hir, recall, prior, ab, exported)
