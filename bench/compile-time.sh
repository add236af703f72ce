#!/usr/bin/env bash
# Compile time of full-depth models (issue 37): `tp-run --compile-only` at
# tp=8 of tp-gen's Llama-2-7B (32 layers, Hugging Face names, bf16, 4096
# tokens) for the GPU (--backend cuda --chip sm_90, fatbin) and for the
# CPU, and of a Llama-3-70B-shaped model (80 layers, hidden 8192, 64 query
# and 8 key/value heads, ffn 28672, vocabulary 128256, rotary base 500000)
# for the GPU. Per compile: the stages of `tp-run --mlir-timing` (wall
# seconds): the tp-opt passes (sharding, describing, both pipelines' passes
# but the kernels' binary), LLVM (the kernels' NVPTX code generation, the
# translation to LLVM IR, writing model.ll), ptxas (and fatbinary: timed by
# a wrapper in a toolkit folder that links the real one's files, passed as
# tp-lower-gpu's toolkit=), clang (model.ll and the glue to model.so); the
# total wall time and peak RSS of tp-run (/usr/bin/time: the largest of
# tp-run and the programs it ran, clang included), and the functions
# compiled (GPU: kernels in the binary; CPU: functions model.ll defines).
#
# With --baseline DIR, every compile runs with DIR's tools first (a build
# of an earlier commit that has tp-run --mlir-timing), in the same run, so
# that before and after see the same machine load; `uptime` is printed
# before and after. Prints a Markdown table; asserts nothing.
# TP_COMPILE_CASES overrides the cases ("7b-gpu 7b-cpu 70b-gpu").
#
#   bench/compile-time.sh [--baseline BUILD_DIR] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
baseline=""
if [[ "${1:-}" == "--baseline" ]]; then
  baseline=$(cd "$2" && pwd)
  shift 2
fi
build=$(cd "${1:-${TP_BUILD_DIR:-$root/build}}" && pwd)
cases=${TP_COMPILE_CASES:-"7b-gpu 7b-cpu 70b-gpu"}
for b in $baseline $build; do
  for tool in tp-gen tp-run; do
    [ -x "$b/bin/$tool" ] || { echo "compile-time: $b/bin/$tool is missing; build first" >&2; exit 1; }
  done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A CUDA toolkit whose ptxas and fatbinary log their wall seconds.
