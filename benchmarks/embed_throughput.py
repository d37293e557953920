"""`hir embed` throughput (entities/s) alone and data-parallel under `torchrun`, one run.

    python benchmarks/embed_throughput.py --scale medium --ranks 1,2 [--types ad,user]
        [--data WORLD --run RUN] [--steps 20] [--record FILE]

Without `--data` / `--run` it writes `hir synth --scale SCALE` and trains `hir fit
--max-steps STEPS` with the built-in config (throughput does not depend on how long the
encoder trained, only on its sizes and the views). Then, for each rank count, one
`hir embed --as-of test_start` of every entity (or of `--types`), as a user runs it: one
process, or `torchrun --standalone --nproc_per_node=N` with `OMP_NUM_THREADS` = cores / N.
The wall time covers everything the command does (start-up, graph build, embedding, the
BoM fit and encoding, the write); the outputs of every rank count are compared, and must
be identical.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from publish import publish

from hir_sdk.interests import read_embeddings


def _hir(*args: str) -> list[str]:
    return [sys.executable, "-m", "hir_sdk.cli.main", *args]


def _embed(run: Path, data: Path, out: Path, ranks: int, types: str | None) -> float:
    """Wall seconds of one `hir embed` on `ranks` processes."""
    command = ["embed", "--run-dir", str(run), "--data", str(data), "--as-of", "test_start"]
    command += ["--out", str(out), *(["--types", types] if types else [])]
    env = dict(os.environ)
    if ranks == 1:
        launch = _hir(*command)
    else:
        torchrun = Path(sys.executable).with_name("torchrun")
        launch = [str(torchrun), "--standalone", f"--nproc_per_node={ranks}", "-m"]
        launch += ["hir_sdk.cli.main", *command]
        env["OMP_NUM_THREADS"] = str(max((os.cpu_count() or 1) // ranks, 1))
    began = time.perf_counter()
    done = subprocess.run(launch, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"hir embed on {ranks} rank(s) failed:\n{done.stderr[-3000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="medium")
    parser.add_argument("--data", help="an existing dataset folder (with --run)")
    parser.add_argument("--run", help="an existing training run of --data")
    parser.add_argument("--steps", type=int, default=20, help="training steps (no --run)")
    parser.add_argument("--ranks", default="1,2", help="comma-separated rank counts")
    parser.add_argument("--types", help="node types to embed (default: all)")
    parser.add_argument("--record", help="append the result table to this Markdown file")
    args = parser.parse_args()
    counts = [int(r) for r in args.ranks.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = Path(args.data) if args.data else work / "world"
        run = Path(args.run) if args.run else work / "run"
        if not args.data:
            subprocess.run(_hir("synth", "--scale", args.scale, "--out", str(data)), check=True)
        if not args.run:
            fit = ["fit", "--data", str(data), "--out", str(run), "--quiet"]
            subprocess.run(_hir(*fit, "--max-steps", str(args.steps)), check=True)
        rows = []
        for ranks in counts:
            out = work / f"emb{ranks}"
            seconds = _embed(run, data, out, ranks, args.types)
            rows.append((ranks, seconds, out))
            print(f"{ranks} rank(s): {seconds:.1f} s", flush=True)
        first = read_embeddings(rows[0][2])
        same = all(read_embeddings(out).table.equals(first.table) for _, _, out in rows[1:])
        meta = json.loads((rows[0][2] / "meta.json").read_text())
    entities, base = meta["rows"], rows[0][1]
    counts_text = ", ".join(f"{n:,} {t}" for t, n in meta["counts"].items())
    command = f"python benchmarks/embed_throughput.py --ranks {args.ranks}"
    command += f" --scale {args.scale}" if not args.data else " --data DATA --run RUN"
    command += f" --types {args.types}" if args.types else ""
    lines = [
        f"### `hir embed`, `{args.data and 'DATA' or args.scale}`: {entities:,} entities "
        f"({counts_text}), BoM {meta['bom']['codebooks']}x{meta['bom']['codewords']} "
        f"fitted on {meta['bom_fit_rows']:,} rows",
        "",
        f"command: `{command}` ({datetime.date.today()}; python "
        f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores)",
        "",
        "| ranks | wall s | entities/s | vs 1 rank |",
        "|---:|---:|---:|---:|",
        *(
            f"| {ranks} | {seconds:.1f} | {entities / seconds:,.0f} | {base / seconds:.2f}x |"
            for ranks, seconds, _ in rows
        ),
        "",
        f"outputs identical across rank counts: {'yes' if same else 'NO'}",
    ]
    publish(lines, args.record)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
