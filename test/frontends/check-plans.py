#!/usr/bin/env python3
"""Plans every front-end fixture for N = 2, 4, 8 and checks (issue 17):

 1. `tp-opt FIXTURE --tp-shard="tp=N"` succeeds with no other option (the
    pipeline ends with --tp-verify-partitioned);
 2. the plan report charges exactly what the partitioned program runs: per
    collective kind, the same number of collectives and the same message
    bytes as the tp.* collectives of the output;
 3. plan quality against Megatron-LM's hand plan (utils/megatron.py):
    where the heads divide N, the communication volume is at most
    Megatron's; where they do not, the report carries the remark that says
    what runs replicated, unless the plan moves no more than Megatron's
    bytes anyway (Falcon-7B's 71 heads: the attention splits its query
    tokens instead, nothing runs replicated). Published shapes are checked with the default
    device profile. The tiny configurations (8 tokens) are latency-bound,
    where fewer collectives beat fewer bytes, so their volume is checked
    with link-latency=0 (time proportional to bytes) and param-share=1.5
    (Megatron keeps norms and position tables whole, more than the default
    1.1 x share of their parameters allows), 1.75 where the kv heads do
    not divide N (the usual practice replicates them: gemma2-tiny at N = 8
    needs 76 KB per device that way, 1.68 x its share, over the 1.5 x of
    68 KB).

Prints one line per case and "N cases, M failed"; exits 1 on a failure.
With --table, then a markdown table: per fixture and N, the volume over
Megatron's, the collectives, and the planning seconds of the --tp-shard
run (the solver section of its report; the default profile).
  check-plans.py [--table] TP_OPT INPUTS_DIR [FIXTURE ...]
"""
import glob, json, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "utils"))
from megatron import fixture_shapes, megatron_plan, manifest_heads  # noqa

ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i64": 8, "i32": 4,
                 "i8": 1, "i1": 1}
COLLECTIVE = re.compile(
    r"tp\.(all_reduce|all_gather|reduce_scatter|all_to_all) [^\n]*?: "
    r"tensor<([0-9x]*?)x?([a-z]+[0-9]+)>(?: -> tensor<([0-9x]*?)x?([a-z]+[0-9]+)>)?")
# Volume allowed above Megatron's where the heads divide: none. An
# exception would be listed here, (fixture, N): limit, with the reason
# Megatron's plan cannot be expressed; there is none. (gpt2-jax-tiny was
# 1.21 before the cost model priced fused elementwise chains as the
# lowerings run them: IREE's separate broadcast generics made its
# replicated final LayerNorm look dearer than the bytes it saved.)
KNOWN = {}


def elements(shape):
    n = 1
    for d in shape.split("x") if shape else []:
        n *= int(d)
    return n


def emitted(text):
    """{kind: [count, message bytes]} of the partitioned program."""
    out = {}
    for m in COLLECTIVE.finditer(text):
        kind, shape, elem, oshape, oelem = m.groups()
        # Message bytes as the cost model counts them: the input, or the
        # gathered output for an all-gather.
        if kind == "all_gather":
            shape, elem = oshape, oelem
        entry = out.setdefault(kind, [0, 0])
        entry[0] += 1
        entry[1] += elements(shape) * ELEMENT_BYTES[elem]
    return out


def charged(fn):
    out = {}
    for r in fn["reshards"]:
        for s in r["steps"]:
            if s["collective"] in ("slice", "make_partial"):
                continue
            entry = out.setdefault(s["collective"], [0, 0])
            entry[0] += 1
            entry[1] += int(round(s["message_bytes"]))
    return out


def main():
    argv = sys.argv[1:]
    table = "--table" in argv
    argv = [a for a in argv if a != "--table"]
    tp_opt, inputs = argv[0], argv[1]
    rows = {}
    fixtures = argv[2:] or sorted(
        glob.glob(os.path.join(inputs, "*.mlir")) +
        glob.glob(os.path.join(inputs, "hf", "*", "model.mlir")))
    heads = manifest_heads(os.path.join(inputs, "MANIFEST.md"))
    tmp = tempfile.mkdtemp()
    cases = failed = 0
    for path in fixtures:
        name = os.path.basename(path)[:-5]
        if name == "model":
            name = "hf/" + os.path.basename(os.path.dirname(path))
        published = not re.search(r"tiny", name)
        h, kv = heads.get(name, (None, None))
        if h is None:
            h, kv = heads.get(name.replace("hf/", ""), (None, None))
        for t in (2, 4, 8):
            cases += 1
            problems = []
            report = os.path.join(tmp, "plan.json")
            r = subprocess.run([tp_opt, path, "--tp-shard=tp=%d report=%s" % (t, report)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL %s tp=%d: --tp-shard exited %d: %s" % (
                    name, t, r.returncode, r.stderr.strip().splitlines()[-1:]))
                failed += 1
                continue
            fn = json.load(open(report))["functions"][0]
            if charged(fn) != emitted(r.stdout):
                problems.append("report %s != program %s" % (charged(fn), emitted(r.stdout)))
            if not fn["solver"]["exact"] and "gap" not in r.stderr:
                problems.append("inexact plan without a gap warning")
            # Quality.
            # Megatron's practice replicates kv heads that tp does not
            # divide, which the 1.5 x share may not hold: 1.75 x there.
            share = 1.5 if kv is None or kv % t == 0 else 1.75
            opts = "" if published else \
                " link-latency=0 param-share=%g" % share
            q = subprocess.run([tp_opt, path, "--tp-propagate=tp=%d report=%s%s" % (t, report, opts),
                                "-o", os.devnull], capture_output=True, text=True)
            qfn = json.load(open(report))["functions"][0]
            ours = qfn["totals"]["communication_wire_bytes_per_device"]
            mega, _ = megatron_plan(t, *fixture_shapes(path))
            ratio = ours / mega
            # Fewer kv heads than devices: Megatron's practice (vLLM,
            # TensorRT-LLM) replicates them with the same collectives, so the
            # bound holds whenever the query heads divide N.
            divides = h is not None and h % t == 0
            if divides:
                limit = KNOWN.get((name, t), 1.0)
                if ratio > limit + 1e-9:
                    problems.append("volume %.3f x Megatron's (limit %.2f)" % (ratio, limit))
            elif ratio > 1.0 + 1e-9 and \
                    not any("does not divide" in x for x in qfn["remarks"]):
                # (A plan that splits something else, Falcon-7B's 71 heads
                # by query tokens, and moves no more than Megatron's bytes
                # needs no excuse.)
                problems.append("heads %s/%s do not divide %d, volume %.3f x "
                                "Megatron's and no remark says what ran "
                                "replicated" % (h, kv, t, ratio))
            status = "FAIL" if problems else "ok"
            failed += bool(problems)
            rows.setdefault(name, {})[t] = (ratio, qfn["totals"]["collectives"],
                                            fn["solver"]["seconds"])
            print("%s %s tp=%d: ratio %.3f, %d collectives, %s%s" % (
                status, name, t, ratio, qfn["totals"]["collectives"],
                "exact" if fn["solver"]["exact"] else "inexact",
                "; " + "; ".join(problems) if problems else ""))
    print("%d cases, %d failed" % (cases, failed))
    if table:
        print("\n| fixture | N=2 | N=4 | N=8 |\n|---|---|---|---|")
        for name, by_n in rows.items():
            print("| %s | %s |" % (name, " | ".join(
                "%.2f, %d, %.2f s" % by_n[t] for t in (2, 4, 8))))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