cuda=${CUDA_HOME:-/usr/local/cuda}
toolkit="$tmp/cuda"
mkdir -p "$toolkit/bin"
for entry in "$cuda"/*; do
  [ "$(basename "$entry")" = bin ] || ln -s "$entry" "$toolkit/"
done
for entry in "$cuda"/bin/*; do
  name=$(basename "$entry")
  case $name in
    ptxas|fatbinary)
      printf '#!/bin/sh\nexec /usr/bin/time -f %%e -a -o "$TP_BENCH_PTXAS_LOG" %s "$@"\n' \
        "$entry" >"$toolkit/bin/$name"
      chmod +x "$toolkit/bin/$name" ;;
    *) ln -s "$entry" "$toolkit/bin/" ;;
  esac
done

gen() { # NAME BUILD -> model file
  local file="$tmp/$1.mlir"
  if [ ! -f "$file" ]; then
    case $1 in
      7b) "$2/bin/tp-gen" --preset llama2-7b --dtype bf16 --hf -o "$file" ;;
      70b) "$2/bin/tp-gen" --preset llama2-70b --vocab 128256 --rope-theta 500000 \
             --dtype bf16 --hf -o "$file" ;;
    esac
  fi
  echo "$file"
}

compile() { # LABEL BUILD CASE -> one result line on stdout
  local label=$1 b=$2 model=${3%-*} target=${3#*-}
  local file work="$tmp/work-$label-$3"
  file=$(gen "$model" "$build")
  local args=("$file" --tp 8 --compile-only --timeout 0 --work-dir "$work"
              --mlir-timing --mlir-timing-display=tree)
  [ "$target" = gpu ] && args+=(--backend cuda --chip sm_90 --gpu-format fatbin
                                --lower-gpu-options "toolkit=$toolkit")
  rm -rf "$work"
  : >"$tmp/ptxas.log"
  TP_BENCH_PTXAS_LOG="$tmp/ptxas.log" /usr/bin/time -f "%e %M" -o "$tmp/time" \
    "$b/bin/tp-run" "${args[@]}" >"$tmp/out" 2>"$tmp/timing" ||
    { echo "compile-time: $label $3 failed:" >&2; tail -5 "$tmp/timing" >&2; exit 1; }
  local functions
  if [ "$target" = gpu ]; then
    functions=$(grep -c '_name = private unnamed_addr constant' "$work/tp8/model.ll" || true)
  else
    functions=$(grep -c '^define' "$work/tp8/model.ll" || true)
  fi
  /usr/bin/python3 - "$label" "$3" "$tmp/timing" "$tmp/time" "$tmp/ptxas.log" "$functions" <<'PY'
import re, sys
label, case, timing, timed, ptxas_log, functions = sys.argv[1:]
wall = {}
for line in open(timing):
    m = re.match(r"\s*[0-9.]+ \(\s*[0-9.]+%\)\s+([0-9.]+) \(\s*[0-9.]+%\)\s+(\S.*)$", line)
    if m:
        name = m.group(2).strip()
        wall[name] = wall.get(name, 0.0) + float(m.group(1))
def get(name):
    return next((v for k, v in wall.items() if k.startswith(name)), 0.0)
binary = get("GpuModuleToBinaryPass")
ptxas = sum(float(l) for l in open(ptxas_log) if l.strip())
passes = get("shard (") + get("describe (") + get("lower (") - binary
llvm = (binary - ptxas) + get("translate to LLVM IR") + get("write model.ll")
clang = get("clang (model.so)")
total, rss = open(timed).read().split()[-2:]
print("%s %s %.1f %.1f %.1f %.1f %.1f %.0f %s" % (
    label, case, passes, llvm, ptxas, clang, float(total), int(rss) / 1024, functions))
PY
}

commit() { # BUILD -> the commit its sources are at, "+" when they differ from it
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null)
  [ -n "$src" ] && git -C "$src" rev-parse --short HEAD 2>/dev/null | tr -d '\n' || echo -n unknown
  [ -n "$src" ] && [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo -n "+"
  echo
}
[ -n "$baseline" ] && echo "before: commit $(commit "$baseline")"
echo "after: commit $(commit "$build")"
echo "machine load before: $(uptime)"
results="$tmp/results"
: >"$results"
for c in $cases; do
  [ -n "$baseline" ] && compile before "$baseline" "$c" >>"$results"
  compile after "$build" "$c" >>"$results"
done
echo "machine load after: $(uptime)"
echo
/usr/bin/python3 - "$results" "$(nproc)" <<'PY'
import sys
names = {"7b-gpu": "Llama-2-7B, GPU (sm_90, fatbin)", "7b-cpu": "Llama-2-7B, CPU",
         "70b-gpu": "Llama-3-70B shape, GPU (sm_90, fatbin)"}
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print("| model, tp=8 | build | tp-opt passes (s) | LLVM (s) | ptxas (s) | clang (s) "
      "| total wall (s) | peak RSS (MB) | functions compiled | largest stage |")
print("|---|---|---|---|---|---|---|---|---|---|")
for label, case, passes, llvm, ptxas, clang, total, rss, functions in rows:
    gpu = case.endswith("gpu")
    stages = {"tp-opt passes": float(passes), "LLVM": float(llvm),
              "ptxas": float(ptxas), "clang": float(clang)}
    largest = max(stages, key=stages.get)
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%.0f%%) |" % (
        names.get(case, case), label, passes, llvm, ptxas if gpu else "-", clang,
        total, rss, functions, largest, 100 * stages[largest] / float(total)))
PY
