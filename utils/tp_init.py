"""The initialisation contract of docs/models.md, in plain Python.

The one reference the test helpers share (test/runner/Inputs/check-output.py,
test/tp-gen/Inputs/check-numerics.py, test/tp-gen/Inputs/check-grads.py,
utils/train_reference.py), written from the document, not from the C++ of
tp-runner: element i (flat, global, row-major) of a tensor with a `tp.init`
descriptor, the parameter names of a decoder block and the seed a name
gives.
"""

import math
import struct

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def fnv1a(name):
    """The seed of the parameter called `name`: FNV-1a 64 of the name, top
    bit cleared."""
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & MASK
    return h & 0x7FFFFFFFFFFFFFFF


def f32(values):
    """Rounds doubles to f32, as the parameter's storage type does."""
    return list(struct.unpack("<%df" % len(values),
                              struct.pack("<%df" % len(values), *values)))


def layer_param_names(arch, layer):
    """The parameters of decoder block `layer` of a gpt2 or llama model, in
    model order."""
    if arch == "gpt2":
        p = "h.%d." % layer
        return [p + n for n in [
            "ln_1.weight", "ln_1.bias", "attn.c_attn.weight",
            "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
            "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
            "mlp.c_proj.weight", "mlp.c_proj.bias"]]
    p = "layers.%d." % layer
    return [p + n for n in [
        "input_layernorm.weight", "self_attn.q_proj.weight",
        "self_attn.k_proj.weight", "self_attn.v_proj.weight",
        "self_attn.o_proj.weight", "post_attention_layernorm.weight",
        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"]]


def splitmix64(x):
    z = (x + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def unit(x):
    """A double in (0, 1] from the top 53 bits of splitmix64(x)."""
    return ((splitmix64(x & MASK) >> 11) + 1) * 2.0**-53


def element(init, i):
    """Element i (flat, global, row-major) of a buffer with this init."""
    kind = init["kind"]
    if kind == "zeros":
        return 0
    if kind == "ones":
        return 1
    base = (init["seed"] * GOLDEN) & MASK
    if kind == "integers":
        return splitmix64((base + i) & MASK) % init["high"]
    u1 = unit(base + 2 * i)
    if kind == "uniform":
        return init["scale"] * (2.0 * u1 - 1.0)
    u2 = unit(base + 2 * i + 1)
    return (init["std"] * math.sqrt(-2.0 * math.log(u1)) *
            math.cos(2.0 * math.pi * u2))


def materialise(init, count):
    """The first `count` elements, as doubles."""
    return [float(element(init, i)) for i in range(count)]
