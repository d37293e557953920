"""`hir ab` end to end: dataset -> graph -> labelled examples -> features -> models ->
paired A/B on the test window -> report folder.

Models train on the train window, select (early stopping) on validation, and are scored
on the test window; every feature is as of its example's request time and every label is
read only up to its window's horizon.

XGBoost arms pick their tree depth and minimum child weight on the validation window
(`hir_sdk.ranking.xgboost_search`, `ABConfig.tune`), each for itself, so an A/B of two
feature sets does not hinge on one shared configuration that suits one of them. The
`xgboost+hir` arm also chooses there between all HIR columns and the similarity ones
(`hir_cos`, `hir_recent_*`) next to the baseline's columns.

Arms come from the ranker registry (`hir_sdk.evaluation.rankers`): `xgboost`
(hand-crafted as-of features), `popularity` (the floor), two that read HIR snapshots of
an encoder run (`config.run`), `xgboost+hir` (the same XGBoost with HIR feature columns)
and `multistage` (the sequence ranker), and any a user registers. When either arm reads HIR,
*both* arms fit on the training examples dated at or after the end of what the encoder
read (`HirLookup.fit_from`: its training window, `hir fit --until`, and the window it
chose its checkpoint on, which for a run that selects on validation runs to the test
start), so the comparison stays paired and no HIR feature comes from an encoder that saw
its example's label. Encoders for the A/B are refresh runs (`hir fit --refresh
--until`): they read nothing after `train_until`. Several runs (`config.run` a tuple:
the first trained with `--until`, refresh runs trained until the validation and test
starts) re-train the encoder for each full snapshot (see `ranking.hir_snapshots`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from hir_sdk import __version__
from hir_sdk.errors import InputError
from hir_sdk.evaluation.ab import MAX_BOOTSTRAP, ABResult, compare
from hir_sdk.evaluation.examples import WINDOWS, Examples, build_examples
from hir_sdk.evaluation.label_horizon import warn_unlogged_end
from hir_sdk.evaluation.rankers import (
    MultiStageArm,
    StackedArm,
    XGBoostArm,
    make_ranker,
    needs_hir,
    stack_split,
)
from hir_sdk.evaluation.report import ModelCurves, Report, render_markdown
from hir_sdk.evaluation.report_html import render_html
from hir_sdk.evaluation.slices import planted_interests, slice_rules, test_slices
from hir_sdk.graph import TemporalGraph, build_graph
from hir_sdk.graph.creation_order import check_creation_order
from hir_sdk.graph.owners import OwnersAsOf, conversion_index
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.io.output_folder import Inputs
from hir_sdk.ranking.baselines import XGBoostConfig
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.hir_snapshots import build_hir_lookup
from hir_sdk.ranking.ranker import Ranker, RankingData
from hir_sdk.ranking.refresh_policy import DEFAULT_REFRESH, Refresh
from hir_sdk.ranking.sequence.config import MultiStageConfig
from hir_sdk.ranking.xgboost_search import XGBOOST_GRID, XGBoostSearch
from hir_sdk.schema import load_dataset
from hir_sdk.schema.manifest import DAY, check_attribution_days, iso_time

if TYPE_CHECKING:
    from hir_sdk.graph.event_index import EventIndex
    from hir_sdk.ranking.sequence.ranker_bundle import OnlineRankerBundle


@dataclass(frozen=True)
class ABConfig:
    control: str = "xgboost"
    treatment: str = "popularity"
    attribution_days: float | None = None  # None: the manifest's
    n_bootstrap: int = 200
    confidence: float = 0.95
    seed: int = 0
    sparse_user_events: int = 5
    new_advertiser_days: int = 14  # the new ads / advertisers slices: first exposure younger
    xgboost: XGBoostConfig = field(default_factory=XGBoostConfig)
    tune: bool = True  # each XGBoost arm picks from xgboost_grid on validation
    xgboost_grid: tuple[dict, ...] = XGBOOST_GRID
    # encoder run(s) whose snapshots the HIR models read; several: refreshed encoders
    run: str | tuple[str, ...] | None = None
    # with several runs, which encoder's space each snapshot is in (refresh_policy.Refresh)
    refresh: str = DEFAULT_REFRESH.value
    multistage: MultiStageConfig = field(default_factory=MultiStageConfig)
    # xgboost+multistage: the oldest share of the training examples that fit the
    # multi-stage ranker whose probability is XGBoost's extra column
    stack_share: float = 0.5

    def __post_init__(self) -> None:
        for role in (self.control, self.treatment):
            needs_hir(role)  # an unknown name stops here
        if self.control == self.treatment:
            raise InputError("control and treatment must be different models")
        Refresh.parse(self.refresh)
        if self.new_advertiser_days < 1:
            raise InputError(f"new_advertiser_days must be >= 1, got {self.new_advertiser_days}")
        if not 1 <= self.n_bootstrap <= MAX_BOOTSTRAP:
            raise InputError(
                f"the number of bootstrap resamples must be between 1 and {MAX_BOOTSTRAP:,} "
                f"(intervals stop changing long before), got {self.n_bootstrap:,}"
            )
        if not 0 < self.stack_share < 1:
            raise InputError(f"stack_share must be between 0 and 1, got {self.stack_share}")
        if not 0 < self.confidence < 1:
            raise InputError(f"confidence must be between 0 and 1, got {self.confidence}")
        if self.attribution_days is not None:
            try:
                check_attribution_days(self.attribution_days, "attribution_days")
            except ValueError as err:
                raise InputError(str(err)) from None

    @property
    def hir_arms(self) -> list[str]:
        return [m for m in (self.control, self.treatment) if needs_hir(m)]


@dataclass(frozen=True)
class ABRun:
    report: Report
    predictions: pl.DataFrame
    examples: dict[str, Examples]
    timings: dict[str, float]
    # trained online rankers by arm (the multistage arm), saved by write_report as
    # `<arm>_ranker/` for serving and `hir export --ranker`
    rankers: dict[str, OnlineRankerBundle] = field(default_factory=dict)
    models: dict[str, Ranker] = field(default_factory=dict)  # the fitted arms, by name
    # the validation search behind each tuned XGBoost arm (ABConfig.tune), by name
    searches: dict[str, XGBoostSearch] = field(default_factory=dict)


def _after(ex: Examples, start: int) -> Examples:
    return dataclasses.replace(ex, frame=ex.frame.filter(pl.col("ts") >= start))


MOVE_WINDOWS = (
    "move the manifest's time.validation_start or time.test_start so that every window "
    "holds exposures and conversions"
)


def _check(
    examples: dict[str, Examples],
    graph: TemporalGraph,
    config: ABConfig,
    fit_from: int | None = None,
) -> None:
    """An `InputError` unless every window holds labelled exposures and conversions (the
    training window from `fit_from` on, where the HIR arms start fitting), and a stacked
    arm's first stage has training examples on both sides of its split."""
    if not graph.manifest.edge_types_with_role("conversion"):
        raise InputError(
            "the dataset declares no conversion edge type; nothing to evaluate",
            file=graph.manifest.name,
        )
    warn_unlogged_end(graph, examples["test"].attribution_window_s)
    t = graph.manifest.time
    spans = {
        "train": (t.start if fit_from is None else max(t.start, fit_from), t.validation_start),
        "validation": (t.validation_start, t.test_start),
        "test": (t.test_start, t.end),
    }
    for window in WINDOWS:
        ex = examples[window]
        start, end = spans[window]
        if ex.size == 0 and ex.censored:
            raise InputError(
                f"the {window} window has no exposures with a known label "
                f"({ex.censored:,} censored: their attribution window runs past the window's "
                f"end); lengthen the window or shorten funnel.attribution_window_days"
            )
        if ex.size == 0:
            raise InputError(
                f"the {window} window ({iso_time(start)} to {iso_time(end)}) holds no "
                f"exposures; {MOVE_WINDOWS}"
            )
    if sum(ex.positives for ex in examples.values()) == 0:
        owner = graph.manifest.owner_type
        rule = (
            f"a conversion counts for an exposure when the same user converts on the "
            f"exposed node's owner (funnel.owner_type = {owner!r}, reached through "
            "structural edges: check that they join each ad to its owner)"
            if owner is not None
            else "a conversion counts for an exposure when the same user converts on the "
            "exposed node itself (no funnel.owner_type)"
        )
        rule += (
            " strictly after the exposure and within the window (one in the exposure's own "
            "second does not count: check the timestamps' resolution)"
        )
        conversions = int(np.isin(graph.etype, graph.role_codes("conversion")).sum())
        if conversions == 0:
            raise InputError(
                "the log holds no conversion edges (of a type with role conversion); "
                "the dataset has nothing to evaluate"
            )
        raise InputError(
            f"no conversions follow any exposure within the attribution window, though the "
            f"log holds {conversions:,} conversion edges; {rule}. The dataset has nothing "
            "to evaluate"
        )
    role = {
        "train": "the rankers are fitted on it",
        "validation": "each ranker chooses its settings and trees on it",
        "test": "the A/B is measured on it",
    }
    for window in WINDOWS:
        ex = examples[window]
        if ex.positives == 0:
            start, end = spans[window]
            raise InputError(
                f"the {window} window ({iso_time(start)} to {iso_time(end)}) has {ex.size:,} "
                f"labelled exposures and no conversion within "
                f"{ex.attribution_window_s / DAY:g} days of one, and {role[window]}; "
                f"{MOVE_WINDOWS}, or lengthen funnel.attribution_window_days"
            )
    test_users = examples["test"].frame["user"].n_unique()
    if test_users < 2:  # one user: every resample is the same, a zero-width "interval"
        raise InputError(
            f"the test window's labelled exposures come from {test_users} user: the A/B's "
            "intervals resample users, so it needs at least two (a log with more users, "
            "or an earlier time.test_start)"
        )
    for name in (config.control, config.treatment):
        arm = make_ranker(name, config)
        if isinstance(arm, StackedArm):
            train = examples["train"]
            stack_split(
                train.frame["ts"].to_numpy(), arm.share, arm.name, train.attribution_window_s
            )


