#!/usr/bin/env bash
# The GPU check (docs/gpu.md, "The GPU check"); the work is in gpu_check.py
# beside this script (in the repository's scripts/ and in every bundle):
#
#   scripts/gpu-check.sh --prepare DIR [--build BUILD] [--tiny-only]
#       On the build machine (LLVM, the CUDA toolkit): the bundle DIR, the
#       GPU models, their CPU references and a runtime-only runner, with
#       nothing that needs LLVM.
#
#   bash DIR/gpu-check.sh --run DIR [--out OUT] [--dry-run] [--only NAMES]
#                         [--timeout NAME=SECONDS]...
#       On the GPU machine (python3; no LLVM, nothing to download): every
#       stage under its timeout, the stages of one rank first; OUT gets
#       results.txt, results.json, performance.md and logs.tar.gz and
#       nothing else. Exit 0 when every stage passed, 1 when one failed or
#       timed out, 3 without a GPU.
#
# `bash DIR/gpu-check.sh` works even where a transfer dropped the
# executable bits; --run restores those of the bundle's programs.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v python3 >/dev/null ||
  { echo "gpu-check: python3 is missing (the GPU check runs on it)" >&2; exit 2; }
exec python3 "$here/gpu_check.py" "$@"
