#!/usr/bin/env python3
"""Emit a random, valid tensor program in upstream MLIR dialects.

Used by bench/fuzz.sh: each program is planned, partitioned and run on
several ranks with `tp-run --check`, which compares the sharded run against
the unsharded one. The generator draws from the ops a Transformer uses and
combines them in random orders and shapes:

  * matmuls against parameters (linalg.matmul and batched 3-D contractions
    as linalg.generic), with biases;
  * element-wise ops (tanh, relu, square, scaling) and residual adds with an
    earlier value of the same shape;
  * row reductions (sum, max) broadcast back, as norms and softmax do;
  * reshapes (tensor.expand_shape / tensor.collapse_shape) and transposes;
  * concatenation and slicing along a dimension.

Shapes are small (the CPU run takes well under a second) and often not
divisible by the device count, to exercise replication and padding.

  utils/random-program.py --seed 7 [--tp 4] > program.mlir
"""

import argparse
import random
import sys


class Program:
    def __init__(self, rng, tp):
        self.rng = rng
        self.tp = tp
        self.args = []  # (name, type, attrs)
        self.lines = []
        self.next_id = 0
        self.values = []  # (name, shape) of rank-2 values, for residuals

    def fresh(self):
        self.next_id += 1
        return "%v{}".format(self.next_id)

    @staticmethod
    def ty(shape):
        return "tensor<{}xf32>".format("x".join(str(d) for d in shape))

    def param(self, shape, kind="normal"):
        name = "%arg{}".format(len(self.args))
        if kind == "normal":
            std = 1.0 / max(1, shape[0]) ** 0.5
            init = '{{kind = "normal", seed = {} : i64, std = {:.6f} : f64}}'.format(
                self.rng.randrange(1, 1 << 31), std)
        else:
            init = '{{kind = "{}"}}'.format(kind)
        self.args.append((name, self.ty(shape),
                          " {{tp.init = {}, tp.param}}".format(init)))
        return name

    def input(self, shape):
        name = "%arg{}".format(len(self.args))
        self.args.append((name, self.ty(shape), ""))
        return name

    def emit(self, line):
        self.lines.append("    " + line)

    def empty(self, shape, fill=None):
        e = self.fresh()
        self.emit("{} = tensor.empty() : {}".format(e, self.ty(shape)))
        if fill is None:
            return e
        c = self.fresh()
        self.emit("{} = arith.constant {} : f32".format(c, fill))
        f = self.fresh()
        self.emit("{} = linalg.fill ins({} : f32) outs({} : {}) -> {}".format(
            f, c, e, self.ty(shape), self.ty(shape)))
        return f

    @staticmethod
    def amap(n, dims):
        ds = ", ".join("d{}".format(i) for i in range(n))
        return "affine_map<({}) -> ({})>".format(
            ds, ", ".join("d{}".format(i) for i in dims))

    def generic(self, ins, out, out_shape, maps, iters, body):
        """ins: [(value, shape)]; body: lines using %a0.. and %out."""
        r = self.fresh()
        ins_s = ", ".join(v for v, _ in ins)
        ins_t = ", ".join(self.ty(s) for _, s in ins)
        self.emit("{} = linalg.generic {{indexing_maps = [{}], iterator_types = [{}]}} "
                  "ins({} : {}) outs({} : {}) {{".format(
                      r, ", ".join(maps), ", ".join('"{}"'.format(i) for i in iters),
                      ins_s, ins_t, out, self.ty(out_shape)))
        block_args = ", ".join("%a{}: f32".format(i) for i in range(len(ins)))
        self.emit("^bb0({}{}%out: f32):".format(block_args, ", " if ins else ""))
        for line in body:
            self.emit("  " + line)
        self.emit("}} -> {}".format(self.ty(out_shape)))
        return r

    # --- ops -------------------------------------------------------------
    def matmul(self, x, shape):
        m, k = shape
        n = self.dim()
        w = self.param([k, n])
        acc = self.empty([m, n], "0.0")
        r = self.fresh()
        self.emit("{} = linalg.matmul ins({}, {} : {}, {}) outs({} : {}) -> {}".format(
            r, x, w, self.ty([m, k]), self.ty([k, n]), acc, self.ty([m, n]),
            self.ty([m, n])))
        if self.rng.random() < 0.6:
            b = self.param([n], self.rng.choice(["normal", "zeros"]))
            out = self.empty([m, n])
            r = self.generic([(r, [m, n]), (b, [n])], out, [m, n],
                             [self.amap(2, [0, 1]), self.amap(2, [1]), self.amap(2, [0, 1])],
                             ["parallel", "parallel"],
                             ["%s = arith.addf %%a0, %%a1 : f32" % "%t",
                              "linalg.yield %t : f32"])
        return r, [m, n]

    def unary(self, x, shape):
        op = self.rng.choice(["tanh", "relu", "square", "scale"])
        body = {
            "tanh": ["%t = math.tanh %a0 : f32"],
            "relu": ["%z = arith.constant 0.0 : f32", "%t = arith.maximumf %a0, %z : f32"],
            "square": ["%t = arith.mulf %a0, %a0 : f32"],
            "scale": ["%c = arith.constant 0.5 : f32", "%t = arith.mulf %a0, %c : f32"],
        }[op] + ["linalg.yield %t : f32"]
        out = self.empty(shape)
        ident = self.amap(len(shape), range(len(shape)))
        return self.generic([(x, shape)], out, shape, [ident, ident],
                            ["parallel"] * len(shape), body), shape

    def residual(self, x, shape):
        same = [v for v, s in self.values if s == shape and v != x]
        if not same:
            return self.unary(x, shape)
        y = self.rng.choice(same)
        out = self.empty(shape)
        ident = self.amap(2, [0, 1])
        return self.generic([(x, shape), (y, shape)], out, shape, [ident] * 3,
                            ["parallel", "parallel"],
                            ["%t = arith.addf %a0, %a1 : f32", "linalg.yield %t : f32"]), shape

    def row_norm(self, x, shape):
        """A row statistic (sum or max over the last dim) broadcast back."""
        m, n = shape
        kind = self.rng.choice(["sum", "max"])
        acc = self.empty([m], "0.0" if kind == "sum" else "-3.0e+38")
        red = ("%t = arith.addf %a0, %out : f32" if kind == "sum"
               else "%t = arith.maximumf %a0, %out : f32")
        s = self.generic([(x, shape)], acc, [m],
                         [self.amap(2, [0, 1]), self.amap(2, [0])],
                         ["parallel", "reduction"], [red, "linalg.yield %t : f32"])
        out = self.empty(shape)
        scale = 1.0 / n
        body = (["%c = arith.constant {:e} : f32".format(scale),
                 "%u = arith.mulf %a1, %c : f32",
                 "%t = arith.subf %a0, %u : f32"] if kind == "sum"
                else ["%d = arith.subf %a0, %a1 : f32", "%t = math.exp %d : f32"])
        r = self.generic([(x, shape), (s, [m])], out, shape,
                         [self.amap(2, [0, 1]), self.amap(2, [0]), self.amap(2, [0, 1])],
                         ["parallel", "parallel"], body + ["linalg.yield %t : f32"])
        return r, shape

    def transpose(self, x, shape):
        m, n = shape
        out = self.empty([n, m])
        r = self.generic([(x, shape)], out, [n, m],
                         [self.amap(2, [1, 0]), self.amap(2, [0, 1])],
                         ["parallel", "parallel"], ["linalg.yield %a0 : f32"])
        return r, [n, m]

    def heads(self, x, shape):
        """Split the last dim into [heads, d], act per head, collapse back."""
        m, n = shape
        divisors = [h for h in range(2, n) if n % h == 0]
        if not divisors:
            return self.unary(x, shape)
        h = self.rng.choice(divisors)
        d = n // h
        e = self.fresh()
        self.emit("{} = tensor.expand_shape {} [[0], [1, 2]] output_shape [{}, {}, {}] : {} into {}".format(
            e, x, m, h, d, self.ty(shape), self.ty([m, h, d])))
        if self.rng.random() < 0.5:
            # A per-head contraction against a [h, d, d2] parameter.
            d2 = self.rng.choice([2, 3, 4])
            w = self.param([h, d, d2])
            acc = self.empty([m, h, d2], "0.0")
            r3 = self.generic([(e, [m, h, d]), (w, [h, d, d2])], acc, [m, h, d2],
                              [self.amap(4, [0, 1, 3]), self.amap(4, [1, 3, 2]),
                               self.amap(4, [0, 1, 2])],
                              ["parallel", "parallel", "parallel", "reduction"],
                              ["%p = arith.mulf %a0, %a1 : f32",
                               "%t = arith.addf %out, %p : f32", "linalg.yield %t : f32"])
            d = d2
        else:
            r3, _ = self.unary(e, [m, h, d])
        c = self.fresh()
        self.emit("{} = tensor.collapse_shape {} [[0], [1, 2]] : {} into {}".format(
            c, r3, self.ty([m, h, d]), self.ty([m, h * d])))
        return c, [m, h * d]

    def concat(self, x, shape):
        same = [v for v, s in self.values if s[0] == shape[0] and v != x]
        if not same:
            return self.unary(x, shape)
        y = self.rng.choice(same)
        ys = [s for v, s in self.values if v == y][0]
        r = self.fresh()
        out = [shape[0], shape[1] + ys[1]]
        self.emit("{} = tensor.concat dim(1) {}, {} : ({}, {}) -> {}".format(
            r, x, y, self.ty(shape), self.ty(ys), self.ty(out)))
        return r, out

    def slice(self, x, shape):
        m, n = shape
        if n < 4:
            return self.unary(x, shape)
        lo = self.rng.randrange(0, n // 2)
        size = self.rng.randrange(2, n - lo + 1)
        r = self.fresh()
        self.emit("{} = tensor.extract_slice {}[0, {}] [{}, {}] [1, 1] : {} to {}".format(
            r, x, lo, m, size, self.ty(shape), self.ty([m, size])))
        return r, [m, size]

    def dim(self):
        return self.rng.choice([4, 6, 8, 12, 16, 24, 32])

    def build(self, steps):
        m = self.rng.choice([2, 4, 6, 8, 16])
        x = self.input([m, self.dim()])
        shape = [m, int(self.args[0][1].split("x")[1])]
        self.values.append((x, shape))
        ops = [(self.matmul, 5), (self.unary, 2), (self.residual, 2),
               (self.row_norm, 2), (self.heads, 2), (self.transpose, 1),
               (self.concat, 1), (self.slice, 1)]
        names = [o for o, _ in ops]
        weights = [w for _, w in ops]
        for _ in range(steps):
            op = self.rng.choices(names, weights)[0]
            x, shape = op(x, shape)
            if len(shape) == 2 and shape[1] > 64:
                x, shape = self.slice(x, shape)
            self.values.append((x, list(shape)))
        if shape[0] != m:
            x, shape = self.transpose(x, shape)
        return x, shape

    def text(self, result, shape):
        args = ", ".join("{}: {}{}".format(n, t, a) for n, t, a in self.args)
        out = ["// utils/random-program.py", "module {",
               "  func.func @main({}) -> {} {{".format(args, self.ty(shape))]
        out += self.lines
        out.append("    return {} : {}".format(result, self.ty(shape)))
        out += ["  }", "}"]
        return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0,
                        help="ops to chain (default: 3 to 12, from the seed)")
    parser.add_argument("--tp", type=int, default=4)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    prog = Program(rng, args.tp)
    steps = args.steps or rng.randrange(3, 13)
    result, shape = prog.build(steps)
    text = prog.text(result, shape)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
