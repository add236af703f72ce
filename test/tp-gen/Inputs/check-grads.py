#!/usr/bin/env python3
"""Checks a tp-gen training function against a float64 numpy reference.

Usage: check-grads.py MODEL.mlir --mlir-opt PATH [--tolerance X]

MODEL.mlir is `tp-gen --train --emit=grads` (@train_grads) or `tp-gen
--train` (@train_step) output, f32. The script
  1. reads the configuration from tp-gen's header comment and the signature
     (argument order, tp.param / tp.state / tp.init, result tp.updates) and
     checks it against the contract of docs/models.md;
  2. materialises the parameters with the tp.init generator (utils/tp_init.py)
     and moves them to a generic point (weights x20, plus a small pattern
     everywhere), token ids and labels with fixed formulas and, for @train_step, non-zero
     optimizer moments and step = 3 (so that the whole AdamW formula, bias
     corrections included, matters), runs the function with upstream passes
     and mlir-runner (utils/mlir_cpu_run.py, as check-numerics.py does);
  3. computes the loss and its gradients by central finite differences of a
     float64 numpy forward pass (utils/train_reference.py) and compares:
     the loss, every gradient tensor (relative error ||g - fd|| / ||fd||),
     or, for @train_step, the parameters, moments and step after the
     update against numpy's AdamW applied to the finite-difference gradients.

Prints one line per check and exits 0, or explains the mismatch and exits 1.
"""

import argparse
import importlib.util
import math
import os
import re
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "utils"))
import train_reference as ref  # noqa: E402
from mlir_cpu_run import run_on_cpu  # noqa: E402
from tp_init import f32, fnv1a, materialise  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "check_numerics", os.path.join(HERE, "check-numerics.py"))
numerics = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(numerics)


