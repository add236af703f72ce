#!/usr/bin/env bash
# The GPU cost table of docs/gpu.md, measured in one run: tp-gen's
# Llama-2-7B decoder layer (bf16, batch 1 x 4096 tokens, --blocks-only) and
# the same layer with the final norm and the LM head, sharded at tp = 1 and
# 8 and lowered with --tp-lower-gpu="chip=sm_90 stop-after=kernels
# cost-report=FILE" (no GPU needed). Prints one markdown row per figure:
# kernel launches, GEMM calls (and the products they compute), GEMM flops,
# collective calls, device copies, bytes moved, the minimum (issue 20's:
# arguments once plus every library-facing activation once), the ratio, the
# arguments alone and that ratio, the largest temporary, and the modelled
# seconds on h200-nvlink (compute, communication, issue 26's roofline, the
# ratio, the three slowest entries; docs/cost-model.md). Then the same
# for torch-mlir's 7B-class exports (test/frontends/Inputs/*-l1.mlir: one
# layer with embedding and LM head, f32, 128 tokens) at tp = 1 and 8, one
# row each: launches (and how many of them are launch-bound: under 2.1 us
# modelled, the 2 us launch and less than 0.1 us of work), GEMM calls,
# bytes / minimum, the modelled compute, what its GEMMs are modelled at
# against what their flops alone take at the f32 GEMM rate (the wave
# quantisation of 128-token GEMMs), the roofline at f32 peaks (GEMMs
# 53.6, attention 40.9 TFLOP/s on h200-nvlink; 4.3 TB/s), the ratio, the
# three slowest entries and every kernel the report flags as far above
# its bytes' time (in any function: the fused attention's wrapper
# included). Then, where
# ptxas is found, the layer's kernels compiled for sm_90 (tp-run
# --compile-only) and `ptxas -v` over them (utils/ptxas-check.py): registers,
# threads, static shared memory, spills and what each uses (mma.sync,
# ldmatrix, 16-byte loads and stores). Asserts nothing: the figures are
# static counts of the lowered code.
#
# EXPORTS (names under test/frontends/Inputs, space-separated) overrides
# the exports' list.
#
#   bench/gpu-cost.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gen=(--preset llama2-7b --layers 1 --seq 4096 --batch 1 --dtype bf16)
"$bin/tp-gen" "${gen[@]}" --blocks-only -o "$work/layer.mlir"
"$bin/tp-gen" "${gen[@]}" -o "$work/full.mlir"
reports=()
for model in layer full; do
  for tp in 1 8; do
    "$bin/tp-opt" "$work/$model.mlir" --tp-shard="tp=$tp" -o "$work/$model.tp$tp.mlir"
    "$bin/tp-opt" "$work/$model.tp$tp.mlir" \
      --tp-lower-gpu="chip=sm_90 stop-after=kernels device=h200-nvlink cost-report=$work/$model.tp$tp.json" \
      -o /dev/null 2>/dev/null
    reports+=("$model:$tp:$work/$model.tp$tp.json")
  done
done

python3 - "${reports[@]}" <<'EOF'
import json, sys

columns = []
for arg in sys.argv[1:]:
    model, tp, path = arg.split(":", 2)
    f = json.load(open(path))["functions"][0]
    columns.append(("%s tp=%s" % ("layer" if model == "layer" else "layer + LM head", tp), f))

def us(s):
    return "%.1f us" % (s * 1e6)

def mib(b):
    return "%.1f MiB" % (b / 2**20)

def products(f):
    return sum(e.get("batch", 1) if e["name"].startswith("tprt_mlir_gemm_shared_a") else 1
               for e in f["launches"] if e["kind"] == "gemm")

def collectives(f):
    return sum(n for name, n in f["calls_by_name"].items()
               if any(c in name for c in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "slice")))

rows = [
    ("kernel launches", lambda f: str(f["kernel_launches"])),
    ("GEMM calls (products)", lambda f: "%d (%d)" % (f["gemm_launches"], products(f))),
    ("GEMM flops (per device)", lambda f: "%.1f G" % (f["gemm_flops"] / 1e9)),
    ("collective calls", lambda f: str(collectives(f))),
    ("device copies", lambda f: str(f["copies"]["count"])),
    ("bytes moved per device", lambda f: mib(f["bytes_moved"])),
    ("minimum (issue 20's)", lambda f: mib(f["minimum_bytes"])),
    ("bytes moved / minimum", lambda f: "%.2fx" % f["ratio_to_minimum"]),
    ("arguments alone", lambda f: mib(f["argument_bytes"])),
    ("bytes moved / arguments", lambda f: "%.2fx" % f["ratio_to_arguments"]),
    ("largest temporary", lambda f: "`%s`" % f["largest_temporary"]["type"]),
    ("modelled compute (h200-nvlink)", lambda f: us(f["seconds"]["compute"])),
    ("modelled communication", lambda f: us(f["seconds"]["communication"])),
    ("roofline (GEMMs 790, attention 600 TFLOP/s, 4.3 TB/s)", lambda f: us(f["roofline"]["seconds"])),
    ("compute / roofline", lambda f: "%.2fx" % (f["seconds"]["compute"] / f["roofline"]["seconds"])),
    ("slowest", lambda f: ", ".join("%s %s" % (e["name"], us(e["seconds"])) for e in f["slowest"][:3])),
]
print("| Llama-2-7B, bf16, 4096 tokens | " + " | ".join(name for name, _ in columns) + " |")
print("|---|" + "---|" * len(columns))
for label, get in rows:
    print("| %s | %s |" % (label, " | ".join(get(f) for _, f in columns)))
