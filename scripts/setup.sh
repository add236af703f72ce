#!/usr/bin/env bash
# Installs every dependency of tp-opt from Debian's packages (apt-get only).
# Idempotent: when everything is present it prints one line and changes nothing.
# CUDA 13, cuBLAS and NCCL are not installed here: CMake finds them in
# /usr/local/cuda where a machine has them and skips the GPU parts otherwise.
set -euo pipefail

PACKAGES=(
  # LLVM / MLIR 22 (bookworm-security carries 22.1.x)
  llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 lld-22 libclang-rt-22-dev
  # build tools
  cmake ninja-build ccache
  # run paths of the GPU bundle (scripts/gpu-check.sh)
  patchelf
  # the GPU emulator and utils/ptxas-check.py read the zstd-compressed PTX
  # of fatbinaries
  libzstd-dev zstd
  # runtime backends and solvers
  libopenmpi-dev openmpi-bin coinor-libcbc-dev libopenblas-dev
  # tests
  libgtest-dev python3-numpy python3-matplotlib
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
