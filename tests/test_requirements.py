"""Declared dependencies admit no version with a known hole in what the SDK relies on."""

from __future__ import annotations

import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# Checkpoints load with `torch.load(weights_only=True)` (hir_sdk.training.checkpoint), which
# runs code from a crafted file before torch 2.6.0 (CVE-2025-32434).
SAFE_TORCH = Version("2.6")


def _requirement(name: str) -> Requirement:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    found = [r for r in map(Requirement, declared) if r.name == name]
    assert len(found) == 1, f"{name} should be declared once, found {found}"
    return found[0]


def test_the_torch_floor_excludes_unsafe_weights_only_loads():
    torch = _requirement("torch")
    floors = [Version(s.version) for s in torch.specifier if s.operator in (">=", ">", "~=", "==")]
    assert floors, f"torch needs a lower bound, got {torch.specifier}"
    assert max(floors) >= SAFE_TORCH, torch.specifier
    for unsafe in ("2.4.0", "2.5.1", "2.6.0rc1"):
        assert not torch.specifier.contains(unsafe, prereleases=True), unsafe
