"""Atomic outputs: all or nothing, with ordinary permissions, flushed to disk before they
are published; the output-folder rule (only our own folders of the same kind are
replaced, never an input); stale temporaries of killed processes cleaned up, nothing
else."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hir_sdk.errors import InputError
from hir_sdk.io import (
    MARKER_FILE,
    atomic_output_dir,
    atomic_write_text,
    check_free,
    check_new,
    check_ours,
    claim_dir,
)
from hir_sdk.io import atomic as atomic_module
from hir_sdk.io.output_folder import entries, marker_kind, not_written, write_marker


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_output_dir_appears_complete_with_default_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        with atomic_output_dir(tmp_path / "out", kind="graph") as tmp:
            (tmp / "a.txt").write_text("x")
            assert not (tmp_path / "out").exists()
        atomic_write_text(tmp_path / "f.txt", "y")
    finally:
        os.umask(mask)
    assert (tmp_path / "out" / "a.txt").read_text() == "x"
    assert _mode(tmp_path / "out") == 0o755
    assert _mode(tmp_path / "f.txt") == 0o644
    assert marker_kind(tmp_path / "out") == "graph"


def test_failure_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), atomic_output_dir(tmp_path / "out", kind="graph") as tmp:
        (tmp / "half.txt").write_text("x")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_overwrite_replaces_and_refusal_keeps(tmp_path):
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="report") as tmp:
        (tmp / "old.txt").write_text("old")
    with pytest.raises(InputError, match="already exists"), atomic_output_dir(out, kind="report"):
        pass
    assert (out / "old.txt").exists()
    with atomic_output_dir(out, kind="report", overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert _names(out) == [MARKER_FILE, "new.txt"]
    assert _names(tmp_path) == ["out"]


def test_the_marker_lists_what_was_written(tmp_path):
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="report") as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "a.txt").write_text("a")
        (tmp / "b.txt").write_text("b")
    marker = json.loads((out / MARKER_FILE).read_text())
    assert marker == {
        "written_by": "hir-sdk",
        "kind": "report",
        "files": ["b.txt", "sub", "sub/a.txt"],
    }
    assert entries(out) == marker["files"] and not_written(out) == []


def test_overwrite_keeps_an_output_holding_files_hir_did_not_write(tmp_path):
    """A file or folder the user put into an earlier output stops `--overwrite` (named in
    the message, the top of each added tree only) instead of being deleted with it."""
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="report") as tmp:
        (tmp / "report.md").write_text("ours")
    (out / "mine.txt").write_text("my notes")
    (out / "analysis").mkdir()
    (out / "analysis" / "plot.png").write_bytes(b"png")
    (out / ".DS_Store").write_bytes(b"finder")  # a file browser's, not the user's data
    assert not_written(out) == ["analysis", "mine.txt"]
    with pytest.raises(InputError, match=r"did not write \(analysis, mine.txt\)") as caught:
        check_free(out, kind="report", overwrite=True)
    assert caught.value.exit_code == 2
    with pytest.raises(InputError, match="did not write"):
        with atomic_output_dir(out, kind="report", overwrite=True) as tmp:
            (tmp / "report.md").write_text("new")
    assert (out / "mine.txt").read_text() == "my notes"
    assert (out / "analysis" / "plot.png").read_bytes() == b"png"
    assert (out / "report.md").read_text() == "ours"
    assert _names(tmp_path) == ["out"]  # the refused temporary is gone
    # moved out, the output is replaced as before
    (out / "mine.txt").rename(tmp_path / "mine.txt")
    (out / "analysis").rename(tmp_path / "analysis")
    with atomic_output_dir(out, kind="report", overwrite=True) as tmp:
        (tmp / "report.md").write_text("new")
    assert (out / "report.md").read_text() == "new"


def test_a_file_added_while_the_command_runs_stops_the_publish(tmp_path):
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="report") as tmp:
        (tmp / "report.md").write_text("ours")
    with pytest.raises(InputError, match=r"did not write \(late.txt\)"):
        with atomic_output_dir(out, kind="report", overwrite=True) as tmp:
            (out / "late.txt").write_text("added during the run")
    assert (out / "late.txt").exists() and (out / "report.md").read_text() == "ours"


def test_a_file_saved_while_the_new_output_is_flushed_puts_the_old_one_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="report") as tmp:
        (tmp / "report.md").write_text("ours")
    real = atomic_module.fsync_tree

    def slow_flush(root):  # the user saves a file while the new output is flushed
        (out / "notes.md").write_text("mine")
        real(root)

    monkeypatch.setattr(atomic_module, "fsync_tree", slow_flush)
    with pytest.raises(InputError, match=r"did not write \(notes.md\)"):
        with atomic_output_dir(out, kind="report", overwrite=True) as tmp:
            (tmp / "report.md").write_text("new")
    assert (out / "notes.md").read_text() == "mine" and (out / "report.md").read_text() == "ours"
    assert _names(tmp_path) == ["out"]


def test_an_output_nested_in_another_is_judged_by_its_own_list(tmp_path):
    """A job's sub-output (its `onnx/`, say) replaced since the job was written holds
    other files than the job's list says: its own marker's list decides. hir-sdk's own
    stale temporaries count as written."""
    out = tmp_path / "job"
    with atomic_output_dir(out, kind="job") as tmp:
        with atomic_output_dir(tmp / "onnx", kind="onnx") as sub:
            (sub / "encoder.onnx").write_text("e")
    with atomic_output_dir(out / "onnx", kind="onnx", overwrite=True) as sub:
        (sub / "encoder.onnx").write_text("e2")
        (sub / "ranker.onnx").write_text("r")
    stale = out / f".embeddings.tmp-{atomic_module._host_tag()}-{_dead_pid()}-abc"
    stale.mkdir()
    write_marker(stale, "embeddings")
    assert not_written(out) == []
    (out / "onnx" / "mine.txt").write_text("user data")
    assert not_written(out) == ["onnx/mine.txt"]
    (out / "onnx" / "mine.txt").unlink()
    with atomic_output_dir(out, kind="job", overwrite=True) as tmp:
        (tmp / "report.md").write_text("new")
    assert _names(out) == [MARKER_FILE, "report.md"]


def test_an_output_saved_into_another_later_is_the_users(tmp_path):
    """An output written into an earlier one at a path that one never listed (a second
    graph saved inside the first) is not the earlier output's to replace."""
    out = tmp_path / "graph"
    with atomic_output_dir(out, kind="graph") as tmp:
        (tmp / "graph.json").write_text("g")
    with atomic_output_dir(out / "my_other_graph", kind="graph") as tmp:
        (tmp / "graph.json").write_text("mine")
    assert not_written(out) == ["my_other_graph"]
    with pytest.raises(InputError, match=r"did not write \(my_other_graph\)"):
        with atomic_output_dir(out, kind="graph", overwrite=True) as tmp:
            (tmp / "graph.json").write_text("new")
    assert (out / "my_other_graph" / "graph.json").read_text() == "mine"


