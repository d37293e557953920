"""Cutting a run's metrics.jsonl back to a checkpoint on resume: a torn last line (a crash
while appending) is dropped, a damaged line elsewhere is an `InputError`."""

from __future__ import annotations

import pytest

from hir_sdk.errors import InputError
from hir_sdk.training.metrics_log import metrics_up_to

GOOD = "".join(f'{{"step": {k}, "loss": {10 - k}.5}}\n' for k in range(1, 6)).encode()


@pytest.mark.parametrize(
    ("text", "step", "kept"),
    [
        (GOOD, 3, [1, 2, 3]),
        (GOOD, 9, [1, 2, 3, 4, 5]),
        (GOOD, 0, []),
        (GOOD + b'{"step": 6, "lo', 5, [1, 2, 3, 4, 5]),  # torn mid-record
        (GOOD + b'{"step": 6, "lo', 9, [1, 2, 3, 4, 5]),  # dropped whatever the step
        (GOOD + b"\x00\x00\x00", 9, [1, 2, 3, 4, 5]),  # torn: zero-filled tail
        (GOOD + b'{"note": "\xe2\x82', 9, [1, 2, 3, 4, 5]),  # torn mid-character
        (GOOD + b'{"step": 6}', 9, [1, 2, 3, 4, 5, 6]),  # complete but for its newline: kept
        (GOOD + b"\n\n", 9, [1, 2, 3, 4, 5]),  # blank lines are no records
        (b"", 3, []),
    ],
)
def test_records_up_to_the_checkpoint_step(tmp_path, text, step, kept):
    log = tmp_path / "metrics.jsonl"
    log.write_bytes(text)
    out = metrics_up_to(log, step)
    assert [int(line.split(",")[0].split(":")[1].strip(" }")) for line in out.splitlines()] == kept
    assert out == "" or out.endswith("\n")


@pytest.mark.parametrize(
    ("bad_line", "fragment"),
    [
        ('{"step": 3, "lo', "line 3 is not a JSON record"),
        ("[1, 2]", "line 3"),
        ('{"loss": 1.0}', "line 3"),
        ('{"step": "3"}', "line 3"),
        ('{"step": true}', "line 3"),
    ],
)
def test_a_damaged_line_before_the_last_is_an_input_error(tmp_path, bad_line, fragment):
    lines = GOOD.decode().splitlines()
    lines[2] = bad_line
    log = tmp_path / "metrics.jsonl"
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=fragment) as caught:
        metrics_up_to(log, 9)
    assert caught.value.file == str(log)