def check_windows(
    graph: TemporalGraph, config: ABConfig | None = None, *, fit_from: int | None = None
) -> None:
    """Before any training: an `InputError` unless the A/B's training examples (those at
    or after `fit_from`, where HIR arms start fitting), validation and test windows each
    hold labelled exposures and conversions, and a stacked arm can split its training
    examples (`hir run` calls it as soon as the graph is built, so a log that cannot be
    evaluated fails in seconds, not after the encoders' training)."""
    config = config or ABConfig()
    owners = OwnersAsOf(graph)
    examples = _window_examples(graph, config, owners, conversion_index(graph, owners))
    if fit_from is not None:
        examples["train"] = _after(examples["train"], fit_from)
    _check(examples, graph, config, fit_from)


def _window_examples(
    graph: TemporalGraph, config: ABConfig, owners: OwnersAsOf, conversions: EventIndex
) -> dict[str, Examples]:
    """Each window's labelled examples, labels from `config.attribution_days`."""
    return {
        w: build_examples(
            graph,
            w,
            attribution_days=config.attribution_days,
            owners=owners,
            conversions=conversions,
        )
        for w in WINDOWS
    }


def run_ab(
    data: str | Path, config: ABConfig | None = None, *, truth: str | Path | None = None
) -> ABRun:
    """Run the offline A/B on a dataset folder (see the module docstring).

    `truth` is a planted-truth folder for per-interest slices (default: `data/truth` when
    it exists).
    """
    config = config or ABConfig()
    if truth is not None and not Path(truth).is_dir():  # a typo would drop the slices silently
        what = "is not a folder" if Path(truth).exists() else "does not exist"
        raise InputError(f"the planted-truth folder {what}", file=truth)
    started = time.perf_counter()
    data = Path(data)
    graph = build_graph(load_dataset(data))
    check_creation_order(graph, data)
    graph_s = time.perf_counter() - started
    hir = None
    if config.hir_arms:
        if config.run is None:
            raise InputError(
                f"{' and '.join(config.hir_arms)} read HIR snapshots: give an encoder run "
                "(--run RUN, trained with hir fit --until TIME before the window to rank)"
            )
        hir = build_hir_lookup(config.run, data, graph, refresh=config.refresh)
    hir_s = time.perf_counter() - started - graph_s
    truth_dir = Path(truth) if truth is not None else data / "truth"
    run = run_ab_on_graph(graph, config, truth=truth_dir if truth_dir.is_dir() else None, hir=hir)
    run.timings["graph"] = graph_s
    if hir is not None:
        run.timings["hir snapshots"] = hir_s
    return run


