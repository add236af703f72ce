#!/usr/bin/env python3
"""Counts, for test/Conversion/lower-cpu.test, the CPU kernels of a program
lowered by --tp-lower-cpu (LLVM dialect): the calls of the outlined loop
nests (tp-outline-cpu-kernels), the kernels defined, how many are called
more than once, and how many have the same body as another one, their names
aside (tp-dedup-kernels: none).

Usage: cpu-kernel-count.py LOWERED.mlir
Prints four lines, 'name: count'.
"""
import re
import sys


def main():
    text = open(sys.argv[1]).read()
    calls = re.findall(r"llvm\.call @(\w+_kernel_\d+)\(", text)
    bodies = {}
    for m in re.finditer(r"^  llvm\.func internal @(\w+_kernel_\d+)\((.*?)^  \}$",
                         text, re.S | re.M):
        bodies[m.group(1)] = m.group(2)
    print("kernel calls: %d" % len(calls))
    print("kernels: %d" % len(bodies))
    print("kernels called more than once: %d" %
          sum(1 for k in bodies if calls.count(k) > 1))
    seen = set()
    equal = 0
    for body in bodies.values():
        equal += body in seen
        seen.add(body)
    print("kernels equal to another: %d" % equal)


if __name__ == "__main__":
    main()
