#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and shows
# tp-opt at work. Today it shows the tp dialect on a bundled example (a GPT-2
# MLP partitioned Megatron-style over 4 ranks); as the planner, partitioner and
# runtime land, this script grows into the end-to-end sharded Transformer run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TP_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
tpopt="$build/bin/tp-opt"

echo "== 1. A GPT-2 MLP as rank r of tp=4 runs it (examples/gpt2-mlp-tp4.mlir)"
echo "   tp-opt parses and verifies the program: layouts on the arguments, the"
echo "   all_reduce's shapes against the mesh. Printed back in canonical form:"
echo
"$tpopt" "$root/examples/gpt2-mlp-tp4.mlir"
echo
echo "== 2. Communication in this plan: every tp collective, with its bytes"
"$tpopt" "$root/examples/gpt2-mlp-tp4.mlir" --mlir-print-op-generic |
  python3 -c '
import re, sys
n = 0
for line in sys.stdin:
    m = re.search(r"\"tp\.(all_reduce|all_gather|reduce_scatter|all_to_all)\".*: \(tensor<([0-9x]+)x(f32|f16|bf16)>", line)
    if m:
        dims = [int(d) for d in m.group(2).split("x")]
        elems = 1
        for d in dims: elems *= d
        size = {"f32": 4, "f16": 2, "bf16": 2}[m.group(3)]
        print("   tp.%s of %s x %s: %d bytes per rank" % (m.group(1), m.group(2), m.group(3), elems * size))
        n += 1
print("   %d collective(s) for the whole MLP" % n)
'
echo
echo "== 3. A collective whose shapes do not add up is rejected (exit code 1):"
if "$tpopt" "$root/examples/bad-gather.mlir" >/dev/null 2>"$build/demo-error.txt"; then
  echo "   unexpected: the bad example verified" >&2; exit 1
fi
sed 's/^/   /' "$build/demo-error.txt" | head -3
echo
echo "demo: done"
