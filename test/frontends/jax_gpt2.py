#!/usr/bin/env python3
"""GPT-2 in JAX, lowered to StableHLO and converted to linalg by IREE's input
pipeline: Inputs/gpt2-jax-tiny.mlir (test/frontends/README.md).

  /root/jaxvenv/bin/python test/frontends/jax_gpt2.py \
      --weights test/frontends/Inputs/gpt2-tiny.safetensors \
      --reference test/frontends/Inputs/gpt2-tiny.ref.safetensors \
      --iree-opt /root/jaxvenv/bin/iree-opt -o test/frontends/Inputs/gpt2-jax-tiny.mlir

The model is written from the GPT-2 definition (Hugging Face
GPT2LMHeadModel: Conv1D [in, out] weights, fused c_attn, gelu_new, LayerNorm
eps 1e-5, tied lm_head) and takes the parameters of gpt2-tiny.safetensors as
arguments, in that file's named_parameters() order (taken from gpt2-tiny.mlir's
signature), so the fixture has the same weights-as-arguments contract as
tp-import's: `{tp.name = "input_ids"}`, then `{tp.name = "<PyTorch name>",
tp.param}`, result `{tp.name = "logits"}`. Before writing, the JAX logits are
compared with PyTorch's (the reference file). Needs jax and
iree-base-compiler (a separate venv: pip install jax iree-base-compiler==3.13.*).
"""

import argparse
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    dt = {"F32": np.float32, "I64": np.int64}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=dt[info["dtype"]]).reshape(
            info["shape"]).copy()
    return out


def param_order(mlir_path):
    """The tp.param names of a tp-import module, in argument order."""
    text = open(mlir_path).read()
    line = next(l for l in text.splitlines() if "func.func @main" in l)
    return re.findall(r'\{tp\.name = "([^"]*)", tp\.param\}', line)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weights", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--order", help="tp-import module whose signature gives "
                   "the parameter order (default: WEIGHTS with .mlir)")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--iree-opt", default="iree-opt")
    p.add_argument("-o", "--output", required=True)
    o = p.parse_args()

    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)   # int64 ids, as PyTorch's

    weights = read_safetensors(o.weights)
    ref = read_safetensors(o.reference)
    order = param_order(o.order or re.sub(r"\.safetensors$", ".mlir",
                                          o.weights))
    names = order
    ids = ref["input_ids"].astype(np.int64)
    layers = 1 + max(int(m.group(1)) for m in
                     (re.match(r"transformer\.h\.(\d+)\.", n) for n in names) if m)
    H = weights["transformer.wte.weight"].shape[1]
    nh = o.heads
    D = H // nh

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    def gelu_new(x):
        return 0.5 * x * (1.0 + jnp.tanh(0.7978845608028654 *
                                         (x + 0.044715 * x ** 3)))

    def forward(input_ids, *params):
        P = dict(zip(names, params))
        B, S = input_ids.shape
        x = P["transformer.wte.weight"][input_ids] + \
            P["transformer.wpe.weight"][jnp.arange(S)][None]
        causal = jnp.tril(jnp.ones((S, S), dtype=bool))
        for l in range(layers):
            pre = "transformer.h.%d." % l
            h = layer_norm(x, P[pre + "ln_1.weight"], P[pre + "ln_1.bias"])
            qkv = h @ P[pre + "attn.c_attn.weight"] + P[pre + "attn.c_attn.bias"]
            q, k, v = jnp.split(qkv, 3, axis=-1)
            heads = lambda t: t.reshape(B, S, nh, D).transpose(0, 2, 1, 3)
            q, k, v = heads(q), heads(k), heads(v)
            s = (q @ k.transpose(0, 1, 3, 2)) / jnp.sqrt(jnp.float32(D))
            s = jnp.where(causal, s, jnp.finfo(jnp.float32).min)
            a = jax.nn.softmax(s, axis=-1) @ v
            a = a.transpose(0, 2, 1, 3).reshape(B, S, H)
            x = x + a @ P[pre + "attn.c_proj.weight"] + P[pre + "attn.c_proj.bias"]
            h = layer_norm(x, P[pre + "ln_2.weight"], P[pre + "ln_2.bias"])
            h = gelu_new(h @ P[pre + "mlp.c_fc.weight"] + P[pre + "mlp.c_fc.bias"])
            x = x + h @ P[pre + "mlp.c_proj.weight"] + P[pre + "mlp.c_proj.bias"]
        x = layer_norm(x, P["transformer.ln_f.weight"], P["transformer.ln_f.bias"])
        return x @ P["transformer.wte.weight"].T

    params = [jnp.asarray(weights[n]) for n in names]
    logits = np.asarray(jax.jit(forward)(jnp.asarray(ids), *params))
    diff = float(np.max(np.abs(logits - ref["logits"])))
    print("jax vs PyTorch logits: max |diff| %.3g" % diff)
    if diff > 1e-4:
        sys.exit("error: the JAX model does not compute PyTorch's logits")

    lowered = jax.jit(forward).lower(jnp.asarray(ids), *params)
    stablehlo = lowered.as_text()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "gpt2.stablehlo.mlir")
        with open(src, "w") as f:
            f.write(stablehlo)
        r = subprocess.run([o.iree_opt, src,
                            "--iree-stablehlo-input-transformation-pipeline"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("error: iree-opt failed:\n" + r.stderr[-3000:])
        text = r.stdout

    # The weights-as-arguments contract, by rewriting the signature of the
    # public function (the body is kept as IREE printed it).
    m = re.search(r"^(\s*)func\.func (?:public )?@(\w+)\((.*?)\) -> (.*?) "
                  r"(?:attributes \{[^\n]*\} )?\{$", text, re.M)
    if not m:
        sys.exit("error: no public func.func in iree-opt's output")
    args = re.findall(r"(%arg\d+): (tensor<[^>]*>)(?: \{[^}]*\})?", m.group(3))
    if len(args) != 1 + len(names):
        sys.exit("error: %d arguments, expected %d" % (len(args), 1 + len(names)))
    new_args = ['%s: %s {tp.name = "input_ids"}' % args[0]]
    for (a, t), n in zip(args[1:], names):
        new_args.append('%s: %s {tp.name = "%s", tp.param}' % (a, t, n))
    res = m.group(4).strip()
    if res.startswith("("):
        res = res[1:-1]
    res = re.sub(r" \{[^}]*\}", "", res)
    sig = '%sfunc.func @main(%s) -> (%s {tp.name = "logits"}) {' % (
        m.group(1), ", ".join(new_args), res)
    text = text[:m.start()] + sig + text[m.end():]
    text = re.sub(r"@%s\b" % re.escape(m.group(2)), "@main", text) \
        if m.group(2) != "main" else text

    header = ("// Generated by: %s\n// jax %s, iree-base-compiler %s "
              "(iree-opt --iree-stablehlo-input-transformation-pipeline)\n"
              % (shlex.join(["test/frontends/jax_gpt2.py"] + sys.argv[1:]),
                 jax.__version__, iree_version()))
    with open(o.output, "w") as f:
        f.write(header + text)
    return 0


def iree_version():
    try:
        import importlib.metadata as md
        return md.version("iree-base-compiler")
    except Exception:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
