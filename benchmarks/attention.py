"""Time and peak memory of one biased multi-head attention layer (dim 128, 4 heads) over a
packed batch of random subgraphs (24..96 nodes each) at 2k, 8k and 32k tokens, three
implementations side by side on the same inputs, reported as ratios to DENSE-padded.

    .venv/bin/python benchmarks/attention.py \
        --record benchmarks/results/attention.md

Options: `--sizes 2048 8192 32768`, `--repeats N` (default: fewer at larger sizes),
`--devices cpu cuda` (default: both, CUDA when there is a GPU).

- FLEX: `BiasedAttention.forward(..., Impl.FLEX, block_mask=flex_block_mask(ctx, L, device),
  compiled=True)`. The first call compiles (timed separately, reported as compile time,
  with a fresh inductor cache so the number is a cold compile).
- DENSE-packed: the full `(1, H, L, L)` bias over the whole packed sequence (the structural
  bias, looked up with `attention_bias._value`, inside subgraphs; -inf across) and one
  `scaled_dot_product_attention` call. The reference FlexAttention replaces.
- DENSE-padded: `BiasedAttention.forward(..., Impl.DENSE, bias=dense_bias(ctx))`, the
  per-subgraph padded `(B, H, N, N)` path.

Every call = prep (the block mask, or the bias) + attention; both parts are timed, and
the table gives attention alone and the whole call. The bias context
`StructuralBias(config).context(x)` (bias tables randomized) is shared by all three and
built outside the timed region. On CPU: forward only, under `torch.no_grad` (FlexAttention
has no CPU backward); peak memory is the resident-set high-water mark over the call, in a
fresh subprocess per (impl, size) (`--one IMPL SIZE`), measured after a warm-up call by
resetting the high-water mark (`/proc/self/clear_refs`). With CUDA: forward and
forward+backward on the GPU, peak memory from `torch.cuda.max_memory_allocated`.
Anything whose estimated footprint exceeds 40% of the memory is skipped, and labelled.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__" and "--one" not in sys.argv:
    # a cold inductor cache, so the reported compile time is a first compile; the
    # `--one` subprocesses inherit it (warm) and only measure memory
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="hir_attn_bench_"))

import numpy as np
import torch
from publish import publish
from torch.nn import functional as F  # noqa: N812

from hir_sdk.model.attention import BiasedAttention, Impl, flex_block_mask
from hir_sdk.model.attention_bias import (
    BiasContext,
    StructuralBias,
    _value,
    dense_bias,
)
from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.inputs import random_inputs

CONFIG = EncoderConfig(
    num_node_types=6, num_edge_types=4, stats_dim=5, content_dim=0, dim=128, heads=4
)
SIZES = (2048, 8192, 32768)
IMPLS = ("FLEX", "DENSE-packed", "DENSE-padded")
MEMORY_FRACTION = 0.4  # skip anything estimated to need more than this share of memory
GB = 1e9
MB = 2**20


# ---------------------------------------------------------------------------------- inputs


def subgraph_sizes(length: int, rng: np.random.Generator) -> list[int]:
    """Subgraph sizes of 24..96 nodes filling exactly `length` tokens (the last one is cut)."""
    sizes: list[int] = []
    total = 0
    while total < length:
        n = int(min(rng.integers(24, 97), length - total))
        sizes.append(n)
        total += n
    return sizes


class Setup:
    """One size's inputs, layer and bias context on a device."""

    def __init__(self, length: int, device: torch.device, train: bool) -> None:
        torch.manual_seed(0)
        self.length = length
        self.device = device
        self.train = train
        sizes = subgraph_sizes(length, np.random.default_rng(0))
        self.inputs = random_inputs(sizes, CONFIG).to(device)
        self.attn = BiasedAttention(CONFIG.dim, CONFIG.heads).to(device).train(train)
        self.bias = StructuralBias(CONFIG).to(device)
        with torch.no_grad():
            for p in self.bias.parameters():
                p.normal_()  # the tables start at zero; random ones exercise every term
        self.x = torch.randn(length, CONFIG.dim, device=device, requires_grad=train)
        self.ctx = self.context()

    def context(self) -> BiasContext:
        return self.bias.context(self.inputs)

    @property
    def subgraphs(self) -> int:
        return self.inputs.batch_size

    @property
    def max_nodes(self) -> int:
        return int((self.inputs.offsets[1:] - self.inputs.offsets[:-1]).max())


