#!/usr/bin/env bash
# Collective bandwidth of libtprt's mpi backend on this machine, printed as
# nccl-tests prints it: time per call, algbw = size / time and busbw = algbw x
# 2(n-1)/n (all_reduce) or x (n-1)/n (all_gather, reduce_scatter, all_to_all).
# Asserts nothing.
#
#   bench/collectives.sh [BUILD_DIR] [RANKS...]      (default: build, 2 4)
#
# For each rank count: the four collectives on 64 MiB of f32, all_reduce on
# 64 MiB of bf16 (reduced in f32, so twice the bytes on the wire), and the
# latency of small all_reduces with the mismatch check on and off.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${TP_BUILD_DIR:-$root/build}}
shift || true
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(2 4)

bench="$build/bin/tprt-bench"
[ -x "$bench" ] || { echo "collectives: $bench is missing; build first" >&2; exit 1; }
launcher=$(grep -o 'tp_mpiexec = "[^"]*"' "$build/test/lit.site.cfg.py" 2>/dev/null |
           cut -d'"' -f2 || true)
# The launch line of test/runtime/lit.local.cfg (docs/runtime.md).
mpirun=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        "${launcher:-mpirun}" --oversubscribe --mca btl self,vader --mca pml ob1)

echo "# $(nproc) cores; $("${launcher:-mpirun}" --version | head -1)"
for n in "${ranks[@]}"; do
  echo
  echo "## $n ranks"
  "${mpirun[@]}" -np "$n" "$bench" mpi -c all -b 64M -e 64M -w 2 -n 5
  "${mpirun[@]}" -np "$n" "$bench" mpi -c all_reduce -d bf16 -b 64M -e 64M -w 2 -n 5
  "${mpirun[@]}" -np "$n" "$bench" mpi -c all_reduce -b 8 -e 8K -f 32 -w 50 -n 500
  "${mpirun[@]}" -x TPRT_CHECK=0 -np "$n" "$bench" mpi -c all_reduce -b 8 -e 8K -f 32 -w 50 -n 500
done