EOF

# torch-mlir's 7B-class exports (f32, 128 tokens, embedding and LM head).
exports=${EXPORTS:-llama2-7b-l1 mistral-7b-l1 qwen2-7b-l1 qwen3-8b-l1 pythia-6.9b-l1 falcon-7b-l1 gemma2-9b-l1 mixtral-8x7b-l1}
inputs=$root/test/frontends/Inputs
ereports=()
for model in $exports; do
  for tp in 1 8; do
    "$bin/tp-opt" "$inputs/$model.mlir" --tp-shard="tp=$tp" -o "$work/$model.tp$tp.mlir" 2>/dev/null
    "$bin/tp-opt" "$work/$model.tp$tp.mlir" \
      --tp-lower-gpu="chip=sm_90 stop-after=kernels device=h200-nvlink cost-report=$work/$model.tp$tp.json" \
      -o /dev/null 2>/dev/null
    ereports+=("$model:$tp:$work/$model.tp$tp.json")
  done
done
echo
python3 - "${ereports[@]}" <<'EOF'
import json, sys

def us(s):
    return "%.1f us" % (s * 1e6)

print("| torch-mlir export (f32, 128 tokens) | tp | kernel launches (launch-bound) "
      "| GEMM calls (products) | bytes moved / minimum | modelled compute "
      "| GEMMs modelled (their flops alone at 53.6 TFLOP/s) "
      "| roofline (f32: GEMMs 53.6, attention 40.9 TFLOP/s; 4.3 TB/s) "
      "| compute / roofline | slowest | flagged (modelled, x its bytes' time) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for arg in sys.argv[1:]:
    model, tp, path = arg.split(":", 2)
    functions = json.load(open(path))["functions"]
    f = functions[0]
    small = sum(1 for e in f["launches"] if e["kind"] == "kernel" and e["seconds"] < 2.1e-6)
    products = sum(e.get("batch", 1) if e["name"].startswith("tprt_mlir_gemm_shared_a") else 1
                   for e in f["launches"] if e["kind"] == "gemm")
    flops_time = f["gemm_flops"] / (67e12 * 0.8)
    flags = ", ".join("%s %s, %.1fx" % (x["name"], us(x["seconds"]), x["ratio"])
                      for g in functions for x in g["flags"]) or "none"
    print("| %s | %s | %d (%d) | %d (%d) | %.2fx | %s | %s (%s) | %s | %.2fx | %s | %s |" % (
        model, tp, f["kernel_launches"], small, f["gemm_launches"], products,
        f["ratio_to_minimum"], us(f["seconds"]["compute"]), us(f["seconds"]["gemms"]),
        us(flops_time), us(f["roofline"]["seconds"]), f["ratio_to_roofline"],
        ", ".join("%s %s" % (e["name"], us(e["seconds"])) for e in f["slowest"][:3]),
        flags))
EOF

# ptxas -v over the layer's kernels at tp = 1 and 8 (sm_90).
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$ptxas" ]; then
  for tp in 1 8; do
    "$bin/tp-run" --preset llama2-7b --gen=--layers=1 --gen=--blocks-only \
      --gen=--seq=4096 --gen=--batch=1 --gen=--dtype=bf16 --backend cuda \
      --tp $tp --chip sm_90 --compile-only --work-dir "$work/so" > /dev/null
  done
  echo
  echo "| ptxas -v, sm_90 | kernel | registers x threads | static shared | spills | uses |"
  echo "|---|---|---|---|---|---|"
  (cd "$work/so" && python3 "$root/utils/ptxas-check.py" --ptxas "$ptxas" tp1 tp8) |
    sed -n 's|^\(tp[0-9]*\)/model.so kernel *\([A-Za-z0-9_]*\) *\([0-9]*\) registers x *\([0-9]*\) threads, *\([0-9]*\) B smem, \([0-9]*\) B spills\(.*\)$|\| layer \1 \| \2 \| \3 x \4 \| \5 B \| \6 B \|\7 \||p' |
    sed 's/| \[\(.*\)\] |$/| \1 |/'
else
  echo
  echo "(no ptxas: the registers table needs the CUDA toolkit's ptxas)"
fi