def ranking_data(
    graph: TemporalGraph, config: ABConfig, hir: HirLookup | None = None
) -> tuple[dict[str, Examples], RankingData]:
    """The A/B's labelled examples by window and what its arms read: labels from
    `config.attribution_days`, the training window starting after what the first HIR
    encoder read when an arm reads HIR snapshots (`hir`), as-of features per window."""
    owners = OwnersAsOf(graph)
    conversions = conversion_index(graph, owners)  # read once: labels and HIR features
    examples = _window_examples(graph, config, owners, conversions)
    if config.hir_arms:
        if hir is None:
            raise InputError(f"{' and '.join(config.hir_arms)} need HIR snapshots")
        examples["train"] = _after(examples["train"], hir.fit_from)
        if examples["train"].size == 0:
            raise InputError(
                f"no labelled training exposures from {iso_time(hir.fit_from)} (the end "
                "of what the first HIR encoder read, its training window and any "
                "checkpoint selection window) on: train the encoder as a refresh run "
                "(hir fit --refresh --until TIME), at least one attribution window before "
                "validation_start; a run that selects its checkpoint on validation reads "
                "until the test start"
            )
        hir.check_fit_window(int(examples["train"].frame["ts"].min()))
    _check(examples, graph, config, hir.fit_from if config.hir_arms and hir is not None else None)
    features = AsOfFeatures(graph, owners)
    X = {}
    for w, ex in examples.items():
        f = ex.frame
        X[w] = features.compute(f["user"].to_numpy(), f["ad"].to_numpy(), f["ts"].to_numpy())
    frames = {w: ex.frame for w, ex in examples.items()}
    return examples, RankingData(graph, frames, X, hir, owners, conversions)


