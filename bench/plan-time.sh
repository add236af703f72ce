#!/usr/bin/env bash
# Planning time against model size: Llama-2-70B-shaped graphs (hidden 8192,
# 64 heads, 8 kv-heads, ffn 28672, 4096 tokens, bf16) of 1, 8, 32 and 80
# layers with embedding and LM head, planned at tp=8 on h100-nvlink.
# Prints one row per size and the time per layer; asserts nothing.
#
#   bench/plan-time.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${TP_BUILD_DIR:-$root/build}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf "%-7s %-9s %-10s %-10s %-10s %-8s %-7s %-12s %-11s\n" \
  layers ops nodes plan_s wall_s per_layer front peak_rss_MB collectives
for layers in 1 8 32 80; do
  "$build/bin/tp-gen" --preset llama2-70b --layers "$layers" --seq 4096 \
    --dtype bf16 --with-embedding -o "$tmp/m.mlir"
  ops=$(grep -c '= ' "$tmp/m.mlir" || true)
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$build/bin/tp-opt" "$tmp/m.mlir" \
    --tp-propagate="tp=8 report=$tmp/r.json" -o /dev/null
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
