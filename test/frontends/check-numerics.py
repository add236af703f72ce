#!/usr/bin/env python3
"""Runs an imported fixture on the CPU and compares it with PyTorch's output.

Usage: check-numerics.py MODEL.mlir --weights W.safetensors
                         --reference REF.safetensors --mlir-opt PATH
                         [--rtol R] [--atol A]

MODEL.mlir is tp-import output (test/frontends/Inputs). The weights file names
the `tp.param` arguments by their `tp.name` (f32, or bf16/f16 widened); the
reference holds `input_ids` and `logits` (and `loss` when the module returns
it), as tp-import --reference writes them. The script appends a driver that
feeds the weights and ids as constants to @main (renamed) and prints each
result, lowers it with upstream passes and runs it with the mlir-runner next
to mlir-opt (utils/mlir_cpu_run.py), and compares element by element.

Pure Python (safetensors read by hand): no torch needed. Prints one line
"numerics: NAME: ... match ..." and exits 0, or explains and exits 1.
"""

import argparse
import json
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "utils"))
from mlir_cpu_run import run_on_cpu  # noqa: E402

DT = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "I32": ("i", 4),
      "BF16": (None, 2), "F16": ("e", 2)}


def read_safetensors(path):
    """{name: (dtype, shape, [values])}, values as Python numbers."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], info["shape"]
        a, b = info["data_offsets"]
        raw = data[a:b]
        fmt, size = DT[dtype]
        count = len(raw) // size
        if dtype == "BF16":
            vals = [struct.unpack("<f", b"\0\0" + raw[2 * i:2 * i + 2])[0]
                    for i in range(count)]
        else:
            vals = list(struct.unpack("<%d%s" % (count, fmt), raw))
        out[name] = (dtype, shape, vals)
    return out


def read_folder(folder):
    """A Hugging Face folder: the shards named by model.safetensors.index.json
    (or model.safetensors)."""
    index = os.path.join(folder, "model.safetensors.index.json")
    files = [os.path.join(folder, "model.safetensors")]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted({os.path.join(folder, v) for v in
                            json.load(f)["weight_map"].values()})
    out = {}
    for p in files:
        out.update(read_safetensors(p))
    return out


SIG = re.compile(r"^  func\.func @main\((.*)\) -> (.*) \{$", re.M)
ARG = re.compile(r"%arg(\d+): (tensor<[^>]*>)(?: \{([^}]*)\})?")
RES = re.compile(r"(tensor<[^>]*>)(?: \{([^}]*)\})?")


def tp_name(attrs):
    m = re.search(r'tp\.name = "([^"]*)"', attrs or "")
    return m.group(1) if m else None


def dense(values, type_str):
    elt = re.match(r"tensor<(?:[\dx]*x)?(\w+)>", type_str).group(1)
    fmt = {"f32": "f", "i64": "q", "f64": "d", "i32": "i"}.get(elt)
    if fmt is None:
        sys.exit("error: cannot feed %s" % type_str)
    data = struct.pack("<%d%s" % (len(values), fmt), *values)
    return 'dense<"0x%s"> : %s' % (data.hex().upper(), type_str)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--weights", required=True,
                   help="a .safetensors file or a Hugging Face folder")
    p.add_argument("--reference", required=True)
    p.add_argument("--mlir-opt", required=True)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    o = p.parse_args()

    text = open(o.model).read()
    m = SIG.search(text)
    if not m:
        sys.exit("error: no func.func @main on one line")
    args = [(int(a.group(1)), a.group(2), a.group(3))
            for a in ARG.finditer(m.group(1))]
    results = RES.findall(m.group(2).strip("()"))
    weights = (read_folder(o.weights) if os.path.isdir(o.weights)
               else read_safetensors(o.weights))
    ref = read_safetensors(o.reference)

    # The module without tp attributes, @main renamed to @model.
    sig_start, sig_end = m.span()
    plain_sig = re.sub(r" \{[^}]*\}", "", m.group(0)).replace(
        "@main(", "@model(", 1)
    body = text[:sig_start] + plain_sig + text[sig_end:]
    body, sep, resources = body.partition("\n{-#")
    end = body.rstrip().rfind("}")
    if end < 0:
        sys.exit("error: no module")

    lines = []
    for r_type, _ in results:
        if "f32" not in r_type:
            sys.exit("error: result %s is not f32" % r_type)
    lines.append("  func.func private @printMemrefF32(memref<*xf32>)")
    lines.append("  func.func @main() {")
    operands, types = [], []
    fed = 0
    for idx, type_str, attrs in args:
        name = tp_name(attrs)
        src = ref if name == "input_ids" else weights
        if name not in src:
            sys.exit("error: argument %d (%s) is in neither file" % (idx, name))
        dtype, shape, vals = src[name]
        want = [int(d) for d in re.match(r"tensor<([\dx]*)x?\w+>",
                                         type_str).group(1).split("x") if d]
        if list(shape) != want:
            sys.exit("error: %s has shape %s in the file, %s in the IR"
                     % (name, shape, want))
        if "tp.param" in (attrs or ""):
            fed += 1
        lines.append("    %%a%d = arith.constant %s" % (idx, dense(vals, type_str)))
        operands.append("%%a%d" % idx)
        types.append(type_str)
    rtypes = [t for t, _ in results]
    lines.append("    %s = func.call @model(%s) : (%s) -> (%s)" % (
        ", ".join("%%r%d" % i for i in range(len(rtypes))), ", ".join(operands),
        ", ".join(types), ", ".join(rtypes)))
    for i, t in enumerate(rtypes):
        memref = "memref<%s>" % t[len("tensor<"):-1]
        lines += ["    %%m%d = bufferization.to_buffer %%r%d : %s to %s"
                  % (i, i, t, memref),
                  "    %%u%d = memref.cast %%m%d : %s to memref<*xf32>"
                  % (i, i, memref),
                  "    func.call @printMemrefF32(%%u%d) : (memref<*xf32>) -> ()"
                  % i]
    lines += ["    return", "  }"]
    program = body[:end] + "\n".join(lines) + "\n}\n" + (
        sep + resources if sep else "")

    out = run_on_cpu(program, o.mlir_opt)
    chunks = out.split("Unranked Memref")[1:]
    if len(chunks) != len(results):
        sys.exit("error: %d results printed, expected %d" % (len(chunks),
                                                             len(results)))
    name = os.path.basename(o.model)
    report = []
    bad = False
    for (r_type, attrs), chunk in zip(results, chunks):
        rname = tp_name(attrs) or "result"
        got = [float(v) for v in re.findall(
            r"-?(?:nan|inf|\d+\.?\d*(?:e[-+]?\d+)?)", chunk.split("data =", 1)[1])]
        if rname not in ref:
            sys.exit("error: the reference has no %r" % rname)
        want = ref[rname][2]
        if len(got) != len(want):
            sys.exit("error: %s: %d values, the reference has %d"
                     % (rname, len(got), len(want)))
        worst, worst_i = 0.0, 0
        for i, (g, w) in enumerate(zip(got, want)):
            err = abs(g - w) - (o.atol + o.rtol * abs(w))
            if err > worst or g != g:
                worst, worst_i = (err if g == g else float("inf")), i
        maxabs = max(abs(g - w) for g, w in zip(got, want))
        if worst > 0:
            bad = True
            report.append("%s MISMATCH at %d: got %g, PyTorch %g (max |diff| %g)"
                          % (rname, worst_i, got[worst_i], want[worst_i], maxabs))
        else:
            report.append("%s %d values match (max |diff| %.2g)"
                          % (rname, len(got), maxabs))
    print("numerics: %s: %d params fed; %s" % (name, fed, "; ".join(report)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
