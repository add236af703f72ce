#!/usr/bin/env python3
"""Fused against unfused attention, run on the CPU.

Usage: attention-numerics.py MODEL.mlir --func NAME --fused N
           --tp-opt PATH --mlir-opt PATH [--tol X] [--tp-opt-args ARGS]

Appends a @tp_harness_main to MODEL.mlir that calls @NAME on fixed
pseudo-random inputs (uniform in [-0.5, 0.5] for tensors of rank >= 2,
1 + that / 5 for vectors, small integers for integer inputs) and prints
every f32 result. The program is lowered twice with tp-opt:
  reference: --tp-decompose-aggregates
  fused:     --tp-decompose-aggregates --tp-fuse-attention=target=loops
which must contain exactly N calls of a @tp_fused_attention_* function, then
both run with mlir-runner (utils/mlir_cpu_run.py). Every value must agree
within TOL (absolute, relative above 1). Prints one line
"attention numerics: ..." and exits 0, or says what differs and exits 1.
"""

import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "utils"))
from mlir_cpu_run import run_on_cpu  # noqa: E402


def signature(text, name):
    """Argument and result types of func.func @name."""
    start = text.index("func.func @%s(" % name) + len("func.func @%s(" % name)
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    args = re.findall(r"%\w+: (tensor<[^>]*>)", text[start:i - 1])
    rest = text[i:text.index("\n", i)]
    results = re.findall(r"tensor<[^>]*>", rest)
    return args, results


def shape_of(t):
    inner = t[len("tensor<"):-1].split("x")
    return [int(d) for d in inner[:-1]], inner[-1]


class Lcg:
    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) % 2**64
        return ((self.s >> 33) / 2**31) - 0.5


def constant(t, n, rng):
    shape, elem = shape_of(t)
    count = 1
    for d in shape:
        count *= d
    if elem.startswith("i"):
        vals = [str((7 * k + n) % 5) for k in range(count)]
    elif len(shape) >= 2:
        vals = ["%.6e" % (rng.next() / 2) for _ in range(count)]
    else:
        vals = ["%.6e" % (1 + rng.next() / 5) for _ in range(count)]
    return "    %%a%d = arith.constant dense<[%s]> : tensor<%d x %s>\n" % (
        n, ", ".join(vals), count, elem) + (
        "    %%x%d = tensor.expand_shape %%a%d [[%s]] output_shape [%s] : "
        "tensor<%dx%s> into %s\n" % (
            n, n, ", ".join(str(i) for i in range(len(shape))),
            ", ".join(str(d) for d in shape), count, elem, t)
        if len(shape) > 1 else
        "    %%x%d = tensor.cast %%a%d : tensor<%dx%s> to %s\n" % (
            n, n, count, elem, t))


def harness(text, name):
    args, results = signature(text, name)
    rng = Lcg(12345)
    body = "".join(constant(t, n, rng) for n, t in enumerate(args))
    res = ", ".join("%%r%d" % i for i in range(len(results)))
    body += "    %s = func.call @%s(%s) : (%s) -> (%s)\n" % (
        res, name, ", ".join("%%x%d" % i for i in range(len(args))),
        ", ".join(args), ", ".join(results))
    for i, t in enumerate(results):
        shape, elem = shape_of(t)
        if elem != "f32":
            continue
        body += ("    %%b%d = bufferization.to_buffer %%r%d : %s to memref<%s>\n"
                 "    %%u%d = memref.cast %%b%d : memref<%s> to memref<*xf32>\n"
                 "    func.call @printMemrefF32(%%u%d) : (memref<*xf32>) -> ()\n"
                 % (i, i, t, t[7:-1], i, i, t[7:-1], i))
    main = ("  func.func private @printMemrefF32(memref<*xf32>)\n"
            "  func.func @tp_harness_main() {\n" + body +
            "    return\n  }\n")
    # Before the module's closing brace (and any resource block after it).
    end = text.rindex("}", 0, text.find("{-#") if "{-#" in text else len(text))
    return text[:end] + main + text[end:]


def lower(program, tp_opt, extra):
    r = subprocess.run([tp_opt, "-", "--tp-decompose-aggregates"] + extra,
                       input=program, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("error: tp-opt failed:\n" + r.stderr[-4000:])
    return r.stdout


def values(out):
    nums = []
    for block in re.findall(r"data =\s*(.*?)(?=Unranked|\Z)", out, re.S):
        nums += [float(x) for x in re.findall(
            r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)", block)]
    return nums


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--func", default="forward")
    p.add_argument("--fused", type=int, required=True)
    p.add_argument("--tp-opt", required=True)
    p.add_argument("--mlir-opt", required=True)
    p.add_argument("--tol", type=float, default=1e-4)
    a = p.parse_args()
    text = open(a.model).read().replace("func.func @%s(" % a.func,
                                        "func.func @tp_model(")
    program = harness(text, "tp_model")
    ref_ir = lower(program, a.tp_opt, [])
    fused_ir = lower(program, a.tp_opt,
                     ["--tp-fuse-attention=target=loops"])
    calls = len(re.findall(r"call @tp_fused_attention_\d+\(", fused_ir))
    if calls != a.fused:
        sys.exit("error: %d fused attention calls, expected %d" %
                 (calls, a.fused))
    run = lambda ir: values(run_on_cpu(
        ir.replace("@tp_harness_main", "@main"), a.mlir_opt))
    ref, fused = run(ref_ir), run(fused_ir)
    if not ref or len(ref) != len(fused):
        sys.exit("error: %d reference values, %d fused" % (len(ref),
                                                           len(fused)))
    worst = 0.0
    for i, (x, y) in enumerate(zip(ref, fused)):
        err = abs(x - y) / max(1.0, abs(x))
        if not err <= a.tol:
            sys.exit("error: value %d: reference %g, fused %g" % (i, x, y))
        worst = max(worst, err)
    print("attention numerics: %d values within %g (worst %.1e), %d fused" %
          (len(ref), a.tol, worst, calls))


if __name__ == "__main__":
    main()
