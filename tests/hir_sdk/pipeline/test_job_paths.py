"""The paths `run_job` writes into its output name where the output will be once the
temporary folder it wrote into is renamed (`hir run`, `hir demo`): here, the refresh
runs' `init_from`, which a user reuses with `--config RUN/config.toml`."""

from __future__ import annotations

from hir_sdk.pipeline.job import record_init_from
from hir_sdk.training import TrainConfig, load_config
from hir_sdk.training.preflight import check_init_from


def _runs(tmp, elsewhere):
    """A job's three runs in `tmp`, as `training.refresh_chain` writes their configs: the
    first warm-started from `elsewhere` (a config file's init_from), each refresh from
    the run before it."""
    runs, before = [], elsewhere
    for name in ("run", "run_validation", "run_test"):
        (tmp / name).mkdir(parents=True)
        config = TrainConfig(select="last", train_until="100", init_from=str(before))
        (tmp / name / "config.toml").write_text(config.to_toml())
        runs.append(tmp / name)
        before = tmp / name
    return runs


def test_refresh_runs_name_the_published_run_they_warm_started_from(tmp_path):
    elsewhere = tmp_path / "runs" / "early"
    tmp, final = tmp_path / ".job.tmp-1", tmp_path / "job"
    runs = _runs(tmp, elsewhere)
    before = {run.name: (run / "config.toml").read_text() for run in runs}
    record_init_from(runs, tmp, final)
    after = {run.name: load_config(run / "config.toml") for run in runs}
    assert after["run"].init_from == str(elsewhere)  # not a run of the job: as it was
    assert after["run_validation"].init_from == str(final.resolve() / "run")
    assert after["run_test"].init_from == str(final.resolve() / "run_validation")
    for run in runs:  # nothing else changes
        lines = [(run / "config.toml").read_text(), before[run.name]]
        kept = [
            [x for x in text.splitlines() if not x.startswith("init_from = ")] for text in lines
        ]
        assert kept[0] == kept[1]
    tmp.rename(final)  # what the atomic output does next: the path then names a run
    check_init_from(load_config(final / "run_test" / "config.toml").init_from)


def test_without_a_final_folder_nothing_is_rewritten(tmp_path):
    runs = _runs(tmp_path / "out", tmp_path / "early")
    before = [(run / "config.toml").read_text() for run in runs]
    record_init_from(runs, tmp_path / "out", None)
    assert [(run / "config.toml").read_text() for run in runs] == before
