#!/usr/bin/env python3
"""Prints a tp-propagate JSON plan report as one line per collective.

    plan-summary.py [--ops] [--training] [--locs] REPORT.json

Each line: `COLLECTIVE [REDUCTION] over AXIS dim=D: SHAPE ELEMENT message=BYTES`
in program order, then one `totals:` line per function. With --ops, one
line per op first: `OP LOCATION STRATEGY -> RESULT LAYOUTS`. A training
step (docs/training.md) ends with a `memory:` line (bytes per device of
weights, gradients, optimizer states, activations); with --training, one
line per weight first: `param NAME LAYOUT update=... grad=... state=...`.
With --locs, each collective line ends with `@ NAME`, the name location of
the value it moves (tp-gen --mlir-print-debuginfo names ops by layer).
Tests FileCheck it; users read it to see what a plan does and communicates.
"""
import json
import re
import sys


def main():
    args = sys.argv[1:]
    show_ops = "--ops" in args
    show_training = "--training" in args
    show_locs = "--locs" in args
    args = [a for a in args if a not in ("--ops", "--training", "--locs")]
    with open(args[0]) as f:
        report = json.load(f)
    for fn in report["functions"]:
        print("function %s" % fn["function"])
        if show_ops:
            for op in fn["ops"]:
                loc = op["loc"]
                m = re.match(r'loc\("([^"]*)"', loc)
                name = m.group(1) if m else loc
                layouts = ", ".join(
                    re.sub(r"#tp\.layout<@\w+, ", "<", r) for r in op["results"])
                print("op %s %s %s -> %s" % (op["op"], name, op["strategy"],
                                             layouts))
        for r in fn["reshards"]:
            for s in r["steps"]:
                if s["collective"] in ("slice", "make_partial"):
                    continue
                red = " " + s["reduction"] if "reduction" in s else ""
                dim = ""
                if "concat_dim" in s:
                    dim = " split=%d concat=%d" % (s["dim"], s["concat_dim"])
                elif "dim" in s:
                    dim = " dim=%d" % s["dim"]
                shape = "x".join(str(d) for d in s["input_shape"]) or "scalar"
                at = ""
                if show_locs:
                    m = re.match(r'loc\("([^"]*)"', r["value_loc"])
                    at = " @ " + (m.group(1) if m else r["value_loc"])
                print("%s%s over %s%s: %s %s message=%d -> %s%s"
                      % (s["collective"], red, s["axis"], dim, shape,
                         r["element_type"], s["message_bytes"], r["consumer"],
                         at))
        t = fn["totals"]
        print("totals: collectives=%d message_bytes=%d param_bytes=%d "
              "exact=%s" % (t["collectives"],
                            t["communication_message_bytes_per_device"],
                            t["param_bytes_per_device"],
                            str(fn["solver"]["exact"]).lower()))
        training = fn.get("training")
        if training:
            short = lambda l: re.sub(r"#tp\.layout<@\w+, ", "<", l)
            if show_training:
                for p in training["params"]:
                    print("param %s %s update=%s grad=%s state=%s" % (
                        p["name"], short(p["layout"]),
                        ",".join(map(short, p["update_layouts"])) or "none",
                        ",".join(map(short, p["gradient_layouts"])) or "none",
                        ",".join(map(short, p["state_layouts"])) or "none"))
            print("memory: weights=%d gradients=%d optimizer_states=%d "
                  "activations=%d bytes per device (%d weights, %d gradients, "
                  "%d states, %d activations)" % (
                      training["weight_bytes_per_device"],
                      training["gradient_bytes_per_device"],
                      training["optimizer_state_bytes_per_device"],
                      training["activation_bytes_per_device"],
                      training["weights"], training["gradients"],
                      training["optimizer_states"], training["activations"]))


if __name__ == "__main__":
    main()
