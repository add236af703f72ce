#!/usr/bin/env bash
# The GPU check of issues 7 and 8 (docs/gpu.md), in two halves:
#
#   scripts/gpu-check.sh --prepare DIR [--build BUILD] [--tiny-only]
#       On a CPU build machine (LLVM, the CUDA toolkit): copies the
#       runtime-only tools and libraries into DIR, compiles the GPU models
#       (tiny GPT-2 and Llama at tp = 1, 2, 4 in f32, tiny Llama in bf16 at
#       tp = 1, 2; a Llama-2-7B decoder layer in bf16 at tp = 1, 2, 4, 8
#       with its GPU cost reports; one GEMM per GEMM shape of that layer at
#       tp = 1 and 8, and a bf16 8192^3 GEMM) and the CPU reference outputs
#       of the tiny models, and writes DIR/MANIFEST. --tiny-only: tiny GPT-2
#       at tp = 1, 2 only (the CI test). No LLVM is needed where DIR goes.
#
#   DIR/gpu-check.sh --run DIR [--out OUTDIR] [--dry-run]
#       On the GPU machine (no LLVM, no package access): finds the driver,
#       cuBLAS and NCCL, then runs each stage under its own timeout (the
#       whole under GPU_CHECK_BUDGET, 450 s) and writes results.txt, the
#       stage logs (out/) and performance.md to OUTDIR (default DIR): the
#       conformance suite, the tiny models against the CPU references, the
#       7B layer at tp = 1 and at tp = 2, 4, 8 as cuda-shared ranks, and,
#       when PyTorch is there, the same layer in PyTorch (eager and
#       scaled_dot_product_attention) and the layer's GEMM shapes through
#       torch.matmul (cuBLAS) beside ours; collective time per call.
#       --dry-run: list the stages and their timeouts, run nothing. Exit
#       status: 0 when every stage passed, 1 when one failed, 3 when there
#       is no GPU (every GPU stage then reports "no GPU").
set -uo pipefail

usage() {
  sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

# --ranks N CMD... (internal): N ranks of CMD sharing the GPU, under mpirun
# when it is there, else with torchrun-style variables set here.
if [ "${1:-}" = "--ranks" ]; then
  n=$2; shift 2
  if command -v mpirun >/dev/null; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      exec mpirun --oversubscribe --mca btl self,vader --mca pml ob1 \
        --mca mca_base_component_show_load_errors 0 -np "$n" "$@"
  fi
  pids=() rc=0 port=$((20000 + RANDOM % 20000))
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TPRT_SHARED_GPU=1 "$@" &
    pids+=($!)
  done
  trap 'kill "${pids[@]}" 2>/dev/null' TERM INT
  for p in "${pids[@]}"; do wait "$p" || { [ $rc = 0 ] && rc=$?; }; done
  exit $rc
fi

mode="" dir="" build="" tiny_only=0 outdir="" dry_run=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare|--run) mode=${1#--}; dir=${2:-}; shift 2 || usage ;;
    --build) build=${2:-}; shift 2 || usage ;;
    --tiny-only) tiny_only=1; shift ;;
    --out) outdir=${2:-}; shift 2 || usage ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$mode" ] && [ -n "$dir" ] || usage

# The bundle limit: what one device run may carry (docs/gpu.md).
limit_mib=60

# set_runpath FILE PATH: replaces FILE's run path (the build folder) with
# PATH (patchelf, installed by scripts/setup.sh), so the bundle finds its own
# lib/ wherever it is unpacked.
set_runpath() {
  command -v patchelf >/dev/null ||
    { echo "gpu-check: patchelf is missing (scripts/setup.sh installs it)" >&2; return 1; }
  patchelf --set-rpath "$2" "$1" ||
    { echo "gpu-check: cannot set the run path of $1" >&2; return 1; }
}