def split_top(text):
    """Splits at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>" and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def matching(text, open_index):
    """The index of the bracket closing the one at open_index."""
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    sys.exit("error: unbalanced brackets")


def parse_value(piece):
    m = re.search(r"tensor<([^>]*)>", piece)
    dims = m.group(1).split("x")
    shape, elt = [int(d) for d in dims[:-1]], dims[-1]
    attrs = piece[m.end():]
    um = re.search(r"tp\.updates = (\d+)", attrs)
    return {"shape": shape, "elt": elt, "init": numerics.parse_init(attrs),
            "param": re.search(r"\btp\.param\b", attrs) is not None,
            "state": re.search(r"\btp\.state\b", attrs) is not None,
            "updates": int(um.group(1)) if um else None}


def parse_signature(text):
    m = re.search(r"func\.func @(train_grads|train_step)\(", text)
    if not m:
        sys.exit("error: no @train_grads or @train_step")
    close = matching(text, m.end() - 1)
    args = [parse_value(p) for p in split_top(text[m.end():close])]
    rest = text[close + 1:]
    rm = re.match(r"\s*->\s*\(", rest)
    if not rm:
        sys.exit("error: expected a result list")
    rclose = matching(rest, rm.end() - 1)
    results = [parse_value(p) for p in split_top(rest[rm.end():rclose])]
    return m.group(1), args, results


def dense(values, arg):
    fmt = {"f32": "f", "i64": "q"}[arg["elt"]]
    data = struct.pack("<%d%s" % (len(values), fmt), *values)
    return 'dense<"0x%s"> : tensor<%s>' % (
        data.hex().upper(), "x".join([str(d) for d in arg["shape"]] +
                                     [arg["elt"]]))


def identity(value):
    dims = ", ".join("d%d" % d for d in range(len(value["shape"])))
    return "affine_map<(%s) -> (%s)>" % (dims, dims)


def fail(message):
    print("error: " + message)
    sys.exit(1)


def run(text, name, args, values, results, mlir_opt):
    """Runs @name on `values` with mlir-runner; returns the results."""
    def ty(v):
        return "tensor<%s>" % "x".join([str(d) for d in v["shape"]] +
                                       [v["elt"]])
    # Every result is printed exactly: its bits, as i32.
    lines = ["  func.func private @printMemrefI32(memref<*xi32>)",
             "  func.func @main() {"]
    names = []
    for i, (arg, vals) in enumerate(zip(args, values)):
        lines.append("    %%v%d = arith.constant %s" % (
            i, dense(list(vals), arg)))
        names.append("%%v%d" % i)
    outs = ", ".join("%%r%d" % i for i in range(len(results)))
    lines.append("    %s = func.call @%s(%s) : (%s) -> (%s)" % (
        outs, name, ", ".join(names), ", ".join(ty(a) for a in args),
        ", ".join(ty(r) for r in results)))
    for i, r in enumerate(results):
        bits = ty(r).replace("f32>", "i32>")
        memref = "memref<%s>" % bits[len("tensor<"):-1]
        lines += [
            "    %%e%d = tensor.empty() : %s" % (i, bits),
            "    %%b%d = linalg.generic {indexing_maps = [%s, %s], "
            "iterator_types = [%s]} ins(%%r%d : %s) outs(%%e%d : %s) {" % (
                i, identity(r), identity(r),
                ", ".join(['"parallel"'] * len(r["shape"])), i, ty(r), i,
                bits),
            "    ^bb0(%a: f32, %o: i32):",
            "      %c = arith.bitcast %a : f32 to i32",
            "      linalg.yield %c : i32",
            "    } -> %s" % bits,
            "    %%m%d = bufferization.to_buffer %%b%d : %s to %s" % (
                i, i, bits, memref),
            "    %%u%d = memref.cast %%m%d : %s to memref<*xi32>" % (
                i, i, memref),
            "    func.call @printMemrefI32(%%u%d) : (memref<*xi32>) -> ()" % i]
    lines += ["    return", "  }"]
    end = text.rstrip().rfind("}")
    program = text[:end] + "\n".join(lines) + "\n}\n"
    # The lowering and runner check-numerics.py uses, on a program whose
    # @main prints every result.
    printed = run_on_cpu(program, mlir_opt)
    blocks = printed.split("Unranked Memref")[1:]
    if len(blocks) != len(results):
        fail("%d results printed, expected %d" % (len(blocks), len(results)))
    out = []
    for block, r in zip(blocks, results):
        data = block.split("data =", 1)[1]
        bits = [int(v) for v in re.findall(r"-?\d+", data)]
        vals = struct.unpack("<%df" % len(bits),
                             struct.pack("<%di" % len(bits), *bits))
        out.append(np.array(vals, dtype=np.float64).reshape(r["shape"]))
    return out


def rel(got, want):
    """||got - want|| / ||want|| (the absolute norm when want is zero)."""
    diff = float(np.linalg.norm(got - want))
    norm = float(np.linalg.norm(want))
    return diff / norm if norm > 0 else diff


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--mlir-opt", required=True)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--spread", type=float, default=20.0,
                        help="factor applied to the initial parameters")
    opts = parser.parse_args()
    text = open(opts.model).read()
    cfg = numerics.parse_header(text)
    if cfg["dtype"] != "f32":
        fail("only f32 models are checked")
    for key in ["lr", "beta1", "beta2", "eps", "weight-decay"]:
        if key in cfg:
            cfg[key] = float(cfg[key])
    name, args, results = parse_signature(text)
    names = ref.param_names(cfg)
    n = len(names)
    step_mode = name == "train_step"

    # The signature of docs/models.md.
    expect_args = n * (3 if step_mode else 1) + (1 if step_mode else 0) + 2
    if len(args) != expect_args:
        fail("%d arguments, expected %d" % (len(args), expect_args))
    if not all(a["param"] and not a["state"] for a in args[:n]):
        fail("the first %d arguments are not all plain tp.param" % n)
    ids_arg, labels_arg = args[-2], args[-1]
    if ids_arg["elt"] != "i64" or labels_arg["elt"] != "i64":
        fail("input_ids and labels are not the last two arguments")
    if step_mode:
        for i, a in enumerate(args[n:3 * n]):
            p = args[i % n]
            if not (a["param"] and a["state"] and a["elt"] == "f32" and
                    a["shape"] == p["shape"] and
                    a["init"] == {"kind": "zeros"}):
                fail("argument %d is not the AdamW moment of parameter %d" % (
                    n + i, i % n))
        s = args[3 * n]
        if not (s["state"] and s["shape"] == [] and
                s["init"] == {"kind": "zeros"}):
            fail("argument %d is not the step counter" % (3 * n))
        if len(results) != 3 * n + 2:
            fail("%d results, expected %d" % (len(results), 3 * n + 2))
        for r, res in enumerate(results[1:], start=1):
            if res["updates"] != r - 1:
                fail("result %d has tp.updates = %s, expected %d" % (
                    r, res["updates"], r - 1))
    else:
        if len(results) != n + 1:
            fail("%d results, expected %d" % (len(results), n + 1))
        for r, res in enumerate(results[1:]):
            if res["shape"] != args[r]["shape"]:
                fail("gradient %d has shape %s, expected %s" % (
                    r, res["shape"], args[r]["shape"]))
    if results[0]["shape"] != [] or results[0]["updates"] is not None:
        fail("result 0 is not the scalar loss")

    # Values.
    B, S, V = cfg["batch"], cfg["seq"], cfg["vocab"]
    values, params = [], {}
    for i, name_i in enumerate(names):
        a = args[i]
        init = a["init"]
        if "seed" in init and init["seed"] != fnv1a(name_i):
            fail("seed of %s is %d, expected %d" % (
                name_i, init["seed"], fnv1a(name_i)))
        # A generic point: the random initial weights (std 0.02) scaled to
        # std 0.4 and every value moved off its init by a small pattern, so that
        # the activations reach the non-linear parts of GELU, SiLU and
        # softmax and no bias or norm weight sits at 0 or 1.
        count = math.prod(a["shape"])
        k = np.arange(count)
        spread = opts.spread if "seed" in init else 1.0
        vals = (np.array(materialise(init, count)) * spread +
                0.05 * np.sin(1.3 * k + i))
        vals = f32(list(vals))
        params[name_i] = np.array(vals, dtype=np.float64).reshape(a["shape"])
        values.append(vals)
    state = {}
    if step_mode:
        for i in range(2 * n):
            count = math.prod(args[n + i]["shape"])
            k = np.arange(count)
            # m: small values of either sign; v: positive, of the order of g².
            vals = (1e-3 * np.sin(0.7 * k + i) if i < n else
                    1e-6 * (1.0 + np.cos(0.3 * k + i) ** 2))
            vals = f32(list(vals))
            state[i] = np.array(vals).reshape(args[n + i]["shape"])
            values.append(vals)
        values.append([3.0])
    ids = [(7 * i + 3) % V for i in range(B * S)]
    labels = [(13 * i + 5) % V for i in range(B * S)]
    values += [ids, labels]
    got = run(text, name, args, values, results, opts.mlir_opt)

    ids_np = np.array(ids).reshape(B, S)
    labels_np = np.array(labels).reshape(B, S)
    want_loss = ref.loss(cfg, params, ids_np, labels_np)
    loss_err = abs(float(got[0]) - want_loss) / abs(want_loss)
    if not loss_err < 1e-5:
        fail("the loss is %.9g, the reference %.9g" % (float(got[0]),
                                                         want_loss))
    print("%s: %s: the loss matches the float64 reference (relative error "
          "%.2g)" % (name, cfg["preset"], loss_err))
    fd = ref.finite_difference_grads(cfg, params, ids_np, labels_np)

    # A check point where some gradient vanishes (saturated softmax, dead
    # units) would test nothing there.
    norms = {nm: float(np.linalg.norm(fd[nm])) for nm in names}
    largest = max(norms.values())
    for nm in names:
        if norms[nm] < 1e-6 * largest:
            fail("the gradient of %s is negligible at the check point "
                 "(norm %.3g, largest %.3g)" % (nm, norms[nm], largest))

    if not step_mode:
        errors = [(rel(got[1 + i], fd[nm]), nm) for i, nm in enumerate(names)]
        worst, where = max(errors)
        for err, nm in errors:
            if not err <= opts.tolerance:
                fail("the gradient of %s differs from central differences: "
                     "relative error %.3g" % (nm, err))
        print("%s: %s: %d gradients match central differences; worst "
              "relative error %.2g (%s)" % (name, cfg["preset"], n, worst,
                                            where))
        return 0

    # @train_step: AdamW on the finite-difference gradients.
    worst, where = 0.0, ""
    decayed = 0
    for i, nm in enumerate(names):
        decay = args[i]["init"]["kind"] in ("normal", "uniform")
        decayed += decay
        p, m, v = ref.adamw(params[nm], fd[nm], state[i], state[n + i], 3,
                            cfg["lr"], cfg["beta1"], cfg["beta2"], cfg["eps"],
                            cfg["weight-decay"] if decay else 0.0)
        for what, g, w, base in [("parameter", got[1 + i], p, params[nm]),
                                 ("first moment", got[1 + n + i], m, None),
                                 ("second moment", got[1 + 2 * n + i], v,
                                  None)]:
            # Parameters: compare the updates, which are small next to the
            # parameters themselves.
            err = rel(g - base, w - base) if base is not None else rel(g, w)
            if err > worst:
                worst, where = err, "%s of %s" % (what, nm)
            if not err <= opts.tolerance:
                fail("the updated %s of %s differs from numpy's AdamW: "
                     "relative error %.3g" % (what, nm, err))
    if float(got[-1]) != 4.0:
        fail("step 3 became %g, expected 4" % float(got[-1]))
    print("%s: %s: AdamW updates of %d parameters (%d with weight decay) and "
          "their moments match numpy; worst relative error %.2g (%s); step "
          "3 -> 4" % (name, cfg["preset"], n, decayed, worst, where))
    return 0


if __name__ == "__main__":
    sys.exit(main())
