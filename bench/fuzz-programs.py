#!/usr/bin/env python3
"""Structured fuzzing: random valid programs, sharded and run against the
unsharded run.

For each seed, utils/random-program.py writes a program; tp-run plans it
for a random device count (2, 3 or 4) under random planner options,
partitions, compiles and runs it on that many MPI ranks, runs the unsharded
program too and compares every output (--check). Outcomes:

  ok        ran, every output matches the unsharded run
  rejected  tp-run stopped with a clear diagnostic (exit code 1 and an
            'error:' line naming the cause), e.g. a memory budget no layout
            meets. Counted, never a failure.
  crash     a signal, an assertion, a stack dump, or a rank that crashed
  rank-failure  the compiled program failed on a rank
  mismatch  an output differs from the unsharded run
  timeout   no result within the time limit

Crashes, mismatches and timeouts are failures: the program and the command
are saved in the output folder (to become regression tests) and the exit
code is 1.

  bench/fuzz-programs.py --seconds 300 --bin build/bin --out fuzz-out
"""

import argparse
import collections
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(HERE, "..", "utils", "random-program.py")

# Planner option sets: the defaults, no memory limit (the cost model alone
# decides), communication made free (splits everything it can), forced
# sequence parallelism, padding off, and a shard-everything budget.
OPTION_SETS = [
    "",
    "memory-budget=none",
    "memory-budget=none link-latency=0 link-bandwidth=1e15",
    "sequence-parallel=on memory-budget=none link-latency=0",
    "allow-padding=false link-latency=0 link-bandwidth=1e15",
    "param-share=1.0 link-latency=0",
]

CRASH_MARKS = re.compile(
    r"Assertion|Stack dump|LLVM ERROR|UNREACHABLE|Segmentation|"
    r"AddressSanitizer|runtime error:|crashed|core dumped")


def classify(rc, text):
    if rc is None:
        return "timeout"
    if rc < 0 or rc > 1 or CRASH_MARKS.search(text):
        return "crash"
    if "FAIL" in text or "does not match the unsharded" in text:
        return "mismatch"
    if rc == 1:
        if "did not finish within" in text:
            return "timeout"
        if re.search(r"the run on \d+ ranks? failed|rank \d+ .*(failed|error)", text):
            return "rank-failure"
        return "rejected" if "error:" in text else "crash"
    return "ok"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin"))
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 1000000,
                        help="first program seed (default: from the clock)")
    parser.add_argument("--timeout", type=int, default=120,
                        help="seconds per program")
    args = parser.parse_args()

    tp_run = os.path.join(args.bin, "tp-run")
    if not os.access(tp_run, os.X_OK):
        sys.exit("fuzz-programs: no tp-run at %s (build first)" % tp_run)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="tp-fuzz-programs-")
    counts = collections.Counter()
    rejections = collections.Counter()
    collectives = collections.Counter()
    failures = []
    start = time.time()
    seed = args.seed
    while time.time() - start < args.seconds:
        rng = random.Random(seed * 7919 + 1)
        tp = rng.choice([2, 3, 4])
        options = rng.choice(OPTION_SETS)
        program = os.path.join(work, "p%d.mlir" % seed)
        subprocess.run([sys.executable, GENERATOR, "--seed", str(seed), "--tp",
                        str(tp), "-o", program], check=True)
        cmd = [tp_run, program, "--tp", str(tp), "--check",
               "--timeout", str(args.timeout), "--work-dir",
               os.path.join(work, "w%d" % seed)]
        if options:
            cmd.append("--shard-options=" + options)
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  timeout=args.timeout + 30)
            rc, text = done.returncode, done.stdout
        except subprocess.TimeoutExpired as e:
            rc, text = None, (e.stdout or b"").decode(errors="replace")
        outcome = classify(rc, text)
        counts[outcome] += 1
        if outcome == "rejected":
            first = [l for l in text.splitlines() if "error:" in l][0]
            reason = re.sub(r".*error: ", "", first)
            reason = re.sub(r"\d+", "N", reason)[:90]
            rejections[reason] += 1
        elif outcome == "ok":
            m = re.search(r"plan: (\d+) all-reduce, (\d+) all-gather, "
                          r"(\d+) reduce-scatter, (\d+) all-to-all", text)
            if m:
                for name, n in zip(["all-reduce", "all-gather",
                                    "reduce-scatter", "all-to-all"], m.groups()):
                    collectives[name] += int(n)
                counts["ok with collectives"] += any(int(n) for n in m.groups())
        else:
            saved = os.path.join(args.out, "%s-seed%d.mlir" % (outcome, seed))
            shutil.copy(program, saved)
            with open(saved + ".log", "w") as f:
                f.write(" ".join(cmd[:1] + [saved] + cmd[2:]) + "\n\n" + text)
            failures.append((outcome, seed, saved))
            print("fuzz-programs: %s on seed %d (tp=%d, options '%s'): %s" %
                  (outcome, seed, tp, options, saved), flush=True)
        shutil.rmtree(os.path.join(work, "w%d" % seed), ignore_errors=True)
        os.remove(program)
        seed += 1
    shutil.rmtree(work, ignore_errors=True)

    elapsed = time.time() - start
    total = sum(counts[k] for k in ["ok", "rejected", "crash", "mismatch", "timeout",
                                 "rank-failure"])
    print("fuzz-programs: %d programs in %.0f s (seeds %d..%d)" %
          (total, elapsed, args.seed, seed - 1))
    print("  ok (matches the unsharded run): %d, of which %d communicate" %
          (counts["ok"], counts["ok with collectives"]))
    print("  collectives in the plans that ran: " + ", ".join(
        "%s %d" % (k, collectives[k]) for k in
        ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]))
    print("  rejected with a diagnostic: %d" % counts["rejected"])
    for reason, n in rejections.most_common(6):
        print("    %4d  %s" % (n, reason))
    print("  crashes: %d, rank failures: %d, mismatches: %d, timeouts: %d" %
          (counts["crash"], counts["rank-failure"], counts["mismatch"],
           counts["timeout"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
