#!/usr/bin/env bash
# Regenerates docs/benchmarks.md and its plots (docs/benchmarks/*.png) from
# measurements made in this run: plan quality against Megatron-LM's formulas,
# activation memory against Korthikanti et al. 2022, upstream MLIR's shard
# passes on the same inputs, compile time against model size, and the
# runtime's collective bandwidth. Prints figures and ratios; asserts nothing.
#
#   bench/run.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${TP_BUILD_DIR:-$root/build}}
for tool in tp-gen tp-opt tprt-bench; do
  [ -x "$build/bin/$tool" ] || { echo "bench: $build/bin/$tool is missing; build first (./scripts/build.sh)" >&2; exit 1; }
done
exec /usr/bin/python3 "$root/bench/benchmarks.py" --build "$build" --root "$root"
