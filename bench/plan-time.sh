#!/usr/bin/env bash
# Planning time against model size: Llama-2-70B-shaped graphs (hidden 8192,
# 64 heads, 8 kv-heads, ffn 28672, 4096 tokens, bf16) of 1, 8, 32 and 80
# layers with embedding and LM head, planned at tp=8 on h100-nvlink.
# Prints one row per size and the time per layer; asserts nothing.
#
# With --train: training steps instead (tp-gen --train: forward, loss,
# backward, AdamW; docs/training.md), Llama-2-7B shapes (hidden 4096, 32
# heads, ffn 11008, 4096 tokens, f32) of 1, 2, 4, 8 and 32 layers at tp=8
# (TP_PLAN_LAYERS overrides the list).
#
#   bench/plan-time.sh [--train] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
train=0
if [[ "${1:-}" == "--train" ]]; then
  train=1
  shift
fi
build=${1:-${TP_BUILD_DIR:-$root/build}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf "%-7s %-9s %-10s %-10s %-10s %-8s %-7s %-12s %-11s\n" \
  layers ops nodes plan_s wall_s per_layer front peak_rss_MB collectives
if (( train )); then
  sizes=${TP_PLAN_LAYERS:-1 2 4 8 32}
else
  sizes=${TP_PLAN_LAYERS:-1 8 32 80}
fi
for layers in $sizes; do
  if (( train )); then
    "$build/bin/tp-gen" --preset llama2-7b --layers "$layers" --seq 4096 \
      --train -o "$tmp/m.mlir"
  else
    "$build/bin/tp-gen" --preset llama2-70b --layers "$layers" --seq 4096 \
      --dtype bf16 --with-embedding -o "$tmp/m.mlir"
  fi
  ops=$(grep -c '= ' "$tmp/m.mlir" || true)
  if ! /usr/bin/time -f "%e %M" -o "$tmp/time" "$build/bin/tp-opt" \
      "$tmp/m.mlir" --tp-propagate="tp=8 report=$tmp/r.json" -o /dev/null; then
    printf "%-7s %-9s did not finish: %s\n" "$layers" "$(grep -c '= ' "$tmp/m.mlir" || true)" \
      "$(tail -n 1 "$tmp/time")"
    continue
  fi
  read -r wall rss < "$tmp/time"
  python3 - "$tmp/r.json" "$layers" "$ops" "$wall" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["functions"][0]
layers, ops, wall, rss = int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
s = r["solver"]
print("%-7d %-9s %-10d %-10.3f %-10.2f %-8.4f %-7d %-12.0f %-11d" % (
    layers, ops, s["nodes"], s["seconds"], wall, s["seconds"] / layers,
    s["largest_front"], rss / 1024.0, r["totals"]["collectives"]))
PY
done
echo "plan_s: planner time (graph, strategies, solver, report) from the report;"
echo "wall_s: the whole tp-opt run (parse, verify, plan, print)."
