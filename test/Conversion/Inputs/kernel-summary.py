#!/usr/bin/env python3
"""One line per gpu.func of a tp-lower-gpu stop-after=kernels output.

Usage: kernel-summary.py KERNELS.mlir

Prints, per kernel in the order of the file: its name, block and grid
(known_block_size, known_grid_size), the number of threads, and which of
these ops its body contains: nvvm.mma.sync, nvgpu.ldmatrix, vector.load,
vector.store, math.powf, math.sin, math.cos, gpu.all_reduce.
"""

import re
import sys

OPS = ["nvvm.mma.sync", "nvgpu.ldmatrix", "vector.load", "vector.store",
       "math.powf", "math.sin", "math.cos", "gpu.all_reduce"]

text = open(sys.argv[1]).read()
for part in re.split(r"\n\s*gpu\.func ", text)[1:]:
    name = part.split("(")[0]
    head = part.split("\n")[0]
    m = re.search(r"known_block_size = array<i32: (\d+), (\d+), (\d+)>, "
                  r"known_grid_size = array<i32: (\d+), (\d+), (\d+)>", head)
    if not m:
        print("%s: no known sizes" % name)
        continue
    sizes = [int(x) for x in m.groups()]
    threads = 1
    for x in sizes:
        threads *= x
    body = part[:part.find("gpu.return")] if "gpu.return" in part else part
    ops = [op for op in OPS if op in body]
    print("%s block %d,%d,%d grid %d,%d,%d threads %d: %s" %
          (name, *sizes, threads, " ".join(ops) if ops else "-"))
