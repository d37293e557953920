"""The output-folder rule: hir-sdk replaces only a folder that it wrote itself.

Every output folder carries a small marker file (`MARKER_FILE`) that names its kind
(graph, dataset, run, embeddings, ...). A command may write its `--out` when it is

- absent, or an empty folder;
- with `--overwrite` (`overwrite=True`), a folder holding our marker of the same kind
  and nothing we did not write: the marker lists every file and folder of the output
  when it is published (`seal_marker`), so a file the user put into it since stops the
  replacement (named in the message) instead of going with it. A marker without that
  list (written before outputs kept one) allows replacing only a folder that holds
  nothing but the marker;

and never when it is, contains or lies inside one of the command's inputs (compared as
resolved paths, so a symbolic link to an input is the input). A folder without our
marker is never replaced, `--overwrite` or not: it may be the user's own data. The
checks run before any work (`check_free`), and again when the result is published
(`hir_sdk.io.atomic.atomic_output_dir`).

A training run grows in place instead (checkpoints, metrics): `claim_dir` starts one in
a free folder (`check_new`: absent or empty, never over an earlier run), and
`check_ours` accepts a folder to continue only when it holds the marker of its kind.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from hir_sdk.errors import InputError

MARKER_FILE = ".hir-output.json"
WRITTEN_BY = "hir-sdk"
_KIND = re.compile(r"[a-z][a-z0-9_]*")

Inputs = Iterable[str | Path | None]

# files an operating system's file browser may leave in any folder: not the user's data,
# so they do not stop a replacement
OS_METADATA = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
# hir-sdk's own temporaries (`hir_sdk.io.atomic`): `.NAME.tmp-HOSTTAG-PID-...`, `.NAME.old-...`
# the empty folder check_creatable makes and removes at once to learn it may write there
PROBE_PREFIX = ".hir-probe-"
_TEMPORARY = re.compile(r"\..+\.(tmp|old)-[0-9a-f]{8}-\d+-")


def marker_text(kind: str, files: Sequence[str] | None = None) -> str:
    """The marker file's content for an output of `kind`, with the list of its `files`
    when it is published (the same bytes for the same kind and files, so outputs stay
    byte-identical)."""
    if not _KIND.fullmatch(kind):
        raise ValueError(f"output kind must be a lower-case word, got {kind!r}")
    content: dict[str, object] = {"written_by": WRITTEN_BY, "kind": kind}
    if files is not None:
        content["files"] = list(files)
    return json.dumps(content) + "\n"


def write_marker(folder: str | Path, kind: str) -> None:
    """Mark `folder` as an output of `kind` that hir-sdk writes (no file list yet)."""
    (Path(folder) / MARKER_FILE).write_text(marker_text(kind), encoding="utf-8")


def entries(folder: str | Path) -> list[str]:
    """Every file, folder and link under `folder` but its marker, as sorted relative
    POSIX paths (links are listed, not followed)."""
    root = Path(folder)
    found = []
    for parent, folders, files in os.walk(root):
        rel = Path(parent).relative_to(root)
        found += [(rel / name).as_posix() for name in (*folders, *files)]
    return sorted(p for p in found if p != MARKER_FILE)


def seal_marker(folder: str | Path, kind: str) -> None:
    """Mark `folder` as a finished output of `kind` that lists everything in it, so that
    `--overwrite` can tell what hir-sdk wrote from what was added since."""
    text = marker_text(kind, entries(folder))
    (Path(folder) / MARKER_FILE).write_text(text, encoding="utf-8")


def _marker(folder: str | Path) -> dict | None:
    """`folder`'s marker when it is a readable one of ours."""
    marker = Path(folder) / MARKER_FILE
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        content = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("written_by") != WRITTEN_BY:
        return None
    return content


def marker_kind(folder: str | Path) -> str | None:
    """The kind named by `folder`'s marker; None when it has no readable marker of ours."""
    content = _marker(folder)
    kind = None if content is None else content.get("kind")
    return kind if isinstance(kind, str) and _KIND.fullmatch(kind) else None


