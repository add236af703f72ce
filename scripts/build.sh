#!/usr/bin/env bash
# Configures and builds tp-opt into ${TP_BUILD_DIR:-build} (Ninja, Release,
# ccache when present). Used by test.sh and demo.sh; safe to rerun.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TP_BUILD_DIR:-$root/build}

if [ ! -f "$build/build.ninja" ]; then
  compilers=()
  if command -v clang++-22 >/dev/null && command -v clang-22 >/dev/null; then
    compilers=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)
  fi
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    "${compilers[@]}" ${TP_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 || {
    cat "$build.configure.log"; echo "build: cmake configure failed" >&2; exit 1; }
  grep "^-- tp-opt:" "$build.configure.log" || true
fi
cmake --build "$build" -- ${TP_NINJA_ARGS:-}
