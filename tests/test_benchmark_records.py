"""The benchmark scripts and their recorded results name no folder of the machine they
ran on: a record must read the same from any clone (commands say `<this repository>`
and relative paths)."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
# the roots a development machine's absolute paths start with
MACHINE_PATH = re.compile(r"(?<![\w.<])/(?:work|tmp|home|root|Users|private|mnt)/")


def test_no_record_or_script_names_a_development_machine_folder():
    found = []
    for path in sorted(BENCHMARKS.rglob("*")):
        if path.suffix not in {".md", ".py", ".sh", ".txt", ".toml", ".json"}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{path.relative_to(BENCHMARKS.parent)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_is_for():
    assert MACHINE_PATH.search("git clone /work/main ci3")
    assert MACHINE_PATH.search("python x.py --out /tmp/q/run")
    assert not MACHINE_PATH.search("git clone <this repository> ci3 && cd ci3")
    assert not MACHINE_PATH.search("see benchmarks/results/tmp/x.md")  # relative: fine
