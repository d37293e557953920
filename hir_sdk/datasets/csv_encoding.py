"""Why a CSV file that should be UTF-8 is not, as one `InputError` that says how to
convert it.

The CSV readers call `encoding_error` only once a read has gone wrong (the parser
refused the bytes, or the header is not the documented one), so a good file costs
nothing extra. Two kinds of file are recognised:

- UTF-16 or UTF-32 text (what some Windows tools write as "Unicode"): a byte-order mark,
  or NUL bytes in the first `SNIFF_BYTES`, which no UTF-8 CSV has;
- single-byte text (Latin-1, Windows-1252): the first line that is not valid UTF-8 is
  quoted, and the conversion suggested is from Windows-1252, Latin-1 with curly quotes
  and a few more characters in 0x80-0x9f: a Latin-1 file converts the same way, and
  iconv stops at a byte that Windows-1252 leaves undefined rather than guess.

A UTF-8 byte-order mark is valid UTF-8 and the readers drop it: such files are read as
they are.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from hir_sdk.errors import InputError

SNIFF_BYTES = 4096  # how much of the file's start is looked at for a wide encoding
CHUNK_BYTES = 1 << 20  # how much is read at a time when looking for a bad line
_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _wide_encoding(start: bytes) -> tuple[str, str] | None:
    """(encoding for iconv, how it was recognised) for UTF-16/32 text, else None."""
    for bom, name in _BOMS:
        if start.startswith(bom):
            return name, f"it starts with a {name} byte-order mark"
    nul = start.find(b"\0")
    if nul < 0:
        return None
    # ASCII in UTF-16 puts its NUL bytes after (little-endian) or before each character
    name = "UTF-16LE" if nul % 2 else "UTF-16BE"
    return name, f"it has NUL bytes, as {name} text does"


def _first_bad_line(path: Path) -> tuple[int, bytes] | None:
    """(1-based line number, the line's bytes) of the first line that is not UTF-8."""
    lines_before, carry = 0, b""
    with path.open("rb") as stream:
        while True:
            chunk = stream.read(CHUNK_BYTES)
            data = carry + chunk
            # whole lines only: no UTF-8 sequence contains a newline byte
            cut = len(data) if not chunk else data.rfind(b"\n") + 1
            whole, carry = data[:cut], data[cut:]
            try:
                whole.decode("utf-8")
            except UnicodeDecodeError as err:
                line_start = whole.rfind(b"\n", 0, err.start) + 1
                line_end = whole.find(b"\n", err.start)
                line = whole[line_start : None if line_end < 0 else line_end].rstrip(b"\r")
                return lines_before + whole.count(b"\n", 0, err.start) + 1, line
            lines_before += whole.count(b"\n")
            if not chunk:
                return None


def _convert(path: Path, encoding: str) -> str:
    converted = path.with_name(f"{path.stem}.utf8{path.suffix}")
    return (
        f"convert it to UTF-8 and put the result in its place, e.g. "
        f"`iconv -f {encoding} -t UTF-8 {path.name} > {converted.name} && "
        f"mv {converted.name} {path.name}` (or re-save it as UTF-8 from the tool that wrote it)"
    )


def encoding_error(path: str | Path) -> InputError | None:
    """An `InputError` saying that `path` is not UTF-8, what it looks like and how to
    convert it; None when it is UTF-8 (or starts with a UTF-8 byte-order mark)."""
    path = Path(path)
    with path.open("rb") as stream:
        start = stream.read(SNIFF_BYTES)
    wide = _wide_encoding(start)
    if wide is not None:
        encoding, sign = wide
        return InputError(f"not UTF-8 encoded ({sign}): {_convert(path, encoding)}", file=path)
    bad = _first_bad_line(path)
    if bad is None:
        return None
    number, line = bad
    return InputError(
        f"not UTF-8 encoded (line {number} is not valid UTF-8; it looks like Latin-1 or "
        f"Windows-1252): {_convert(path, 'CP1252')}",
        file=path,
        rows=[f"line {number}: {line[:120]!r}"],
    )