# --------------------------------------------------------------------------- DENSE-packed


def packed_bias(ctx: BiasContext, length: int) -> torch.Tensor:
    """(1, H, L, L) bias over the whole packed sequence: the structural bias (the same
    `_value` lookup as `dense_bias` and `score_mod`) on each subgraph's diagonal block,
    -inf across subgraphs."""
    sizes = ctx.sizes
    device = sizes.device
    heads = ctx.spd_table.shape[1]
    pair_doc = torch.repeat_interleave(torch.arange(len(sizes), device=device), sizes * sizes)
    within = torch.arange(len(pair_doc), device=device) - ctx.spd_offsets[pair_doc]
    n = sizes[pair_doc]
    q = ctx.offsets[pair_doc] + within // n
    k = ctx.offsets[pair_doc] + within % n
    h = torch.arange(heads, device=device)
    values = _value(ctx, q[:, None], k[:, None], h[None, :])  # (S, H)
    bias = torch.full((length, length, heads), float("-inf"), device=device, dtype=values.dtype)
    bias.index_put_((q, k), values)
    return bias.permute(2, 0, 1)[None]


def packed_attention(attn: BiasedAttention, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The layer's projections around one SDPA call over the packed sequence."""
    length, dim = x.shape
    q, k, v = attn.qkv(x).view(length, 3, attn.heads, dim // attn.heads).unbind(1)
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], attn_mask=bias
    )
    return attn.out(out[0].transpose(0, 1).reshape(length, dim))


# ------------------------------------------------------------------------- implementations


def memory_budget(device: torch.device) -> float:
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
    else:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return MEMORY_FRACTION * total


