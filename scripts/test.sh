#!/usr/bin/env bash
# The README's test command: installs dependencies, configures, builds and
# runs every test tier that this machine supports (lit suites and GoogleTest
# unit tests; GPU execution tests only where a GPU is present). Ends with one
# line "N passed, M failed" and exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TP_BUILD_DIR:-$root/build}
start=$(date +%s)

"$root/scripts/setup.sh" || { echo "0 passed, 1 failed"; exit 1; }
"$root/scripts/build.sh" || { echo "test: build failed" >&2; echo "0 passed, 1 failed"; exit 1; }

results="$build/test-results.json"
rm -f "$results"
/usr/lib/llvm-22/bin/lit -sv --time-tests -o "$results" \
  "$build/test" "$build/test/unittests"
lit_rc=$?

python3 - "$results" "$lit_rc" "$start" <<'PY'
import json, sys, time
path, lit_rc, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
passed = failed = skipped = 0
try:
    with open(path) as f:
        tests = json.load(f)["tests"]
except (OSError, ValueError, KeyError):
    tests = []
for t in tests:
    code = t["code"]
    if code in ("PASS", "XFAIL", "FLAKYPASS"):
        passed += 1
    elif code in ("UNSUPPORTED", "SKIPPED", "EXCLUDED"):
        skipped += 1
    else:
        failed += 1
if lit_rc != 0 and failed == 0:
    failed = 1  # lit itself failed (e.g. a bad configuration)
print("test: %d s in all" % (time.time() - start))
line = "%d passed, %d failed" % (passed, failed)
if skipped:
    line += ", %d skipped" % skipped
print(line)
sys.exit(1 if failed else 0)
PY
