#!/usr/bin/env python3
"""Plan quality and planning time on the front-end fixtures (test/frontends).

For every fixture x tensor-parallel degree N: the communication volume of
tp-opt's plan (wire bytes per device, from the plan report) against
Megatron-LM's hand plan for the same output contract (vocabulary-parallel
embedding: 1 all-reduce of [tokens, hidden]; 2 all-reduces of [tokens,
hidden] per layer; column-parallel LM head with an all-gather of the
[tokens, vocab] logits, which are a replicated result), the collectives,
the planner's seconds, the whole --tp-shard's seconds, and whether the
solve was exact. Prints a Markdown table; figures only, nothing asserted.

  python3 bench/frontends.py [--build build] [--tp 2,4,8] [FIXTURE.mlir ...]
"""
import argparse, glob, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "utils"))
from megatron import fixture_shapes, megatron_plan  # noqa: E402


def run(cmd):
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, time.time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tp", default="2,4,8")
    ap.add_argument("fixtures", nargs="*")
    args = ap.parse_args()
    tp_opt = os.path.join(args.build, "bin", "tp-opt")
    fixtures = args.fixtures or sorted(
        glob.glob(os.path.join(ROOT, "test/frontends/Inputs/*.mlir")))
    print("| fixture | N | ours (KB) | Megatron (KB) | ratio | collectives (ours / Megatron) | plan s | --tp-shard s | solver |")
    print("|---|---|---|---|---|---|---|---|---|")
    tmp = tempfile.mkdtemp()
    for path in fixtures:
        name = os.path.basename(path)[:-5]
        shapes = fixture_shapes(path)
        for t in [int(x) for x in args.tp.split(",")]:
            report = os.path.join(tmp, "plan.json")
            r, _ = run([tp_opt, path, "--tp-propagate=tp=%d report=%s" % (t, report),
                        "-o", os.devnull])
            if r.returncode != 0:
                err = [l for l in r.stderr.splitlines() if "error" in l][:1]
                print("| %s | %d | (no plan: %s) | | | | | | |" % (name, t, " ".join(err)[:80]))
                continue
            fn = json.load(open(report))["functions"][0]
            tot, solver = fn["totals"], fn["solver"]
            ours = tot["communication_wire_bytes_per_device"]
            mega, mcount = megatron_plan(t, *shapes)
            _, shard_s = run([tp_opt, path, "--tp-shard=tp=%d" % t, "-o", os.devnull])
            exact = "exact" if solver["exact"] else "gap %s" % solver.get("gap", "?")
            print("| %s | %d | %.1f | %.1f | %.3f | %d / %d | %.2f | %.2f | %s |" % (
                name, t, ours / 1e3, mega / 1e3, ours / mega, tot["collectives"],
                mcount, solver["seconds"], shard_s, exact))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