class Runner:
    """prep() -> p; run(p) -> output, for one implementation at one size; `skip` says why
    it cannot run, `note` labels a deviation."""

    skip: str | None = None
    note: str | None = None

    def __init__(self, impl: str, s: Setup) -> None:
        self.impl = impl
        self.s = s
        budget = memory_budget(s.device)
        length, heads = s.length, CONFIG.heads
        if impl == "FLEX":
            pass  # flex_block_mask is O(blocks^2): nothing to guard
        elif impl == "DENSE-packed":
            bias_bytes = heads * length**2 * 4
            factor = 4 if s.train else 2  # + the scores (and, training, their gradients)
            if factor * bias_bytes > budget:
                self.skip = f"skipped: would materialize {bias_bytes / GB:.1f} GB (bias alone)"
        elif impl == "DENSE-padded":
            b, n = s.subgraphs, s.max_nodes
            if b * heads * n * n * 60 > budget:  # the bias + its int64 index intermediates
                self.skip = f"skipped: would materialize {b * heads * n * n * 60 / GB:.1f} GB"
        else:
            raise ValueError(impl)

    def prep(self, ctx: BiasContext) -> object:
        s = self.s
        if self.impl == "FLEX":
            return flex_block_mask(ctx, s.length, s.device)
        if self.impl == "DENSE-packed":
            return packed_bias(ctx, s.length)
        return dense_bias(ctx)

    def run(self, ctx: BiasContext, p: object) -> torch.Tensor:
        s = self.s
        if self.impl == "FLEX":
            return s.attn(s.x, ctx, Impl.FLEX, block_mask=p, compiled=True)
        if self.impl == "DENSE-packed":
            return packed_attention(s.attn, s.x, p)
        return s.attn(s.x, ctx, Impl.DENSE, bias=p)

    def call(self) -> tuple[float, float, torch.Tensor]:
        """One timed call: (prep s, attention s, output); training: + backward."""
        s = self.s
        sync()
        t0 = time.perf_counter()
        ctx = s.context() if s.train else s.ctx  # training: a fresh graph per step
        p = self.prep(ctx)
        sync()
        t1 = time.perf_counter()
        out = self.run(ctx, p)
        if s.train:
            out.square().mean().backward()
        sync()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, out.detach()


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def default_repeats(length: int) -> int:
    return max(2, min(10, 40_000 // length))


# ------------------------------------------------------------------------------- timing


def time_size(
    length: int, device: torch.device, train: bool, repeats: int | None
) -> dict[str, dict]:
    """All three implementations on the same inputs in this process, calls interleaved."""
    s = Setup(length, device, train)
    runners = {impl: Runner(impl, s) for impl in IMPLS}
    results: dict[str, dict] = {}
    outputs: dict[str, torch.Tensor] = {}
    grad = torch.enable_grad() if train else torch.no_grad()
    with grad:
        for impl, r in runners.items():
            if r.skip:
                results[impl] = {"skip": r.skip}
                continue
            prep, attn, out = r.call()  # warm-up; FLEX compiles here
            outputs[impl] = out
            results[impl] = {"first_s": prep + attn, "prep": [], "attn": [], "note": r.note}
            zero_grads(s)
        for _ in range(repeats or default_repeats(length)):
            for impl, r in runners.items():
                if r.skip:
                    continue
                prep, attn, _ = r.call()
                results[impl]["prep"].append(prep)
                results[impl]["attn"].append(attn)
                zero_grads(s)
    for impl, res in results.items():
        if "skip" in res:
            continue
        res["prep_ms"] = 1e3 * statistics.median(res.pop("prep"))
        res["attn_ms"] = 1e3 * statistics.median(res.pop("attn"))
        res["compile_s"] = res["first_s"] - (res["prep_ms"] + res["attn_ms"]) / 1e3
        if impl in outputs and "DENSE-padded" in outputs and impl != "DENSE-padded":
            diff = (outputs[impl] - outputs["DENSE-padded"]).abs().max().item()
            res["max_abs_diff"] = diff
    res_info = {"subgraphs": s.subgraphs, "max_nodes": s.max_nodes}
    results["_info"] = res_info
    return results


def zero_grads(s: Setup) -> None:
    if s.train:
        for p in (*s.attn.parameters(), *s.bias.parameters(), s.x):
            p.grad = None


# ------------------------------------------------------------------------------- memory


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_high_water() -> int:
    """Release freed memory, reset the RSS high-water mark; the current RSS in kB."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kb("VmRSS")


def measure_one(impl: str, length: int) -> dict:
    """CPU peak RSS (MB over the resident baseline) of a warm-up call, of a whole call
    (prep + attention) and of the attention alone (prep result already resident)."""
    device = torch.device("cpu")
    s = Setup(length, device, train=False)
    r = Runner(impl, s)
    if r.skip:
        return {"skip": r.skip}
    with torch.no_grad():
        start_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            base = _reset_high_water()
        except OSError:  # no high-water reset: report the warm-up call only
            base = None
        r.call()
        first = _status_kb("VmHWM") - base if base is not None else None
        if first is None:
            first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start_maxrss
            return {"first_mb": first / 1024, "call_mb": None, "attn_mb": None}
        base = _reset_high_water()
        r.call()
        call = _status_kb("VmHWM") - base
        p = r.prep(s.ctx)
        base = _reset_high_water()
        r.run(s.ctx, p)
        attn = _status_kb("VmHWM") - base
    return {"first_mb": first / 1024, "call_mb": call / 1024, "attn_mb": attn / 1024}


def measure_in_subprocess(impl: str, length: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", impl, str(length)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=400, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "memory run timed out"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"error": f"memory run failed (rc {done.returncode}): {tail[0][:200]}"}


def measure_gpu(length: int, device: torch.device, train: bool) -> dict[str, float | None]:
    """Peak CUDA memory (MB over the allocated baseline) of a whole call, per impl."""
    s = Setup(length, device, train)
    peaks: dict[str, float | None] = {}
    grad = torch.enable_grad() if train else torch.no_grad()
    with grad:
        for impl in IMPLS:
            r = Runner(impl, s)
            if r.skip:
                peaks[impl] = None
                continue
            r.call()  # warm (compiled in time_size already)
            zero_grads(s)
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            r.call()
            torch.cuda.synchronize()
            peaks[impl] = (torch.cuda.max_memory_allocated(device) - base) / MB
            zero_grads(s)
    return peaks


# ------------------------------------------------------------------------------- report


def fmt(value: float | None, spec: str = ",.1f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0:
        return "—"
    return f"{a / b:.2f}x"


def table(title: str, rows: dict[int, dict[str, dict]], mem_key: str) -> list[str]:
    lines = [
        f"#### {title}",
        "",
        "| tokens | impl | attention ms | prep ms | call ms | call / padded | "
        "peak MB (call) | peak / padded | peak MB (attention only) | compile s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes: list[str] = []
    for length, res in rows.items():
        info = res["_info"]
        ref = res.get("DENSE-padded", {})
        ref_call = ref["attn_ms"] + ref["prep_ms"] if "attn_ms" in ref else None
        ref_mem = ref.get(mem_key)
        for impl in IMPLS:
            r = res[impl]
            if "skip" in r:
                lines.append(f"| {length:,} | {impl} | {r['skip']} ||||||||")
                continue
            call = r["attn_ms"] + r["prep_ms"]
            compile_s = fmt(r["compile_s"], ".1f") if impl == "FLEX" else ""
            mark = "†" if r.get("note") else ""
            lines.append(
                f"| {length:,} | {impl}{mark} | {fmt(r['attn_ms'])} | {fmt(r['prep_ms'])} | "
                f"{fmt(call)} | {ratio(call, ref_call)} | {fmt(r.get(mem_key))} | "
                f"{ratio(r.get(mem_key), ref_mem)} | {fmt(r.get('attn_mb'))} | {compile_s} |"
            )
            if r.get("note"):
                notes.append(f"† {length:,} tokens: {r['note']}")
            if r.get("error"):
                notes.append(f"{impl} at {length:,}: {r['error']}")
            if "max_abs_diff" in r:
                notes.append(
                    f"{impl} at {length:,}: max |output - DENSE-padded| = {r['max_abs_diff']:.1e}"
                )
        notes.append(
            f"{length:,} tokens = {info['subgraphs']} subgraphs, largest {info['max_nodes']} nodes"
        )
    lines += ["", *[f"- {n}" for n in notes], ""]
    return lines


def goals(rows: dict[int, dict[str, dict]], mem_key: str) -> list[str]:
    lines = ["goals:", ""]
    per_k, attn_per_k = [], []
    for length, res in rows.items():
        flex = res["FLEX"]
        if flex.get(mem_key) is not None:
            mark = "†" if flex.get("note") else ""  # block mask built another way
            per_k.append((length, flex[mem_key] / (length / 1000), mark))
        if flex.get("attn_mb") is not None:
            attn_per_k.append((length, flex["attn_mb"] / (length / 1000), ""))

    def linear(values: list[tuple[int, float, str]]) -> str:
        if len(values) < 2:
            return "not enough sizes"
        shown = ", ".join(f"{n / 1024:.0f}k: {v:.1f}{m}" for n, v, m in values)
        spread = max(v for _, v, _ in values) / max(min(v for _, v, _ in values), 1e-9)
        verdict = "yes" if spread < 2 else "NO"
        return f"{shown} MB per 1k tokens (max/min {spread:.1f}) -> {verdict}"

    lines.append(f"- FLEX memory linear in tokens (whole call): {linear(per_k)}")
    if attn_per_k:
        lines.append(f"- FLEX memory linear in tokens (attention only): {linear(attn_per_k)}")
    parts = []
    for length, res in rows.items():
        if length < 8192:
            continue
        flex, packed = res["FLEX"], res["DENSE-packed"]
        if "skip" in flex:
            parts.append(f"{length / 1024:.0f}k: FLEX skipped")
        elif "skip" in packed:
            parts.append(f"{length / 1024:.0f}k: DENSE-packed cannot run ({packed['skip']})")
        else:
            f_call = flex["attn_ms"] + flex["prep_ms"]
            p_call = packed["attn_ms"] + packed["prep_ms"]
            parts.append(
                f"{length / 1024:.0f}k: call {f_call / p_call:.2f}x, attention only "
                f"{flex['attn_ms'] / packed['attn_ms']:.2f}x of DENSE-packed -> "
                + ("yes" if f_call < p_call else "NO")
            )
    lines.append("- FLEX faster than DENSE-packed at 8k and beyond: " + "; ".join(parts))
    return [*lines, ""]


def machine() -> str:
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()}-core CPU ({platform.machine()}), {ram:.0f} GiB RAM, {gpu}; "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, help="timed calls per impl (default by size)")
    parser.add_argument("--record", help="append the Markdown tables to this file")
    parser.add_argument("--devices", nargs="+", choices=["cpu", "cuda"], default=["cpu", "cuda"])
    parser.add_argument("--one", nargs=2, metavar=("IMPL", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(measure_one(args.one[0], int(args.one[1]))), flush=True)
        return 0

    started = time.perf_counter()
    cpu = torch.device("cpu")
    cpu_rows: dict[int, dict[str, dict]] = {}
    for length in args.sizes if "cpu" in args.devices else []:
        t = time.perf_counter()
        res = time_size(length, cpu, train=False, repeats=args.repeats)
        gc.collect()
        for impl in IMPLS:
            if "skip" not in res[impl]:
                res[impl].update(measure_in_subprocess(impl, length))
        cpu_rows[length] = res
        print(f"[{length:,} tokens on CPU: {time.perf_counter() - t:.0f} s]", flush=True)

    out = [
        f"### {time.strftime('%Y-%m-%d %H:%M')}: one attention layer, dim {CONFIG.dim}, "
        f"{CONFIG.heads} heads, subgraphs of 24..96 nodes",
        "",
        f"command: `python benchmarks/attention.py --sizes {' '.join(map(str, args.sizes))}"
        + (f" --repeats {args.repeats}" if args.repeats else "")
        + (f" --devices {' '.join(args.devices)}" if args.devices != ["cpu", "cuda"] else "")
        + "`",
        "",
        f"machine: {machine()}",
        "",
        "call = prep (block mask / bias) + attention, median over the timed calls; ratios "
        "are to DENSE-padded (lower is better); peak MB = resident-set high-water mark over "
        "the resident baseline, warm, in a fresh process per (impl, size); compile s = first "
        "call minus a steady call (cold inductor cache).",
        "",
    ]
    if cpu_rows:
        out += table("CPU, forward (no_grad)", cpu_rows, "call_mb")
        out += goals(cpu_rows, "call_mb")
    if "cuda" in args.devices and torch.cuda.is_available():
        gpu = torch.device("cuda")
        for train, name in ((False, "forward (no_grad)"), (True, "forward + backward")):
            rows = {}
            for length in args.sizes:
                res = time_size(length, gpu, train=train, repeats=args.repeats)
                for impl, peak in measure_gpu(length, gpu, train).items():
                    if "skip" not in res[impl]:
                        res[impl]["gpu_mb"] = peak
                rows[length] = res
                torch.cuda.empty_cache()
            out += table(f"GPU ({torch.cuda.get_device_name()}), {name}", rows, "gpu_mb")
            out += goals(rows, "gpu_mb")
    out.append(f"total benchmark wall time: {time.perf_counter() - started:.0f} s")
    publish(out, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
