#!/usr/bin/env python3
"""Prints a tp-propagate JSON plan report as one line per collective.

    plan-summary.py [--ops] REPORT.json

Each line: `COLLECTIVE [REDUCTION] over AXIS dim=D: SHAPE ELEMENT message=BYTES`
in program order, then one `totals:` line per function. With --ops, one
line per op first: `OP LOCATION STRATEGY -> RESULT LAYOUTS`. Tests FileCheck
it; users read it to see what a plan does and communicates.
"""
import json
import re
import sys


def main():
    args = sys.argv[1:]
    show_ops = "--ops" in args
    args = [a for a in args if a != "--ops"]
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
                if s["collective"] == "slice":
                    continue
                red = " " + s["reduction"] if "reduction" in s else ""
                dim = ""
                if "concat_dim" in s:
                    dim = " split=%d concat=%d" % (s["dim"], s["concat_dim"])
                elif "dim" in s:
                    dim = " dim=%d" % s["dim"]
                shape = "x".join(str(d) for d in s["input_shape"]) or "scalar"
                print("%s%s over %s%s: %s %s message=%d -> %s"
                      % (s["collective"], red, s["axis"], dim, shape,
                         r["element_type"], s["message_bytes"], r["consumer"]))
        t = fn["totals"]
        print("totals: collectives=%d message_bytes=%d param_bytes=%d "
              "exact=%s" % (t["collectives"],
                            t["communication_message_bytes_per_device"],
                            t["param_bytes_per_device"],
                            str(fn["solver"]["exact"]).lower()))


if __name__ == "__main__":
    main()
