"""The dataset manifest: node types, typed edges with their funnel roles, time range, splits.

A dataset folder holds `manifest.toml` beside its parquet tables. Node and edge types are
data, not code: a real log may have no pixels and add stores. Edge types follow PyG's
vocabulary, `EdgeType = (src, rel, dst)`; the same relation name may join several pairs.

```toml
name = "my-ads-log"
node_types = ["user", "ad", "advertiser"]

[time]                                # half-open windows: [start, validation_start) is train
start = 2026-01-01T00:00:00Z          # TOML datetimes or integer seconds since the epoch
validation_start = 2026-02-15T00:00:00Z
test_start = 2026-02-22T00:00:00Z
end = 2026-03-01T00:00:00Z

[funnel]
attribution_window_days = 7.0         # a conversion counts for exposures up to 7 days before
owner_type = "advertiser"             # conversions attribute to the exposed ad's owner

[[edge_types]]
src = "user"
rel = "impression"
dst = "ad"
role = "exposure"                     # exposure | click | engagement | conversion | structural
half_life_days = 14.0                 # time-decay of this edge type's weights
```
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

import tomli_w

from hir_sdk.errors import InputError

NodeType = str
EdgeType = tuple[str, str, str]
EDGE_ROLES = ("exposure", "click", "engagement", "conversion", "structural")
DAY = 86_400  # seconds: every time in a dataset is a Unix timestamp in seconds
MANIFEST_FILE = "manifest.toml"
# The last second a TOML (and ISO-8601) datetime can write, 9999-12-31T23:59:59Z: every
# time of a dataset lies in [0, MAX_TIME], so it can be written back and shown as a date.
MAX_TIME = 253_402_300_799
# Edge type codes are stored as int16 (`TemporalGraph.etype`).
MAX_EDGE_TYPES = 32_767
# A longer attribution window is a typo (and its seconds would overflow int64 arithmetic).
MAX_ATTRIBUTION_DAYS = 36_500.0
# Node type names become file names (`node_ids_<type>.npy` in a saved graph): at most this
# many UTF-8 bytes keeps them under the usual 255-byte file-name limit.
MAX_TYPE_NAME_BYTES = 200


def type_name_problem(name: object) -> str | None:
    """Why `name` cannot be a node type or relation name, or None when it can.

    A name is a non-empty string of at most `MAX_TYPE_NAME_BYTES` UTF-8 bytes without
    control characters (NUL, newline, tab, ...) or path separators (`/`, `\\`): node types
    name files of a saved graph, and both kinds appear in file names, tables and messages.
    """
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode text"
    if size > MAX_TYPE_NAME_BYTES:
        return f"is longer than {MAX_TYPE_NAME_BYTES} bytes"
    if any(unicodedata.category(char) == "Cc" for char in name):
        return "contains a control character (NUL, newline, tab, ...)"
    if "/" in name or "\\" in name:
        return "contains a path separator ('/' or '\\')"
    return None


def check_attribution_days(days: object, key: str = "funnel.attribution_window_days") -> float:
    """`days` as a float when it is a usable attribution window (finite, > 0, at most
    `MAX_ATTRIBUTION_DAYS`); otherwise a `ValueError` naming `key`."""
    if isinstance(days, bool) or not isinstance(days, (int, float)):
        raise ValueError(f"{key} must be a number of days, got {days!r}")
    if not (math.isfinite(days) and 0 < days <= MAX_ATTRIBUTION_DAYS):
        raise ValueError(f"{key} must be > 0 and <= {MAX_ATTRIBUTION_DAYS:g} days, got {days!r}")
    return float(days)


@dataclass(frozen=True)
class EdgeTypeSpec:
    """One declared edge type `(src, rel, dst)` with its funnel role and decay half-life."""

    src: NodeType
    rel: str
    dst: NodeType
    role: str = "engagement"
    half_life_days: float = 30.0

    def __post_init__(self) -> None:
        for part, value in (("src", self.src), ("rel", self.rel), ("dst", self.dst)):
            problem = type_name_problem(value)
            if problem:
                raise ValueError(f"edge type {self.key}: {part} {value!r} {problem}")
        if self.role not in EDGE_ROLES:
            raise ValueError(f"edge type {self.key}: role {self.role!r} not in {EDGE_ROLES}")
        if not self.half_life_days > 0:
            raise ValueError(f"edge type {self.key}: half_life_days must be > 0")

    @property
    def key(self) -> EdgeType:
        return (self.src, self.rel, self.dst)


@dataclass(frozen=True)
class TimeSplits:
    """Chronological windows, in integer seconds since the epoch, all half-open.

    train = [start, validation_start), validation = [validation_start, test_start),
    test = [test_start, end).
    """

    start: int
    validation_start: int
    test_start: int
    end: int

    def __post_init__(self) -> None:
        if not (0 <= self.start < self.validation_start < self.test_start < self.end):
            raise ValueError(
                "time: need 0 <= start < validation_start < test_start < end, got "
                f"{self.start}, {self.validation_start}, {self.test_start}, {self.end}"
            )
        if self.end > MAX_TIME:
            raise ValueError(
                f"time: end {self.end} is after 9999-12-31T23:59:59Z ({MAX_TIME} seconds)"
            )

    def window(self, name: str) -> tuple[int, int]:
        bounds = {
            "train": (self.start, self.validation_start),
            "validation": (self.validation_start, self.test_start),
            "test": (self.test_start, self.end),
        }
        if name not in bounds:
            raise ValueError(f"unknown window {name!r}; expected one of {sorted(bounds)}")
        return bounds[name]


@dataclass(frozen=True)
class DatasetManifest:
    """What a dataset declares about itself; validated on construction."""

    name: str
    node_types: tuple[NodeType, ...]
    edge_types: tuple[EdgeTypeSpec, ...]
    time: TimeSplits
    attribution_window_days: float = 7.0
    owner_type: NodeType | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.node_types:
            raise ValueError("node_types is empty")
        for node_type in self.node_types:
            problem = type_name_problem(node_type)
            if problem:
                raise ValueError(f"node type {node_type!r} {problem}")
        if len(set(self.node_types)) != len(self.node_types):
            raise ValueError(f"node_types has duplicates: {list(self.node_types)}")
        if not self.edge_types:
            raise ValueError("edge_types is empty")
        if len(self.edge_types) > MAX_EDGE_TYPES:
            raise ValueError(
                f"{len(self.edge_types):,} edge types declared; at most {MAX_EDGE_TYPES:,} "
                "are supported (edge type codes are 16-bit)"
            )
        if len(self.edge_type_index) != len(self.edge_types):
            raise ValueError("edge_types declares the same (src, rel, dst) twice")
        declared = set(self.node_types)
        for spec in self.edge_types:
            for end in (spec.src, spec.dst):
                if end not in declared:
                    raise ValueError(f"edge type {spec.key}: node type {end!r} not declared")
        check_attribution_days(self.attribution_window_days)
        if self.owner_type is not None and self.owner_type not in self.node_types:
            raise ValueError(f"funnel.owner_type {self.owner_type!r} is not a declared node type")

    @cached_property
    def edge_type_keys(self) -> tuple[EdgeType, ...]:
        return tuple(spec.key for spec in self.edge_types)

    @cached_property
    def edge_type_index(self) -> dict[EdgeType, int]:
        """`(src, rel, dst)` -> its position in `edge_types` (its code), for O(1) lookups."""
        return {key: position for position, key in enumerate(self.edge_type_keys)}

    @cached_property
    def node_type_index(self) -> dict[NodeType, int]:
        """Node type -> its position in `node_types` (its code)."""
        return {name: position for position, name in enumerate(self.node_types)}

    def edge_types_with_role(self, role: str) -> tuple[EdgeTypeSpec, ...]:
        if role not in EDGE_ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {EDGE_ROLES}")
        return tuple(spec for spec in self.edge_types if spec.role == role)

    @property
    def exposed_types(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """`(viewers, candidates)`: the node types at the source of an exposure edge type
        (the users) and at its destination (what the rankers rank, "ads"), each in the
        manifest's order. Nothing downstream relies on the names `user` and `ad`."""
        exposures = self.edge_types_with_role("exposure")
        viewers = {spec.src for spec in exposures}
        candidates = {spec.dst for spec in exposures}
        return (
            tuple(t for t in self.node_types if t in viewers),
            tuple(t for t in self.node_types if t in candidates),
        )

    @property
    def attribution_window_s(self) -> int:
        return int(round(self.attribution_window_days * DAY))

    def to_toml(self) -> str:
        """Render as TOML that `load_manifest` reads back to an equal manifest.

        Every value goes through a TOML writer (`tomli_w`), so any name (quotes,
        backslashes, control characters) is escaped; each edge type is its own
        `[[edge_types]]` table, as a person would write it.
        """
        funnel: dict[str, Any] = {"attribution_window_days": float(self.attribution_window_days)}
        if self.owner_type is not None:
            funnel["owner_type"] = self.owner_type
        head = tomli_w.dumps(
            {
                "name": self.name,
                "node_types": list(self.node_types),
                "time": {
                    key: _utc(getattr(self.time, key))
                    for key in ("start", "validation_start", "test_start", "end")
                },
                "funnel": funnel,
            }
        )
        tables = [
            "[[edge_types]]\n"
            + tomli_w.dumps(
                {
                    "src": spec.src,
                    "rel": spec.rel,
                    "dst": spec.dst,
                    "role": spec.role,
                    "half_life_days": float(spec.half_life_days),
                }
            )
            for spec in self.edge_types
        ]
        return "\n".join([head, *tables])


