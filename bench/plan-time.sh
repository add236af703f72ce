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
# With --mesh: 2-D meshes (issue 19). tp-gen's Llama-3-8B (32 layers,
# 2048 tokens per sequence, bf16, batch 8, 16 on 16 x 8) forward + loss and
# training step on dp x tp = 8 x 1, 8 x 8 and 16 x 8 with the tokens pinned
# over "dp" (batch-axis=dp), and Llama-2-70B's training step (80 layers,
# batch 8) on 8 x 8; default memory constraint. TP_MESH_CASES overrides the
# list ("preset:layers:batch:dp:tp:fwd|train ...").
#
# With --axes: meshes of 3, 4 and 6 axes (issue 27; search-axes=2 groups the
# axes that pin no input). tp-gen's tiny GPT-2 (1 and 8 layers) and tiny
# Llama forward + loss on a=2,b=2,c=2, dp=2,tp=2,x=2,y=2 and six axes of 2,
# and Llama-3-8B (32 layers, batch 8 x 2048 tokens, bf16) forward + loss and
# training step on dp=4,tp=4,x=4 with the tokens over "dp". TP_AXES_CASES
# overrides the list ("preset:layers:batch:seq:AXES:fwd|train ...", AXES as
# in mesh-axes= with ';' for ','; batch-axis=dp when the mesh has "dp").
#
#   bench/plan-time.sh [--train | --mesh | --axes] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
train=0
mesh=0
axes=0
if [[ "${1:-}" == "--train" ]]; then
  train=1
  shift
elif [[ "${1:-}" == "--mesh" ]]; then
  mesh=1
  shift
elif [[ "${1:-}" == "--axes" ]]; then
  axes=1
  shift
fi
build=${1:-${TP_BUILD_DIR:-$root/build}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if (( axes )); then
  printf "%-11s %-3s %-6s %-5s %-26s %-6s %-7s %-7s %-7s %-7s %-14s %s\n" \
    model L graph batch mesh nodes strats plan_s user_s rss_MB groups exact
  cases=${TP_AXES_CASES:-"gpt2-tiny:1:1:32:a=2;b=2;c=2:fwd \
gpt2-tiny:8:1:32:a=2;b=2;c=2:fwd gpt2-tiny:1:2:32:dp=2;tp=2;x=2;y=2:fwd \
gpt2-tiny:8:2:32:dp=2;tp=2;x=2;y=2:fwd gpt2-tiny:1:1:32:a=2;b=2;c=2;d=2;e=2;f=2:fwd \
gpt2-tiny:8:1:32:a=2;b=2;c=2;d=2;e=2;f=2:fwd llama-tiny:8:1:32:a=2;b=2;c=2:fwd \
llama3-8b:32:8:2048:dp=4;tp=4;x=4:fwd llama3-8b:32:8:2048:dp=4;tp=4;x=4:train"}
  for c in $cases; do
    IFS=: read -r preset layers batch seq spec graph <<<"$c"
    spec=${spec//;/,}
    extra=(--with-embedding --with-loss)
    [[ $graph == train ]] && extra=(--train)
    dtype=()
    [[ $preset == llama3-8b ]] && dtype=(--dtype bf16)
    "$build/bin/tp-gen" --preset "$preset" --layers "$layers" --seq "$seq" \
      --batch "$batch" "${dtype[@]}" "${extra[@]}" -o "$tmp/m.mlir"
    options="mesh-axes=$spec report=$tmp/r.json"
    [[ ",$spec" == *",dp="* ]] && options+=" batch-axis=dp"
    if ! /usr/bin/time -f "%U %M" -o "$tmp/time" "$build/bin/tp-opt" \
        "$tmp/m.mlir" --tp-propagate="$options" -o /dev/null 2>"$tmp/err"; then
      printf "%-11s %-3s %-6s %-5s %-26s did not plan: %s\n" "$preset" "$layers" \
        "$graph" "$batch" "$spec" "$(grep -m1 error "$tmp/err" | cut -c1-160)"
      continue
    fi
    read -r user rss < "$tmp/time"
    python3 - "$tmp/r.json" "$preset" "$layers" "$graph" "$batch" "$spec" "$user" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["functions"][0]
s = r["solver"]
groups = " ".join("*".join(g) for g in s.get("axis_groups", [])) or "-"
print("%-11s %-3s %-6s %-5s %-26s %-6d %-7d %-7.2f %-7.2f %-7.0f %-14s %s" % (
    sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6],
    s["nodes"], s["strategies"], s["seconds"], float(sys.argv[7]),
    int(sys.argv[8]) / 1024.0, groups,
    "yes" if s["exact"] else "gap %.2g" % s["gap"]))
PY
  done
  echo "plan_s: planner time from the report; user_s (CPU time), rss_MB: the whole tp-opt run."
  echo "groups: the mesh axes the search split together (search-axes=2)."
  exit 0
fi
if (( mesh )); then
  printf "%-11s %-6s %-5s %-6s %-6s %-7s %-8s %-8s %-6s %-7s %-9s %-8s %-6s\n" \
    model graph batch mesh nodes strats pruned plan_s wall_s rss_MB front width exact
  cases=${TP_MESH_CASES:-"llama3-8b:32:8:8:1:fwd llama3-8b:32:8:8:1:train \
llama3-8b:32:8:8:8:fwd llama3-8b:32:8:8:8:train llama3-8b:32:16:16:8:fwd \
llama3-8b:32:16:16:8:train llama2-70b:80:8:8:8:train"}
  for c in $cases; do
    IFS=: read -r preset layers batch dpn tpn graph <<<"$c"
    extra=(--with-embedding --with-loss)
    [[ $graph == train ]] && extra=(--train)
    "$build/bin/tp-gen" --preset "$preset" --layers "$layers" --seq 2048 \
      --batch "$batch" --dtype bf16 "${extra[@]}" -o "$tmp/m.mlir"
    if ! /usr/bin/time -f "%e %M" -o "$tmp/time" "$build/bin/tp-opt" \
        "$tmp/m.mlir" --tp-propagate="mesh-axes=dp=$dpn,tp=$tpn batch-axis=dp report=$tmp/r.json" \
        -o /dev/null 2>"$tmp/err"; then
      printf "%-11s %-6s %-5s %-6s did not plan: %s\n" "$preset" "$graph" "$batch" \
        "${dpn}x${tpn}" "$(grep -m1 error "$tmp/err" | cut -c1-160)"
      continue
    fi
    read -r wall rss < "$tmp/time"
    python3 - "$tmp/r.json" "$preset" "$graph" "$batch" "${dpn}x${tpn}" "$wall" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["functions"][0]
s = r["solver"]
print("%-11s %-6s %-5s %-6s %-6d %-7d %-8d %-8.2f %-6.2f %-7.0f %-9d %-8d %-6s" % (
    sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], s["nodes"],
    s["strategies"], s["pruned_strategies"], s["seconds"], float(sys.argv[6]),
    int(sys.argv[7]) / 1024.0, s["largest_front"], s["width"],
    "yes" if s["exact"] else "gap %.2g" % s["gap"]))
PY
  done
  echo "plan_s: planner time from the report; wall_s, rss_MB: the whole tp-opt run."
  echo "strats: strategies before dominance pruning; pruned: removed by it."
  exit 0
fi

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
