"""A run's `metrics.jsonl`: one JSON record per training step, appended as training goes.

On resume the log is cut back to the checkpoint's step. A crash while a record was being
appended leaves a torn last line: it is dropped (the checkpoint's step decides what is
kept, and that step's record is written again when training reaches it). Any other line
that is not a JSON record with an integer `step` is a damaged or hand-edited log: an
`InputError` naming the line, rather than a guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hir_sdk.errors import InputError

METRICS_FILE = "metrics.jsonl"


def _record(line: bytes) -> dict[str, Any] | None:
    """The record on one line, or None when it is not a JSON object with an integer step."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    return record


def metrics_up_to(log: Path, step: int) -> str:
    """The text of the log `log` keeping only the records of steps `<= step`, in order.

    A last line that is not a valid record is a torn write and is dropped; an invalid line
    anywhere else raises `InputError`.
    """
    lines = log.read_bytes().split(b"\n")
    kept = []
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines[: last + 1], start=1):
        if not line.strip():
            continue
        record = _record(line)
        if record is None:
            if number - 1 == last:
                break  # torn by a crash while it was being appended
            raise InputError(
                f"line {number} is not a JSON record with an integer 'step' (damaged or "
                f"hand-edited log?): {line[:80].decode('utf-8', 'replace')!r}",
                file=log,
            )
        if record["step"] <= step:
            kept.append(line.decode("utf-8").rstrip("\r") + "\n")
    return "".join(kept)
