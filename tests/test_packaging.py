"""One distribution, one namespace, four source roots; imports point one way."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import hir_sdk

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = {
    "hir_sdk": "hir_sdk",
    "hir_sdk.ranking": "ranking",
    "hir_sdk.export": "export",
    "hir_sdk.evaluation": "evaluation",
}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _packages_on_disk() -> set[str]:
    found = set()
    for package, folder in SOURCE_ROOTS.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            found.add(".".join((package, *rel)))
    return found


def test_declared_packages_match_folders():
    config = _pyproject()["tool"]["setuptools"]
    assert set(config["packages"]) == _packages_on_disk()
    assert config["package-dir"] == SOURCE_ROOTS


def test_every_data_file_is_declared_package_data():
    """A file other than Python source (the report template) ships only if package-data
    names it: an editable install would read it from the tree and hide the omission."""
    declared = _pyproject()["tool"]["setuptools"].get("package-data", {})
    for package, folder in SOURCE_ROOTS.items():
        base = ROOT / folder
        for path in base.rglob("*"):
            if path.is_dir() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            owner = ".".join((package, *path.parent.relative_to(base).parts))
            while owner not in declared and owner != package:  # the nearest package
                owner = owner.rsplit(".", 1)[0]
            rel = path.relative_to(ROOT / SOURCE_ROOTS.get(owner, folder)).as_posix()
            assert any(Path(rel).match(glob) for glob in declared.get(owner, [])), rel


def test_subpackages_resolve_to_their_source_roots():
    import hir_sdk.evaluation
    import hir_sdk.export
    import hir_sdk.ranking

    for module, folder in [
        (hir_sdk.ranking, "ranking"),
        (hir_sdk.export, "export"),
        (hir_sdk.evaluation, "evaluation"),
        (hir_sdk, "hir_sdk"),
    ]:
        assert Path(module.__file__).resolve().parent == ROOT / folder


def test_every_subpackage_is_listed_in_the_package_docstring_and_the_layout():
    """`hir_sdk.__doc__` names each subpackage, and docs/architecture.md's layout block
    has a line for each folder, so neither falls behind the code."""
    layout = (ROOT / "docs" / "architecture.md").read_text()
    layout = layout[layout.index("## Package layout") :]
    for package in sorted(_packages_on_disk() - {"hir_sdk"}):
        short = package.removeprefix("hir_sdk.")
        assert f"`{package}`" in hir_sdk.__doc__ or f"`{short}`" in hir_sdk.__doc__, package
        folder = short.split(".")[-1] + "/"
        assert f"\n{folder} " in layout or f"  {folder} " in layout, package


def test_console_script_is_declared():
    assert _pyproject()["project"]["scripts"]["hir"] == "hir_sdk.cli.main:main"
    assert hir_sdk.__version__ == _pyproject()["project"]["version"]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_never_imports_ranking_export_or_evaluation():
    """`hir_sdk.cli` and `hir_sdk.pipeline` are the application layer on top of all four
    roots; nothing else in the core may reach up, and only the CLI imports the pipeline."""
    outer = ("hir_sdk.ranking", "hir_sdk.export", "hir_sdk.evaluation")
    application = {"cli", "pipeline"}
    for path in (ROOT / "hir_sdk").rglob("*.py"):
        parts = set(path.relative_to(ROOT).parts)
        if not parts & application:
            bad = [m for m in _imports(path) if m.startswith("hir_sdk.pipeline")]
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
        if parts & application:
            continue
        bad = [m for m in _imports(path) if m.startswith(outer)]
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_ranking_never_imports_export_or_evaluation():
    for path in (ROOT / "ranking").rglob("*.py"):
        text = path.read_text()
        reads_truth = "TRUTH_DIR" in text or '"truth"' in text or "'truth'" in text
        assert not reads_truth, f"{path} must not read the planted truth"
        bad = [m for m in _imports(path) if m.startswith(("hir_sdk.export", "hir_sdk.evaluation"))]
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_no_training_code_reads_the_planted_truth():
    """Only the generator writes truth/; only evaluation reads it (the CLI may hand its
    path to evaluation)."""
    for path in (ROOT / "hir_sdk").rglob("*.py"):
        if {"synth", "cli"} & set(path.relative_to(ROOT).parts):
            continue
        assert "TRUTH_DIR" not in path.read_text(), path


def test_the_command_line_imports_torchrec_and_matplotlib_only_when_needed():
    """Importing TorchRec or matplotlib takes seconds; `hir --help`, and `hir demo` or
    `hir ab` until they train the multi-stage arm or draw the report's charts, need
    neither, so the sequence ranker's models (`hir_sdk.ranking.sequence` resolves its
    names lazily) and the charts are imported on first use."""
    code = (
        "import sys, hir_sdk.cli.main, hir_sdk.evaluation.pipeline;"
        "from hir_sdk.ranking.sequence import EventHistory, MultiStageConfig;"
        "assert 'torchrec' not in sys.modules, 'imported at start';"
        "assert 'matplotlib' not in sys.modules, 'imported at start';"
        "from hir_sdk.ranking.sequence import MultiStageRanker;"
        "assert 'torchrec' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def _lazy_packages() -> dict[str, Path]:
    """The packages whose names are imported on first use (`hir_sdk.lazy_exports`)."""
    found = {}
    for package, folder in SOURCE_ROOTS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "lazy_exports(__name__, _MODULES)" in init.read_text():
                rel = init.parent.relative_to(ROOT / folder).parts
                found[".".join((package, *rel))] = init
    return found


def _type_checking_imports(init: Path) -> dict[str, str]:
    """name -> module of the imports under `if TYPE_CHECKING:` in `init`."""
    names = {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                names.update({alias.name: statement.module for alias in statement.names})
    return names


def test_the_lazy_packages_list_and_resolve_every_name_they_export():
    """A lazy package names its exports three times (`__all__` for `import *` and linters,
    `_MODULES` for the lookup, imports under `TYPE_CHECKING` for type checkers): the three
    must agree, each name must resolve to the object its module defines, and no name may
    be a module of the package too (importing that module would hide the name)."""
    import importlib
    import pkgutil

    lazy = _lazy_packages()
    assert {"hir_sdk.schema", "hir_sdk.synth", "hir_sdk.ranking.sequence"} <= set(lazy)
    for name, init in lazy.items():
        package = importlib.import_module(name)
        modules = package._MODULES
        assert sorted(package.__all__) == sorted(modules), name
        expected = {export: f"{name}.{module}" for export, module in modules.items()}
        assert _type_checking_imports(init) == expected, name
        assert not set(modules) & {m.name for m in pkgutil.iter_modules(package.__path__)}
        assert set(modules) <= set(dir(package)), name
        for export, module in modules.items():
            defined = importlib.import_module(f"{name}.{module}")
            assert getattr(package, export) is getattr(defined, export), (name, export)
