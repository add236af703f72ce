"""Megatron-LM's hand plan for a front-end fixture (test/frontends), as the
yardstick of plan quality: the communication volume per device of its
forward pass, for the same output contract as the fixture.

  * vocabulary-parallel embedding: 1 all-reduce of [tokens, hidden];
  * per layer: 2 all-reduces of [tokens, hidden] (after the row-parallel
    attention output and MLP down projections);
  * column-parallel LM head: the logits are a replicated result, so
    1 all-gather of [tokens, vocab] (the vocabulary padded to a multiple of
    the group, as Megatron pads it).

Wire bytes per device as the cost model counts them (ring algorithms):
all-reduce 2(t-1)/t x M, all-gather (t-1)/t x M (M: the full message).
Shapes are read off the fixture's @main signature (tp.name attributes)
and the heads off test/frontends/Inputs/MANIFEST.md.
"""
import os
import re

EMBED = re.compile(r"(embed_tokens|wte|word_embeddings|embed_in)\.weight$")


def fixture_shapes(path):
    """(tokens, hidden, vocab, layers, element bytes) of a fixture."""
    text = open(path).read()
    sig = text[text.index("func.func @main"):]
    sig = sig[:sig.index("{\n")]
    args = re.findall(r"%\w+: tensor<([0-9x]+)x(\w+)> \{([^}]*)\}", sig)
    tokens = hidden = vocab = None
    ebytes = 4
    layers = set()
    for shape, elem, attrs in args:
        dims = [int(d) for d in shape.split("x")]
        name = re.search(r'tp\.name = "([^"]+)"', attrs)
        name = name.group(1) if name else ""
        if name == "input_ids":
            tokens = 1
            for d in dims:
                tokens *= d
        if EMBED.search(name):
            vocab, hidden = dims
            ebytes = 2 if elem in ("bf16", "f16") else 4
        m = re.search(r"\.(\d+)\.", name)
        if m:
            layers.add(int(m.group(1)))
    layers = len(layers)
    if hidden is None:
        # Weights baked in as constants (an ONNX import): the sizes of the
        # fixture's config, from the MANIFEST.md next to it.
        manifest = os.path.join(os.path.dirname(path), "MANIFEST.md")
        name = os.path.basename(path)[:-len(".mlir")]
        dims = manifest_dims(manifest) if os.path.exists(manifest) else {}
        if name in dims:
            hidden, vocab, layers = dims[name]
    return tokens, hidden, vocab, layers, ebytes


def manifest_dims(manifest_path):
    """{fixture name: (hidden, vocab, layers)} from MANIFEST.md's config
    lines: for fixtures whose weights are not arguments (an ONNX import
    bakes them in as constants)."""
    dims, name = {}, None
    for line in open(manifest_path):
        m = re.match(r"## (\S+)", line)
        if m:
            name = m.group(1)
        m = re.search(r"config: hidden (\d+),.* vocab (\d+), layers (\d+)",
                      line)
        if m and name:
            dims[name] = tuple(int(g) for g in m.groups())
    return dims


def megatron_plan(t, tokens, hidden, vocab, layers, ebytes):
    """(wire bytes per device, number of collectives) of the hand plan."""
    ar = 2 * (t - 1) / t * tokens * hidden * ebytes
    # Megatron pads the vocabulary to a multiple of the group (and more).
    padded_vocab = -(-vocab // t) * t
    ag = (t - 1) / t * tokens * padded_vocab * ebytes
    return (2 * layers + 1) * ar + ag, 2 * layers + 2


def manifest_heads(manifest_path):
    """{fixture name: (heads, kv heads)} from MANIFEST.md."""
    heads, name = {}, None
    for line in open(manifest_path):
        m = re.match(r"## (\S+)", line)
        if m:
            name = m.group(1)
        m = re.search(r"heads (\d+), kv heads (\d+)", line)
        if m and name:
            heads[name] = (int(m.group(1)), int(m.group(2)))
    return heads
