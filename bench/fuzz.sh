#!/usr/bin/env bash
# Fuzz the compiler for SECONDS (default 600), split between:
#
#  1. tp-fuzz, the libFuzzer target (ASan + UBSan): fuzzed modules and
#     pipeline options through --tp-shard. Seeded with every .mlir of the lit
#     suite, tp-gen models and random programs, each behind a 4-byte option
#     prefix.
#  2. bench/fuzz-programs.py: random valid programs (utils/random-program.py)
#     sharded for 2-4 ranks and run against the unsharded run (tp-run --check).
#     A tenth of the time goes to bench/fuzz-runner.py before it: the
#     runner's inputs (model.json, checkpoints, files, token ids, blobs).
#
# Figures printed: executions, coverage (libFuzzer's cov/ft), programs run
# and matched. Any crash, mismatch or hang is saved under fuzz-out/ with its
# command, and the script exits 1.
#
#   bench/fuzz.sh 600            # ten minutes
#   BUILD_DIR=build bench/fuzz.sh 60   # the plain build: tp-fuzz only sees
#                                      # its own coverage, the rest unsanitized
set -euo pipefail

SECONDS_TOTAL=${1:-600}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The sanitized build (scripts/test-sanitized.sh uses the same folder): the
# compiler libraries carry ASan, UBSan and the coverage instrumentation
# libFuzzer steers by.
BUILD_DIR=${BUILD_DIR:-$ROOT/build-asan}
OUT=${FUZZ_OUT:-$ROOT/fuzz-out}
BIN=$BUILD_DIR/bin

if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  echo "fuzz.sh: configuring $BUILD_DIR (TP_SANITIZE=address,undefined)"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_C_COMPILER=clang-22 \
    -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTP_SANITIZE=address,undefined >/dev/null
fi
ninja -C "$BUILD_DIR" tp-fuzz tp-run tp-gen tp-runner tp-opt >/dev/null || {
  echo "fuzz.sh: cannot build tp-fuzz in $BUILD_DIR (needs clang-22 and libclang-rt-22-dev)" >&2
  exit 1
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$OUT"
HALF=$((SECONDS_TOTAL / 2))

# --- 1. libFuzzer ------------------------------------------------------------
SEEDS=$(mktemp -d /tmp/tp-fuzz-seeds.XXXXXX)
CORPUS=$OUT/corpus
mkdir -p "$CORPUS"
trap 'rm -rf "$SEEDS"' EXIT
n=0
add_seed() { # file
  # The option prefix: tp, sequence parallelism, memory budget, padding.
  printf "\\x$(printf %02x $((n % 8)))\\x$(printf %02x $((n % 3)))\\x$(printf %02x $((n % 4)))\\x$(printf %02x $((n % 7)))" \
    >"$SEEDS/seed$n"
  cat "$1" >>"$SEEDS/seed$n"
  n=$((n + 1))
}
while IFS= read -r f; do add_seed "$f"; done < <(find "$ROOT/test" "$ROOT/bench/inputs" -name '*.mlir')
for spec in "--preset gpt2-tiny --layers 1" "--preset llama-tiny --layers 1" \
            "--preset gpt2-tiny --layers 1 --with-embedding --with-loss" \
            "--preset llama-tiny --layers 1 --blocks-only --seq 1"; do
  # shellcheck disable=SC2086
  "$BIN/tp-gen" $spec -o "$SEEDS/gen.mlir"
  add_seed "$SEEDS/gen.mlir"
done
for s in $(seq 1 40); do
  python3 "$ROOT/utils/random-program.py" --seed "$s" -o "$SEEDS/rand.mlir"
  add_seed "$SEEDS/rand.mlir"
done
# Issue 27's input classes: meshes of 3 to 6 axes (the option byte picks
# mesh-axes= for every seed whose bits 3-4 are set; the first byte of these
# seeds does), programs with collectives or already partitioned, functions
# without arguments, dense_resource blobs of the right and wrong size.
for f in "$ROOT"/test/bad-input/Inputs/*.mlir; do
  add_seed "$f"
done
for spec in "--preset gpt2-tiny --layers 1" "--preset llama-tiny --layers 1"; do
  for m in 8 16 24; do
    # shellcheck disable=SC2086
    "$BIN/tp-gen" $spec -o "$SEEDS/gen.mlir"
    printf "\\x$(printf %02x $((m + 1)))\\x00\\x01\\x01" >"$SEEDS/seed$n"
    cat "$SEEDS/gen.mlir" >>"$SEEDS/seed$n"
    n=$((n + 1))
  done
done
"$BIN/tp-opt" "$ROOT/test/bad-input/Inputs/small.mlir" --tp-shard=tp=2 \
  -o "$SEEDS/gen.mlir" && add_seed "$SEEDS/gen.mlir"
rm -f "$SEEDS/gen.mlir" "$SEEDS/rand.mlir"
echo "fuzz.sh: tp-fuzz for $HALF s, $n seeds (lit inputs, tp-gen models, random programs)"

LOG=$OUT/tp-fuzz.log
status=0
# Leaks in a process that parses once and exits are not findings; crashes,
# ASan and UBSan reports are.
"$BIN/tp-fuzz" "$CORPUS" "$SEEDS" -max_total_time="$HALF" -max_len=200000 \
  -timeout=60 -rss_limit_mb=6144 -artifact_prefix="$OUT/" -print_final_stats=1 \
  >"$LOG" 2>&1 || status=$?
grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)" "$LOG" | tail -2 || true
execs=$(grep -E "stat::number_of_executed_units" "$LOG" | awk '{print $2}' || true)
cov=$(grep -E "^#[0-9]+[[:space:]]" "$LOG" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 edges, \2 features/' || true)
echo "fuzz.sh: tp-fuzz: ${execs:-?} executions, coverage ${cov:-?}, corpus $(ls "$CORPUS" | wc -l) inputs"
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: tp-fuzz found a failure (exit $status); artifacts in $OUT, log $LOG" >&2
  grep -E "ERROR|runtime error|Assertion|deadly signal" "$LOG" | head -5 >&2
fi

# --- runner inputs (issue 27, runner half) -------------------------------------
# bench/fuzz-runner.py: mutated model.json files, checkpoints, odd files
# (FIFOs, devices, link loops), token ids past the vocabulary and
# dense_resource blobs of the wrong size, one tenth of the time, taken from
# stage 2. Crashes, hangs, and runs that exit 0 on inputs that must be
# refused are saved under $OUT.
RUNNER_SECONDS=$((SECONDS_TOTAL / 10))
rstatus=0
python3 "$ROOT/bench/fuzz-runner.py" --seconds "$RUNNER_SECONDS" \
  --bin "$BIN" --out "$OUT" || rstatus=$?
# --- end of runner inputs ------------------------------------------------------

# --- 2. random programs, run and checked --------------------------------------
pstatus=0
python3 "$ROOT/bench/fuzz-programs.py" \
  --seconds "$((SECONDS_TOTAL - HALF - RUNNER_SECONDS))" \
  --bin "$BIN" --out "$OUT" || pstatus=$?

if [[ $status -ne 0 || $pstatus -ne 0 || $rstatus -ne 0 ]]; then
  echo "fuzz.sh: FAILED (findings in $OUT)"
  exit 1
fi
echo "fuzz.sh: no crash, no mismatch"