def test_an_output_without_a_file_list_is_replaced_only_when_empty(tmp_path):
    """A marker written before outputs listed their files cannot tell the user's files
    from ours: such a folder is replaced only when it holds nothing but the marker."""
    out = tmp_path / "out"
    out.mkdir()
    write_marker(out, "report")
    (out / "report.md").write_text("an older release's, or the user's")
    with pytest.raises(InputError, match="did not list its files.*remove it yourself"):
        check_free(out, kind="report", overwrite=True)
    (out / "report.md").unlink()
    with atomic_output_dir(out, kind="report", overwrite=True) as tmp:
        (tmp / "report.md").write_text("new")
    assert (out / "report.md").read_text() == "new"


def test_a_folder_without_our_marker_is_never_replaced(tmp_path):
    """A user's folder (no marker, or a marker that is not ours) stays, --overwrite or not;
    an empty folder may be written."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / MARKER_FILE).write_text(json.dumps({"kind": "graph"}))  # not written_by us
    for folder in (mine, forged):
        with pytest.raises(InputError, match="not written by hir-sdk.*even with --overwrite"):
            check_free(folder, kind="graph", overwrite=True)
        with pytest.raises(InputError, match="not written by hir-sdk"):
            with atomic_output_dir(folder, kind="graph", overwrite=True):
                pass
    assert _names(mine) == ["notes.txt"]
    assert _names(tmp_path) == ["forged", "mine"]
    (tmp_path / "empty").mkdir()
    with atomic_output_dir(tmp_path / "empty", kind="graph") as tmp:
        (tmp / "a.txt").write_text("x")
    assert _names(tmp_path / "empty") == [MARKER_FILE, "a.txt"]


def test_a_marker_of_another_kind_is_refused(tmp_path):
    with atomic_output_dir(tmp_path / "data", kind="dataset") as tmp:
        (tmp / "nodes.parquet").write_text("rows")
    with pytest.raises(InputError, match="holds a hir-sdk dataset, not a graph"):
        with atomic_output_dir(tmp_path / "data", kind="graph", overwrite=True):
            pass
    assert (tmp_path / "data" / "nodes.parquet").read_text() == "rows"


@pytest.mark.parametrize(
    ("out", "relation"),
    [("data", "is the input"), (".", "contains the input"), ("data/sub", "lies inside")],
)
def test_an_input_is_never_an_output(tmp_path, out, relation):
    data = tmp_path / "data"
    write_marker(data.parent, "graph")  # even our own folder: it holds an input
    data.mkdir()
    write_marker(data, "graph")
    (data / "x.txt").write_text("x")
    with pytest.raises(InputError, match=relation):
        check_free(tmp_path / out, kind="graph", overwrite=True, inputs=[data])
    with pytest.raises(InputError, match=relation):
        claim_dir(tmp_path / out, kind="graph", inputs=[data])
    assert (data / "x.txt").read_text() == "x"


def test_links_are_resolved_and_a_linked_output_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    link = tmp_path / "link"
    link.symlink_to(data, target_is_directory=True)
    with pytest.raises(InputError, match="is the input"):
        check_free(link, kind="graph", inputs=[data])
    with pytest.raises(InputError, match="is the input"):
        check_free(data, kind="graph", inputs=[link])
    other = tmp_path / "other"
    other.symlink_to(tmp_path / "nowhere", target_is_directory=True)
    with pytest.raises(InputError, match="symbolic link"):
        check_free(other, kind="graph", overwrite=True)


def test_a_growing_output_starts_only_in_a_free_folder(tmp_path):
    """A training run: a new one never goes into an earlier run; a resumed one only into
    a run folder."""
    run = claim_dir(tmp_path / "run", kind="run")
    assert marker_kind(run) == "run"
    (run / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(InputError, match="pass --resume to continue it"):
        check_new(run, kind="run")
    check_ours(run, kind="run")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"\(not written by hir-sdk\): a new training run"):
        claim_dir(mine, kind="run")
    assert _names(mine) == ["notes.txt"]
    for folder in (tmp_path / "absent", mine):
        with pytest.raises(InputError, match="not a training run written by hir-sdk"):
            check_ours(folder, kind="run")


def test_bad_kind_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="lower-case word"):
        check_free(tmp_path / "x", kind="Graph/../x")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_of_killed_processes_are_removed_nothing_else(tmp_path):
    host, dead = atomic_module._host_tag(), _dead_pid()
    stale = {
        f".out.tmp-{host}-{dead}-abc": True,  # ours, its process gone: removed
        f".out.old-{host}-{dead}-abc": True,
        f".out.tmp-{host}-{os.getppid()}-abc": False,  # a live process's: kept
        f".out.tmp-{'0' * 8}-{dead}-abc": False,  # another host's: kept
        f".other.tmp-{host}-{dead}-abc": False,  # another output's: kept
    }
    for name in stale:
        (tmp_path / name).mkdir()
        write_marker(tmp_path / name, "graph")
    unmarked = tmp_path / f".out.tmp-{host}-{dead}-xyz"  # no marker: not ours, kept
    unmarked.mkdir()
    (unmarked / "file").write_text("user data")
    (tmp_path / "out").mkdir()
    write_marker(tmp_path / "out", "graph")
    with atomic_output_dir(tmp_path / "out", kind="graph", overwrite=True) as tmp:
        (tmp / "a.txt").write_text("x")
    kept = sorted(name for name, removed in stale.items() if not removed)
    assert _names(tmp_path) == sorted([*kept, unmarked.name, "out"])
    assert (unmarked / "file").read_text() == "user data"


def test_an_output_caught_between_its_two_renames_is_put_back(tmp_path):
    """A crash after the old output was moved aside and before the new one took its place
    leaves only `.NAME.old-*`: the next write restores it rather than deleting it."""
    old = tmp_path / f".out.old-{atomic_module._host_tag()}-{_dead_pid()}-abc"
    old.mkdir()
    write_marker(old, "graph")
    (old / "a.txt").write_text("the earlier output")
    with pytest.raises(InputError, match="already exists"):
        with atomic_output_dir(tmp_path / "out", kind="graph"):
            pass
    assert (tmp_path / "out" / "a.txt").read_text() == "the earlier output"
    assert _names(tmp_path) == ["out"]


def test_files_and_folders_are_flushed_before_the_rename(tmp_path, monkeypatch):
    events: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, Path.rename

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def rename(self, target):
        events.append(("rename", str(target)))
        return real_rename(self, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(Path, "rename", rename)
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="graph") as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "a.npy").write_text("x")
    published = events.index(("rename", str(out)))
    flushed = {path.replace(str(tmp), str(out)) for _, path in events[:published]}
    assert {str(out / "sub" / "a.npy"), str(out / MARKER_FILE), str(out / "sub"), str(out)} <= (
        flushed
    )
    assert events[published + 1 :] == [("fsync", str(tmp_path))]
    events.clear()
    atomic_write_text(tmp_path / "f.txt", "y")
    assert [kind for kind, _ in events] == ["fsync", "fsync"]
    assert Path(events[0][1]).name.startswith(".f.txt.tmp-")
    assert events[1][1] == str(tmp_path)


def test_checkpoints_are_flushed_before_the_rename(tmp_path, monkeypatch):
    from hir_sdk.training.checkpoint import copy_checkpoint, save_checkpoint

    flushed: list[str] = []
    real_fsync = os.fsync

    def fsync(fd):
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    save_checkpoint({"step": 1}, tmp_path / "last.pt")
    assert Path(flushed[0]).name.startswith(".last.pt.tmp-") and flushed[1:] == [str(tmp_path)]
    flushed.clear()
    monkeypatch.setattr(os, "link", lambda *args: (_ for _ in ()).throw(OSError("no links")))
    copy_checkpoint(tmp_path / "last.pt", tmp_path / "best.pt")  # the byte-copy path
    assert Path(flushed[0]).name.startswith(".best.pt.tmp-") and flushed[1:] == [str(tmp_path)]


def test_the_write_probe_lands_where_the_output_is_written(tmp_path, monkeypatch):
    """An output published beside its temporary is probed in its parent; a run that
    grows inside an existing empty folder is probed in that folder (its parent may be
    read-only, as a mounted volume's is). A probe a killed process left is ours."""
    import tempfile

    from hir_sdk.io.output_folder import PROBE_PREFIX, check_free, check_new

    probed = []
    real = tempfile.mkdtemp

    def record(*args, **kwargs):
        probed.append(Path(kwargs["dir"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", record)
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    check_new(mounted, kind="run")
    check_free(tmp_path / "report", kind="report")
    check_new(tmp_path / "absent" / "run", kind="run")
    assert probed == [mounted, tmp_path, tmp_path]
    assert list(mounted.iterdir()) == [] and _names(tmp_path) == ["mounted"]
    out = tmp_path / "out"
    with atomic_output_dir(out, kind="report") as tmp:
        (tmp / "report.md").write_text("ours")
    (out / f"{PROBE_PREFIX}x1y2").mkdir()
    assert not_written(out) == []