def _utc(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)


def iso_time(seconds: int) -> str:
    """Seconds since the epoch as an ISO-8601 UTC time, e.g. `2026-01-01T00:00:00Z`."""
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(value: Any, key: str, path: Path) -> int:
    if isinstance(value, bool):
        raise InputError(f"time.{key} must be a datetime or integer seconds", file=path)
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp())
    if isinstance(value, dt.date):
        return int(
            dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc).timestamp()
        )
    raise InputError(f"time.{key} must be a datetime or integer seconds, got {value!r}", file=path)


def _require(
    table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, path: Path
) -> Any:
    if key not in table:
        raise InputError(f"missing key '{where}{key}'", file=path)
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"key '{where}{key}' has the wrong type: {value!r}", file=path)
    return value


def load_manifest(path: str | Path) -> DatasetManifest:
    """Read and validate a manifest; every problem raises `InputError` naming the file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is harmless
    except FileNotFoundError:
        raise InputError("manifest not found (every dataset folder needs one)", file=path) from None
    except UnicodeDecodeError:
        raise InputError(
            "cannot read manifest: it is not UTF-8; save it as UTF-8", file=path
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"cannot read manifest: {err}", file=path) from None
    name = _require(raw, "name", str, "", path)
    node_types = _require(raw, "node_types", list, "", path)
    if not all(isinstance(t, str) and t for t in node_types):
        raise InputError(f"node_types must be non-empty strings: {node_types!r}", file=path)
    for node_type in node_types:
        problem = type_name_problem(node_type)
        if problem:
            raise InputError(f"node type {node_type!r} {problem}", file=path)
    time_table = _require(raw, "time", dict, "", path)
    stamps = {}
    for key in ("start", "validation_start", "test_start", "end"):
        if key not in time_table:
            raise InputError(f"missing key 'time.{key}'", file=path)
        stamps[key] = _seconds(time_table[key], key, path)
    funnel = raw.get("funnel", {})
    if not isinstance(funnel, dict):
        raise InputError("funnel must be a table", file=path)
    try:
        window = check_attribution_days(funnel.get("attribution_window_days", 7.0))
    except ValueError as err:
        raise InputError(str(err), file=path) from None
    owner_type = funnel.get("owner_type", "advertiser" if "advertiser" in node_types else None)
    if owner_type is not None and not isinstance(owner_type, str):
        raise InputError("funnel.owner_type must be a node type name", file=path)
    specs = []
    for i, entry in enumerate(_require(raw, "edge_types", list, "", path)):
        where = f"edge_types[{i}]."
        if not isinstance(entry, dict):
            raise InputError(f"{where[:-1]} must be a table", file=path)
        try:
            specs.append(
                EdgeTypeSpec(
                    src=_require(entry, "src", str, where, path),
                    rel=_require(entry, "rel", str, where, path),
                    dst=_require(entry, "dst", str, where, path),
                    role=entry.get("role", "engagement"),
                    half_life_days=float(entry.get("half_life_days", 30.0)),
                )
            )
        except (TypeError, ValueError) as err:
            raise InputError(f"{where[:-1]}: {err}", file=path) from None
    known = {"name", "node_types", "time", "funnel", "edge_types"}
    try:
        return DatasetManifest(
            name=name,
            node_types=tuple(node_types),
            edge_types=tuple(specs),
            time=TimeSplits(**stamps),
            attribution_window_days=window,
            owner_type=owner_type,
            extra={k: v for k, v in raw.items() if k not in known},
        )
    except ValueError as err:
        raise InputError(str(err), file=path) from None
