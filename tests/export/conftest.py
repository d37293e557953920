"""A tiny encoder trained before the ranking window, a multi-stage ranker fitted after
it (saved by `hir ab`), and one checked export of all three models, shared by the export
tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hir_sdk.evaluation.pipeline import ABConfig, run_ab, write_report
from hir_sdk.export import ExportResult, export_run
from hir_sdk.ranking.baselines import XGBoostConfig
from hir_sdk.training import Trainer
from tests.evaluation.test_pipeline_hir import SMALL_RANKER
from tests.hir_sdk.interests.conftest import RUN_CONFIG, snapshot, tiny_run  # noqa: F401


@pytest.fixture(scope="session")
def export_run_dir(tiny_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interests tests' tiny run (content, centred types), trained until day 16 as a
    refresh run (its last checkpoint: it reads nothing after day 16)."""
    run = tmp_path_factory.mktemp("export_run") / "run"
    config = dataclasses.replace(RUN_CONFIG, train_until="2026-01-17", select="last")
    Trainer(tiny_world, run, config).fit(progress=False)
    return run


@pytest.fixture(scope="session")
def saved_ranker(
    tiny_world: Path, export_run_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    config = ABConfig(
        treatment="multistage",
        n_bootstrap=10,
        xgboost=XGBoostConfig(n_estimators=20),
        run=str(export_run_dir),
        multistage=SMALL_RANKER,
    )
    out = tmp_path_factory.mktemp("export_ab") / "ab"
    write_report(run_ab(tiny_world, config), out)
    return out / "multistage_ranker"


@pytest.fixture(scope="session")
def exported(
    tiny_world: Path,
    export_run_dir: Path,
    saved_ranker: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> ExportResult:
    out = tmp_path_factory.mktemp("export") / "onnx"
    return export_run(
        export_run_dir, tiny_world, out, ranker=saved_ranker, check=True, check_nodes=256
    )