def run_ab_on_graph(
    graph: TemporalGraph,
    config: ABConfig | None = None,
    *,
    truth: Path | None = None,
    hir: HirLookup | None = None,
) -> ABRun:
    """`run_ab` on an already built graph (and HIR snapshots, for the HIR models)."""
    config = config or ABConfig()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    planted = planted_interests(graph, truth) if truth is not None else None  # checked first
    examples, data = ranking_data(graph, config, hir)
    y = {w: data.labels(w) for w in examples}
    owners = data.owners
    timings["examples+features"] = time.perf_counter() - started
    models: dict[str, Ranker] = {}
    p = {}
    for name in (config.control, config.treatment):
        mark = time.perf_counter()
        models[name] = make_ranker(name, config)
        models[name].fit(data)
        p[name] = np.asarray(models[name].predict(data, "test"), dtype=np.float64)
        if p[name].shape != y["test"].shape or not np.all((p[name] >= 0) & (p[name] <= 1)):
            raise InputError(
                f"ranker {name!r} predicted {p[name].shape} values, not {y['test'].shape} "
                "probabilities in [0, 1]"
            )
        timings[f"fit+predict {name}"] = time.perf_counter() - mark
    test = examples["test"].frame
    slices = test_slices(
        graph,
        test["user"].to_numpy(),
        test["ad"].to_numpy(),
        test["owner"].to_numpy(),
        test["ts"].to_numpy(),
        cutoff=graph.manifest.time.test_start,
        min_events=config.sparse_user_events,
        new_days=config.new_advertiser_days,
        planted=planted,
        owners=owners,
    )
    mark = time.perf_counter()
    ab: ABResult = compare(
        y["test"],
        p[config.control],
        p[config.treatment],
        test["user"].to_numpy(),
        control=config.control,
        treatment=config.treatment,
        slices=slices,
        n_bootstrap=config.n_bootstrap,
        confidence=config.confidence,
        seed=config.seed,
    )
    timings["bootstrap"] = time.perf_counter() - mark
    report = Report(
        title=f"Offline A/B: {config.treatment} vs {config.control} on {graph.manifest.name}",
        ab=ab,
        control=ModelCurves.of(config.control, y["test"], p[config.control]),
        treatment=ModelCurves.of(config.treatment, y["test"], p[config.treatment]),
        protocol=_protocol(graph, examples, models, config, hir),
        slice_rules=slice_rules(
            graph,
            min_events=config.sparse_user_events,
            new_days=config.new_advertiser_days,
            planted=planted is not None,
        ),
    )
    predictions = pl.DataFrame(
        {
            "user_id": graph.node_ids_of(test["user"].to_numpy()),
            "ad_id": graph.node_ids_of(test["ad"].to_numpy()),
            "ts": test["ts"],
            "label": test["label"],
            f"p_{config.control}": p[config.control],
            f"p_{config.treatment}": p[config.treatment],
        },
        strict=False,
    )
    rankers = {
        name: arm.model.bundle(arm.examples(data, "test"))
        for name, arm in models.items()
        if isinstance(arm, MultiStageArm)
    }
    return ABRun(
        report=report,
        predictions=predictions,
        examples=examples,
        timings=timings,
        rankers=rankers,
        models=models,
        searches={k: m.search for k, m in models.items() if isinstance(m, XGBoostArm) and m.search},
    )


