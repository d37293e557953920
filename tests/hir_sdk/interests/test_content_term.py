"""The content-similarity term takes part in a run that reads content (the shared tiny run);
test_trainer checks that a run without content logs it as 0."""

from __future__ import annotations

import json
from pathlib import Path

from hir_sdk.training import load_config


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_run_with_content_logs_a_positive_content_loss(tiny_run):
    records = _records(tiny_run)
    assert all(r["content"] > 0 for r in records)
    # and it is part of the total, with its weight (the others are 1)
    weight = load_config(tiny_run / "config.toml").content.weight
    assert weight > 0
    for r in records:
        total = r["distill"] + r["engagement"] + r["cross"] + weight * r["content"]
        assert abs(r["loss"] - total) < 1e-4 * max(1.0, abs(total))
