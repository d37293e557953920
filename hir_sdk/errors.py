"""The one exception type for user mistakes: bad files, bad columns, bad values.

An `InputError` names the file, the column and a few offending rows. The CLI prints it
and exits with code 2; library callers catch it like any exception. A `LabelWarning`
says that data the run accepts makes some results less reliable; the CLI prints it as
one line and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

EXIT_INPUT_ERROR = 2
MAX_SHOWN_ROWS = 5


class InputError(Exception):
    """A problem with the caller's input, reported as one readable message.

    Args:
        problem: what is wrong, in one sentence.
        file: the file it was found in, if any.
        column: the column it was found in, if any.
        rows: up to `MAX_SHOWN_ROWS` offending rows, each already rendered as text.
        total: how many rows are affected in all (defaults to ``len(rows)``).
    """

    exit_code = EXIT_INPUT_ERROR

    def __init__(
        self,
        problem: str,
        *,
        file: str | Path | None = None,
        column: str | None = None,
        rows: Sequence[str] = (),
        total: int | None = None,
    ) -> None:
        self.problem = problem
        self.file = None if file is None else str(file)
        self.column = column
        self.rows = tuple(rows)[:MAX_SHOWN_ROWS]
        self.total = len(rows) if total is None else total
        super().__init__(self.render())

    def render(self) -> str:
        where = [part for part in (self.file, self.column and f"column '{self.column}'") if part]
        head = ": ".join([*where, self.problem])
        lines = [head]
        if self.rows:
            shown = len(self.rows)
            more = f" (showing {shown} of {self.total})" if self.total > shown else ""
            lines.append(f"offending rows{more}:")
            lines.extend(f"  {row}" for row in self.rows)
        return "\n".join(lines)


class LabelWarning(UserWarning):
    """Some labels rest on time the log does not cover (see
    `evaluation.label_horizon`); the run goes on."""
