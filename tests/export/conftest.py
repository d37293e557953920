"""The docs/export.md example, run once per session: a tiny encoder (content features on)
trained before the ranking window, a multi-stage ranker fitted after it (saved by
`hir ab`), and one checked export of all three models. The export tests read what it
wrote, and `test_export_page_example` compares what it printed with the page. Every
test that reads it is in `test_export_run.py`, so that it runs once per test worker."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from hir_sdk.export import ExportResult
from tests.hir_sdk.interests.conftest import snapshot, tiny_run  # noqa: F401
from tests.page_example import exec_page_example


@pytest.fixture(scope="session")
def export_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], str]:
    """The example's globals and what it printed (its `mkdtemp` under pytest's tmp)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("export_page")))
        return exec_page_example("export.md")


@pytest.fixture(scope="session")
def export_work(export_page: tuple[dict[str, object], str]) -> Path:
    work = export_page[0]["work"]
    assert isinstance(work, Path)
    return work


@pytest.fixture(scope="session")
def export_run_dir(export_work: Path) -> Path:
    """The example's encoder run, trained until day 16 as a refresh run (its last
    checkpoint: it reads nothing after day 16)."""
    return export_work / "run"


@pytest.fixture(scope="session")
def saved_ranker(export_work: Path) -> Path:
    return export_work / "ab" / "multistage_ranker"


@pytest.fixture(scope="session")
def exported(export_page: tuple[dict[str, object], str]) -> ExportResult:
    result = export_page[0]["result"]
    assert isinstance(result, ExportResult)
    return result
