#!/usr/bin/env bash
# The masks table of docs/gpu.md: the fused attention on each mask Hugging
# Face and JAX write (utils/masked_attention.py, torch-mlir's spelling),
# with each kernel, executed by `tp-run --backend cuda-emu --check` against
# the CPU program (unfused): one markdown row per (mask, kernel) with the
# relative error tp-run reports (max abs error / max abs value) and its
# limit (bf16 2e-2, f32 1e-5). Kernels: tensor-core (bf16 only) and
# cuda-core, forced by --lower-gpu-options "attention=...". Asserts
# nothing; test/e2e/run-cuda-emu-masks.test checks the same cases.
#
#   bench/attention-masks.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name | generator arguments
cases=(
  "window 16, finfo.min, tp-gen's spelling (select in the f32 widening: where the NaN was found)|tpgen 2 130 64 16"
  "window 16, finfo.min, additive (the issue's case: 2 heads, 130 tokens, d 64)|--mask window --window 16"
  "window 40, finfo.min, additive (200 tokens, d 128)|--mask window --window 40 --head-dim 128 --seq 200"
  "causal, finfo.min, additive|--mask causal"
  "bidirectional, 97 tokens, right padding 30, BERT's (1 - mask) * min|--mask none --seq 97 --batch 2 --pad right --pad-len 30 --pad-spelling bert"
  "window 16, -inf, additive|--mask window --window 16 --fill ninf"
  "causal + left padding 70, finfo.min, additive (70 rows fully masked)|--mask causal --batch 2 --pad left --pad-len 70"
  "causal + left padding 70, finfo.min, masked_fill (select)|--mask causal --batch 2 --pad left --pad-len 70 --spelling select"
  "window 16, finfo.min, masked_fill (select: keys skipped)|--mask window --window 16 --spelling select"
  "window 16, GQA 4 heads on 1 KV head, d 128|--mask window --window 16 --heads 4 --kv-heads 1 --head-dim 128"
)

echo "| mask | dtype | kernel | relative error | limit |"
echo "|---|---|---|---|---|"
n=0
for entry in "${cases[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  for dtype in bf16 f32; do
    n=$((n + 1))
    src=$work/case$n.mlir
    if [ "${args%% *}" = tpgen ]; then
      # scripts/gpu_check_prepare.attention_mlir: bf16 only (Q, K, V), f32
      # scores.
      [ "$dtype" = bf16 ] || continue
      read -r _ heads seq dim window <<< "$args"
      python3 -c "import sys; sys.path.insert(0, sys.argv[1]); from gpu_check_prepare import attention_mlir; print(attention_mlir($heads, $seq, $dim, window=$window, fill='min'))" "$root/scripts" > "$src"
    else
      # shellcheck disable=SC2086
      python3 "$root/utils/masked_attention.py" --dtype $dtype $args > "$src"
    fi
    kernels="cuda-core"
    [ "$dtype" = bf16 ] && kernels="tensor-core cuda-core"
    for kernel in $kernels; do
      line=$("$build/bin/tp-run" "$src" --backend cuda-emu --check \
               --lower-gpu-options "attention=$kernel" \
               --work-dir "$work/w$n-$kernel" 2>&1 | grep '^check: output #0' || true)
      rel=$(sed -n 's/.*relative \([^ ]*\) (limit \([^)]*\)) \(.*\)/\1 | \2 (\3)/p' <<< "$line")
      echo "| $name | $dtype | $kernel | ${rel:-run failed} |"
    done
  done
done
