#!/usr/bin/env python3
"""Runs a tp-gen model on the CPU and compares it with a Python reference.

Usage: check-numerics.py MODEL.mlir --mlir-opt PATH

MODEL.mlir is tp-gen output (f32, any scope). The script
  1. reads the configuration from tp-gen's header comment and the arguments
     of @forward (types and tp.init descriptors);
  2. checks every parameter's seed against the names of docs/models.md in
     model order (FNV-1a 64 of the name, top bit cleared);
  3. materialises the parameters with the generator of docs/models.md and the
     inputs with fixed formulas, appends a @main that calls @forward and
     prints the result, lowers it with mlir-opt and runs it with the
     mlir-runner next to it (runtime libraries from ../lib);
  4. computes the same function in plain Python (double precision, written
     from the GPT-2 / Llama definitions, not from the IR) and compares.

Prints one line "numerics: ... match ..." and exits 0, or explains the
mismatch and exits 1.
"""

import argparse
import math
import os
import re
import struct
import sys

# The init contract's reference (docs/models.md), shared with the runner's
# tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "utils"))
from mlir_cpu_run import run_on_cpu  # noqa: E402
from tp_init import f32, fnv1a, layer_param_names, materialise  # noqa: E402


# --- Reading tp-gen output ---------------------------------------------------

def parse_header(text):
    """The flags and constants of the header comment tp-gen writes."""
    m = re.match(r"// tp-gen (.*?)  \((.*)\)$", text.splitlines()[0])
    if not m:
        sys.exit("error: no tp-gen header line")
    cfg = {}
    words = m.group(1).split()
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            cfg[word[2:]] = int(value) if value.isdigit() else value
        else:
            cfg[word[2:]] = True
    for part in m.group(2).split(", "):
        key, value = part.split(" ")
        cfg[key] = float(value)
    cfg["arch"] = cfg["model"]
    return cfg


def parse_init(attrs):
    """The tp.init descriptor in an argument's attributes, or None."""
    im = re.search(r"tp\.init = \{([^}]*)\}", attrs)
    if not im:
        return None
    init = {}
    for field in im.group(1).split(", "):
        key, value = field.split(" = ")
        value = value.split(" : ")[0]
        init[key] = value.strip('"') if value.startswith('"') else (
            int(value) if key == "seed" else float(value))
    return init


def parse_args(text):
    sig = re.search(r"func\.func @forward\((.*?)\) -> (.*?) \{\n", text)
    if not sig:
        sys.exit("error: no @forward")
    args = []
    for m in re.finditer(r"%arg\d+: tensor<([^>]*)>( \{[^}]*\}[^}]*\}| \{[^}]*\})?",
                         sig.group(1)):
        dims = m.group(1).split("x")
        shape, elt = [int(d) for d in dims[:-1]], dims[-1]
        attrs = m.group(2) or ""
        args.append({"shape": shape, "elt": elt, "init": parse_init(attrs),
                     "param": "tp.param" in attrs})
    return args, sig.group(2)


# --- The models in plain Python ---------------------------------------------

def param_names(cfg):
    names = []
    gpt2 = cfg["arch"] == "gpt2"
    embedding = cfg.get("with-embedding", False)
    blocks_only = cfg.get("blocks-only", False)
    if embedding:
        names += ["wte.weight", "wpe.weight"] if gpt2 else [
            "embed_tokens.weight"]
    for l in range(cfg["layers"]):
        names += layer_param_names(cfg["arch"], l)
    if not blocks_only:
        if gpt2:
            names += ["ln_f.weight", "ln_f.bias"]
            if not embedding:
                names.append("wte.weight")
        else:
            names += ["norm.weight", "lm_head.weight"]
    return names


def matmul(x, w, n):
    """x: rows of length k; w: flat [k, n]."""
    out = []
    for row in x:
        acc = [0.0] * n
        for kk, xv in enumerate(row):
            if xv == 0.0:
                continue
            base = kk * n
            for j in range(n):
                acc[j] += xv * w[base + j]
        out.append(acc)
    return out


def layer_norm(x, g, b, eps):
    out = []
    for row in x:
        mean = sum(row) / len(row)
        var = sum((v - mean) ** 2 for v in row) / len(row)
        r = 1.0 / math.sqrt(var + eps)
        out.append([(v - mean) * r * g[i] + b[i] for i, v in enumerate(row)])
    return out


def rms_norm(x, w, eps):
    out = []
    for row in x:
        r = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + eps)
        out.append([v * r * w[i] for i, v in enumerate(row)])
    return out