def _listed(folder: str | Path) -> set[str] | None:
    """The paths `folder`'s marker lists, or None when it lists none."""
    content = _marker(folder)
    listed = None if content is None else content.get("files")
    if not isinstance(listed, list):
        return None
    return {p for p in listed if isinstance(p, str)}


def not_written(folder: str | Path) -> list[str] | None:
    """What `folder` holds that hir-sdk did not write, or None when its marker lists
    nothing (an output written before markers kept their files).

    A path counts as written when the marker lists it; inside a listed folder that
    carries a file list of its own (an output nested in this one, such as a job's
    `onnx/`, possibly replaced since), that folder's list decides. An output saved into
    this one later, at a path it never listed, counts as added like any other file.
    hir-sdk's own temporaries (`.NAME.tmp-*`, `.NAME.old-*` of a write that was killed,
    `.hir-probe-*` of `check_creatable`) and operating-system metadata count as written.
    Each added tree is named by its top-most path."""
    listed = _listed(folder)
    return None if listed is None else _unlisted(Path(folder), listed, "")


def _unlisted(root: Path, listed: set[str], prefix: str) -> list[str]:
    added = []
    for child in sorted(root.iterdir(), key=lambda c: c.name):
        name = child.name
        ours = _TEMPORARY.match(name) or name.startswith(PROBE_PREFIX)
        if name == MARKER_FILE or name in OS_METADATA or ours:
            continue
        if name not in listed:  # never written by this output (an output or not)
            added.append(prefix + name)
            continue
        folder = child.is_dir() and not child.is_symlink()
        own = _listed(child) if folder else None
        if own is not None:  # a nested output this one wrote, replaced since: its own list
            added += _unlisted(child, own, f"{prefix}{name}/")
        elif folder:
            inner = {p[len(name) + 1 :] for p in listed if p.startswith(f"{name}/")}
            added += _unlisted(child, inner, f"{prefix}{name}/")
    return added


def check_not_input(final: str | Path, inputs: Inputs) -> None:
    """An `InputError` when `final` is, contains or lies inside one of `inputs` (resolved
    paths: symbolic links are followed; None entries are skipped)."""
    out = Path(final).resolve()
    for given in inputs:
        if given is None or str(given) == "":
            continue
        source = Path(given).resolve()
        if out == source:
            relation = "is the input"
        elif out in source.parents:
            relation = "contains the input"
        elif source in out.parents:
            relation = "lies inside the input"
        else:
            continue
        raise InputError(
            f"the output folder {relation} {given}: an input is never written over or "
            "into; choose an output path outside every input",
            file=final,
        )


def _existing(final: Path) -> bool:
    """Whether `final` holds anything (a file, a link or a non-empty folder)."""
    if final.is_symlink():
        raise InputError(
            "the output is a symbolic link; give the path of a real folder", file=final
        )
    if not final.exists():
        return False
    if not final.is_dir():
        raise InputError("the output exists and is not a folder", file=final)
    return any(final.iterdir())


def _check_kind(final: Path, kind: str) -> None:
    found = marker_kind(final)
    if found is None:
        raise InputError(
            f"output already exists and was not written by hir-sdk (no {MARKER_FILE} "
            "marker): it is never replaced, even with --overwrite; choose another path",
            file=final,
        )
    if found != kind:
        raise InputError(
            f"output already exists and holds a hir-sdk {found}, not a {kind}: it is "
            "never replaced by one, even with --overwrite; choose another path",
            file=final,
        )


def check_free(
    final: str | Path, *, kind: str, overwrite: bool = False, inputs: Inputs = ()
) -> None:
    """An `InputError` unless an output of `kind` may be written at `final` (see the
    module): for commands to call before their work, as `atomic_output_dir` does again
    before it publishes."""
    final = Path(final)
    marker_text(kind)  # a programming mistake, not the user's: ValueError
    check_not_input(final, inputs)
    check_creatable(final)
    if not _existing(final):
        return
    _check_kind(final, kind)
    if not overwrite:
        raise InputError(
            f"output already exists (a hir-sdk {kind}); choose another path or pass "
            "--overwrite to replace it",
            file=final,
        )
    check_only_ours(final)


