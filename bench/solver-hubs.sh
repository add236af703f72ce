#!/usr/bin/env bash
# The solver on hubs: layered MLP-like functions whose matmuls all
# accumulate into a few shared zero-filled tensors (one per width, as CSE
# leaves a front end's zero inits), planned at tp=4. Each shared fill is a
# hub read in every layer; with several of them the exact elimination's
# tables multiply and the solver conditions on them instead
# (lib/Analysis/SolverFallback.cpp). The planner's phase 0 would give each
# matmul its own copy of the fill (Rematerialize.h) and remove the hubs, so
# this bench plans with rematerialize=false. Prints one row per graph: hubs, layers,
# nodes, whether the plan is proven optimal, width, largest front, planning
# and wall seconds, peak memory. Asserts nothing.
#
#   bench/solver-hubs.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${TP_BUILD_DIR:-$root/build}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gen() { # layers, comma-separated hidden widths (one hub each, plus 256)
  python3 - "$1" "$2" <<'PY'
import sys
layers, widths = int(sys.argv[1]), [int(w) for w in sys.argv[2].split(",")]
args = ["%x: tensor<64x256xf32>"]
for l in range(layers):
    for j, w in enumerate(widths):
        args += [f"%w{l}_{j}a: tensor<256x{w}xf32> {{tp.param}}",
                 f"%w{l}_{j}b: tensor<{w}x256xf32> {{tp.param}}"]
out = [f"func.func @hubs({', '.join(args)}) -> tensor<64x256xf32> {{",
       "  %zero = arith.constant 0.0 : f32"]
for w in sorted(set(widths + [256])):
    out.append(f"  %e{w} = tensor.empty() : tensor<64x{w}xf32>")
    out.append(f"  %f{w} = linalg.fill ins(%zero : f32) outs(%e{w} : "
               f"tensor<64x{w}xf32>) -> tensor<64x{w}xf32>")
cur = "%x"
for l in range(layers):
    for j, w in enumerate(widths):
        p = f"{l}_{j}"
        out.append(f"  %a{p} = linalg.matmul ins({cur}, %w{p}a : tensor<64x256xf32>, "
                   f"tensor<256x{w}xf32>) outs(%f{w} : tensor<64x{w}xf32>) -> tensor<64x{w}xf32>")
        out.append(f"  %g{p} = math.tanh %a{p} : tensor<64x{w}xf32>")
        out.append(f"  %b{p} = linalg.matmul ins(%g{p}, %w{p}b : tensor<64x{w}xf32>, "
                   f"tensor<{w}x256xf32>) outs(%f256 : tensor<64x256xf32>) -> tensor<64x256xf32>")
        out.append(f"  %s{p} = arith.addf {cur}, %b{p} : tensor<64x256xf32>")
        cur = f"%s{p}"
out.append(f"  return {cur} : tensor<64x256xf32>")
out.append("}")
print("\n".join(out))
PY
}

printf "%-5s %-7s %-6s %-6s %-6s %-6s %-8s %-7s %-11s\n" \
  hubs layers nodes exact width front plan_s wall_s peak_rss_MB
for spec in "2 12 1024" "3 12 512,1024" "5 12 128,512,1024,2048" \
            "5 48 128,512,1024,2048" "8 12 128,192,320,512,768,1024,2048"; do
  read -r hubs layers widths <<< "$spec"
  gen "$layers" "$widths" > "$tmp/h.mlir"
  if ! /usr/bin/time -f "%e %M" -o "$tmp/time" "$build/bin/tp-opt" \
      "$tmp/h.mlir" --tp-propagate="tp=4 rematerialize=false report=$tmp/r.json" -o /dev/null \
      2> "$tmp/err"; then
    printf "%-5s %-7s failed: %s\n" "$hubs" "$layers" "$(head -n 1 "$tmp/err")"
    continue
  fi
  read -r wall rss < "$tmp/time"
  python3 - "$tmp/r.json" "$hubs" "$layers" "$wall" "$rss" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["functions"][0]["solver"]
print("%-5s %-7s %-6d %-6s %-6d %-6d %-8.2f %-7s %-11d" % (
    sys.argv[2], sys.argv[3], s["nodes"], s["exact"], s["width"],
    s["largest_front"], s["seconds"], sys.argv[4], int(sys.argv[5]) // 1024))
PY
done