def attention(q, k, v, cfg, rope):
    """q: [T][heads*D], k/v: [T][kv*D] -> [T][heads*D], causal."""
    B, S, nh, nkv = cfg["batch"], cfg["seq"], cfg["heads"], cfg["kv-heads"]
    D = cfg["hidden"] // nh
    group = nh // nkv

    def head(rows, t, h):
        vec = rows[t][h * D:(h + 1) * D]
        if not rope:
            return vec
        pos, half = t % S, D // 2
        out = [0.0] * D
        for j in range(half):
            a = pos * cfg["rope-theta"] ** (-2.0 * j / D)
            c, s = math.cos(a), math.sin(a)
            out[j] = vec[j] * c - vec[j + half] * s
            out[j + half] = vec[j + half] * c + vec[j] * s
        return out

    ctx = [[0.0] * (nh * D) for _ in range(B * S)]
    for b in range(B):
        ks = [[head(k, b * S + t, g) for g in range(nkv)] for t in range(S)]
        vs = [[v[b * S + t][g * D:(g + 1) * D] for g in range(nkv)]
              for t in range(S)]
        for h in range(nh):
            g = h // group
            for s in range(S):
                qv = head(q, b * S + s, h)
                scores = [sum(a * c for a, c in zip(qv, ks[t][g])) /
                          math.sqrt(D) for t in range(s + 1)]
                m = max(scores)
                e = [math.exp(x - m) for x in scores]
                z = sum(e)
                for d in range(D):
                    ctx[b * S + s][h * D + d] = sum(
                        e[t] / z * vs[t][g][d] for t in range(s + 1))
    return ctx


def gelu(x):
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) *
                                      (x + 0.044715 * x ** 3)))