def check_only_ours(folder: Path, *, shown: Path | None = None) -> None:
    """An `InputError` (naming `shown`, default `folder`) when removing the earlier
    output `folder` would remove something hir-sdk did not write into it."""
    final = shown or folder
    added = not_written(folder)
    if added is None:
        if entries(folder):
            raise InputError(
                "output was written by an earlier hir-sdk that did not list its files, so "
                "files added to it since cannot be told apart: it is not replaced, even "
                "with --overwrite; remove it yourself or choose another path",
                file=final,
            )
        return
    if added:
        names = [a if a.isprintable() else ascii(a) for a in added[:5]]
        listing = ", ".join(names) + (f" and {len(added) - 5} more" if len(added) > 5 else "")
        raise InputError(
            f"output holds files hir-sdk did not write ({listing}): it is never replaced "
            "while they are there, even with --overwrite; move them out or choose "
            "another path",
            file=final,
        )


def check_creatable(final: Path, *, in_place: bool = False) -> None:
    """An `InputError` when the output `final` could not be written: the folder it is
    created in (and its temporary beside it), or the nearest of its parents that exists,
    is not a folder or may not be written by this process (permissions, a read-only
    file system). `in_place`: an output that grows inside `final` (a training run), so
    an existing `final` is the folder to write in. Checked before the work, so that it
    does not fail at the end."""
    existing = final if in_place and final.is_dir() else final.parent
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(
            f"the output cannot be created: {existing} is a file, not a folder; choose "
            "another path",
            file=final,
        )
    try:  # permissions alone do not say it (root, a read-only or virtual file system)
        os.rmdir(tempfile.mkdtemp(prefix=PROBE_PREFIX, dir=existing))
    except OSError as err:
        raise InputError(
            f"the output cannot be created: this process may not write in {existing} "
            f"({err.strerror or err}); choose another path",
            file=final,
        ) from None


def check_ours(final: str | Path, *, kind: str, inputs: Inputs = ()) -> None:
    """An `InputError` unless `final` is a folder of `kind` that hir-sdk wrote (and no
    input's): the folder a resumed run continues in."""
    final = Path(final)
    check_not_input(final, inputs)
    if final.is_symlink() or not final.is_dir() or marker_kind(final) != kind:
        raise InputError(
            f"not a {_NAMES.get(kind, kind)} written by hir-sdk (no {MARKER_FILE} marker "
            f"of kind {kind!r})",
            file=final,
        )


def check_new(final: str | Path, *, kind: str, inputs: Inputs = ()) -> None:
    """An `InputError` unless a new output of `kind` that grows in place (a training run)
    may start at `final`: absent or an empty folder, and no input's. An earlier output of
    the same kind is refused too: continuing it is `resume`, and a new one written over
    it would mix the two."""
    final = Path(final)
    marker_text(kind)
    check_not_input(final, inputs)
    check_creatable(final, in_place=True)
    if not _existing(final):
        return
    found = marker_kind(final)
    if found == kind:
        raise InputError(
            f"output already holds a {_NAMES.get(kind, kind)}: pass --resume to continue "
            "it, or choose another path (a new run is never mixed into an old one)",
            file=final,
        )
    what = "not written by hir-sdk" if found is None else f"a hir-sdk {found}"
    raise InputError(
        f"output already exists and is not empty ({what}): a new "
        f"{_NAMES.get(kind, kind)} starts only in an absent or empty folder; choose "
        "another path",
        file=final,
    )


def claim_dir(final: str | Path, *, kind: str, inputs: Inputs = ()) -> Path:
    """Start a new output of `kind` that grows in place at `final` (see `check_new`):
    create the folder and write its marker."""
    final = Path(final)
    check_new(final, kind=kind, inputs=inputs)
    final.mkdir(parents=True, exist_ok=True)
    write_marker(final, kind)
    return final


_NAMES = {"run": "training run"}
