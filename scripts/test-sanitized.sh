#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer:
# the README's test command (scripts/test.sh) on a separate build folder,
# build-asan, configured with TP_SANITIZE=address,undefined. A sanitizer
# report fails the test that triggered it. Ends with "N passed, M failed".
#
#   ./scripts/test-sanitized.sh
#   SANITIZE=address ./scripts/test-sanitized.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TP_BUILD_DIR=${TP_BUILD_DIR:-$root/build-asan}
export TP_CMAKE_ARGS="-DTP_SANITIZE=${SANITIZE:-address,undefined} -DCMAKE_BUILD_TYPE=RelWithDebInfo ${TP_CMAKE_ARGS:-}"
# lit passes these through to the tests, and mpirun to its ranks.
# - allow_user_poisoning=0: LLVM's allocators, inlined into our instrumented
#   code, poison memory that the uninstrumented libMLIR.so then uses (false
#   reports in its StorageUniquer); we do no manual poisoning of our own.
# - detect_leaks=0: Open MPI's dlopen'ed components leave allocations whose
#   frames have no module to suppress by; memory errors and UB stay fatal.
#   (LSAN_OPTIONS=suppressions=utils/lsan.supp with detect_leaks=1 checks
#   leaks in the single-process tools.)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:strict_string_checks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/utils/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$root/scripts/test.sh"