prepare() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build=${build:-${TP_BUILD_DIR:-$root/build}}
  build=$(cd "$build" && pwd) || { echo "gpu-check: no build folder" >&2; exit 1; }
  local bin=$build/bin lib=$build/lib
  for f in "$bin/tp-run" "$bin/tp-runner" "$bin/tprt-conformance" \
           "$lib/libtprt.so" "$lib/libtprt_cuda.so"; do
    [ -e "$f" ] || { echo "gpu-check: $f is missing (build with the CUDA toolkit and NCCL: TP_ENABLE_CUDA)" >&2; exit 1; }
  done
  rm -rf "$dir" && mkdir -p "$dir"/{bin,lib,deps,models,ref,bench,work} || exit 1
  dir=$(cd "$dir" && pwd)

  # Runtime only: the runner, the conformance suite, the collective bench
  # and the libraries (the real files; symlinks rebuilt).
  cp "$bin/tp-runner" "$bin/tprt-conformance" "$dir/bin/"
  [ -x "$bin/tprt-bench" ] && cp "$bin/tprt-bench" "$dir/bin/"
  local real
  for name in libtprt.so libtprt_cuda.so; do
    real=$(readlink -f "$lib/$name")
    cp "$real" "$dir/lib/"
    local soname
    soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    for link in "$name" "$soname"; do
      [ -n "$link" ] && [ "$link" != "$(basename "$real")" ] &&
        ln -sf "$(basename "$real")" "$dir/lib/$link"
    done
  done
  # The tools find the bundle's lib/ by $ORIGIN/../lib (set_runpath).
  local tool
  for tool in "$dir"/bin/*; do
    set_runpath "$tool" '$ORIGIN/../lib' || exit 1
  done
  # Nothing may need LLVM or MLIR.
  for f in "$dir"/bin/* "$dir"/lib/*.so; do
    if LD_LIBRARY_PATH="$dir/lib" ldd "$f" 2>/dev/null | grep -Ei 'libLLVM|libMLIR|mlir_' >/dev/null; then
      echo "gpu-check: $f depends on LLVM/MLIR:" >&2
      ldd "$f" | grep -Ei 'libLLVM|libMLIR|mlir_' >&2
      exit 1
    fi
  done
  # Open MPI's launcher, for the multi-rank cuda-shared stages on a GPU
  # machine without MPI: orterun, its plugins and help texts in Debian's
  # layout under mpi/ (relocated with OPAL_PREFIX by --run). Plugins that
  # need a network fabric library (UCX, OFI, PSM, verbs) stay behind:
  # shared memory is all one machine needs.
  local ompi_plugins=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
  local orterun
  orterun=$(readlink -f "$(command -v mpirun 2>/dev/null)" 2>/dev/null)
  if [ -x "$orterun" ] && [ -d "$ompi_plugins" ]; then
    local rel=lib/x86_64-linux-gnu/openmpi/lib/openmpi3 plugin
    mkdir -p "$dir/mpi/bin" "$dir/mpi/$rel" "$dir/mpi/share"
    cp "$orterun" "$dir/mpi/bin/orterun"
    [ -x /usr/bin/orted ] && cp /usr/bin/orted "$dir/mpi/bin/"
    ln -s orterun "$dir/mpi/bin/mpirun"
    [ -d /usr/share/openmpi ] && cp -r /usr/share/openmpi "$dir/mpi/share/"
    for plugin in "$ompi_plugins"/*.so; do
      case $(ldd "$plugin" 2>/dev/null) in
        *libuc[mpst]*|*libfabric*|*libpsm*|*libibverbs*|*librdmacm*|*libinfinipath*|*libefa*|*libnl-*) ;;
        *) cp "$plugin" "$dir/mpi/$rel/" ;;
      esac
    done
    # orterun's libraries and the plugins' helpers (libmca_common_*) join
    # deps/ with the other dependencies below.
    for f in "$dir/mpi/bin/orterun" "$dir/mpi/bin/orted" "$dir/mpi/$rel"/*.so; do
      [ -f "$f" ] || continue
      ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
    done | sort -u | while read -r base dep; do
      case $base in
        libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
      esac
      [ -e "$dir/deps/$base" ] || cp -L "$dep" "$dir/deps/$base"
    done
  fi

  # Their dependencies that a GPU machine may lack (Open MPI and OpenBLAS
  # of libtprt, ...), in deps/: everything ldd resolves outside the C/C++
  # runtime and the CUDA libraries, which the target has in its own
  # versions. --run uses only those the machine does not have (by soname).
  # Files over 4 MiB travel gzipped and --run unpacks them.
  local dep base
  for f in "$dir"/bin/* "$dir"/lib/*.so; do
    LD_LIBRARY_PATH="$dir/lib" ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r base dep; do
    case $base in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
      libcuda.so*|libcudart.so*|libcublas*|libnccl.so*|libnvidia*|libnvJitLink*) continue ;;
      libtprt*) continue ;;
    esac
    [ -e "$dir/deps/$base" ] || [ -e "$dir/deps/$base.gz" ] || cp -L "$dep" "$dir/deps/$base"
  done
  for f in "$dir"/deps/*; do
    [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %s "$f")" -gt $((4 * 1048576)) ] && gzip -9 "$f"
  done
  cp "${BASH_SOURCE[0]}" "$dir/gpu-check.sh"
  [ -f "$root/bench/torch_llama_layer.py" ] && cp "$root/bench/torch_llama_layer.py" "$dir/bench/"

  local tprun=$bin/tp-run log=$dir/work/prepare.log
  : > "$log"
  # compile NAME TP BACKEND GEN-ARGS...: a GPU model into models/NAME/tpN.
  compile_gpu() {
    local name=$1 tp=$2 backend=$3; shift 3
    local work=$dir/work/$name
    echo "gpu-check: compiling $name tp=$tp for $backend" | tee -a "$log"
    "$tprun" "$@" --backend "$backend" --tp "$tp" --compile-only \
      --work-dir "$work" >>"$log" 2>&1 || {
      echo "gpu-check: compiling $name tp=$tp failed:" >&2; tail -20 "$log" >&2; exit 1; }
    mkdir -p "$dir/models/$name/tp$tp"
    cp "$work/tp$tp/model.json" "$work/tp$tp/model.so" "$dir/models/$name/tp$tp/"
    set_runpath "$dir/models/$name/tp$tp/model.so" '$ORIGIN/../../../lib' || exit 1
  }
  # reference NAME GEN-ARGS...: the CPU tp=1 outputs, ref/NAME.bin.
  reference() {
    local name=$1; shift
    local work=$dir/work/$name-cpu
    echo "gpu-check: CPU reference of $name" | tee -a "$log"
    "$tprun" "$@" --backend cpu --tp 1 --work-dir "$work" >>"$log" 2>&1 || {
      echo "gpu-check: the CPU reference of $name failed:" >&2; tail -20 "$log" >&2; exit 1; }
    cp "$work/tp1/outputs.bin" "$dir/ref/$name.bin"
  }

  # gemm_model BATCH M N K: a bf16 [BATCH x] M x K times K x N product.
  gemm_model() {
    local b=$1 m=$2 n=$3 k=$4 lead="" map=linalg.matmul
    local init='{kind = "normal", seed = 5 : i64, std = 0.02 : f64}'
    [ "$b" != 1 ] && { lead="${b}x"; map=linalg.batch_matmul; }
    local ta="tensor<${lead}${m}x${k}xbf16>" tb="tensor<${lead}${k}x${n}xbf16>" tc="tensor<${lead}${m}x${n}xbf16>"
    cat <<EOF
func.func @gemm(%a: $ta, %b: $tb {tp.param, tp.init = $init}) -> $tc {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : $tc
  %c = linalg.fill ins(%zero : bf16) outs(%e : $tc) -> $tc
  %r = $map ins(%a, %b : $ta, $tb) outs(%c : $tc) -> $tc
  return %r : $tc
}
EOF
  }

  local gpt2=(--preset tiny --gen=--model=gpt2 --gen=--with-embedding)
  local llama=(--preset tiny --gen=--model=llama --gen=--with-embedding)
  local models=()
  if [ "$tiny_only" = 1 ]; then
    models=("gpt2-f32 1 2")
  else
    models=("gpt2-f32 1 2 4" "llama-f32 1 2 4" "llama-bf16 1 2")
  fi
  for entry in "${models[@]}"; do
    set -- $entry
    local name=$1; shift
    local args
    case $name in
      gpt2-f32) args=("${gpt2[@]}") ;;
      llama-f32) args=("${llama[@]}") ;;
      llama-bf16) args=("${llama[@]}" --gen=--dtype=bf16) ;;
    esac
    for tp in "$@"; do
      compile_gpu "$name" "$tp" cuda "${args[@]}"
    done
    reference "$name" "${args[@]}"
  done

  if [ "$tiny_only" = 0 ]; then
    # Issue 8: one Llama-2-7B decoder layer, bf16, batch 1 x 4096 tokens.
    local layer=(--preset llama2-7b --gen=--layers=1 --gen=--blocks-only
                 --gen=--seq=4096 --gen=--batch=1 --gen=--dtype=bf16)
    local tp
    for tp in 1 2 4 8; do
      compile_gpu llama7b-layer "$tp" cuda "${layer[@]}"
    done
    # The layer's GPU cost reports at tp = 1 and 8 (tp-lower-gpu's
    # cost-report: kernels, GEMM flops, bytes moved, docs/passes/lower-gpu.md)
    # and the GEMM shapes they list, each compiled as a one-GEMM model to
    # time against torch.matmul on the same shapes.
    local gen=() a
    for a in "${layer[@]:2}"; do gen+=("${a#--gen=}"); done
    "$bin/tp-gen" --preset llama2-7b "${gen[@]}" -o "$dir/work/layer.mlir" >>"$log" 2>&1 ||
      { echo "gpu-check: tp-gen of the 7B layer failed" >&2; exit 1; }
    for tp in 1 8; do
      echo "gpu-check: cost report of llama7b-layer tp=$tp" | tee -a "$log"
      "$bin/tp-opt" "$dir/work/layer.mlir" --tp-shard="tp=$tp" 2>>"$log" |
        "$bin/tp-opt" --tp-lower-gpu="chip=sm_90 format=isa stop-after=kernels cost-report=$dir/bench/cost-tp$tp.json" \
          -o /dev/null 2>>"$log" ||
        { echo "gpu-check: the cost report of tp=$tp failed:" >&2; tail -5 "$log" >&2; exit 1; }
    done
    python3 - "$dir/bench/cost-tp1.json" "$dir/bench/cost-tp8.json" > "$dir/bench/gemm-shapes.txt" <<'EOF' ||
import json, sys
seen = []
for path in sys.argv[1:]:
    for f in json.load(open(path))["functions"]:
        for e in f["launches"]:
            if e["kind"] == "gemm":
                # A shared-A call's batch is its number of products, each
                # of the per-product shape: time that shape.
                shared = e["name"].startswith("tprt_mlir_gemm_shared_a")
                shape = (1 if shared else e["batch"], e["m"], e["n"], e["k"])
                if shape not in seen:
                    seen.append(shape)
for shape in seen:
    print("%d %d %d %d" % shape)
EOF
      { echo "gpu-check: cannot read the GEMM shapes of the cost reports" >&2; exit 1; }
    local b m n k
    while read -r b m n k; do
      gemm_model "$b" "$m" "$n" "$k" > "$dir/work/gemm-${b}x${m}x${n}x${k}.mlir"
      compile_gpu "gemm-${b}x${m}x${n}x${k}" 1 cuda "$dir/work/gemm-${b}x${m}x${n}x${k}.mlir"
    done < "$dir/bench/gemm-shapes.txt"
    # The GEMM rate through the runtime: one bf16 8192^3 matmul.
    cat > "$dir/work/gemm.mlir" <<'EOF'
func.func @gemm(%a: tensor<8192x8192xbf16>,
                %b: tensor<8192x8192xbf16> {tp.param, tp.init = {kind = "normal", seed = 5 : i64, std = 0.02 : f64}})
    -> tensor<8192x8192xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.fill ins(%zero : bf16) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%c : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
EOF
    compile_gpu gemm-bf16 1 cuda "$dir/work/gemm.mlir"
  fi

  rm -rf "$dir/work"
  # The manifest: every file with its size and SHA-256, then the totals.
  (cd "$dir" && {
    echo "# tp-opt GPU bundle: scripts/gpu-check.sh --run DIR (docs/gpu.md)"
    echo "# prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) from $build"
    echo "# models: $(cd models && ls | tr '\n' ' ')"
    find . -type f ! -name MANIFEST | LC_ALL=C sort | while read -r f; do
      printf '%s %s %s\n' "$(sha256sum "$f" | cut -c1-16)" "$(stat -c %s "$f")" "${f#./}"
    done
  } > MANIFEST)
  local bytes
  bytes=$(du -sb "$dir" | cut -f1)
  echo "bundle: $dir, $(find "$dir" -type f | wc -l) files, $bytes bytes ($(( (bytes + 1048575) / 1048576 )) MiB of at most $limit_mib)" | tee -a "$dir/MANIFEST"
  if [ "$bytes" -gt $((limit_mib * 1048576)) ]; then
    echo "gpu-check: the bundle is over $limit_mib MiB" >&2
    exit 1
  fi
}

#---------------------------------------------------------------------------
# --run
#---------------------------------------------------------------------------

run() {
  [ -d "$dir" ] || { echo "gpu-check: no folder $dir" >&2; exit 1; }
  dir=$(cd "$dir" && pwd)
  [ -f "$dir/MANIFEST" ] || { echo "gpu-check: $dir has no MANIFEST (make it with --prepare)" >&2; exit 1; }
  # Unpack what --prepare gzipped.
  local gz
  for gz in "$dir"/deps/*.gz; do
    [ -f "$gz" ] && { gunzip -c "$gz" > "${gz%.gz}" || { echo "gpu-check: cannot unpack $gz" >&2; exit 1; }; }
  done
  # --out: where results.txt and the stage logs (out/) go (default DIR).
  outdir=${outdir:-$dir}
  mkdir -p "$outdir" || exit 1
  local results=$outdir/results.txt out=$outdir/out
  rm -rf "$out" && mkdir -p "$out" || exit 1
  : > "$results"
  local start=$SECONDS budget=${GPU_CHECK_BUDGET:-450} failed=0 passed=0 gpu=1
  local planned=0 planned_stages=0
  say() { echo "$*" | tee -a "$results"; }
  # stage NAME STATUS DETAIL (a dry run prints only what timed planned)
  stage() {
    [ "$dry_run" = 1 ] && return 0
    say "stage $1: $2${3:+ ($3)}"
    case $2 in PASS) passed=$((passed + 1)) ;; FAIL) failed=$((failed + 1)) ;; esac
  }
  left() { echo $((budget - (SECONDS - start))); }
  # why LOG: the line of LOG that says what failed (not mpirun's banner).
  why() {
    local line
    line=$(grep -m1 -E 'tp-runner:|tprt|rror|failed|FAIL' "$1" 2>/dev/null)
    echo "${line:-$(grep -v -e '^$' -e '^---' "$1" 2>/dev/null | tail -1)}"
  }

  say "# gpu-check --run $dir, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  # Libraries: the bundle's, then the driver from ldconfig, then cuBLAS and
  # NCCL from the system or PyTorch's nvidia/* packages.
  # No mpirun here: the bundle's Open MPI (OPAL_PREFIX relocates it).
  # (GPU_CHECK_BUNDLED_MPI=1 prefers it anyway, for tests.)
  local bundled_mpi=0
  if { ! command -v mpirun >/dev/null || [ "${GPU_CHECK_BUNDLED_MPI:-0}" = 1 ]; } &&
     [ -x "$dir/mpi/bin/orterun" ]; then
    bundled_mpi=1
  fi
  # The bundled dependencies this machine lacks (by soname), in deps-used/;
  # with the bundle's Open MPI, its own libraries too (plugins and
  # libraries must be one build).
  local cache used=$dir/deps-used dep base missing=""
  cache=$(ldconfig -p 2>/dev/null)
  rm -rf "$used" && mkdir -p "$used"
  for dep in "$dir"/deps/*; do
    base=$(basename "$dep")
    case $base in *.gz) continue ;; esac
    case $bundled_mpi:$base in
      1:libmpi.so*|1:libopen-*|1:libmca_common*|1:libpmix*|1:liboshmem*) ;;
      *) [[ $cache == *$'\t'"$base "* ]] && continue ;;
    esac
    ln -s "$dep" "$used/$base"
    missing="$missing $base"
  done
  local paths=$dir/lib:$used
  local found
  for want in libcuda.so.1 libcublas.so libcublasLt.so libnccl.so.2; do
    found=$(ldconfig -p 2>/dev/null | awk -v w="$want" '$1 ~ "^"w {print $NF; exit}')
    [ -n "$found" ] && paths=$paths:$(dirname "$found")
  done
  if command -v python3 >/dev/null; then
    local site
    site=$(python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for root in roots:
    for lib in sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib"))):
        print(lib)
EOF
)
    for p in $site; do paths=$paths:$p; done
  fi
  # Python (the comparison, PyTorch) keeps the machine's own libraries.
  orig_ld=${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH=$paths${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "library path: $LD_LIBRARY_PATH"
  say "bundled libraries used:${missing:- none (the machine has them all)}"
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    nvidia-smi 2>&1 | tee -a "$results"
  else
    gpu=0
    say "no GPU: nvidia-smi is missing or lists no GPU"
  fi
  local drivers
  drivers=$(find ${LD_LIBRARY_PATH//:/ } -maxdepth 1 -name 'libcuda.so.1' 2>/dev/null)
  if [[ $cache != *libcuda.so.1* ]] && [ -z "$drivers" ]; then
    gpu=0
    say "no GPU: no NVIDIA driver (libcuda.so.1 not found)"
  fi
  # For tests: run the GPU stages anyway (they fail with the runtime's
  # message).
  if [ "$dry_run" = 1 ]; then
    gpu=1
    say "dry run: the stages a GPU machine would run, none run"
  fi
  if [ "${GPU_CHECK_ASSUME_GPU:-0}" = 1 ] && [ "$gpu" = 0 ]; then
    gpu=1
    say "GPU_CHECK_ASSUME_GPU=1: running the GPU stages anyway"
  fi

  local runner=$dir/bin/tp-runner
  if [ "$bundled_mpi" = 1 ]; then
    export OPAL_PREFIX=$dir/mpi PATH=$dir/mpi/bin:$PATH
    say "mpirun: the bundle's ($dir/mpi)"
  else
    say "mpirun: $(command -v mpirun || echo none)"
  fi
  # timed SECONDS LOG CMD...: runs CMD with its output in LOG.
  timed() {
    local seconds=$1 log=$2; shift 2
    if [ "$dry_run" = 1 ]; then
      local cmd="$*"
      say "plan: $(basename "$log" .log): at most $seconds s: ${cmd//$dir\//}"
      planned=$((planned + seconds)) planned_stages=$((planned_stages + 1))
      : > "$log"
      return 0
    fi
    local budget_left
    budget_left=$(left)
    [ "$budget_left" -lt "$seconds" ] && seconds=$budget_left
    [ "$seconds" -lt 5 ] && { echo "out of time" > "$log"; return 124; }
    timeout -k 5 "$seconds" "$@" > "$log" 2>&1
  }
  # gpu_stage NAME: false (and a "no GPU" line) without a GPU.
  gpu_stage() {
    [ "$gpu" = 1 ] && return 0
    stage "$1" SKIP "no GPU"
    return 1
  }

  # 0. The bundle loads here (its libraries and their dependencies): the
  # conformance suite on the CPU backend, GPU or not.
  if timed 60 "$out/conf-single.log" "$dir/bin/tprt-conformance" single; then
    stage bundle-load PASS "$(tail -1 "$out/conf-single.log")"
  else
    stage bundle-load FAIL "$(why "$out/conf-single.log")"
  fi

  # The launcher of the multi-rank stages: the suite on 2 mpi ranks.
  if timed 60 "$out/conf-mpi-2.log" "$self" --ranks 2 "$dir/bin/tprt-conformance" mpi; then
    stage bundle-mpi PASS "$(grep checks "$out/conf-mpi-2.log" | tail -1)"
  else
    stage bundle-mpi FAIL "$(why "$out/conf-mpi-2.log")"
  fi

  # 1. The conformance suite: nccl on one rank, cuda-shared on 2 and 4.
  if gpu_stage conformance-nccl-np1; then
    if timed 60 "$out/conf-nccl-1.log" "$dir/bin/tprt-conformance" nccl; then
      stage conformance-nccl-np1 PASS "$(tail -1 "$out/conf-nccl-1.log")"
    else
      stage conformance-nccl-np1 FAIL "$(why "$out/conf-nccl-1.log")"
    fi
  fi
  for n in 2 4; do
    if gpu_stage "conformance-cuda-shared-np$n"; then
      if timed 90 "$out/conf-shared-$n.log" "$self" --ranks "$n" "$dir/bin/tprt-conformance" cuda-shared; then
        stage "conformance-cuda-shared-np$n" PASS "$(grep 'checks' "$out/conf-shared-$n.log" | tail -1)"
      else
        stage "conformance-cuda-shared-np$n" FAIL "$(why "$out/conf-shared-$n.log")"
      fi
    fi
  done

  # 2. The tiny models against the CPU references.
  local model tpdir tp name tol
  for model in "$dir"/models/*; do
    name=$(basename "$model")
    case $name in gpt2-*|llama-f32|llama-bf16) ;; *) continue ;; esac
    case $name in *bf16) tol=2e-2 ;; *) tol=1e-5 ;; esac
    for tpdir in "$model"/tp*; do
      tp=${tpdir##*/tp}
      local label="$name-tp$tp" log=$out/$name-tp$tp.log bin=$out/$name-tp$tp.bin
      gpu_stage "$label" || continue
      if [ "$tp" = 1 ]; then
        timed 60 "$log" "$runner" "$tpdir" --backend nccl --output "$bin"
      else
        timed 90 "$log" "$self" --ranks "$tp" "$runner" "$tpdir" --backend cuda-shared --output "$bin"
      fi
      local rc=$?
      if [ $rc -ne 0 ]; then
        stage "$label" FAIL "exit $rc: $(why "$log")"
        continue
      fi
      local verdict
      verdict=$(compare "$bin" "$dir/ref/$name.bin" "$tol" 2>&1)
      case $verdict in ok*) stage "$label" PASS "$verdict; $(grep '^time per step' "$log")" ;;
                       *) stage "$label" FAIL "$verdict" ;; esac
    done
  done

  # 3. Performance (issue 8): times, never pass/fail on speed.
  if [ -d "$dir/models/llama7b-layer" ]; then
    if gpu_stage llama7b-layer-tp1; then
      local log=$out/llama7b-tp1.log
      if timed 120 "$log" "$runner" "$dir/models/llama7b-layer/tp1" --backend nccl --warmup 2 --steps 5; then
        stage llama7b-layer-tp1 PASS "$(grep -E '^time per step|^throughput' "$log" | tr '\n' ' ')"
      else
        stage llama7b-layer-tp1 FAIL "$(why "$log")"
      fi
    fi
    # The tp=N programs' ranks share the one GPU (cuda-shared, serialised
    # by the driver's time slicing): per-rank compute is estimated as
    # (time per step - communication per step) / N (docs/gpu.md).
    local n
    for n in 8 2 4; do
      [ -d "$dir/models/llama7b-layer/tp$n" ] || continue
      gpu_stage "llama7b-layer-tp$n-shared" || continue
      local log=$out/llama7b-tp$n.log
      if timed 120 "$log" "$self" --ranks "$n" "$runner" "$dir/models/llama7b-layer/tp$n" --backend cuda-shared --warmup 1 --steps 3; then
        stage "llama7b-layer-tp$n-shared" PASS "$(grep -E '^time per step|^communication' "$log" | tr '\n' ' ')"
      else
        stage "llama7b-layer-tp$n-shared" FAIL "$(why "$log")"
      fi
      # Per-rank compute of tp=N against 1/N of tp=1 (issue 8's efficiency).
      local t1 tn cn
      t1=$(awk '/^time per step/ {print $4}' "$out/llama7b-tp1.log" 2>/dev/null)
      tn=$(awk '/^time per step/ {print $4}' "$log" 2>/dev/null)
      cn=$(awk '/^communication:/ {print $2}' "$log" 2>/dev/null)
      if [ -n "$t1" ] && [ -n "$tn" ] && [ -n "$cn" ]; then
        say "$(awk -v t1="$t1" -v tn="$tn" -v cn="$cn" -v n="$n" 'BEGIN {
          e = (tn - cn) / n
          printf "llama7b-layer: tp=1 %.6g s; tp=%d on one GPU %.6g s per step, %.6g s communication; per-rank compute estimate %.6g s; efficiency (tp1/%d) / estimate %.1f%%", t1, n, tn, cn, e, n, e > 0 ? 100 * t1 / n / e : 0 }')"
      fi
    done
  fi
  # The GEMM shapes of the layer (bench/gemm-shapes.txt, from the cost
  # reports) through the runtime, one GEMM model each.
  if [ -f "$dir/bench/gemm-shapes.txt" ]; then
    local b m n k
    while read -r b m n k; do
      local label="gemm-${b}x${m}x${n}x${k}"
      [ -d "$dir/models/$label" ] || continue
      gpu_stage "$label" || continue
      local log=$out/$label.log
      if timed 30 "$log" "$runner" "$dir/models/$label/tp1" --backend nccl --warmup 3 --steps 20; then
        local t
        t=$(awk '/^time per step/ {print $4}' "$log")
        stage "$label" PASS "$t s per GEMM, $(awk -v t="$t" -v f="$((2 * b * m * n * k))" 'BEGIN {if (t > 0) printf "%.1f", f / t / 1e12}') TFLOP/s"
      else
        stage "$label" FAIL "$(why "$log")"
      fi
    done < "$dir/bench/gemm-shapes.txt"
  fi
  if [ -d "$dir/models/gemm-bf16" ] && gpu_stage gemm-bf16; then
    local log=$out/gemm.log
    if timed 60 "$log" "$runner" "$dir/models/gemm-bf16/tp1" --backend nccl --warmup 3 --steps 20; then
      local t
      t=$(awk '/^time per step/ {print $4}' "$log")
      stage gemm-bf16 PASS "8192^3 bf16: $t s per GEMM, $(awk -v t="$t" 'BEGIN {if (t > 0) printf "%.1f", 2 * 8192^3 / t / 1e12}') TFLOP/s"
    else
      stage gemm-bf16 FAIL "$(why "$log")"
    fi
  fi
  if [ -f "$dir/bench/torch_llama_layer.py" ]; then
    if ! command -v python3 >/dev/null || ! python3 -c "import torch" >/dev/null 2>&1; then
      stage torch-llama-layer SKIP "no PyTorch"
    elif gpu_stage torch-llama-layer; then
      local log=$out/torch.log
      if timed 150 "$log" env LD_LIBRARY_PATH="$orig_ld" python3 "$dir/bench/torch_llama_layer.py"; then
        stage torch-llama-layer PASS "$(grep -E '^(eager|sdpa|gemm)' "$log" | tr '\n' ' ')"
      else
        stage torch-llama-layer FAIL "$(why "$log")"
      fi
    fi
  fi

  if [ -f "$dir/bench/gemm-shapes.txt" ]; then
    if ! command -v python3 >/dev/null || { [ "$dry_run" = 0 ] && ! python3 -c "import torch" >/dev/null 2>&1; }; then
      stage torch-gemm-shapes SKIP "no PyTorch"
    elif gpu_stage torch-gemm-shapes; then
      local log=$out/torch-gemm.log
      printf '%s\n' "$torch_gemm" > "$out/torch_gemm.py"
      if timed 60 "$log" env LD_LIBRARY_PATH="$orig_ld" python3 "$out/torch_gemm.py" "$dir/bench/gemm-shapes.txt"; then
        stage torch-gemm-shapes PASS "$(grep -c '^shape' "$log") shapes"
      else
        stage torch-gemm-shapes FAIL "$(why "$log")"
      fi
    fi
  fi
  # Collective time per call: tprt-bench (nccl-tests' algbw and busbw) on
  # cuda-shared ranks for the layer's all-reduce sizes (1 to 32 MiB of
  # bf16), and each layer run's own collectives (in performance.md).
  if [ -x "$dir/bin/tprt-bench" ]; then
    local n
    for n in 2 8; do
      gpu_stage "collectives-cuda-shared-np$n" || continue
      local log=$out/bench-all_reduce-$n.log
      if timed 60 "$log" "$self" --ranks "$n" "$dir/bin/tprt-bench" cuda-shared -c all_reduce -d bf16 -b 1048576 -e 33554432 -f 4 -w 2 -n 10; then
        stage "collectives-cuda-shared-np$n" PASS "$(awk '$1 == 33554432 {printf "32 MiB all_reduce: %s us per call, busbw %s GB/s", $3, $5}' "$log")"
      else
        stage "collectives-cuda-shared-np$n" FAIL "$(why "$log")"
      fi
    done
  fi

  if [ "$dry_run" = 1 ]; then
    say "gpu-check: dry run: $planned_stages stages, at most $planned s of timeouts in all; the run stops at $budget s (GPU_CHECK_BUDGET)"
    exit 0
  fi
  performance "$outdir" "$dir"
  say "gpu-check: $passed passed, $failed failed, $((SECONDS - start)) s"
  [ "$failed" -gt 0 ] && exit 1
  [ "$gpu" = 0 ] && exit 3
  exit 0
}