def reference(cfg, params, inputs):
    gpt2 = cfg["arch"] == "gpt2"
    H, F, V = cfg["hidden"], cfg["ffn"], cfg["vocab"]
    B, S, eps = cfg["batch"], cfg["seq"], cfg["norm-eps"]
    P = dict(params)
    if cfg.get("with-embedding"):
        ids = inputs["input_ids"]
        table = P["wte.weight" if gpt2 else "embed_tokens.weight"]
        x = []
        for t, tok in enumerate(ids):
            row = table[tok * H:(tok + 1) * H]
            if gpt2:
                pos = P["wpe.weight"][(t % S) * H:(t % S + 1) * H]
                row = [a + c for a, c in zip(row, pos)]
            x.append(row)
    else:
        hs = inputs["hidden_states"]
        x = [hs[t * H:(t + 1) * H] for t in range(B * S)]

    def add(a, c):
        return [[p + q for p, q in zip(r1, r2)] for r1, r2 in zip(a, c)]

    def bias(a, bb):
        return [[p + bb[i] for i, p in enumerate(r)] for r in a]

    for l in range(cfg["layers"]):
        if gpt2:
            p = "h.%d." % l
            h = layer_norm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"], eps)
            qkv = bias(matmul(h, P[p + "attn.c_attn.weight"], 3 * H),
                       P[p + "attn.c_attn.bias"])
            q = [r[:H] for r in qkv]
            k = [r[H:2 * H] for r in qkv]
            v = [r[2 * H:] for r in qkv]
            ctx = attention(q, k, v, cfg, rope=False)
            x = add(x, bias(matmul(ctx, P[p + "attn.c_proj.weight"], H),
                            P[p + "attn.c_proj.bias"]))
            h = layer_norm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"], eps)
            f = bias(matmul(h, P[p + "mlp.c_fc.weight"], F),
                     P[p + "mlp.c_fc.bias"])
            f = [[gelu(a) for a in r] for r in f]
            x = add(x, bias(matmul(f, P[p + "mlp.c_proj.weight"], H),
                            P[p + "mlp.c_proj.bias"]))
        else:
            p = "layers.%d." % l
            KV = cfg["kv-heads"] * (H // cfg["heads"])
            h = rms_norm(x, P[p + "input_layernorm.weight"], eps)
            q = matmul(h, P[p + "self_attn.q_proj.weight"], H)
            k = matmul(h, P[p + "self_attn.k_proj.weight"], KV)
            v = matmul(h, P[p + "self_attn.v_proj.weight"], KV)
            ctx = attention(q, k, v, cfg, rope=True)
            x = add(x, matmul(ctx, P[p + "self_attn.o_proj.weight"], H))
            h = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
            g = matmul(h, P[p + "mlp.gate_proj.weight"], F)
            u = matmul(h, P[p + "mlp.up_proj.weight"], F)
            a = [[gv / (1.0 + math.exp(-gv)) * uv for gv, uv in zip(r1, r2)]
                 for r1, r2 in zip(g, u)]
            x = add(x, matmul(a, P[p + "mlp.down_proj.weight"], H))
    if cfg.get("blocks-only"):
        return [v for r in x for v in r]
    if gpt2:
        h = layer_norm(x, P["ln_f.weight"], P["ln_f.bias"], eps)
        wte = P["wte.weight"]
        # Tied head: logits = h · wteᵀ.
        logits = [[sum(a * wte[vv * H + i] for i, a in enumerate(r))
                   for vv in range(V)] for r in h]
    else:
        h = rms_norm(x, P["norm.weight"], eps)
        logits = matmul(h, P["lm_head.weight"], V)
    if not cfg.get("with-loss"):
        return [v for r in logits for v in r]
    labels = inputs["labels"]
    total = 0.0
    for r, lab in zip(logits, labels):
        m = max(r)
        total += m + math.log(sum(math.exp(a - m) for a in r)) - r[lab]
    return [total / len(labels)]


# --- Running the IR -----------------------------------------------------------

def dense(values, shape, elt):
    fmt = {"f32": "f", "i64": "q"}[elt]
    data = struct.pack("<%d%s" % (len(values), fmt), *values)
    return 'dense<"0x%s"> : tensor<%sx%s>' % (
        data.hex().upper(), "x".join(map(str, shape)), elt)


def run_ir(text, args, values, result_type, mlir_opt):
    rm = re.match(r"tensor<(?:([\dx]*)x)?f32>", result_type)
    if not rm:
        sys.exit("error: unsupported result type " + result_type)
    lines = ["  func.func private @printMemrefF32(memref<*xf32>)",
             "  func.func @main() {"]
    names = []
    for i, (arg, vals) in enumerate(zip(args, values)):
        lines.append("    %%v%d = arith.constant %s" %
                     (i, dense(vals, arg["shape"], arg["elt"])))
        names.append("%%v%d" % i)
    types = ", ".join("tensor<%sx%s>" % ("x".join(map(str, a["shape"])),
                                         a["elt"]) for a in args)
    memref = "memref<%s>" % result_type[len("tensor<"):-1]
    lines += [
        "    %%r = func.call @forward(%s) : (%s) -> %s" % (
            ", ".join(names), types, result_type),
        "    %%m = bufferization.to_buffer %%r : %s to %s" % (result_type,
                                                            memref),
        "    %%u = memref.cast %%m : %s to memref<*xf32>" % memref,
        "    func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()",
        "    return", "  }"]
    end = text.rstrip().rfind("}")
    program = text[:end] + "\n".join(lines) + "\n}\n"
    data = run_on_cpu(program, mlir_opt).split("data =", 1)[1]
    return [float(v) for v in re.findall(r"-?(?:nan|inf|[\d.]+(?:e[-+]?\d+)?)",
                                         data)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--mlir-opt", required=True)
    opts = parser.parse_args()
    text = open(opts.model).read()
    cfg = parse_header(text)
    if cfg["dtype"] != "f32":
        sys.exit("error: only f32 models are checked")
    args, result_type = parse_args(text)
    names = param_names(cfg)
    params = [a for a in args if a["param"]]
    if len(names) != len(params):
        sys.exit("error: %d parameters, expected %d" % (len(params),
                                                        len(names)))
    B, S, H, V = cfg["batch"], cfg["seq"], cfg["hidden"], cfg["vocab"]
    values, named, inputs = [], [], {}
    pi = 0
    for arg in args:
        count = math.prod(arg["shape"])
        if arg["param"]:
            name = names[pi]
            pi += 1
            init = arg["init"]
            if "seed" in init and init["seed"] != fnv1a(name):
                sys.exit("error: seed of %s is %d, expected %d" % (
                    name, init["seed"], fnv1a(name)))
            vals = f32(materialise(init, count))
            named.append((name, vals))
        elif arg["elt"] == "i64":
            key = "labels" if "input_ids" in inputs or not cfg.get(
                "with-embedding") else "input_ids"
            mult, add = (7, 3) if key == "input_ids" else (13, 5)
            vals = [(mult * i + add) % V for i in range(count)]
            inputs[key] = vals
        else:
            vals = f32([math.sin(0.37 * i) for i in range(count)])
            inputs["hidden_states"] = vals
        values.append(vals)
    got = run_ir(text, args, values, result_type, opts.mlir_opt)
    want = reference(cfg, named, inputs)
    if len(got) != len(want):
        sys.exit("error: %d results, expected %d" % (len(got), len(want)))
    worst = max(abs(g - w) / (1e-3 + abs(w)) for g, w in zip(got, want))
    what = "the loss" if len(want) == 1 else "%d result values" % len(want)
    if not worst < 1e-3:
        print("numerics: %s: MISMATCH of %s, worst relative error %.3g" % (
            cfg["preset"], what, worst))
        return 1
    print("numerics: %s: %s within 1e-3 of the Python reference; seeds of "
          "%d parameters match their names" % (cfg["preset"], what,
                                               len(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
