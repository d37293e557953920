"""A manifest whose `time.end` lies well past the log's last edge.

An exposure's label is known when its attribution window ends before `time.end`; the
examples whose window reaches past it are censored. The manifest's `end` is the data's
word that the log covers everything up to it. Where it lies more than one attribution
window after the last edge, the exposures of the log's last days have label windows that
run into time nobody logged, so conversions that would have come count as none: they
become negatives instead of being censored. That is allowed (a round end date), so it is
a warning, not an error, with what to change.
"""

from __future__ import annotations

import warnings

from hir_sdk.errors import LabelWarning
from hir_sdk.graph import TemporalGraph
from hir_sdk.schema.manifest import DAY, iso_time


def unlogged_end(graph: TemporalGraph, window_s: int) -> str | None:
    """The warning's text when `time.end` is more than `window_s` (the attribution
    window, seconds) after the last edge, else None."""
    if not graph.num_edges:
        return None
    last, end = int(graph.ts[-1]), graph.manifest.time.end
    if end - last <= window_s:
        return None
    return (
        f"the manifest's time.end ({iso_time(end)}) is {(end - last) / DAY:.1f} days after "
        f"the log's last edge ({iso_time(last)}), more than the attribution window "
        f"({window_s / DAY:g} days): exposures of the log's last days are labelled as if "
        "their attribution window had been logged, so conversions after the last edge "
        "count as none; if the log ends at its last edge, set time.end just after it"
    )


def warn_unlogged_end(graph: TemporalGraph, window_s: int) -> None:
    """`LabelWarning` with `unlogged_end`'s text, where there is one."""
    note = unlogged_end(graph, window_s)
    if note:
        warnings.warn(note, LabelWarning, stacklevel=2)