# torch.matmul (cuBLAS through PyTorch) on each "batch m n k" line of a
# shapes file, bf16, median of CUDA-event timings: "shape B M N K: T s, F
# TFLOP/s" lines.
torch_gemm='
import sys, torch
shapes = [tuple(int(v) for v in line.split()) for line in open(sys.argv[1]) if line.strip()]
print("device: %s, torch %s" % (torch.cuda.get_device_name(0), torch.__version__))
for b, m, n, k in shapes:
    a = torch.randn(*((b,) if b > 1 else ()), m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(*((b,) if b > 1 else ()), k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ w
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); a @ w; e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    t = sorted(times)[len(times) // 2]
    print("shape %d %d %d %d: %.6g s, %.1f TFLOP/s" % (b, m, n, k, t, 2.0 * b * m * n * k / t / 1e12))
'

# performance OUTDIR BUNDLE: OUTDIR/performance.md from results.txt, the
# stage logs and the bundle's cost reports (the page docs/performance.md is
# a copy of). Ratios are of figures measured in the same run.
performance() {
  command -v python3 >/dev/null || { echo "gpu-check: no python3: performance.md not written"; return; }
  LD_LIBRARY_PATH="${orig_ld-}" python3 - "$1" "$2" <<'EOF' | tee -a "$1/results.txt"
import glob, json, os, re, sys
outdir, bundle = sys.argv[1], sys.argv[2]
out = os.path.join(outdir, "out")
def read(path):
    try:
        return open(path).read()
    except OSError:
        return ""
def number(pattern, text):
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None
results = read(os.path.join(outdir, "results.txt"))
lines = ["# Performance on one GPU (scripts/gpu-check.sh --run)", ""]
header = [l for l in results.splitlines() if l.startswith("# gpu-check")]
lines += ["%s." % header[0][2:] if header else "", ""]
if "no GPU" in results and "GPU_CHECK_ASSUME_GPU" not in results:
    lines += ["No GPU was found on this machine: nothing below was measured.", ""]
lines += ["## Stages", "", "| stage | result |", "|---|---|"]
for m in re.finditer(r"^stage (\S+): (\S+)(?: \((.*)\))?$", results, re.M):
    lines.append("| %s | %s%s |" % (m.group(1), m.group(2), (": " + m.group(3).replace("|", "/")) if m.group(3) else ""))
lines += [""]
# The layer: ours at tp = 1 and as cuda-shared ranks, PyTorch eager and SDPA.
torch_log = read(os.path.join(out, "torch.log"))
eager = number(r"^eager: ([0-9.]+) ms", torch_log)
sdpa = number(r"^sdpa: ([0-9.]+) ms", torch_log)
costs = {}
for tp in (1, 8):
    try:
        costs[tp] = json.load(open(os.path.join(bundle, "bench", "cost-tp%d.json" % tp)))["functions"][0]
    except (OSError, ValueError, KeyError, IndexError):
        pass
lines += ["## Llama-2-7B decoder layer, bf16, 1 x 4096 tokens, forward", "",
          "| program | time per step | per-rank compute | time / PyTorch eager | time / PyTorch SDPA | kernels, GEMMs (cost report) | bytes moved per rank (minimum) | achieved bandwidth |",
          "|---|---|---|---|---|---|---|---|"]
t1 = None
for tp in (1, 2, 4, 8):
    log = read(os.path.join(out, "llama7b-tp%d.log" % tp))
    t = number(r"^time per step: ([0-9.eE+-]+) s", log)
    if t is None:
        continue
    comm = number(r"^communication: ([0-9.eE+-]+) s", log) or 0.0
    per_rank = t if tp == 1 else (t - comm) / tp
    if tp == 1:
        t1 = t
    ms = per_rank * 1e3
    cost = costs.get(tp)
    kern = "%d, %d" % (cost["kernel_launches"], cost["gemm_launches"]) if cost else "-"
    moved = "%.0f MiB (%.0f MiB)" % (cost["bytes_moved"] / 2**20, cost["minimum_bytes"] / 2**20) if cost else "-"
    bw = "%.2f TB/s" % (cost["bytes_moved"] / per_rank / 1e12) if cost and per_rank > 0 else "-"
    scale = tp if tp > 1 else 1
    lines.append("| ours, tp=%d%s | %.3f ms | %.3f ms | %s | %s | %s | %s | %s |" % (
        tp, " (cuda-shared ranks)" if tp > 1 else "", t * 1e3, ms,
        "%.2fx" % (ms * scale / eager) if eager else "-",
        "%.2fx" % (ms * scale / sdpa) if sdpa else "-", kern, moved, bw))
if eager:
    lines.append("| PyTorch eager | %.3f ms | | 1x | | | | |" % eager)
if sdpa:
    lines.append("| PyTorch scaled_dot_product_attention | %.3f ms | | | 1x | | | |" % sdpa)
lines += ["", "Per-rank compute of tp=N on one GPU: (time per step - communication) / N; "
          "the ratios divide N x that by PyTorch's one-GPU time (below 1: faster per GPU-second). "
          "Bandwidth: the cost report's bytes moved per rank over the per-rank time.", ""]
# GEMMs: ours (the runtime's cuBLAS call, one-GEMM models) against torch.matmul.
torch_gemm = {}
for m in re.finditer(r"^shape (\d+) (\d+) (\d+) (\d+): ([0-9.eE+-]+) s", read(os.path.join(out, "torch-gemm.log")), re.M):
    torch_gemm[tuple(int(v) for v in m.groups()[:4])] = float(m.group(5))
lines += ["## GEMMs of the layer (bf16)", "", "| batch x M x N x K | ours (runtime, cuBLAS) | torch.matmul (cuBLAS) | torch time / ours |", "|---|---|---|---|"]
for line in read(os.path.join(bundle, "bench", "gemm-shapes.txt")).splitlines():
    b, m, n, k = (int(v) for v in line.split())
    t = number(r"^time per step: ([0-9.eE+-]+) s", read(os.path.join(out, "gemm-%dx%dx%dx%d.log" % (b, m, n, k))))
    tt = torch_gemm.get((b, m, n, k))
    flops = 2.0 * b * m * n * k
    cell = lambda x: "%.3f ms, %.0f TFLOP/s" % (x * 1e3, flops / x / 1e12) if x else "-"
    lines.append("| %d x %d x %d x %d | %s | %s | %s |" % (b, m, n, k, cell(t), cell(tt), "%.2f" % (tt / t) if t and tt else "-"))
lines += ["", "Above 1: ours is faster. Ours is tp-runner's time per step of a one-GEMM model, its per-step overhead included.", ""]
# Collectives: per call, from the layer runs and tprt-bench.
lines += ["## Collectives", "", "| run | collective | calls per step | time per call |", "|---|---|---|---|"]
for tp in (2, 4, 8):
    log = read(os.path.join(out, "llama7b-tp%d.log" % tp))
    for m in re.finditer(r"^  (\w+): ([0-9.]+) \(plan \d+\), ([0-9.]+) bytes, ([0-9.eE+-]+) s$", log, re.M):
        calls = float(m.group(2))
        if calls > 0:
            lines.append("| llama7b-layer tp=%d | %s (%.1f MiB a step) | %g | %.1f us |" % (
                tp, m.group(1), float(m.group(3)) / 2**20, calls, float(m.group(4)) / calls * 1e6))
for n in (2, 8):
    for row in read(os.path.join(out, "bench-all_reduce-%d.log" % n)).splitlines():
        f = row.split()
        if len(f) == 5 and f[0].isdigit():
            lines.append("| tprt-bench cuda-shared, %d ranks | all_reduce bf16 %.0f MiB | | %s us (busbw %s GB/s) |" % (n, int(f[0]) / 2**20, f[2], f[4]))
lines += [""]
open(os.path.join(outdir, "performance.md"), "w").write("\n".join(lines) + "\n")
print("performance: %s" % os.path.join(outdir, "performance.md"))
EOF
}

# compare OUT REF TOL: "ok: ..." or "FAIL: ..." (the records of docs/model-abi.md,
# max abs error over the max |ref| per output).
compare() {
  command -v python3 >/dev/null || { echo "FAIL: no python3 to compare"; return; }
  LD_LIBRARY_PATH="${orig_ld-${LD_LIBRARY_PATH:-}}" python3 - "$@" <<'EOF'
import struct, sys, math
def fail(message):
    print(message)
    sys.exit(0)
def read(path):
    data = open(path, "rb").read()
    at, out = 0, []
    sizes = {0: (4, "f"), 1: (2, "e"), 2: (2, None), 3: (8, "d"), 4: (4, "i"), 5: (8, "q"), 6: (1, "b"), 7: (1, "B")}
    while at < len(data):
        magic, dtype, rank = struct.unpack_from("<III", data, at); at += 12
        if magic != 0x54504F55:
            fail("FAIL: %s is not a tp-runner output file" % path)
        shape = struct.unpack_from("<%dq" % rank, data, at); at += 8 * rank
        n = 1
        for s in shape: n *= s
        size, code = sizes[dtype]
        raw = data[at:at + n * size]; at += n * size
        if dtype == 2:
            values = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
        else:
            values = list(struct.unpack("<%d%s" % (n, code), raw))
        out.append((dtype, tuple(shape), values))
    return out
got, ref, tol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if len(got) != len(ref):
    fail("FAIL: %d outputs, the reference has %d" % (len(got), len(ref)))
worst = 0.0
for i, (g, r) in enumerate(zip(got, ref)):
    if g[1] != r[1]:
        fail("FAIL: output %d has shape %s, the reference %s" % (i, g[1], r[1]))
    err = max((abs(a - b) for a, b in zip(g[2], r[2])), default=0.0)
    scale = max((abs(b) for b in r[2]), default=0.0)
    rel = err / scale if scale > 0 else err
    if not math.isfinite(rel) or rel > tol:
        fail("FAIL: output %d: relative error %.3e > %.0e" % (i, rel, tol))
    worst = max(worst, rel)
print("ok: %d outputs, max relative error %.3e (limit %.0e)" % (len(got), worst, tol))
EOF
}

case $mode in
  prepare) prepare ;;
  run) run ;;
  *) usage ;;
esac
