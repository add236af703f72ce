#!/usr/bin/env python3
"""Pins a training step's optimizer state over a data-parallel axis.

    pin-states.py IN.mlir OUT.mlir DP TP

Declares `tp.mesh @mesh ["dp" = DP, "tp" = TP]` (the mesh `tp-run --tp
DP*TP --dp DP` runs on) and gives every argument with `tp.state` whose
first dimension DP divides the layout `["dp", -, ...]`: Adam's moments
sharded over "dp" as ZeRO stage 1 keeps them, whatever the planner would
choose (run-train-dp-zero.test). Prints how many arguments it pinned.
"""
import re
import sys

src, dst, dp, tp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = open(src).read()
if "module {" not in text:
    sys.exit("pin-states.py: %s has no `module {`" % src)
text = text.replace(
    "module {", 'module {\n  tp.mesh @mesh ["dp" = %d, "tp" = %d]' % (dp, tp), 1)

pinned = 0


def pin(m):
    global pinned
    shape, attrs = m.group(2), m.group(3)
    dims = [int(d) for d in shape.split("x")[:-1]]
    if "tp.state" not in attrs or not dims or dims[0] % dp:
        return m.group(0)
    pinned += 1
    layout = "[" + ", ".join(['"dp"'] + ["-"] * (len(dims) - 1)) + "]"
    return "%s: tensor<%s> {tp.layout = #tp.layout<@mesh, %s>, %s}" % (
        m.group(1), shape, layout, attrs)


# `%argN: tensor<AxBxf32> {attr, attr = {...}, ...}` (one nesting level).
text = re.sub(r"(%arg\d+): tensor<([0-9x]+[a-z0-9]+)> "
              r"\{((?:[^{}]|\{[^{}]*\})*)\}", pin, text)
if not pinned:
    sys.exit("pin-states.py: no tp.state argument of %s has a first "
             "dimension %d divides" % (src, dp))
open(dst, "w").write(text)
print("pinned %d optimizer states over dp" % pinned)