def _protocol(
    graph: TemporalGraph,
    examples: dict[str, Examples],
    models: dict,
    config: ABConfig,
    hir: HirLookup | None,
) -> dict[str, str]:
    t = graph.manifest.time
    out = {
        "dataset": f"{graph.manifest.name} (fingerprint {graph.fingerprint})",
        "windows": (
            f"train [{iso_time(t.start)}, {iso_time(t.validation_start)}), validation "
            f"[{iso_time(t.validation_start)}, {iso_time(t.test_start)}), test "
            f"[{iso_time(t.test_start)}, {iso_time(t.end)})"
        ),
        "attribution": (
            f"a conversion by the user on the ad's owner within "
            f"{examples['test'].attribution_window_s / DAY:g} days after the "
            "exposure; labels read only up to each window's end"
        ),
    }
    for w, ex in examples.items():
        out[f"{w} examples"] = (
            f"{ex.size:,} labelled ({ex.positives:,} positive, "
            f"{ex.positives / max(ex.size, 1):.3%}), {ex.censored:,} "
            "censored"
        )
    if hir is not None and config.hir_arms:
        snaps = ", ".join(iso_time(s.as_of) for s in hir.full_snapshots)
        arrivals = len(hir.snapshots) - len(hir.full_snapshots)
        on_creation = hir.created_rows
        encoders = (
            "each embedded by an encoder trained until its time"
            + (
                ", rotated onto the first encoder's space (Procrustes) with its clusters"
                if hir.aligned
                else ""
            )
            if hir.refreshed
            else "all embedded by one encoder"
        )
        out["fit window"] = (
            f"both arms fit on training examples from {iso_time(hir.fit_from)} (the "
            "end of what the first HIR encoder read: its training window and any checkpoint "
            f"selection window) on; HIR snapshots as of {snaps}"
            + (f", and {arrivals} arrival snapshots between them" if arrivals else "")
            + (f" ({on_creation:,} new ads embedded on creation)" if on_creation else "")
            + f"; {encoders}"
        )
    for name, arm in models.items():
        out[name] = arm.describe()
    out["sdk"] = f"hir-sdk {__version__}"
    return out


def _finite(value: object) -> object:
    """`value` with every NaN or infinite float as None (JSON has no NaN: an interval
    left out for too few resamples is `null` in metrics.json)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


def write_report(
    run: ABRun, out: str | Path, *, overwrite: bool = False, inputs: Inputs = ()
) -> Path:
    """Write report.md, report.html, metrics.json, predictions.parquet and each trained
    online ranker (`<arm>_ranker/`) atomically. `overwrite` replaces an earlier report
    only; `out` may not be, hold or lie inside any of `inputs` (the dataset, the encoder
    runs): see `hir_sdk.io.output_folder`."""
    with atomic_output_dir(out, kind="report", overwrite=overwrite, inputs=inputs) as tmp:
        (tmp / "report.md").write_text(render_markdown(run.report), encoding="utf-8")
        (tmp / "report.html").write_text(render_html(run.report), encoding="utf-8")
        ab = run.report.ab
        metrics = {"verdict": ab.verdict, **asdict(ab), "timings_s": run.timings}
        (tmp / "metrics.json").write_text(
            json.dumps(_finite(metrics), indent=2, default=float, allow_nan=False) + "\n",
            encoding="utf-8",
        )
        run.predictions.write_parquet(tmp / "predictions.parquet")
        for name, bundle in run.rankers.items():
            bundle.save(tmp / f"{name}_ranker")
    return Path(out)
