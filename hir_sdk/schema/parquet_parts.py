"""A parquet table stored as one file or as a folder of part files, as Spark and Hive
write it, read as one table.

```
edges.parquet                           one file, or
edges.parquet/                          a folder: one table
  _SUCCESS                              not read: names that start with "_" or "."
  .part-00000-1b2c.snappy.parquet.crc   (Spark's markers and checksums, Hive's staging)
  part-00000-1b2c.snappy.parquet        the parts, in sorted name order: rows keep that
  part-00001-1b2c.snappy.parquet        order, part after part
```

Every part must have the columns of the first with the same types (nullability, column
order and how strings are stored aside: plain, large or dictionary-encoded strings are
one type); a part that differs is refused, naming it and the column. A
folder holding subfolders (`partitionBy` output, whose column values live in folder
names) is refused rather than read without those columns. Row numbers in messages count
from 0 within the part that holds the row (`locate_rows`), as they do within a file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hir_sdk.errors import InputError

HIDDEN_PREFIXES = ("_", ".")  # Spark's and Hive's markers, checksums and staging files


def table_parts(path: Path) -> list[Path]:
    """The files of the table at `path`: `path` itself when it is not a folder, else the
    folder's part files in sorted name order. Raises `InputError` for a folder with
    subfolders or without any part file."""
    if not path.is_dir():
        return [path]
    entries = sorted(e for e in path.iterdir() if not e.name.startswith(HIDDEN_PREFIXES))
    folders = [e.name for e in entries if e.is_dir()]
    if folders:
        raise InputError(
            f"the table's folder holds subfolders {folders[:5]}: a partitioned table "
            "(partitionBy), whose column values live in folder names, is not read; write "
            "it without partitions, as part files side by side",
            file=path,
        )
    if not entries:
        raise InputError(
            "the table's folder holds no part file (names that start with '_' or '.' are not read)",
            file=path,
        )
    return entries


def read_schema(path: Path) -> pa.Schema:
    """The schema of the table at `path` (of its first part, for a folder)."""
    return pq.read_schema(table_parts(path)[0])


def read_parts(path: Path, read_dictionary: list[str] | None = None) -> pa.Table:
    """The table at `path` (a file, or a folder of parts read one after another). A part
    that cannot be read, or whose columns differ from the first part's, raises
    `InputError` naming it; pyarrow's own errors for a file are left to the caller."""
    parts = table_parts(path)
    if len(parts) == 1 and parts[0] == path:
        return pq.read_table(path, read_dictionary=read_dictionary)
    tables: list[pa.Table] = []
    schema = None
    for part in parts:
        try:
            table = pq.read_table(part, read_dictionary=read_dictionary)
        except Exception as err:  # pyarrow raises several types for corrupt files
            raise InputError(f"cannot read parquet: {err}", file=part) from None
        if schema is None:  # the first part's column order and types, all nullable
            first = table.schema
            schema = pa.schema([pa.field(f.name, f.type) for f in first], metadata=first.metadata)
        _same_columns(tables[0] if tables else table, table, parts[0], part)
        try:
            tables.append(table.select(schema.names).cast(schema))
        except pa.ArrowException as err:  # a string column that cannot be re-encoded
            raise InputError(f"cannot read parquet: {err}", file=part) from None
    return pa.concat_tables(tables)


def _same_columns(first: pa.Table, table: pa.Table, first_path: Path, path: Path) -> None:
    """An `InputError` naming `path` and a column when `table`'s column names or types
    differ from those of `first`, the folder's first part."""
    want = {f.name: _logical(f.type) for f in first.schema}
    have = {f.name: _logical(f.type) for f in table.schema}
    if want == have:
        return
    missing = [name for name in want if name not in have]
    extra = [name for name in have if name not in want]
    retyped = [name for name in want if name in have and have[name] != want[name]]
    if missing:
        column, what = missing[0], f"lacks the column(s) {missing}"
    elif extra:
        column, what = extra[0], f"has column(s) {extra} that the first lacks"
    else:
        column = retyped[0]
        what = f"stores it as {have[column]}, not as {want[column]}"
    raise InputError(
        f"this part's columns differ from those of the folder's first part, "
        f"{first_path.name}: it {what}; every part of a table needs the same columns "
        "and types",
        file=path,
        column=column,
    )


def _logical(dtype: pa.DataType) -> pa.DataType:
    """`dtype` with strings in one form: a dictionary's values, and `string` for the large
    and view forms (parts written by different tools store one column each way)."""
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_large_string(dtype) or getattr(pa.types, "is_string_view", lambda _: False)(
        dtype
    ):
        return pa.string()
    return dtype


def locate_rows(path: Path, rows: np.ndarray) -> tuple[list[Path], np.ndarray, np.ndarray]:
    """For row numbers `rows` of the table read from the folder `path`: its parts, and
    for each row the index of its part and its row number within that part."""
    parts = table_parts(path)
    starts = np.cumsum([0] + [pq.read_metadata(part).num_rows for part in parts])
    which = np.searchsorted(starts, rows, side="right") - 1
    return parts, which, np.asarray(rows) - starts[which]
