#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run; every step's output goes to OUT/steps.log
# and the benchmarks' Markdown to OUT:
#   bash benchmarks/gpu_checks.sh OUT
# - env: the GPU, torch, onnxruntime and its providers;
# - parity: FLEX vs DENSE, forward and backward (tests/hir_sdk/model/test_flex_dense.py);
# - sharding: the online ranker's tables sharded row-wise and table-wise in a one-rank
#   NCCL group match the unsharded ranker (python -m hir_sdk.ranking.sharding);
# - attention.md: benchmarks/attention.py's GPU section (forward, forward + backward);
# - training.md: `hir fit` on CPU, twice on the GPU and in a one-rank NCCL group
#   (benchmarks/gpu_training.py);
# - onnx_serving.md: the encoder and the online ranker under torch and onnxruntime, CPU
#   and CUDA (benchmarks/onnx_serving.py).
# GPU_SKIP="attention training" leaves those steps out; GPU_PARITY_LIMIT and
# GPU_TRAIN_LIMIT (seconds) bound those two steps. A step that fails is reported and the
# next one still runs; the exit status is the number of failed steps.
set -u
out=${1:?usage: bash benchmarks/gpu_checks.sh OUT}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
failed=0

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log to OUT/steps.log
    local name=$1 limit=$2
    shift 2
    case " ${GPU_SKIP:-} " in *" $name "*) echo "[$name: skipped]"; return ;; esac
    local start=$SECONDS log
    log=$(mktemp)
    timeout "$limit" "$@" >"$log" 2>&1
    local rc=$?
    { echo "=== $name: exit $rc after $((SECONDS - start)) s"; cat "$log"; } >>"$out/steps.log"
    echo "[$name: exit $rc after $((SECONDS - start)) s]"
    grep -v DEBUG "$log" | tail -n 25
    rm -f "$log"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
}

step env 60 bash -c "nvidia-smi -L; $py -c 'import torch, onnxruntime as o; \
print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name()); \
print(o.__version__, o.get_available_providers())'"
step parity "${GPU_PARITY_LIMIT:-240}" "$py" -m pytest -q -p no:cacheprovider tests/hir_sdk/model/test_flex_dense.py
for sharding in row_wise table_wise; do
    step "sharding $sharding" 120 "$py" -m torch.distributed.run --standalone \
        --nproc_per_node=1 -m hir_sdk.ranking.sharding "$sharding"
done
step onnx_serving 120 "$py" benchmarks/onnx_serving.py --rounds 10 \
    --record "$out/onnx_serving.md"
step attention 180 "$py" benchmarks/attention.py --devices cuda --record "$out/attention.md"
step training "${GPU_TRAIN_LIMIT:-300}" "$py" benchmarks/gpu_training.py --steps "${GPU_TRAIN_STEPS:-100}" \
    --record "$out/training.md"
exit "$failed"
